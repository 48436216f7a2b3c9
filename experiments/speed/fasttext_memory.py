"""
Is the fastText matrix shared between processes? Peak memory of short demo-config trainings
(`training_config/elmo_c_demo.jsonnet`, a tiny encoder, a few dozen steps) over a ~1 GB fastText
`.bin`, with 1 process, 1 process + 2 data-loader workers, and 2 DDP ranks (gloo, CPU).

    python -m experiments.speed.fasttext_memory                  # builds a ~1 GB .bin in a temp dir
    python -m experiments.speed.fasttext_memory --bin cc.en.300.bin --keep

While each training runs, every process of its tree is sampled from /proc (Linux only): resident
set size (RSS, and the kernel's peak `VmHWM`), proportional set size (PSS, from `smaps_rollup`: a
page shared by n processes counts 1/n in each, so summed PSS is the real footprint) and the RSS/PSS
of the `.bin`'s memory mapping alone. A callback (`fasttext_matrix_probe`, loaded into the
training processes with `--include-package`) first makes the whole matrix resident in every
training process, as a long run over a large corpus eventually does (`touch`); the counterfactual
run (`copy`) instead gives each training process a private in-RAM copy read from the file, as a
loader that reads the matrix into memory (fastText's own `load_model`) would.

The `.bin` is trained with the fastText library (in a child process, see `train-fasttext`) on a
synthetic corpus with a huge `bucket`: the input matrix is (words + bucket) x dim x 4 bytes. It is
deleted at the end unless `--keep` (a `--bin` you pass is never deleted).
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

import numpy as np
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_demo.jsonnet"
MIB = 1024 * 1024


@TrainerCallback.register("fasttext_matrix_probe")
class FastTextMatrixProbe(TrainerCallback):
    """
    Before training, in every training process: `touch` reads the whole memory-mapped fastText
    matrix of each `fasttext` embedder (every page becomes resident in this process); `copy`
    replaces it by a private copy read from the file; `none` does nothing.
    """

    def __init__(self, serialization_dir: str, mode: str = "touch") -> None:
        super().__init__(serialization_dir)
        if mode not in ("touch", "copy", "none"):
            raise ConfigurationError(f"fasttext_matrix_probe: unknown mode {mode!r}")
        self.mode = mode

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary, **kwargs)
        models = {
            id(m._fasttext): m._fasttext
            for m in trainer.model.modules()
            if isinstance(m, FastTextEmbedder)
        }
        for fasttext in models.values():
            mapped = fasttext.input_matrix
            if self.mode == "touch":
                mapped.sum(dtype=np.float64)
            elif self.mode == "copy":
                copy = np.fromfile(
                    fasttext.path, dtype="<f4", count=mapped.size, offset=mapped.offset
                )
                fasttext._cpu_matrix = torch.from_numpy(copy.reshape(mapped.shape))


@dataclass
class ProcessPeak:
    """Peaks (kB) over the samples of one process."""

    role: str
    hwm: int = 0  # the kernel's peak RSS (VmHWM)
    pss: int = 0
    bin_rss: int = 0  # of the .bin's mapping
    bin_pss: int = 0


@dataclass
class RunResult:
    name: str
    seconds: float
    processes: Dict[int, ProcessPeak]
    sums: Dict[str, int] = field(default_factory=dict)  # peak over time of the summed kB


def _fields(text: str, names) -> Dict[str, int]:
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in names:
            values[name] = int(rest.split()[0])
    return values


_MAPPING_HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")


def _mapping_kb(pid: int, path: str) -> Dict[str, int]:
    """Rss and Pss (kB) of the mappings of `path` in process `pid`."""
    totals = {"Rss": 0, "Pss": 0}
    inside = False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            if _MAPPING_HEADER.match(line):
                inside = line.rstrip("\n").endswith(" " + path)
            elif inside:
                name, _, rest = line.partition(":")
                if name in totals:
                    totals[name] += int(rest.split()[0])
    return totals


def _process_tree(root: int) -> List[int]:
    children = defaultdict(list)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children[parent].append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children[pid])
    return tree


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "main"
    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    if "resource_tracker" in command:
        return "resource tracker"
    if "spawn_main" in command:
        return "DDP rank"
    return "loader worker"  # forked by the main process or a rank


def sample_while_running(process: subprocess.Popen, path: str, interval: float) -> RunResult:
    peaks: Dict[int, ProcessPeak] = {}
    sums = {"rss": 0, "pss": 0, "pss_anon": 0, "bin_rss": 0, "bin_pss": 0}
    start = time.monotonic()
    while process.poll() is None:
        now = dict.fromkeys(sums, 0)
        for pid in _process_tree(process.pid):
            try:
                if pid not in peaks:
                    peaks[pid] = ProcessPeak(_role(pid, process.pid))
                status = _fields(Path(f"/proc/{pid}/status").read_text(), ("VmRSS", "VmHWM"))
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
                rollup = _fields(rollup, ("Pss", "Pss_Anon"))
                mapping = _mapping_kb(pid, path)
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
            peak = peaks[pid]
            peak.hwm = max(peak.hwm, status.get("VmHWM", 0))
            peak.pss = max(peak.pss, rollup.get("Pss", 0))
            peak.bin_rss = max(peak.bin_rss, mapping["Rss"])
            peak.bin_pss = max(peak.bin_pss, mapping["Pss"])
            now["rss"] += status.get("VmRSS", 0)
            now["pss"] += rollup.get("Pss", 0)
            now["pss_anon"] += rollup.get("Pss_Anon", 0)
            now["bin_rss"] += mapping["Rss"]
            now["bin_pss"] += mapping["Pss"]
        for key, value in now.items():
            sums[key] = max(sums[key], value)
        time.sleep(interval)
    return RunResult("", time.monotonic() - start, peaks, sums)


def write_corpus(path: Path, lines: int, seed: int) -> List[str]:
    """Random sentences over a Zipf-distributed 2,000-word vocabulary; returns the words by
    frequency rank."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdgklmnprstvz" for v in "aeiou"]
    words = list(
        dict.fromkeys("".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(2000))
    )
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(lines):
            out.write(" ".join(rng.choices(words, weights, k=rng.randint(5, 20))) + "\n")
    return words


