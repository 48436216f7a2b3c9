"""
The result numbers that README.md and docs/ quote, rendered from the data the experiments wrote,
so that a number has one source:

- `experiments/quality/where_elmo_c_wins.json`: the downstream runs of the biLMs pretrained with
  general fastText targets (`python -m experiments.quality.where_elmo_c_wins ... --summary`);
- `experiments/quality/where_elmo_c_wins_screen.json`: the same section's probe screen (each
  snapshot's linear probes, and each system against the cosine), extracted once from QUALITY.md's
  tables, which stay the record (a test checks that the two agree);
- `experiments/demo/result.json`: what the last `make demo` printed (a copy of its
  `data/runs/result.json`);
- `experiments/speed/precision/*_end_to_end*.json`: whole training steps in float32 and bfloat16
  against the peer (`python -m experiments.speed.run ... --e2e-precisions ... --out`);
- `experiments/quality/precision.json`: float32 against bfloat16 pretraining and downstream
  (`python -m experiments.quality.precision ... --summary`);
- `experiments/speed/cpus/avx2_epyc.json`: step and update times on a CPU without AVX-512,
  copied from the measurements its `source` names.

A rendered number sits between markers, over several lines or inside a sentence:

    <!-- numbers: NAME -->...<!-- /numbers -->

    python -m experiments.docs_numbers           # rewrite every block from the data
    python -m experiments.docs_numbers --check   # exit 1, naming each block that disagrees

`tests/experiments/test_docs_numbers.py` runs the check, so a block edited by hand or data
changed without a rerender fails CI.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from experiments.common.markers import markers, spans
from experiments.common.seeds import difference, mean_std_of, over_seeds, verdict
from experiments.quality.flair_choice import chosen_flair

PROJECT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md"] + sorted(
    str(path.relative_to(PROJECT)) for path in (PROJECT / "docs").glob("*.md")
)
WINS = PROJECT / "experiments" / "quality" / "where_elmo_c_wins.json"
SCREEN = PROJECT / "experiments" / "quality" / "where_elmo_c_wins_screen.json"
DEMO = PROJECT / "experiments" / "demo" / "result.json"
# Whole steps by precision, one run each: the GPU's, then one CPU core's at batch 16 and at 64
# (one process each: batch 64's peer does not fit in 24 GB beside batch 16's models).
PRECISION_SPEED = [PROJECT / "experiments" / "speed" / "precision" / name
                   for name in ("h200_end_to_end.json", "cpu_core_end_to_end_b16.json",
                                "cpu_core_end_to_end_b64.json")]  # fmt: skip
PRECISION_QUALITY = PROJECT / "experiments" / "quality" / "precision.json"
AVX2_CPU = PROJECT / "experiments" / "speed" / "cpus" / "avx2_epyc.json"
SCALE = PROJECT / "experiments" / "scale"
PROCESSES_THREADS = PROJECT / "experiments" / "speed" / "processes_threads.json"
FLAIR = PROJECT / "experiments" / "quality" / "flair_comparison.json"
# The later comparisons, one corpus and budget a file (`flair_comparison.py --section`
# flair-comparison-pos: the demo corpus, 10 CPU-minutes, NER and POS; flair-comparison-30min:
# 30; flair-comparison-8m: the quality runs' corpus, 30, NER and POS).
FLAIR_TASKS = tuple(PROJECT / "experiments" / "quality" / name
                    for name in ("flair_comparison_pos.json", "flair_comparison_30min.json",
                                  "flair_comparison_8m.json"))  # fmt: skip
# Whole float32 steps against allennlp-models' `language_model`, one CPU kind a file or two: the
# AMD EPYC's from the precision runs, the rest from `run.py --e2e-allennlp-peer-only`.
PEER_BY_CPU = PRECISION_SPEED[1:] + sorted((PROJECT / "experiments" / "speed" / "peer").glob("*.json"))
BLOCK = spans("numbers")

TASK_NAMES = {"ner": "NER, UNER EWT (F1)", "pos": "POS, Brown held-out genres",
              "sst5": "SST-5", "sentiment": "Rotten Tomatoes", "stsb": "STS-B, three bands"}  # fmt: skip
SHORT_TASK_NAMES = {"ner": "NER", "pos": "POS", "sst5": "SST-5", "sentiment": "Rotten Tomatoes",
                    "stsb": "STS-B"}  # fmt: skip
# The rows of the verdict tables: mine - theirs.
PAIR_NAMES = {"fasttext": "fastText only", "elmo_c_cosine": "cosine",
              "elmo_c_in_batch": "in-batch softmax", "elmo_a_whole": "ELMo-A"}  # fmt: skip
SYSTEM_NAMES = {"fasttext": "fastText only", "elmo_c_cosine": "ELMo-C, cosine",
                "elmo_c_in_batch": "ELMo-C, in-batch softmax", "elmo_a_whole": "ELMo-A",
                "elmo_c_vmf": "ELMo-C, vMF", "elmo_fixed": "FIXED"}  # fmt: skip
# The README's results table: fastText alone, then each biLM at this budget (minutes).
TABLE_MINUTES = 60.0
TABLE_SYSTEMS = ("fasttext", "elmo_c_cosine", "elmo_c_in_batch", "elmo_a_whole")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def cpu_of(data: dict) -> str:
    """The CPU of a quality run's data ("Intel Xeon Processor"), from its `machine` line."""
    return data["machine"].split(",")[0].replace("(R)", "")


