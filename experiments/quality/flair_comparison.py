"""
ELMo-C against Flair's contextual string embeddings at equal CPU time: for the same corpus and
the same CPU-seconds of pretraining per system, which embeddings give the better tagger?

    python -m experiments.quality.flair_comparison --data-dir data --out /work/flair_cmp \
        --corpus-dir data/news --fasttext-bin data/fasttext/news.100d.bin \
        --shared-data ../shared/data --minutes 5,15 --pretrain-seeds 2 --seeds 3 \
        --json /work/flair_cmp/flair_comparison.json --report experiments/quality/QUALITY.md

Systems (`--systems`, in the order they run), each pretrained on one thread to each of
`--minutes` CPU-minutes (`time.process_time` of the training, not wall time: a busy machine
does not shrink a budget), with `--pretrain-seeds` seeds at the largest budget (and at
`--pretrain-seeds-at`) and the first seed at the others:
- `flair_H`: Flair's forward and backward character LMs (1 layer of H units, e.g. `flair_512`,
  `flair_1024`), trained with Flair's `LanguageModelTrainer` and its defaults, each direction
  for half the budget (`flair_lm.py`);
- `elmo_c_cosine`, `elmo_c_in_batch`, `elmo_a_whole`: `per_minute.py`'s systems (the demo
  encoder, the cosine loss, the in-batch softmax, ELMo-A's adaptive softmax), trained by
  `per_minute.pretrain_step` with its budget callback on the CPU clock; the shorter budgets
  are snapshots of the longest run (the learning rate is flat after the warm-up; Flair's
  annealing on validation loss does not depend on the run's length either);
- `bert_tiny`, `bert_mini`, `bert_small`: a small BERT pretrained from scratch with masked LM on
  a WordPiece vocabulary of the corpus (`bert_lm.py`), the shorter budgets snapshots of the
  longest run (flat learning rate after the warm-up), a longer budget going on from the run's
  checkpoint; its tagger's subtoken pooling and layers chosen per task on dev at the smallest
  budget (`--bert-embeddings`, `bert_settings`).

Downstream, one tagger for every row (`flair_tagger.py`): Flair's `SequenceTagger`, BiLSTM-CRF
(`--tagger-hidden`, 256), on the corpus's fastText vectors alone (the fastText-only row) or
stacked with the system's embeddings (`FlairEmbeddings` of the two `.pt` files; our
`ElmoCEmbeddings` of the archive), on each of `--tasks`: UNER EWT NER (`tasks.ner_step`'s
splits: training = 90% of the documents of the published dev split, development = the rest,
test = the test split) and Brown POS (`tasks.pos_step`'s: genres of the pretraining corpus for
training, held-out genres for development and test), the epoch with the best development score
tested once, `--seeds` seeds.

Resumable: each step's JSON result is kept under OUT/steps/ (`steps.Steps`), one per data step,
per pretraining run (per direction for Flair) and per task and tagger; a rerun skips finished ones (an
interrupted ELMo run resumes from its checkpoint; an interrupted Flair direction or tagger
starts again). The table (`--json`: systems x budgets x tasks, CPU seconds and words each
budget bought, seeds, every run's scores) is written after every run, and the report's section
(`--report`, between its markers; the rest of the file is kept) is rendered from that JSON
alone (`--render-only`). Runs of other systems in the same OUT may go on side by side (each its own
`--systems` and `--json`, once the shared data steps are done); `--finished-only` tables all the
steps they have finished so far into one JSON, running none.
"""

import argparse
import json
import logging
import os
import statistics
import sys
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section
from experiments.common.seeds import mean_std
from experiments.quality import per_minute
from experiments.quality.arguments import add_arguments
from experiments.quality.flair_choice import FLAIR, chosen_flair
from experiments.quality.flair_tagger import write_pos_columns
from experiments.quality.pretraining import corpus_step, fasttext_step
from experiments.quality.report import downstream_difference, partial_note
from experiments.quality.steps import Steps, steps_command
from experiments.quality.bert_choice import BERT_EMBEDDINGS, chosen_bert
from experiments.quality.systems import BERT_SHAPES, BILMS
from experiments.quality.tasks import ner_step, pos_step

