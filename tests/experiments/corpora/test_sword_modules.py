import struct
import zlib
from typing import Dict, List, Optional, Sequence, Union

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora import sword_modules
from experiments.corpora.sword_modules import (
    HENRY_CONCISE,
    clean_paragraphs,
    markup_to_text,
    parse_sword_conf,
    read_sword,
    read_sword_module,
    sword_sources,
)
from tests.experiments.corpora.pretraining_fixtures import REAL_PACKAGE_COPIES, real_package_cache

CONF = "usr/share/sword/mods.d/tiny.conf"
DATA = "usr/share/sword/modules/texts/ztext/tiny/"
# A stored slot: its text, an earlier slot it links to (a commentary on a verse range), or None.
Slot = Union[str, int, None]


def conf_bytes(**settings: Optional[str]) -> bytes:
    values = {
        "DataPath": "./modules/texts/ztext/tiny/",
        "ModDrv": "zText",
        "SourceType": "OSIS",
        "Encoding": "UTF-8",
        "CompressType": "ZIP",
        "BlockType": "BOOK",
        "DistributionLicense": "Public Domain",
        **settings,
    }
    lines = [f"{key}={value}" for key, value in values.items() if value is not None]
    return ("[Tiny]\n# a comment\n" + "\n".join(lines) + "\n").encode("utf-8")


def module_files(
    blocks: Sequence[Sequence[Slot]],
    driver: str = "zText",
    index_driver: Optional[str] = None,
    testament: str = "ot",
    **settings: Optional[str],
) -> Dict[str, bytes]:
    """A compressed SWORD module in bytes: each inner sequence is one zlib block's slots, in
    canonical order. The verse index is written as `index_driver` (default: `driver`) lays it
    out; a 10-byte index keeps the low 16 bits of a size, as SWORD writes it."""
    index: List[tuple] = []
    block_index, data = [], b""
    for number, slots in enumerate(blocks):
        raw = b""
        for slot in slots:
            if slot is None:
                index.append((0, 0, 0))
            elif isinstance(slot, int):
                index.append(index[slot])
            else:
                encoded = slot.encode("utf-8")
                index.append((number, len(raw), len(encoded)))
                raw += encoded
        compressed = zlib.compress(raw)
        block_index.append((len(data), len(compressed), len(raw)))
        data += compressed
    wide = (index_driver or driver).endswith("4")
    layout = struct.Struct("<III" if wide else "<IIH")
    prefix = f"{DATA}{testament}.bz"
    return {
        CONF: conf_bytes(ModDrv=driver, **settings),
        prefix + "s": b"".join(struct.pack("<III", *entry) for entry in block_index),
        prefix + "v": b"".join(
            layout.pack(block, offset, size if wide else size & 0xFFFF)
            for block, offset, size in index
        ),
        prefix + "z": data,
    }


VERSE_1 = (
    '<div sID="p1" type="x-p"/><w lemma="strong:H0430" morph="x:N">God</w><note placement="foot">'
    '<reference type="annotateRef">1:1 </reference>The Hebrew word is “Elohim”.</note>'
    '<w lemma="strong:H1254">created</w> the <transChange type="added">heavens</transChange>'
    " &amp; the earth. "
)
VERSE_2 = (
    '<w lemma="strong:H0776">The</w> earth was empty.<note type="crossReference">'
    '<reference>Jer 4:23</reference></note> <div eID="p1" type="x-p"/>'
)
GENESIS = [
    None,
    '<milestone type="x-importer" subType="x-osis2mod" n="$Rev: 1 $"/>',
    '<div canonical="true" osisID="Gen" sID="b1" type="book"/> <title type="main">Genesis</title>'
    ' <div sID="i1" type="x-p"/>The book of beginnings.<div eID="i1" type="x-p"/>',
    '<chapter n="1" osisID="Gen.1" sID="Gen.1"/>',
]


def tiny_bible() -> Dict[str, bytes]:
    return module_files(
        [
            GENESIS + [VERSE_1, VERSE_2],
            [
                '<chapter n="2" osisID="Gen.2" sID="Gen.2"/> <title>The Seventh Day</title>',
                '<div sID="p2" type="x-p"/>God rested.<div eID="p2" type="x-p"/>',
                7,  # linked to the verse before: read once
            ],
        ]
    )


