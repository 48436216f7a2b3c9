// The ELMo-C part every task config shares: the indexer, the token embedder, and the switch to
// the paper's "fastText only" row (ELMO_C_BASELINE=fasttext: the fastText vectors of each word
// in place of ELMo-C). ELMO_C_DIM is the archive's output size (2 x its projection_size; the
// plugin's default 1024 is the paper's), ELMO_C_FASTTEXT_DIM the fastText vectors' (default 300,
// as cc.en.300.bin); the layers that read the embedder are sized from `context_dim`.
//
//   local bilm = import 'elmo_c.libsonnet';
//   ... token_indexers: { elmo: bilm.indexer }, ...
//   ... token_embedders: { elmo: bilm.embedder(dropout=0.5) }, input_size: 50 + bilm.context_dim
local fasttext = std.extVar('ELMO_C_FASTTEXT');
local use_elmo_c = std.extVar('ELMO_C_BASELINE') != 'fasttext';
local elmo_c_dim = std.parseInt(std.extVar('ELMO_C_DIM'));
local fasttext_dim = std.parseInt(std.extVar('ELMO_C_FASTTEXT_DIM'));

{
  use_elmo_c: use_elmo_c,
  context_dim: if use_elmo_c then elmo_c_dim else fasttext_dim,
  // model_path (ELMO_C_FASTTEXT), not archive_file: the one file serves the ELMo-C row and the
  // fastText-only row; the biLM refuses a .bin other than its own (fingerprint check).
  indexer: { type: 'fasttext_subwords', model_path: fasttext },
  // The scalar mix of the archive's layers (no layer norm), with `dropout` on its output; or,
  // for the baseline, each word's fastText vector.
  embedder(dropout): if use_elmo_c then {
    type: 'elmo_c_token_embedder',
    archive_file: std.extVar('ELMO_C_ARCHIVE'),
    fasttext_path: fasttext,
    do_layer_norm: false,
    expected_output_dim: elmo_c_dim,
    dropout: dropout,
  } else { type: 'fasttext', model_path: fasttext, expected_dim: fasttext_dim },
}
