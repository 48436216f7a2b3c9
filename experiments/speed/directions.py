"""
Whole training steps of the small ELMo-C (`training_config/elmo_c_small.jsonnet`'s sizes: 100-d
fastText in, projection 128, cell 256, 2 layers x 2 directions, the cosine head, fused Adam,
batch 64 x 20) on one core and on two, in one run:

    python -m experiments.speed.directions [--cpus 0 1] [--repeats 3] [--steps 20]

Each row runs in a fresh process pinned to its CPUs with `OMP_NUM_THREADS` set: `1 core` (one
thread, the directions in turn), `2 cores, in turn` (two threads, the directions one after the
other: the path before `nn.concurrent`) and `2 cores, at once` (the directions concurrently, one
thread each: what the encoder chooses on two free CPUs). The rows run in turn, `--repeats` times.
Prints each process's tokens/s, its CPU seconds over wall seconds (about 2 when both cores
worked), its CPU milliseconds a step (all threads: what a loaded machine changes least) and each
two-core row's ratio to the one-core row of the same repeat. OpenMP's threads spin a while at each
barrier unless `OMP_WAIT_POLICY=PASSIVE` is set (inherited by the rows).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional

ROWS = {"1 core": (1, True), "2 cores, in turn": (2, False), "2 cores, at once": (2, True)}
RESULT = "DIRECTIONS_RESULT "


def child(row: str, steps: int, warmup: int, fasttext_rows: int) -> None:
    import torch

    import allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm as elmo_lstm
    from experiments.speed.run_models import (
        TIMESTEPS, adam, elmo_c_batch, elmo_c_model, model_step, sample_words,
    )  # fmt: skip

    if not ROWS[row][1]:
        elmo_lstm.threads_each = lambda count: 0  # the directions one after the other
    generator = torch.Generator().manual_seed(0)
    batch = elmo_c_batch(sample_words(64, TIMESTEPS, generator), fasttext_rows, "cpu", generator)
    torch.manual_seed(0)
    model = elmo_c_model("demo", fasttext_rows)
    step = model_step(model, adam(model), batch)
    for _ in range(warmup):
        step()
    before, started = os.times(), time.perf_counter()
    for _ in range(steps):
        step()
    wall, after = time.perf_counter() - started, os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    tokens = 64 * (TIMESTEPS - 1) * steps
    print(RESULT + json.dumps({"tokens_per_second": tokens / wall, "cpu_per_wall": cpu / wall,
                               "cpu_ms_per_step": 1000 * cpu / steps}))  # fmt: skip


def run_row(row: str, cpus: List[int], args: argparse.Namespace) -> Dict[str, float]:
    threads = ROWS[row][0]
    environment = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    command = ["taskset", "-c", ",".join(map(str, cpus[:threads])), sys.executable, "-m",
               "experiments.speed.directions", "--child", row, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--fasttext-rows", str(args.fasttext_rows)]  # fmt: skip
    output = subprocess.run(command, env=environment, check=True, capture_output=True, text=True)
    line = next(line for line in output.stdout.splitlines() if line.startswith(RESULT))
    return json.loads(line[len(RESULT) :])


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--cpus", type=int, nargs=2, default=sorted(os.sched_getaffinity(0))[:2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--fasttext-rows", type=int, default=200_000)
    parser.add_argument("--child", choices=sorted(ROWS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.steps, args.warmup, args.fasttext_rows)
    ratios: Dict[str, List[float]] = {row: [] for row in ROWS if row != "1 core"}
    print(f"CPUs {args.cpus}, {args.steps} steps after {args.warmup}, {args.repeats} repeats")
    print("| repeat | row | tokens/s | CPU s / wall s | CPU ms / step | vs 1 core |\n"
          "|---|---|---:|---:|---:|---:|")  # fmt: skip
    for repeat in range(args.repeats):
        base = None
        for row in ROWS:
            result = run_row(row, args.cpus, args)
            base = base or result["tokens_per_second"]
            ratio = result["tokens_per_second"] / base
            if row in ratios:
                ratios[row].append(ratio)
            print(f"| {repeat + 1} | {row} | {result['tokens_per_second']:,.0f} | "
                  f"{result['cpu_per_wall']:.2f} | {result['cpu_ms_per_step']:.0f} | {ratio:.2f}x |",
                  flush=True)  # fmt: skip
    for row, values in ratios.items():
        print(f"{row}: median {statistics.median(values):.2f}x one core "
              f"({min(values):.2f}-{max(values):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
