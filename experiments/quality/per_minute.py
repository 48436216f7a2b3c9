"""
Downstream quality against minutes of pretraining on one CPU core: the paper's claim that a
continuous output layer, whose cost does not grow with the vocabulary, sees more text in the same
time than softmax biLMs that keep the vocabulary they need, and ends up as good or better.

    python -m experiments.quality.per_minute --data-dir data --out runs/per_minute \
        --minutes 10,30,60 --report experiments/quality/QUALITY.md --plot experiments/quality/quality_per_minute.png

Systems (the demo encoder size, cell 256 / projection 128 / 2 layers, 1 thread each, the same
21-token windows of the same corpus in the same order):
- `elmo_c_cosine`: `elmo_c_demo.jsonnet`, fastText in and out, the cosine loss;
- `elmo_a_whole`: `elmo_a_demo.jsonnet` with its adaptive softmax over every word seen at least
  twice in the training data (its cutoffs 2,000 / 10,000; the tail cluster takes the rest);
- `allennlp_lm`: `allennlp_lm_demo.jsonnet`, allennlp-models' `language_model` as its users
  train it: ELMo's character CNN, AllenNLP's `ElmoLstm`, an 8,192-sample softmax over the same
  vocabulary, sparse embeddings with `dense_sparse_adam`.

Every vocabulary holds the words seen at least twice: a word seen once cannot be learnt as a
target, and this is the rule (a minimum count) by which the 1B Word Benchmark's 793K-word
vocabulary was made.

Steps (resumable: each step's result is a JSON file under OUT/steps/, as in `quality.py`, whose
data steps and downstream runs this script shares):
1. `corpus`, `fasttext`, `data-ner`, `data-pos`: as `quality.py` (or `--corpus-dir`,
   `--fasttext-bin`).
2. `pretrain-SYSTEM`: one run per system until its last budget of training time (the corpus read,
   indexed and shuffled in chunks of 200 batches, for every system alike; that work is training
   time)
   (`training_time_budgets`: an archive at each of `--minutes`, tokens seen, a tokens/s
   timeline), with a learning rate flat after the warm-up, so that the shorter budgets are
   snapshots of the longest. An interrupted run resumes from its last checkpoint
   (`allennlp train --recover`), counting training time only.
3. `eval-SYSTEM-MINUTES`: each snapshot's loss on the corpus's validation split (each system's
   own loss: 1 - cosine for ELMo-C, the full softmax's negative log-likelihood for the others).
4. `task-TASK-SYSTEM-MINUTES-SEED` and `task-TASK-fasttext-SEED`: NER and POS as in
   `quality.py`, `--seeds` seeds, selected on dev, test reported. An interrupted run resumes
   from its last checkpoint (`quality_steps.resumable`).
5. The report: a section of `--report` between its markers (the rest of the file is kept) and
   the plot `--plot`: test score against pretraining minutes, one line per system, fastText-only
   as a horizontal line, error bars of one standard deviation.
"""

import argparse
import datetime
import json
import logging
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from experiments.common.machine import machine
from experiments.common.seeds import mean_and_std, mean_std
from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import corpus_step, fasttext_step
from experiments.quality.report import partial_note
from experiments.quality.steps import (BATCH, PROJECT, TRAINING_CONFIG, Steps, allennlp_train,
                                       resumable, steps_command)
from experiments.quality.systems import BILMS, OVERRIDES, System
from experiments.quality.tasks import BASELINE, BASELINE_LABEL, DATA_STEPS, TASKS, task_step
from experiments.common.markers import markers, replace_section

BEGIN, END = markers("per-minute")
DOWNSTREAM_COMMITS = "downstream.commits"  # under OUT/runs: the commit of each start of the task runs
EPOCH_BATCHES = 200  # batches between two checkpoints (and the places a run can stop)
# The systems this script pretrains (`pretrain_step`).
SYSTEMS: Dict[str, System] = {name: BILMS[name] for name in (
    "elmo_c_cosine", "elmo_a_whole", "allennlp_lm", "elmo_c_vmf", "elmo_c_in_batch", "elmo_fixed")}
# The systems run when `--systems` is not given (the section QUALITY.md quotes).
DEFAULT_SYSTEMS = ("elmo_c_cosine", "elmo_a_whole", "allennlp_lm")

logger = logging.getLogger("quality_per_minute")


