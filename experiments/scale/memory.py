"""
Peak memory of the same short pretraining run (`training_config/elmo_c_small.jsonnet`, a few
updates) on corpora of growing size: the streamed loader the configs use (`lm_stream`) against
AllenNLP's default loader without `max_instances_in_memory` (every window in memory), which the
small config used before. Each run is the `plan` command's short run, so the same table also
gives the time to the first update and the seconds per update.

    python -m experiments.scale.memory --source data/news/train.txt \\
        --fasttext data/fasttext/news.100d.bin --validation data/news/dev.txt \\
        --tokens 1e6 1e7 1e8 --in-memory-tokens 1e6 1e7 --work-dir /tmp/scale

The corpora are the source text repeated (and cut) to the number of tokens asked for: for memory
and speed the text's quality does not matter; the report says so. Writes `memory.json` and the
table of SCALE.md (between its markers) beside this file.
"""

import argparse
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Sequence

from allennlp_elmo_c.commands.plan import plan
from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
CONFIG = PROJECT / "training_config" / "elmo_c_small.jsonnet"
BEGIN, END = markers("memory-table")
# AllenNLP's default loader, every window read and kept before the first batch.
IN_MEMORY = {"data_loader": {"type": "multiprocess", "batch_size": 64, "shuffle": True,
                             "max_instances_in_memory": None}}


def repeated_corpus(source: Path, tokens: int, directory: Path) -> Path:
    """`source`'s lines repeated, in order, until the file holds `tokens` whitespace tokens (the
    last repeat cut at a line end); made once."""
    path = directory / f"repeated_{tokens}.txt"
    if path.is_file():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    partial = path.with_name(path.name + ".partial")
    written = 0
    with open(partial, "w", encoding="utf-8") as out:
        while written < tokens:
            for line in lines:
                out.write(line)
                written += len(line.split())
                if written >= tokens:
                    break
    os.replace(partial, path)
    return path


def measure(args: argparse.Namespace) -> List[Dict[str, Any]]:
    ext_vars = {"ELMO_C_FASTTEXT": str(args.fasttext),
                "ELMO_C_VALIDATION_DATA": str(args.validation)}  # fmt: skip
    rows = []
    for loader, sizes, overrides in (("lm_stream", args.tokens, {}),
                                     ("in memory", args.in_memory_tokens, IN_MEMORY)):  # fmt: skip
        for tokens in sizes:
            corpus = repeated_corpus(args.source, int(tokens), args.work_dir)
            result = plan(str(corpus), str(CONFIG), json.dumps({**args.overrides, **overrides}),
                          args.updates,
                          ext_vars, str(args.work_dir))  # fmt: skip
            rows.append({"loader": loader, "tokens": result["tokens"],
                         "peak_memory_bytes": result["peak_memory_bytes"],
                         "seconds_to_first_update": result["seconds_to_first_update"],
                         "seconds_per_update": result["seconds_per_update"],
                         "updates_per_epoch": result["updates_per_epoch"]})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    return rows


def render(record: Dict[str, Any]) -> str:
    rows = record["rows"]
    smallest = {loader: min(r["peak_memory_bytes"] for r in rows if r["loader"] == loader)
                for loader in {r["loader"] for r in rows}}  # fmt: skip
    lines = [
        BEGIN,
        f"{record['machine']}, {record['date']}; `elmo_c_small.jsonnet`, {record['updates']} timed "
        f"updates after 2, one thread; corpora: {record['source']} repeated to size.",
        "",
        *([record["note"], ""] if record.get("note") else []),
        "| loader | corpus tokens | updates an epoch | peak RSS | vs the smallest | first update | "
        "s / update |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['loader']} | {row['tokens']:,} | {row['updates_per_epoch']:,} | "
            f"{row['peak_memory_bytes'] / 2**20:,.0f} MiB | "
            f"+{(row['peak_memory_bytes'] - smallest[row['loader']]) / 2**20:,.0f} MiB | "
            f"{row['seconds_to_first_update']:.0f} s | {row['seconds_per_update']:.3f} |"
        )
    return "\n".join(lines + [END])


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="text to repeat")
    parser.add_argument("--fasttext", type=Path, required=True, help="a 100-d fastText .bin")
    parser.add_argument("--validation", type=Path, required=True)
    parser.add_argument("--tokens", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    parser.add_argument("--in-memory-tokens", type=float, nargs="*", default=[1e6, 1e7])
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--overrides", type=json.loads, default={}, help="JSON, as for train")
    parser.add_argument("--out", type=Path, default=HERE / "memory.json")
    parser.add_argument("--report", type=Path, default=HERE / "SCALE.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    record = {"machine": machine(), "date": _today(), "updates": args.updates,
              "source": args.source.name, "rows": measure(args)}  # fmt: skip
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    replace_section(args.report, BEGIN, END, render(record))


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


if __name__ == "__main__":
    main()
