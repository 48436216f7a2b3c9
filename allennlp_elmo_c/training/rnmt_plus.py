import logging
import math
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import LearningRateScheduler

logger = logging.getLogger(__name__)
# What defines the schedule (the rest of the state is the position in it).
SCHEDULE = ("warmup_steps", "decay_start", "decay_end", "batch_scale", "final_factor")
REFERENCE_BATCH_SIZE = 128


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


@LearningRateScheduler.register("rnmt_plus")
class RnmtPlusLearningRateScheduler(LearningRateScheduler):
    """
    The RNMT+ learning rate schedule (Chen et al. 2018) that ELMo-C trains with. For the `t`-th
    update, a parameter group's base learning rate `base` and `n` = total batch / 128:

    - warm-up, `t < p`: `base * (1 + (n - 1) * t / p)`, never negative (the paper's
      `1 + t(n - 1)/(np)` is, for `n < 1`);
    - hold at `base * n` until `decay_start`;
    - exponential decay to `base * final_factor` at `decay_end`, never a rise (with
      `final_factor >= n` it holds at `base * n`), then a hold.

    A run resumed (`--recover`) keeps its position and follows its own config's schedule.

    Registered as a `LearningRateScheduler` with name "rnmt_plus".

    # Parameters

    warmup_steps : `int`
        `p`, cut to `decay_start` when a run given by fractions is shorter.
    decay_start, decay_end : `int`, optional
        The updates where the decay starts and ends; or `decay_start_fraction` /
        `decay_end_fraction` of the run's updates (which AllenNLP hands over when the data loader
        knows its length). Updates win over fractions.
    batch_scale : `float`, optional
        `n`; or `batch_size` (sentences per update over all workers) / 128; or
        `batch_size_per_worker` times the world size / 128.
    final_factor : `float`, optional (default = `0.5`)
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        warmup_steps: int,
        decay_start: int = None,
        decay_end: int = None,
        batch_scale: float = None,
        batch_size: int = None,
        batch_size_per_worker: int = None,
        decay_start_fraction: float = None,
        decay_end_fraction: float = None,
        final_factor: float = 0.5,
        last_epoch: int = -1,
        num_epochs: int = None,
        num_steps_per_epoch: int = None,
    ) -> None:
        workers = world_size()
        given = {"batch_scale": batch_scale, "batch_size": batch_size,
                 "batch_size_per_worker": batch_size_per_worker}  # fmt: skip
        if sum(value is not None for value in given.values()) != 1:
            raise ConfigurationError(
                "rnmt_plus needs exactly one of 'batch_scale', 'batch_size' and "
                f"'batch_size_per_worker', got {given}"
            )
        if batch_size_per_worker is not None:
            batch_size = batch_size_per_worker * workers
        if batch_size is not None:
            if batch_size < 1:
                raise ConfigurationError(f"rnmt_plus needs a batch size >= 1, got {given}")
            batch_scale = batch_size / REFERENCE_BATCH_SIZE
        if decay_start is not None:
            decay_start_fraction = None
        if decay_end is not None:
            decay_end_fraction = None
        run = _run_updates(
            num_epochs, num_steps_per_epoch, decay_start_fraction, decay_end_fraction
        )
        decay_start = self._steps("decay_start", decay_start, decay_start_fraction, run)
        decay_end = self._steps("decay_end", decay_end, decay_end_fraction, run)
        if run is not None and warmup_steps > decay_start:
            logger.warning("rnmt_plus: the run has %d updates, so the warm-up of %d is cut to the "
                           "decay's start, %d", run, warmup_steps, decay_start)  # fmt: skip
            warmup_steps = decay_start
        if not 0 <= warmup_steps <= decay_start < decay_end:
            raise ConfigurationError(
                "rnmt_plus needs 0 <= warmup_steps <= decay_start < decay_end, got "
                f"warmup_steps={warmup_steps}, decay_start={decay_start}, decay_end={decay_end}"
            )
        for name, value in (("batch_scale", batch_scale), ("final_factor", final_factor)):
            if not (0 < value < math.inf):
                raise ConfigurationError(f"rnmt_plus needs a finite {name} > 0, got {value}")
        self.warmup_steps = int(warmup_steps)
        self.decay_start = int(decay_start)
        self.decay_end = int(decay_end)
        self.batch_scale = float(batch_scale)
        self.final_factor = float(final_factor)
        super().__init__(optimizer, last_epoch=last_epoch)
        if self.final_factor >= self.batch_scale:
            logger.info(f"rnmt_plus: final_factor {self.final_factor} >= batch scale "
                        f"{self.batch_scale}, so the learning rate holds at its peak after the "
                        "warm-up instead of rising")  # fmt: skip
        total = "not given" if batch_size is None else batch_size
        logger.info(f"rnmt_plus: world size {workers}, total batch {total}, n = "
                    f"{self.batch_scale}, warm-up {self.warmup_steps} updates, decay from update "
                    f"{self.decay_start} to {self.decay_end}")  # fmt: skip
        self.last_epoch = max(last_epoch, 0)
        self._apply()

    @staticmethod
    def _steps(
        name: str, steps: Optional[int], fraction: Optional[float], run: Optional[int]
    ) -> int:
        if (steps is None) == (fraction is None):
            raise ConfigurationError(
                f"rnmt_plus needs exactly one of '{name}' and '{name}_fraction', got "
                f"{name}={steps}, {name}_fraction={fraction}"
            )
        if steps is not None:
            return int(steps)
        if not (0 <= fraction < math.inf):
            raise ConfigurationError(f"rnmt_plus needs {name}_fraction >= 0, got {fraction}")
        return int(fraction * run)

    def step(self, metric: float = None) -> None:
        pass

    def step_batch(self, batch_num_total: int = None) -> None:
        if batch_num_total is None:
            self.last_epoch += 1
        else:
            self.last_epoch = batch_num_total
        self._apply()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        # Only the position comes from the checkpoint; the schedule is this run's.
        fresh = {key: getattr(self, key) for key in SCHEDULE}
        super().load_state_dict(state_dict)
        stored = {key: getattr(self, key) for key in SCHEDULE}
        if stored != fresh:
            logger.warning(f"rnmt_plus: the checkpoint's schedule {stored} differs from this "
                           f"run's {fresh} (another world size or config?); following this run's")
        for key, value in fresh.items():
            setattr(self, key, value)
        self._apply()

    def get_values(self) -> List[float]:
        factor = self._factor(self.last_epoch)
        return [base * factor for base in self.base_values]

    def _factor(self, step: int) -> float:
        n = self.batch_scale
        if step < self.warmup_steps:
            return 1.0 + (n - 1.0) * step / self.warmup_steps
        if step < self.decay_start:
            return n
        log_ratio = math.log(min(self.final_factor, n) / n)  # <= 0: never rises, never overflows
        progress = min(1.0, (step - self.decay_start) / (self.decay_end - self.decay_start))
        return n * math.exp(log_ratio * progress)

    def _apply(self) -> None:
        for param_group, learning_rate in zip(self.optimizer.param_groups, self.get_values()):
            param_group[self.param_group_field] = learning_rate


def _run_updates(
    num_epochs: Optional[int],
    num_steps_per_epoch: Optional[int],
    start_fraction: Optional[float],
    end_fraction: Optional[float],
) -> Optional[int]:
    """The run's length in updates, where a fraction of it is asked for (else None)."""
    if start_fraction is None and end_fraction is None:
        return None
    if not num_epochs or not num_steps_per_epoch:
        raise ConfigurationError(
            "rnmt_plus: decay_start_fraction / decay_end_fraction need the run's length, which "
            "AllenNLP knows only when the data loader knows its length: use the 'lm_stream' "
            "data loader (it counts the corpus), give data_loader.batches_per_epoch, or give "
            "decay_start / decay_end in updates"
        )
    return int(num_epochs) * int(num_steps_per_epoch)
