"""
Which vector ends a sentence: a choice measured on the demo setup.

    python -m experiments.quality.sentence_end --data-dir data --out runs/sentence_end \
        --seeds 1,2 --report experiments/quality/SENTENCE_END.md

The paper's code gives the sentence-end token fastText's own `</s>` row (a trained vector: fastText
ends every line with it) and replaces an all-zero fastText vector with the `<unk>` vector. Our
reader's default ends a sentence with `</S>`, whose vector is the mean of its hashed character
n-grams like any unknown word's, and all-zero vectors stay targets. Two variants of
`training_config/elmo_c_demo.jsonnet` differ only in the reader's end token:

- `hashed`: `</S>` (the default, what every archive before this choice was trained with);
- `fasttext_eos`: `dataset_reader.end_tokens: ["</s>"]`, fastText's row.

For each variant and seed: pretrain on the demo's news corpus, record the best validation cosine
(the mean of both directions; each variant predicts its own end token, so this compares the
models on slightly different targets), then train the demo's CRF POS tagger (fastText + ELMo-C,
`downstream_configs/pos_elmo_c.jsonnet`, 1,000 training sentences) and record its development
accuracy. The test split is never read. The report also counts the corpus tokens whose fastText
vector is all zeros (what the `<unk>` replacement would touch).

The demo data must exist (`make demo` or `make data` builds it; this script builds the POS data
and the fastText vectors as the demo does, cached). Every run is kept in OUT: a rerun skips
finished runs.
"""

import argparse
import collections
import json
import logging
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np

from allennlp.commands.train import train_model
from allennlp.common.plugins import import_plugins

from allennlp_elmo_c.archive import read_archive_config, representation_dim
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.common.threads import set_torch_threads
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from experiments.common.seeds import mean_std
from experiments.corpora.brown_corpus import brown_source
from experiments.corpora.brown_pos import build_brown_pos
from experiments.demo.main import (
    CONFIG,
    FASTTEXT_DIM,
    POS_CONFIG,
    POS_LIMITS,
    config,
    write_candidates,
)
from experiments.quality.arguments import add_arguments

PROJECT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "hashed": {},
    "fasttext_eos": {"dataset_reader.end_tokens": ["</s>"]},
}
POS_SETTINGS = {"trainer.num_epochs": 10, "trainer.patience": 3, "evaluate_on_test": False}

logger = logging.getLogger("sentence_end")


def seeded(seed: int) -> Dict[str, int]:
    return {"random_seed": seed, "numpy_seed": seed, "pytorch_seed": seed}


def run(params, directory: Path) -> dict:
    """`allennlp train` into `directory` unless its metrics.json exists; the metrics."""
    metrics = directory / "metrics.json"
    if not metrics.is_file():
        logger.info("training %s", directory)
        train_model(params, str(directory), force=True)
    return json.loads(metrics.read_text())


def pretrain(data_dir: Path, out: Path, variant: str, seed: int, extra: dict) -> Path:
    overrides = {**extra, **VARIANTS[variant], **seeded(seed)}
    params = config(PROJECT, CONFIG, {"ELMO_C_DATA_DIR": str(data_dir)}, overrides)
    directory = out / f"pretrain-{variant}-seed{seed}"
    run(params, directory)
    return directory


def pos_dev_accuracy(data_dir: Path, out: Path, archive: Path, vectors: Path, seed: int,
                     variant: str, extra: dict) -> float:  # fmt: skip
    ext_vars = {
        "ELMO_C_FASTTEXT": str(vectors),
        "POS_DATA_DIR": str(data_dir / "pos"),
        "ELMO_C_ARCHIVE": str(archive),
        "ELMO_C_BASELINE": "none",
        "ELMO_C_DIM": str(representation_dim(read_archive_config(str(archive)))),
    }
    params = config(PROJECT, POS_CONFIG, ext_vars, {**POS_SETTINGS, **extra, **seeded(seed)})
    metrics = run(params, out / f"pos-{variant}-seed{seed}")
    return metrics["best_validation_accuracy"]


