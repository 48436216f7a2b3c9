// The softmax biLM a user of allennlp-models would train, at the demo encoder's size: its
// `language_model` (bidirectional, AllenNLP's SampledSoftmaxLoss with 8,192 samples, sparse
// embeddings with `dense_sparse_adam`, dropout 0.1 on the contextual states, as its
// bidirectional_language_model.jsonnet) over ELMo's character CNN at the shape of AllenNLP's
// published small ELMo (elmo_2x1024_128_2048cnn_1xhighway: its filters, 1 highway layer,
// projection to 128), with AllenNLP's own ELMo biLSTM (`ElmoLstm`, registered here as
// `allennlp_elmo_lstm`) at the demo sizes: cell 256, projection 128, 2 layers, clips 3,
// recurrent dropout 0.1. The softmax covers every word seen at least twice in the training data.
//
// The same 21-token windows as elmo_c_demo.jsonnet (the `lm_corpus` reader, its field named
// `source` as `language_model` wants): the systems compared see the same text in the same order.
// The learning rate is flat (dense_sparse_adam's default 1e-3), so one run can be snapshotted at
// several training times (experiments/quality/per_minute.py).
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/allennlp_lm_demo.jsonnet -s runs/lm \
//       --include-package allennlp_elmo_c
local data = std.extVar('ELMO_C_DATA_DIR');

{
  dataset_reader: {
    type: 'lm_corpus',
    field_name: 'source',
    max_sequence_length: 21,
    start_tokens: ['<S>'],
    end_tokens: ['</S>'],
    token_indexers: {
      tokens: { type: 'single_id' },
      token_characters: { type: 'elmo_characters' },
    },
  },
  train_data_path: data + '/news/train.txt',
  validation_data_path: data + '/news/dev.txt',
  vocabulary: {
    type: 'from_instances',
    min_count: { tokens: 2 },
    tokens_to_add: { tokens: ['<S>', '</S>'] },
  },
  datasets_for_vocab_creation: ['train'],
  model: {
    type: 'language_model',
    bidirectional: true,
    num_samples: 8192,
    sparse_embeddings: true,
    dropout: 0.1,
    text_field_embedder: {
      token_embedders: {
        tokens: { type: 'empty' },
        token_characters: {
          type: 'character_encoding',
          embedding: { num_embeddings: 262, embedding_dim: 16 },
          encoder: {
            type: 'cnn-highway',
            activation: 'relu',
            embedding_dim: 16,
            filters: [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
            num_highway: 1,
            projection_dim: 128,
            projection_location: 'after_highway',
            do_layer_norm: true,
          },
        },
      },
    },
    contextualizer: {
      type: 'allennlp_elmo_lstm',
      input_size: 128,
      projection_size: 128,
      cell_size: 256,
      num_layers: 2,
      recurrent_dropout: 0.1,
      cell_clip: 3,
      projection_clip: 3,
    },
  },
  data_loader: { batch_size: 64, shuffle: true },
  validation_data_loader: { batch_size: 256, shuffle: false },
  trainer: {
    num_epochs: 1,
    cuda_device: -1,
    optimizer: { type: 'dense_sparse_adam' },
    validation_metric: '-loss',
    enable_default_callbacks: false,
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'rng_state' },
      // The positions each direction trained on, in metrics.json for the model card (`package`).
      { type: 'tokens_seen' },
    ],
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
  },
}
