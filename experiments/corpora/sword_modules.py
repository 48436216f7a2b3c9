"""
English prose from SWORD Bible modules packaged by Debian: a reader of SWORD's compressed verse
modules (the `zText`/`zCom` drivers and their `4` variants), markup stripping to plain text, and
three pretraining sources (the World English Bible and two public-domain commentaries).

A SWORD module is a `mods.d/<name>.conf` file (`Key=Value` lines under a `[ModuleName]` header)
and, under its `DataPath` (relative to the directory that holds `mods.d`), three files per
testament (`ot`, `nt`), named after the `BlockType` letter (`b`ook, `c`hapter, `v`erse):

- `<t>.<x>zs`, the block index: per compressed block, three little-endian uint32s (offset in the
  data file, compressed size, decompressed size);
- `<t>.<x>zv`, the verse index: per versification slot (testament heading, book intros, chapter
  intros, verses, in canonical order), the block number, the offset in the decompressed block and
  the entry size (uint32, uint32, uint16: 10 bytes; `zText4`/`zCom4`: three uint32s, 12 bytes);
- `<t>.<x>zz`, the blocks, each compressed with zlib (`CompressType=ZIP`).

Entries of a commentary that covers a range of verses are stored once and linked from each verse
of the range (several slots pointing at the same bytes); they are read once.
"""

import html
import posixpath
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

from allennlp.common.checks import ConfigurationError

from experiments.corpora.pretraining_sources import CorpusSource, Document
from experiments.corpora.registry_packages import DebianPackage

# The largest decompressed block accepted (the real modules' largest is about 1.3 MB).
MAX_BLOCK_BYTES = 32 << 20
_CORRUPT = "the package is truncated or corrupt: delete it from the cache and fetch it again"

COMPRESSED_DRIVERS = ("zText", "zCom", "zText4", "zCom4")
TESTAMENTS = ("ot", "nt")
_BLOCK_LETTERS = {"BOOK": "b", "CHAPTER": "c", "VERSE": "v"}
_BLOCK_ENTRY = struct.Struct("<III")
# Verse index layouts: (block, offset in block, size).
_VERSE_ENTRY = struct.Struct("<IIH")
_VERSE_ENTRY4 = struct.Struct("<III")


@dataclass(frozen=True)
class SwordConf:
    """
    The settings of one SWORD module that its reader needs (defaults as SWORD documents them).

    # Parameters

    member : `str`
        The `mods.d/*.conf` member they were read from.
    name : `str`
        The module name (the `[Name]` header).
    data_dir : `str`
        The member-name prefix of the module's data files (ends with `/`).
    driver : `str`
        `ModDrv`: `zText`, `zCom`, `zText4` or `zCom4`.
    block_type : `str`
        `BlockType`: `BOOK`, `CHAPTER` (default) or `VERSE`.
    compress_type : `str`
        `CompressType`: `ZIP` (zlib) is the one read.
    source_type : `str`
        `SourceType`, the markup: `OSIS`, `ThML`, `GBF` or `Plaintext` (default).
    encoding : `str`
        `Encoding`: `UTF-8` or `Latin-1` (default).
    licence : `str`
        `DistributionLicense`, empty if absent.
    """

    member: str
    name: str
    data_dir: str
    driver: str
    block_type: str = "CHAPTER"
    compress_type: str = "LZSS"
    source_type: str = "Plaintext"
    encoding: str = "Latin-1"
    licence: str = ""


@dataclass(frozen=True)
class SwordEntry:
    """One stored entry (a verse, or the commentary on a range of verses), in canonical order."""

    testament: str
    slot: int
    block: int
    text: str


def _conf_values(raw: bytes) -> Tuple[str, Dict[str, str]]:
    """The `[Name]` header and the first value of each key (continuation lines joined)."""
    name = ""
    values: Dict[str, str] = {}
    lines = raw.decode("utf-8", errors="replace").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        while line.endswith("\\") and index + 1 < len(lines):
            index += 1
            line = line[:-1] + " " + lines[index].strip()
        index += 1
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]") and not name:
            name = line[1:-1].strip()
        elif "=" in line:
            key, value = line.split("=", 1)
            values.setdefault(key.strip(), value.strip())
    return name, values


