"""
Every change this plugin makes to AllenNLP's own code, each one module with its reason and its
test (`tests/patches/`, each showing AllenNLP without the patch fails where the patched one
works); docs/install.md lists them. Nothing else in the package assigns to an AllenNLP attribute
(`tests/patches/test_contained.py`); the package's `__init__` calls `apply()` once.

1. `reduce_on_plateau`: the `reduce_on_plateau` scheduler on torch 2.7+ (torch removed
   `verbose`). A torch-2 fix, every model.
2. `weights_only_loads`: `--recover` with AllenNLP's checkpointer on torch 2.6+ (the training
   state's numpy scalars). A torch-2 fix, every model.
3. `load_archive`: archives whose config.json has ELMo-C components, and model directories, load
   the plugin's way (received-model checks, budget, bundled files); any other is AllenNLP's.
4. `config_defaults`: the defaults of the `ELMO_C_*` variables the plugin's configs read, and the
   error naming every unset one; a config that reads none evaluates as without the plugin.

Everything else the plugin does for its own runs goes through AllenNLP's seams: the `elmo_c`
trainer, the `atomic` checkpointer and the `elmo_c_run` and `cpu_threads` callbacks its configs
name (`allennlp_elmo_c.training`).
"""

from allennlp_elmo_c.patches import (
    config_defaults,
    load_archive,
    reduce_on_plateau,
    weights_only_loads,
)

# In the order they are applied.
PATCHES = (reduce_on_plateau, weights_only_loads, load_archive, config_defaults)


def apply() -> None:
    """Applies every patch, in order; calling it again does nothing."""
    for patch in PATCHES:
        patch.apply()
