"""
allennlp-elmo-c: ELMo-style contextual representations trained with continuous outputs.
Importing it registers its components with AllenNLP and applies `allennlp_elmo_c.patches`.
"""

from allennlp_elmo_c import patches

patches.apply()

# Registers every component.
from allennlp_elmo_c import commands, data, models, modules, predictors, training  # noqa: E402,F401

from allennlp_elmo_c.common.threads import use_free_cpus  # noqa: E402
from allennlp_elmo_c.modules.elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids  # noqa: E402

__all__ = ["ElmoC", "ElmoCEmbedder", "batch_to_ids", "use_free_cpus"]

__version__ = "0.1.0"