def system_overrides(args, system: str, corpus: dict, vectors: dict, clock: str = "wall") -> dict:
    """What every system's config gets: this corpus, its fastText vectors, no validation during
    training (each snapshot is evaluated afterwards), epochs of `EPOCH_BATCHES` batches without
    end, the budget callback (counting `clock` time) after the config's own, a flat learning rate
    after the warm-up."""
    from allennlp.common import Params

    config = SYSTEMS[system].config
    params = Params.from_file(str(TRAINING_CONFIG / config),
                              ext_vars={"ELMO_C_DATA_DIR": str(args.data_dir)}).as_dict()  # fmt: skip
    callbacks = list(params["trainer"].get("callbacks", []))
    callbacks = [c for c in callbacks if c["type"] != "tensorboard"]  # (no event files)
    budgets = {"type": "training_time_budgets", "minutes": args.minutes}
    # (the wall clock is the callback's default: a run started before `clock` existed resumes)
    callbacks.append(budgets if clock == "wall" else dict(budgets, clock=clock))
    overrides = {
        "train_data_path": corpus["train"],
        "validation_data_path": None,
        "data_loader.batches_per_epoch": EPOCH_BATCHES,
        # Read, index and shuffle the corpus in chunks, for every system alike: the character
        # ids of the whole corpus would not fit in memory (the peer's run was killed at 19 GB).
        "data_loader.max_instances_in_memory": EPOCH_BATCHES * BATCH,
        "trainer.num_epochs": 1_000_000,
        "trainer.callbacks": callbacks,
    }
    if system != "allennlp_lm":
        overrides.update({
            "dataset_reader.token_indexers.tokens.model_path": vectors["vectors"],
            "model.text_field_embedder.token_embedders.tokens.model_path": vectors["vectors"],
            "model.text_field_embedder.token_embedders.tokens.expected_dim": args.fasttext_dim,
            "model.contextualizer.input_size": args.fasttext_dim,
            "model.nearest_neighbour_words": None,
            # The demo's warm-up, then flat (the decay would start past any run here).
            "trainer.learning_rate_scheduler.decay_start": 10**9,
            "trainer.learning_rate_scheduler.decay_end": 10**9 + 1,
        })  # fmt: skip
    overrides.update(OVERRIDES.get(system, {}))
    if system == "elmo_fixed":
        # The frozen output embedding: the same vectors as the input.
        overrides["model.output_head.output_embedding_fasttext"] = vectors["vectors"]
    # --pretrain-overrides: dotted keys for every system, or a system's name -> its own.
    for key, value in json.loads(args.pretrain_overrides).items():
        if key in SYSTEMS:
            overrides.update(value if key == system else {})
        else:
            overrides[key] = value
    return overrides


def budget_name(minutes: float) -> str:
    return f"budget-{minutes:g}min"


def pretrain_step(args, system: str, corpus: dict, vectors: dict, seed: Optional[int] = None,
                  clock: str = "wall") -> dict:  # fmt: skip
    """`system` pretrained to each of `args.minutes` of `clock` time (OUT/runs/pretrain-SYSTEM);
    with `seed`, in OUT/runs/pretrain-SYSTEM-seedSEED with AllenNLP's three seeds from it."""
    config = SYSTEMS[system].config
    name = f"pretrain-{system}" + ("" if seed is None else f"-seed{seed}")
    run = args.out / "runs" / name
    last = run / f"{budget_name(max(args.minutes))}.json"
    if not last.is_file():
        record_commit(run.parent / f"{name}.commits", resumable(run))
        overrides = system_overrides(args, system, corpus, vectors, clock)
        if seed is not None:
            overrides.update({"random_seed": 13370 + seed, "numpy_seed": 1337 + seed,
                              "pytorch_seed": 133 + seed})  # fmt: skip
        allennlp_train(TRAINING_CONFIG / config, run, overrides,
                       {"ELMO_C_DATA_DIR": str(args.data_dir)}, args.threads,
                       ["experiments.quality.time_budgets"])  # fmt: skip
        if not last.is_file():
            raise RuntimeError(f"pretraining {system} ended before its last budget: see "
                               f"{run.name}.log in {run.parent}")  # fmt: skip
    budgets = {}
    for minutes in args.minutes:
        record = json.loads((run / f"{budget_name(minutes)}.json").read_text())
        record["archive"] = str(run / f"{budget_name(minutes)}.tar.gz")
        budgets[f"{minutes:g}"] = record
    timeline = json.loads((run / "budget-timeline.json").read_text())["points"]
    return {"budgets": budgets, "timeline": timeline}


