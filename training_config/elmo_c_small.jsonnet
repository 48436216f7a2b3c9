// elmo_c.jsonnet's recipe at the demo's size (small.libsonnet), for a first run on your own
// corpus on a CPU (docs/your-data.md). The corpus is streamed, so memory does not grow with it,
// and the schedule is sized from it (its manifest from prepare-corpus, or one cached count).
//
//   ELMO_C_TRAIN_DATA=corpus/train.txt ELMO_C_VALIDATION_DATA=corpus/validation.txt \
//   ELMO_C_FASTTEXT=vectors/mine.100d.bin \
//   allennlp train training_config/elmo_c_small.jsonnet -s runs/small --include-package allennlp_elmo_c
//
// ELMO_C_FASTTEXT: a 100-d fastText .bin with subwords (`train-fasttext --dim 100`); for another
// size add -o '{"model.text_field_embedder.token_embedders.tokens.expected_dim": 300,
// "model.contextualizer.input_size": 300}'. More epochs: -o '{"trainer.num_epochs": 3}' (the
// schedule follows). On a GPU add -o '{"trainer.cuda_device": 0}'. How long and how much memory:
// `python -m allennlp_elmo_c plan corpus/train.txt --config training_config/elmo_c_small.jsonnet`.
local small = import 'small.libsonnet';

small.small(import 'elmo_c.jsonnet')