SECTION = "flair-comparison"  # the report's section (`--section`)
BEGIN, END = markers(SECTION)
BASELINE = "fasttext"
TASKS = {"ner": "NER (UNER EWT) micro-F1", "pos": "POS (Brown, held-out genres) accuracy"}
METRIC = {"ner": "F1", "pos": "accuracy"}
ELMO_SYSTEMS = ("elmo_c_cosine", "elmo_c_in_batch", "elmo_a_whole")
DEFAULT_SYSTEMS = ("elmo_c_in_batch", "flair_512", "elmo_c_cosine", "flair_1024")

logger = logging.getLogger("flair_comparison")


def pos_columns_step(args) -> dict:
    """Brown POS (`tasks.pos_step`) in the column files Flair reads."""
    brown = pos_step(args)
    directory = args.out / "tasks" / "pos-columns"
    write_pos_columns(brown["dir"], directory)
    return {"dir": str(directory), "sentences": brown["sentences"]}


DATA_STEPS = {"ner": ner_step, "pos": pos_columns_step}


def label(system: str) -> str:
    found = FLAIR.match(system)
    if found:
        return f"Flair char LMs (hidden {found.group(1)}, forward + backward)"
    if system == BASELINE:
        return "fastText only (no context)"
    if system in BERT_SHAPES:
        layers, hidden, _ = BERT_SHAPES[system]
        return f"BERT from scratch ({layers} layers, hidden {hidden}, masked LM)"
    return BILMS[system].label


def budget_key(minutes: float) -> str:
    return f"{minutes:g}"


def flair_pretrain(args, steps: Steps, flair_corpus: dict, system: str, seed: int) -> Optional[dict]:
    """Both directions of a Flair system (one step each, half of every budget each), joined by
    budget: the two `.pt` files, CPU seconds and characters together, words per direction."""
    from experiments.quality.flair_lm import train_direction

    hidden = int(FLAIR.match(system).group(1))
    halves = [m / 2 for m in args.minutes]


    def direction(name: str, forward: bool, direction_seed: int) -> Callable[[], dict]:
        run = args.out / "runs" / name
        return lambda: {"budgets": train_direction(flair_corpus, run, hidden, forward,
                                                   direction_seed, halves, args.flair_settings)}  # fmt: skip

    directions = {}
    for number, name in enumerate(("forward", "backward")):
        step = f"pretrain-{system}-seed{seed}-{name}"
        directions[name] = steps.run(step, direction(step, name == "forward", 2 * seed + number))
    if None in directions.values():
        return None
    per_word = flair_corpus["characters_per_word"]
    budgets = {}
    for minutes, half in zip(args.minutes, halves):
        forward, backward = (directions[d]["budgets"][budget_key(half)] for d in directions)
        budgets[budget_key(minutes)] = {
            "forward": forward, "backward": backward,
            "cpu_seconds": forward["cpu_seconds"] + backward["cpu_seconds"],
            "characters": forward["characters"] + backward["characters"],
            "words_per_direction": [forward["characters"] / per_word, backward["characters"] / per_word],
        }  # fmt: skip
    return {"budgets": budgets}


def elmo_pretrain(args, steps: Steps, corpus: dict, vectors: dict, system: str, seed: int) -> Optional[dict]:
    """An ELMo system's run to every budget (`per_minute.pretrain_step` on the CPU clock)."""
    result = steps.run(f"pretrain-{system}-seed{seed}", lambda: per_minute.pretrain_step(
        args, system, corpus, vectors, seed=seed, clock="cpu"))  # fmt: skip
    if result is None:
        return None
    budgets = {}
    for minutes, record in result["budgets"].items():
        # (`tokens`: the positions each direction predicted, the same windows for both)
        budgets[minutes] = dict(record, cpu_seconds=record["training_seconds"],
                                words_per_direction=[record["tokens"], record["tokens"]])  # fmt: skip
    return {"budgets": budgets}


