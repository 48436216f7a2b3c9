// Shared by the closed-vocabulary baselines (elmo_a, elmo_sampled, elmo_fixed and their demo
// variants): an ELMo-C config whose output layer predicts word ids instead of fastText vectors.
// Only the output side changes: the input stays frozen fastText, and a second indexer
// ('targets', namespace 'lm_targets') supplies the ids of the words to predict.
//
// The vocabulary is counted from the training data (`min_count` occurrences or more). AllenNLP
// orders it by decreasing count after @@PADDING@@ (0) and @@UNKNOWN@@ (1), which the
// log-uniform sampler and the adaptive softmax's clusters rely on. With min_count 3 on the
// 1B Word Benchmark this is its 793,471-word vocabulary (~800K), as in ELMo. Counting 800M tokens
// takes a while; the vocabulary is saved to <serialization dir>/vocabulary, and a later run can
// reuse it with  -o '{"vocabulary": {"type": "from_files", "directory": "runs/x/vocabulary"}}'.
{
  with_head(config, head, min_count=3):: config + {
    dataset_reader+: {
      token_indexers+: { targets: { type: 'single_id', namespace: 'lm_targets' } },
    },
    vocabulary: { type: 'from_instances', min_count: { lm_targets: min_count } },
    datasets_for_vocab_creation: ['train'],
    model+: {
      output_head: head { vocab_namespace: 'lm_targets' },
      target_ids_key: 'targets',
      // Nearest-neighbour accuracy needs predicted vectors, which these heads do not make.
      nearest_neighbour_words: null,
    },
  },
  // ELMo's output layer: a sampled softmax (8,192 log-uniform samples per batch, the full softmax
  // for validation), one layer for both directions (elmo_sampled).
  sampled(config):: self.with_head(config, { type: 'sampled_softmax', num_samples: 8192 }) + {
    model+: { share_output_head: true },
  },
  // The paper's FIXED: the sampled softmax with its output embedding frozen at the fastText
  // vectors of the vocabulary's words (the input's .bin); the map into the fastText space and
  // the softmax bias train (elmo_fixed).
  fixed(config):: self.sampled(config) + {
    model+: {
      output_head+: {
        freeze_output_embedding: true,
        output_embedding_fasttext: config.model.text_field_embedder.token_embedders.tokens.model_path,
      },
    },
  },
}
