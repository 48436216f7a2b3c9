"""
Compatibility fixes that let AllenNLP 2.10.1 (archived, written for torch < 1.13) run on the
modern torch pinned in `constraints.txt`. Applied once, when `allennlp_elmo_c` is imported.

Each fix patches exactly the AllenNLP function that calls the changed torch API, keeps that
function's signature (so `FromParams` and existing configs are unaffected) and is covered by one
test in `tests/test_compat.py` that fails without it:

1. `reduce_on_plateau`: torch 2.7 removed the `verbose` argument of
   `torch.optim.lr_scheduler.ReduceLROnPlateau`, and AllenNLP always passes it, so the scheduler
   cannot be constructed. `verbose` is still accepted in configs and ignored (AllenNLP logs the
   learning rate itself).
2. `allennlp train --recover`: torch 2.6 made `torch.load(weights_only=True)` the default.
   AllenNLP's training-state pickles (optimizer, scheduler, metric tracker, ...) may contain
   numpy scalars, which that mode refuses by default. The checkpointer loads the training state
   with `weights_only=True` and numpy's numeric scalars allowed
   (`allennlp_elmo_c.training.training_state`), and nothing else: a run directory received from
   elsewhere runs no code. Model weights load with `weights_only=True` too, passed explicitly.
3. No downloads at run time: allennlp-models' NarrativeQA evaluation tool calls `nltk.download`
   for `punkt` and `wordnet` when it is imported (which `allennlp`'s plugin loading does), and
   imports `rouge`, which prints setuptools' `pkg_resources` deprecation warning.
   `allennlp_elmo_c_startup.install()` makes that one import skip the downloads and that one
   warning (the module's docstring says how). Its `.pth` does this at start-up in the `allennlp`
   command, before allennlp-models is imported; this covers `python -m allennlp_elmo_c` and
   Python code that imports allennlp-models after the plugin.
4. A warning no user can act on is filtered where it arises, by exact message and module
   (nothing else is hidden): AllenNLP's trainer calls the deprecated `torch.cuda.amp.autocast(...)`
   (a FutureWarning from `allennlp.training.gradient_descent_trainer` at every training start).
5. AllenNLP's own loads of model weights pass `weights_only=True` explicitly: `read_state_dict`
   (what `load_archive` reads every archive's `weights.th` with) and the trainer's reload of
   `best.th` at the end of a run. They relied on torch's default, which the environment
   variable `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` turns into a full pickle load: a received
   archive's `weights.th` could then run code. `read_state_dict` is AllenNLP's, run once the
   file has loaded with `weights_only=True` (its tensors memory-mapped, not read).
6. `allennlp train --recover` reads the run directory's `config.json` (to compare it with the
   config given) as plain JSON, which is what AllenNLP writes there. AllenNLP evaluates it as
   jsonnet with every environment variable as an external variable: a run directory received
   from elsewhere could read any file (`importstr`) or variable (`std.extVar`) into the values
   it logs, to the terminal and to the run's own `out.log`, or loop for hours.
"""

import logging
import os
import warnings
from typing import List, Optional, Union

import torch
from torch.optim import Optimizer

from allennlp.models.archival import CONFIG_NAME
from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint
from allennlp.training import util as training_util
from allennlp.training.gradient_descent_trainer import GradientDescentTrainer
from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler,
)

import allennlp_elmo_c_startup
from allennlp_elmo_c.common.received_config import read_received_json
from allennlp_elmo_c.common.weights_only import load_weights_only
from allennlp_elmo_c.training.training_state import load_training_state

logger = logging.getLogger(__name__)

# The AllenNLP functions replaced by `apply()`, kept so tests can show each fix is still needed.
ORIGINALS = {
    "reduce_on_plateau_init": ReduceOnPlateauLearningRateScheduler.__init__,
    "load_checkpoint": Checkpointer.load_checkpoint,
    "read_state_dict": nn_util.read_state_dict,
    "load_model_state": GradientDescentTrainer._load_model_state,
    "create_serialization_dir": training_util.create_serialization_dir,
}


def _reduce_on_plateau_init(
    self,
    optimizer: Optimizer,
    mode: str = "min",
    factor: float = 0.1,
    patience: int = 10,
    verbose: bool = False,
    threshold_mode: str = "rel",
    threshold: float = 1e-4,
    cooldown: int = 0,
    min_lr: Union[float, List[float]] = 0,
    eps: float = 1e-8,
) -> None:
    if verbose:
        logger.info(
            "reduce_on_plateau: 'verbose' is ignored (removed from torch); "
            "the trainer logs learning rates itself."
        )
    # In torch's parameter order (threshold before threshold_mode, unlike AllenNLP's).
    lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode, factor, patience, threshold, threshold_mode, cooldown, min_lr, eps
    )
    _PyTorchLearningRateSchedulerWithMetricsWrapper.__init__(self, lr_scheduler)


def _load_checkpoint(self) -> Optional[TrainerCheckpoint]:
    latest_checkpoint = self.find_latest_checkpoint()
    if latest_checkpoint is None:
        return None
    model_path, training_state_path = latest_checkpoint
    map_location = nn_util.device_mapping(-1)
    model_state = load_weights_only(model_path, map_location=map_location)
    training_state = load_training_state(training_state_path)
    return TrainerCheckpoint(model_state, training_state)


def _read_state_dict(path, *args, **kwargs):
    try:
        load_weights_only(path, map_location="cpu", mmap=True)
    except RuntimeError as error:  # a file in torch's legacy format cannot be memory-mapped
        if "mmap" not in str(error):
            raise
        load_weights_only(path, map_location="cpu")
    return ORIGINALS["read_state_dict"](path, *args, **kwargs)


def _load_model_state(self, path: str) -> None:
    state = load_weights_only(path, map_location=torch.device("cpu"))
    model = self._ddp_wrapped_model if self._ddp_wrapped_model is not None else self._pytorch_model
    model.load_state_dict(state)


def _create_serialization_dir(params, serialization_dir, recover: bool, force: bool) -> None:
    config = os.path.join(serialization_dir, CONFIG_NAME)
    if recover and os.path.isfile(config):
        read_received_json(config, f"run directory {serialization_dir}: {CONFIG_NAME}")
    ORIGINALS["create_serialization_dir"](params, serialization_dir, recover, force)


# Fix 4: `warnings.filterwarnings` arguments, each one warning of one module.
UNACTIONABLE_WARNINGS = (
    {
        "message": r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
        "category": FutureWarning,
        "module": r"allennlp\.training\.gradient_descent_trainer",
    },
)


def apply() -> None:
    """Applies every fix once; calling it again does nothing."""
    if Checkpointer.load_checkpoint is _load_checkpoint:
        return
    _reduce_on_plateau_init.__doc__ = ReduceOnPlateauLearningRateScheduler.__init__.__doc__
    ReduceOnPlateauLearningRateScheduler.__init__ = _reduce_on_plateau_init  # type: ignore
    _load_checkpoint.__doc__ = Checkpointer.load_checkpoint.__doc__
    Checkpointer.load_checkpoint = _load_checkpoint  # type: ignore
    allennlp_elmo_c_startup.install()
    _read_state_dict.__doc__ = nn_util.read_state_dict.__doc__
    nn_util.read_state_dict = _read_state_dict
    GradientDescentTrainer._load_model_state = _load_model_state  # type: ignore[method-assign]
    _create_serialization_dir.__doc__ = training_util.create_serialization_dir.__doc__
    training_util.create_serialization_dir = _create_serialization_dir
    for unactionable in UNACTIONABLE_WARNINGS:
        warnings.filterwarnings("ignore", **unactionable)
