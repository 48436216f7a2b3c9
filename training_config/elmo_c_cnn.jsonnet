// ELMo-C with ELMo's character CNN as the INPUT embedding (the paper's ablation, Table 3):
// elmo_c.jsonnet with the fastText input replaced by ELMo's trained char-CNN, frozen; the target
// stays fastText. 75.9M trainable parameters (the CNN's 18.0M are frozen; no input
// Linear: the CNN's 512-d vectors already have the projection's size, LayerNorm alone as the paper).
//
//   ELMO_C_ELMO_OPTIONS=.../elmo_2x4096_512_2048cnn_2xhighway_options.json \
//   ELMO_C_ELMO_WEIGHTS=.../elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5 \
//   ELMO_C_TRAIN_DATA=... ELMO_C_VALIDATION_DATA=... ELMO_C_FASTTEXT=.../cc.en.300.bin \
//   allennlp train training_config/elmo_c_cnn.jsonnet -s runs/elmo_c_cnn \
//       --include-package allennlp_elmo_c
//
// The CNN's output size is the options' lstm.projection_dim (512 for the original ELMo): set
// `elmo_dim` to match another options file (the model refuses a mismatch).
local base = import 'elmo_c.jsonnet';
local elmo_dim = 512;

base + {
  dataset_reader+: {
    token_indexers+: {
      // <S> / </S> get ELMo's own sentence-boundary character ids.
      elmo_characters: { type: 'elmo_characters', tokens_to_add: { '<S>': 256, '</S>': 257 } },
    },
  },
  model+: {
    text_field_embedder: {
      type: 'subset',
      token_embedders: {
        elmo_characters: {
          type: 'elmo_char_cnn',
          options_file: std.extVar('ELMO_C_ELMO_OPTIONS'),
          weight_file: std.extVar('ELMO_C_ELMO_WEIGHTS'),
          requires_grad: false,
        },
      },
    },
    // The fastText vectors of elmo_c.jsonnet, now as targets only.
    target_embedder: { type: 'subset', token_embedders: base.model.text_field_embedder.token_embedders },
    contextualizer+: { input_size: elmo_dim },
  },
}
