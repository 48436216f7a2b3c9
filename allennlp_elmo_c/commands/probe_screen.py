"""
`allennlp probe-screen`: pretrained biLMs compared by linear probes on frozen features, fitted
on a task's training split and scored on its development split (docs/choosing-a-bilm.md). Each
later `--archive` is set against the first by a paired bootstrap over the development items.
"""

import argparse
import csv
import json
import re
import textwrap
import time
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_utils.span_utils import bio_tags_to_spans

from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.threads import set_torch_threads
from allennlp_elmo_c.modules.elmo_c import embed_sentences
from allennlp_elmo_c.modules.token_embedders.string_embedder import StringEmbedder

FASTTEXT = "fastText (the biLM's input)"
AVERAGE = "average of all layers"
WITH_BILM = "fastText + average of all layers"

Tagged = List[Tuple[List[str], List[str]]]
Labelled = List[Tuple[List[str], str]]

TOKEN_TASKS = ("pos", "ner")
SENTENCE_TASKS = ("sst5", "sentiment")
PAIR_TASKS = ("stsb",)
SPLIT_FILES = {"pos": ".txt", "ner": ".txt", "sst5": ".txt", "sentiment": ".jsonl", "stsb": ".tsv"}
TASK_FORMATS = {
    "pos": "a sentence a line of word###tag tokens",
    "ner": "CoNLL lines (token first, BIO tag last), a blank line after a sentence",
    "sst5": "a PTB tree a line, its root's label the sentence's",
    "sentiment": "JSON lines with `text` (split at whitespace) and `label`",
    "stsb": "tab-separated band, sentence 1, sentence 2 (more fields unused)",
}
_LEAF = re.compile(r"\(\d+ ([^()\s]+)\)")


def read_tagged(path: Path, limit: Optional[int] = None) -> Tagged:
    """`(words, tags)` per non-empty line of `word###tag` tokens (the first `limit` lines)."""
    sentences: Tagged = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if limit is not None and len(sentences) >= limit:
                break
            pairs = [token.rsplit("###", 1) for token in line.split()]
            bad = [pair for pair in pairs if len(pair) != 2 or not pair[0]]
            if bad:
                token = "###".join(bad[0])
                raise ConfigurationError(f"{path}:{number}: not word###tag: {token!r}")
            if pairs:
                sentences.append(([w for w, _ in pairs], [t for _, t in pairs]))
    if not sentences:
        raise ConfigurationError(f"{path}: no tagged sentences")
    return sentences


def read_conll(path: Path) -> Tagged:
    """`(words, tags)` per sentence of CoNLL lines."""
    sentences: Tagged = []
    words: List[str] = []
    tags: List[str] = []
    with open(path, encoding="utf-8") as lines:
        for line in [*lines, ""]:
            columns = line.split()
            if columns and not columns[0].startswith("-DOCSTART-"):
                words.append(columns[0])
                tags.append(columns[-1])
            elif words:
                sentences.append((words, tags))
                words, tags = [], []
    if not sentences:
        raise ConfigurationError(f"{path}: no tagged sentences")
    return sentences


def _lines(path: Path, parse) -> list:
    """`parse` of each non-blank line of `path`."""
    with open(path, encoding="utf-8") as lines:
        return [parse(line) for line in lines if line.strip()]


def read_trees(path: Path) -> Labelled:
    """`(leaves, root label)` per PTB tree line (SST-5)."""
    return _lines(path, lambda line: (_LEAF.findall(line), line.strip()[1:].split(None, 1)[0]))


def read_jsonl(path: Path) -> Labelled:
    """`(whitespace tokens of text, label)` per JSON line."""
    return [(record["text"].split(), str(record["label"])) for record in _lines(path, json.loads)]


def read_pairs(path: Path) -> List[Tuple[Tuple[List[str], List[str]], str]]:
    """`((tokens of sentence 1, of sentence 2), label)` per tab-separated line (as `csv`)."""
    with open(path, encoding="utf-8", newline="") as lines:
        rows = csv.reader(lines, delimiter="\t")
        return [((row[1].split(), row[2].split()), row[0]) for row in rows if row]


READERS = {"pos": read_tagged, "ner": read_conll, "sst5": read_trees, "sentiment": read_jsonl,
           "stsb": read_pairs}  # fmt: skip


def read_split(task: str, directory: Path, split: str):
    path = directory / f"{split}{SPLIT_FILES[task]}"
    if not path.is_file():
        raise ConfigurationError(f"--task {task}={directory}: no {path.name} in it")
    return READERS[task](path)


