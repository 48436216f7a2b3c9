"""Helpers shared by the benchmark scripts (run as `python benchmarks/<script>.py`)."""

import statistics
import time
from typing import Callable, Dict, Tuple

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
    return {name: statistics.median(values) for name, values in times.items()}, peaks