def test_parses_the_conf_and_the_entries_of_a_ztext_module():
    module = read_sword_module(tiny_bible(), "tiny.deb")
    conf = module.conf
    assert (conf.member, conf.name, conf.data_dir) == (CONF, "Tiny", DATA)
    assert (conf.driver, conf.block_type, conf.compress_type) == ("zText", "BOOK", "ZIP")
    assert (conf.source_type, conf.encoding, conf.licence) == ("OSIS", "UTF-8", "Public Domain")
    assert [(e.testament, e.slot, e.block) for e in module.entries] == [
        ("ot", 1, 0), ("ot", 2, 0), ("ot", 3, 0), ("ot", 4, 0), ("ot", 5, 0), ("ot", 6, 1),
        ("ot", 7, 1),
    ]  # fmt: skip
    assert module.entries[3].text == VERSE_1


def test_a_verse_with_strongs_numbers_and_notes_gives_only_its_english_words():
    assert clean_paragraphs(markup_to_text(VERSE_1 + VERSE_2, "OSIS")) == [
        "God created the heavens & the earth. The earth was empty."
    ]


def test_chapters_become_documents_and_paragraphs_run_across_verses():
    documents = list(read_sword(tiny_bible(), "tiny.deb"))
    assert [(d.doc_id, d.paragraphs) for d in documents] == [
        ("Gen", ("The book of beginnings.",)),
        ("Gen.1", ("God created the heavens & the earth. The earth was empty.",)),
        ("Gen.2", ("God rested.",)),
    ]


def test_psalm_titles_and_poetry_lines():
    markup = (
        '<title canonical="true" type="psalm">A Psalm by David.</title> <title>BOOK 1</title>'
        '<lg sID="g1"/><l sID="l1"/>Yahweh, how my adversaries<l eID="l1"/>'
        '<l sID="l2"/>have increased!<l eID="l2"/><lg eID="g1"/><speaker>Lover</speaker>'
        '<lg sID="g2"/>Selah.<lg eID="g2"/>'
    )
    assert clean_paragraphs(markup_to_text(markup, "OSIS")) == [
        "A Psalm by David.", "Yahweh, how my adversaries have increased!", "Selah."
    ]  # fmt: skip


def test_commentary_references_labels_and_outlines():
    markup = (
        '<title type="x-s2">Chapter 1</title> <div sID="a" type="x-p"/>Chapter Outline'
        '<div eID="a" type="x-p"/><table><row><cell>God creates heaven and earth.</cell>'
        "<cell>(1-2)</cell></row></table>"
        '<div sID="b" type="x-p"/><hi type="bold">Verses 1-7</hi> <div eID="b" type="x-p"/>'
        '<div sID="c" type="x-p"/><hi type="bold">Verse 3.</hi> Those that live in pleasure '
        'are dead, <reference osisRef="1Tim.5.6">1Ti 5:6</reference>, as in '
        '<reference osisRef="Ps.76.2">Psalm 76</reference> (<reference osisRef="Ps.1.1">Ps 1:1'
        "</reference>).<div eID=\"c\" type=\"x-p\"/><p>(whole verse).</p>"
    )
    assert clean_paragraphs(markup_to_text(markup, "OSIS")) == [
        "God creates heaven and earth.",
        "Those that live in pleasure are dead, as in Psalm 76.",
    ]


def test_thml_and_gbf_markup():
    thml = (
        '<h3>Chapter 1</h3><p>In the <sync type="Strongs" value="H7225"/>beginning God<note>'
        "a note</note> created, <scripRef>Joh 1:1</scripRef>, the heavens.</p><p>And light.</p>"
    )
    assert clean_paragraphs(markup_to_text(thml, "ThML")) == [
        "In the beginning God created, the heavens.", "And light."
    ]  # fmt: skip
    gbf = "<TS>Creation<Ts>In the beginning<WH07225> God<WH0430><RF>a note<Rf> created.<CM>Then."
    assert clean_paragraphs(markup_to_text(gbf, "GBF")) == [
        "In the beginning God created.", "Then."
    ]  # fmt: skip