def parse_sword_conf(raw: bytes, member: str) -> SwordConf:
    """
    Reads a module's `mods.d/<name>.conf` (member `member`, e.g.
    `usr/share/sword/mods.d/mhcc.conf`), resolving `DataPath` against the directory that holds
    `mods.d`. Refuses modules this reader cannot read, naming the member and the setting.
    """
    name, values = _conf_values(raw)
    if not name:
        raise ConfigurationError(f"{member}: not a SWORD module conf (no [ModuleName] header)")
    data_path = values.get("DataPath", "")
    if not data_path or ".." in data_path.split("/") or data_path.startswith("/"):
        raise ConfigurationError(
            f"{member}: DataPath {data_path!r} must be a path under the SWORD library root"
        )
    root = posixpath.dirname(posixpath.dirname(member))
    data_dir = posixpath.normpath(posixpath.join(root, data_path)) + "/"
    conf = SwordConf(
        member=member,
        name=name,
        data_dir=data_dir,
        driver=values.get("ModDrv", ""),
        block_type=values.get("BlockType", "CHAPTER").upper(),
        compress_type=values.get("CompressType", "LZSS").upper(),
        source_type=values.get("SourceType", "Plaintext"),
        encoding=values.get("Encoding", "Latin-1"),
        licence=values.get("DistributionLicense", ""),
    )
    problems = []
    if conf.driver not in COMPRESSED_DRIVERS:
        problems.append(f"ModDrv={conf.driver} (only {', '.join(COMPRESSED_DRIVERS)} are read)")
    if conf.block_type not in _BLOCK_LETTERS:
        problems.append(f"BlockType={conf.block_type} (one of {', '.join(_BLOCK_LETTERS)})")
    if conf.compress_type != "ZIP":
        problems.append(f"CompressType={conf.compress_type} (only ZIP, zlib, is read)")
    if conf.source_type.lower() not in _MARKUPS:
        problems.append(f"SourceType={conf.source_type} (one of OSIS, ThML, GBF, Plaintext)")
    if problems:
        raise ConfigurationError(
            f"{member}: module {name} cannot be read: {'; '.join(problems)}. Use a module with "
            "these settings, or a SWORD front end to export its text."
        )
    return conf


def _verse_layouts(driver: str) -> Tuple[struct.Struct, struct.Struct]:
    """The verse index layout the driver declares, then the other one."""
    if driver.endswith("4"):
        return _VERSE_ENTRY4, _VERSE_ENTRY
    return _VERSE_ENTRY, _VERSE_ENTRY4


def _block_index(
    raw: bytes, member: str, data: bytes, data_member: str
) -> List[Tuple[int, int, int]]:
    """The block index entries (offset, compressed size, decompressed size), checked."""
    if len(raw) % _BLOCK_ENTRY.size:
        raise ConfigurationError(
            f"{member}: block index of {len(raw)} bytes is not a whole number of "
            f"{_BLOCK_ENTRY.size}-byte entries; {_CORRUPT}"
        )
    blocks = list(_BLOCK_ENTRY.iter_unpack(raw))
    for number, (offset, size, decompressed) in enumerate(blocks):
        if offset + size > len(data):
            raise ConfigurationError(
                f"{member}: block {number} ({size} bytes at offset {offset}) lies outside the "
                f"{len(data)} bytes of {data_member}; {_CORRUPT}"
            )
        if decompressed > MAX_BLOCK_BYTES:
            raise ConfigurationError(
                f"{member}: block {number} claims {decompressed} decompressed bytes, over the "
                f"{MAX_BLOCK_BYTES}-byte cap (corrupt index?)"
            )
    return blocks