def cell(row: dict, task: str) -> dict:
    return row["test"][task]


def row_of(data: dict, system: str, minutes: Optional[float]) -> dict:
    """`system`'s row at `minutes` of pretraining; fastText alone's (no pretraining) at any."""
    minutes = None if system == "fasttext" else minutes
    (row,) = [r for r in data["rows"] if r["system"] == system and r["minutes"] == minutes]
    return row


def rows_of(data: dict, system: str) -> List[dict]:
    """`system`'s rows, shortest pretraining first."""
    return sorted((r for r in data["rows"] if r["system"] == system), key=lambda r: r["minutes"])


def cells_against(data: dict, system: str, other: str,
                  tasks: Optional[Sequence[str]] = None) -> List[str]:  # fmt: skip
    """`system`'s verdict against `other` in every task-budget cell both were run in (of `tasks`,
    or every task)."""
    found = []
    for row in rows_of(data, system):
        theirs = row_of(data, other, row["minutes"])
        found += [verdict(cell(row, task), cell(theirs, task)) for task in tasks or data["tasks"]]
    return found


def count(verdicts: Sequence[str], which: str) -> str:
    return f"{sum(v == which for v in verdicts)} of {len(verdicts)}"


def counted(which: str, other: str, systems: Sequence[str],
            tasks: Optional[Sequence[str]] = None) -> Callable[[], str]:  # fmt: skip
    """A block: in how many task-budget cells (of `tasks`, or all) the `systems` are `which` of
    `other`, e.g. "3 of 10"."""

    def render() -> str:
        data = load(WINS)
        return count([v for system in systems for v in cells_against(data, system, other, tasks)],
                     which)  # fmt: skip

    return render


