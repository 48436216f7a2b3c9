// ELMo-A, the paper's adaptive-softmax baseline (Li et al., TACL 2019, Table 2: 196M trainable
// parameters): elmo_c.jsonnet with the continuous head replaced by an adaptive softmax
// (torch.nn.AdaptiveLogSoftmaxWithLoss) over the ~800K-word vocabulary of the training data
// (word_targets.libsonnet). Everything else (frozen 300-d fastText input, encoder, optimizer,
// schedule) is elmo_c's.
//
// Neither the paper nor its code gives the cutoffs; these are the usual ones for the 1B Word
// Benchmark's 793K vocabulary (Transformer-XL; Baevski & Auli 2019): a head of the 60K most
// frequent words, then clusters of 40K, 540K and the rest, with 512 / 4^k-dimensional tail
// projections. That gives 184.9M trainable parameters at an 800K-word vocabulary (2 x 54.5M for
// the adaptive softmaxes + 75.9M), 6% below the paper's 196M.
//
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_a.jsonnet -s runs/elmo_a --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.with_head(import 'elmo_c.jsonnet', {
  type: 'adaptive_softmax',
  cutoffs: [60000, 100000, 640000],
  div_value: 4.0,
})
