import json
import os
import resource
import time
from typing import Any, Dict, List, Optional

import torch

from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.common.atomic import atomic_open

TIMINGS = "update_timings.json"


def with_update_timings(
    callbacks: Optional[List[Dict[str, Any]]], **options: Any
) -> List[Dict[str, Any]]:
    """A trainer's `callbacks` (None for none) and this callback, with `options`."""
    return list(callbacks or []) + [{"type": "update_timings", **options}]


@TrainerCallback.register("update_timings")
class UpdateTimings(TrainerCallback):
    """
    Writes `update_timings.json` into the run's directory (at the end and every `write_every`
    updates): when each update and validation batch ended, in seconds since the callback was
    built (`start_wall` its `time.time()`), and the peak resident and GPU memory. `plan` reads it.
    """

    def __init__(self, serialization_dir: str, write_every: int = 50) -> None:
        super().__init__(serialization_dir)
        self.write_every = write_every
        self._start = time.perf_counter()
        self._start_wall = time.time()
        self._ends: List[float] = []
        self._validation_ends: List[float] = []

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch: int,
                 batch_number: int, is_training: bool, is_primary: bool = True,
                 batch_grad_norm: Optional[float] = None, **kwargs) -> None:  # fmt: skip
        (self._ends if is_training else self._validation_ends).append(self._now())
        if is_primary and is_training and len(self._ends) % self.write_every == 0:
            self._write()

    def on_end(self, trainer, metrics: Dict[str, Any] = None, epoch: int = None,
               is_primary: bool = True, **kwargs) -> None:  # fmt: skip
        if is_primary:
            self._write()

    def _write(self) -> None:
        record = {
            "update_ends": self._ends,
            "validation_batch_ends": self._validation_ends,
            "start_wall": self._start_wall,
            "peak_rss_bytes": _peak_rss_bytes(),
            "peak_gpu_bytes": (
                torch.cuda.max_memory_allocated() if torch.cuda.is_initialized() else 0
            ),
        }
        with atomic_open(os.path.join(self.serialization_dir, TIMINGS)) as out:
            json.dump(record, out)

    def _now(self) -> float:
        return time.perf_counter() - self._start


def _peak_rss_bytes() -> int:
    # Linux reports kilobytes, macOS bytes.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if os.uname().sysname == "Darwin" else peak * 1024
