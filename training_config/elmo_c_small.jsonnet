// elmo_c.jsonnet's recipe at the demo's size (small.libsonnet), for a first run on your own
// corpus on a CPU (docs/your-data.md).
//
//   ELMO_C_TRAIN_DATA=corpus/train.txt ELMO_C_VALIDATION_DATA=corpus/validation.txt \
//   ELMO_C_FASTTEXT=vectors/mine.100d.bin ELMO_C_STEPS=2000 \
//   allennlp train training_config/elmo_c_small.jsonnet -s runs/small --include-package allennlp_elmo_c
//
// ELMO_C_FASTTEXT: a 100-d fastText .bin with subwords (`train-fasttext --dim 100`). ELMO_C_STEPS:
// the optimizer updates of the whole run, about tokens of the training text / (20 x 64) per epoch
// (`wc -w train.txt`; 20 new tokens per window) times num_epochs (one; more with
// -o '{"trainer.num_epochs": 3}'). On a GPU add -o '{"trainer.cuda_device": 0}'.
local small = import 'small.libsonnet';

small.small(import 'elmo_c.jsonnet', std.parseInt(std.extVar('ELMO_C_STEPS')))
