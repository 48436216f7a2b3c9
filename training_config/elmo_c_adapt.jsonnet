// Continued pretraining of an ELMo-C archive on text of a new domain: the source biLM, built by
// AllenNLP's own `from_archive` model type (its weights, its fastText vectors, its sizes), trained
// on the new text with a short warm-up and a decay sized from the new corpus. The result is an
// ordinary elmo_c archive (the `adapted_config` callback writes the source's model and reader
// into its config.json), for `elmo_c_token_embedder`, `elmo-c-embed` and `elmo_c_next_word`.
//
//   ELMO_C_SOURCE_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_TRAIN_DATA=bio/train.txt \
//   ELMO_C_VALIDATION_DATA=bio/dev.txt ELMO_C_ADAPT_STEPS=3000 \
//   allennlp train training_config/elmo_c_adapt.jsonnet -s runs/adapted --include-package allennlp_elmo_c
//
// ELMO_C_ADAPT_STEPS: the optimizer updates of the whole run, about tokens of the new training
// text / (20 x batch_size) per epoch (`wc -w train.txt`; 20 new tokens per window) times
// num_epochs. The fastText vectors are the source's and are not retrained: the LSTM's input and
// its targets live in that vector space; words it never saw get vectors from their subwords.
// The reader is the source archive's own (windows, boundary tokens, and indexers reading its
// fastText model), built from its config.json by the `from_archive` reader of this package.
local source = std.extVar('ELMO_C_SOURCE_ARCHIVE');
local steps = std.parseInt(std.extVar('ELMO_C_ADAPT_STEPS'));
local batch_size = 128;
// rnmt_plus: a short warm-up (5% of the run) from a tenth of the peak learning rate to the peak,
// then an exponential decay back to a tenth by the last step. The peak, 5e-4, is below the demo's
// 2e-3 (training from scratch): the weights are already trained.
local peak_lr = 5e-4;
local warmup = std.max(1, std.floor(steps / 20));

{
  // The source's reader and model: the reader first, so that a wrong source archive is a
  // ConfigurationError naming it before AllenNLP's load_archive reads it.
  dataset_reader: { type: 'elmo_c_from_archive', archive_file: source },
  train_data_path: std.extVar('ELMO_C_TRAIN_DATA'),
  validation_data_path: std.extVar('ELMO_C_VALIDATION_DATA'),
  vocabulary: { type: 'empty' },
  model: { type: 'from_archive', archive_file: source },
  data_loader: { batch_size: batch_size, shuffle: true, max_instances_in_memory: batch_size * 200 },
  validation_data_loader: { batch_size: batch_size, shuffle: false },
  trainer: {
    // gradient_descent, with an atomic checkpointer when none is named with a type.
    type: 'elmo_c',
    num_epochs: 1,
    cuda_device: 0,
    optimizer: { type: 'fused_adam', lr: peak_lr / 10, eps: 1e-6 },  // adam's update, fused
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: warmup,
      decay_start: warmup,
      decay_end: std.max(warmup + 1, steps),
      batch_scale: 10,
      final_factor: 1.0,
    },
    validation_metric: '-loss',
    enable_default_callbacks: false,
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'tensorboard', summary_interval: 50, should_log_learning_rate: true },
      { type: 'rng_state' },
      // On CPU, torch threads = the CPUs no other process keeps busy, measured every 30 s
      // (OMP_NUM_THREADS or `threads: N` here fix the count).
      { type: 'cpu_threads' },
      // The positions each direction trained on, in metrics.json for the model card (`package`).
      { type: 'tokens_seen' },
      // The forward and the backward LM each clip their gradient norm at 1.0, as the paper's
      // code trains them (two models): no trainer grad_norm, which would clip the two together.
      { type: 'grad_norm_per_direction', max_norm: 1.0 },
      // Writes the source's model and reader into config.json at the end: an ordinary archive.
      { type: 'adapted_config' },
      // hardware.json; absolute fastText paths and fingerprints in config.json at the end.
      { type: 'elmo_c_run' },
    ],
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
  },
}