def joined(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def cells_where(which: str, system: str, other: str) -> Callable[[], str]:
    """A block: the task-budget cells in which `system` is `which` of `other`, e.g. "NER and
    STS-B after 10 minutes, POS after 60", or "none"."""

    def render() -> str:
        data = load(WINS)
        found = []
        for row in rows_of(data, system):
            theirs = row_of(data, other, row["minutes"])
            tasks = [SHORT_TASK_NAMES[task] for task in data["tasks"]
                     if verdict(cell(row, task), cell(theirs, task)) == which]  # fmt: skip
            if tasks:
                found.append(f"{joined(tasks)} after {row['minutes']:.0f}"
                             + (" minutes" if not found else ""))  # fmt: skip
        return ", ".join(found) or "none"

    return render


def verdict_table(pairs: Sequence[Tuple[str, str]]) -> Callable[[], str]:
    """A block: for each pair (mine, theirs) and budget, the difference of the test means per task
    and its verdict (ahead or behind: beyond twice the standard error of the difference)."""

    def render() -> str:
        data = load(WINS)
        lines = ["| mine - theirs, test, points | minutes | "
                 + " | ".join(SHORT_TASK_NAMES[t] for t in data["tasks"]) + " |",
                 "|---|---|" + "---|" * len(data["tasks"])]  # fmt: skip
        for system, other in pairs:
            for row in rows_of(data, system):
                theirs = row_of(data, other, row["minutes"])
                cells = []
                for task in data["tasks"]:
                    found, _ = difference(cell(row, task), cell(theirs, task))
                    which = verdict(cell(row, task), cell(theirs, task))
                    cells.append(f"{found:+.2f} " + (which if which == "within" else f"**{which}**"))
                lines.append(f"| {PAIR_NAMES[system]} - {PAIR_NAMES[other]} | "
                             f"{row['minutes']:.0f} | " + " | ".join(cells) + " |")  # fmt: skip
        return "\n".join(lines)

    return render


def quality_table() -> str:
    """The README's one results table: test score, mean ± std over the task model's seeds, of
    fastText alone and each biLM after `TABLE_MINUTES` of pretraining on one CPU core, and each
    biLM's pretraining speed."""
    data = load(WINS)
    rows = [row_of(data, s, None if s == "fasttext" else TABLE_MINUTES) for s in TABLE_SYSTEMS]
    lines = ["| task | " + " | ".join(SYSTEM_NAMES[s] for s in TABLE_SYSTEMS) + " |",
             "|---|" + "---|" * len(TABLE_SYSTEMS)]  # fmt: skip
    for task in data["tasks"]:
        cells = [mean_std_of(cell(row, task), count=False) for row in rows]
        lines.append(f"| {TASK_NAMES[task]} | " + " | ".join(cells) + " |")
    speeds = ["-" if row["tokens_per_second"] is None else f"{row['tokens_per_second']:,}"
              for row in rows]  # fmt: skip
    lines.append(f"| pretraining tokens/s, one core of an {cpu_of(data)} | " + " | ".join(speeds) + " |")
    return "\n".join(lines)


def speed_against(system: str, other: str) -> Callable[[], str]:
    """A block: `system`'s pretraining tokens/s over `TABLE_MINUTES` as a multiple of `other`'s."""

    def render() -> str:
        data = load(WINS)
        mine = row_of(data, system, TABLE_MINUTES)["tokens_per_second"]
        theirs = row_of(data, other, TABLE_MINUTES)["tokens_per_second"]
        return f"{mine / theirs:.1f}x"

    return render


# The probe screen (where_elmo_c_wins_screen.json): every snapshot against the cosine.
SCREEN_SYSTEMS = ("elmo_c_in_batch", "elmo_c_vmf", "elmo_a_whole", "elmo_fixed")
LOSSES = {"cosine": "elmo_c_cosine", "in_batch_softmax": "elmo_c_in_batch", "vmf": "elmo_c_vmf",
          "l2": None}  # fmt: skip


def against_reference(data: dict, system: str) -> List[dict]:
    """`system`'s screen comparisons with the cosine, shortest pretraining first."""
    return sorted((e for e in data["against_reference"] if e["system"] == system),
                  key=lambda e: e["minutes"])  # fmt: skip


def interval(found: dict) -> str:
    text = f"{found['difference']:+.2f} [{found['low']:+.2f}, {found['high']:+.2f}]"
    return text if found["verdict"] == "within" else f"{text} **{found['verdict']}**"


def screen_table() -> str:
    """Each system's mean probe score (dev) against the cosine's at each budget, with its 95%
    paired-bootstrap interval; a task family's comparison where it lies beyond its interval."""
    data = load(SCREEN)
    budgets = [e["minutes"] for e in against_reference(data, SCREEN_SYSTEMS[0])]
    lines = ["| against ELMo-C, cosine: mean probe score, points | "
             + " | ".join(f"{minutes:.0f} min" for minutes in budgets) + " |",
             "|---|" + "---|" * len(budgets)]  # fmt: skip
    for system in SCREEN_SYSTEMS:
        cells = []
        for entry in against_reference(data, system):
            cells.append("; ".join([interval(entry["all tasks"])] + [
                f"{family}: {interval(entry[family])}" for family in data["families"]
                if entry[family]["verdict"] != "within"]))  # fmt: skip
        lines.append(f"| {SYSTEM_NAMES[system]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def screen_beyond_interval() -> str:
    """In how many system-budget cells the mean probe score differs from the cosine's beyond its
    interval."""
    verdicts = [e["all tasks"]["verdict"] for e in load(SCREEN)["against_reference"]]
    return f"{sum(v != 'within' for v in verdicts)} of {len(verdicts)}"


def speed_of(data: dict, system: str) -> int:
    return row_of(data, system, TABLE_MINUTES)["tokens_per_second"]


def pretraining_speed() -> str:
    """Each system's pretraining tokens/s over `TABLE_MINUTES` on one core, fastest first, and as
    a multiple of ELMo-A's."""
    data = load(SCREEN)
    systems = sorted(("elmo_c_cosine",) + SCREEN_SYSTEMS, key=lambda s: -speed_of(data, s))
    elmo_a = speed_of(data, "elmo_a_whole")
    lines = [f"| system | tokens/s over {TABLE_MINUTES:.0f} minutes, one core of an {cpu_of(data)} "
             "| against ELMo-A |",
             "|---|---|---|"]  # fmt: skip
    for system in systems:
        lines.append(f"| {SYSTEM_NAMES[system]} | {speed_of(data, system):,} | "
                     f"{speed_of(data, system) / elmo_a:.1f}x |")  # fmt: skip
    return "\n".join(lines)


def losses_table() -> str:
    """Each loss of the continuous head against the cosine: on the screen at each budget (and any
    task family beyond its interval), downstream (the finalists), and its pretraining speed."""
    screen, wins = load(SCREEN), load(WINS)
    budgets = " / ".join(f"{e['minutes']:.0f}" for e in against_reference(screen, SCREEN_SYSTEMS[0]))
    lines = [f"| loss | screen against the cosine, mean probe score at {budgets} minutes | "
             "downstream against the cosine, test | "
             f"tokens/s over {TABLE_MINUTES:.0f} minutes, one core of an {cpu_of(screen)} |",
             "|---|---|---|---|"]  # fmt: skip
    for loss, system in LOSSES.items():
        if system is None:
            lines.append(f"| `{loss}` | not run | not run | not run |")
            continue
        speed = f"{speed_of(screen, system):,}"
        if system == screen["reference"]:
            lines.append(f"| `{loss}` | the reference | the reference | {speed} |")
            continue
        entries = against_reference(screen, system)
        found = " / ".join(e["all tasks"]["verdict"] for e in entries)
        found += "".join(f"; {family} probes {e[family]['verdict']} at {e['minutes']:.0f}"
                         for e in entries for family in screen["families"]
                         if e[family]["verdict"] != "within")  # fmt: skip
        if any(row["system"] == system for row in wins["rows"]):
            verdicts = cells_against(wins, system, screen["reference"])
            downstream = (f"ahead in {count(verdicts, 'ahead')} task-budget cells, "
                          f"behind in {sum(v == 'behind' for v in verdicts)}")  # fmt: skip
        else:
            downstream = "not run (not a finalist)"
        lines.append(f"| `{loss}` | {found} | {downstream} | {speed} |")
    return "\n".join(lines)


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
    """The demo's date and CPU: bfloat16 pretraining says the CPU has AVX-512's bfloat16 kernels
    (the demo takes bfloat16 only where `bfloat16_unsupported` finds them)."""
    result = load(DEMO)
    machine = result["machine"]
    units = " with AVX-512" if result["precision"] == "bfloat16" else ""
    return (f"{machine['date'][:10]}, a {machine['cpu_cores']}-core {machine['cpu']}{units}, "
            f"ELMo-C pretrained in {result['precision']}")


def avx2_demo_update() -> str:
    """A sentence: the demo's pretraining update on the CPU without AVX-512 (avx2_epyc.json's
    first row)."""
    data = load(AVX2_CPU)
    machine, row = data["machine"], data["rows"][0]
    cpu = re.sub(r",[^)]*\)", ")", machine["cpu"])
    return (f"On a {machine['cores']}-core {cpu}, {machine['vector_units']} ({machine['date']}), "
            f"an update of the demo's pretraining took {seconds(*row['seconds'])} s on "
            f"{row['threads']} threads shared with other jobs")


def precision_speed_table() -> str:
    """Whole paper-size training steps of ELMo-C in bfloat16 against its own float32 (and TF32 on
    a GPU) and against the float32 peer, from one run per machine: the ratio of the median steps
    and its range over the repeats."""
    lines = ["| machine | batch | ELMo-C float32 tok/s | ELMo-C bfloat16 tok/s | bfloat16 / float32 "
             "| bfloat16 / TF32 | bfloat16 / float32 peer |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for path in PRECISION_SPEED:
        data = load(path)
        machine = data["machine"]
        # bfloat16 whole steps on a CPU ran on oneDNN's AVX-512 kernels (`bfloat16_unsupported`).
        where = machine["gpu"] if machine.get("gpu") else f"{machine['cpu']} with AVX-512, one core"
        rows = [r for r in data["sections"]["end_to_end"] if r["size"] == "paper"]
        for batch in sorted({r["batch"] for r in rows}):
            found = {}
            for row in (r for r in rows if r["batch"] == batch):
                kind = "peer" if row["model"].startswith("peer") else row.get("precision", "float32")
                found[kind] = row

            def ratio(kind: str) -> str:
                row = found.get(kind)
                if row is None or row.get("bfloat16_speedup") is None:
                    return "-"
                low, high = row["bfloat16_speedup_range"]
                return f"{row['bfloat16_speedup']:.2f}x ({low:.2f}-{high:.2f})"

            lines.append(f"| {where} | {batch} | {found['float32']['tokens_per_s']:,.0f} | "
                         f"{found['bfloat16']['tokens_per_s']:,.0f} | {ratio('float32')} | "
                         f"{ratio('tf32')} | {ratio('peer')} |")  # fmt: skip
    return "\n".join(lines)


def precision_quality_table() -> str:
    """bfloat16 pretraining against float32 (experiments/quality/precision.py): the last
    validation of each pretraining seed and the downstream test scores of every task run, mean ±
    std, and the difference with its verdict (beyond twice its standard error, or within)."""
    data = load(PRECISION_QUALITY)
    lines = ["| measure | float32 | bfloat16 | bfloat16 - float32 |", "|---|---|---|---|"]
    measures = [(f"validation {key.replace('_', ' ')}", 1.0, 4,
                 {p: [run["curve"][-1][key] for run in runs] for p, runs in data["pretraining"].items()})
                for key in ("loss", "forward_cosine", "backward_cosine")]  # fmt: skip
    for task, by_precision in data["downstream"].items():
        measures.append((f"{SHORT_TASK_NAMES.get(task, task)} test", 100.0, 2,
                         {p: found["test"] for p, found in by_precision.items()}))  # fmt: skip
    for label, scale, digits, values in measures:
        mine, theirs = over_seeds(values["bfloat16"], scale), over_seeds(values["float32"], scale)
        found, spread = difference(mine, theirs)
        lines.append(f"| {label} | {mean_std_of(theirs, digits)} | {mean_std_of(mine, digits)} "
                     f"| {found:+.{digits}f} (spread {spread:.{digits}f}): {verdict(mine, theirs)} |")  # fmt: skip
    return "\n".join(lines)


def seconds(low: float, high: float) -> str:
    """A time as measured (`str` keeps the digits the data has), or its range."""
    return str(low) if low == high else f"{low}-{high}"


def avx2_cpu_table() -> str:
    """Update and step times on a CPU without AVX-512 (experiments/speed/cpus/avx2_epyc.json):
    one row a measurement, its threads and its seconds (a range where it was repeated under
    changing load)."""
    data = load(AVX2_CPU)
    machine = data["machine"]
    lines = [f"| on an {machine['cpu']}, {machine['vector_units']}, {machine['cores']} cores, "
             f"{machine['date']} | threads | seconds |", "|---|---|---|"]  # fmt: skip
    for row in data["rows"]:
        lines.append(f"| {row['what']} | {row['threads']} | {seconds(*row['seconds'])} |")
    return "\n".join(lines)


def at_user_scale_table() -> str:
    """The own-text path as the corpus grows (experiments/scale): the streamed run's peak memory
    at each size, the plan's errors and the runs' speed on quiet cores, and the 100M-token run
    (beside other work)."""
    memory, accuracy, at_size = (load(SCALE / name) for name in
                                 ("memory.json", "plan_accuracy.json", "at_size.json"))  # fmt: skip
    mib = 2**20
    streamed = [row for row in memory["rows"] if row["loader"] == "lm_stream"]
    peaks = ", ".join(f"{row['peak_memory_bytes'] / mib:,.0f} MiB at {row['tokens'] / 1e6:,.0f}M"
                      for row in streamed)  # fmt: skip
    errors = "; ".join(
        f"{row['tokens']:,} tokens: time {row['estimated_seconds'] / row['seconds'] - 1:+.0%}, "
        f"memory {row['estimated_peak_memory_bytes'] / row['peak_memory_bytes'] - 1:+.0%}"
        for row in accuracy["rows"])  # fmt: skip
    quiet = "; ".join(
        f"{row['tokens']:,} tokens: {row['seconds'] / row['updates_trained']:.2f} s an update, "
        f"{row['tokens'] / row['seconds']:,.0f} tokens/s" for row in accuracy["rows"])  # fmt: skip
    first = at_size["first"]
    lines = [f"| {memory['machine']}, `elmo_c_small` | measured |", "|---|---|",
             f"| peak memory of the same short run ({memory['date']}) | {peaks} |",
             f"| the plan against the whole run, quiet cores ({accuracy['date']}) | {errors} |",
             f"| the whole planned run's speed, quiet cores ({accuracy['date']}) | {quiet} |",
             f"| 100M tokens ({at_size['date']}, other work on the cores): first update, speed, "
             f"peak memory | {first['seconds_to_first_update']:.0f} s, "
             f"{first['tokens_per_second']:,.0f} tokens/s, {first['peak_memory_bytes'] / mib:,.0f} "
             "MiB |"]  # fmt: skip
    prepared = at_size["prepare_corpus"]
    if not prepared["skipped"]:
        cpu = prepared.get("cpu_seconds")
        took = (f"{cpu / 60:.0f} CPU-minutes ({prepared['seconds'] / 60:.0f} min beside other "
                "work)" if cpu else f"{prepared['seconds'] / 60:.0f} min")  # fmt: skip
        lines.append(f"| prepare-corpus of {prepared['train_tokens'] / 1e6:,.0f}M tokens: time, "
                     f"peak memory | {took}, {prepared['peak_memory_bytes'] / mib:,.0f} MiB |")
    return "\n".join(lines)


def processes_threads_table() -> str:
    """Small-size pretraining in P processes x T threads on one machine's cores
    (experiments/speed/processes_threads.py): tokens/s against the first layout, and the
    validation loss after the same tokens."""
    data = load(PROCESSES_THREADS)
    rows = data["rows"]
    lines = [f"| {data['machine']}, {data['date']}: processes x threads | total batch | tokens/s "
             f"| validation loss after {data['tokens']:,} tokens |", "|---|---|---|---|"]  # fmt: skip
    for row in rows:
        ratio = row["tokens_per_second"] / rows[0]["tokens_per_second"]
        lines.append(f"| {row['processes']} x {row['threads']} | {row['total_batch']} | "
                     f"{row['tokens_per_second']:,.0f} ({ratio:.2f}x) | "
                     f"{row['validation_loss']:.4f} |")  # fmt: skip
    return "\n".join(lines)


def peer_by_cpu_table() -> str:
    """ELMo-C's whole float32 training steps against allennlp-models' `language_model` (ELMo's
    character CNN, AllenNLP's `ElmoLstm`, a sampled softmax over 800K words), one thread, a row a
    CPU and size: each model's tokens/s and ELMo-C's lead, the ratio of the median steps timed in
    turn in one run (the range of the repeats' own ratios)."""
    lines = ["| CPU | size, batch | ELMo-C tok/s | peer tok/s | ELMo-C / peer | date |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for path in PEER_BY_CPU:
        data = load(path)
        machine = data["machine"]
        rows = data["sections"]["end_to_end"]
        cpu = machine["cpu"] + (" with AVX-512" if any(r.get("precision") == "bfloat16" for r in rows) else "")
        cpu += ", libraries capped at AVX2" if "instruction_set_cap" in data else ""
        ours = next(r for r in rows if r["model"] == "ELMo-C" and r["precision"] == "float32")
        peer = next(r for r in rows if r["model"].startswith("peer"))
        if "elmo_c_speedup" in peer:
            low, high = peer["elmo_c_speedup_range"]
            lead = f"{peer['elmo_c_speedup']:.2f}x ({low:.2f}-{high:.2f})"
        else:
            lead = f"{ours['tokens_per_s'] / peer['tokens_per_s']:.2f}x"
        lines.append(f"| {cpu} | {ours['size']}, {ours['batch']} | {ours['tokens_per_s']:,.0f} | "
                     f"{peer['tokens_per_s']:,.0f} | {lead} | {machine['date'][:10]} |")  # fmt: skip
    return "\n".join(lines)


README_TASKS = {"ner": "NER F1, UNER EWT"}
QUALITY_LINK = "docs/choosing-a-bilm.md#quality-what-each-bilm-is-good-for"
FLAIR_LINK = "docs/choosing-a-bilm.md#elmo-c-or-flair"
PEER_LINK = "docs/pretraining.md#on-cpu"
AVX2_CAPPED_PEER = PROJECT / "experiments" / "speed" / "peer" / "intel_xeon_amx_avx2_capped_paper_b16.json"


def peer_row(path: Path, size: str, batch: int) -> Tuple[dict, dict, str]:
    """ELMo-C's float32 and the peer's whole-step rows of a PEER_BY_CPU file at `size` and
    `batch`, and its CPU: with AVX-512 where the file has bfloat16 steps (their kernels need it),
    and the instruction set the libraries were capped at, if any."""
    data = load(path)
    rows = [r for r in data["sections"]["end_to_end"] if r["size"] == size and r["batch"] == batch]
    ours = next(r for r in rows if r["model"] == "ELMo-C" and r.get("precision", "float32") == "float32")
    peer = next(r for r in rows if r["model"].startswith("peer"))
    cpu = data["machine"]["cpu"].replace("(R)", "")
    if any(r.get("precision") == "bfloat16" for r in rows):
        cpu += " with AVX-512"
    if "instruction_set_cap" in data:
        cpu += ", torch's libraries capped at AVX2"
    return ours, peer, cpu


def readme_results() -> str:
    """The README's compact results: NER of the in-batch softmax biLM against ELMo-A and
    fastText alone after `TABLE_MINUTES` on one core, against Flair's character LMs at 10
    CPU-minutes, the pretraining speed, and whole paper-size steps against allennlp-models' ELMo
    LM on a CPU with AVX-512 and with the libraries capped at AVX2; each row links its table."""
    wins = load(WINS)
    at = {system: row_of(wins, system, TABLE_MINUTES) for system in TABLE_SYSTEMS}
    cpu = cpu_of(wins)
    lines = ["| measured (its full table) | ELMo-C, in-batch softmax | compared with |", "|---|---|---|"]
    for task in ("ner",):
        found = {s: mean_std_of(cell(row, task), count=False) for s, row in at.items()}
        lines.append(f"| [{README_TASKS[task]}]({QUALITY_LINK}), after {TABLE_MINUTES:.0f} min "
                     f"on one core | {found['elmo_c_in_batch']} | ELMo-A {found['elmo_a_whole']}; "
                     f"fastText alone {found['fasttext']} |")  # fmt: skip
    flair = load(FLAIR)
    (minutes, _, mine, theirs), = [p for p in against_flair(flair, "ner")
                                   if p[0] == "10" and p[1] == "elmo_c_in_batch"]  # fmt: skip
    hidden = chosen_flair(flair, minutes, "ner").split("_")[1]
    lines.append(f"| [{README_TASKS['ner']}]({FLAIR_LINK}), after {minutes} CPU-minutes | "
                 f"{mean_std_of(mine, count=False)} | Flair's character LMs (hidden {hidden}) "
                 f"{mean_std_of(theirs, count=False)} |")  # fmt: skip
    lines.append(f"| [pretraining tokens/s]({QUALITY_LINK}), demo size, one core of an {cpu} | "
                 f"{at['elmo_c_in_batch']['tokens_per_second']:,} | ELMo-A "
                 f"{at['elmo_a_whole']['tokens_per_second']:,} |")  # fmt: skip
    for path in (PRECISION_SPEED[1], AVX2_CAPPED_PEER):
        ours, peer, where = peer_row(path, "paper", 16)
        lines.append(f"| [training tokens/s]({PEER_LINK}), paper size, one thread of an {where} | "
                     f"{ours['tokens_per_s']:,.0f} | allennlp-models' ELMo LM "
                     f"{peer['tokens_per_s']:,.0f} |")  # fmt: skip
    return "\n".join(lines)


FLAIR_ELMO = ("elmo_c_in_batch", "elmo_c_cosine")


def flair_cells(data: dict, task: str = "ner") -> List[Tuple[str, str, dict]]:
    """`(system, budget, cell)` of a Flair comparison's table of `task`, fastText alone first."""
    return [(system, minutes, cell[task]) for system, cells in data["cells"].items()
            for minutes, cell in sorted(cells.items(), key=lambda item: float(item[0]))]  # fmt: skip


def against_flair(data: dict, task: str) -> List[Tuple[str, str, dict, dict]]:
    """`(budget, system, mine, theirs)` test summaries on `task`: each ELMo-C system of
    `FLAIR_ELMO` in the table against the Flair size chosen on `task`'s dev at that budget."""
    tested = {(system, minutes): cell for system, minutes, cell in flair_cells(data, task)}
    pairs = []
    for minutes in (f"{m:g}" for m in data["minutes"]):
        theirs = tested[(chosen_flair(data, minutes, task), minutes)]["test"]
        for system in (s for s in FLAIR_ELMO if (s, minutes) in tested):
            pairs.append((minutes, system, over_seeds(tested[(system, minutes)]["test"]),
                          over_seeds(theirs)))  # fmt: skip
    return pairs


def words_read(data: dict) -> Dict[Tuple[str, str], List[float]]:
    """The words each `(system, budget)` of a Flair comparison read per direction, over its
    pretraining seeds and directions."""
    words = {}
    for entry in data["pretraining"]:
        words.setdefault((entry["system"], f"{entry['minutes']:g}"), []).extend(entry["words_per_direction"])
    return words


def corpus_passes(data: dict) -> Dict[Tuple[str, str], float]:
    """How many times each `(system, budget)` of a Flair comparison read its corpus per
    direction (the mean of `words_read` over the corpus's tokens)."""
    tokens = data["corpus"]["train_tokens"]
    return {key: statistics.mean(words) / tokens for key, words in words_read(data).items()}


def flair_table() -> str:
    """The Flair comparison (experiments/quality/flair_comparison.json): each system's NER test
    F1 at each CPU-time budget, the words it read per direction, and its difference from
    fastText alone with twice the standard error."""
    data = load(FLAIR)
    words = words_read(data)
    baseline = over_seeds(data["cells"]["fasttext"]["0"]["ner"]["test"])
    lines = ["| embeddings beside fastText in the tagger | CPU-minutes of pretraining | words read "
             "per direction | NER test F1 | − fastText only (± 2 SE) |", "|---|---|---|---|---|"]  # fmt: skip
    for system, minutes, cell in flair_cells(data):
        found = over_seeds(cell["test"])
        if system == "fasttext":
            lines.append(f"| none (fastText only) | - | - | {mean_std_of(found)} | - |")
            continue
        seen = words[(system, minutes)]
        gap, spread = difference(found, baseline)
        lines.append(f"| {data['systems'][system]} | {minutes} | {sum(seen) / len(seen):,.0f} | "
                     f"{mean_std_of(found)} | {gap:+.2f} ± {spread:.2f} |")  # fmt: skip
    return "\n".join(lines)


def flair_lead() -> str:
    """ELMo-C against Flair's character LMs (the size chosen on dev) at each budget: in how many
    of the loss-budget pairs it is ahead beyond twice the standard error, and the range of the
    differences in test F1."""
    pairs = against_flair(load(FLAIR), "ner")
    gaps = [difference(mine, theirs)[0] for _, _, mine, theirs in pairs]
    ahead = sum(verdict(mine, theirs) == "ahead" for _, _, mine, theirs in pairs)
    return (f"ahead in {ahead} of {len(gaps)} loss-budget pairs, by {min(gaps):+.1f} to "
            f"{max(gaps):+.1f} F1")


def flair_tasks_lead() -> str:
    """The later Flair comparisons, corpus by corpus and budget by budget: the passes over the
    corpus that ELMo-C's and Flair's pretraining made per direction, and per task ELMo-C minus
    Flair (the size chosen on that task's dev) in test points, with twice the standard error and
    the verdict."""
    budgets = {}
    for data in map(load, FLAIR_TASKS):
        tokens, passes = data["corpus"]["train_tokens"], corpus_passes(data)
        for task in data["tasks"]:
            for minutes, system, mine, theirs in against_flair(data, task):
                flair = chosen_flair(data, minutes, task)
                gap, spread = difference(mine, theirs)
                found = budgets.setdefault((tokens, float(minutes)), {"passes": set(), "tasks": []})
                found["passes"].add((passes[(system, minutes)], passes[(flair, minutes)]))
                found["tasks"].append(f"{SHORT_TASK_NAMES[task]} {gap:+.1f} ± {spread:.1f} "
                                      f"({verdict(mine, theirs)})")  # fmt: skip
    parts, corpus = [], None
    for (tokens, minutes), found in sorted(budgets.items()):
        read = "; ".join(f"ELMo-C read the corpus {mine:.2g} times per direction, Flair {theirs:.2g}"
                         for mine, theirs in sorted(found["passes"]))  # fmt: skip
        named = "" if tokens == corpus else f"{tokens:,}-token corpus, "
        corpus = tokens
        parts.append(f"{named}{minutes:g} CPU-minutes ({read}): " + ", ".join(found["tasks"]))
    return "; ".join(parts)


BILMS = ("elmo_c_in_batch", "elmo_c_cosine", "elmo_a_whole")
SENTIMENT = ("sst5", "sentiment")
BLOCKS: Dict[str, Callable[[], str]] = {
    "quality-table": quality_table,
    "verdicts-bilms": verdict_table([("elmo_c_in_batch", "elmo_c_cosine"),
                                     ("elmo_c_in_batch", "elmo_a_whole"),
                                     ("elmo_c_cosine", "elmo_a_whole")]),  # fmt: skip
    "verdicts-fasttext": verdict_table([(system, "fasttext") for system in BILMS]),
    "in-batch-ahead-of-cosine": counted("ahead", "elmo_c_cosine", ["elmo_c_in_batch"]),
    "in-batch-behind-cosine": counted("behind", "elmo_c_cosine", ["elmo_c_in_batch"]),
    "in-batch-ahead-of-elmo-a": counted("ahead", "elmo_a_whole", ["elmo_c_in_batch"]),
    "in-batch-behind-elmo-a": counted("behind", "elmo_a_whole", ["elmo_c_in_batch"]),
    "cosine-behind-elmo-a": counted("behind", "elmo_a_whole", ["elmo_c_cosine"]),
    "cosine-ahead-of-elmo-a": counted("ahead", "elmo_a_whole", ["elmo_c_cosine"]),
    "cosine-behind-elmo-a-where": cells_where("behind", "elmo_c_cosine", "elmo_a_whole"),
    "bilms-ahead-of-fasttext-on-sentiment": counted("ahead", "fasttext", BILMS, SENTIMENT),
    "bilms-behind-fasttext-on-sentiment": counted("behind", "fasttext", BILMS, SENTIMENT),
    "in-batch-speed-against-elmo-a": speed_against("elmo_c_in_batch", "elmo_a_whole"),
    "cosine-speed-against-elmo-a": speed_against("elmo_c_cosine", "elmo_a_whole"),
    "screen-table": screen_table,
    "screen-beyond-interval": screen_beyond_interval,
    "pretraining-speed": pretraining_speed,
    "losses-table": losses_table,
    "demo-result": demo_result,
    "demo-machine": demo_machine,
    "avx2-demo-update": avx2_demo_update,
    "readme-results": readme_results,
    "precision-speed": precision_speed_table,
    "precision-quality": precision_quality_table,
    "avx2-cpu": avx2_cpu_table,
    "at-user-scale": at_user_scale_table,
    "processes-threads": processes_threads_table,
    "peer-by-cpu": peer_by_cpu_table,
    "flair-table": flair_table,
    "flair-lead": flair_lead,
    "flair-tasks-lead": flair_tasks_lead,
}


def rendered(text: str, missing: Optional[List[str]] = None) -> str:
    """`text` with every block rendered from the data; a block over several lines keeps its
    content on lines of its own. With a `missing` list, a block whose data file does not exist is
    left as it is and named there; without one, that is an error."""

    def render(found: re.Match) -> str:
        name, old = found.group(1), found.group(2)
        if name not in BLOCKS:
            raise KeyError(f"unknown numbers block {name!r}: one of {', '.join(BLOCKS)}")
        try:
            new = BLOCKS[name]()
        except FileNotFoundError as error:
            if missing is None:
                raise
            missing.append(f"{name} ({error.filename} is missing)")
            return found.group(0)
        if "\n" in old or "\n" in new:
            new = f"\n{new}\n"
        begin, end = markers(name, "numbers")
        return f"{begin}{new}{end}"

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
    missing: List[str] = []
    for name in DOCUMENTS:
        path = PROJECT / name
        text = path.read_text(encoding="utf-8")
        new = rendered(text, missing)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rendered {name}")
    if missing:
        sys.exit("not rendered, their data missing:\n" + "\n".join(sorted(set(missing))))


if __name__ == "__main__":
    main()
