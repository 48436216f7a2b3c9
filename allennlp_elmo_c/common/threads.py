"""
Thread counts: at most one per CPU this process may use (its affinity mask, not the machine's
count), and by default one per free CPU: one that no other process keeps busy, measured from the
kernel's per-CPU counters (a thread on a busy CPU holds up the threads waiting for it at every
barrier).
"""

import logging
import os
import time
from typing import Callable, List, Optional, Tuple

logger = logging.getLogger(__name__)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_count(requested: Optional[int] = None, what: str = "threads") -> int:
    """`requested` threads (`None`: one per usable CPU), at most one per usable CPU, with a
    warning when that cuts them; `what` names them in messages."""
    usable = usable_cpus()
    if requested is None:
        return usable
    if requested < 1:
        from allennlp.common.checks import ConfigurationError

        raise ConfigurationError(f"{what} must be >= 1, got {requested}")
    if requested > usable:
        logger.warning("%s: %d asked for, but this process may use %d CPU(s): %d", what,
                       requested, usable, usable)  # fmt: skip
    return min(requested, usable)


def set_torch_threads(requested: Optional[int] = None, what: str = "torch threads") -> int:
    """Sets torch's intra-op threads to `thread_count(requested)`; returns that count."""
    import torch

    count = thread_count(requested, what)
    torch.set_num_threads(count)
    return count


def _read_proc_stat() -> str:
    with open("/proc/stat", "r", encoding="ascii", errors="replace") as stat:
        return stat.read()


def _busy_ticks(stat: str, cpus: List[int]) -> Optional[int]:
    """The clock ticks `cpus` spent busy (all but idle and iowait), from `/proc/stat`'s text."""
    wanted = {f"cpu{cpu}" for cpu in cpus}
    busy, found = 0, 0
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] in wanted:
            ticks = [int(value) for value in fields[1:9]]
            busy += sum(ticks) - ticks[3] - ticks[4]
            found += 1
    return busy if found == len(wanted) else None


class CpuLoad:
    """
    How many of `cpus` (default: the usable ones) other processes kept busy between two calls of
    `busy_elsewhere`: their busy ticks less this process's CPU time (`own_seconds`), per wall
    second (`clock`). `read_stat` returns `/proc/stat`'s text.
    """

    def __init__(
        self,
        read_stat: Callable[[], str] = _read_proc_stat,
        own_seconds: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
        cpus: Optional[List[int]] = None,
    ) -> None:
        self._read_stat = read_stat
        self._own_seconds = own_seconds
        self._clock = clock
        try:
            self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self.cpus = []
        self._tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self._last = self._sample()

    def _sample(self) -> Optional[Tuple[float, int, float]]:
        if not self.cpus:
            return None
        try:
            busy = _busy_ticks(self._read_stat(), self.cpus)
        except OSError:
            return None
        if busy is None:
            return None
        return self._clock(), busy, self._own_seconds()

    def busy_elsewhere(self, min_interval: float = 0.05) -> Optional[float]:
        """Others' busy CPUs since the last call (the interval then starts again)."""
        now = self._sample()
        last = self._last
        if now is None or last is None or now[0] - last[0] < min_interval:
            return None
        self._last = now
        wall = now[0] - last[0]
        others = (now[1] - last[1]) / self._tick - (now[2] - last[2])
        return min(float(len(self.cpus)), max(0.0, others / wall))


def free_cpus(load: Optional[CpuLoad] = None, interval: float = 0.25) -> int:
    """The usable CPUs no other process kept busy (half busy counts as taken), at least one,
    over `load`'s interval since its last call, else over `interval` seconds now."""
    usable = usable_cpus()
    if load is None:
        load = CpuLoad()
        time.sleep(interval)
    others = load.busy_elsewhere()
    if others is None:
        return usable
    return max(1, min(usable, usable - int(others + 0.5)))


def use_free_cpus(threads: Optional[int] = None) -> int:
    """Sets torch's threads to `threads`, else to `OMP_NUM_THREADS` (torch's count, left as
    it is), else to the free CPUs; returns the count."""
    import torch

    if threads is None and os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    return set_torch_threads(threads if threads is not None else free_cpus())
