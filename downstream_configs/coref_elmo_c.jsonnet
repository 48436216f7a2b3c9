// Coreference (CoNLL-2012 format, the `coref` model of Lee et al. 2017): allennlp-models has no
// ELMo coref config, so this is its coref.jsonnet (GloVe 300 + character CNN 100) with ELMo-C
// (ELMO_C_DIM, 1024 for a paper-size archive) added to the text embedding and every dimension
// that depends on it derived below.
// With ELMO_C_BASELINE=fasttext the fastText vectors take ELMo-C's place (the paper's
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
//   COREF_TRAIN_DATA_PATH=train.english.v4_gold_conll COREF_DEV_DATA_PATH=dev.english.v4_gold_conll \
//   COREF_TEST_DATA_PATH=test.english.v4_gold_conll GLOVE_6B_300D=glove.6B.300d.txt.gz \
//   ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/coref_elmo_c.jsonnet -s runs/coref --include-package allennlp_elmo_c
local bilm = import 'elmo_c.libsonnet';
local feature_size = 20;
local context_hidden = 200;
// GloVe 300 + characters 100 + ELMo-C ELMO_C_DIM (or fastText ELMO_C_FASTTEXT_DIM).
local text_dim = 300 + 100 + bilm.context_dim;
// Endpoint span extractor over the BiLSTM (2 x 2 x hidden) + width feature, plus the attentive
// span extractor over the text embeddings.
local span_dim = 2 * 2 * context_hidden + feature_size + text_dim;

{
  dataset_reader: {
    type: 'coref',
    token_indexers: {
      tokens: { type: 'single_id', lowercase_tokens: false },
      token_characters: { type: 'characters', min_padding_length: 5 },
      elmo: bilm.indexer,
    },
    max_span_width: 10,
  },
  train_data_path: std.extVar('COREF_TRAIN_DATA_PATH'),
  validation_data_path: std.extVar('COREF_DEV_DATA_PATH'),
  test_data_path: std.extVar('COREF_TEST_DATA_PATH'),
  evaluate_on_test: true,
  model: {
    type: 'coref',
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: 'embedding',
          pretrained_file: std.extVar('GLOVE_6B_300D'),
          embedding_dim: 300,
          trainable: false,
        },
        token_characters: {
          type: 'character_encoding',
          embedding: { num_embeddings: 262, embedding_dim: 16 },
          encoder: { type: 'cnn', embedding_dim: 16, num_filters: 100, ngram_filter_sizes: [5] },
        },
        elmo: bilm.embedder(dropout=0.5),
      },
    },
    context_layer: {
      type: 'lstm',
      bidirectional: true,
      input_size: text_dim,
      hidden_size: context_hidden,
      num_layers: 1,
    },
    mention_feedforward: {
      input_dim: span_dim,
      num_layers: 2,
      hidden_dims: 150,
      activations: 'relu',
      dropout: 0.2,
    },
    antecedent_feedforward: {
      input_dim: 3 * span_dim + feature_size,
      num_layers: 2,
      hidden_dims: 150,
      activations: 'relu',
      dropout: 0.2,
    },
    initializer: {
      regexes: [
        ['.*linear_layers.*weight', { type: 'xavier_normal' }],
        ['.*scorer._module.weight', { type: 'xavier_normal' }],
        ['_distance_embedding.weight', { type: 'xavier_normal' }],
        ['_span_width_embedding.weight', { type: 'xavier_normal' }],
        ['_context_layer._module.weight_ih.*', { type: 'xavier_normal' }],
        ['_context_layer._module.weight_hh.*', { type: 'orthogonal' }],
      ],
    },
    lexical_dropout: 0.5,
    feature_size: feature_size,
    max_span_width: 10,
    spans_per_word: 0.4,
    max_antecedents: 100,
  },
  data_loader: { batch_sampler: { type: 'bucket', padding_noise: 0.0, batch_size: 1 } },
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
    num_epochs: 150,
    grad_norm: 5.0,
    patience: 10,
    validation_metric: '+coref_f1',
    learning_rate_scheduler: { type: 'reduce_on_plateau', factor: 0.5, mode: 'max', patience: 2 },
    optimizer: { type: 'adam' },
  },
}