class FinishedSteps(Steps):
    """`--finished-only`: the steps another run finished, none run here (an unfinished one is
    None), so that the table of runs still going on elsewhere can be written at any time."""

    def run(self, name: str, work) -> Optional[dict]:
        return self.done(name)


def bert_pretrain(args, steps: Steps, tokenizer: dict, system: str, seed: int) -> Optional[dict]:
    """A BERT's run to every budget (`bert_lm.train_bert`); a run kept for shorter budgets goes on
    from its checkpoint to longer ones."""
    from experiments.quality.bert_lm import train_bert

    name = f"pretrain-{system}-seed{seed}"
    wanted = [budget_key(m) for m in args.minutes]
    done = steps.done(name)
    if done is not None and not set(wanted) <= set(done["budgets"]) and not args.finished_only:
        (steps.root / f"{name}.json").unlink()
    run = args.out / "runs" / name
    result = steps.run(name, lambda: {"budgets": train_bert(
        tokenizer, run, system, seed, args.minutes, args.bert_settings)})  # fmt: skip
    if result is None:
        return None
    budgets = {}
    for minutes in (m for m in wanted if m in result["budgets"]):
        record = result["budgets"][minutes]
        budgets[minutes] = dict(record, words_per_direction=[record["words"], record["words"]])
    return {"budgets": budgets}


def pretrain_seeds(args, minutes: float) -> List[int]:
    """The pretraining seeds at `minutes`: all at the largest budget and at `--pretrain-seeds-at`,
    the first elsewhere."""
    every = minutes == max(args.minutes) or minutes in args.pretrain_seeds_at
    return list(range(1, args.pretrain_seeds + 1)) if every else [1]


def run_name(task: str, system: str, seed: int, record: Optional[dict], task_seed: int) -> str:
    """A tagger run's step: its task, snapshot (and a BERT's embedding setting) and seed."""
    if record is None:
        return f"task-{task}-{BASELINE}-seed{task_seed}"
    setting = f"-{record['embedding']}" if "embedding" in record else ""
    return f"task-{task}-{system}-{record['minutes']}min-p{seed}{setting}-seed{task_seed}"


def tagger_runs(args, steps: Steps, task: str, data: dict, vectors: dict, system: str, seed: int,
                record: Optional[dict], seeds: Optional[int] = None) -> List[dict]:  # fmt: skip
    """The `task` tagger runs of one pretrained snapshot (`record`; None: fastText alone), each
    of the first `seeds` seeds (default `--seeds`)."""
    from experiments.quality.flair_tagger import contextual_embeddings, tagger_step

    runs = []
    for task_seed in range(1, (seeds or args.seeds) + 1):
        name = run_name(task, system, seed, record, task_seed)

        def work(name: str = name, task_seed: int = task_seed) -> dict:
            contextual = [] if record is None else contextual_embeddings(system, record)
            return tagger_step(task, data, vectors, contextual, task_seed, args.out / "runs" / name,
                               args.tagger_settings, args.keep_task_runs)  # fmt: skip

        result = steps.run(name, work)
        if result is not None:
            runs.append({"pretrain_seed": seed, "seed": task_seed, **result})
    return runs


def cell(runs: List[dict]) -> dict:
    """A table cell: every run's scores, and the seeds they came from."""
    return {
        "dev": [r["dev"] for r in runs], "test": [r["test"] for r in runs],
        "pretrain_seeds": sorted({r["pretrain_seed"] for r in runs}),
        "task_seeds": sorted({r["seed"] for r in runs}), "runs": runs,
    }  # fmt: skip


def pretraining_entry(system: str, minutes: str, seed: int, budget: dict) -> dict:
    entry = {"system": system, "minutes": float(minutes), "pretrain_seed": seed,
             "cpu_seconds": budget["cpu_seconds"], "words_per_direction": budget["words_per_direction"]}  # fmt: skip
    for count in ("characters", "tokens", "steps"):  # (Flair's characters; a BERT's WordPieces)
        if count in budget and system not in ELMO_SYSTEMS:
            entry[count] = budget[count]
    return entry


