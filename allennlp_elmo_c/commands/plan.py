"""`plan`: how long a pretraining run takes on this machine and the memory and disk it needs,
from the corpus's size and a few real updates trained in a child `allennlp train`
(docs/pretraining.md)."""

import argparse
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from allennlp.commands.subcommand import Subcommand
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DataLoader, DatasetReader

from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.machine import cpu_name
from allennlp_elmo_c.common.threads import usable_cpus
from allennlp_elmo_c.data.corpus_size import CorpusSize, corpus_size, corpus_windows
from allennlp_elmo_c.data.corpus import corpus_files
from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
from allennlp_elmo_c.nn.products import bfloat16_unsupported
from allennlp_elmo_c.training.update_timings import TIMINGS, with_update_timings

logger = logging.getLogger(__name__)

WARMUP_UPDATES = 2  # trained before the timed ones
VALIDATION_BATCHES = 3
CHECKPOINT_PATTERNS = ("model_state_*", "training_state_*")


def plan(
    corpus: str,
    config: str,
    overrides: str = "",
    updates: int = 10,
    ext_vars: Optional[Dict[str, str]] = None,
    work_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """The plan of training `config` (with `overrides`) on `corpus` (a file or a pattern), timing
    `updates` updates; the config reads the environment and `ext_vars`, with `corpus` as
    `ELMO_C_TRAIN_DATA` (and, unless set, `ELMO_C_VALIDATION_DATA`)."""
    environment = {"ELMO_C_VALIDATION_DATA": corpus, **os.environ, **(ext_vars or {}),
                   "ELMO_C_TRAIN_DATA": corpus}  # fmt: skip
    params = Params.from_file(config, overrides, ext_vars=environment)
    return plan_params(params, corpus, updates, environment, work_dir)


def plan_params(
    params: Params,
    corpus: str,
    updates: int = 10,
    environment: Optional[Dict[str, str]] = None,
    work_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """`plan` of an evaluated config; the short run gets `environment` (default: this one's)."""
    if updates < 1:
        raise ConfigurationError(f"plan: --updates must be >= 1, got {updates}")
    environment = dict(os.environ) if environment is None else environment
    sizes = _sizes(params, corpus)
    trainer = params.get("trainer", {})
    cuda_device = trainer.get("cuda_device", -1)
    device = torch.device("cuda", cuda_device) if _is_device(cuda_device) else torch.device("cpu")
    precision = params.get("model", {}).get("precision", "float32")
    notes: List[str] = []
    measured_precision = precision
    refused = bfloat16_unsupported(device) if precision == "bfloat16" else None
    if refused is not None:
        notes.append(
            f"bfloat16 is refused here ({refused}): training this config "
            "stops at its first batch; measured in float32 (-o '{\"model.precision\": "
            "\"float32\"}')"
        )
        measured_precision = "float32"
    processes = processes_advice(sizes, device, usable_cpus())
    if processes is not None:
        notes.append(processes)
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="elmo_c_plan_", dir=work_dir) as scratch:
        params["train_data_path"] = corpus
        run = _short_run(params, updates, measured_precision, environment, Path(scratch))
    return _estimate(sizes, run, precision, measured_precision, device, notes)


def _sizes(params: Params, corpus: str) -> Dict[str, Any]:
    """The corpus's size and the run's length, from the config's reader and data loader."""
    reader = DatasetReader.from_params(params["dataset_reader"].duplicate())
    if not isinstance(reader, LmCorpusReader):
        raise ConfigurationError("plan: the config's dataset_reader must be 'lm_corpus'")
    size: CorpusSize = corpus_size(corpus_files(corpus, "plan"))
    if not size.tokens:
        raise ConfigurationError(f"plan: {corpus} has no tokens (its files are empty or blank)")
    loader = DataLoader.from_params(params["data_loader"].duplicate(), reader=reader,
                                    data_path=corpus)  # fmt: skip
    try:
        batches = len(loader)
    except TypeError as error:
        raise ConfigurationError(
            "plan: the config's data loader does not know its length; use data_loader.type "
            "'lm_stream' (it counts the corpus)"
        ) from error
    trainer = params.get("trainer", {})
    accumulation = int(trainer.get("num_gradient_accumulation_steps", 1))
    epochs = int(trainer.get("num_epochs", 1))
    workers = len(params.get("distributed", {}).get("cuda_devices", [])) or 1
    per_epoch = math.ceil(math.ceil(batches / workers) / accumulation)
    validation = _validation_batches(params, reader)
    return {
        "corpus": corpus,
        "files": size.files,
        "counted_from": size.source,
        "tokens": size.tokens,
        "sentences": size.sentences,
        "windows": corpus_windows(size, reader.max_sequence_length, len(reader.boundary_tokens)),
        "window_tokens": reader.max_sequence_length,
        "batch_size": params["data_loader"].get("batch_size"),
        "processes": workers,
        "updates_per_epoch": per_epoch,
        "epochs": epochs,
        "updates": per_epoch * epochs,
        "validation_batches": validation,
    }


def processes_advice(sizes: Dict[str, Any], device: torch.device, cpus: int) -> Optional[str]:
    """For a one-process config on several CPUs: the override that trains one process a CPU
    (docs/pretraining.md, "Every core"), and what it does to the run."""
    if device.type != "cpu" or sizes["processes"] != 1 or cpus < 2:
        return None
    devices = json.dumps({"distributed": {"cuda_devices": [-1] * cpus}})
    return (f"{cpus} CPUs: one training process a CPU (-o '{devices}') trains more tokens a "
            f"second than one process on all of them; the total batch becomes {cpus} x "
            f"{sizes['batch_size']} windows and an epoch {cpus} times fewer updates, which the "
            "schedule follows (docs/pretraining.md, \"Every core\")")  # fmt: skip


def _validation_batches(params: Params, reader: LmCorpusReader) -> int:
    path = params.get("validation_data_path")
    if not path:
        return 0
    loader_params = params.get("validation_data_loader", params["data_loader"]).duplicate()
    loader = DataLoader.from_params(loader_params, reader=reader, data_path=path)
    try:
        return len(loader)
    except TypeError:
        return 0


def _is_device(cuda_device: Any) -> bool:
    return isinstance(cuda_device, int) and cuda_device >= 0


def _short_run(
    params: Params,
    updates: int,
    precision: str,
    environment: Dict[str, str],
    scratch: Path,
) -> Dict[str, Any]:
    """Trains `WARMUP_UPDATES + updates` updates of `params` in a child `allennlp train`; returns
    its timings, peak memory and the sizes of what it wrote."""
    config = params.duplicate().as_dict(quiet=True)
    trainer = config.setdefault("trainer", {})
    accumulation = int(trainer.get("num_gradient_accumulation_steps", 1))
    config["data_loader"]["batches_per_epoch"] = (WARMUP_UPDATES + updates) * accumulation
    if config.get("validation_data_path") and "validation_data_loader" in config:
        config["validation_data_loader"]["batches_per_epoch"] = VALIDATION_BATCHES
    trainer["num_epochs"] = 1
    trainer["callbacks"] = with_update_timings(trainer.get("callbacks"))
    config.setdefault("model", {})["precision"] = precision
    config_file, run_dir, log = scratch / "config.json", scratch / "run", scratch / "train.log"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    command = [
        sys.executable, "-m", "allennlp_elmo_c", "train", str(config_file), "-s", str(run_dir)
    ]
    started = time.time()
    with open(log, "wb") as out:
        returncode = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                    env=environment).returncode  # fmt: skip
    timings_file = run_dir / TIMINGS
    if returncode != 0 or not timings_file.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise ConfigurationError(
            f"plan: the short training run failed (exit {returncode}): {' | '.join(tail)}"
        )
    timings = json.loads(timings_file.read_text(encoding="utf-8"))
    checkpoint = sum(
        path.stat().st_size for pattern in CHECKPOINT_PATTERNS for path in run_dir.glob(pattern)
    )
    archive = run_dir / "model.tar.gz"
    return {
        "timings": timings,
        "process_start": started,
        "checkpoint_bytes": checkpoint,
        "archive_bytes": archive.stat().st_size if archive.is_file() else 0,
        "keep_checkpoints": _kept_checkpoints(trainer.get("checkpointer") or {}),
    }


