"""
How many threads this process runs its CPU work on: one per CPU it may use, never more.

A process may be allowed fewer CPUs than the machine has (`taskset`, a container's or a batch
scheduler's cpuset); `os.cpu_count()` counts the machine's. More threads than allowed CPUs only
wait for each other, so every thread count the plugin chooses or is given goes through
`thread_count`.

A CPU this process may use is not free when another process keeps it busy (a browser, a second
training run, a neighbour on a shared server). A thread of ours on it waits for the other
process's time slices, and the threads that wait for that thread at each of a step's hundreds of
barriers wait with it: two threads beside one busy process run a small step slower than one.
`CpuLoad` measures, from the kernel's per-CPU counters and this process's own CPU time, how many
of the usable CPUs others kept busy over an interval, and `free_cpus` is what is left.
`use_free_cpus` is the one call that sets torch's threads so: the plugin's commands and its
`cpu_threads` training callback make it, and a user's own process can.
"""

import logging
import os
import time
from typing import Callable, List, Optional, Tuple

logger = logging.getLogger(__name__)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), or the machine's count where the
    platform has no affinity mask (macOS, Windows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_count(requested: Optional[int] = None, what: str = "threads") -> int:
    """
    `requested` threads, at most one per usable CPU (a warning says so when that is fewer);
    `None`: one per usable CPU.

    # Parameters

    requested : `Optional[int]`
        Threads asked for (a `--threads` argument); at least 1.
    what : `str`
        What the threads are for, in the messages (e.g. `"train-fasttext: threads"`).
    """
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
    """The clock ticks `cpus` spent busy (all but idle and iowait) since boot, from the text of
    `/proc/stat`; `None` when a CPU's line is missing."""
    wanted = {f"cpu{cpu}" for cpu in cpus}
    busy, found = 0, 0
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] in wanted:
            # user nice system idle iowait irq softirq steal [guest guest_nice, inside user]
            ticks = [int(value) for value in fields[1:9]]
            busy += sum(ticks) - ticks[3] - ticks[4]
            found += 1
    return busy if found == len(wanted) else None


class CpuLoad:
    """
    How many of the CPUs this process may use other processes kept busy, measured between two
    calls of `busy_elsewhere` (or since the object was made): the kernel's busy ticks of those
    CPUs over the interval, less this process's own CPU time, in CPUs. `None` where the platform
    has no `/proc/stat` (macOS, Windows) or the interval is too short to tell.

    # Parameters

    read_stat : `Callable[[], str]`, optional
        Returns the text of `/proc/stat` (tests give their own).
    own_seconds : `Callable[[], float]`, optional
        This process's CPU seconds, all threads (default: `time.process_time`).
    clock : `Callable[[], float]`, optional
        Wall seconds (default: `time.monotonic`).
    cpus : `List[int]`, optional
        The CPUs to watch (default: this process's affinity mask).
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
    """
    The usable CPUs that no other process kept busy (a CPU counts as taken from half of it busy
    on), at least one. With no `load`, measures `interval` seconds now; with one, the interval
    since its last call. Where the load can't be measured: `usable_cpus()`.
    """
    usable = usable_cpus()
    if load is None:
        load = CpuLoad()
        time.sleep(interval)
    others = load.busy_elsewhere()
    if others is None:
        return usable
    return max(1, min(usable, usable - int(others + 0.5)))


def use_free_cpus(threads: Optional[int] = None) -> int:
    """
    Sets torch's intra-op threads to the free CPUs of this process (`free_cpus`, measured over a
    quarter of a second), or to `threads` (at most one per usable CPU) when given or when
    `OMP_NUM_THREADS` is set (torch's count, left as it is); returns the count. What the
    plugin's commands do as they start; for a user's own process: `allennlp_elmo_c.use_free_cpus()`.
    """
    import torch

    if threads is None and os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()  # torch read it as it loaded
    return set_torch_threads(threads if threads is not None else free_cpus())