def task_cells(args, steps: Steps, data: dict, vectors: dict, system: str, seed: int,
               record: Optional[dict], cells: dict,
               settings: Optional[dict] = None) -> dict:  # fmt: skip
    """`cells` (task -> cell) with the tagger runs of one snapshot on every task added (a BERT's:
    with the embedding setting of `settings`, task -> its name)."""
    def found(task: str) -> Optional[dict]:
        return record if settings is None else dict(record, embedding=settings[task])

    def runs(task: str) -> List[dict]:
        return tagger_runs(args, steps, task, data[task], vectors, system, seed, found(task))

    return {task: cell(cells.get(task, cell([]))["runs"] + runs(task)) for task in args.tasks}


def bert_settings(args, steps: Steps, data: dict, vectors: dict, system: str, record: dict,
                  table: dict) -> dict:  # fmt: skip
    """A BERT's embedding setting for each task, chosen on dev at the smallest budget of its first
    pretraining seed (`record`) from `--bert-embeddings` (each tagged with the first
    `--bert-choice-seeds` seeds), kept in `table["bert_embeddings"]`; the same setting then for
    every budget and seed."""
    chosen = table.setdefault("bert_embeddings", {}).get(system)
    if chosen is not None:
        return {task: found["chosen"] for task, found in chosen.items()}
    chosen = {}
    for task in args.tasks:
        dev = {}
        for setting in args.bert_embeddings:
            runs = tagger_runs(args, steps, task, data[task], vectors, system, 1,
                               dict(record, embedding=setting), args.bert_choice_seeds)  # fmt: skip
            dev[setting] = [r["dev"] for r in runs]
        scored = {s: statistics.mean(d) for s, d in dev.items() if d}
        chosen[task] = {"chosen": max(scored, key=scored.get) if scored else None, "dev": dev}
    table["bert_embeddings"][system] = chosen
    return {task: found["chosen"] for task, found in chosen.items()}


def pretrained(args, steps: Steps, inputs: dict, system: str, seed: int) -> dict:
    """A system's pretraining of seed `seed` to every budget: {"budgets": {minutes: record}}
    (empty while another step it needs is unfinished)."""
    if FLAIR.match(system):
        found = inputs["flair"] and flair_pretrain(args, steps, inputs["flair"], system, seed)
    elif system in BERT_SHAPES:
        found = inputs["bert"] and bert_pretrain(args, steps, inputs["bert"], system, seed)
    else:
        found = elmo_pretrain(args, steps, inputs["corpus"], inputs["vectors"], system, seed)
    return found or {"budgets": {}}


def shared_inputs(args, steps: Steps, corpus: dict, vectors: dict) -> dict:
    """What the systems' pretraining reads: the corpus, its vectors, Flair's corpus folder and
    the BERT's WordPiece tokenizer (each made when a system needs it)."""
    inputs = {"corpus": corpus, "vectors": vectors, "flair": None, "bert": None}
    if any(FLAIR.match(s) for s in args.systems):
        from experiments.quality.flair_lm import flair_corpus_step

        inputs["flair"] = steps.run("flair-corpus", lambda: flair_corpus_step(
            args.out, corpus, args.flair_splits, args.flair_valid_characters))  # fmt: skip
    if any(s in BERT_SHAPES for s in args.systems):
        from experiments.quality.bert_lm import bert_tokenizer_step

        inputs["bert"] = steps.run("bert-tokenizer", lambda: bert_tokenizer_step(
            args.out, corpus, args.bert_vocabulary_size))  # fmt: skip
    return inputs


def run_all(args, steps: Steps, corpus: dict, vectors: dict, data: dict, write) -> dict:
    """Every pretraining run and tagger, seed by seed and system by system (`write(table)`
    after each snapshot's taggers; `data`: task -> its data step); returns the table."""
    inputs = shared_inputs(args, steps, corpus, vectors)
    table = {"pretraining": [], "cells": {BASELINE: {}}}
    table["cells"][BASELINE]["0"] = task_cells(args, steps, data, vectors, BASELINE, 0, None, {})
    write(table)
    for seed in range(1, args.pretrain_seeds + 1):
        for system in args.systems:
            for minutes, budget in pretrained(args, steps, inputs, system, seed)["budgets"].items():
                if seed not in pretrain_seeds(args, float(minutes)):
                    continue
                table["pretraining"].append(pretraining_entry(system, minutes, seed, budget))
                record = dict(budget, minutes=minutes)
                settings = (bert_settings(args, steps, data, vectors, system, record, table)
                            if system in BERT_SHAPES else None)  # fmt: skip
                cells = table["cells"].setdefault(system, {})
                cells[minutes] = task_cells(args, steps, data, vectors, system, seed, record,
                                            cells.get(minutes, {}), settings)  # fmt: skip
                write(table)
    return table


