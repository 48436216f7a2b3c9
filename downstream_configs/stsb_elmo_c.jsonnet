// STS Benchmark as three similarity bands (dissimilar < 2 <= partial < 4 <= equivalent, of the
// 0-5 score): the ESIM of snli_elmo_c.jsonnet (ELMo-C, or with ELMO_C_BASELINE=fasttext the
// fastText vectors of ELMO_C_FASTTEXT_DIM, as its only input; its initializer, which leaves the
// biLM alone) at hidden size 100 instead of 300: 5.7k training pairs, and one epoch of the 300-d ESIM costs
// about 4 times as much CPU. The data are what `experiments/quality/table2.py --tasks stsb` builds
// (experiments/corpora/stsb_corpus.py): tab-separated band, sentence 1, sentence 2, score,
// already tokenized, read by allennlp-models' `quora_paraphrase` reader.
//
// ELMO_C_DIM (default 1024) is the archive's output size, as in snli_elmo_c.jsonnet.
//
//   STSB_TRAIN=tasks/stsb/train.tsv STSB_DEV=tasks/stsb/dev.tsv STSB_TEST=tasks/stsb/test.tsv \
//   ELMO_C_ARCHIVE=runs/elmo_c/model.tar.gz ELMO_C_FASTTEXT=cc.en.300.bin \
//   allennlp train downstream_configs/stsb_elmo_c.jsonnet -s runs/stsb --include-package allennlp_elmo_c
local snli = import 'snli_elmo_c.jsonnet';
local hidden = 100;

snli {
  dataset_reader+: { type: 'quora_paraphrase', tokenizer: { type: 'whitespace' } },
  train_data_path: std.extVar('STSB_TRAIN'),
  validation_data_path: std.extVar('STSB_DEV'),
  test_data_path: std.extVar('STSB_TEST'),
  evaluate_on_test: true,
  model+: {
    encoder+: { hidden_size: hidden },
    projection_feedforward+: { input_dim: 8 * hidden, hidden_dims: hidden },
    inference_encoder+: { input_size: hidden, hidden_size: hidden },
    output_feedforward+: { input_dim: 8 * hidden, hidden_dims: hidden },
    output_logit+: { input_dim: hidden },
  },
  trainer+: {
    callbacks: [
      { type: 'console_logger', should_log_inputs: false },
      { type: 'rng_state' },
      { type: 'cpu_threads' },
      { type: 'elmo_c_run' },  // hardware.json; the biLM's fastText .bin for include_in_archive
    ],
    num_epochs: 30,
  },
}