def layer_name(k: int, half: Optional[str] = None) -> str:
    name = f"layer {k}" + (" (input projection, no context)" if k == 0 else "")
    return name if half is None else f"layer {k} {half} half"


def token_features(
    representations, sentences: List[List[str]], batch_size: int
) -> Dict[str, numpy.ndarray]:
    """The fastText input, each layer and their average (FASTTEXT, `layer_name`, AVERAGE) ->
    `(num_tokens, dim)` over all tokens of `sentences` in order."""
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))  # as elmo-c-embed
    per_sentence: List[Optional[numpy.ndarray]] = [None] * len(sentences)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        vectors = embed_sentences([sentences[i] for i in chunk], representations,
                                  torch.device("cpu"))  # fmt: skip
        for index, layers in zip(chunk, vectors):  # (num_layers, num_tokens, dim)
            per_sentence[index] = layers
    layers = numpy.concatenate(per_sentence, axis=1)  # type: ignore[arg-type]
    features: Dict[str, numpy.ndarray] = {}
    embedder = representations.bilm.token_embedder
    if not representations.bilm.is_subword and isinstance(embedder, StringEmbedder):
        vocabulary = sorted({word for sentence in sentences for word in sentence})
        with torch.no_grad():
            table = embedder.embed_strings(vocabulary).float().cpu().numpy()
        row = {word: i for i, word in enumerate(vocabulary)}
        features[FASTTEXT] = table[[row[word] for sentence in sentences for word in sentence]]
    features.update((layer_name(k), layer) for k, layer in enumerate(layers))
    features[AVERAGE] = layers.mean(axis=0)
    return features


def probe(
    train_x: numpy.ndarray,
    train_y: Sequence[str],
    dev_x: numpy.ndarray,
    dev_y: Sequence[str],
    c: float,
    max_iter: int,
    seed: int,
    keep_predictions: bool = False,
) -> Dict[str, object]:
    """The dev accuracy and fitting facts (and dev predictions, `keep_predictions`) of a
    standardized multinomial logistic regression."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(train_x)
    model = LogisticRegression(C=c, max_iter=max_iter, random_state=seed)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(scaler.transform(train_x), train_y)
    predictions = model.predict(scaler.transform(dev_x))
    result = {
        "accuracy": float(numpy.mean(predictions == numpy.asarray(dev_y))),
        "dim": int(train_x.shape[1]),
        "iterations": int(numpy.max(model.n_iter_)),
        "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught),
        "fit_seconds": round(time.perf_counter() - started, 2),
    }
    if keep_predictions:
        result["predictions"] = predictions.tolist()
    return result


def named_paths(values: Sequence[str], option: str) -> Dict[str, str]:
    """`{name: path}` from `NAME=PATH` values of `option`, each name once."""
    result = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ConfigurationError(f"{option} takes NAME=PATH, not {value!r}")
        if name in result:
            raise ConfigurationError(f"{option}: {name!r} given twice")
        result[name] = path
    return result


def features(representations, sentences: List[List[str]], batch_size: int, pooled: bool):
    """{FASTTEXT, WITH_BILM} -> `(rows, dim)`: a row per token, or per sentence when `pooled`."""
    layers = token_features(representations, sentences, batch_size)
    if FASTTEXT not in layers:
        raise ConfigurationError(
            "the screen needs a biLM whose input is fastText (a `fasttext` embedder)"
        )
    found = {FASTTEXT: layers[FASTTEXT],
             WITH_BILM: numpy.concatenate([layers[FASTTEXT], layers[AVERAGE]], axis=1)}  # fmt: skip
    if not pooled:
        return found
    bounds = numpy.cumsum([0] + [len(s) for s in sentences])
    return {name: numpy.stack([rows[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
            for name, rows in found.items()}  # fmt: skip


def pair_features(representations, pairs: List[Tuple[List[str], List[str]]], batch_size: int):
    """{FASTTEXT, WITH_BILM} -> `(pairs, 4 x dim)`: `[u; v; |u - v|; u * v]` per pair, u and v
    its two sentences' features averaged over their tokens."""
    pooled = features(representations, [s for pair in pairs for s in pair], batch_size, True)
    found = {}
    for name, rows in pooled.items():
        u, v = rows[0::2], rows[1::2]
        found[name] = numpy.concatenate([u, v, numpy.abs(u - v), u * v], axis=1)
    return found


