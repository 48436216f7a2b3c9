import logging
import os
import time
from typing import Optional

import torch

from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.common.threads import CpuLoad, free_cpus, set_torch_threads

logger = logging.getLogger(__name__)
CHECK_SECONDS = 30.0


@TrainerCallback.register("cpu_threads")
class CpuThreads(TrainerCallback):
    """
    Runs a CPU training on as many torch threads as there are free CPUs (`common.threads
    .free_cpus`: of those the process may use, the ones no other process keeps busy), measured
    at the start and every `CHECK_SECONDS`. `threads` in the config, or `OMP_NUM_THREADS`, fixes
    the count instead. On a GPU it does nothing.
    """

    def __init__(self, serialization_dir: str, threads: Optional[int] = None) -> None:
        super().__init__(serialization_dir)
        self.threads = threads
        self._load: Optional[CpuLoad] = None
        self._checked = 0.0

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        device = getattr(trainer, "cuda_device", torch.device("cpu"))
        if device.type != "cpu":
            return
        if self.threads is not None:
            count = set_torch_threads(self.threads, "cpu_threads: threads")
            logger.info("Training on %d torch thread(s) (the config's cpu_threads.threads)", count)
            return
        if os.environ.get("OMP_NUM_THREADS"):
            logger.info("Training on %d torch thread(s) (OMP_NUM_THREADS)",
                        torch.get_num_threads())  # fmt: skip
            return
        count = free_cpus()
        torch.set_num_threads(count)
        logger.info("Training on %d torch thread(s): the free CPUs of those this process may use "
                    "(measured again every %g s)", count, CHECK_SECONDS)  # fmt: skip
        self._load = CpuLoad()
        self._checked = time.monotonic()

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch: int,
                 batch_number: int, is_training: bool, is_primary: bool = True,
                 batch_grad_norm: Optional[float] = None, **kwargs) -> None:  # fmt: skip
        if self._load is None or not is_training:
            return
        now = time.monotonic()
        if now - self._checked < CHECK_SECONDS:
            return
        self._checked = now
        count = free_cpus(self._load)
        if count != torch.get_num_threads():
            logger.info("Now %d free CPU(s): training on %d torch thread(s) (was %d)", count,
                        count, torch.get_num_threads())  # fmt: skip
            torch.set_num_threads(count)
