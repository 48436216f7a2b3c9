"""
The result numbers that README.md and docs/ quote, rendered from the data the experiments wrote,
so that a number has one source:

- `experiments/quality/where_elmo_c_wins.json`: the downstream runs of the biLMs pretrained with
  general fastText targets (`python -m experiments.quality.where_elmo_c_wins ... --summary`);
- `experiments/quality/where_elmo_c_wins_screen.json`: the same section's probe screen (each
  snapshot's linear probes, and each system against the cosine), extracted once from QUALITY.md's
  tables, which stay the record (a test checks that the two agree);
- `experiments/demo/result.json`: what the last `make demo` printed (a copy of its
  `data/runs/result.json`).

A rendered number sits between markers, over several lines or inside a sentence:

    <!-- numbers: NAME -->...<!-- /numbers -->

    python -m experiments.docs_numbers           # rewrite every block from the data
    python -m experiments.docs_numbers --check   # exit 1, naming each block that disagrees

`tests/experiments/test_docs_numbers.py` runs the check, so a block edited by hand or data
changed without a rerender fails CI.
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

PROJECT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md"] + sorted(
    str(path.relative_to(PROJECT)) for path in (PROJECT / "docs").glob("*.md")
)
WINS = PROJECT / "experiments" / "quality" / "where_elmo_c_wins.json"
SCREEN = PROJECT / "experiments" / "quality" / "where_elmo_c_wins_screen.json"
DEMO = PROJECT / "experiments" / "demo" / "result.json"
BLOCK = re.compile(r"<!-- numbers: ([\w-]+) -->(.*?)<!-- /numbers -->", re.S)

TASK_NAMES = {"ner": "NER, UNER EWT (F1)", "pos": "POS, Brown held-out genres",
              "sst5": "SST-5", "sentiment": "Rotten Tomatoes", "stsb": "STS-B, three bands"}  # fmt: skip
SYSTEM_NAMES = {"fasttext": "fastText only", "elmo_c_cosine": "ELMo-C, cosine",
                "elmo_c_in_batch": "ELMo-C, in-batch softmax", "elmo_a_whole": "ELMo-A"}  # fmt: skip
# The README's results table: fastText alone, then each biLM at this budget (minutes).
TABLE_MINUTES = 60.0
TABLE_SYSTEMS = ("fasttext", "elmo_c_cosine", "elmo_c_in_batch", "elmo_a_whole")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def cell(row: dict, task: str) -> dict:
    return row["test"][task]


def row_of(data: dict, system: str, minutes: Optional[float]) -> dict:
    (row,) = [r for r in data["rows"] if r["system"] == system and r["minutes"] == minutes]
    return row


def difference(mine: dict, theirs: dict) -> Tuple[float, float]:
    """The difference of two cells' means and twice its standard error over the seeds,
    2 sqrt(s1^2 / n1 + s2^2 / n2): beyond it either way is ahead or behind, else within."""
    spread = 2 * math.sqrt(mine["std"] ** 2 / mine["n"] + theirs["std"] ** 2 / theirs["n"])
    return mine["mean"] - theirs["mean"], spread


def verdict(mine: dict, theirs: dict) -> str:
    found, spread = difference(mine, theirs)
    return "ahead" if found > spread else "behind" if found < -spread else "within"


def cells_against(data: dict, system: str, other: str) -> List[str]:
    """`system`'s verdict against `other` in every task-budget cell both were run in."""
    found = []
    for row in data["rows"]:
        if row["system"] != system:
            continue
        theirs = row_of(data, other, row["minutes"])
        found += [verdict(cell(row, task), cell(theirs, task)) for task in data["tasks"]]
    return found


def count(verdicts: Sequence[str], which: str) -> str:
    return f"{sum(v == which for v in verdicts)} of {len(verdicts)}"


def mean_std(found: dict) -> str:
    return f"{found['mean']:.2f} ± {found['std']:.2f}"