def current_commit() -> str:
    """The checkout's short commit, "... with uncommitted changes" when tracked files differ."""
    def git(*arguments: str) -> str:
        result = subprocess.run(["git", *arguments], cwd=PROJECT, capture_output=True, text=True)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " with uncommitted changes"
    return commit


def record_commit(path: Path, resumed: bool) -> None:
    """Appends the commit this run (re)starts on to `path` (the report names them: each system's
    pretraining must run on one commit; the downstream runs' file names each start of them)."""
    when = datetime.datetime.now().isoformat(timespec="seconds")
    with open(path, "a", encoding="utf-8") as record:
        record.write(f"{current_commit()}, {'resumed' if resumed else 'started'} {when}\n")


def recorded_commits(path: Path) -> str:
    """The starts that `record_commit` wrote to `path`, in one line."""
    starts = path.read_text(encoding="utf-8").strip().splitlines() if path.is_file() else []
    return "; ".join(starts) or "not recorded"


def eval_step(args, archive: str, corpus: dict) -> dict:
    output = Path(archive).with_suffix(".validation.json")
    command = [sys.executable, "-m", "allennlp_elmo_c", "evaluate", archive, corpus["validation"],
               "--output-file", str(output), "--cuda-device", "-1", "--batch-size", "64"]  # fmt: skip
    environment = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    subprocess.run(command, cwd=PROJECT, env=environment, check=True, capture_output=True)
    return {"loss": json.loads(output.read_text())["loss"]}


def peer_task_overrides(archive: str) -> dict:
    """The `elmo` slot of the NER / POS configs for a `language_model` archive: its
    `elmo_characters` ids and allennlp-models' `language_model_token_embedder`."""
    return {
        "dataset_reader.token_indexers.elmo": {"type": "elmo_characters"},
        "model.text_field_embedder.token_embedders.elmo": {
            "type": "language_model_token_embedder", "archive_file": archive,
            "bos_eos_tokens": ["<S>", "</S>"], "remove_bos_eos": True, "dropout": 0.0,
        },
    }  # fmt: skip


def peer_dim(archive: str) -> int:
    """The size of a `language_model` archive's vectors: its contextualizer's output."""
    import tarfile

    with tarfile.open(archive) as members:
        config = json.load(members.extractfile("config.json"))
    return 2 * int(config["model"]["contextualizer"]["projection_size"])


def rates_per_10_minutes(timeline: List[List[float]]) -> List[Optional[float]]:
    """Tokens/s in each 10 minutes of training time (0-10, ..., 50-60) of a run's
    `budget-timeline.json` points; None where the run has fewer than two points."""
    points = [(0.0, 0)] + [tuple(p) for p in timeline]
    rates: List[Optional[float]] = []
    for start in range(0, 60, 10):
        inside = [p for p in points if 60 * start <= p[0] <= 60 * (start + 10)]
        if len(inside) < 2:
            rates.append(None)
            continue
        (t0, n0), (t1, n1) = inside[0], inside[-1]
        rates.append((n1 - n0) / max(t1 - t0, 1e-9))
    return rates


def timeline_table(pretrained: Dict[str, dict], tolerance: float = 0.05) -> List[str]:
    """Tokens/s of each run per 10 minutes of training time, and the rule that keeps the timings
    honest: a 10 minutes more than `tolerance` below its run's median rate was slowed by other
    work, and the budgets it falls in must be run again."""
    lines = ["| system | " + " | ".join(f"{m}-{m + 10} min" for m in range(0, 60, 10)) + " |",
             "|---|" + "---|" * 6]  # fmt: skip
    slowed = []
    for system, result in pretrained.items():
        rates = rates_per_10_minutes(result["timeline"])
        known = [r for r in rates if r is not None]
        median = statistics.median(known) if known else None
        lines.append(f"| {SYSTEMS[system].label} | "
                     + " | ".join("-" if r is None else f"{r:,.0f}" for r in rates) + " |")  # fmt: skip
        slowed += [f"{SYSTEMS[system].label} {10 * i}-{10 * i + 10} min ({r:,.0f} against a median of "
                   f"{median:,.0f})" for i, r in enumerate(rates)
                   if r is not None and r < (1 - tolerance) * median]  # fmt: skip
    lines += ["", f"Rates more than {100 * tolerance:g}% below their run's median (budgets to run again): "
              + ("; ".join(slowed) if slowed else "none") + "."]  # fmt: skip
    return lines


