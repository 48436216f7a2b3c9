// ELMo-Sub's change to an ELMo-C config (elmo_sub, elmo_sub_demo): BPE subwords instead of
// words, a trainable subword embedding of the projection's size instead of frozen fastText
// vectors, and a full softmax over the subword vocabulary tied to that embedding instead of the
// continuous head. Tying needs the embedding to be the head's input size: the projection size.
{
  with_subwords(config, tokenizer_path, vocabulary_directory)::
    local projection_size = config.model.contextualizer.projection_size;
    config + {
      dataset_reader+: {
        tokenizer: { type: 'bpe', tokenizer_path: tokenizer_path },
        token_indexers: { tokens: { type: 'single_id', namespace: 'subwords' } },
      },
      vocabulary: { type: 'from_files', directory: vocabulary_directory },
      model+: {
        text_field_embedder: {
          token_embedders: {
            tokens: { type: 'embedding', embedding_dim: projection_size, vocab_namespace: 'subwords' },
          },
        },
        contextualizer+: { input_size: projection_size },
        output_head: { type: 'softmax', tie_input_embedding: true, vocab_namespace: 'subwords' },
        target_ids_key: 'tokens',
      },
    },
}
