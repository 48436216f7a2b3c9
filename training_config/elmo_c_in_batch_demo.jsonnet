// ELMo-C at the demo size with a vocabulary-free softmax in place of the cosine loss:
// elmo_c_demo.jsonnet with the continuous head's loss set to 'in_batch_softmax'. Each prediction
// is scored against the distinct fastText vectors of its batch's real positions (the true word
// the positive, every other distinct word a negative, repeats of the true word not), with a
// softmax over their cosines divided by the temperature. A batch of 64 windows holds 1,280
// positions per direction: the cost is O(1,280 x distinct words x 100) a direction, and there is
// no vocabulary.
//
//   ELMO_C_DATA_DIR=data allennlp train training_config/elmo_c_in_batch_demo.jsonnet \
//       -s runs/demo_in_batch --include-package allennlp_elmo_c
local demo = import 'elmo_c_demo.jsonnet';

demo + {
  model+: {
    output_head+: {
      loss: 'in_batch_softmax',
      // The head's default: cosines lie in [-1, 1], so the logits span 2 / 0.05 = 40, room for
      // p(true word) to approach 1 against the hundreds of distinct words of a batch; 0.05 is
      // also SimCSE's temperature for its normalized in-batch contrastive loss.
      temperature: 0.05,
    },
  },
  // The loss of a position depends on its batch (more distinct words, more negatives): validation
  // batches as large as the training ones make the validation loss the training loss's task.
  validation_data_loader+: { batch_size: demo.data_loader.batch_size },
}
