"""
Does bfloat16 pretraining cost quality? Demo-size ELMo-C (cosine) pretrained in float32 and with
`model.precision: bfloat16` (the encoder's matrix products in bfloat16, state and losses float32),
on the same corpus, the same fastText vectors and the same number of tokens, with two pretraining
seeds each; the validation loss and cosine every fifth of the run (the curves) and at its end;
then NER and POS (the CRF taggers of `table2.py`) on each biLM with three task seeds. Steps are
cached and resumable under `--out` as in `table2.py`; several processes may share it (one per
core), each taking the steps no other is running.

    python -m experiments.quality.precision --data-dir data --out runs/precision \\
        --corpus-dir data/pretraining --shared-data ../shared/data --threads 1 \\
        --report experiments/quality/QUALITY.md --summary experiments/quality/precision.json

Steps under OUT/steps:
1. `corpus`, `fasttext`, `data-ner`, `data-pos`: as `table2.py` (100-d fastText on the corpus).
2. `pretrain-PRECISION-seedN`: one biLM, `--tokens` tokens in `--points` epochs of equal length
   (so AllenNLP validates after each: the curve), the schedule stretched over the whole run.
3. `task-TASK-PRECISION-seedN-taskseedM`: the downstream runs, selected on dev, test reported.
4. The report: a section of `--report` between its markers (curves, final validation and
   downstream test, mean ± std over the seeds, and each bfloat16 mean against float32's with
   twice its standard error), and its data as JSON (`--summary`).
"""

import argparse
import json
import logging
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from experiments.common.markers import markers, replace_section
from experiments.common.machine import machine
from experiments.common.seeds import mean_std
from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import corpus_step, fasttext_step
from experiments.quality.steps import (BATCH, TRAINING_CONFIG, WINDOW, Steps, allennlp_train,
                                       steps_command)
from experiments.quality.systems import BILMS
from experiments.quality.tasks import DATA_STEPS, TASKS, task_step
from experiments.quality.pretraining import pretrain_overrides
from experiments.quality.report import downstream_difference

BEGIN, END = markers("precision")
PRECISIONS = ("float32", "bfloat16")
CURVE = ("loss", "forward_cosine", "backward_cosine")
SYSTEM = "elmo_c_cosine"  # the biLM every precision pretrains

logger = logging.getLogger("precision")


