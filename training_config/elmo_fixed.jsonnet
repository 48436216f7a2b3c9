// The paper's FIXED baseline (Li et al., TACL 2019, Table 4): ELMo's sampled softmax
// (elmo_sampled.jsonnet) whose output embedding is frozen at the fastText vectors of the
// vocabulary's words (the same .bin as the input); a trainable Linear(512 -> 300) maps the
// encoder's states into the fastText space, and the softmax bias still trains. Everything else
// is elmo_c.jsonnet's; as in elmo_sampled, one output layer serves both directions. Trainable
// parameters at an 800K-word vocabulary: 76.8M (the frozen 800K x 300 output embedding, 240M
// numbers, is not trained).
//
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_fixed.jsonnet -s runs/elmo_fixed \
//       --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.fixed(import 'elmo_c.jsonnet')
