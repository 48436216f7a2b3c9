import logging
import math
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import LearningRateScheduler

logger = logging.getLogger(__name__)
# What defines the schedule (the rest of the state is the position in it).
SCHEDULE = ("warmup_steps", "decay_start", "decay_end", "batch_scale", "final_factor", "min_lr")


def world_size() -> int:
    """The number of training processes: `torch.distributed`'s world size once initialised (as in
    each worker of AllenNLP's distributed training), else 1."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


@LearningRateScheduler.register("rnmt_plus")
class RnmtPlusLearningRateScheduler(LearningRateScheduler):
    """
    The RNMT+ learning rate schedule (Chen et al. 2018, "The Best of Both Worlds") used to train
    ELMo-C, rewritten so that it is never negative and always finite, whatever the batch size.

    The reference schedule is `lr_t = base * min(1 + t(n-1)/(np), n, n(2n)^((s-nt)/(e-s)))`, with
    `n` the number of replicas (ELMo-C uses `n = batch_size / 128`). For `n < 1` its warm-up term
    is negative once `t > n p / (1 - n)` (a third of the warm-up for a batch of 32): gradient
    ascent. This scheduler computes, for the `t`-th optimizer update and each parameter group's
    base learning rate `base`:

    - warm-up, `t < p`: `base * (1 + (n - 1) * t / p)`, a straight line from `base` to the peak
      `base * n`. It is a convex combination of two positive numbers, so it is positive for every
      `n > 0`; when `n < 1` (batches smaller than the reference) it is a *decrease* toward
      `n * base`, the learning rate the linear scaling rule asks for.
    - hold, `p <= t < s`: `base * n`.
    - decay, `t >= s`: `base * n * r ** ((t - s) / (e - s))` with `r = min(final_factor, n) / n`,
      so the learning rate is `base * final_factor` at step `e` (RNMT+: `base / 2`).
    - hold, `t >= e`: `base * final_factor`, as ELMo-C's code does (RNMT+'s formula would keep
      decaying at the same exponential rate). If `final_factor >= n` (a batch of at most
      half the reference batch with the default `final_factor`), reaching `base * final_factor`
      would mean *raising* the learning rate; the reference's `min(..., n, ...)` forbids that
      too, so the learning rate then stays at `base * n` after the warm-up.
    - everything is floored at `min_lr`.

    `s` and `e` count optimizer updates of this run. For `n >= 1` this is ELMo-C's schedule.

    Several workers. The paper derives its schedule from the total batch of all GPUs: `n` =
    total / 128, and the decay steps from a number of examples divided by the total batch. Under
    AllenNLP's distributed training the data loader's batch is per worker, so a config that
    gives `batch_size_per_worker` and `decay_start_examples` / `decay_end_examples` gets the
    paper's schedule on any number of workers, unchanged: the total batch is
    `batch_size_per_worker` x the world size (`torch.distributed`, 1 when not initialised), and
    `s`, `e` are the examples divided by it. The constructor logs the world size, the total
    batch, `n` and the step counts. The
    RNMT+ paper's formula multiplies `t` by `n` in
    its decay term and spreads its warm-up over `n * p` updates: for `n >= 1` and `n p <= s / n`
    it is this schedule with `warmup_steps = n * p`, `decay_start = s / n`, `decay_end = e / n`,
    up to `e / n`.

    The learning rate changes after every batch: the trainer calls `step_batch(t)` with the
    number of the update about to be made (1 for the first), before `optimizer.step()`.
    `step()`, called at the end of each epoch, does nothing. All state is plain Python numbers,
    so `state_dict()` / `load_state_dict()` let `allennlp train --recover` resume the
    same sequence.

    Registered as a `LearningRateScheduler` with name "rnmt_plus".

    # Parameters

    optimizer : `torch.optim.Optimizer`
        This argument does not get an entry in a configuration file for the object. Its learning
        rate(s) (`"lr"` of the optimizer config) are the base learning rates.
    warmup_steps : `int`, required
        `p`: number of updates over which the learning rate goes from `base` to `base * n`.
        0 starts at the peak.
    decay_start : `int`, optional (default = `None`)
        `s`: the update at which the exponential decay starts (`s >= p`). Give this or
        `decay_start_examples`.
    decay_end : `int`, optional (default = `None`)
        `e`: the update at which the learning rate reaches `base * final_factor` (`e > s`). Give
        this or `decay_end_examples`.
    decay_start_examples : `float`, optional (default = `None`)
        `s` as a number of examples over all workers: `s = decay_start_examples / total batch`
        (the paper: 0.4 x 400M / total batch). Needs `batch_size_per_worker`.
    decay_end_examples : `float`, optional (default = `None`)
        `e` likewise (the paper: 2.0 x 400M / total batch).
    decay_start_fraction : `float`, optional (default = `None`)
        `s` as a fraction of the run: `s = decay_start_fraction x num_epochs x
        num_steps_per_epoch`, the run's length in updates, which AllenNLP's trainer hands over
        when its data loader knows its length (`lm_stream` counts the corpus). The schedule then
        follows the corpus and the number of epochs. A warm-up longer than `s` is cut to `s`.
    decay_end_fraction : `float`, optional (default = `None`)
        `e` likewise (may be above 1: the paper's decay ends at twice its run's length).
        `decay_start` / `decay_end` or the `_examples` keys, where given (an override), win
        over the fractions.
    batch_scale : `float`, optional (default = `None`)
        `n`: the peak multiplier (RNMT+'s number of replicas). Give this, `batch_size` or
        `batch_size_per_worker`.
    batch_size : `int`, optional (default = `None`)
        Sentences per optimizer update over all workers (data loader batch size x gradient
        accumulation steps x number of workers); then `n = batch_size / reference_batch_size`.
    batch_size_per_worker : `int`, optional (default = `None`)
        Sentences per optimizer update of one worker (data loader batch size x gradient
        accumulation steps): the total batch is this times the world size.
    reference_batch_size : `int`, optional (default = `128`)
        The batch size whose peak learning rate is `base` (ELMo-C: 128).
    final_factor : `float`, optional (default = `0.5`)
        The learning rate at step `e` is `base * final_factor` (see above when it is `>= n`).
    min_lr : `float`, optional (default = `0.0`)
        A floor for the learning rate, applied at every step.
    last_epoch : `int`, optional (default = `-1`)
        The number of the last update made, as for every AllenNLP scheduler; -1 for a new run.
    num_epochs : `int`, optional (default = `None`)
        Given by AllenNLP's trainer (not in a config): the run's epochs.
    num_steps_per_epoch : `int`, optional (default = `None`)
        Given by AllenNLP's trainer (not in a config): the updates of an epoch, when the data
        loader knows its length.

    # Example

    Config for an effective batch of 768 sentences (`n = 6`), 1000 warm-up updates and a decay
    from update 20000 (peak `6e-4`) to update 100000 (`5e-5`):

    ```json
    {
        ...
        "trainer": {
            ...
            "optimizer": {"type": "adam", "lr": 1e-4},
            "learning_rate_scheduler": {
                "type": "rnmt_plus",
                "warmup_steps": 1000,
                "decay_start": 20000,
                "decay_end": 100000,
                "batch_size": 768
            },
            ...
        }
    }
    ```
    Note that you do NOT pass an `optimizer` key to the learning rate scheduler.
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
        decay_start_examples: float = None,
        decay_end_examples: float = None,
        decay_start_fraction: float = None,
        decay_end_fraction: float = None,
        reference_batch_size: int = 128,
        final_factor: float = 0.5,
        min_lr: float = 0.0,
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
            if batch_size_per_worker < 1:
                raise ConfigurationError(
                    f"rnmt_plus needs batch_size_per_worker >= 1, got {batch_size_per_worker}"
                )
            batch_size = batch_size_per_worker * workers
        if decay_start is not None or decay_start_examples is not None:
            decay_start_fraction = None
        if decay_end is not None or decay_end_examples is not None:
            decay_end_fraction = None
        run = _run_updates(
            num_epochs, num_steps_per_epoch, decay_start_fraction, decay_end_fraction
        )
        decay_start = self._steps("decay_start", decay_start, decay_start_examples, batch_size,
                                  decay_start_fraction, run)  # fmt: skip
        decay_end = self._steps("decay_end", decay_end, decay_end_examples, batch_size,
                                decay_end_fraction, run)  # fmt: skip
        if run is not None and warmup_steps > decay_start:
            logger.warning("rnmt_plus: the run has %d updates, so the warm-up of %d is cut to the "
                           "decay's start, %d", run, warmup_steps, decay_start)  # fmt: skip
            warmup_steps = decay_start
        if not 0 <= warmup_steps <= decay_start < decay_end:
            raise ConfigurationError(
                "rnmt_plus needs 0 <= warmup_steps <= decay_start < decay_end, got "
                f"warmup_steps={warmup_steps}, decay_start={decay_start}, decay_end={decay_end}"
            )
        if batch_size is not None:
            if batch_size < 1 or reference_batch_size < 1:
                raise ConfigurationError(
                    "rnmt_plus needs batch_size >= 1 and reference_batch_size >= 1, got "
                    f"{batch_size} and {reference_batch_size}"
                )
            batch_scale = batch_size / reference_batch_size
        if not (0 < batch_scale < math.inf):
            raise ConfigurationError(f"rnmt_plus needs a finite batch_scale > 0, got {batch_scale}")
        if not (0 < final_factor < math.inf):
            raise ConfigurationError(
                f"rnmt_plus needs a finite final_factor > 0, got {final_factor}"
            )
        if not (0 <= min_lr < math.inf):
            raise ConfigurationError(f"rnmt_plus needs a finite min_lr >= 0, got {min_lr}")
        self.warmup_steps = int(warmup_steps)
        self.decay_start = int(decay_start)
        self.decay_end = int(decay_end)
        self.batch_scale = float(batch_scale)
        self.final_factor = float(final_factor)
        self.min_lr = float(min_lr)
        super().__init__(optimizer, last_epoch=last_epoch)
        if self.final_factor >= self.batch_scale:
            logger.info(
                "rnmt_plus: final_factor %s >= batch scale %s, so the learning rate holds at its "
                "peak after the warm-up instead of rising",
                self.final_factor,
                self.batch_scale,
            )
        logger.info(
            "rnmt_plus: world size %d, total batch %s, n = %s, warm-up %d updates, decay from "
            "update %d to %d",
            workers,
            "not given" if batch_size is None else batch_size,
            self.batch_scale,
            self.warmup_steps,
            self.decay_start,
            self.decay_end,
        )
        self.last_epoch = max(last_epoch, 0)
        self._apply()

    @staticmethod
    def _steps(
        name: str,
        steps: Optional[int],
        examples: Optional[float],
        batch_size: Optional[int],
        fraction: Optional[float] = None,
        run: Optional[int] = None,
    ) -> int:
        # An update number given as such, as examples over the total batch, or as a fraction of
        # the run's updates (the constructor drops a fraction where one of the others is given).
        if sum(value is not None for value in (steps, examples, fraction)) != 1:
            raise ConfigurationError(
                f"rnmt_plus needs exactly one of '{name}', '{name}_examples' and "
                f"'{name}_fraction', got {name}={steps}, {name}_examples={examples}, "
                f"{name}_fraction={fraction}"
            )
        if steps is not None:
            return int(steps)
        if examples is None:
            if not (0 <= fraction < math.inf):
                raise ConfigurationError(f"rnmt_plus needs {name}_fraction >= 0, got {fraction}")
            return int(fraction * run)
        if batch_size is None:
            raise ConfigurationError(
                f"rnmt_plus: '{name}_examples' needs the total batch: give 'batch_size' or "
                "'batch_size_per_worker' (not 'batch_scale')"
            )
        return int(examples // batch_size)

    def step(self, metric: float = None) -> None:
        pass

    def step_batch(self, batch_num_total: int = None) -> None:
        if batch_num_total is None:
            self.last_epoch += 1
        else:
            self.last_epoch = batch_num_total
        self._apply()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        # The schedule is this run's (from its config and world size); only the position in it
        # comes from the checkpoint: a run resumed on another number of workers follows the
        # schedule of its new total batch, and says so.
        fresh = {key: getattr(self, key) for key in SCHEDULE}
        super().load_state_dict(state_dict)
        stored = {key: getattr(self, key) for key in SCHEDULE}
        if stored != fresh:
            logger.warning(
                "rnmt_plus: the checkpoint's schedule %s differs from this run's %s (another "
                "world size or config?); following this run's",
                stored,
                fresh,
            )
        for key, value in fresh.items():
            setattr(self, key, value)
        self._apply()

    def get_values(self) -> List[float]:
        factor = self._factor(self.last_epoch)
        return [max(self.min_lr, base * factor) for base in self.base_values]

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