def test_text_without_section_marks_is_grouped_by_block():
    files = module_files(
        [[None, None, "<p>First block words.</p>"], ["<p>Second block words.</p>"]],
        SourceType="ThML",
    )
    documents = list(read_sword(files, "tiny.deb"))
    assert [(d.doc_id, d.paragraphs) for d in documents] == [
        ("ot-block-0000", ("First block words.",)),
        ("ot-block-0001", ("Second block words.",)),
    ]


@pytest.mark.parametrize(
    "driver, index_driver", [("zText4", "zText4"), ("zCom", "zCom"), ("zCom4", "zCom")]
)
def test_both_verse_index_layouts_are_read(driver, index_driver):
    # Debian's sword-comm-mhcc 2.0 declares zCom4 but ships a 10-byte (zCom) verse index.
    files = module_files([GENESIS + [VERSE_1, VERSE_2]], driver, index_driver)
    documents = list(read_sword(files, "tiny.deb"))
    assert documents[-1].paragraphs == (
        "God created the heavens & the earth. The earth was empty.",
    )


def test_an_entry_over_64_kib_in_a_10_byte_index_is_read_whole():
    long_verse = "<w>word</w> " * 7000  # 84,000 bytes: its 16-bit size wraps
    files = module_files([GENESIS + [long_verse, "<p>Next verse.</p>"]])
    entries = read_sword_module(files, "tiny.deb").entries
    assert [entry.text for entry in entries[-2:]] == [long_verse, "<p>Next verse.</p>"]


def test_an_empty_testament_and_a_missing_one_are_skipped():
    files = module_files([GENESIS + [VERSE_1]])
    files.update({f"{DATA}nt.bzs": b"", f"{DATA}nt.bzz": b"", f"{DATA}nt.bzv": bytes(50)})
    assert len(read_sword_module(files, "tiny.deb").entries) == 4


def _patched(files: Dict[str, bytes], suffix: str, edit) -> Dict[str, bytes]:
    member = DATA + "ot.bz" + suffix
    return {**files, member: edit(files[member])}


def _bad_offset(index: bytes) -> bytes:
    block, offset, size = struct.unpack("<IIH", index[-10:])
    return index[:-10] + struct.pack("<IIH", block, offset + 10_000, size)


def _claims_more(blocks: bytes) -> bytes:
    offset, size, decompressed = struct.unpack("<III", blocks[:12])
    return struct.pack("<III", offset, size, decompressed + 1) + blocks[12:]


@pytest.mark.parametrize(
    "suffix, edit, message",
    [
        ("s", lambda raw: raw[:-1], r"ot\.bzs: block index of 23 bytes"),
        ("v", lambda raw: raw[:-3], r"ot\.bzv: unreadable verse index"),
        ("v", _bad_offset, r"ot\.bzv: unreadable verse index.*outside the block"),
        ("z", lambda raw: raw[:-5], r"ot\.bzs: block 1 .* lies outside the .* of .*ot\.bzz"),
        ("z", lambda raw: b"garbage!" + raw[8:], r"ot\.bzz: block 0 is not valid zlib data"),
        ("s", _claims_more, r"ot\.bzz: block 0 decompresses to \d+ bytes, the block index says"),
    ],
)
def test_a_corrupt_index_or_block_is_an_error_naming_the_member(suffix, edit, message):
    files = _patched(tiny_bible(), suffix, edit)
    with pytest.raises(ConfigurationError, match=message):
        read_sword_module(files, "tiny.deb")


def test_a_block_over_the_size_cap_is_refused(monkeypatch):
    monkeypatch.setattr(sword_modules, "MAX_BLOCK_BYTES", 100)
    with pytest.raises(ConfigurationError, match=r"ot\.bzs: block 0 claims \d+ .* over the 100"):
        read_sword_module(tiny_bible(), "tiny.deb")


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"ModDrv": "RawText"}, "ModDrv=RawText"),
        ({"CompressType": None}, "CompressType=LZSS"),
        ({"BlockType": "SCROLL"}, "BlockType=SCROLL"),
        ({"SourceType": "TEI"}, "SourceType=TEI"),
        ({"DataPath": "./modules/../../etc/"}, "DataPath"),
    ],
)
def test_modules_it_cannot_read_are_refused_naming_the_conf(settings, message):
    with pytest.raises(ConfigurationError, match=rf"tiny\.conf: .*{message}"):
        parse_sword_conf(conf_bytes(**settings), CONF)


