// elmo_c.jsonnet's recipe at the demo's size, for a first run on your own corpus on a CPU
// (docs/your-data.md): 100-d fastText vectors in and out, cell 256 / projection 128 x 2 layers per
// direction (as elmo_c_demo.jsonnet), batches of 64 windows, the RNMT+ schedule sized from the
// length of the run (without a warm-up, as elmo_c_demo.jsonnet's). Same reader, embedder,
// encoder, head, loss and optimizer as elmo_c.jsonnet; only sizes, step counts, the schedule and
// the device differ.
//
//   ELMO_C_TRAIN_DATA=corpus/train.txt ELMO_C_VALIDATION_DATA=corpus/validation.txt \
//   ELMO_C_FASTTEXT=vectors/mine.100d.bin ELMO_C_STEPS=2000 \
//   allennlp train training_config/elmo_c_small.jsonnet -s runs/small --include-package allennlp_elmo_c
//
// ELMO_C_FASTTEXT: a 100-d fastText .bin with subwords (`train-fasttext --dim 100`). ELMO_C_STEPS:
// the optimizer updates of the whole run, about tokens of the training text / (20 x 64) per epoch
// (`wc -w train.txt`; 20 new tokens per window) times num_epochs (one; more with
// -o '{"trainer.num_epochs": 3}'). On a GPU add -o '{"trainer.cuda_device": 0}'.
local paper = import 'elmo_c.jsonnet';
local steps = std.max(1, std.parseInt(std.extVar('ELMO_C_STEPS')));
local batch_size = 64;
local dim = 100;

paper {
  model+: {
    text_field_embedder+: {
      token_embedders+: { tokens+: { expected_dim: dim } },
    },
    contextualizer+: { input_size: dim, projection_size: 128, cell_size: 256 },
  },
  data_loader: { batch_size: batch_size, shuffle: true },
  validation_data_loader: { batch_size: 256, shuffle: false },
  trainer+: {
    num_epochs: 1,
    cuda_device: -1,
    // The demo's learning rate and schedule, sized from ELMO_C_STEPS. No warm-up: with
    // batch_scale 1.0, rnmt_plus's warm-up runs from lr to 1.0 x lr, so the learning rate is
    // 2e-3 from the first update (warmup_steps changes nothing here), held for the first 40% of
    // the run, then decayed to half (1e-3) by its end (the demo's 800 / 2000 steps).
    optimizer: { type: 'fused_adam', lr: 2e-3, eps: 1e-6 },  // adam's update, torch's fused kernel
    learning_rate_scheduler: {
      type: 'rnmt_plus',
      warmup_steps: std.max(1, std.floor(steps / 10)),
      decay_start: std.max(1, std.floor(2 * steps / 5)),
      decay_end: std.max(2, steps),
      batch_scale: 1.0,
    },
    checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
  },
}