def _kept_checkpoints(checkpointer: Dict[str, Any]) -> int:
    keep = checkpointer.get("keep_most_recent_by_count", 2)
    return 2 if keep is None else int(keep)


def _estimate(
    sizes: Dict[str, Any],
    run: Dict[str, Any],
    precision: str,
    measured_precision: str,
    device: torch.device,
    notes: List[str],
) -> Dict[str, Any]:
    timings = run["timings"]
    ends = timings["update_ends"]
    durations = [b - a for a, b in zip(ends[WARMUP_UPDATES - 1 :], ends[WARMUP_UPDATES:])]
    per_update = statistics.median(durations) if durations else ends[-1]
    first = timings["start_wall"] + ends[0] - run["process_start"]
    validation = timings["validation_batch_ends"]
    per_validation_batch = (
        statistics.median(b - a for a, b in zip(validation, validation[1:]))
        if len(validation) > 1 else 0.0
    )  # fmt: skip
    validation_seconds = per_validation_batch * sizes["validation_batches"]
    per_epoch = sizes["updates_per_epoch"] * per_update + validation_seconds
    checkpoints = run["checkpoint_bytes"] * (run["keep_checkpoints"] + 1)
    return {
        **sizes,
        "precision": precision,
        "measured_precision": measured_precision,
        "device": str(device),
        "cpu": cpu_name(),
        "cpus_usable": usable_cpus(),
        "measured_updates": len(durations),
        "seconds_per_update": per_update,
        "seconds_to_first_update": first,
        "validation_seconds_per_epoch": validation_seconds,
        "estimated_seconds_per_epoch": per_epoch,
        "estimated_seconds": first + sizes["epochs"] * per_epoch,
        "peak_memory_bytes": timings["peak_rss_bytes"],
        "peak_gpu_memory_bytes": timings["peak_gpu_bytes"],
        "checkpoint_bytes": run["checkpoint_bytes"],
        "archive_bytes": run["archive_bytes"],
        "disk_bytes": checkpoints + 2 * run["archive_bytes"],
        "notes": notes,
    }