def scores_of(steps, task: str, tag: str, seeds: int) -> Dict[str, List[float]]:
    found: Dict[str, List[float]] = {"dev": [], "test": []}
    for seed in range(1, seeds + 1):
        result = steps.done(f"task-{task}-{tag}-seed{seed}")
        if result is not None:
            for split in found:
                found[split].append(result[split])
    return found


def render(args, pretrained: Dict[str, dict], evals: Dict[str, dict], steps, corpus: dict,
           command: str) -> str:  # fmt: skip
    labels = {task: TASKS[task][2] for task in args.tasks}
    lines = [
        BEGIN,
        "## Quality per minute of pretraining",
        "",
        f"Produced by `{command}` (see its docstring). Machine: {machine()}. "
        f"Pretraining corpus: {corpus['train_tokens']:,} training tokens; one thread per run.",
        "",
        "| system | minutes | tokens seen | tokens/s | validation loss | "
        + " | ".join(f"{labels[t]} (test)" for t in args.tasks) + " |",
        "|---|---|---|---|---|" + "---|" * len(args.tasks),
    ]
    tags = [BASELINE] + [f"{system}-{minutes}min" for system, result in pretrained.items()
                                 for minutes in result["budgets"]]  # fmt: skip
    # Test scores of each (task, tag), read once.
    test = {(t, tag): scores_of(steps, t, tag, args.seeds)["test"]
            for t in args.tasks for tag in tags}  # fmt: skip
    expected = len(test) * args.seeds
    finished = sum(len(scores) for scores in test.values())
    lines[-2:-2] = partial_note(finished, expected)
    floor = [mean_std(test[t, BASELINE]) for t in args.tasks]
    lines.append(f"| {BASELINE_LABEL} | - | - | - | - | " + " | ".join(floor) + " |")
    for system, result in pretrained.items():
        for minutes, record in result["budgets"].items():
            tag = f"{system}-{minutes}min"
            cells = [mean_std(test[t, tag]) for t in args.tasks]
            loss = evals.get(tag, {}).get("loss")
            lines.append(
                f"| {SYSTEMS[system].label} | {minutes} | {record['tokens'] / 1e6:.2f}M | "
                f"{record['tokens_per_second']:,.0f} | {'-' if loss is None else f'{loss:.4f}'} | "
                + " | ".join(cells) + " |"
            )
    lines += ["", "Commits each pretraining ran on:", ""]
    for system in pretrained:
        lines.append(f"- {SYSTEMS[system].label}: "
                     + recorded_commits(args.out / "runs" / f"pretrain-{system}.commits"))  # fmt: skip
    lines += ["", "Commits the downstream runs ran on: "
              + recorded_commits(args.out / "runs" / DOWNSTREAM_COMMITS)]  # fmt: skip
    lines += ["", "Tokens/s over training time (per 10 minutes):", ""] + timeline_table(pretrained)
    lines += ["", f"![quality per minute]({args.plot.name})" if args.plot else "", END]
    return "\n".join(lines) + "\n"