def _verse_index(
    raw: bytes, blocks: List[Tuple[int, int, int]], driver: str, member: str
) -> List[Tuple[int, int, int]]:
    """
    The verse index entries, in the layout the driver declares or, when the file does not fit
    that layout, in the other one if every entry of it lies inside its block (Debian's
    `sword-comm-mhcc` 2.0 declares `zCom4` and ships a 10-byte `zCom` index).
    """
    problems = []
    for layout in _verse_layouts(driver):
        if len(raw) % layout.size:
            problems.append(f"not a whole number of {layout.size}-byte entries")
            continue
        entries = list(layout.iter_unpack(raw))
        bad = next(
            (
                (slot, entry)
                for slot, entry in enumerate(entries)
                if entry[2]
                and (entry[0] >= len(blocks) or entry[1] + entry[2] > blocks[entry[0]][2])
            ),
            None,
        )
        if bad is None:
            return _unwrapped_sizes(entries, blocks) if layout is _VERSE_ENTRY else entries
        slot, (block, offset, size) = bad
        problems.append(
            f"read as {layout.size}-byte entries, entry {slot} points at {size} bytes at offset "
            f"{offset} of block {block}, outside the block ({len(blocks)} blocks)"
        )
    raise ConfigurationError(
        f"{member}: unreadable verse index of {len(raw)} bytes ({'; '.join(problems)}): "
        f"{_CORRUPT}"
    )


def _unwrapped_sizes(
    entries: List[Tuple[int, int, int]], blocks: List[Tuple[int, int, int]]
) -> List[Tuple[int, int, int]]:
    """
    A 10-byte index stores each entry's size in 16 bits, so an entry of 64 KiB or more has its
    size wrapped (the World English Bible's Greek Daniel, 125,566 bytes, is indexed as 60,030).
    Entries lie one after another in their block: an entry whose size falls short of the next
    entry's start (or the block's end) by a multiple of 65,536 gets its whole length back.
    """
    ends: Dict[Tuple[int, int], int] = {}
    starts = sorted({(block, offset) for block, offset, size in entries if size})
    for (block, offset), following in zip(starts, starts[1:] + [(-1, 0)]):
        ends[block, offset] = following[1] if following[0] == block else blocks[block][2]
    unwrapped = []
    for block, offset, size in entries:
        if size:
            length = ends[block, offset] - offset
            if length > size and (length - size) % (1 << 16) == 0:
                size = length
        unwrapped.append((block, offset, size))
    return unwrapped


def _decompress(chunk: bytes, expected: int, member: str, number: int) -> bytes:
    decompressor = zlib.decompressobj()
    try:
        data = decompressor.decompress(chunk, MAX_BLOCK_BYTES + 1)
    except zlib.error as error:
        raise ConfigurationError(
            f"{member}: block {number} is not valid zlib data ({error}); {_CORRUPT}"
        ) from error
    if len(data) > MAX_BLOCK_BYTES:
        raise ConfigurationError(
            f"{member}: block {number} decompresses to more than {MAX_BLOCK_BYTES} bytes"
        )
    if len(data) != expected:
        raise ConfigurationError(
            f"{member}: block {number} decompresses to {len(data)} bytes, the block index says "
            f"{expected}; {_CORRUPT}"
        )
    return data


def read_testament(
    conf: SwordConf, members: Mapping[str, bytes], testament: str
) -> List[SwordEntry]:
    """
    The entries of one testament (`ot` or `nt`) of a compressed module, each stored entry once
    (linked slots skipped), in canonical order; empty if the module has no files for it.
    """
    prefix = f"{conf.data_dir}{testament}.{_BLOCK_LETTERS[conf.block_type]}z"
    names = {kind: prefix + kind for kind in "svz"}
    present = [name for name in names.values() if name in members]
    if not present:
        return []
    if len(present) < 3:
        missing = sorted(set(names.values()) - set(present))
        raise ConfigurationError(f"{conf.member}: module {conf.name} lacks {missing}")
    data = members[names["z"]]
    blocks = _block_index(members[names["s"]], names["s"], data, names["z"])
    slots = _verse_index(members[names["v"]], blocks, conf.driver, names["v"])
    encoding = "utf-8" if conf.encoding.upper().replace("-", "") == "UTF8" else "latin-1"
    decompressed: Dict[int, bytes] = {}
    seen = set()
    entries = []
    for slot, (block, offset, size) in enumerate(slots):
        if not size or (block, offset, size) in seen:
            continue
        seen.add((block, offset, size))
        if block not in decompressed:
            start, length, expected = blocks[block]
            chunk = data[start : start + length]
            decompressed[block] = _decompress(chunk, expected, names["z"], block)
        raw = decompressed[block][offset : offset + size].replace(b"\0", b"")
        entries.append(SwordEntry(testament, slot, block, raw.decode(encoding, errors="replace")))
    return entries