def expected_runs(args) -> int:
    snapshots = sum(len(pretrain_seeds(args, m)) for m in args.minutes)
    return args.seeds * len(args.tasks) * (1 + len(args.systems) * snapshots)


def summary(args, table: dict, corpus: dict, data: dict, command: str) -> dict:
    finished = sum(len(found["runs"]) for cells in table["cells"].values()
                   for tasks in cells.values() for found in tasks.values())  # fmt: skip
    bert = {}
    if any(system in BERT_SHAPES for system in args.systems):
        bert = {"bert_lm": dict(args.bert_settings, vocabulary_size=args.bert_vocabulary_size,
                                embeddings=args.bert_embeddings,
                                choice_seeds=args.bert_choice_seeds)}  # fmt: skip
    return {
        "command": command, "machine": machine(),
        "corpus": {"train": corpus["train"], "train_tokens": corpus["train_tokens"]},
        "tasks": {t: {"label": TASKS[t], "sentences": data[t]["sentences"]} for t in args.tasks},
        "minutes": args.minutes, "pretrain_seeds": args.pretrain_seeds, "task_seeds": args.seeds,
        "systems": {s: label(s) for s in [BASELINE, *args.systems]},
        "tagger": args.tagger_settings, "flair_lm": args.flair_settings,
        "expected_runs": expected_runs(args), "finished_runs": finished, **bert, **table,
    }  # fmt: skip


def words_seen(data: dict, system: str, minutes: float) -> str:
    """Words seen per direction at a budget, over its pretraining seeds."""
    seen = [e["words_per_direction"] for e in data["pretraining"]
            if e["system"] == system and e["minutes"] == minutes]  # fmt: skip
    if not seen:
        return "-"
    return f"{statistics.mean(statistics.mean(w) for w in seen):,.0f}"


def cpu_minutes(data: dict, system: str, minutes: float) -> str:
    spent = [e["cpu_seconds"] for e in data["pretraining"] if e["system"] == system and e["minutes"] == minutes]
    return f"{statistics.mean(spent) / 60:.2f}" if spent else "-"


def against(mine: dict, theirs: dict) -> str:
    """mine - theirs on test, with twice its standard error (`downstream_difference`)."""
    found = downstream_difference(mine["test"], theirs["test"])
    if found is None:
        return "-"
    return f"{100 * found['difference']:+.2f} ± {100 * found['spread']:.2f} ({found['verdict']})"


