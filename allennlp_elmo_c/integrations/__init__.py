"""Front doors outside AllenNLP: Hugging Face transformers (`huggingface`: `AutoConfig`,
`AutoModel`, `AutoTokenizer` for a model directory) and spaCy (`spacy_pipe`: the `elmo_c`
pipeline component). Importing registers both. Flair's (`flair`: `ElmoCEmbeddings`) is
imported only by its own name, `allennlp_elmo_c.integrations.flair`: nothing else imports Flair."""

from allennlp_elmo_c.integrations import huggingface, spacy_pipe  # noqa: F401
