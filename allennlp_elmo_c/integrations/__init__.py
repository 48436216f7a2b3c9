"""Front doors outside AllenNLP (`huggingface`, `spacy_pipe`, `flair`), each registering itself
with its library when imported."""
