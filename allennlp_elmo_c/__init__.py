"""
allennlp-elmo-c: ELMo-style contextual representations trained with continuous outputs.

Importing this package applies the torch compatibility fixes AllenNLP 2.10.1 needs (see
`allennlp_elmo_c.compat`), makes AllenNLP write a training run's outputs atomically (see
`allennlp_elmo_c.training.atomic_outputs`), makes every run's checkpoints atomic with `--recover`
from the newest intact one whatever the config says about the checkpointer
(`allennlp_elmo_c.training.atomic_checkpointer.apply`), records absolute fastText paths in trained
archives and looks for a moved archive's fastText file beside it (`allennlp_elmo_c.training.archive_paths`), gives the configs' environment variables their
defaults and names every unset one that has none in a `ConfigurationError`
(`allennlp_elmo_c.common.config_defaults`: `ELMO_C_DIM` = 1024, `ELMO_C_BASELINE` = none) and registers every
component with AllenNLP, so both `--include-package allennlp_elmo_c` and a `.allennlp_plugins`
file naming `allennlp_elmo_c` work.
"""

import allennlp_elmo_c_startup

allennlp_elmo_c_startup.wait_passively()  # first: the imports below load torch and its OpenMP

from allennlp_elmo_c import compat
from allennlp_elmo_c.common import config_defaults
from allennlp_elmo_c.training import archive_paths, atomic_checkpointer, atomic_outputs

compat.apply()
atomic_outputs.apply()
atomic_checkpointer.apply()
archive_paths.apply()
config_defaults.apply()

# Importing the subpackages registers every component (a `.allennlp_plugins` file imports only
# this module, not its submodules).
from allennlp_elmo_c import commands, data, models, modules, predictors, training  # noqa: E402,F401
from allennlp_elmo_c import integrations  # noqa: E402,F401  (Hugging Face Auto* and spaCy's elmo_c)

# The Python API, shaped like AllenNLP's ELMo (`Elmo`, `batch_to_ids`, 0.9's `ElmoEmbedder`).
from allennlp_elmo_c.commands.elmo_c_embed import ElmoCEmbedder  # noqa: E402
from allennlp_elmo_c.modules.elmo_c import ElmoC, batch_to_ids  # noqa: E402

__all__ = ["ElmoC", "ElmoCEmbedder", "batch_to_ids"]

__version__ = "0.1.0"
