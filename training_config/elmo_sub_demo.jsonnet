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
local subwords = import 'subwords.libsonnet';

subwords.with_subwords(import 'elmo_c_demo.jsonnet', data + '/bpe/tokenizer.json',
                       data + '/bpe/vocabulary') + {
  // Nearest-neighbour accuracy needs predicted vectors, which a softmax does not make.
  model+: { nearest_neighbour_words: null },
}