def plot(args, pretrained: Dict[str, dict], steps, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(args.tasks), figsize=(5 * len(args.tasks), 4))
    axes = axes if len(args.tasks) > 1 else [axes]
    for axis, task in zip(axes, args.tasks):
        for system, result in pretrained.items():
            xs, ys, errors = [], [], []
            for minutes in result["budgets"]:
                test = scores_of(steps, task, f"{system}-{minutes}min", args.seeds)["test"]
                if test:
                    xs.append(float(minutes))
                    mean, std = mean_and_std(test)
                    ys.append(mean)
                    errors.append(std)
            if xs:
                axis.errorbar(xs, ys, yerr=errors, marker="o", capsize=3,
                              label=SYSTEMS[system].label)  # fmt: skip
        floor = scores_of(steps, task, BASELINE, args.seeds)["test"]
        if floor:
            axis.axhline(100 * statistics.mean(floor), color="grey", linestyle="--",
                         label=BASELINE_LABEL)  # fmt: skip
        axis.set_xlabel("pretraining minutes (one CPU core)")
        axis.set_ylabel(TASKS[task][2] + " (test)")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def downstream_steps(args, steps, runs: Sequence[tuple], seeds: Dict[str, int], data: Dict[str, dict],
                     vectors: dict) -> None:  # fmt: skip
    """
    Every downstream run `task-TASK-TAG-seedN` that is not finished: for each task of `seeds`
    (task -> number of seeds) and each run `(tag, archive, task overrides, context dim)` of
    `runs` (archive None: fastText alone). A run another live process is running is left to it;
    each start that runs something is recorded in OUT/runs/downstream.commits.
    """
    base_overrides = json.loads(args.task_overrides)
    names = {(task, tag, seed): f"task-{task}-{tag}-seed{seed}" for task in seeds
             for tag, *_ in runs for seed in range(1, seeds[task] + 1)}  # fmt: skip
    finished = [steps.done(name) is not None for name in names.values()]
    if not args.report_only and not all(finished):
        record_commit(args.out / "runs" / DOWNSTREAM_COMMITS, resumed=any(finished))
    for task in seeds:
        for tag, archive, extra, dim in runs:
            for seed in range(1, seeds[task] + 1):
                name = names[task, tag, seed]
                if steps.running_elsewhere(name):
                    continue
                task_args = argparse.Namespace(**vars(args))
                task_args.task_overrides = json.dumps({**base_overrides, **extra})
                steps.run(name, lambda: task_step(task_args, task, tag, archive, seed,
                                                  data[task], vectors, dim))  # fmt: skip


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", "--report", out=Path("runs/per_minute"))
    parser.add_argument("--plot", type=Path, default=None, help="default OUT/quality_per_minute.png")
    add_arguments(parser, "--shared-data", "--corpus-dir", "--fasttext-bin", "--brown-source",
                  helps=False)
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS))
    parser.add_argument("--tasks", default="ner,pos")
    parser.add_argument("--minutes", default="10,30,60")
    parser.add_argument("--seeds", type=int, default=3)
    add_arguments(parser, "--fasttext-dim")
    parser.add_argument("--task-epochs", type=int, default=15)
    parser.add_argument("--task-patience", type=int, default=4)
    add_arguments(parser, "--pos-train-sentences")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON: dotted keys for every "
                        "system, or a system's name -> its own")  # fmt: skip
    parser.add_argument("--task-overrides", default="{}")
    add_arguments(parser, "--keep-task-runs")
    parser.add_argument("--only", default=None, help="stop after: data, pretrain, eval")
    parser.add_argument("--report-only", action="store_true", help="run nothing: the report and "
                        "plot from the steps finished so far (unfinished seeds show in n=)")  # fmt: skip
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.minutes = sorted(float(m) for m in args.minutes.split(",") if m)
    unknown = [s for s in args.systems if s not in SYSTEMS]
    unknown += [t for t in args.tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown system or task: {unknown}")
    args.out, args.data_dir = args.out.resolve(), args.data_dir.resolve()
    args.report = args.report or args.out / "QUALITY.md"
    args.plot = args.plot or args.out / "quality_per_minute.png"
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)
    if args.report_only:
        steps.run = lambda name, work: steps.done(name)  # what is finished, None for the rest

    corpus = steps.run("corpus", lambda: corpus_step(args))
    vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
    data = {task: steps.run(f"data-{task}", lambda task=task: DATA_STEPS[task](args))
            for task in args.tasks}  # fmt: skip
    if args.only == "data":
        return
    pretrained = {
        system: steps.run(f"pretrain-{system}",
                          lambda system=system: pretrain_step(args, system, corpus, vectors))
        for system in args.systems
    }  # fmt: skip
    pretrained = {system: result for system, result in pretrained.items() if result is not None}
    if args.only == "pretrain":
        return
    evals = {}
    for system, result in pretrained.items():
        for minutes, record in result["budgets"].items():
            tag = f"{system}-{minutes}min"
            evals[tag] = steps.run(f"eval-{tag}",
                                   lambda archive=record["archive"]: eval_step(args, archive, corpus))  # fmt: skip
            evals[tag] = evals[tag] or {}
    if args.only == "eval":
        return
    runs = [(BASELINE, None, {}, None)] + [
        (f"{system}-{minutes}min", record["archive"],
         peer_task_overrides(record["archive"]) if system == "allennlp_lm" else {},
         peer_dim(record["archive"]) if system == "allennlp_lm" else None)
        for system, result in pretrained.items() for minutes, record in result["budgets"].items()
    ]  # fmt: skip
    downstream_steps(args, steps, runs, {task: args.seeds for task in args.tasks}, data, vectors)
    command = steps_command("experiments.quality.per_minute", argv)
    replace_section(args.report, BEGIN, END, render(args, pretrained, evals, steps, corpus, command))
    plot(args, pretrained, steps, args.plot)
    print(args.report.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
