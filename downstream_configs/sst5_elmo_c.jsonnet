// SST-5 with the biattentive classification network: allennlp-models'
// biattentive_classification_network_elmo.jsonnet with ELMo replaced by ELMo-C. That config uses
// BCN's own `elmo` argument with use_input_elmo = true and use_integrator_output_elmo = false, i.e.
// one ELMo mix concatenated to the GloVe input: here the same through the text field embedder
// (key 'elmo_c'; BCN refuses a token embedder named 'elmo'), so pre_encode_feedforward gets
// 300 + ELMO_C_DIM inputs (1324 for a paper-size archive, as before). With
// ELMO_C_BASELINE=fasttext the fastText vectors take ELMo-C's place (the paper's "fastText
// only" row).
//
// ELMO_C_DIM is the archive's output size, 2 x its projection_size (default 1024, the paper's;
// e.g. ELMO_C_DIM=256 for the demo's archive): every layer that reads ELMo-C is sized from it,
// and an archive of another size stops at construction with a ConfigurationError naming both
// sizes. ELMO_C_FASTTEXT_DIM sizes the fastText-only row in the same way (default 300, as
// cc.en.300.bin; 100 for `train-fasttext --dim 100`). ELMO_C_BASELINE defaults to none (ELMo-C);
// the plugin supplies the three defaults. The other
// variables below have none: an unset one stops with a ConfigurationError naming it
// (docs/environment-variables.md has every variable).
//
//   SST_TRAIN=train.txt SST_DEV=dev.txt SST_TEST=test.txt GLOVE_840B_300D=glove.840B.300d.txt.gz \
//   ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/sst5_elmo_c.jsonnet -s runs/sst5 --include-package allennlp_elmo_c
//
// SST files are PTB trees (the sst_tokens reader); all paths are local files.
local bilm = import 'elmo_c.libsonnet';
local context_dim = bilm.context_dim;
local reader(subtrees) = {
  type: 'sst_tokens',
  use_subtrees: subtrees,
  granularity: '5-class',
  token_indexers: {
    tokens: { type: 'single_id' },
    elmo_c: bilm.indexer,
  },
};

{
  dataset_reader: reader(true),
  validation_dataset_reader: reader(false),
  train_data_path: std.extVar('SST_TRAIN'),
  validation_data_path: std.extVar('SST_DEV'),
  test_data_path: std.extVar('SST_TEST'),
  evaluate_on_test: true,
  model: {
    type: 'bcn',
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: 'embedding',
          pretrained_file: std.extVar('GLOVE_840B_300D'),
          embedding_dim: 300,
          trainable: false,
        },
        elmo_c: bilm.embedder(dropout=0.0),
      },
    },
    embedding_dropout: 0.5,
    pre_encode_feedforward: {
      input_dim: 300 + context_dim,
      num_layers: 1,
      hidden_dims: [300],
      activations: ['relu'],
      dropout: [0.25],
    },
    encoder: { type: 'lstm', input_size: 300, hidden_size: 300, num_layers: 1, bidirectional: true },
    integrator: {
      type: 'lstm',
      input_size: 1800,
      hidden_size: 300,
      num_layers: 1,
      bidirectional: true,
    },
    integrator_dropout: 0.1,
    output_layer: {
      input_dim: 2400,
      num_layers: 3,
      output_dims: [1200, 600, 5],
      pool_sizes: 4,
      dropout: [0.2, 0.3, 0.0],
    },
  },
  data_loader: { batch_sampler: { type: 'bucket', batch_size: 100 } },
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
    num_epochs: 40,
    patience: 5,
    grad_norm: 5.0,
    validation_metric: '+accuracy',
    optimizer: { type: 'adam', lr: 0.001 },
  },
}
