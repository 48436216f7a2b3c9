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
local demo = import 'elmo_c_demo.jsonnet';
local projection_size = demo.model.contextualizer.projection_size;

demo + {
  dataset_reader+: {
    tokenizer: { type: 'bpe', tokenizer_path: data + '/bpe/tokenizer.json' },
    token_indexers: { tokens: { type: 'single_id', namespace: 'subwords' } },
  },
  vocabulary: { type: 'from_files', directory: data + '/bpe/vocabulary' },
  model+: {
    text_field_embedder: {
      token_embedders: {
        tokens: { type: 'embedding', embedding_dim: projection_size, vocab_namespace: 'subwords' },
      },
    },
    contextualizer+: { input_size: projection_size },
    output_head: { type: 'softmax', tie_input_embedding: true, vocab_namespace: 'subwords' },
    target_ids_key: 'tokens',
    // Nearest-neighbour accuracy needs predicted vectors, which a softmax does not make.
    nearest_neighbour_words: null,
  },
}
