// Demo downstream task: fresh vs rotten review snippets (`build-demo-data`) with a small
// biattentive classification network (BCN, the paper's SST-5 model). As in the paper's task
// models, the input is word vectors (here the biLM's own fastText vectors, in place of GloVe)
// concatenated with the ELMo-C representation; with ELMO_C_BASELINE=fasttext the ELMo-C
// part is left out (the paper's no-context baseline row; the default, none, keeps it).
//
//   ELMO_C_DATA_DIR=data ELMO_C_ARCHIVE=data/runs/elmo_c_demo/model.tar.gz \
//   allennlp train downstream_configs/demo_sentiment_elmo_c.jsonnet \
//       -s runs/sentiment_elmo_c --include-package allennlp_elmo_c
//
// ELMo-C goes through the text field embedder (key 'elmo_c'; BCN refuses the key 'elmo'), not
// BCN's own `elmo` argument, which builds AllenNLP's character ELMo from options/weights files;
// this matches BCN's `use_input_elmo` (ELMo concatenated to the input embeddings).
local data = std.extVar('ELMO_C_DATA_DIR');
local fasttext = data + '/fasttext/news.100d.bin';
local use_elmo_c = std.extVar('ELMO_C_BASELINE') != 'fasttext';
local fasttext_dim = 100;
local elmo_c_dim = 256;  // 2 x the demo biLM's projection size
local input_dim = fasttext_dim + (if use_elmo_c then elmo_c_dim else 0);
local hidden = 64;

{
  dataset_reader: {
    type: 'text_classification_json',
    tokenizer: { type: 'whitespace' },
    token_indexers: {
      tokens: { type: 'fasttext_subwords', model_path: fasttext },
      [if use_elmo_c then 'elmo_c']: { type: 'fasttext_subwords', model_path: fasttext },
    },
  },
  train_data_path: data + '/sentiment/train.jsonl',
  validation_data_path: data + '/sentiment/dev.jsonl',
  test_data_path: data + '/sentiment/test.jsonl',
  evaluate_on_test: true,
  model: {
    type: 'bcn',
    text_field_embedder: {
      token_embedders: {
        tokens: { type: 'fasttext', model_path: fasttext },
        [if use_elmo_c then 'elmo_c']: {
          type: 'elmo_c_token_embedder',
          archive_file: std.extVar('ELMO_C_ARCHIVE'),
          fasttext_path: fasttext,
          dropout: 0.1,
        },
      },
    },
    embedding_dropout: 0.1,
    pre_encode_feedforward: {
      input_dim: input_dim,
      num_layers: 1,
      hidden_dims: [hidden],
      activations: ['relu'],
      dropout: [0.1],
    },
    encoder: { type: 'lstm', input_size: hidden, hidden_size: hidden / 2, bidirectional: true },
    integrator: { type: 'lstm', input_size: 3 * hidden, hidden_size: hidden / 2, bidirectional: true },
    integrator_dropout: 0.1,
    output_layer: {
      input_dim: 4 * hidden,
      num_layers: 2,
      output_dims: [hidden, 2],
      pool_sizes: 4,
      dropout: [0.2, 0.0],
    },
  },
  data_loader: { batch_size: 32, shuffle: true },
  validation_data_loader: { batch_size: 128, shuffle: false },
  // The task archive carries the biLM's fastText model (linked there by `elmo_c_run`).
  include_in_archive: ['fasttext/*.bin'],
  trainer: {
    type: 'elmo_c',
    // AllenNLP's default console logger also logs the first batch's raw tensors.
    enable_default_callbacks: false,
    checkpointer: { type: 'atomic' },
    // rng_state: a run resumed with --recover draws the same dropout masks (ends bit-identical).
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'rng_state' },
      { type: 'cpu_threads' },
      { type: 'elmo_c_run' },  // hardware.json; the biLM's fastText .bin for include_in_archive
    ],
    num_epochs: 6,
    cuda_device: -1,
    // Light dropout: with 0.25-0.3 both variants underfit (training accuracy below 0.70).
    optimizer: { type: 'adam', lr: 2e-3 },
    validation_metric: '+accuracy',
  },
}
