"""What the experiments measured on: one description of the machine (`machine_description`), and
the one line the reports write of it (`machine_line`, `machine`)."""

import datetime
import os
import platform
from typing import Dict, Optional

import torch

from allennlp_elmo_c.common.machine import cpu_name
from allennlp_elmo_c.common.threads import usable_cpus
from experiments.common.timing import device_name


def machine_description(device: Optional[torch.device] = None,
                        threads: Optional[int] = None) -> Dict[str, str]:  # fmt: skip
    """
    What the numbers were measured on: date, device, CPU model, cores (and those this process may
    use), threads, torch, Python and, on CUDA, the GPU.

    # Parameters

    device : `torch.device`, optional
        The device measured on; the first GPU where there is one, else the CPU.
    threads : `int`, optional
        The torch threads the measurements used on the CPU; `torch.get_num_threads()`.
    """
    if device is None:
        device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    threads = torch.get_num_threads() if threads is None else threads
    description = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": device_name(device, threads),
        "cpu": cpu_name(),
        "cpu_cores": str(os.cpu_count()),
        "usable_cpus": str(usable_cpus()),
        "torch_threads": str(threads if device.type == "cpu" else torch.get_num_threads()),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    if device.type == "cuda":
        description["gpu"] = torch.cuda.get_device_name(device)
        description["cuda"] = str(torch.version.cuda)
        total = torch.cuda.get_device_properties(device).total_memory
        description["gpu_memory_gib"] = f"{total / 2**30:.1f}"
    return description


def machine_line(description: Dict[str, str]) -> str:
    """A `machine_description` in one line: CPU, cores (the usable ones where fewer), GPU, torch
    and Python versions."""
    cores = f"{description['cpu_cores']} cores"
    usable = description.get("usable_cpus", description["cpu_cores"])
    if usable != description["cpu_cores"]:
        cores += f" ({usable} usable)"
    return (f"{description['cpu']}, {cores}, {description.get('gpu', 'no GPU')}, "
            f"torch {description['torch']}, Python {description['python']}")  # fmt: skip


def machine() -> str:
    """This machine in one line (`machine_line` of its default `machine_description`)."""
    return machine_line(machine_description())
