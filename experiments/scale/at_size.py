"""
The own-text path once at a user's size: raw text of about 100M tokens through `prepare-corpus`,
`plan`, and a bounded pretraining run of `training_config/elmo_c_small.jsonnet` on it that is
killed (SIGKILL) after some updates and resumed with `--recover`, then stopped again; and, from
the same checkpoint, a resume without `skip_trained_batches` (AllenNLP's own replay) for what
re-reading the trained batches costs.

    python -m experiments.scale.at_size --source data/news/train.txt \\
        --fasttext data/fasttext/news.100d.bin --copies 41 --updates 300 --work-dir /tmp/at_size

The raw text is `--copies` copies of the source, each line of copy k starting with the token
`r<k>` (so that prepare-corpus's removal of duplicate sentences keeps every copy): for memory and
speed the text's quality does not matter; the report says so. Writes `at_size.json` and the table
of SCALE.md (between its markers) beside this file.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from allennlp.common import Params

from allennlp_elmo_c.commands.plan import plan
from allennlp_elmo_c.training.update_timings import TIMINGS
from experiments.common.machine import machine
from experiments.common.markers import markers, replace_section
from experiments.common.training import timed_overrides

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
CONFIG = PROJECT / "training_config" / "elmo_c_small.jsonnet"
BEGIN, END = markers("at-size-table")
PYTHON = [sys.executable, "-m", "allennlp_elmo_c"]


def raw_text(source: Path, copies: int, directory: Path) -> Path:
    """`copies` files, copy k holding every line of `source` with `r<k> ` before it."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = source.read_text(encoding="utf-8").splitlines()
    for copy in range(copies):
        path = directory / f"copy_{copy:03d}.txt"
        if not path.is_file():
            path.write_text("".join(f"r{copy} {line}\n" for line in lines), encoding="utf-8")
    return directory


def timed(command: List[str], log: Path, environment: Dict[str, str]) -> Dict[str, float]:
    """Runs `command` under GNU time: its wall seconds and peak resident memory."""
    measured = log.with_suffix(".time")
    started = time.time()
    with open(log, "wb") as out:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(measured), *command], check=True,
                       stdout=out, stderr=subprocess.STDOUT, env=environment)  # fmt: skip
    return {"seconds": time.time() - started,
            "peak_memory_bytes": int(measured.read_text().split()[-1]) * 1024}  # fmt: skip


def train_until(run_dir: Path, overrides: Dict[str, Any], environment: Dict[str, str],
                updates: Optional[int], recover: bool, log: Path) -> Dict[str, Any]:  # fmt: skip
    """`allennlp train` (or `--recover`) of the small config, SIGKILLed once its timings record
    holds `updates` updates (None: the first one); its record (copied) and its wall start."""
    command = PYTHON + ["train", str(CONFIG), "-s", str(run_dir), "-o", json.dumps(overrides),
                        "--file-friendly-logging"] + (["--recover"] if recover else [])  # fmt: skip
    timings = run_dir / TIMINGS
    timings.unlink(missing_ok=True)
    started = time.time()
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)
        record: Dict[str, Any] = {}
        while process.poll() is None:
            time.sleep(0.25)
            try:
                record = json.loads(timings.read_text())
            except (OSError, ValueError):
                continue
            if len(record["update_ends"]) >= (updates or 1):
                process.send_signal(signal.SIGKILL)
                break
        process.wait()
    if not record:
        raise RuntimeError(f"the run ended before its first timings record: see {log}")
    return {"record": record, "process_start": started}


