"""
Which biLM layers carry part-of-speech information? A linear probe (multinomial logistic
regression on standardized features, C = 1.0, fixed seed) per token representation, fitted on the
training sentences of a tagging data directory and scored on its development sentences (the test
file is never read):

- the majority tag of each word (its most frequent training tag, else the most frequent tag
  overall): the floor every probe must beat;
- the static fastText vector of each word: the biLM's own frozen input, the no-context baseline;
- each layer the representations module returns (`ElmoC.layers`, as
  `elmo-c-embed --all` writes them): layer 0 is the input projection (a linear map of the
  fastText vector and a LayerNorm, per direction: no context), layers 1.. the LSTM layers, each
  forward || backward;
- the plain average of all layers;
- with `--halves`, each layer's forward half and backward half alone.

The sentence boundaries (<S>, </S>) are dropped: one row per word.

    python -m experiments.quality.layer_probe --data-dir data/pos \
        --archive demo=data/runs/elmo_c_demo/model.tar.gz \
        --fasttext demo=data/fasttext/news.100d.bin --out layer_probe.json

The data directory holds `train.txt` and `dev.txt`, one sentence per line of `word###tag` tokens
(AllenNLP's `sequence_tagging` format). `--fasttext PATH` points every archive at that fastText
`.bin`; `--fasttext NAME=PATH` only the archive called NAME (an archive records its fastText path,
which may be relative to where it was trained). Prints a Markdown table (one row per
representation, one column per archive: dev token accuracy in %), the number of train and dev
tokens and the seconds taken; `--out` writes everything as JSON. An archive that cannot be read
is reported with its error and the others still run.
"""

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy

from allennlp_elmo_c.commands.probe_screen import (
    Tagged,
    layer_name,
    named_paths,
    probe,
    read_tagged,
    token_features,
)
from allennlp_elmo_c.modules.elmo_c import ElmoC, PretrainedBiLM
from allennlp_elmo_c.common.threads import set_torch_threads

MAJORITY = "majority tag of the word"


def majority_accuracy(train: Tagged, dev: Tagged) -> float:
    """Dev accuracy of tagging each word with its most frequent training tag (ties: the tag seen
    first), else with the most frequent training tag overall."""
    by_word: Dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for words, tags in train:
        for word, tag in zip(words, tags):
            by_word[word][tag] += 1
            overall[tag] += 1
    default = overall.most_common(1)[0][0]
    guesses = {word: counts.most_common(1)[0][0] for word, counts in by_word.items()}
    pairs = [(word, tag) for words, tags in dev for word, tag in zip(words, tags)]
    return sum(guesses.get(word, default) == tag for word, tag in pairs) / len(pairs)


def halves(features: Dict[str, numpy.ndarray]) -> Dict[str, numpy.ndarray]:
    """Each layer's forward (first) and backward (second) half alone."""
    result = {}
    k = 0
    while layer_name(k) in features:
        layer = features[layer_name(k)]
        middle = layer.shape[1] // 2
        result[layer_name(k, "forward")] = layer[:, :middle]
        result[layer_name(k, "backward")] = layer[:, middle:]
        k += 1
    return result


def fasttext_paths(values: Sequence[str], names: Sequence[str]) -> Dict[str, Optional[str]]:
    """`--fasttext PATH` (every archive) or `--fasttext NAME=PATH` (archive NAME) -> per archive."""
    everyone: Optional[str] = None
    per_archive: Dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if sep and name in names:
            per_archive[name] = path
        else:
            everyone = value
    return {name: per_archive.get(name, everyone) for name in names}