def zero_vectors(vectors: Path, paths: Sequence[Path]) -> Dict[str, int]:
    model = FastTextBin.load(vectors)
    counts: collections.Counter = collections.Counter()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                counts.update(line.split())
    zero = {word: n for word, n in counts.items() if not np.any(model.word_vector(word))}
    return {"tokens": sum(counts.values()), "types": len(counts),
            "zero_tokens": sum(zero.values()), "zero_types": len(zero)}  # fmt: skip


def report(results: Dict[str, Dict[int, dict]], zeros: Dict[str, int], command: str) -> str:
    lines = [
        "# Which vector ends a sentence (demo setup)",
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d')} (see the script's docstring).",
        "",
        "| variant | end token | validation cosine (mean of both LMs) | POS dev accuracy |",
        "|---|---|---|---|",
    ]
    for variant, seeds in results.items():
        token = VARIANTS[variant].get("dataset_reader.end_tokens", ["</S>"])[0]
        cosines = [r["cosine"] for r in seeds.values()]
        accuracies = [r["pos_dev"] for r in seeds.values()]
        lines.append(f"| {variant} | `{token}` | {mean_std(cosines, 1.0, 4)} | {mean_std(accuracies, 1.0, 4)} |")
    lines += [
        "",
        "Per seed: " + "; ".join(
            f"{variant} seed {seed}: cosine {r['cosine']:.4f}, POS dev {r['pos_dev']:.4f}"
            for variant, seeds in results.items() for seed, r in seeds.items()
        ) + ".",  # fmt: skip
        "",
        f"All-zero fastText vectors in the demo corpus (train + dev): {zeros['zero_tokens']:,} of "
        f"{zeros['tokens']:,} tokens ({zeros['zero_types']:,} of {zeros['types']:,} types).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", out=Path("runs/sentence_end"))
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", type=Path, default=None, help="default OUT/SENTENCE_END.md")
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON, for every biLM")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every tagger")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    args.threads = set_torch_threads(args.threads)
    import_plugins()
    data_dir, out = args.data_dir.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    news = data_dir / "news"
    if not (news / "train.txt").is_file():
        parser.error(f"{news}/train.txt not found: build the demo data first (`make data`)")
    build_brown_pos(data_dir / "pos", brown_source(data_dir / "packages"), POS_LIMITS)
    vectors = train_fasttext(news / "train.txt", data_dir / "fasttext" / "news.100d.bin",
                             dim=FASTTEXT_DIM, threads=args.threads, verbose=0)  # fmt: skip
    write_candidates(vectors, vectors.parent / "frequent_words.txt")  # the config's candidates
    results: Dict[str, Dict[int, dict]] = {}
    for seed in (int(s) for s in args.seeds.split(",") if s):
        for variant in (v for v in args.variants.split(",") if v):
            directory = pretrain(data_dir, out, variant, seed, json.loads(args.pretrain_overrides))
            metrics = json.loads((directory / "metrics.json").read_text())
            cosine = 0.5 * (metrics["best_validation_forward_cosine"]
                            + metrics["best_validation_backward_cosine"])  # fmt: skip
            accuracy = pos_dev_accuracy(data_dir, out, directory / "model.tar.gz", vectors, seed,
                                        variant, json.loads(args.task_overrides))  # fmt: skip
            results.setdefault(variant, {})[seed] = {"cosine": cosine, "pos_dev": accuracy}
    zeros = zero_vectors(vectors, [news / "train.txt", news / "dev.txt"])
    command = "python -m experiments.quality.sentence_end " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in (("seeds", args.seeds),
                                                    ("variants", args.variants),
                                                    ("threads", args.threads))  # fmt: skip
    )
    text = report(results, zeros, command)
    (args.report or out / "SENTENCE_END.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