def task_features(representations, task: str, items: list, batch_size: int):
    """The probe's rows for `items` (a split as `read_split` returns it)."""
    if task in PAIR_TASKS:
        return pair_features(representations, [pair for pair, _ in items], batch_size)
    sentences = [words for words, _ in items]
    return features(representations, sentences, batch_size, task in SENTENCE_TASKS)


def score(task: str, train, dev, train_x, dev_x, args) -> Dict[str, object]:
    """One probe: accuracy, or entity F1 for `ner`, and its development `items`."""
    tokens = task in TOKEN_TASKS

    def labels(items: list) -> list:
        return [y for _, ys in items for y in ys] if tokens else [y for _, y in items]

    result = probe(train_x, labels(train), dev_x, labels(dev), args.c, args.max_iter, args.seed,
                   keep_predictions=True)  # fmt: skip
    predicted = iter(result.pop("predictions"))  # type: ignore[call-overload]
    gold = [y for _, y in dev]
    guessed = [[next(predicted) for _ in y] if tokens else next(predicted) for y in gold]
    result["items"] = item_counts(task, gold, guessed)
    if task == "ner":
        totals = numpy.asarray(result["items"], dtype=numpy.float64).sum(0)
        result["f1"] = float(items_score(task, totals))
    result["score"] = result.get("f1", result["accuracy"])
    return result


def item_counts(task: str, gold: Sequence, predicted: Sequence) -> List[List[int]]:
    """Per development item, what its task's score sums (`items_score`): `[correct, tokens]` per
    POS sentence, `[true positive, predicted, gold]` entity spans per NER sentence, `[correct,
    1]` per item of the others."""
    if task == "ner":
        counts = []
        for gold_tags, predicted_tags in zip(gold, predicted):
            real = set(bio_tags_to_spans(list(gold_tags)))
            guessed = set(bio_tags_to_spans(list(predicted_tags)))
            counts.append([len(real & guessed), len(guessed), len(real)])
        return counts
    if task in TOKEN_TASKS:
        return [[sum(g == p for g, p in zip(gold_tags, predicted_tags)), len(gold_tags)]
                for gold_tags, predicted_tags in zip(gold, predicted)]  # fmt: skip
    return [[int(g == p), 1] for g, p in zip(gold, predicted)]


def items_score(task: str, sums: numpy.ndarray) -> numpy.ndarray:
    """The score from summed `item_counts` (`(..., k)`): entity F1 for `ner`, else accuracy."""
    if task == "ner":
        true_positive, guessed, real = sums[..., 0], sums[..., 1], sums[..., 2]
        denominator = numpy.maximum(guessed + real, 1)
        return 2.0 * true_positive / denominator  # = 2PR / (P + R); 0 without a true positive
    return sums[..., 0] / numpy.maximum(sums[..., 1], 1)


def paired_bootstrap(
    a: dict,
    b: dict,
    tasks: Sequence[str],
    row_a: str = WITH_BILM,
    row_b: str = WITH_BILM,
    resamples: int = 1000,
    seed: int = 0,
) -> Dict[str, float]:
    """The difference `a - b` of two screen results' mean probe score over `tasks`, and its 95%
    interval from a paired bootstrap (the same draws of each task's development items for both)."""
    rng = numpy.random.default_rng(seed)
    difference = numpy.zeros(resamples)
    point = 0.0
    for task in tasks:
        items_a = numpy.asarray(a["tasks"][task][row_a]["items"], dtype=numpy.float64)
        items_b = numpy.asarray(b["tasks"][task][row_b]["items"], dtype=numpy.float64)
        if items_a.shape != items_b.shape:
            raise ValueError(f"{task}: the two results were scored on different items")
        n = len(items_a)
        weights = rng.multinomial(n, numpy.full(n, 1.0 / n), size=resamples)  # (resamples, n)
        difference += items_score(task, weights @ items_a) - items_score(task, weights @ items_b)
        point += items_score(task, items_a.sum(0)) - items_score(task, items_b.sum(0))
    difference /= len(tasks)
    low, high = numpy.percentile(difference, [2.5, 97.5])
    return {"difference": float(point / len(tasks)), "low": float(low), "high": float(high)}


