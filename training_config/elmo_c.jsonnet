// ELMo-C as in Li, Chen, Hsieh & Chang (TACL 2019): frozen 300-d fastText vectors with subwords
// in and out, an ELMo-shaped biLM (cell 4096 / projection 512 x 2 layers per direction), a
// continuous output layer with the cosine loss, Adam (eps 1e-6) with the RNMT+ schedule, a
// gradient norm clip of 1.0 per direction, 20-token windows, 10 epochs. 76.2M trainable parameters.
// The model is the paper's code's: recurrent dropout on the emitted state, an input Linear only
// where the input size differs from 512, the forward and backward LMs clipped separately, the
// schedule from the total batch of all workers. Differences kept on purpose (each commented
// below): the sentence-end token (`</S>`, measured against fastText's `</s>`), and a schedule
// that never goes below zero (the paper's formula does for batches under 128; identical at its
// batch of 4 x 768).
//
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_c.jsonnet -s runs/elmo_c --include-package allennlp_elmo_c
//
// ELMO_C_TRAIN_DATA / ELMO_C_VALIDATION_DATA: text, one tokenized sentence per line (the 1B Word
// Benchmark's format). ELMO_C_FASTTEXT: a fastText .bin with subwords (the paper uses
// crawl-300d-2M-subword.bin; cc.en.300.bin works the same way). For nearest-neighbour accuracy
// during validation add -o '{"model.nearest_neighbour_words": "words.txt"}' (one word a line).
local fasttext = std.extVar('ELMO_C_FASTTEXT');
// Sentences per update of each worker (GPU): the data loader's batch. The paper trains with 768
// on each of 4 GPUs.
local batch_size = 768;

{
  dataset_reader: {
    type: 'lm_corpus',
    // 21 tokens sharing one with the next window: 20 predictions per direction and window,
    // the paper's 20-step unroll.
    max_sequence_length: 21,
    // Sentence boundaries: the paper's code ends a sentence with fastText's own `</s>` row; here
    // `</S>` gets the mean of its character n-grams like any unknown word. Measured both ways
    // on the demo (experiments/quality/SENTENCE_END.md, 2 seeds): POS dev 92.27 vs 92.23, validation
    // cosine 0.6543 vs 0.6551 (on different end targets): no difference beyond the spread, so
    // the boundary every earlier archive was trained with stays. All-zero fastText vectors
    // (which the paper's code replaces by <unk>'s) are 82 of 2.4M demo tokens: kept.
    start_tokens: ['<S>'],
    end_tokens: ['</S>'],
    token_indexers: { tokens: { type: 'fasttext_subwords', model_path: fasttext } },
  },
  train_data_path: std.extVar('ELMO_C_TRAIN_DATA'),
  validation_data_path: std.extVar('ELMO_C_VALIDATION_DATA'),
  // fastText in and out: no vocabulary, and no pass over the corpus to count one.
  vocabulary: { type: 'empty' },
  model: {
    type: 'elmo_c',
    text_field_embedder: {
      token_embedders: { tokens: { type: 'fasttext', model_path: fasttext, expected_dim: 300 } },
    },
    contextualizer: {
      type: 'elmo_lstm',
      input_size: 300,
      projection_size: 512,
      cell_size: 4096,
      num_layers: 2,
      // 'fused' and 'reference' compute the same function; 'fused' is the faster one.
      backend: 'fused',
      // The paper's cell: clip, project, clip, LayerNorm inside the recurrence.
      recurrence_norm: 'inside',
      cell_clip: 3,
      projection_clip: 3,
      recurrent_dropout: 0.1,
    },
    output_head: { type: 'continuous', loss: 'cosine' },
    // As the paper's code: no dropout on the input and output layers.
    dropout: 0.0,
    // 'float32', or 'bfloat16': mixed precision on CPU or GPU (bf16 matrix products, float32
    // cell state, weights and optimizer; docs/pretraining.md, "Mixed precision").
    precision: std.extVar('ELMO_C_PRECISION'),
  },
  // Streamed: 200 batches in memory at a time whatever the corpus's size, and the epoch's length
  // known from the corpus (prepare-corpus's manifest, or one cached count), for the progress bar
  // and the schedule.
  data_loader: {
    type: 'lm_stream',
    batch_size: batch_size,
    shuffle: true,
    max_instances_in_memory: batch_size * 200,
    num_workers: 2,
  },
  validation_data_loader: {
    type: 'lm_stream',
    batch_size: batch_size,
    shuffle: false,
    max_instances_in_memory: batch_size * 50,
  },
  trainer: {
    // gradient_descent, with an atomic checkpointer when none is named with a type.
    type: 'elmo_c',
    num_epochs: 10,
    cuda_device: 0,
    // AllenNLP's adam update through torch's fused kernel (fused_adam: the same numbers to float32
    // rounding; the per-parameter loop took 17% of a paper-size CPU step).
    optimizer: { type: 'fused_adam', lr: 1e-4, eps: 1e-6 },
    // The paper's schedule (its code), from the total batch over all workers (rnmt_plus reads
    // the world size, so this file is unchanged on 1 or 4 GPUs): peak lr 1e-4 x total / 128
    // after 10k warm-up updates, decay from 0.4 to 2.0 x the run's updates. The paper wrote the
    // run as 400M examples (10 epochs of the 1B Word Benchmark): on 4 GPUs, total 3072, decay
    // from update 52,083 to 260,416. Here the run's length comes from the corpus and the
    // epochs, so the decay starts within the run on any corpus. rnmt_plus never goes below zero;
    // the paper's formula would for a total batch under 128 (training/rnmt_plus.py).
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: 10000,
      batch_size_per_worker: batch_size,
      decay_start_fraction: 0.4,
      decay_end_fraction: 2.0,
    },
    validation_metric: '-loss',
    // AllenNLP's default console logger also logs the first batch's raw tensors: this one logs
    // the metrics only. TensorBoard (`tensorboard --logdir <run>/log`): loss, cosine and
    // next-word accuracy per direction, and the learning rate, every 50 batches.
    enable_default_callbacks: false,
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'tensorboard', summary_interval: 50, should_log_learning_rate: true },
      // Dropout draws resume exactly after a crash (allennlp train --recover).
      { type: 'rng_state' },
      // On CPU, torch threads = the CPUs no other process keeps busy, measured every 30 s
      // (OMP_NUM_THREADS or `threads: N` here fix the count).
      { type: 'cpu_threads' },
      // The positions each direction trained on, in metrics.json for the model card (`package`).
      { type: 'tokens_seen' },
      // The forward and the backward LM each clip their gradient norm at 1.0, as the paper's
      // code trains them (two models): no trainer grad_norm, which would clip the two together.
      { type: 'grad_norm_per_direction', max_norm: 1.0 },
      // --recover resumes without re-reading the batches already trained (with lm_stream).
      { type: 'skip_trained_batches' },
      // hardware.json; absolute fastText paths and fingerprints in config.json at the end.
      { type: 'elmo_c_run' },
    ],
    // Atomic checkpoint writes; --recover resumes from the newest checkpoint that loads, and
    // the one before it is kept to fall back to (docs/pretraining.md, "Long runs").
    checkpointer: { type: 'atomic', save_every_num_seconds: 3600, keep_most_recent_by_count: 2 },
  },
}