@dataclass(frozen=True)
class SwordModule:
    """A module's settings and its stored entries (Old Testament first)."""

    conf: SwordConf
    entries: Tuple[SwordEntry, ...]


def read_sword_module(members: Mapping[str, bytes], origin: str) -> SwordModule:
    """
    The one SWORD module in `members` (`{member name: bytes}`: its `mods.d/*.conf` and data
    files). `origin` names the package in error messages.
    """
    confs = sorted(name for name in members if _is_module_conf(name))
    if len(confs) != 1:
        raise ConfigurationError(
            f"{origin}: expected one SWORD module conf (mods.d/*.conf), found {confs}"
        )
    conf = parse_sword_conf(members[confs[0]], confs[0])
    entries = [
        entry for testament in TESTAMENTS for entry in read_testament(conf, members, testament)
    ]
    if not entries:
        raise ConfigurationError(
            f"{origin}: module {conf.name} has no text under {conf.data_dir} (are its data "
            "files among the members read?)"
        )
    return SwordModule(conf, tuple(entries))


def _is_module_conf(member: str) -> bool:
    """Whether `member` is a SWORD module conf (`.../mods.d/<name>.conf`)."""
    return posixpath.basename(posixpath.dirname(member)) == "mods.d" and member.endswith(".conf")


# ---------------------------------------------------------------------------------------------
# Markup to plain text


@dataclass(frozen=True)
class _Markup:
    """How a markup language's elements become plain text (element names in lower case)."""

    dropped: FrozenSet[str]  # not prose: skipped with their content (notes, headings, references)
    breaks: FrozenSet[str]  # end a paragraph
    spaces: FrozenSet[str] = frozenset()  # separate words (poetry lines, table cells)
    kept: FrozenSet[str] = frozenset()  # `dropped` elements kept when their `type` is one of these
    # `dropped` elements kept when they follow a word: a reference that is part of a sentence
    # ("see Ps 5:3") stays, one in brackets or between commas goes.
    after_word: FrozenSet[str] = frozenset()


_MARKUPS: Dict[str, Optional[_Markup]] = {
    "osis": _Markup(
        dropped=frozenset({"note", "title", "reference", "speaker", "milestone", "figure"}),
        breaks=frozenset(
            {"div", "p", "lg", "lb", "list", "item", "table", "row", "chapter", "head"}
        ),
        spaces=frozenset({"l", "cell", "verse"}),
        # A psalm's superscription ("A Psalm by David.") is part of the text.
        kept=frozenset({"psalm"}),
        after_word=frozenset({"reference"}),
    ),
    "thml": _Markup(
        dropped=frozenset(
            {"note", "scripref", "h1", "h2", "h3", "h4", "h5", "h6", "head", "title", "sync"}
        ),
        breaks=frozenset(
            {"p", "br", "div", "div1", "div2", "div3", "div4", "div5", "div6", "ul", "ol",
             "li", "table", "tr", "blockquote", "pb"}
        ),  # fmt: skip
        spaces=frozenset({"td", "th", "verse"}),
        after_word=frozenset({"scripref"}),
    ),
    "gbf": None,  # not XML: see `_gbf_text`
    "plaintext": None,
}

