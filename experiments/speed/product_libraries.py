"""
Which library should multiply the fused encoder's float32 products on this CPU: the encoder step
(`encoder_backends.py`, forward + backward, one thread) with its products through `torch.mm`
(MKL) and through oneDNN, against the `reference` backend and the floor
`torch.nn.LSTM(proj_size)`, all timed in turn in one run per size. Each size runs twice: with
the machine's own instruction set, and capped at AVX2 (`ATEN_CPU_CAPABILITY=avx2`,
`ONEDNN_MAX_CPU_ISA=AVX2`, `MKL_ENABLE_INSTRUCTIONS=AVX2`: torch, oneDNN and MKL each run their
AVX2 code; the C kernels pick their vector width from torch's capability), an AVX2-only CPU as
far as these libraries can be made to behave like one on an AVX-512 machine. It is not an AVX2
CPU: caches, clocks and MKL's code for AMD processors differ, so its rows say what the libraries'
AVX2 code does here, not what a Zen 3 core does.

    python -m experiments.speed.product_libraries --json experiments/speed/product_libraries.json \
        --report experiments/speed/RESULTS.md
    python -m experiments.speed.product_libraries --render --json ... --report ...

`products.onednn_preferred` names the machines whose default is oneDNN; the `default` column
says which library this machine's default took.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from experiments.common.machine import machine_description, machine_line
from experiments.common.markers import markers, replace_section

BEGIN, END = markers("product-libraries")
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
ROWS = "reference,fused_torch_mm,fused_onednn,floor"
# name: (encoder_backends size, batch, timesteps)
SIZES = {"small": ("small", 64, 20), "middle": ("middle", 32, 20), "paper": ("paper", 16, 21)}
PROJECT = Path(__file__).resolve().parents[2]


def measure(size: str, isa: str, steps: int, warmup: int, scale: float) -> dict:
    """One `encoder_backends` run (a subprocess, so that the caps reach the libraries at load)."""
    name, batch, timesteps = SIZES[size]
    batch, timesteps = max(2, int(batch * scale)), max(3, int(timesteps * scale))
    with tempfile.TemporaryDirectory() as directory:
        record = Path(directory) / "row.jsonl"
        command = [sys.executable, "-m", "experiments.speed.encoder_backends", "--size", name,
                   "--threads", "1", "--batch-size", str(batch), "--timesteps", str(timesteps),
                   "--steps", str(steps), "--warmup", str(warmup), "--update", "none",
                   "--rows", ROWS, "--json", str(record)]  # fmt: skip
        environment = dict(os.environ, OMP_NUM_THREADS="1", **(AVX2 if isa == "avx2" else {}))
        environment.pop("ELMO_C_ONEDNN", None)
        done = subprocess.run(command, cwd=PROJECT, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"encoder_backends failed:\n{done.stderr[-3000:]}")
        (row,) = [json.loads(line) for line in record.read_text().splitlines()]
    probe = ("import torch; from allennlp_elmo_c.nn.products import Products\n"
             "with torch.no_grad(): print(Products(torch.zeros(1)).onednn, "
             "torch.backends.cpu.get_cpu_capability())")  # fmt: skip
    chosen = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, env=environment,
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return {"size": size, "isa": isa, "capability": chosen[1], "batch": batch,
            "timesteps": timesteps, "default": "oneDNN" if chosen[0] == "True" else "torch.mm",
            "tokens_per_second": row["tokens_per_second"], "steps": steps}  # fmt: skip


def render(data: dict) -> str:
    lines = [BEGIN, "", "### Which library multiplies the encoder's products "
             "(`product_libraries.py`)", "",
             f"`{data['command']}`. Machine: {data['machine']}. One thread, forward + backward, "
             f"median of {data['rows'][0]['steps']} steps, every column of a row timed in turn. "
             "Tokens/s; the ratios are time against the floor's (below 1: faster than the floor). "
             "`AVX2` rows: torch, oneDNN and MKL capped at AVX2 on this CPU (the script's "
             "docstring says what that does and does not imitate).", "",
             "| size, batch | instruction set | reference | fused, torch.mm | fused, oneDNN | floor "
             "| default | fused (torch.mm) / floor | fused (oneDNN) / floor |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in data["rows"]:
        speed = row["tokens_per_second"]
        time = lambda name: f"{speed['floor'] / speed[name]:.2f}x"  # noqa: E731
        lines.append(
            f"| {row['size']}, {row['batch']} x {row['timesteps']} | {row['capability']} | "
            + " | ".join(f"{speed[name]:,.0f}" for name in
                         ("reference", "fused_torch_mm", "fused_onednn", "floor"))  # fmt: skip
            + f" | {row['default']} | {time('fused_torch_mm')} | {time('fused_onednn')} |"
        )
    return "\n".join(lines + ["", END]) + "\n"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--sizes", default="small,middle,paper")
    parser.add_argument("--isas", default="native,avx2")
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0, help="batch and timesteps x this")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--render", action="store_true", help="run nothing: the section from --json")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = parse_args(argv)
    if args.render:
        data = json.loads(args.json.read_text(encoding="utf-8"))
    else:
        rows: List[Dict] = [measure(size, isa, args.steps, args.warmup, args.scale)
                            for size in args.sizes.split(",") for isa in args.isas.split(",")]  # fmt: skip
        given = list(argv if argv is not None else sys.argv[1:])
        data = {"command": "python -m experiments.speed.product_libraries " + " ".join(given),
                "machine": machine_line(machine_description(torch.device("cpu"), 1)), "rows": rows}  # fmt: skip
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if args.report:
        replace_section(args.report, BEGIN, END, render(data))
    return data


if __name__ == "__main__":
    main()
