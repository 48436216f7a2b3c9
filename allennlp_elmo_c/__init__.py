"""
allennlp-elmo-c: ELMo-style contextual representations trained with continuous outputs.

Importing this package registers its components with AllenNLP (so `--include-package
allennlp_elmo_c` and a `.allennlp_plugins` file naming `allennlp_elmo_c` both work) and applies
`allennlp_elmo_c.patches` (each one module, with its reason, listed in docs/install.md); it sets
no environment variable and registers nothing outside AllenNLP. The integrations register
themselves where they are used: `allennlp_elmo_c.integrations.huggingface` (the Auto classes,
when imported) and spaCy's `elmo_c` factory (`allennlp_elmo_c_spacy`, spaCy's entry point).
"""

from allennlp_elmo_c import patches

patches.apply()

# Importing the subpackages registers every component (a `.allennlp_plugins` file imports only
# this module, not its submodules).
from allennlp_elmo_c import commands, data, models, modules, predictors, training  # noqa: E402,F401

# The Python API, shaped like AllenNLP's ELMo (`Elmo`, `batch_to_ids`, 0.9's `ElmoEmbedder`).
from allennlp_elmo_c.common.threads import use_free_cpus  # noqa: E402
from allennlp_elmo_c.modules.elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids  # noqa: E402

__all__ = ["ElmoC", "ElmoCEmbedder", "batch_to_ids", "use_free_cpus"]

__version__ = "0.1.0"
