"""
Where each `quality_per_minute.py` system's pretraining step spends its time: a short
`allennlp train` run of each system with exactly its pretraining overrides (same config, corpus,
fastText vectors, batch, one thread) and the `step_phases` callback, which splits every measured
step into data, forward and backward of each part of the model, and the optimizer.

    python -m experiments.quality.training_profile --data-dir data --out runs/per_minute \
        --report experiments/quality/QUALITY.md

It reads the `corpus` and `fasttext` steps of `quality_per_minute.py`'s OUT (or `--corpus-dir` /
`--fasttext-bin`) and writes OUT/profile/SYSTEM/step_phases.json (kept: a system already measured
is not run again with the same settings) and a section of `--report` between the markers of
`--section` (one per set of vectors: `--section step-phases-general --title ...` for
`where_elmo_c_wins.py`'s 300-d runs beside the 100-d ones). Only the data loader's chunk
differs from the pretraining runs (`--chunk-batches` batches read, indexed and shuffled at a time
instead of 200), so that the measured window holds several chunks; its cost per batch is the same.
"""

import argparse
import datetime
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence

from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import corpus_step, fasttext_step
from experiments.quality.steps import BATCH, PROJECT, TRAINING_CONFIG, Steps
from experiments.quality.systems import BILMS
from experiments.quality import per_minute as quality_per_minute
from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section

from experiments.quality.step_phases import RESULT_FILE

SECTION = "step-phases"
TITLE = "Where each system's pretraining time goes"


# Each measured phase by the part of the model it belongs to (the model's direct submodules by
# name; every other submodule is part of the output layer).
PARTS = ("data and trainer", "input embedder", "contextualizer", "output layer",
         "model's own code", "after backward")  # fmt: skip

logger = logging.getLogger("training_profile")


def part_of(phase: str) -> str:
    if phase in ("data and trainer", "after backward"):
        return phase
    if phase in ("forward, model's own code", "backward, before the submodules",
                 "between forward and backward"):  # fmt: skip
        return "model's own code"
    submodule = phase.split(" ", 1)[1]
    if "text_field_embedder" in submodule:
        return "input embedder"
    if "contextualizer" in submodule:
        return "contextualizer"
    return "output layer"


def profile_overrides(args, system: str, corpus: dict, vectors: dict) -> dict:
    """The system's pretraining overrides, with `step_phases` in place of the time budgets and
    one epoch of just the batches it needs."""
    overrides = quality_per_minute.system_overrides(args, system, corpus, vectors)
    callbacks = [c for c in overrides["trainer.callbacks"] if c["type"] != "training_time_budgets"]
    callbacks.append({"type": "step_phases", "skip": args.skip, "batches": args.batches})
    overrides.update({
        "trainer.callbacks": callbacks,
        "trainer.num_epochs": 1,
        "data_loader.batches_per_epoch": args.skip + args.batches,
        "data_loader.max_instances_in_memory": args.chunk_batches * BATCH,
    })  # fmt: skip
    return overrides


def profile_system(args, system: str, corpus: dict, vectors: dict) -> dict:
    """The system's `step_phases.json`: kept from an earlier run with the same overrides, else
    measured (a run with other settings, or one that stopped, is measured again)."""
    run = args.out / "profile" / system
    result, settings = run / RESULT_FILE, run.parent / f"{system}.overrides.json"
    overrides = profile_overrides(args, system, corpus, vectors)
    if result.is_file() and settings.is_file() and json.loads(settings.read_text()) == overrides:
        return json.loads(result.read_text())
    if run.exists():
        shutil.rmtree(run)
    settings.unlink(missing_ok=True)
    run.parent.mkdir(parents=True, exist_ok=True)
    config = BILMS[system].config
    command = [sys.executable, "-m", "allennlp_elmo_c", "train",
               str(TRAINING_CONFIG / config), "-s", str(run), "-o", json.dumps(overrides),
               "--include-package", "experiments.quality.step_phases",
               "--file-friendly-logging"]  # fmt: skip
    environment = dict(os.environ, ELMO_C_DATA_DIR=str(args.data_dir),
                       OMP_NUM_THREADS=str(args.threads))  # fmt: skip
    commit = quality_per_minute.current_commit()  # the code that runs, even if HEAD moves on
    logger.info("profiling %s", system)
    log = run.parent / f"{system}.log"
    with open(log, "w") as stream:
        finished = subprocess.run(command, cwd=PROJECT, env=environment, stdout=stream, stderr=stream)
    if finished.returncode != 0 or not result.is_file():
        raise RuntimeError(f"profiling {system} failed: see {log}")
    settings.write_text(json.dumps(overrides, indent=1))
    measured_record(args, system).write_text(json.dumps({
        "commit": commit, "date": datetime.date.today().isoformat(),
    }))  # fmt: skip
    return json.loads(result.read_text())


