// ELMo's original output layer on the ELMo-C model: elmo_c.jsonnet with the continuous head
// replaced by a sampled softmax (8,192 log-uniform samples per batch, full softmax for
// validation) over the ~800K-word vocabulary of the training data (word_targets.libsonnet).
// As in ELMo, one softmax is shared by the two directions. Everything else (frozen 300-d
// fastText input, encoder, optimizer, schedule) is elmo_c's; the paper's ELMo differs also in its
// input (a trained char-CNN, ~18M parameters).
// Trainable parameters at an 800K-word vocabulary: 486.3M (410.4M for the softmax); ELMo: 499M.
//
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_sampled.jsonnet -s runs/elmo_sampled \
//       --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.sampled(import 'elmo_c.jsonnet')
