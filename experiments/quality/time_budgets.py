"""
The `training_time_budgets` callback, for the experiments that compare models at equal budgets of
training time (`per_minute.py`, `flair_comparison.py`). An `allennlp train` run registers it with
`--include-package experiments.quality.time_budgets`.
"""

import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.models import archival
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.common.atomic import atomic_open, atomic_path
from allennlp_elmo_c.training.elmo_c_run import record_run_files
from allennlp_elmo_c.training.tokens_seen import predicted_tokens

logger = logging.getLogger(__name__)

# `clock` -> the function that reads it (looked up at each call, so that tests can replace them).
CLOCKS = {"wall": lambda: time.perf_counter(), "cpu": lambda: time.process_time()}


@TrainerCallback.register("training_time_budgets")
class TrainingTimeBudgets(TrainerCallback):
    """
    Snapshots of the model after given amounts of *training* time, for comparing models at equal
    budgets of wall-clock time or of the process's CPU time (`clock`; one run serves every budget
    when the learning-rate schedule does not depend on the run's length, e.g. flat after a
    warm-up).

    Training time is the time between the ends of consecutive training batches of an epoch
    (forward, backward, optimizer step, data loading): validation and the checkpoints written at
    an epoch's end are left out, and so is everything before the first batch after the start.
    That matters on a resume: `allennlp train --recover` first iterates over the batches already
    trained (without training or calling any callback), which re-reads them and can take minutes,
    unless the data loader can skip them (`lm_stream` with the `skip_trained_batches` callback).
    The first batch of each epoch and after the start only starts the clock: its own time is
    left out while its tokens are counted, so with epochs of N batches tokens/s reads about 1/N
    high (0.5% at 200), alike for every model trained so. The count is kept with the training
    checkpoints, so a resumed run counts on from its last checkpoint.

    When the training time passes `minutes[i]`, the primary process writes
    `budget-<minutes>min.tar.gz` (an ordinary model archive of the weights at that moment) and
    `budget-<minutes>min.json` (training seconds, batches, tokens predicted per direction, tokens/s)
    into the serialization directory. Every `timeline_every` batches it also adds a point (training
    seconds, tokens) to `budget-timeline.json` (and at each budget), so that a run slowed by other
    work on the machine can be seen. After the last budget the run stops at the end of that epoch
    (give `data_loader.batches_per_epoch` for short epochs).

    Registered as a `TrainerCallback` with name "training_time_budgets".

    # Parameters

    minutes : `List[float]`
        The budgets, in minutes of training time.
    timeline_every : `int`, optional (default = `50`)
        Training batches between two points of the timeline.
    clock : `str`, optional (default = `"wall"`)
        `"wall"`: training time is elapsed time (`time.perf_counter`); `"cpu"`: the CPU time of
        the training process, all its threads together (`time.process_time`), which other work
        on a shared machine does not inflate (with one thread, the two agree on an idle core).
    """

    def __init__(
        self,
        serialization_dir: str,
        minutes: List[float],
        timeline_every: int = 50,
        clock: str = "wall",
    ) -> None:
        super().__init__(serialization_dir)
        if not minutes or any(not (0 < m < math.inf) for m in minutes):
            raise ConfigurationError(
                f"training_time_budgets: minutes must be positive numbers, got {minutes}"
            )
        if timeline_every < 1:
            raise ConfigurationError("training_time_budgets: timeline_every must be >= 1")
        if clock not in CLOCKS:
            raise ConfigurationError(
                f"training_time_budgets: clock must be one of {sorted(CLOCKS)}, got {clock!r}"
            )
        self.clock = clock
        self.minutes = sorted(float(m) for m in minutes)
        self.timeline_every = timeline_every
        self.seconds = 0.0
        self.batches = 0
        self.tokens = 0
        self.saved: List[float] = []
        self.timeline: List[List[float]] = []
        self._clock: Optional[float] = None

    def state_dict(self) -> Dict[str, Any]:
        return {
            "seconds": self.seconds,
            "batches": self.batches,
            "tokens": self.tokens,
            "saved": list(self.saved),
            "timeline": [list(p) for p in self.timeline],
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if not state_dict:
            return
        self.seconds, self.batches = state_dict["seconds"], state_dict["batches"]
        self.tokens, self.saved = state_dict["tokens"], list(state_dict["saved"])
        self.timeline = [list(point) for point in state_dict["timeline"]]
        logger.info("training_time_budgets: resumed at %.1f s of training time", self.seconds)

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._clock = None  # starts at the first batch's end: a resume's replay is not counted

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        if not is_training:
            return
        now = CLOCKS[self.clock]()
        if self._clock is not None:
            self.seconds += now - self._clock
        self._clock = now
        self.batches += 1
        self.tokens += sum(predicted_tokens(batch) for batch in batch_inputs)
        passed = [b for b in self.minutes if b not in self.saved and self.seconds >= 60 * b]
        if self.batches % self.timeline_every == 0 or passed:
            self.timeline.append([round(self.seconds, 3), self.tokens])
            if is_primary:
                self._write("budget-timeline.json", {"points": self.timeline})
        for budget in passed:
            self.saved.append(budget)
            if is_primary:
                self._snapshot(trainer, budget)
        self._clock = CLOCKS[self.clock]()  # the snapshot's own time is not training time

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        self._clock = None  # restarts at the next batch's end: validation is not counted
        if len(self.saved) == len(self.minutes):
            logger.info("training_time_budgets: every budget reached, stopping after this epoch")
            trainer._metric_tracker.should_stop_early = lambda: True

    def _snapshot(self, trainer, budget: float) -> None:
        name = f"budget-{budget:g}min"
        directory = Path(self.serialization_dir)
        weights = directory / f"{name}.th"
        with atomic_path(weights) as temporary:
            torch.save(trainer.model.state_dict(), temporary)
        # A snapshot is archived before the run's end, where `elmo_c_run` records the fastText
        # paths and fingerprints a received archive must carry: record them now.
        bundled = record_run_files(str(directory))
        archival.archive_model(directory, weights=weights.name,
                               archive_path=directory / f"{name}.tar.gz", include_in_archive=bundled)
        weights.unlink()
        self._write(f"{name}.json", {
            "minutes": budget, "training_seconds": self.seconds, "batches": self.batches,
            "tokens": self.tokens, "tokens_per_second": self.tokens / max(self.seconds, 1e-9),
            "clock": self.clock,
        })  # fmt: skip
        logger.info("training_time_budgets: %s written (%d tokens in %.0f s)", name,
                    self.tokens, self.seconds)  # fmt: skip

    def _write(self, name: str, content: dict) -> None:
        with atomic_open(Path(self.serialization_dir) / name) as stream:
            stream.write(json.dumps(content, indent=1))
