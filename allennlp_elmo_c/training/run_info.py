"""`hardware.json`: the machine each session of a run ended on, for `package`'s model card."""

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

import torch

from allennlp_elmo_c.common.atomic import atomic_open

HARDWARE_FILE = "hardware.json"


def this_machine() -> Dict[str, Any]:
    """CPU, cores, threads, GPUs and torch version of this process's machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpus = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpus": gpus,
        "torch": torch.__version__,
        "platform": platform.platform(),
    }


def record_hardware(serialization_dir: str) -> List[Dict[str, Any]]:
    """Appends this machine to the run's `hardware.json`; returns the whole list."""
    path = Path(serialization_dir) / HARDWARE_FILE
    starts: List[Dict[str, Any]] = []
    if path.is_file():
        try:
            starts = list(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            starts = []  # a file of another tool: replaced
    starts.append(this_machine())
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as stream:
        json.dump(starts, stream, indent=1)
    return starts
