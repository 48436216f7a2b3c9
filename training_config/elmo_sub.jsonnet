// ELMo-Sub, the paper's subword baseline (Li et al., TACL 2019, Table 2: 92M trainable
// parameters): elmo_c.jsonnet with BPE subwords instead of words, a trainable 512-d subword
// embedding instead of frozen fastText vectors, and a full softmax over the subword vocabulary
// whose output embedding is the input embedding (tied) instead of the continuous head. The
// biLM is a language model over the subword sequence (windows of 20 subwords). Downstream, a
// word is represented by its first subword (`bpe_first_subword` indexer).
// Encoder, optimizer, schedule, batch size and epochs are elmo_c.jsonnet's. With a 30,000-subword
// vocabulary: 91.0M trainable parameters (75,568,128 + 514 per subword; no input Linear: the
// embedding has the projection's size). A window is 20
// subwords (~1.2 per word), so the schedule's step counts come ~20% earlier in the data.
//
//   python -m allennlp_elmo_c train-bpe $ELMO_C_TRAIN_DATA bpe --vocab-size 30000
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_BPE=bpe/tokenizer.json \
//   ELMO_C_VOCABULARY=bpe/vocabulary \
//   allennlp train training_config/elmo_sub.jsonnet -s runs/elmo_sub \
//       --include-package allennlp_elmo_c
local subwords = import 'subwords.libsonnet';

subwords.with_subwords(import 'elmo_c.jsonnet', std.extVar('ELMO_C_BPE'),
                       std.extVar('ELMO_C_VOCABULARY'))
