// ELMo-C-Rnd, the paper's output-embedding ablation (Li et al. 2019, Table 3): elmo_c.jsonnet
// with the TARGET vectors replaced by fixed random N(0, 1) vectors (300-d, one per word string);
// the input stays fastText. Same environment variables as elmo_c.jsonnet; 76.2M trainable
// parameters, as ELMo-C.
//
// The random vectors need no vocabulary: the `word_hash` indexer (key `target_hash`) hashes each
// token string and `random_vectors` draws its vector from that hash. Both embedders are `subset`
// text field embedders, so each reads only its own key of the shared `tokens` field.
local base = import 'elmo_c.jsonnet';

base + {
  dataset_reader+: {
    token_indexers+: { target_hash: { type: 'word_hash' } },
  },
  model+: {
    text_field_embedder+: { type: 'subset' },
    target_embedder: {
      type: 'subset',
      token_embedders: { target_hash: { type: 'random_vectors', embedding_dim: 300, seed: 0 } },
    },
  },
}
