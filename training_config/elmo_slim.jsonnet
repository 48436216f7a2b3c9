// Slim embeddings (Li, Kulhanek, Wang, Zhao & Wu, AAAI 2018) as the output layer of the ELMo-C
// model: elmo_c.jsonnet with the continuous head replaced by a full softmax over the ~800K-word
// vocabulary of the training data (word_targets.libsonnet) whose 512-d output word vectors are
// each the concatenation of K = 8 sub-vectors (64-d), the k-th from its own trainable sub-pool
// (the paper's output layer): M = 50,000 sub-vectors in all, 8 sub-pools of 6,250, assigned at
// random once (seed 0) and stored in the weights. Everything else (frozen 300-d fastText input,
// so downstream use is unchanged; encoder; optimizer; schedule) is elmo_c's, with one head per
// direction as elmo_c.
//
// K and M are our choice (this model is in neither paper): M ~ V / 16 uses each sub-vector ~128
// times at V = 800K, and K = 8 keeps sub-vectors 64-d. The logits cost O(M * 512 / K + V * K)
// per position instead of O(V * 512); CPU timings against a full softmax for pools of V / 4 to
// V / 64: experiments/speed/RESULTS.md (experiments/speed/slim_softmax.py).
// Trainable parameters at an 800K-word vocabulary: 83.9M (2 x 4.0M for the heads: 3.2M
// sub-vectors + 0.8M biases), against 2 x 410.4M for full 512 x 800K softmaxes.
//
// The loss is scored 1,024 positions at a time, each chunk's logits recomputed in the backward
// pass (positions_per_chunk): a batch of 768 x 21 positions would otherwise need several
// (16K x 800K) float tensors (~50 GB each), as any full softmax at this vocabulary.
//
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_slim.jsonnet -s runs/elmo_slim \
//       --include-package allennlp_elmo_c
local word_targets = import 'word_targets.libsonnet';

word_targets.with_head(import 'elmo_c.jsonnet', {
  type: 'slim_softmax',
  num_subvectors: 8,
  pool_size: 50000,
  positions_per_chunk: 1024,
})
