"""
AllenNLP's `reduce_on_plateau` scheduler passes `verbose` to torch's `ReduceLROnPlateau`, which
torch 2.7 removed. The patched constructor keeps AllenNLP's signature (`verbose` is ignored) and
builds torch's scheduler without it. A torch-2 fix, every model.
"""

import logging
from typing import List, Union

import torch
from torch.optim import Optimizer

from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler,
)

logger = logging.getLogger(__name__)

ORIGINAL = ReduceOnPlateauLearningRateScheduler.__init__


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
    lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode, factor, patience, threshold, threshold_mode, cooldown, min_lr, eps
    )
    _PyTorchLearningRateSchedulerWithMetricsWrapper.__init__(self, lr_scheduler)


def apply() -> None:
    """Replaces the scheduler's constructor (once)."""
    if ReduceOnPlateauLearningRateScheduler.__init__ is _reduce_on_plateau_init:
        return
    _reduce_on_plateau_init.__doc__ = ORIGINAL.__doc__
    ReduceOnPlateauLearningRateScheduler.__init__ = _reduce_on_plateau_init  # type: ignore
