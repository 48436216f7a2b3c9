// Part-of-speech tagging with the CRF tagger: the same input as ner_elmo_c.jsonnet (a 50-d word
// embedding + character CNN 128 + ELMo-C), one BiLSTM layer of 200, token accuracy. Data: one
// sentence per line, `word###tag` tokens (AllenNLP's `sequence_tagging` reader), e.g. the Brown
// corpus files made by experiments/quality/table2.py. With ELMO_C_BASELINE=fasttext the ELMo-C slot holds
// the fastText vectors instead (the no-context baseline). The encoder's input is
// 50 + 128 + ELMO_C_DIM.
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
//   POS_DATA_DIR=tasks/pos ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/pos_elmo_c.jsonnet -s runs/pos \
//       --include-package allennlp_elmo_c
local bilm = import 'elmo_c.libsonnet';
local data = std.extVar('POS_DATA_DIR');

{
  dataset_reader: {
    type: 'sequence_tagging',
    token_indexers: {
      tokens: { type: 'single_id', lowercase_tokens: true },
      token_characters: { type: 'characters', min_padding_length: 3 },
      elmo: bilm.indexer,
    },
  },
  train_data_path: data + '/train.txt',
  validation_data_path: data + '/dev.txt',
  model: {
    type: 'crf_tagger',
    dropout: 0.5,
    include_start_end_transitions: false,
    text_field_embedder: {
      token_embedders: {
        tokens: { type: 'embedding', embedding_dim: 50, trainable: true },
        elmo: bilm.embedder(dropout=0.0),
        token_characters: {
          type: 'character_encoding',
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
      input_size: 50 + 128 + bilm.context_dim,
      hidden_size: 200,
      num_layers: 1,
      bidirectional: true,
    },
    regularizer: { regexes: [['scalar_parameters', { type: 'l2', alpha: 0.1 }]] },
  },
  data_loader: { batch_size: 32, shuffle: true },
  validation_data_loader: { batch_size: 128, shuffle: false },
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
    // Two kept: --recover falls back to the older one if the newest is damaged.
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
    validation_metric: '+accuracy',
    num_epochs: 30,
    grad_norm: 5.0,
    patience: 5,
  },
}
