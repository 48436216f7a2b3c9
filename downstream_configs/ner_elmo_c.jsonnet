// CoNLL-2003 NER with the CRF tagger: allennlp-models' ner_elmo.jsonnet (GloVe 50 + character CNN
// 128 + ELMo 1024 into a 2-layer BiLSTM of 200, scalar-mix L2 0.1) with ELMo replaced by ELMo-C
// (input_size 50 + 128 + ELMO_C_DIM: 1202 for a paper-size archive, as before). With
// ELMO_C_BASELINE=fasttext, ELMo is replaced by the fastText vectors instead (the paper's
// "fastText only" row).
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
//   NER_TRAIN_DATA_PATH=eng.train NER_TEST_DATA_PATH=eng.testa GLOVE_50D=glove.6B.50d.txt.gz \
//   ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/ner_elmo_c.jsonnet -s runs/ner --include-package allennlp_elmo_c
//
// All paths are local files (GloVe: download glove.6B.50d yourself); nothing is fetched.
local bilm = import 'elmo_c.libsonnet';
local context_dim = bilm.context_dim;

{
  dataset_reader: {
    type: 'conll2003',
    tag_label: 'ner',
    coding_scheme: 'BIOUL',
    token_indexers: {
      tokens: { type: 'single_id', lowercase_tokens: true },
      token_characters: { type: 'characters', min_padding_length: 3 },
      elmo: bilm.indexer,
    },
  },
  train_data_path: std.extVar('NER_TRAIN_DATA_PATH'),
  validation_data_path: std.extVar('NER_TEST_DATA_PATH'),
  model: {
    type: 'crf_tagger',
    label_encoding: 'BIOUL',
    dropout: 0.5,
    include_start_end_transitions: false,
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: 'embedding',
          embedding_dim: 50,
          pretrained_file: std.extVar('GLOVE_50D'),
          trainable: true,
        },
        elmo: bilm.embedder(dropout=0.0),
        token_characters: {
          type: 'character_encoding',
          // allennlp-models leaves vocab_namespace at its default 'tokens', which only works
          // while there are more words than characters; name the right namespace.
          embedding: { embedding_dim: 16, vocab_namespace: 'token_characters' },
          encoder: {
            type: 'cnn',
            embedding_dim: 16,
            num_filters: 128,
            ngram_filter_sizes: [3],
            conv_layer_activation: 'relu',
          },
        },
      },
    },
    encoder: {
      type: 'lstm',
      input_size: 50 + 128 + context_dim,
      hidden_size: 200,
      num_layers: 2,
      dropout: 0.5,
      bidirectional: true,
    },
    regularizer: { regexes: [['scalar_parameters', { type: 'l2', alpha: 0.1 }]] },
  },
  data_loader: { batch_size: 64 },
  // The task archive carries the biLM's fastText model (linked there by `elmo_c_run`).
  include_in_archive: ['fasttext/*.bin'],
  trainer: {
    type: 'elmo_c',
    // AllenNLP's default console logger also logs the first batch's raw tensors.
    enable_default_callbacks: false,
    // rng_state: a run resumed with --recover draws the same dropout masks (ends bit-identical).
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'rng_state' },
      { type: 'cpu_threads' },
      { type: 'elmo_c_run' },  // hardware.json; the biLM's fastText .bin for include_in_archive
    ],
    optimizer: { type: 'adam', lr: 0.001 },
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 3 },
    validation_metric: '+f1-measure-overall',
    num_epochs: 75,
    grad_norm: 5.0,
    patience: 25,
  },
}
