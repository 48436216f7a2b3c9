// elmo_c.jsonnet's recipe at the demo's size (small.libsonnet) on the demo corpus (2.4M tokens
// of news, `python -m experiments.corpora build-demo-data`) with the demo fastText vectors (100-d,
// `train-fasttext`): one epoch of 64-window updates, as many as the corpus makes (about 2,000:
// 2.58M tokens with boundaries / 20 new tokens a window / 64).
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_c_demo.jsonnet -s runs/demo \
//       --include-package allennlp_elmo_c
//
// ELMO_C_DATA_DIR must hold news/{train,dev}.txt, fasttext/news.100d.bin and
// fasttext/frequent_words.txt (`make demo` builds them).
local data = std.extVar('ELMO_C_DATA_DIR');
local fasttext = data + '/fasttext/news.100d.bin';
local small = import 'small.libsonnet';

small.small(import 'elmo_c.jsonnet') {
  dataset_reader+: {
    token_indexers: { tokens: { type: 'fasttext_subwords', model_path: fasttext } },
  },
  train_data_path: data + '/news/train.txt',
  validation_data_path: data + '/news/dev.txt',
  model+: {
    text_field_embedder+: { token_embedders+: { tokens+: { model_path: fasttext } } },
    nearest_neighbour_words: data + '/fasttext/frequent_words.txt',
  },
}
