"""
Renders the JSON lines written by `encoder_suite.sh` (`encoder_backends.py --json`) as the
markdown tables of experiments/speed/RESULTS.md.

    python -m experiments.speed.encoder_report OUT_DIR
"""

import json
import sys
from pathlib import Path


def read(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def ratio(speeds, row, other):
    if row in speeds and other in speeds:
        return f"{speeds[row] / speeds[other]:.2f}x"
    return "-"


def main(out: Path) -> None:
    cpu, gpu = read(out / "cpu.jsonl"), read(out / "gpu.jsonl")
    if (out / "machine.txt").exists():
        print("Machine: " + "; ".join(
            " ".join(line.split()) for line in (out / "machine.txt").read_text().splitlines()
        ) + "\n")
    if cpu:
        print("| size, batch | threads | reference | fused | fused, torch ops "
              "| fused, backward torch.mm | AllenNLP `ElmoLstm` "
              "| `outside` | floor `torch.nn.LSTM(proj_size)` | matrix products alone "
              "| fused / reference | fused / floor | fused / products |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for record in sorted(cpu, key=lambda r: (r["size"] != "demo", r["threads"])):
            speeds = record["tokens_per_second"]
            cells = [f"{speeds[row]:,.0f}" if row in speeds else "-"
                     for row in ("reference", "fused", "fused_torch_ops", "fused_torch_mm", "allennlp",
                                "outside", "floor", "products")]
            print(f"| {record['size']}, {record['batch_size']} x {record['timesteps']} "
                  f"| {record['threads']} | " + " | ".join(cells)
                  + f" | {ratio(speeds, 'fused', 'reference')} | {ratio(speeds, 'fused', 'floor')} "
                  f"| {ratio(speeds, 'fused', 'products')} |")
        step = ("forward + backward" if cpu[0].get("update") == "none"
                else "forward + backward + Adam update")  # fmt: skip
        print(f"\nCPU rows: tokens/s, one step = {step}; torch {cpu[0]['torch']}.\n")
    full = gpu
    if full:
        rows = ("reference", "fused", "fused_torch_ops", "fused_eager", "allennlp", "outside", "floor")
        print("| size, batch | precision | " + " | ".join(rows) + " | fused / reference "
              "| fused / floor |")
        print("|---|---|" + "---|" * (len(rows) + 2))
        for record in full:
            speeds = record["tokens_per_second"]
            cells = [f"{speeds[row]:,.0f}" if row in speeds else "-" for row in rows]
            print(f"| {record['size']}, {record['batch_size']} x {record['timesteps']} "
                  f"| {record['precision']} | " + " | ".join(cells)
                  + f" | {ratio(speeds, 'fused', 'reference')} | {ratio(speeds, 'fused', 'floor')} |")
        print(f"\nGPU: {full[0]['device']}; torch {full[0]['torch']}.\n")
    # The batch sweep (encoder_suite.sh writes it apart; older runs mixed it into gpu.jsonl).
    sweep = read(out / "sweep.jsonl")
    if sweep:
        by_batch = {}
        for record in sweep:
            by_batch.setdefault(record["batch_size"], {}).update(
                {row: (speed, record["peak_gib"][row])
                 for row, speed in record["tokens_per_second"].items()}
            )
        rows = sorted({row for values in by_batch.values() for row in values})
        print("| paper size, TF32, batch | " + " | ".join(f"{row} tok/s (peak GiB)" for row in rows)
              + " |")
        print("|---|" + "---|" * len(rows))
        for batch in sorted(by_batch):
            values = by_batch[batch]
            cells = [f"{values[row][0]:,.0f} ({values[row][1]:.1f})" if row in values
                     else "does not fit" for row in rows]
            print(f"| {batch} | " + " | ".join(cells) + " |")


    indexing = out / "indexing.txt"
    if indexing.exists():
        lines = [line for line in indexing.read_text().splitlines()
                 if "Warning" not in line and "warn(" not in line]  # fmt: skip
        print("\n`indexing_speed.py` (one thread):\n\n```\n" + "\n".join(lines) + "\n```")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
