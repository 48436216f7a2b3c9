"""
Every change this plugin makes to AllenNLP's own code, each one module with its reason and its
test (`tests/patches/`, each showing AllenNLP without the patch fails where the patched one
works). Nothing else in the package assigns to an AllenNLP attribute
(`tests/patches/test_contained.py`); the package's `__init__` calls `apply()` once.

In the order `apply()` applies them:

1. `reduce_on_plateau`: the `reduce_on_plateau` scheduler on torch 2.7+ (torch removed
   `verbose`). Every model.
2. `weights_only_loads`: AllenNLP's loads of checkpoints, archives' weights and `best.th` with
   `weights_only=True`, whatever `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` says (and `--recover` on
   torch 2.6+). Every model.
3. `no_downloads`: allennlp-models' NarrativeQA tool downloads nothing when it is imported.
4. `unactionable_warnings`: the trainer's one `torch.cuda.amp.autocast` FutureWarning.
5. `atomic_outputs`: the files of a training run AllenNLP writes outside the checkpointer
   (`model.tar.gz`, `best.th`, metrics, `vocabulary/`, `config.json`, `meta.json`) written
   atomically. Every run: the same files, byte for byte; only what a crash leaves differs.
6. `recover_config`: `--recover` of an ELMo-C run reads the run's `config.json` as plain JSON.
7. `archive_paths`: ELMo-C runs record absolute fastText paths and fingerprints, ELMo-C task
   archives bundle the biLM's fastText `.bin` (wrapping `atomic_outputs`' `archive_model`, so
   after it).
8. `load_archive`: ELMo-C archives and model directories load the plugin's way (received-model
   checks, budget, bundled files); any other archive is AllenNLP's. Every archive is extracted
   without writing outside its directory.
9. `config_defaults`: the `ELMO_C_*` variables' defaults and the error naming every unset
   variable of the plugin's configs.

"ELMo-C" is decided by one function, `received.received_config.is_elmo_c_config`: a config with a
component this plugin registers. Nothing here re-registers an AllenNLP name: AllenNLP's
"default" checkpointer is AllenNLP's, and the configs name `atomic`.
"""

from allennlp_elmo_c.patches import (
    archive_paths,
    atomic_outputs,
    config_defaults,
    load_archive,
    no_downloads,
    recover_config,
    reduce_on_plateau,
    unactionable_warnings,
    weights_only_loads,
)

# In the order they are applied.
PATCHES = (
    reduce_on_plateau,
    weights_only_loads,
    no_downloads,
    unactionable_warnings,
    atomic_outputs,
    recover_config,
    archive_paths,
    load_archive,
    config_defaults,
)


def apply() -> None:
    """Applies every patch, in order; calling it again does nothing."""
    for patch in PATCHES:
        patch.apply()
