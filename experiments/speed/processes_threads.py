"""
Every core of a CPU machine used: P training processes (AllenNLP's `distributed: {cuda_devices:
[-1, ...]}`, gloo) of T torch threads each, P x T = the cores, against one process on all of them.

    python -m experiments.speed.processes_threads --corpus data/news/train.txt \\
        --validation data/news/dev.txt --fasttext data/fasttext/news.100d.bin \\
        --tokens 400000 --layouts 1x1 1x2 2x1 --work-dir /tmp/pxt

Each layout trains `training_config/elmo_c_small.jsonnet` for one epoch over the same first
`--tokens` tokens of `--corpus` (so every layout sees the same tokens), each process on its share
of the lines with the small config's batch of 64 windows, so P processes train a total batch of
64 x P in 1/P of the updates, and `rnmt_plus` sizes the peak learning rate from that total batch
(n = total / 128) and the decay from the updates of the run. `OMP_NUM_THREADS=T` fixes the
threads (the `cpu_threads` callback leaves a user's count alone). A layout's rate is its tokens
an update (P x 64 x 20) over the median seconds between updates after the second (the first
process's `update_timings.json`); its validation loss is the epoch's, over the same
`--validation` text. Writes `processes_threads.json` and the section of RESULTS.md between its
markers.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Sequence

from allennlp_elmo_c.training.update_timings import TIMINGS
from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section
from experiments.common.training import timed_overrides

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
CONFIG = PROJECT / "training_config" / "elmo_c_small.jsonnet"
BEGIN, END = markers("processes-threads")


def layout(text: str) -> "tuple[int, int]":
    """`PxT`: P processes of T threads."""
    processes, _, threads = text.partition("x")
    return int(processes), int(threads)


def first_tokens(source: Path, tokens: int, directory: Path) -> Path:
    """The first lines of `source` that hold `tokens` whitespace tokens (made once)."""
    path = directory / f"first_{tokens}.txt"
    if not path.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        written = 0
        with open(source, encoding="utf-8") as lines, open(path, "w", encoding="utf-8") as out:
            for line in lines:
                if written >= tokens:
                    break
                out.write(line)
                written += len(line.split())
    return path


def train(processes: int, threads: int, corpus: Path, args: argparse.Namespace) -> Dict[str, Any]:
    """One epoch of the small config in the layout; its timings and final metrics."""
    run_dir = args.work_dir / f"run_{processes}x{threads}"
    environment = {**os.environ, "ELMO_C_TRAIN_DATA": str(corpus),
                   "ELMO_C_VALIDATION_DATA": str(args.validation),
                   "ELMO_C_FASTTEXT": str(args.fasttext), "OMP_NUM_THREADS": str(threads)}
    params, overrides = timed_overrides(CONFIG, {**args.overrides, "trainer.num_epochs": 1},
                                        environment)  # fmt: skip
    if processes > 1:
        overrides["distributed"] = {"cuda_devices": [-1] * processes}
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(CONFIG), "-s", str(run_dir),
               "-o", json.dumps(overrides), "--file-friendly-logging", "-f"]
    started = time.time()
    with open(args.work_dir / f"{processes}x{threads}.log", "wb") as log:
        subprocess.run(command, env=environment, check=True, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.time() - started
    timings = json.loads((run_dir / TIMINGS).read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    ends = timings["update_ends"]
    steady = [b - a for a, b in zip(ends[2:], ends[3:])]
    batch = params["data_loader"]["batch_size"]
    per_update = statistics.median(steady) if steady else float("nan")
    tokens_per_update = processes * batch * 20  # windows of 21 tokens predict 20 positions
    return {
        "processes": processes, "threads": threads, "updates": len(ends),
        "batch_per_process": batch, "total_batch": processes * batch, "seconds_per_update": per_update,
        "tokens_per_second": tokens_per_update / per_update, "wall_seconds": seconds,
        "validation_loss": metrics.get("validation_loss"),
        "training_loss": metrics.get("training_loss"),
    }


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    corpus = first_tokens(args.corpus, args.tokens, args.work_dir)
    rows = [train(processes, threads, corpus, args) for processes, threads in args.layouts]
    return {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "tokens": args.tokens, "corpus": args.corpus.name, "conditions": args.conditions,
        "rows": rows,
    }


def render(record: Dict[str, Any]) -> str:
    rows = record["rows"]
    base = rows[0]
    lines = [
        BEGIN,
        f"## Processes or threads: `experiments/speed/processes_threads.py` ({record['date']})",
        "",
        f"{record['machine']}. `elmo_c_small.jsonnet`, one epoch over the first "
        f"{record['tokens']:,} tokens of {record['corpus']} in every layout (P gloo processes x "
        f"T threads, batch {rows[0]['batch_per_process']} windows a process), validation loss on the "
        f"same text. {record['conditions']} Rates in brackets: over the first row's, measured in "
        "this run.",
        "",
        "| processes x threads | total batch | updates | s / update | tokens/s | validation loss |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = row["tokens_per_second"] / base["tokens_per_second"]
        lines.append(
            f"| {row['processes']} x {row['threads']} | {row['total_batch']} | {row['updates']} | "
            f"{row['seconds_per_update']:.3f} | {row['tokens_per_second']:,.0f} ({ratio:.2f}x) | "
            f"{row['validation_loss']:.4f} |"
        )
    return "\n".join(lines + ["", END])


def main(argv: Sequence[str] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--validation", type=Path, required=True)
    parser.add_argument("--fasttext", type=Path, required=True)
    parser.add_argument("--tokens", type=int, default=400_000)
    parser.add_argument("--layouts", type=layout, nargs="+", default=[(1, 1), (1, 2), (2, 1)],
                        help="PxT: P processes of T threads; the first is the rates' base")
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--overrides", type=json.loads, default={}, help="JSON, as for train")
    parser.add_argument("--conditions", default="", help="what else ran on the machine")
    parser.add_argument("--json", type=Path, default=HERE / "processes_threads.json")
    parser.add_argument("--report", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--render", action="store_true", help="the section from --json alone")
    args = parser.parse_args(argv)
    if args.render:
        record = json.loads(args.json.read_text())
    else:
        record = measure(args)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    replace_section(args.report, BEGIN, END, render(record))
    return record


if __name__ == "__main__":
    main()