def build_data_dir(root: Path, args: argparse.Namespace) -> Path:
    """The demo config's layout: news/{train,dev}.txt, fasttext/{news.100d.bin,
    frequent_words.txt}; the .bin is trained unless --bin."""
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext

    (root / "news").mkdir(parents=True, exist_ok=True)
    (root / "fasttext").mkdir(exist_ok=True)
    words = write_corpus(root / "news" / "train.txt", args.steps * args.batch_size, seed=1)
    write_corpus(root / "news" / "dev.txt", 64, seed=2)
    (root / "fasttext" / "frequent_words.txt").write_text("\n".join(words[:500]) + "\n")
    target = root / "fasttext" / "news.100d.bin"
    if args.bin:
        target.unlink(missing_ok=True)
        target.symlink_to(Path(args.bin).resolve())
        return root
    expected = (len(words) + args.bucket) * args.dim * 4
    free = shutil.disk_usage(root).free
    if free < 2.5 * expected:
        sys.exit(f"{root}: {free / MIB:.0f} MiB free, need ~{2.5 * expected / MIB:.0f} MiB")
    print(f"Training a fastText model with a {expected / MIB:.0f} MiB input matrix ...")
    started = time.monotonic()
    train_fasttext(
        root / "news" / "train.txt",
        target,
        dim=args.dim,
        bucket=args.bucket,
        epoch=5,
        min_count=1,
        verbose=0,
    )
    print(f"  {target.stat().st_size / MIB:.0f} MiB .bin in {time.monotonic() - started:.0f} s")
    return root


RUNS = {
    # name: (overrides, probe mode)
    "1 process": ({"data_loader.num_workers": 0}, "touch"),
    # Streaming, as training_config/elmo_c.jsonnet: the workers live (and index) all epoch long.
    "1 process + 2 loader workers": (
        {"data_loader.num_workers": 2, "data_loader.max_instances_in_memory": 64},
        "touch",
    ),
    "2 DDP ranks": ({"distributed": {"cuda_devices": [-1, -1]}}, "touch"),
    "2 DDP ranks, matrix copied": ({"distributed": {"cuda_devices": [-1, -1]}}, "copy"),
    "1 process, matrix copied": ({"data_loader.num_workers": 0}, "copy"),
}


