// ELMo-C predicting ELMo's character-CNN vectors (the paper's ablation, Table 3):
// elmo_c.jsonnet with the fastText input unchanged and the TARGET embedding replaced by ELMo's
// trained char-CNN, frozen (512-d for the original ELMo, so the heads are Linear(512 -> 512)).
// 76.4M trainable parameters. Environment variables as elmo_c_cnn.jsonnet.
local base = import 'elmo_c.jsonnet';

base + {
  dataset_reader+: {
    token_indexers+: {
      // <S> / </S> get ELMo's own sentence-boundary character ids.
      elmo_characters: { type: 'elmo_characters', tokens_to_add: { '<S>': 256, '</S>': 257 } },
    },
  },
  model+: {
    text_field_embedder+: { type: 'subset' },
    target_embedder: {
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
  },
}