def screen_archive(
    archive: str,
    data: Dict[str, Tuple[list, list]],
    args: argparse.Namespace,
    fasttext_path: Optional[str] = None,
    with_fasttext: bool = True,
) -> Dict[str, object]:
    """`{task: {WITH_BILM: probe, FASTTEXT: probe}}` of one biLM on `data` (`{task: (train,
    dev)}`), the fastText probe only `with_fasttext`."""
    from allennlp_elmo_c.modules.elmo_c import ElmoC, PretrainedBiLM

    started = time.perf_counter()
    set_torch_threads(args.threads, "probe-screen: threads")
    bilm = PretrainedBiLM.from_archive(archive, fasttext_path)
    representations = ElmoC(None, 0, dropout=0.0, module=bilm).eval()
    result: Dict[str, object] = {"archive": archive, "tasks": {}}
    for task, (train, dev) in data.items():
        train_x = task_features(representations, task, train, args.batch_size)
        dev_x = task_features(representations, task, dev, args.batch_size)
        names = [WITH_BILM] + ([FASTTEXT] if with_fasttext else [])
        result["tasks"][task] = {  # type: ignore[index]
            name: score(task, train, dev, train_x[name], dev_x[name], args) for name in names
        }
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def load_data(tasks: Dict[str, str], max_train: Dict[str, int]) -> Dict[str, Tuple[list, list]]:
    """`{task: (train, dev)}`, the training split cut to `max_train[task]` items where given."""
    data = {}
    for task, directory in tasks.items():
        if task not in SPLIT_FILES:
            raise ConfigurationError(
                f"unknown screen task {task!r}: any of {', '.join(SPLIT_FILES)}"
            )
        train = read_split(task, Path(directory), "train")[: max_train.get(task)]
        data[task] = (train, read_split(task, Path(directory), "dev"))
    return data


def task_formats() -> str:
    rows = [f"  {task:<9}  {SPLIT_FILES[task]:<6}  {TASK_FORMATS[task]}" for task in SPLIT_FILES]
    return "\n".join([
        "tasks (--task TASK=DIR, DIR holding the files train and dev with the task's suffix):",
        "  TASK       SUFFIX  FORMAT", *rows,
    ])  # fmt: skip


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--c", type=float, default=1.0, help="probes' inverse L2 strength")
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--probe-pos-sentences", type=int, default=1000,
                        help="the POS probe's training sentences (the first ones)")  # fmt: skip


def add_screen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", action="append", required=True, metavar="NAME=PATH",
                        help="a pretrained biLM (model.tar.gz or model directory; repeatable: "
                        "each later one is set against the first)")  # fmt: skip
    parser.add_argument("--task", action="append", required=True, metavar="TASK=DIR",
                        help=f"a task's data directory; TASK is one of {', '.join(SPLIT_FILES)}")
    parser.add_argument("--fasttext", default=None, help="the .bin for every archive")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    add_probe_arguments(parser)


def screen(args: argparse.Namespace) -> Dict[str, object]:
    """Probes every `--archive` on every `--task`; prints, returns and writes (`--out`) the
    results."""
    data = load_data(named_paths(args.task, "--task"), {"pos": args.probe_pos_sentences})
    archives = named_paths(args.archive, "--archive")
    results = {name: screen_archive(path, data, args, args.fasttext, with_fasttext=i == 0)
               for i, (name, path) in enumerate(archives.items())}  # fmt: skip
    for name, result in results.items():
        for task, probes in result["tasks"].items():  # type: ignore[attr-defined]
            cells = ", ".join(f"{row}: {100 * p['score']:.2f}" for row, p in probes.items())
            print(f"{name} {task}: {cells}")
    first, *others = results
    for name in others:
        found = paired_bootstrap(results[name], results[first], list(data))
        results[name]["against"] = {"archive": first, **found}
        print(f"{name} - {first}, mean over {', '.join(data)}: "
              f"{100 * found['difference']:+.2f} points, "
              f"95% interval [{100 * found['low']:+.2f}, {100 * found['high']:+.2f}] "
              "(paired bootstrap over the development items)")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


@Subcommand.register("probe-screen")
class ProbeScreen(PluginSubcommand):
    description = (
        "Compare pretrained biLMs with linear probes on labelled dev data (POS, NER, SST-5, "
        "sentiment, STS-B): minutes per biLM."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        add_screen_arguments(subparser)
        subparser.description = textwrap.fill(self.description, 79)  # shown as written:
        subparser.formatter_class = argparse.RawDescriptionHelpFormatter
        subparser.epilog = task_formats()

    def run(self, args: argparse.Namespace) -> None:
        screen(args)
