"""Helpers shared by the experiment scripts (`python -m experiments.<folder>.<script>`)."""

import ctypes
import gc
import os
import statistics
import threading
import time
from typing import Callable, Dict, List, Tuple

import torch


def device_name(device: torch.device, threads: int) -> str:
    """The GPU's name, or "CPU, N threads"."""
    return (
        torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {threads} threads"
    )


def trainable_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def time_in_turn(
    work: Dict[str, Callable[[], None]], steps: int, warmup: int, device: torch.device
) -> Tuple[Dict[str, float], Dict[str, float]]:
    """
    Runs each of `work`'s callables in turn, `warmup + steps` times, so that load on the machine
    affects all of them alike; returns each one's median seconds over the last `steps` runs and,
    on CUDA, its peak memory in GiB (0 elsewhere).
    """
    times, peaks = times_in_turn(work, steps, warmup, device)
    return {name: statistics.median(values) for name, values in times.items()}, peaks


def times_in_turn(
    work: Dict[str, Callable[[], None]], steps: int, warmup: int, device: torch.device
) -> Tuple[Dict[str, List[float]], Dict[str, float]]:
    """`time_in_turn` with every timed run's seconds, in order (run i of each callable came
    between runs i and i + 1 of the one before it)."""
    times = {name: [] for name in work}
    peaks = {name: 0.0 for name in work}
    for repetition in range(warmup + steps):
        for name, run in work.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            run()
            if device.type == "cuda":
                torch.cuda.synchronize()
                peaks[name] = torch.cuda.max_memory_allocated() / 2**30
            if repetition >= warmup:
                times[name].append(time.perf_counter() - start)
    return times, peaks


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def resident_bytes() -> int:
    """This process's resident set size now (Linux `/proc/self/statm`; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def release_memory() -> None:
    """Frees what can be freed before a baseline: garbage, glibc's free lists, CUDA's cache."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


class PeakMemory:
    """
    Peak memory above a baseline (`mark()`), in bytes: on CUDA the allocator's
    `max_memory_allocated`, elsewhere the process's resident set sampled every millisecond by a
    thread while `measure`'s callable runs (an approximation: short-lived peaks between samples
    are missed, and memory that glibc keeps after freeing it counts as used).
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.base = 0

    def current(self) -> int:
        if self.device.type == "cuda":
            synchronize(self.device)
            return torch.cuda.memory_allocated(self.device)
        return resident_bytes()

    def mark(self) -> None:
        release_memory()
        self.base = self.current()

    def measure(self, run: Callable[[], None]) -> int:
        """Runs `run` once; returns the peak above the mark during it."""
        if self.device.type == "cuda":
            synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            run()
            synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - self.base
        peak = [resident_bytes()]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.001):
                peak[0] = max(peak[0], resident_bytes())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            run()
        finally:
            done.set()
            sampler.join()
        return max(peak[0], resident_bytes()) - self.base
