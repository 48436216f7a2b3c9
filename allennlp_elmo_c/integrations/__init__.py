"""Front doors outside AllenNLP, each imported by its own name only, which registers it with its
library: `huggingface` (`AutoConfig`, `AutoModel`, `AutoTokenizer` for a model directory),
`spacy_pipe` (the `elmo_c` pipeline component; spaCy's entry point registers the factory through
the top-level `allennlp_elmo_c_spacy`, which imports nothing of the plugin) and `flair`
(`ElmoCEmbeddings`)."""
