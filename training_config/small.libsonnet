// The demo's size, shared by elmo_c_small.jsonnet (your own corpus) and elmo_c_demo.jsonnet (the
// demo corpus): `small(paper)` is `paper` (elmo_c.jsonnet, or a config built on it) with 100-d
// fastText vectors in and out, cell 256 / projection 128 x 2 layers per direction, batches of 64
// windows, one epoch on a CPU, and the RNMT+ schedule sized from the corpus, without a warm-up.
// The corpus is streamed (`lm_stream`: 200 batches in memory at a time, whatever its size).
// Reader, embedder, encoder, head, loss and optimizer stay the paper's.
{
  small(paper, dim=100)::
    local batch_size = 64;
    paper {
      model+: {
        text_field_embedder+: {
          token_embedders+: { tokens+: { expected_dim: dim } },
        },
        contextualizer+: { input_size: dim, projection_size: 128, cell_size: 256 },
      },
      data_loader: {
        type: 'lm_stream',
        batch_size: batch_size,
        shuffle: true,
        max_instances_in_memory: batch_size * 200,
      },
      validation_data_loader: {
        type: 'lm_stream',
        batch_size: 256,
        shuffle: false,
        max_instances_in_memory: 256 * 50,
      },
      trainer+: {
        num_epochs: 1,
        cuda_device: -1,
        // The learning rate is 2e-3 from the first update and held for the first 40% of the run,
        // then decayed to half (1e-3) by its end; the run's updates come from the corpus
        // (`lm_stream` counts it) and the epochs. No warm-up: with batch_scale 1.0, rnmt_plus's
        // warm-up runs from lr to 1.0 x lr.
        optimizer: { type: 'fused_adam', lr: 2e-3, eps: 1e-6 },  // adam's update, torch's fused kernel
        learning_rate_scheduler: {
          type: 'rnmt_plus',
          warmup_steps: 0,
          decay_start_fraction: 0.4,
          decay_end_fraction: 1.0,
          batch_scale: 1.0,
        },
        // A checkpoint every 30 minutes and at the epoch's end: --recover loses at most that.
        checkpointer: { type: 'atomic', save_every_num_seconds: 1800, keep_most_recent_by_count: 2 },
      },
    },
}