_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]*)((?:[^<>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>")
# A tag cut off by the end of an entry.
_PARTIAL_TAG = re.compile(r"<[A-Za-z/][^<>]*$")
_TYPE = re.compile(r"\btype\s*=\s*[\"']([^\"']*)[\"']")
_PARAGRAPH = "\n"
# Removed content leaves this mark: a space between two words, nothing elsewhere.
_GAP = "\x00"
_GBF_DROPPED = re.compile(r"<(RF|RX|TS|TT)>.*?<(?:Rf|Rx|Ts|Tt)>", re.S)
_GBF_BREAK = re.compile(r"<(?:CM|CP|CL\d*)>")
_GBF_TAG = re.compile(r"<[A-Z][A-Za-z]?[^<>]*>")


def _follows_word(out: List[str]) -> bool:
    for piece in reversed(out):
        piece = piece.rstrip()
        if piece:
            return piece[-1].isalnum()
    return False


def _xml_text(markup: str, rules: _Markup) -> str:
    markup = _PARTIAL_TAG.sub("", markup)
    out: List[str] = []
    skipping: List[str] = []  # open dropped elements
    position = 0
    for tag in _TAG.finditer(markup):
        if not skipping:
            out.append(markup[position : tag.start()])
        position = tag.end()
        closing, name, attributes, empty = tag.groups()
        name = name.lower()
        if skipping:
            if name == skipping[-1]:
                if closing:
                    skipping.pop()
                elif not empty:
                    skipping.append(name)
            continue
        if name in rules.dropped:
            kind = _TYPE.search(attributes)
            if name in rules.after_word and (closing or _follows_word(out)):
                continue
            if closing or (kind and kind.group(1) in rules.kept):  # closing: a kept one's end
                out.append(_PARAGRAPH)
            else:
                if not empty:
                    skipping.append(name)
                out.append(_GAP)
        elif name in rules.breaks and "x-milestone" not in attributes:
            out.append(_PARAGRAPH)
        elif name in rules.spaces:
            out.append(" ")
    if not skipping:
        out.append(markup[position:])
    return html.unescape("".join(out))


def _gbf_text(markup: str) -> str:
    text = _GBF_DROPPED.sub(_GAP, markup)
    text = _GBF_BREAK.sub(_PARAGRAPH, text)
    return html.unescape(_GBF_TAG.sub("", text))


def markup_to_text(markup: str, source_type: str) -> str:
    """
    The words of one entry's markup (`source_type`: `OSIS`, `ThML`, `GBF` or `Plaintext`), with
    paragraph ends as newlines: notes, headings, cross-references and word-level annotation
    (Strong's numbers, morphology, lemmas: attributes or GBF tags) dropped, entities unescaped.
    Removed notes leave a `\\x00` mark, for `clean_paragraphs` to resolve.
    """
    kind = source_type.lower()
    if kind not in _MARKUPS:
        raise ConfigurationError(f"Unknown SWORD SourceType {source_type!r}")
    rules = _MARKUPS[kind]
    if rules is not None:
        return _xml_text(markup, rules)
    if kind == "gbf":
        return _gbf_text(markup)
    return markup


_GAP_BETWEEN_WORDS = re.compile(rf"(?<=\w){_GAP}+(?=\w)")
# What removed references leave: empty brackets, repeated separators, a space before a stop.
_EMPTY_BRACKETS = re.compile(r"[(\[]\s*[,;:.\s]*\s*[)\]]")
_VERSE_RANGE = re.compile(r"\(\s*\d+(?:\s*[-\u2013,:;]\s*\d+)*\s*\)")
_REPEATED_SEPARATORS = re.compile(r"([,;.!?])(?=\s*[,;])(?:\s*[,;.])+")
_SPACE_BEFORE_SEPARATOR = re.compile(r"\s+(?=[,;:.](?:\s|$))")
# A commentary's verse label ("Verses 1-7", "Verse 1.", "Verse 3,") that starts a paragraph.
_VERSE_LABEL = re.compile(
    r"^(?:Verses?|Ver\.|Vv?\.)\s+\d+(?:\s*(?:[-\u2013,]|to|and)\s*\d+)*"
    r"(?:[.:,]\s*|\s+(?=[^a-z])|$)"
)
# Not prose: a short label without closing punctuation ("Chapter Outline", "Preface"), or a
# paragraph that is one bracketed remark ("(last two clauses).").
_LABEL = re.compile(r"^(?:\S+(?: \S+){0,2}(?<![.!?,;:\"'\u201d\u2019)])|\([^()]*\)\.?)$")


def clean_paragraphs(text: str) -> List[str]:
    """
    Paragraphs (split at newlines, whitespace collapsed) of `markup_to_text` output: note marks
    resolved, the debris of removed references and bare verse ranges such as `(1-7)` removed,
    commentary verse labels (`Verses 1-7`) dropped, and paragraphs without a lower-case letter
    (headings, numbers), short labels and bracketed remarks left out.
    """
    text = _GAP_BETWEEN_WORDS.sub(" ", text).replace(_GAP, "").replace("\u2022", " ")
    paragraphs = []
    for line in text.split(_PARAGRAPH):
        line = " ".join(line.split())
        line = _VERSE_RANGE.sub("", line)
        line = _EMPTY_BRACKETS.sub("", line)
        line = _REPEATED_SEPARATORS.sub(r"\1", line)
        line = _SPACE_BEFORE_SEPARATOR.sub("", line)
        line = " ".join(_VERSE_LABEL.sub("", line).split())
        if any(character.islower() for character in line) and not _LABEL.match(line):
            paragraphs.append(line)
    return paragraphs


# ---------------------------------------------------------------------------------------------
# Documents

# Where a document starts: an OSIS chapter or book (`osisID`), or front/back matter (`type`).
_SECTION_START = re.compile(
    r"<(?:chapter|div)\b(?=[^>]*\bsID=)[^>]*?\bosisID=\"([^\"]+)\"[^>]*>"
    r"|<div\b(?=[^>]*\bsID=)[^>]*?\btype=\"(front|back|glossary|preface|titlePage)\"[^>]*>"
)


def _sections(entry: SwordEntry) -> Iterator[Tuple[Optional[str], str]]:
    """The parts of an entry's markup, each with the section it starts (`None`: continues)."""
    position = 0
    section = None
    for start in _SECTION_START.finditer(entry.text):
        yield section, entry.text[position : start.start()]
        section = start.group(1) or start.group(2)
        position = start.start()
    yield section, entry.text[position:]


def module_documents(module: SwordModule) -> Iterator[Document]:
    """
    One document per section of the module: an OSIS chapter (`Gen.1`, `Ps.119`: a chapter of
    the Bible, or the commentary on it), a book's introduction (`Gen`) or front and back matter
    (`front`, `glossary`). Text before any section mark (markup without OSIS milestones) is
    grouped by compressed block (`ot-block-0003`). Paragraphs run across entries until the
    markup ends them; a section met twice continues its document.
    """
    texts: Dict[str, List[str]] = {}
    current: Optional[str] = None
    for entry in module.entries:
        if current is None or current.startswith(("ot-block-", "nt-block-")):
            current = f"{entry.testament}-block-{entry.block:04d}"
        for section, markup in _sections(entry):
            if section is not None:
                current = section
                texts.setdefault(current, []).append(_PARAGRAPH)
            texts.setdefault(current, []).append(
                markup_to_text(markup, module.conf.source_type) + " "
            )
    for doc_id, parts in texts.items():
        paragraphs = clean_paragraphs("".join(parts))
        if paragraphs:
            yield Document(doc_id, tuple(paragraphs))


def read_sword(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """The `Reader` of a SWORD module package: `module_documents` of `read_sword_module`."""
    return module_documents(read_sword_module(members, origin))


# ---------------------------------------------------------------------------------------------
# The sources

SWORD_ROOT = "usr/share/sword"
WEB_BIBLE = DebianPackage("sword-text-web", "426.0-1")
TREASURY_OF_DAVID = DebianPackage("sword-comm-tdavid", "2.1-1")
HENRY_CONCISE = DebianPackage("sword-comm-mhcc", "2.0-1")


def _module_members(conf: str, data_path: str, letter: str) -> Tuple[str, str]:
    return (
        f"{SWORD_ROOT}/mods.d/{conf}",
        f"{SWORD_ROOT}/modules/{data_path}/[on]t.{letter}z[svz]",
    )


def sword_sources() -> List[CorpusSource]:
    """The three SWORD module sources, each read with `read_sword`."""
    return [
        CorpusSource(
            "web_bible",
            WEB_BIBLE,
            _module_members("engWEB2015eb.conf", "texts/ztext/engWEB2015eb", "b"),
            read_sword,
            "Public domain (World English Bible with Deuterocanon; Debian copyright file and "
            "module conf: public domain; \"World English Bible\" is a trademark of eBible.org)",
        ),
        CorpusSource(
            "treasury_of_david",
            TREASURY_OF_DAVID,
            _module_members("tdavid.conf", "comments/zcom/tdavid", "c"),
            read_sword,
            "Public domain (C. H. Spurgeon, The Treasury of David, 1869-1885; Debian copyright "
            "file and module conf: public domain)",
        ),
        CorpusSource(
            "henry_concise",
            HENRY_CONCISE,
            _module_members("mhcc.conf", "comments/zcom/mhcc", "b"),
            read_sword,
            "Public domain (Matthew Henry's Concise Commentary; Debian copyright file: \"Public "
            "Domain--Copy Freely\"; module conf: public domain)",
        ),
    ]