def measured_record(args, system: str) -> Path:
    """Where the commit and date of a system's kept measurement are recorded."""
    return args.out / "profile" / f"{system}.measured.json"


def provenance(args, systems: Sequence[str]) -> str:
    """'commit X, DATE' of the kept measurements (they may predate the report's rendering); each
    system's own where they differ."""
    stamps = {}
    for system in systems:
        path = measured_record(args, system)
        record = json.loads(path.read_text()) if path.is_file() else {}
        stamps[system] = (f"commit {record.get('commit', 'not recorded')}, "
                          f"{record.get('date', 'date not recorded')}")  # fmt: skip
    if len(set(stamps.values())) == 1:
        return next(iter(stamps.values()))
    return ", ".join(f"{BILMS[s].label} at {stamp}" for s, stamp in stamps.items())


def pretraining_rate(args, system: str) -> Optional[float]:
    """Tokens/s of the system's pretraining run at its longest budget, if it ran."""
    record = Steps(args.out).done(f"pretrain-{system}")
    if not record:
        return None
    longest = max(record["budgets"], key=float)
    return record["budgets"][longest]["tokens_per_second"]


def render(args, results: Dict[str, dict]) -> str:
    command = ("python -m experiments.quality.training_profile " + " ".join(args.argv)).strip()
    conditions = f"; {args.conditions}" if args.conditions else ""
    begin, end = markers(args.section)
    lines = [begin, "", f"## {args.title}", "",
             f"`{command}` ({machine()}, {args.threads} thread, measured at "
             f"{provenance(args, list(results))}{conditions}). A short `allennlp train` of each "
             "system with its "
             "pretraining overrides and the `step_phases` callback "
             f"(`experiments/quality/step_phases.py`): {args.skip} batches of warm-up, "
             f"then the mean share of a step of each part over {args.batches} batches "
             "(forward and backward together; `step_phases.json` has each).", "",
             "| system | tokens / step | step (median) | tokens/s here | tokens/s in pretraining | "
             + " | ".join(PARTS) + " |",
             "|---" * (5 + len(PARTS)) + "|"]  # fmt: skip
    for system, result in results.items():
        parts = {part: 0.0 for part in PARTS}
        for phase, seconds in result["mean_seconds"].items():
            parts[part_of(phase)] += seconds
        step = result["mean_step_seconds"]
        rate = pretraining_rate(args, system)
        cells = [BILMS[system].label, f"{result['tokens_per_step']:,.0f}",
                 f"{result['median_step_seconds'] * 1000:,.0f} ms",
                 f"{result['tokens_per_step'] / step:,.0f}",
                 f"{rate:,.0f}" if rate else "-"]  # fmt: skip
        cells += [f"{100 * parts[part] / step:.0f}% ({parts[part] * 1000:,.0f} ms)" for part in PARTS]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Parts: `input embedder`, `contextualizer`: the model's submodules of those "
              "names; `output layer`: its other submodules (the continuous heads and their loss, the "
              "adaptive softmax, the sampled softmax, and the dropout that the models apply to "
              "the top layer and to the input: at most 2 ms); `model's own code`: what its `forward` "
              "runs outside submodules, and the backward of that; `after backward`: gradient "
              "clipping, the learning-rate scheduler, the optimizer step; `data and trainer`: "
              "reading, indexing and batching the corpus, `zero_grad`, callbacks.", "",
              end]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", "--report", out=Path("runs/per_minute"))
    add_arguments(parser, "--corpus-dir", "--fasttext-bin", "--shared-data", helps=False)
    parser.add_argument("--systems", default=",".join(quality_per_minute.SYSTEMS))
    parser.add_argument("--skip", type=int, default=10)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--chunk-batches", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    add_arguments(parser, "--fasttext-dim")
    parser.add_argument("--pretrain-overrides", default="{}")
    parser.add_argument("--section", default=SECTION, help="the name of the report's markers")
    parser.add_argument("--title", default=TITLE, help="the section's heading")
    parser.add_argument("--conditions", default="", help="what else ran on the machine meanwhile "
                        "(said in the report)")  # fmt: skip
    args = parser.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in quality_per_minute.SYSTEMS]
    if unknown:
        parser.error(f"unknown system: {unknown}")
    args.minutes = [1.0]  # read by the pretraining overrides' budget callback, which is replaced
    args.out, args.data_dir = args.out.resolve(), args.data_dir.resolve()
    args.report = args.report or args.out / "QUALITY.md"
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)
    corpus = steps.run("corpus", lambda: corpus_step(args))
    vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
    results: Dict[str, dict] = {}
    for system in args.systems:
        results[system] = profile_system(args, system, corpus, vectors)
    replace_section(args.report, *markers(args.section), render(args, results))
    logger.info("wrote %s", args.report)


if __name__ == "__main__":
    main()
