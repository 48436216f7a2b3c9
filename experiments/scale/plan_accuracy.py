"""
How close `plan`'s estimates come to the runs they estimate: for each corpus, the plan of
`training_config/elmo_c_small.jsonnet` (its short run), then the whole run it plans (one epoch,
validation included, with the `update_timings` callback), and the estimate's error in time and
peak memory.

    python -m experiments.scale.plan_accuracy --corpus data/news/train.txt /tmp/scale/c1m.txt \\
        --fasttext data/fasttext/news.100d.bin --validation data/news/dev.txt --work-dir /tmp/scale

Writes `plan_accuracy.json` and the table of SCALE.md (between its markers) beside this file.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from allennlp_elmo_c.commands.plan import plan
from allennlp_elmo_c.training.update_timings import TIMINGS
from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section
from experiments.common.training import timed_overrides

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
CONFIG = PROJECT / "training_config" / "elmo_c_small.jsonnet"
BEGIN, END = markers("plan-accuracy-table")
# The same table of a record measured while other work shared the cores (`--busy`).
BUSY_BEGIN, BUSY_END = markers("plan-accuracy-busy-table")


def full_run(corpus: Path, ext_vars: Dict[str, str], overrides: Dict[str, Any],
             run_dir: Path) -> Dict[str, Any]:  # fmt: skip
    """The planned run itself (the small config's callbacks and the timings callback): wall
    seconds from its start to its end, and its peak memory."""
    environment = {**os.environ, **ext_vars, "ELMO_C_TRAIN_DATA": str(corpus)}
    _, overrides = timed_overrides(CONFIG, overrides, environment)
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(CONFIG), "-s", str(run_dir),
               "-o", json.dumps(overrides), "--file-friendly-logging"]
    started = time.time()
    subprocess.run(command, env=environment, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    seconds = time.time() - started
    timings = json.loads((run_dir / TIMINGS).read_text())
    return {"seconds": seconds, "updates": len(timings["update_ends"]),
            "peak_memory_bytes": timings["peak_rss_bytes"]}  # fmt: skip


def measure(args: argparse.Namespace) -> List[Dict[str, Any]]:
    ext_vars = {"ELMO_C_FASTTEXT": str(args.fasttext),
                "ELMO_C_VALIDATION_DATA": str(args.validation)}  # fmt: skip
    rows = []
    for number, corpus in enumerate(args.corpus):
        estimate = plan(str(corpus), str(CONFIG), json.dumps(args.overrides), args.updates,
                        ext_vars, str(args.work_dir))  # fmt: skip
        actual = full_run(corpus, ext_vars, args.overrides, args.work_dir / f"run_{number}")
        rows.append({
            "corpus": corpus.name, "tokens": estimate["tokens"], "updates": estimate["updates"],
            "updates_trained": actual["updates"],
            "estimated_seconds": estimate["estimated_seconds"], "seconds": actual["seconds"],
            "estimated_peak_memory_bytes": estimate["peak_memory_bytes"],
            "peak_memory_bytes": actual["peak_memory_bytes"],
        })  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    return rows


def render(record: Dict[str, Any], begin: str = BEGIN, end: str = END) -> str:
    lines = [
        begin,
        f"{record['machine']}, {record['date']}; `elmo_c_small.jsonnet`, one epoch; the plan "
        f"timed {record['updates']} updates after 2. {record['conditions']}",
        "",
        "| corpus | tokens | updates (planned / trained) | time, estimated | time, measured | "
        "error | peak RSS, estimated | peak RSS, measured | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in record["rows"]:
        time_error = row["estimated_seconds"] / row["seconds"] - 1
        memory_error = row["estimated_peak_memory_bytes"] / row["peak_memory_bytes"] - 1
        lines.append(
            f"| {row['corpus']} | {row['tokens']:,} | {row['updates']:,} / "
            f"{row['updates_trained']:,} | {row['estimated_seconds'] / 60:.1f} min | "
            f"{row['seconds'] / 60:.1f} min | {time_error:+.0%} | "
            f"{row['estimated_peak_memory_bytes'] / 2**20:,.0f} MiB | "
            f"{row['peak_memory_bytes'] / 2**20:,.0f} MiB | {memory_error:+.0%} |"
        )
    return "\n".join(lines + [end])


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--corpus", type=Path, nargs="+", required=True)
    parser.add_argument("--fasttext", type=Path, required=True, help="a 100-d fastText .bin")
    parser.add_argument("--validation", type=Path, required=True)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--overrides", type=json.loads, default={}, help="JSON, as for train")
    parser.add_argument("--conditions", default="", help="what else ran on the machine")
    parser.add_argument("--busy", action="store_true",
                        help="other work shares the cores: write plan_accuracy_busy.json's table")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=HERE / "SCALE.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import datetime

    record = {"machine": machine(), "date": datetime.date.today().isoformat(),
              "updates": args.updates, "conditions": args.conditions, "rows": measure(args)}  # fmt: skip
    markers = (BUSY_BEGIN, BUSY_END) if args.busy else (BEGIN, END)
    out = args.out or HERE / ("plan_accuracy_busy.json" if args.busy else "plan_accuracy.json")
    out.write_text(json.dumps(record, indent=2) + "\n")
    replace_section(args.report, *markers, render(record, *markers))


if __name__ == "__main__":
    main()