def test_missing_confs_and_files_are_errors():
    files = tiny_bible()
    with pytest.raises(ConfigurationError, match="tiny.deb: expected one SWORD module conf"):
        read_sword_module({k: v for k, v in files.items() if k != CONF}, "tiny.deb")
    with pytest.raises(ConfigurationError, match=r"module Tiny lacks .*ot\.bzz"):
        read_sword_module({k: v for k, v in files.items() if not k.endswith("z")}, "tiny.deb")
    with pytest.raises(ConfigurationError, match="has no text under"):
        read_sword_module({CONF: files[CONF]}, "tiny.deb")


REAL_MEMBERS = {
    "web_bible": [
        "usr/share/sword/mods.d/engWEB2015eb.conf",
        *(f"usr/share/sword/modules/texts/ztext/engWEB2015eb/{t}.bz{k}" for t in ("ot", "nt")
          for k in "svz"),
    ],
    "treasury_of_david": [
        "usr/share/sword/mods.d/tdavid.conf",
        *(f"usr/share/sword/modules/comments/zcom/tdavid/{t}.cz{k}" for t in ("ot", "nt")
          for k in "svz"),
    ],
    "henry_concise": [
        "usr/share/sword/mods.d/mhcc.conf",
        *(f"usr/share/sword/modules/comments/zcom/mhcc/{t}.bz{k}" for t in ("ot", "nt")
          for k in "svz"),
    ],
}  # fmt: skip


def test_the_sources_read_the_real_member_names():
    sources = sword_sources()
    assert [s.name for s in sources] == ["web_bible", "treasury_of_david", "henry_concise"]
    assert [s.package.pin for s in sources] == [
        "sword-text-web=426.0-1", "sword-comm-tdavid=2.1-1", "sword-comm-mhcc=2.0-1"
    ]  # fmt: skip
    for source in sources:
        assert all(source.wants(member) for member in REAL_MEMBERS[source.name])
        assert not source.wants(f"usr/share/doc/{source.package.name}/copyright")
        assert source.licence.startswith("Public domain")


# What each copy of the package holds (the trimmed one: the module's heading and the start of
# Genesis; the New Testament's files empty).
MHCC_COUNTS = {"real": {"documents": 1189, "last": "Rev.22"},  # the chapters of the Bible
               "trimmed": {"documents": 2, "last": "Gen.2"}}  # fmt: skip


@pytest.mark.parametrize("copy", REAL_PACKAGE_COPIES)
def test_the_real_henry_concise_package(copy, monkeypatch):
    """Its conf declares `zCom4` and its verse index is 10-byte `zCom` (`_verse_index`)."""
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    source = next(s for s in sword_sources() if s.name == "henry_concise")
    deb = HENRY_CONCISE.fetch(real_package_cache(copy, "packages", "sword-comm-mhcc_2.0-1_all.deb"))
    members = HENRY_CONCISE.read_members(deb, source.wants)
    assert sorted(members) == sorted(REAL_MEMBERS["henry_concise"])
    assert parse_sword_conf(members[REAL_MEMBERS["henry_concise"][0]], "mhcc.conf").driver == "zCom4"
    documents = list(read_sword(members, HENRY_CONCISE.pin))
    assert len(documents) == MHCC_COUNTS[copy]["documents"]
    assert (documents[0].doc_id, documents[-1].doc_id) == ("Gen.1", MHCC_COUNTS[copy]["last"])
    assert documents[0].paragraphs[0].startswith("Genesis is a name taken from the Greek")
    text = " ".join(p for d in documents for p in d.paragraphs)
    assert "<" not in text and "\x00" not in text and "Chapter Outline" not in text
