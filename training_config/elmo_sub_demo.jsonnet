// The ELMo-Sub recipe of elmo_sub.jsonnet shrunk like elmo_c_demo.jsonnet (cell 256 /
// projection 128 x 2 layers, one epoch on the demo news corpus, CPU): a trainable 128-d
// subword embedding tied to a full softmax over an 8,000-subword BPE vocabulary. Only sizes and
// step counts differ from elmo_sub.jsonnet; the schedule is elmo_c_demo.jsonnet's (the corpus is
// ~1.2 subwords per word, so an epoch has ~20% more windows).
//
//   python -m allennlp_elmo_c train-bpe data/news/train.txt data/bpe --vocab-size 8000
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_sub_demo.jsonnet -s runs/demo_sub \
//       --include-package allennlp_elmo_c
local data = std.extVar('ELMO_C_DATA_DIR');
local batch_size = 64;
local projection_size = 128;

{
  dataset_reader: {
    type: 'lm_corpus',
    max_sequence_length: 20,
    tokenizer: { type: 'bpe', tokenizer_path: data + '/bpe/tokenizer.json' },
    token_indexers: { tokens: { type: 'single_id', namespace: 'subwords' } },
  },
  vocabulary: { type: 'from_files', directory: data + '/bpe/vocabulary' },
  train_data_path: data + '/news/train.txt',
  validation_data_path: data + '/news/dev.txt',
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
      cell_size: 256,
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
  data_loader: { batch_size: batch_size, shuffle: true },
  validation_data_loader: { batch_size: 256, shuffle: false },
  trainer: {
    num_epochs: 1,
    cuda_device: -1,
    optimizer: { type: 'adam', lr: 2e-3, eps: 1e-6 },
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: 200,
      decay_start: 1000,
      decay_end: 2600,
      batch_scale: 1.0,
    },
    grad_norm: 1.0,
    validation_metric: '-loss',
  },
}
