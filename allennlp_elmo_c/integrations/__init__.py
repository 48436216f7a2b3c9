"""Front doors outside AllenNLP: Hugging Face transformers (`huggingface`: `AutoConfig`,
`AutoModel`, `AutoTokenizer` for a model directory) and spaCy (`spacy_pipe`: the `elmo_c`
pipeline component). Importing registers both."""

from allennlp_elmo_c.integrations import huggingface, spacy_pipe  # noqa: F401
