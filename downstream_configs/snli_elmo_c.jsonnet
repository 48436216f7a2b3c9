// SNLI with ESIM: allennlp-models' esim_elmo.jsonnet (one ELMo mix, no GloVe) with ELMo replaced
// by ELMo-C (the encoder's input_size is ELMO_C_DIM: 1024 for a paper-size archive, as before).
// With ELMO_C_BASELINE=fasttext the fastText vectors replace it (the paper's "fastText
// only" row). ESIM's initializer regexes
// (.*weight_ih.* etc.) match no ELMo-C parameter, so the pretrained biLM is never re-initialised.
// The reader uses spaCy's rule-based English tokenizer (no model download) instead of
// en_core_web_sm.
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
//   SNLI_TRAIN=snli_1.0_train.jsonl SNLI_DEV=snli_1.0_dev.jsonl ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz \
//   ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/snli_elmo_c.jsonnet -s runs/snli --include-package allennlp_elmo_c
local bilm = import 'elmo_c.libsonnet';

{
  dataset_reader: {
    type: 'snli',
    tokenizer: { type: 'spacy', language: 'blank:en' },
    token_indexers: { elmo: bilm.indexer },
  },
  train_data_path: std.extVar('SNLI_TRAIN'),
  validation_data_path: std.extVar('SNLI_DEV'),
  model: {
    type: 'esim',
    dropout: 0.5,
    text_field_embedder: {
      token_embedders: {
        elmo: bilm.embedder(dropout=0.0),
      },
    },
    encoder: {
      type: 'lstm',
      input_size: bilm.context_dim,
      hidden_size: 300,
      num_layers: 1,
      bidirectional: true,
    },
    matrix_attention: { type: 'dot_product' },
    projection_feedforward: { input_dim: 2400, hidden_dims: 300, num_layers: 1, activations: 'relu' },
    inference_encoder: {
      type: 'lstm',
      input_size: 300,
      hidden_size: 300,
      num_layers: 1,
      bidirectional: true,
    },
    output_feedforward: {
      input_dim: 2400,
      num_layers: 1,
      hidden_dims: 300,
      activations: 'relu',
      dropout: 0.5,
    },
    output_logit: { input_dim: 300, num_layers: 1, hidden_dims: 3, activations: 'linear' },
    initializer: {
      regexes: [
        ['.*linear_layers.*weight', { type: 'xavier_uniform' }],
        ['.*linear_layers.*bias', { type: 'zero' }],
        ['.*weight_ih.*', { type: 'xavier_uniform' }],
        ['.*weight_hh.*', { type: 'orthogonal' }],
        ['.*bias_ih.*', { type: 'zero' }],
        ['.*bias_hh.*', { type: 'lstm_hidden_bias' }],
      ],
    },
  },
  data_loader: { batch_sampler: { type: 'bucket', batch_size: 32 } },
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
    optimizer: { type: 'adam', lr: 0.0004 },
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
    validation_metric: '+accuracy',
    num_epochs: 75,
    grad_norm: 10.0,
    patience: 5,
    learning_rate_scheduler: { type: 'reduce_on_plateau', factor: 0.5, mode: 'max', patience: 0 },
  },
}
