"""
How big a corpus is before it is read (`lm_stream`'s length, `plan`): from the `prepare-corpus`
manifest beside a file when it agrees with the file, else counted once and cached under
`$XDG_CACHE_HOME/allennlp_elmo_c/corpus_counts/`.
"""

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import MANIFEST
from allennlp_elmo_c.data.corpus import corpus_lines
from allennlp_elmo_c.received.received_json import read_received_json

logger = logging.getLogger(__name__)

MAX_RECORD_BYTES = 16 * 1024 * 1024
COUNT_VERSION = 2
SAMPLE_BYTES = 1 << 16
MAX_COUNT = 1 << 62


class CorpusSize(NamedTuple):
    """The sentences (lines with at least one token) and tokens (without boundary tokens) of a
    corpus's files, and where the numbers come from ("manifest", "cache" or "counted")."""

    files: int
    sentences: int
    tokens: int
    source: str


def corpus_size(paths: List[str]) -> CorpusSize:
    """The size of the corpus made of `paths` (from `corpus.corpus_files`)."""
    sentences = tokens = 0
    sources = set()
    for path in paths:
        counts, source = _file_counts(Path(path))
        sentences += counts["sentences"]
        tokens += counts["tokens"]
        sources.add(source)
    source = sources.pop() if len(sources) == 1 else "+".join(sorted(sources))
    return CorpusSize(len(paths), sentences, tokens, source)


def _stream_windows(tokens: int, window: int) -> int:
    """The windows `lm_corpus` makes of a stream of `tokens` tokens (they share one token)."""
    return max(1, math.ceil((tokens - 1) / (window - 1))) if tokens > 0 else 0


def corpus_windows(
    size: CorpusSize, window: Optional[int], boundary_tokens: int, streams: int = 1
) -> int:
    """The instances `lm_corpus` makes of a corpus read as `streams` streams (exact for one)."""
    if window is None:
        return size.sentences
    total = size.tokens + boundary_tokens * size.sentences
    streams = max(1, min(streams, size.sentences)) if size.sentences else 1
    if streams == 1:
        return _stream_windows(total, window)
    return streams * _stream_windows(round(total / streams), window)


def batches(instances: int, batch_size: int, drop_last: bool = False) -> int:
    """Batches of `batch_size` made of `instances` (a shorter last one unless `drop_last`)."""
    return instances // batch_size if drop_last else math.ceil(instances / batch_size)


def _file_counts(path: Path) -> "tuple[Dict[str, int], str]":
    stat = path.stat()
    counts = _from_manifest(path, stat)
    if counts is not None:
        return counts, "manifest"
    record = _cache_file(path, stat)
    cached = _read_record(record)
    if cached is not None and cached.get("key") == _key(path, stat) and _counts(cached):
        return _counts(cached), "cache"  # type: ignore[return-value]
    counts = count_file(path)
    _write_record(record, {"key": _key(path, stat), **counts})
    return counts, "counted"


def count_file(path: Path) -> Dict[str, int]:
    """A corpus file's sentences and whitespace tokens, as `lm_corpus` reads them."""
    sentences = tokens = 0
    logger.info("Counting the sentences and tokens of %s (once; the count is cached)", path)
    for line in corpus_lines([str(path)]):
        words = sum(len(text.split()) for text, _, _ in line)
        sentences += words > 0
        tokens += words
    return {"sentences": sentences, "tokens": tokens}


def _counts(record: Any, size: int = MAX_COUNT) -> Optional[Dict[str, int]]:
    """A record's sentences and tokens if they are integers a file of `size` bytes can hold."""
    try:
        sentences, tokens = record["sentences"], record["tokens"]
    except (KeyError, TypeError):
        return None
    if type(sentences) is not int or type(tokens) is not int:
        return None
    if not 0 <= sentences <= tokens <= (size + 1) // 2 or (tokens and not sentences):
        return None
    return {"sentences": sentences, "tokens": tokens}


def _from_manifest(path: Path, stat: os.stat_result) -> Optional[Dict[str, int]]:
    """The file's counts from a manifest beside it, if they agree with its size and, within a
    factor of 2, with its first `SAMPLE_BYTES`."""
    if stat.st_size <= SAMPLE_BYTES:
        return None
    record = _read_record(path.parent / MANIFEST)
    try:
        record = record["stats"]["files"][path.name]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    counts = _counts(record, stat.st_size)
    if counts is None or record.get("bytes") != stat.st_size:
        return None
    with open(path, "rb") as corpus:
        sample = corpus.read(SAMPLE_BYTES)
    rate = stat.st_size / len(sample)
    for key, sampled in (("tokens", len(sample.split())), ("sentences", sample.count(b"\n"))):
        if not sampled * rate / 2 < counts[key] < 2 * sampled * rate:
            return None
    return counts


def _key(path: Path, stat: os.stat_result) -> List:
    return [COUNT_VERSION, str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def _cache_file(path: Path, stat: os.stat_result) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = hashlib.sha256(json.dumps(_key(path, stat)).encode("utf-8")).hexdigest()[:32]
    return Path(base) / "allennlp_elmo_c" / "corpus_counts" / f"{name}.json"


def _read_record(path: Path) -> Optional[dict]:
    """A manifest or cached count's JSON object; None for anything else."""
    if not path.is_file():
        return None
    try:
        content = read_received_json(path, str(path), max_bytes=MAX_RECORD_BYTES)
    except ConfigurationError:
        return None
    return content if isinstance(content, dict) else None


def _write_record(path: Path, content: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as out:
            json.dump(content, out)
    except OSError as error:
        logger.info("corpus counts not cached (%s)", error)