def quality_table() -> str:
    """The README's one results table: test score, mean ± std over the task model's seeds, of
    fastText alone and each biLM after `TABLE_MINUTES` of pretraining on one CPU core, and each
    biLM's pretraining speed."""
    data = load(WINS)
    rows = [row_of(data, s, None if s == "fasttext" else TABLE_MINUTES) for s in TABLE_SYSTEMS]
    lines = ["| task | " + " | ".join(SYSTEM_NAMES[s] for s in TABLE_SYSTEMS) + " |",
             "|---|" + "---|" * len(TABLE_SYSTEMS)]  # fmt: skip
    for task in data["tasks"]:
        best = max(cell(row, task)["mean"] for row in rows)
        cells = []
        for row in rows:
            text = mean_std(cell(row, task))
            cells.append(f"**{text}**" if cell(row, task)["mean"] == best else text)
        lines.append(f"| {TASK_NAMES[task]} | " + " | ".join(cells) + " |")
    speeds = ["-" if row["tokens_per_second"] is None else f"{row['tokens_per_second']:,}"
              for row in rows]  # fmt: skip
    lines.append("| pretraining tokens/s, one core | " + " | ".join(speeds) + " |")
    return "\n".join(lines)


def in_batch_ahead_of_cosine() -> str:
    return count(cells_against(load(WINS), "elmo_c_in_batch", "elmo_c_cosine"), "ahead")


def in_batch_behind_elmo_a() -> str:
    return count(cells_against(load(WINS), "elmo_c_in_batch", "elmo_a_whole"), "behind")


def cosine_behind_elmo_a() -> str:
    return count(cells_against(load(WINS), "elmo_c_cosine", "elmo_a_whole"), "behind")


def in_batch_speed_against_elmo_a() -> str:
    data = load(WINS)
    mine = row_of(data, "elmo_c_in_batch", TABLE_MINUTES)["tokens_per_second"]
    theirs = row_of(data, "elmo_a_whole", TABLE_MINUTES)["tokens_per_second"]
    return f"{mine / theirs:.1f}x"


def demo_result() -> str:
    """`make demo`'s last lines as it printed them (experiments/demo/main.py's table)."""
    result = load(DEMO)
    accuracies, baseline = result["test_accuracy"], result["baseline"]
    lines = ["```text", f"== result (demo took {result['minutes']:.1f} min)",
             "  | input of the tagger | test accuracy | errors |", "  |---|---|---|"]  # fmt: skip
    for name, accuracy in accuracies.items():
        change = "" if name == baseline else (
            f" ({(1 - accuracy) / (1 - accuracies[baseline]) - 1:+.0%} vs fastText only)"
        )  # fmt: skip
        lines.append(f"  | {name} | {100 * accuracy:.2f}% | {100 * (1 - accuracy):.2f}%{change} |")
    return "\n".join(lines + ["```"])


def demo_machine() -> str:
    machine = load(DEMO)["machine"]
    return f"{machine['date'][:10]}, {machine['cpu']}, {machine['cpu_cores']} cores"


BLOCKS: Dict[str, Callable[[], str]] = {
    "quality-table": quality_table,
    "in-batch-ahead-of-cosine": in_batch_ahead_of_cosine,
    "in-batch-behind-elmo-a": in_batch_behind_elmo_a,
    "cosine-behind-elmo-a": cosine_behind_elmo_a,
    "in-batch-speed-against-elmo-a": in_batch_speed_against_elmo_a,
    "demo-result": demo_result,
    "demo-machine": demo_machine,
}


def rendered(text: str) -> str:
    """`text` with every block rendered from the data; a block over several lines keeps its
    content on lines of its own."""

    def render(found: re.Match) -> str:
        name, old = found.group(1), found.group(2)
        if name not in BLOCKS:
            raise KeyError(f"unknown numbers block {name!r}: one of {', '.join(BLOCKS)}")
        new = BLOCKS[name]()
        if "\n" in old or "\n" in new:
            new = f"\n{new}\n"
        return f"<!-- numbers: {name} -->{new}<!-- /numbers -->"

    return BLOCK.sub(render, text)


def disagreements(documents: Sequence[str] = DOCUMENTS) -> List[str]:
    """`document: block` for every block whose text is not what its data renders."""
    found = []
    for name in documents:
        text = (PROJECT / name).read_text(encoding="utf-8")
        new = rendered(text)
        if new != text:
            for before, after in zip(BLOCK.finditer(text), BLOCK.finditer(new)):
                if before.group(0) != after.group(0):
                    found.append(f"{name}: {before.group(1)}")
    return found


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 naming each block that disagrees with its data")  # fmt: skip
    args = parser.parse_args(argv)
    if args.check:
        found = disagreements()
        if found:
            sys.exit("rendered from data, these differ (run python -m experiments.docs_numbers):\n"
                     + "\n".join(found))  # fmt: skip
        return
    for name in DOCUMENTS:
        path = PROJECT / name
        text = path.read_text(encoding="utf-8")
        new = rendered(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rendered {name}")


if __name__ == "__main__":
    main()