def render(result: Dict[str, Any]) -> str:
    """The plan as the command prints it."""
    each = "" if result["processes"] == 1 else f" in each of {result['processes']} processes"
    lines = [
        f"plan for {result['corpus']} on {result['device']} ({result['cpu']}, "
        f"{result['cpus_usable']} usable CPUs)",
        f"  corpus      {result['tokens']:,} tokens, {result['sentences']:,} sentences in "
        f"{result['files']} file(s) (counted from: {result['counted_from']})",
        f"  run         {result['windows']:,} windows of {result['window_tokens']} tokens; "
        f"{result['updates_per_epoch']:,} updates an epoch of {result['batch_size']} windows"
        f"{each} x {result['epochs']} epoch(s) = "
        f"{result['updates']:,} updates",
        f"  measured    {result['seconds_per_update']:.3f} s an update (median of "
        f"{result['measured_updates']}, {result['measured_precision']}); first update "
        f"{_duration(result['seconds_to_first_update'])} after the start",
        f"  estimate    {_duration(result['estimated_seconds_per_epoch'])} an epoch (validation "
        f"{_duration(result['validation_seconds_per_epoch'])}), "
        f"{_duration(result['estimated_seconds'])} in all",
        f"  memory      peak {_size(result['peak_memory_bytes'])} RAM"
        + (
            f", {_size(result['peak_gpu_memory_bytes'])} GPU"
            if result["peak_gpu_memory_bytes"] else ""
        ),
        f"  disk        {_size(result['disk_bytes'])}: checkpoints of "
        f"{_size(result['checkpoint_bytes'])} (the kept ones and one being written) and the "
        f"archive ({_size(result['archive_bytes'])}, and its copy while it is written)",
    ]
    lines.extend(f"  note        {note}" for note in result["notes"])
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


@Subcommand.register("plan")
class Plan(PluginSubcommand):
    description = (
        "How long pretraining a config on a corpus takes on this machine, and the memory and "
        "disk it needs. The config's code runs as in allennlp train: plan only configs you "
        "trust (docs/security.md)."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("corpus", help="the training text: a file or a pattern of files")
        subparser.add_argument("--config", required=True,
                               help="the training config (.jsonnet): its code runs")
        subparser.add_argument("-o", "--overrides", default="", help="JSON overrides, as for train")
        subparser.add_argument("--updates", type=int, default=10, help="updates to time")
        subparser.add_argument("--json", action="store_true", help="print one JSON object")

    def run(self, args: argparse.Namespace) -> None:
        result = plan(args.corpus, args.config, args.overrides, args.updates)
        print(json.dumps(result, indent=2) if args.json else render(result))
