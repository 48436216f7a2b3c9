"""
Atomic writes for the files of a training run that AllenNLP 2.10.1 writes outside the
checkpointer, and that the run or its users read back: `model.tar.gz`, `best.th`,
`metrics_epoch_*.json` and `metrics.json`, the `vocabulary/` files, `config.json` and
`meta.json`. For every model: the files are AllenNLP's, byte for byte, under the names AllenNLP
gives them; only what a crash leaves differs.

Why patches: AllenNLP's trainer and `train` command write these with plain `open`/`torch.save`/
`tarfile.open` on the final name, from functions they call directly, with no registrable
component or callback around the write (a `TrainerCallback` runs before or after, never
instead). So a crash, kill or full disk in the middle leaves a file that looks finished: a
truncated `model.tar.gz`, a `best.th` that `--recover` then fails on at the end of the run, a
`config.json` that stops `--recover` before it starts. Each patch wraps the AllenNLP function,
keeping its signature and its code: the function writes to a temporary name in the same
directory (`allennlp_elmo_c.common.atomic`), which is fsynced and renamed onto the final name
only when the function returns. A failure leaves the previous file, if any, and no temporary.

1. `archive_model` (`model.tar.gz`): through its own `archive_path` argument. Also replaced
   where `allennlp.commands.train` and `allennlp.models` imported it by name (and
   `allennlp_elmo_c.patches.archive_paths` wraps it again, for ELMo-C task archives).
2. `dump_metrics` (`metrics_epoch_N.json`, `metrics.json`), also where
   `allennlp.training.util` and `allennlp.evaluation.evaluator` imported it by name.
3. `GradientDescentTrainer._save_model_state` (`best.th` when the checkpointer did not just
   save, or with a moving average) and the trainer's `hardlink_or_copy` (`best.th` as a link to
   the checkpoint just saved). The trainer removes the old `best.th` just before that link; a
   kill between the two calls (microseconds) still leaves no `best.th`.
4. `Vocabulary.save_to_files`: each file of `vocabulary/` (see `atomic_files_in`).
5. `Params.to_file` (`config.json`) and `Meta.to_file` (`meta.json`).

Not covered: `best.th` consolidated from sharded (FairScale) model states, and the logs.
`tests/patches/test_atomic_outputs.py` shows each patched writer keeping the old file where
the original leaves a partial one.
"""

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Union

from allennlp.commands import train as train_command
from allennlp.common import meta, params, util as common_util
from allennlp.data.vocabulary import Vocabulary
from allennlp.evaluation import evaluator
from allennlp.models import archival
import allennlp.models
from allennlp.training import gradient_descent_trainer
from allennlp.training import util as training_util

from allennlp_elmo_c.common.atomic import atomic_files_in, atomic_path

logger = logging.getLogger(__name__)

# The AllenNLP functions replaced by `apply()`, kept so tests can show each patch is needed.
ORIGINALS: Dict[str, Callable[..., Any]] = {
    "archive_model": archival.archive_model,
    "dump_metrics": common_util.dump_metrics,
    "save_model_state": gradient_descent_trainer.GradientDescentTrainer._save_model_state,
    "hardlink_or_copy": gradient_descent_trainer.hardlink_or_copy,
    "save_to_files": Vocabulary.save_to_files,
    "params_to_file": params.Params.to_file,
    "meta_to_file": meta.Meta.to_file,
}


def archive_model_atomically(
    serialization_dir: Union[str, os.PathLike],
    weights: str = archival._DEFAULT_WEIGHTS,
    archive_path: Union[str, os.PathLike, None] = None,
    include_in_archive: Optional[List[str]] = None,
) -> str:
    if archive_path is None:
        archive_file = os.path.join(serialization_dir, "model.tar.gz")
    elif os.path.isdir(archive_path):
        archive_file = os.path.join(archive_path, "model.tar.gz")
    else:
        archive_file = str(archive_path)
    with atomic_path(archive_file) as temporary:
        ORIGINALS["archive_model"](
            serialization_dir,
            weights=weights,
            archive_path=str(temporary),
            include_in_archive=include_in_archive,
        )
    logger.info("model archive complete: %s", archive_file)
    return archive_file


def _dump_metrics(file_path: Optional[str], metrics: Dict[str, Any], log: bool = False) -> None:
    if not file_path:
        ORIGINALS["dump_metrics"](file_path, metrics, log=log)
        return
    with atomic_path(file_path) as temporary:
        ORIGINALS["dump_metrics"](str(temporary), metrics, log=log)


def _save_model_state(self, path: str) -> None:
    with atomic_path(path) as temporary:
        ORIGINALS["save_model_state"](self, str(temporary))


def _hardlink_or_copy(source, dest) -> None:
    with atomic_path(dest) as temporary:
        os.unlink(temporary)  # a link needs a free name
        ORIGINALS["hardlink_or_copy"](source, temporary)


def _save_to_files(self, directory: str) -> None:
    with atomic_files_in(directory) as temporary:
        ORIGINALS["save_to_files"](self, str(temporary))
        # AllenNLP's lock file, held by readers of `directory`: not to be replaced.
        lock = temporary / ".lock"
        if lock.exists():
            lock.unlink()


def _params_to_file(self, params_file: str, preference_orders=None) -> None:
    with atomic_path(params_file) as temporary:
        ORIGINALS["params_to_file"](self, str(temporary), preference_orders)


def _meta_to_file(self, path) -> None:
    with atomic_path(path) as temporary:
        ORIGINALS["meta_to_file"](self, str(temporary))


def apply() -> None:
    """Applies every patch once; calling it again does nothing."""
    if common_util.dump_metrics is _dump_metrics:
        return
    for name, replacement in (
        ("archive_model", archive_model_atomically),
        ("dump_metrics", _dump_metrics),
        ("save_model_state", _save_model_state),
        ("hardlink_or_copy", _hardlink_or_copy),
        ("save_to_files", _save_to_files),
        ("params_to_file", _params_to_file),
        ("meta_to_file", _meta_to_file),
    ):
        replacement.__doc__ = ORIGINALS[name].__doc__
    for module in (archival, train_command, allennlp.models):
        module.archive_model = archive_model_atomically  # type: ignore[attr-defined]
    for module in (common_util, training_util, evaluator):
        module.dump_metrics = _dump_metrics  # type: ignore[attr-defined]
    trainer_class = gradient_descent_trainer.GradientDescentTrainer
    trainer_class._save_model_state = _save_model_state  # type: ignore[assignment]
    gradient_descent_trainer.hardlink_or_copy = _hardlink_or_copy  # type: ignore[assignment]
    Vocabulary.save_to_files = _save_to_files  # type: ignore[assignment]
    params.Params.to_file = _params_to_file  # type: ignore[assignment]
    meta.Meta.to_file = _meta_to_file  # type: ignore[assignment]