def task_table(data: dict, task: str) -> List[str]:
    """One task's rows, system by budget, and ELMo-C against the Flair size chosen on its dev."""
    metric = METRIC[task]
    lines = [f"| system | CPU-minutes (budget) | CPU-minutes (spent) | words seen | pretraining seeds "
             f"| dev {metric} | test {metric} | test − fastText only (± 2 SE) |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    baseline = data["cells"][BASELINE]["0"][task]
    for system, cells in data["cells"].items():
        for minutes, found in cells.items():
            found = found[task]
            budget = "-" if system == BASELINE else minutes
            lines.append(" | ".join([
                f"| {data['systems'].get(system, system)}", budget,
                "-" if system == BASELINE else cpu_minutes(data, system, float(minutes)),
                "-" if system == BASELINE else words_seen(data, system, float(minutes)),
                ",".join(map(str, found["pretrain_seeds"])) if system != BASELINE else "-",
                mean_std(found["dev"]), mean_std(found["test"]),
                "-" if system == BASELINE else against(found, baseline),
            ]) + " |")  # fmt: skip
    lines += ["", f"ELMo-C against Flair at the same budget (Flair's size chosen on dev), test {metric}, "
              "mine − theirs ± 2 SE:", "", "| budget | Flair chosen | system | difference |",
              "|---|---|---|---|"]  # fmt: skip
    for minutes in map(budget_key, data["minutes"]):
        flair = chosen_flair(data, minutes, task)
        for system, cells in data["cells"].items():
            if system in ELMO_SYSTEMS and minutes in cells and flair:
                difference = against(cells[minutes][task], data["cells"][flair][minutes][task])
                lines.append(f"| {minutes} | {flair} | {data['systems'][system]} | {difference} |")
    return lines + bert_comparison(data, task)


def bert_comparison(data: dict, task: str) -> List[str]:
    """The other systems against the BERT shape chosen on dev at each budget, and the embedding
    setting each BERT's tagger was given (none without BERT rows)."""
    if not any(system in BERT_SHAPES for system in data["cells"]):
        return []
    metric = METRIC[task]
    lines = ["", f"ELMo-C and Flair against the BERT at the same budget (the BERT's shape and "
             f"Flair's size chosen on dev), test {metric}, theirs − the BERT's ± 2 SE:", "",
             "| budget | BERT chosen | system | difference |", "|---|---|---|---|"]  # fmt: skip
    for minutes in map(budget_key, data["minutes"]):
        bert = chosen_bert(data, minutes, task)
        others = [*ELMO_SYSTEMS, chosen_flair(data, minutes, task)]
        for system in others:
            if bert and system in data["cells"] and minutes in data["cells"][system]:
                difference = against(data["cells"][system][minutes][task],
                                     data["cells"][bert][minutes][task])  # fmt: skip
                lines.append(f"| {minutes} | {bert} | {data['systems'][system]} | {difference} |")
    lines += ["", f"Each BERT's embedding setting for {task.upper()} (chosen on dev at the "
              "smallest budget, first pretraining seed; mean dev score of each setting):", ""]
    for system, chosen in data.get("bert_embeddings", {}).items():
        scores = ", ".join(f"{setting} {100 * statistics.mean(dev):.2f}"
                           for setting, dev in chosen[task]["dev"].items() if dev)  # fmt: skip
        lines.append(f"- {system}: `{chosen[task]['chosen']}` ({scores})")
    return lines


def bert_note(data: dict) -> List[str]:
    """How the BERT rows were made (none without them)."""
    if "bert_lm" not in data:
        return []
    bert = data["bert_lm"]
    return [
        "BERT: a cased WordPiece vocabulary of " f"{bert['vocabulary_size']:,} trained with "
        "`tokenizers` on the corpus; transformers' `BertForMaskedLM` from scratch, masked LM "
        "(15% of the WordPieces, 80-10-10) on blocks of the concatenated corpus of "
        f"{bert['block_size']} WordPieces, batches of {bert['batch_size']}, AdamW at "
        f"{bert['learning_rate']:g} after a linear warm-up of {bert['warmup_steps']} updates, then "
        "flat (the shorter budgets are snapshots of the longest run); its vectors through Flair's "
        "`TransformerWordEmbeddings` (frozen), the subtoken pooling and layers chosen per task on "
        f"dev from {', '.join(bert['embeddings'])} (`first`/`mean` pooling; the top layer or the "
        "mean of all) at the smallest budget. Words seen by a BERT: the WordPieces it read / the "
        "corpus's WordPieces per word (it reads each word once, with both contexts).", "",
    ]  # fmt: skip


def render(data: dict, section: str = SECTION) -> str:
    """The report's section `section`, from the table's JSON alone."""
    tasks = data["tasks"]
    begin, end = markers(section)
    # (The tasks, the budgets and the corpus tell such sections, and their anchors, apart.)
    against_bert = " and a small BERT" if "bert_lm" in data else ""
    title = (f"ELMo-C against Flair's contextual string embeddings{against_bert} at equal CPU "
             "time: "
             + " and ".join(task.upper() for task in tasks) + ", "
             + ", ".join(map(budget_key, data["minutes"])) + " CPU-minutes, "
             + f"{data['corpus']['train_tokens']:,}-token corpus")  # fmt: skip
    sentences = "; ".join(
        f"{task.upper()} sentences: train {found['sentences']['train']:,}, dev "
        f"{found['sentences']['dev']:,}, test {found['sentences']['test']:,}"
        for task, found in tasks.items()
    )
    lines = [
        begin, "", f"## {title}", "",
        f"Produced by `{data['command']}` (experiments/quality/flair_comparison.py; its JSON is the "
        "record). Machine: " + data["machine"] + ".", "",
        f"Pretraining corpus: {data['corpus']['train_tokens']:,} tokens "
        f"({os.path.basename(os.path.dirname(data['corpus']['train']))}). Every system pretrained "
        "on one thread for the same CPU time (`time.process_time`; Flair: half for each "
        "direction), " + f"{data['pretrain_seeds']} pretraining seed(s) at the largest budget, one "
        "at the others. Flair's LMs: 1 layer, sequences of "
        f"{data['flair_lm']['sequence_length']} characters, batches of "
        f"{data['flair_lm']['mini_batch_size']}, the rest `LanguageModelTrainer`'s defaults; a "
        "budget is checked before each batch, so a run can pass it by one batch (the column spent). "
        "Tagger: Flair's `SequenceTagger` (BiLSTM-CRF" + ("; for POS without the CRF, Brown's "
        "107 tags making it some 30 times slower" if "pos" in data["tasks"] else "") + ", hidden "
        f"{data['tagger']['hidden_size']}, at most {data['tagger']['max_epochs']} epochs, the best "
        "development epoch tested once) on the corpus's fastText vectors + each system's "
        f"embeddings; {sentences}; mean ± standard deviation over {data['task_seeds']} task seeds "
        "(and the pretraining seeds). Words seen: per direction (Flair: characters / the corpus's "
        "characters per word).", "",
    ]  # fmt: skip
    lines += bert_note(data) + partial_note(data["finished_runs"], data["expected_runs"])
    for number, task in enumerate(tasks):
        if len(tasks) > 1:
            lines += ([""] if number else []) + [f"### {tasks[task]['label']}", ""]
        lines += task_table(data, task)
    return "\n".join(lines + ["", end]) + "\n"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    add_arguments(parser, "--data-dir", "--corpus-dir", "--fasttext-bin", "--fasttext-dim",
                  "--shared-data", "--brown-source", "--pos-train-sentences", "--keep-task-runs")  # fmt: skip
    parser.add_argument("--tasks", default="ner", help=f"of {', '.join(TASKS)}")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS))
    parser.add_argument("--minutes", default="5,15", help="CPU-minutes of pretraining per system")
    parser.add_argument("--pretrain-seeds", type=int, default=2)
    parser.add_argument("--pretrain-seeds-at", default="",
                        help="budgets tagged with every pretraining seed (besides the largest)")
    parser.add_argument("--seeds", type=int, default=3, help="tagger seeds per pretrained snapshot")
    parser.add_argument("--pretrain-overrides", default="{}", help="per_minute.py's: for the ELMo systems")
    parser.add_argument("--flair-sequence-length", type=int, default=250)
    parser.add_argument("--flair-batch-size", type=int, default=100)
    parser.add_argument("--flair-splits", type=int, default=20, help="training files (Flair validates after each)")
    parser.add_argument("--flair-valid-characters", type=int, default=50_000)
    parser.add_argument("--bert-vocabulary-size", type=int, default=16_000)
    parser.add_argument("--bert-block-size", type=int, default=128, help="WordPieces a sequence")
    parser.add_argument("--bert-batch-size", type=int, default=32)
    parser.add_argument("--bert-learning-rate", type=float, default=5e-4)
    parser.add_argument("--bert-warmup-steps", type=int, default=50)
    parser.add_argument("--bert-checkpoint-minutes", type=float, default=10.0)
    parser.add_argument("--bert-embeddings", default=",".join(BERT_EMBEDDINGS),
                        help="the settings a BERT's tagger is chosen from on dev")
    parser.add_argument("--bert-choice-seeds", type=int, default=1,
                        help="tagger seeds of each setting in that choice")
    parser.add_argument("--tagger-hidden", type=int, default=256)
    parser.add_argument("--tagger-epochs", type=int, default=10)
    parser.add_argument("--tagger-batch-size", type=int, default=32)
    parser.add_argument("--tagger-learning-rate", type=float, default=0.1)
    parser.add_argument("--json", type=Path, default=None, help="the table (default OUT/flair_comparison.json)")
    parser.add_argument("--report", type=Path, default=None, help="markdown file for the section")
    parser.add_argument("--render-only", action="store_true", help="run nothing: the section from --json")
    parser.add_argument("--section", default=SECTION, help="the name of the report's section")
    parser.add_argument("--finished-only", action="store_true",
                        help="run nothing: the table of the steps finished so far (by other runs)")
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    known = (*ELMO_SYSTEMS, *BERT_SHAPES)
    unknown = [s for s in args.systems if not FLAIR.match(s) and s not in known]
    if unknown:
        parser.error(f"unknown systems {unknown}: flair_HIDDEN or one of {', '.join(known)}")
    args.minutes = sorted(float(m) for m in args.minutes.split(",") if m)
    args.pretrain_seeds_at = [float(m) for m in args.pretrain_seeds_at.split(",") if m]
    args.bert_embeddings = [e for e in args.bert_embeddings.split(",") if e]
    if not args.bert_embeddings or set(args.bert_embeddings) - set(BERT_EMBEDDINGS):
        parser.error(f"--bert-embeddings: some of {', '.join(BERT_EMBEDDINGS)}")
    args.tasks = [t for t in args.tasks.split(",") if t]
    if not args.tasks or set(args.tasks) - set(TASKS):
        parser.error(f"--tasks: a comma-separated list of {', '.join(TASKS)}, got {args.tasks}")
    args.out, args.data_dir = args.out.resolve(), args.data_dir.resolve()
    args.json = args.json or args.out / "flair_comparison.json"
    args.threads = 1
    args.flair_settings = {"sequence_length": args.flair_sequence_length,
                           "mini_batch_size": args.flair_batch_size}  # fmt: skip
    args.bert_settings = {"block_size": args.bert_block_size, "batch_size": args.bert_batch_size,
                          "learning_rate": args.bert_learning_rate,
                          "warmup_steps": args.bert_warmup_steps,
                          "checkpoint_minutes": args.bert_checkpoint_minutes}  # fmt: skip
    args.tagger_settings = {"hidden_size": args.tagger_hidden, "max_epochs": args.tagger_epochs,
                            "mini_batch_size": args.tagger_batch_size,
                            "learning_rate": args.tagger_learning_rate}  # fmt: skip
    return args


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    if args.render_only:
        data = json.loads(args.json.read_text(encoding="utf-8"))
    else:
        import torch

        from experiments.quality.bert_lm import offline

        offline()
        os.environ["OMP_NUM_THREADS"] = "1"  # (and every training subprocess: `threads`)
        torch.set_num_threads(1)
        steps = (FinishedSteps if args.finished_only else Steps)(args.out)
        corpus = steps.run("corpus", lambda: corpus_step(args))
        vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
        task_data = {task: steps.run(f"data-{task}", lambda task=task: DATA_STEPS[task](args))
                     for task in args.tasks}  # fmt: skip
        given = sys.argv[1:] if argv is None else argv
        command = steps_command("experiments.quality.flair_comparison",
                                [a for a in given if a != "--finished-only"])  # fmt: skip

        def write(table: dict) -> None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            temporary = args.json.with_suffix(".json.partial")
            temporary.write_text(json.dumps(summary(args, table, corpus, task_data, command), indent=1))
            os.replace(temporary, args.json)

        write(run_all(args, steps, corpus, vectors, task_data, write))
        data = json.loads(args.json.read_text(encoding="utf-8"))
    if args.report:
        replace_section(args.report, *markers(args.section), render(data, args.section))
    return data


if __name__ == "__main__":
    main()