def pretrain_step(args, precision: str, seed: int, corpus: dict, vectors: dict) -> dict:
    """One biLM: `args.tokens` tokens in `args.points` equal epochs; its validation metrics after
    each epoch, the tokens/s of its training, and its archive."""
    from experiments.common.duration import training_seconds

    batches = max(args.points, args.tokens // (BATCH * WINDOW))
    per_epoch = batches // args.points
    batches = per_epoch * args.points
    overrides = pretrain_overrides(args, corpus, vectors, batches)
    overrides.update({
        "data_loader.batches_per_epoch": per_epoch,
        "trainer.num_epochs": args.points,
        "model.precision": precision,
        "model.nearest_neighbour_words": vectors["candidates"],
        "random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed,
    })  # fmt: skip
    run = args.out / "runs" / f"pretrain-{precision}-seed{seed}"
    metrics = allennlp_train(
        TRAINING_CONFIG / BILMS[SYSTEM].config, run, overrides,
        {"ELMO_C_DATA_DIR": str(args.data_dir)}, args.threads,
    )  # fmt: skip
    curve = []
    for epoch in range(args.points):
        found = json.loads((run / f"metrics_epoch_{epoch}.json").read_text())
        curve.append({"tokens": (epoch + 1) * per_epoch * BATCH * WINDOW,
                      **{key: found[f"validation_{key}"] for key in CURVE}})  # fmt: skip
    seconds = training_seconds(metrics["training_duration"])
    return {"archive": str((run / "model.tar.gz").resolve()), "tokens": batches * BATCH * WINDOW,
            "training_seconds": seconds, "tokens_per_second": batches * BATCH * WINDOW / seconds,
            "curve": curve}  # fmt: skip


def summary(args, pretrained: Dict[str, List[dict]], scores: Dict[str, Dict[str, Dict[str, List[float]]]],
            command: str) -> dict:  # fmt: skip
    """Everything the report shows, as data: per precision the pretraining seeds' curves, speed
    and final validation metrics, and per task the test and dev scores of every run."""
    return {
        "command": command, "machine": machine(), "tokens": args.tokens,
        "tasks": args.tasks, "task_seeds": args.seeds,
        "pretraining": {precision: [{key: run[key] for key in ("tokens", "training_seconds", "tokens_per_second", "curve")}
                                    for run in runs] for precision, runs in pretrained.items()},  # fmt: skip
        "downstream": scores,
    }


def render(args, data: dict) -> str:
    lines = [BEGIN, "## Pretraining in bfloat16", "",
             f"Produced by `{data['command']}` (see its docstring). Machine: {data['machine']}. "
             f"Demo-size ELMo-C (cosine), {data['tokens'] / 1e6:.2f}M tokens each, one thread per run; "
             "bfloat16 is `model.precision: bfloat16` (the encoder's matrix products in bfloat16 "
             "with float32 accumulation, its state, the heads' losses and the optimizer in float32).",
             "", "Validation after each fifth of the run (mean ± std over the pretraining seeds):", "",
             "| tokens | " + " | ".join(f"{key.replace('_', ' ')}, {p}" for key in CURVE for p in PRECISIONS) + " |",
             "|---|" + "---|" * (len(CURVE) * len(PRECISIONS))]  # fmt: skip
    pretraining = data["pretraining"]
    points = min(len(run["curve"]) for runs in pretraining.values() for run in runs)
    for point in range(points):
        cells = []
        for key in CURVE:
            for precision in PRECISIONS:
                values = [run["curve"][point][key] for run in pretraining.get(precision, [])]
                cells.append(mean_std(values, scale=1.0, digits=4))
        tokens = pretraining[PRECISIONS[0]][0]["curve"][point]["tokens"]
        shown = f"{tokens / 1e6:.2f}M" if tokens >= 100_000 else f"{tokens:,}"
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    lines += ["", "At the end, bfloat16 against float32 (the difference of the means, twice its "
              "standard error over the seeds):", "",
              "| measure | float32 | bfloat16 | bfloat16 - float32 |", "|---|---|---|---|"]  # fmt: skip

    def row(label: str, by_precision: Dict[str, List[float]], scale: float, digits: int = 2) -> str:
        cells = [mean_std(by_precision.get(p, []), scale=scale, digits=digits) for p in PRECISIONS]
        found = downstream_difference([v * scale for v in by_precision.get("bfloat16", [])],
                       [v * scale for v in by_precision.get("float32", [])])  # fmt: skip
        against = "-" if found is None else (f"{found['difference']:+.{digits}f} (± {found['spread']:.{digits}f}) "
                                             f"{found['verdict']}")  # fmt: skip
        return f"| {label} | " + " | ".join(cells) + f" | {against} |"

    for key in CURVE:
        values = {p: [run["curve"][-1][key] for run in runs] for p, runs in pretraining.items()}
        lines.append(row(f"validation {key.replace('_', ' ')}", values, 1.0, digits=4))
    for task, by_precision in data["downstream"].items():
        label = TASKS[task][2]
        lines.append(row(f"{label}, test", {p: s["test"] for p, s in by_precision.items()}, 100.0))
        lines.append(row(f"{label}, dev", {p: s["dev"] for p, s in by_precision.items()}, 100.0))
    speed = {p: [run["tokens_per_second"] for run in runs] for p, runs in pretraining.items()}
    lines.append(row("pretraining tokens/s (one thread, cores shared by two runs)", speed, 1.0, digits=0))
    tasks = ", ".join(TASKS[task][2] for task in data["tasks"])
    lines += ["", f"Downstream: {tasks}, {data['task_seeds']} task seeds per biLM; each cell pools "
              "the task seeds of both pretraining seeds.", END]  # fmt: skip
    return "\n".join(lines) + "\n"


def parse_arguments(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", "--report", out=Path("runs/precision"))
    parser.add_argument("--summary", type=Path, default=None, help="default OUT/precision.json")
    add_arguments(parser, "--shared-data", "--corpus-dir", "--fasttext-bin", "--brown-source")
    parser.add_argument("--tasks", default="ner,pos")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--pretrain-seeds", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=3, help="task seeds per biLM")
    parser.add_argument("--tokens", type=int, default=4_000_000)
    parser.add_argument("--points", type=int, default=5, help="validations along the run")
    add_arguments(parser, "--fasttext-dim")
    parser.add_argument("--task-epochs", type=int, default=15)
    parser.add_argument("--task-patience", type=int, default=4)
    add_arguments(parser, "--pos-train-sentences")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON, for every biLM")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every task run")
    add_arguments(parser, "--keep-task-runs")
    parser.add_argument("--report-only", action="store_true", help="run nothing: the report "
                        "from the steps finished so far")  # fmt: skip
    parser.add_argument("--only", default=None, help="stop after this step kind: data, pretrain")
    args = parser.parse_args(argv)
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not set(args.tasks) <= set(TASKS) or not set(args.precisions) <= set(PRECISIONS):
        parser.error(f"unknown task or precision: {args.tasks}, {args.precisions}")
    args.out, args.data_dir = args.out.resolve(), args.data_dir.resolve()
    args.report = args.report or args.out / "QUALITY.md"
    args.summary = args.summary or args.out / "precision.json"
    return args


def pretrain_all(args, steps: Steps, corpus: dict, vectors: dict) -> Dict[str, List[dict]]:
    """The pretraining runs finished so far: `{precision: [run per seed]}`."""
    pretrained: Dict[str, List[dict]] = {}
    for seed in range(1, args.pretrain_seeds + 1):
        for precision in args.precisions:
            name = f"pretrain-{precision}-seed{seed}"
            if steps.running_elsewhere(name):
                logger.info("step %s runs in another process", name)
                continue
            found = steps.run(name, lambda p=precision, s=seed: pretrain_step(args, p, s, corpus, vectors))
            if found is not None:
                pretrained.setdefault(precision, []).append(found)
    return pretrained


def task_scores(args, steps: Steps, pretrained: Dict[str, List[dict]], data: dict,
                vectors: dict) -> Dict[str, Dict[str, Dict[str, List[float]]]]:  # fmt: skip
    """`{task: {precision: {"dev": scores, "test": scores}}}` of the task runs finished so far."""
    scores: Dict[str, Dict[str, Dict[str, List[float]]]] = {}
    for task in args.tasks:
        for precision, runs in pretrained.items():
            cell = scores.setdefault(task, {}).setdefault(precision, {"dev": [], "test": []})
            for seed, run in enumerate(runs, start=1):
                for task_seed in range(1, args.seeds + 1):
                    tag = f"{precision}-seed{seed}"
                    name = f"task-{task}-{tag}-taskseed{task_seed}"
                    if steps.running_elsewhere(name):
                        logger.info("step %s runs in another process", name)
                        continue
                    outcome = steps.run(name, lambda: task_step(
                        args, task, tag, run["archive"], task_seed, data[task], vectors))  # fmt: skip
                    if outcome is not None:
                        for split in ("dev", "test"):
                            cell[split].append(outcome[split])
    return scores


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_arguments(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)
    if args.report_only:
        steps.run = lambda name, work: steps.done(name)
    corpus = steps.run("corpus", lambda: corpus_step(args))
    vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
    data = {task: steps.run(f"data-{task}", lambda task=task: DATA_STEPS[task](args))
            for task in args.tasks}  # fmt: skip
    if args.only == "data":
        return
    pretrained = pretrain_all(args, steps, corpus, vectors)
    if args.only == "pretrain":
        return
    scores = task_scores(args, steps, pretrained, data, vectors)
    if not all(pretrained.get(p) for p in PRECISIONS):
        return  # nothing to compare yet
    command = steps_command("experiments.quality.precision", argv)
    found = summary(args, pretrained, scores, command)
    args.summary.write_text(json.dumps(found, indent=1) + "\n")
    replace_section(args.report, BEGIN, END, render(args, found))
    print(render(args, found))

if __name__ == "__main__":
    main()
