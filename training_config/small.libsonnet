// The demo's size, shared by elmo_c_small.jsonnet (your own corpus) and elmo_c_demo.jsonnet (the
// demo corpus): `small(paper, steps)` is `paper` (elmo_c.jsonnet, or a config built on it) with
// 100-d fastText vectors in and out, cell 256 / projection 128 x 2 layers per direction, batches
// of 64 windows, one epoch on a CPU, and the RNMT+ schedule sized for `steps` optimizer updates
// without a warm-up. Reader, embedder, encoder, head, loss and optimizer stay the paper's.
{
  small(paper, steps, dim=100)::
    local updates = std.max(1, steps);
    paper {
      model+: {
        text_field_embedder+: {
          token_embedders+: { tokens+: { expected_dim: dim } },
        },
        contextualizer+: { input_size: dim, projection_size: 128, cell_size: 256 },
      },
      data_loader: { batch_size: 64, shuffle: true },
      validation_data_loader: { batch_size: 256, shuffle: false },
      trainer+: {
        num_epochs: 1,
        cuda_device: -1,
        // The learning rate is 2e-3 from the first update and held for the first 40% of the run,
        // then decayed to half (1e-3) by its end. No warm-up: with batch_scale 1.0, rnmt_plus's
        // warm-up runs from lr to 1.0 x lr, so warmup_steps changes nothing here.
        optimizer: { type: 'fused_adam', lr: 2e-3, eps: 1e-6 },  // adam's update, torch's fused kernel
        learning_rate_scheduler: {
          type: 'rnmt_plus',
          warmup_steps: std.max(1, std.floor(updates / 10)),
          decay_start: std.max(1, std.floor(2 * updates / 5)),
          decay_end: std.max(2, updates),
          batch_scale: 1.0,
        },
        checkpointer: { type: 'atomic', keep_most_recent_by_count: 2 },
      },
    },
}
