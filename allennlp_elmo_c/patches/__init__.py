"""
Every change this plugin makes to AllenNLP's own code, each one module with its reason and a test
(`tests/patches/`) that AllenNLP's original fails; docs/install.md lists them. Nothing else in
the package assigns to an AllenNLP attribute (`tests/patches/test_contained.py`).

1. `reduce_on_plateau`: the scheduler on torch 2.7+ (torch removed `verbose`). Every model.
2. `weights_only_loads`: `--recover` with AllenNLP's checkpointer on torch 2.6+. Every model.
3. `load_archive`: archives with ELMo-C components, and model directories, load the plugin's
   way; any other is AllenNLP's.
4. `config_defaults`: the defaults of the configs' `ELMO_C_*` variables, and an error naming
   every unset one; a config that reads none evaluates as without the plugin.
"""

from allennlp_elmo_c.patches import (
    config_defaults,
    load_archive,
    reduce_on_plateau,
    weights_only_loads,
)

PATCHES = (reduce_on_plateau, weights_only_loads, load_archive, config_defaults)


def apply() -> None:
    """Applies every patch, in order; calling it again does nothing."""
    for patch in PATCHES:
        patch.apply()
