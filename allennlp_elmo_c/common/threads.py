"""
How many threads this process runs its CPU work on: one per CPU it may use, never more.

A process may be allowed fewer CPUs than the machine has (`taskset`, a container's or a batch
scheduler's cpuset); `os.cpu_count()` counts the machine's. More threads than allowed CPUs only
wait for each other, so every thread count the plugin chooses or is given goes through
`thread_count`. How torch's OpenMP threads wait for each other is set before torch is imported:
`allennlp_elmo_c_startup.wait_passively`.
"""

import logging
import os
from typing import Optional

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
