// ELMo-Sub, the paper's subword baseline (Li et al., TACL 2019, Table 2: 92M trainable
// parameters): elmo_c.jsonnet with BPE subwords instead of words, a trainable 512-d subword
// embedding instead of frozen fastText vectors, and a full softmax over the subword vocabulary
// whose output embedding is the input embedding (tied) instead of the continuous head. The
// biLM is a language model over the subword sequence (windows of 20 subwords). Downstream, a
// word is represented by its first subword (`bpe_first_subword` indexer).
// Encoder, optimizer, schedule, batch size and epochs are elmo_c.jsonnet's. With a 30,000-subword
// vocabulary: 91.5M trainable parameters (76,093,440 + 514 per subword).
//
//   python -m allennlp_elmo_c train-bpe $ELMO_C_TRAIN_DATA bpe --vocab-size 30000
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_BPE=bpe/tokenizer.json \
//   ELMO_C_VOCABULARY=bpe/vocabulary \
//   allennlp train training_config/elmo_sub.jsonnet -s runs/elmo_sub \
//       --include-package allennlp_elmo_c
local batch_size = 768;
// The paper's schedule (its code): decay from 0.4 to 2.0 x (400M / batch) steps, peak lr
// 1e-4 x batch / 128 after 10k warm-up steps.
local steps_per_400m_tokens = 400000000 / batch_size;
// Tying needs the embedding to be the head's input size: the projection size.
local projection_size = 512;

{
  dataset_reader: {
    type: 'lm_corpus',
    max_sequence_length: 20,
    tokenizer: { type: 'bpe', tokenizer_path: std.extVar('ELMO_C_BPE') },
    token_indexers: { tokens: { type: 'single_id', namespace: 'subwords' } },
  },
  vocabulary: { type: 'from_files', directory: std.extVar('ELMO_C_VOCABULARY') },
  train_data_path: std.extVar('ELMO_C_TRAIN_DATA'),
  validation_data_path: std.extVar('ELMO_C_VALIDATION_DATA'),
  model: {
    type: 'elmo_c',
    text_field_embedder: {
      token_embedders: {
        tokens: { type: 'embedding', embedding_dim: projection_size, vocab_namespace: 'subwords' },
      },
    },
    contextualizer: {
      type: 'elmo_lstm',
      input_size: projection_size,
      projection_size: projection_size,
      cell_size: 4096,
      num_layers: 2,
      backend: 'fused',
      cell_clip: 3,
      projection_clip: 3,
      recurrent_dropout: 0.1,
    },
    output_head: { type: 'softmax', tie_input_embedding: true, vocab_namespace: 'subwords' },
    target_ids_key: 'tokens',
    dropout: 0.1,
  },
  data_loader: {
    batch_size: batch_size,
    shuffle: true,
    max_instances_in_memory: batch_size * 200,
    num_workers: 2,
  },
  validation_data_loader: { batch_size: batch_size, shuffle: false },
  trainer: {
    num_epochs: 10,
    cuda_device: 0,
    optimizer: { type: 'adam', lr: 1e-4, eps: 1e-6 },
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: 10000,
      decay_start: std.floor(0.4 * steps_per_400m_tokens),
      decay_end: std.floor(2.0 * steps_per_400m_tokens),
      batch_size: batch_size,
    },
    grad_norm: 1.0,
    validation_metric: '-loss',
    checkpointer: { save_every_num_seconds: 3600, keep_most_recent_by_count: 2 },
  },
}
