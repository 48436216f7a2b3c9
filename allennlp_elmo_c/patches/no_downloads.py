"""
allennlp-models' NarrativeQA evaluation tool calls `nltk.download` for `punkt` and `wordnet`
when it is imported (which AllenNLP's plugin loading does, for every `allennlp` command), and
imports `rouge`, which prints setuptools' `pkg_resources` deprecation warning. Nothing may
download at run time: `allennlp_elmo_c_startup.install()` makes that one import skip the
downloads and that one warning (its module docstring says how). Its `.pth` does this at start-up
in the `allennlp` command, before allennlp-models is imported; applying it here covers
`python -m allennlp_elmo_c` and Python code that imports allennlp-models after the plugin. For
every model (nothing of AllenNLP's is replaced).
"""

import allennlp_elmo_c_startup


def apply() -> None:
    """Installs the start-up hook (`allennlp_elmo_c_startup.install`, itself idempotent)."""
    allennlp_elmo_c_startup.install()