def summary(run: Dict[str, Any], tokens_per_update: int) -> Dict[str, Any]:
    record = run["record"]
    ends = record["update_ends"]
    steady = [b - a for a, b in zip(ends[2:], ends[3:])]
    per_update = sorted(steady)[len(steady) // 2] if steady else float("nan")
    return {
        "updates": len(ends),
        "seconds_to_first_update": record["start_wall"] + ends[0] - run["process_start"],
        "seconds_per_update": per_update,
        "tokens_per_second": tokens_per_update / per_update,
        "peak_memory_bytes": record["peak_rss_bytes"],
    }


def prepare(args: argparse.Namespace, environment: Dict[str, str]) -> "tuple[Dict[str, Any], Path]":
    """`prepare-corpus` of the raw copies (timed), or, with `--corpus`, a tokenized corpus as it
    is (prepare-corpus not run); the training file."""
    if args.corpus is not None:
        from allennlp_elmo_c.data.corpus_size import corpus_size

        tokens = corpus_size([str(args.corpus)]).tokens
        return {"skipped": True, "train_tokens": tokens, "validation_tokens": 0}, args.corpus
    raw = raw_text(args.source, args.copies, args.work_dir / "raw")
    corpus = args.work_dir / "corpus"
    fraction = "0" if args.validation else "0.002"
    prepared = timed(PYTHON + ["prepare-corpus", str(raw), str(corpus), "--language", "en",
                               "--validation-fraction", fraction, "--quiet"],
                     args.work_dir / "prepare.log", environment)  # fmt: skip
    splits = json.loads((corpus / "manifest.json").read_text())["stats"]["splits"]
    prepared.update(skipped=False, train_tokens=splits["train"]["tokens"],
                    validation_tokens=splits["validation"]["tokens"])  # fmt: skip
    return prepared, corpus / "train.txt"


def gnu_time_record(log: Path, corpus: Path) -> Dict[str, Any]:
    """A `prepare-corpus` run made apart under `/usr/bin/time -v` (its output in `log`) into
    `corpus`: its wall and CPU seconds and peak memory as GNU time reported them, and the tokens
    its manifest counted."""
    text = log.read_text(encoding="utf-8", errors="replace")

    def field(name: str) -> str:
        found = re.search(rf"^\s*{re.escape(name)}: (.+)$", text, re.M)
        if found is None:
            raise ValueError(f"{log}: no {name!r} line: not the output of /usr/bin/time -v")
        return found.group(1).strip()

    if field("Exit status") != "0":
        raise ValueError(f"{log}: prepare-corpus exited with status {field('Exit status')}")
    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    splits = json.loads((corpus / "manifest.json").read_text())["stats"]["splits"]
    return {
        "skipped": False, "apart": True, "command": field("Command being timed").strip('"'),
        "seconds": wall,
        "cpu_seconds": float(field("User time (seconds)")) + float(field("System time (seconds)")),
        "peak_memory_bytes": int(field("Maximum resident set size (kbytes)")) * 1024,
        "train_tokens": splits["train"]["tokens"], "validation_tokens": splits["validation"]["tokens"],
    }  # fmt: skip


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    work = args.work_dir
    environment = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    prepared, train = prepare(args, environment)
    validation = args.validation or train.with_name("validation.txt")
    ext_vars = {"ELMO_C_FASTTEXT": str(args.fasttext), "ELMO_C_VALIDATION_DATA": str(validation)}
    environment.update(ext_vars, ELMO_C_TRAIN_DATA=str(train))
    planned = plan(str(train), str(CONFIG), json.dumps(args.overrides), args.plan_updates,
                   ext_vars, str(work))  # fmt: skip
    every = {"trainer.checkpointer.save_every_num_batches": args.checkpoint_every}
    params, with_timings = timed_overrides(CONFIG, {**args.overrides, **every}, environment,
                                           write_every=10)  # fmt: skip
    replay = {**with_timings, "trainer.callbacks": [c for c in with_timings["trainer.callbacks"]
                                                    if c["type"] != "skip_trained_batches"]}
    run_dir = work / "run"
    tokens = 20 * params["data_loader"]["batch_size"]  # new tokens a full window batch predicts
    first = train_until(run_dir, with_timings, environment, args.updates, False, work / "1.log")
    checkpoint = sorted(run_dir.glob("model_state_e0_b*.th"), key=os.path.getmtime)[-1].name
    backup = work / "at_checkpoint"
    subprocess.run(["rm", "-rf", str(backup)], check=True)
    subprocess.run(["cp", "-a", str(run_dir), str(backup)], check=True)
    resumed = train_until(run_dir, with_timings, environment, args.updates, True, work / "2.log")
    # The same run without the callback: AllenNLP resumes only a run of the same config.
    config = Params.from_file(str(CONFIG), json.dumps(replay), ext_vars=environment)
    (backup / "config.json").write_text(json.dumps(config.as_dict(quiet=True), indent=2))
    replayed = train_until(backup, replay, environment, None, True, work / "3.log")
    return {
        "machine": machine(), "date": time.strftime("%Y-%m-%d"), "threads": args.threads,
        "copies": args.copies, "source": args.source.name, "conditions": args.conditions,
        "prepare_corpus": prepared,
        "plan": {key: planned[key] for key in ("tokens", "windows", "updates", "seconds_per_update",
                                               "estimated_seconds", "peak_memory_bytes",
                                               "seconds_to_first_update")},
        "checkpoint": checkpoint,
        "first": summary(first, tokens),
        "resumed": summary(resumed, tokens),
        "replayed_first_update_seconds": summary(replayed, tokens)["seconds_to_first_update"],
    }  # fmt: skip


def render(record: Dict[str, Any]) -> str:
    prepared, planned = record["prepare_corpus"], record["plan"]
    first, resumed = record["first"], record["resumed"]
    gib = 2**30
    lines = [
        BEGIN,
        f"{record['machine']}, {record['date']}, {record['threads']} thread(s). Raw text: "
        f"{record['copies']} copies of {record['source']} (each line of copy k led by the token "
        f"r<k>): a repeated corpus, for memory and speed only. {record['conditions']}",
        "",
        "| step | result |",
        "|---|---|",
        f"| prepare-corpus | {_prepared(prepared)} |",
        f"| plan | {planned['updates']:,} updates, {planned['seconds_per_update']:.3f} s each, "
        f"{planned['estimated_seconds'] / 3600:.1f} h in all, peak "
        f"{planned['peak_memory_bytes'] / gib:.2f} GiB |",
        f"| train, killed after {first['updates']:,} updates | first update after "
        f"{first['seconds_to_first_update']:.0f} s; {first['seconds_per_update']:.3f} s an update "
        f"({first['tokens_per_second']:,.0f} tokens/s); peak {first['peak_memory_bytes'] / gib:.2f} "
        "GiB |",
        f"| --recover from {record['checkpoint']}, killed after {resumed['updates']:,} more | "
        f"first new update after {resumed['seconds_to_first_update']:.0f} s; "
        f"{resumed['seconds_per_update']:.3f} s an update; peak "
        f"{resumed['peak_memory_bytes'] / gib:.2f} GiB |",
        f"| --recover without skip_trained_batches (AllenNLP re-reads the trained batches) | first "
        f"new update after {record['replayed_first_update_seconds']:.0f} s |",
        f"| the plan's error | time an update {planned['seconds_per_update'] / first['seconds_per_update'] - 1:+.0%}, "
        f"peak memory {planned['peak_memory_bytes'] / first['peak_memory_bytes'] - 1:+.0%} |",
    ]  # fmt: skip
    return "\n".join(lines + [END])


def _prepared(prepared: Dict[str, Any]) -> str:
    if prepared["skipped"]:
        return f"not run: a tokenized corpus of {prepared['train_tokens']:,} tokens was given"
    made = (f"{prepared['train_tokens']:,} training tokens in {prepared['seconds'] / 60:.1f} min, "
            f"peak {prepared['peak_memory_bytes'] / 2**30:.2f} GiB")  # fmt: skip
    if prepared.get("apart"):
        rate = (prepared["train_tokens"] + prepared["validation_tokens"]) / prepared["cpu_seconds"]
        made += (f" ({prepared['cpu_seconds'] / 60:.1f} CPU-minutes, {rate:,.0f} tokens a "
                 f"CPU-second; run apart: `{prepared['command']}`)")  # fmt: skip
    return made


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="tokenized text to repeat")
    parser.add_argument("--fasttext", type=Path, required=True, help="a 100-d fastText .bin")
    parser.add_argument("--validation", type=Path, default=None,
                        help="validation text (default: 0.2%% of the documents, split off)")
    parser.add_argument("--copies", type=int, default=41)
    parser.add_argument("--corpus", type=Path, default=None,
                        help="a tokenized corpus to train on as it is (prepare-corpus not run)")
    parser.add_argument("--updates", type=int, default=300, help="updates before each kill")
    parser.add_argument("--plan-updates", type=int, default=20)
    parser.add_argument("--checkpoint-every", type=int, default=100, help="updates")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--conditions", default="", help="what else ran on the machine")
    parser.add_argument("--overrides", type=json.loads, default={}, help="JSON, as for train")
    parser.add_argument("--out", type=Path, default=HERE / "at_size.json")
    parser.add_argument("--report", type=Path, default=HERE / "SCALE.md")
    parser.add_argument("--prepared-apart", type=Path, nargs=2, metavar=("TIME_LOG", "CORPUS"),
                        help="record a prepare-corpus run made apart under /usr/bin/time -v into "
                        "--out's record, and render; nothing else runs")  # fmt: skip
    args = parser.parse_args(argv)
    if args.prepared_apart:
        record = json.loads(args.out.read_text())
        record["prepare_corpus"] = gnu_time_record(*args.prepared_apart)
        record["conditions"] = args.conditions or record["conditions"]
    else:
        record = measure(args)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    replace_section(args.report, BEGIN, END, render(record))


if __name__ == "__main__":
    main()
