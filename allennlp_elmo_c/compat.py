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
   non-tensor Python objects such as numpy scalars, which that mode refuses. The checkpointer
   loads the training state, a file written by the same training run, with
   `weights_only=False`; model weights keep the safe default.
3. No downloads at run time: allennlp-models' NarrativeQA evaluation tool calls `nltk.download`
   for `punkt` and `wordnet` when it is imported (which `allennlp`'s plugin loading does), and on
   a machine without network NLTK prints six lines of failed-download errors that no user can act
   on. `nltk.download` logs the skipped download at DEBUG and returns False (NLTK's own value for
   a failed download). This takes effect wherever `allennlp_elmo_c` is imported before
   `allennlp_models` (`python -m allennlp_elmo_c`, the demo, Python code); `allennlp`'s own command
   line imports `allennlp_models` first.
4. Two warnings no user can act on are filtered where they arise, by exact message and module
   (nothing else is hidden): AllenNLP's trainer calls the deprecated `torch.cuda.amp.autocast(...)`
   (a FutureWarning from `allennlp.training.gradient_descent_trainer` at every training start),
   and allennlp-models' `rouge` dependency imports `pkg_resources` (a UserWarning from
   `rouge.rouge`; only where `allennlp_elmo_c` is imported first, as in 3).
"""

import logging
import warnings
from typing import List, Optional, Union

import nltk
import torch
from torch.optim import Optimizer

from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint
from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler,
)

logger = logging.getLogger(__name__)

# The AllenNLP functions replaced by `apply()`, kept so tests can show each fix is still needed.
ORIGINALS = {
    "reduce_on_plateau_init": ReduceOnPlateauLearningRateScheduler.__init__,
    "load_checkpoint": Checkpointer.load_checkpoint,
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
    model_state = torch.load(model_path, map_location=map_location)
    training_state = torch.load(training_state_path, map_location=map_location, weights_only=False)
    return TrainerCheckpoint(model_state, training_state)


# Fix 4: `warnings.filterwarnings` arguments, each one warning of one module.
UNACTIONABLE_WARNINGS = (
    {
        "message": r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
        "category": FutureWarning,
        "module": r"allennlp\.training\.gradient_descent_trainer",
    },
    {
        "message": r"pkg_resources is deprecated as an API",
        "category": UserWarning,
        "module": r"rouge\.rouge",
    },
)


def _skip_nltk_download(info_or_id: Optional[str] = None, *args, **kwargs) -> bool:
    logger.debug("nltk.download(%r) skipped: nothing is downloaded at run time", info_or_id)
    return False


def apply() -> None:
    """Applies every fix once; calling it again does nothing."""
    if Checkpointer.load_checkpoint is _load_checkpoint:
        return
    _reduce_on_plateau_init.__doc__ = ReduceOnPlateauLearningRateScheduler.__init__.__doc__
    ReduceOnPlateauLearningRateScheduler.__init__ = _reduce_on_plateau_init  # type: ignore
    _load_checkpoint.__doc__ = Checkpointer.load_checkpoint.__doc__
    Checkpointer.load_checkpoint = _load_checkpoint  # type: ignore
    nltk.download = _skip_nltk_download
    for unactionable in UNACTIONABLE_WARNINGS:
        warnings.filterwarnings("ignore", **unactionable)
