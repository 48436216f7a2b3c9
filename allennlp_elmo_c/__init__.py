"""
allennlp-elmo-c: ELMo-style contextual representations trained with continuous outputs.

Importing this package registers every component with AllenNLP, so both `--include-package
allennlp_elmo_c` and a `.allennlp_plugins` file naming `allennlp_elmo_c` work, and applies the
patches of `allennlp_elmo_c.patches` (each one module, with its reason): the torch-2 fixes
AllenNLP 2.10.1 needs (`reduce_on_plateau`; `weights_only_loads`: `Checkpointer.load_checkpoint`,
`read_state_dict` and the trainer's reload of `best.th` with `weights_only=True`), no downloads
when allennlp-models is imported, one unactionable warning filtered, a training run's outputs
written atomically (`atomic_outputs`), and for ELMo-C configs only (a config with a component
this plugin registers): `--recover` reading the run's config.json as plain JSON
(`recover_config`, AllenNLP's `create_serialization_dir`), absolute fastText paths and bundled
fastText files in trained archives (`archive_paths`), and archives loaded the plugin's way, with
the received-model checks (`load_archive`); and the configs' `ELMO_C_*` variables get their
defaults (`ELMO_C_DIM` = 1024, `ELMO_C_BASELINE` = none, `ELMO_C_FASTTEXT_DIM` = 300,
`ELMO_C_PRECISION` = float32), an unset variable of the plugin's configs being named in a
`ConfigurationError` (`config_defaults`). AllenNLP trains, evaluates and predicts with any other
model as it would without the plugin.
"""

import allennlp_elmo_c_startup

allennlp_elmo_c_startup.wait_passively()  # first: the imports below load torch and its OpenMP

from allennlp_elmo_c import patches  # noqa: E402

patches.apply()

# Importing the subpackages registers every component (a `.allennlp_plugins` file imports only
# this module, not its submodules).
from allennlp_elmo_c import commands, data, models, modules, predictors, training  # noqa: E402,F401
from allennlp_elmo_c import integrations  # noqa: E402,F401  (Hugging Face Auto* and spaCy's elmo_c)

# The Python API, shaped like AllenNLP's ELMo (`Elmo`, `batch_to_ids`, 0.9's `ElmoEmbedder`).
from allennlp_elmo_c.modules.elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids  # noqa: E402

__all__ = ["ElmoC", "ElmoCEmbedder", "batch_to_ids"]

__version__ = "0.1.0"
