// The paper's FIXED output layer at the demo size: elmo_c_demo.jsonnet with the continuous head
// replaced by a sampled softmax (8,192 log-uniform samples per batch, the full softmax for
// validation) whose output embedding is frozen at the fastText vectors of the vocabulary's words
// (the input's .bin; word_targets.libsonnet counts the vocabulary). A trainable
// Linear(128 -> fastText dim) maps the encoder's states into the fastText space; the softmax
// bias trains. One output layer serves both directions, as in elmo_fixed.jsonnet.
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_fixed_demo.jsonnet -s runs/demo_fixed \
//       --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.fixed(import 'elmo_c_demo.jsonnet')
