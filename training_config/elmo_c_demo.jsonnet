// The ELMo-C recipe of elmo_c.jsonnet shrunk to train on the demo corpus (2.4M tokens of news,
// `build-demo-data`) with the demo fastText vectors (100-d, `train-fasttext`) on 2 CPU cores in
// under 10 minutes: cell 256 / projection 128 x 2 layers, one epoch (about 2,000 steps of 64
// windows). Same reader, embedder, encoder, head, loss and optimizer; the rnmt_plus schedule is
// sized for this run and has no warm-up (below); otherwise only sizes and step counts differ.
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_c_demo.jsonnet -s runs/demo \
//       --include-package allennlp_elmo_c
//
// ELMO_C_DATA_DIR must hold news/{train,dev}.txt, fasttext/news.100d.bin and
// fasttext/frequent_words.txt (`make demo` builds them).
local data = std.extVar('ELMO_C_DATA_DIR');
local fasttext = data + '/fasttext/news.100d.bin';
local batch_size = 64;

{
  dataset_reader: {
    type: 'lm_corpus',
    // 21 tokens sharing one with the next window: 20 predictions per direction and window,
    // the paper's 20-step unroll.
    max_sequence_length: 21,
    // Sentence boundaries: the paper's code ends a sentence with fastText's own `</s>` row; here
    // `</S>` gets the mean of its character n-grams like any unknown word. Measured both ways
    // on the demo (benchmarks/SENTENCE_END.md, 2 seeds): POS dev 92.27 vs 92.23, validation
    // cosine 0.6543 vs 0.6551 (on different end targets): no difference beyond the spread, so
    // the boundary every earlier archive was trained with stays. All-zero fastText vectors
    // (which the paper's code replaces by <unk>'s) are 82 of 2.4M demo tokens: kept.
    start_tokens: ['<S>'],
    end_tokens: ['</S>'],
    token_indexers: { tokens: { type: 'fasttext_subwords', model_path: fasttext } },
  },
  train_data_path: data + '/news/train.txt',
  validation_data_path: data + '/news/dev.txt',
  // fastText in and out: no vocabulary, and no pass over the corpus to count one.
  vocabulary: { type: 'empty' },
  model: {
    type: 'elmo_c',
    text_field_embedder: {
      token_embedders: { tokens: { type: 'fasttext', model_path: fasttext, expected_dim: 100 } },
    },
    contextualizer: {
      type: 'elmo_lstm',
      input_size: 100,
      projection_size: 128,
      cell_size: 256,
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
    nearest_neighbour_words: data + '/fasttext/frequent_words.txt',
    // 'float32', or 'bfloat16': mixed precision on CPU or GPU (bf16 matrix products, float32
    // cell state, weights and optimizer; docs/pretraining.md, "Mixed precision").
    precision: std.extVar('ELMO_C_PRECISION'),
  },
  data_loader: { batch_size: batch_size, shuffle: true },
  validation_data_loader: { batch_size: 256, shuffle: false },
  trainer: {
    num_epochs: 1,
    cuda_device: -1,
    optimizer: { type: 'fused_adam', lr: 2e-3, eps: 1e-6 },  // adam's update, torch's fused kernel
    // ~2,000 steps (2.58M tokens with boundaries / 20 new tokens a window / 64). No warm-up:
    // with batch_scale 1.0, rnmt_plus's warm-up runs from lr to 1.0 x lr, so the learning rate is
    // 2e-3 from the first update (warmup_steps changes nothing here), held until update 800,
    // then decayed to half (1e-3) by update 2,000.
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: 200,
      decay_start: 800,
      decay_end: 2000,
      batch_scale: 1.0,
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
      // The positions each direction trained on, in metrics.json for the model card (`package`).
      { type: 'tokens_seen' },
      // The forward and the backward LM each clip their gradient norm at 1.0, as the paper's
      // code trains them (two models): no trainer grad_norm, which would clip the two together.
      { type: 'grad_norm_per_direction', max_norm: 1.0 },
    ],
    // Atomic checkpoint writes; --recover resumes from the newest checkpoint that loads.
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
  },
}