def run_archive(
    path: str,
    fasttext_path: Optional[str],
    train: Tagged,
    dev: Tagged,
    args: argparse.Namespace,
) -> Dict[str, object]:
    started = time.perf_counter()
    bilm = PretrainedBiLM.from_archive(path, fasttext_path)
    representations = ElmoC(None, 0, dropout=0.0, module=bilm).eval()
    result: Dict[str, object] = {"fasttext": representations.bilm.fasttext_path}
    train_features = token_features(representations, [w for w, _ in train], args.batch_size)
    dev_features = token_features(representations, [w for w, _ in dev], args.batch_size)
    del representations
    if args.halves:
        train_features.update(halves(train_features))
        dev_features.update(halves(dev_features))
    result["embed_seconds"] = round(time.perf_counter() - started, 1)
    train_y = [t for _, tags in train for t in tags]
    dev_y = [t for _, tags in dev for t in tags]
    probes = {}
    for name in train_features:
        probes[name] = probe(
            train_features[name], train_y, dev_features[name], dev_y,
            args.c, args.max_iter, args.seed,
        )  # fmt: skip
        print(f"  {name}: {100 * probes[name]['accuracy']:.2f}%", file=sys.stderr, flush=True)
    result["probes"] = probes
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def markdown_table(results: Dict[str, object]) -> str:
    archives: Dict[str, Dict] = results["archives"]  # type: ignore[assignment]
    names = list(archives)
    rows: List[str] = []
    for archive in archives.values():
        for row in archive.get("probes", {}):
            if row not in rows:
                rows.append(row)
    lines = [
        "| representation | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
        f"| {MAJORITY} | " + " | ".join(
            f"{100 * results['majority_accuracy']:.2f}" for _ in names) + " |",  # fmt: skip
    ]
    for row in rows:
        cells = []
        for name in names:
            entry = archives[name].get("probes", {}).get(row)
            cell = "–" if entry is None else f"{100 * entry['accuracy']:.2f}"
            if entry is not None and not entry["converged"]:
                cell += " (not converged)"
            cells.append(cell)
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", action="append", required=True, metavar="NAME=PATH",
                        help="a pretrained biLM model.tar.gz (repeatable)")  # fmt: skip
    parser.add_argument("--data-dir", required=True, type=Path, help="train.txt and dev.txt")
    parser.add_argument("--max-train-sentences", type=int, default=1000)
    parser.add_argument("--fasttext", action="append", default=[], metavar="[NAME=]PATH",
                        help="fastText .bin for every archive, or NAME=PATH for one")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    parser.add_argument("--halves", action="store_true", help="probe forward/backward halves too")
    parser.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    parser.add_argument("--max-iter", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, object]:
    args = parse_args(argv)
    started = time.perf_counter()
    args.threads = set_torch_threads(args.threads)
    archives = named_paths(args.archive, "--archive")
    fasttexts = fasttext_paths(args.fasttext, list(archives))
    train = read_tagged(args.data_dir / "train.txt", args.max_train_sentences)
    dev = read_tagged(args.data_dir / "dev.txt")
    results: Dict[str, object] = {
        "command": "python -m experiments.quality.layer_probe "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "data_dir": str(args.data_dir),
        "train_sentences": len(train),
        "train_tokens": sum(len(w) for w, _ in train),
        "dev_sentences": len(dev),
        "dev_tokens": sum(len(w) for w, _ in dev),
        "train_tags": len({t for _, tags in train for t in tags}),
        "probe": {"C": args.c, "max_iter": args.max_iter, "seed": args.seed, "standardized": True},
        "majority_accuracy": majority_accuracy(train, dev),
        "archives": {},
    }
    for name, path in archives.items():
        print(f"{name}: {path}", file=sys.stderr, flush=True)
        try:
            entry = run_archive(path, fasttexts[name], train, dev, args)
        except Exception as error:  # one unreadable archive must not stop the others
            entry = {"error": f"{type(error).__name__}: {error}"}
            print(f"  cannot probe {name}: {entry['error']}", file=sys.stderr, flush=True)
        results["archives"][name] = {"path": path, **entry}  # type: ignore[index]
    results["seconds"] = round(time.perf_counter() - started, 1)
    print(markdown_table(results))
    print()
    print(f"Dev token accuracy (%). Train: {results['train_sentences']} sentences, "
          f"{results['train_tokens']} tokens ({results['train_tags']} tags); dev: "
          f"{results['dev_sentences']} sentences, {results['dev_tokens']} tokens. "
          f"{results['seconds']} s.")  # fmt: skip
    for name, entry in results["archives"].items():  # type: ignore[attr-defined]
        if "error" in entry:
            print(f"{name}: not probed ({entry['error']})")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