def run_training(name: str, data: Path, work: Path, bin_path: str, dim: int, args) -> RunResult:
    extra, mode = RUNS[name]
    overrides = {
        "model.text_field_embedder.token_embedders.tokens.expected_dim": dim,
        "model.contextualizer.input_size": dim,
        "model.contextualizer.projection_size": 32,
        "model.contextualizer.cell_size": 64,
        "data_loader.batch_size": args.batch_size,
        "trainer.callbacks": [{"type": "fasttext_matrix_probe", "mode": mode}],
        **extra,
    }
    serialization = work / "runs" / name.replace(" ", "_").replace(",", "").replace("+", "")
    shutil.rmtree(serialization, ignore_errors=True)
    environment = dict(os.environ, ELMO_C_DATA_DIR=str(data), OMP_NUM_THREADS="1")
    environment["MKL_NUM_THREADS"] = "1"
    paths = [str(PROJECT_ROOT), environment.get("PYTHONPATH", "")]
    environment["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(DEMO_CONFIG)]
    command += ["-s", str(serialization), "-o", json.dumps(overrides)]
    command += ["--include-package", "experiments.speed.fasttext_memory", "--file-friendly-logging"]
    log = work / f"{serialization.name}.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
        result = sample_while_running(process, bin_path, args.interval)
    if process.returncode != 0:
        sys.exit(f"{name}: training failed (exit code {process.returncode}); see {log}")
    result.name = name
    return result


def summarize(result: RunResult, matrix_kb: int) -> Dict[str, object]:
    training = [p for p in result.processes.values() if p.role in ("main", "DDP rank")]
    holders = [p for p in training if p.bin_rss >= 0.9 * matrix_kb]
    copied = RUNS[result.name][1] == "copy"
    trainers = [p for p in training if p.role == "DDP rank"] or training
    row = {
        "run": result.name,
        "processes": ", ".join(
            f"{count} {role}{'s' if count > 1 else ''}"
            for role, count in Counter(p.role for p in result.processes.values()).items()
        ),
        "peak RSS per training process": max(p.hwm for p in trainers) / 1024,
        "sum of peak RSS": sum(p.hwm for p in result.processes.values()) / 1024,
        "peak summed PSS": result.sums["pss"] / 1024,
        ".bin resident per training process": max(p.bin_rss for p in trainers) / 1024,
        "peak summed .bin PSS": result.sums["bin_pss"] / 1024,
        "peak summed anon PSS": result.sums["pss_anon"] / 1024,
        "seconds": result.seconds,
    }
    if copied:
        row["summed PSS if each held a copy"] = row["peak summed PSS"]
    else:
        other = result.sums["pss"] - result.sums["bin_pss"]
        row["summed PSS if each held a copy"] = (other + len(holders) * matrix_kb) / 1024
    row["holders"] = len(holders)
    return row


COLUMNS = [
    "run",
    "processes",
    "peak RSS per training process",
    "sum of peak RSS",
    "peak summed PSS",
    ".bin resident per training process",
    "peak summed .bin PSS",
    "peak summed anon PSS",
    "summed PSS if each held a copy",
    "seconds",
]


def markdown_table(rows: List[Dict[str, object]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [f"{row[c]:.0f}" if isinstance(row[c], float) else str(row[c]) for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(rows: List[Dict[str, object]], matrix_mib: float) -> str:
    for row in rows:
        if row["run"] == "2 DDP ranks":
            ranks_resident = row[".bin resident per training process"] >= 0.9 * matrix_mib
            one_copy = row["peak summed .bin PSS"] <= 1.1 * matrix_mib
            if row["holders"] >= 2 and ranks_resident and one_copy:
                return (
                    f"SHARED: each of the 2 DDP ranks has the whole {matrix_mib:.0f} MiB matrix "
                    f"resident, and together they account for {row['peak summed .bin PSS']:.0f}"
                    " MiB of it (one copy, in the page cache)."
                )
            return (
                "NOT SHARED (or not fully resident): .bin resident per rank "
                f"{row['.bin resident per training process']:.0f} MiB, summed .bin PSS "
                f"{row['peak summed .bin PSS']:.0f} MiB for a {matrix_mib:.0f} MiB matrix."
            )
    return "(the 2-rank run was not selected)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", help="use this fastText .bin instead of training one")
    parser.add_argument("--work-dir", help="default: a new temporary directory")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--bucket", type=int, default=2_600_000, help="sets the .bin's size")
    parser.add_argument("--steps", type=int, default=40, help="training batches (all ranks)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--interval", type=float, default=0.5, help="sampling period (s)")
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS)[:4])
    parser.add_argument("--keep", action="store_true", help="keep the work dir and the .bin")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if not Path("/proc/self/smaps_rollup").is_file():
        sys.exit("needs Linux >= 4.14 (/proc/<pid>/smaps_rollup)")

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="fasttext_memory_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        data = build_data_dir(work / "data", args)
        bin_path = str((data / "fasttext" / "news.100d.bin").resolve())
        fasttext = FastTextBin(bin_path)
        matrix_kb = fasttext.num_rows * fasttext.dim * 4 // 1024
        print(f"Matrix: {fasttext.num_rows} x {fasttext.dim} float32 = {matrix_kb / 1024:.0f} MiB")
        rows = []
        for name in args.runs:
            print(f"Training: {name} ...", flush=True)
            result = run_training(name, data, work, bin_path, fasttext.dim, args)
            rows.append(summarize(result, matrix_kb))
        print("\nMemory in MiB (PSS: proportional set size; .bin: its memory mapping):\n")
        print(markdown_table(rows))
        print("\n" + verdict(rows, matrix_kb / 1024))
        if args.json:
            Path(args.json).write_text(json.dumps({"matrix_mib": matrix_kb / 1024, "rows": rows}))
    finally:
        if args.keep:
            print(f"Kept {work}")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            built = work / "data" / "fasttext" / "news.100d.bin"
            if built.is_file() and not built.is_symlink():
                built.unlink()


if __name__ == "__main__":
    main()
