// ELMo-A at the demo size: elmo_c_demo.jsonnet with the continuous head replaced by an adaptive
// softmax over the demo corpus's words seen 3 times or more (word_targets.libsonnet): a head of
// the 2,000 most frequent words, clusters of 8,000 and the rest (projections 32 and 8).
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_a_demo.jsonnet -s runs/demo_a \
//       --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.with_head(import 'elmo_c_demo.jsonnet', {
  type: 'adaptive_softmax',
  cutoffs: [2000, 10000],
  div_value: 4.0,
})
