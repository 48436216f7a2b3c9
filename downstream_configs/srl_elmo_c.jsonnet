// Semantic role labelling (CoNLL-2012 format, the `srl` reader and model): allennlp-models'
// srl_elmo.jsonnet with ELMo replaced by ELMo-C (ELMO_C_DIM + 100-d verb indicator into the
// 8-layer alternating LSTM: 1124 for a paper-size archive, as before). With
// ELMO_C_BASELINE=fasttext the fastText vectors replace it (the paper's "fastText only"
// row). The SRL metric runs the official perl scorer that ships with allennlp-models (needs
// `perl`).
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
//   SRL_TRAIN_DATA_PATH=conll-2012/v4/data/train SRL_VALIDATION_DATA_PATH=conll-2012/v4/data/development \
//   ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/srl_elmo_c.jsonnet -s runs/srl --include-package allennlp_elmo_c
local bilm = import 'elmo_c.libsonnet';

{
  dataset_reader: {
    type: 'srl',
    token_indexers: { elmo: bilm.indexer },
  },
  train_data_path: std.extVar('SRL_TRAIN_DATA_PATH'),
  validation_data_path: std.extVar('SRL_VALIDATION_DATA_PATH'),
  model: {
    type: 'srl',
    text_field_embedder: {
      token_embedders: {
        elmo: bilm.embedder(dropout=0.1),
      },
    },
    initializer: { regexes: [['tag_projection_layer.*weight', { type: 'orthogonal' }]] },
    encoder: {
      type: 'alternating_lstm',
      input_size: bilm.context_dim + 100,
      hidden_size: 300,
      num_layers: 8,
      recurrent_dropout_probability: 0.1,
      use_input_projection_bias: false,
    },
    binary_feature_dim: 100,
    regularizer: { regexes: [['.*scalar_parameters.*', { type: 'l2', alpha: 0.001 }]] },
  },
  data_loader: { batch_sampler: { type: 'bucket', batch_size: 80 } },
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
    num_epochs: 500,
    grad_clipping: 1.0,
    patience: 200,
    validation_metric: '+f1-measure-overall',
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 10 },
    optimizer: { type: 'adadelta', rho: 0.95 },
  },
}
