import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.pretraining_sources import (
    AUSTEN_DB,
    JANEAUSTENR,
    austen_documents,
    clean_tweet,
    convention_paragraphs,
    default_sources,
    read_austen,
    read_lazyload_db,
    read_moby_dick,
    remove_stage_directions,
    strip_gutenberg,
)
from tests.experiments.corpora.pretraining_fixtures import (
    DEB_FILE,
    REAL_PACKAGE_COPIES,
    austen_files,
    fixture_bytes,
    lazyload_db,
    real_package_cache,
)


def test_austen_novels_become_one_document_per_chapter():
    novels = json.loads(fixture_bytes("austen.json"))
    documents = {d.doc_id: d.paragraphs for d in austen_documents(novels)}
    # Emma's chapters are numbered through both volumes; 000 is the front matter.
    assert list(documents) == [
        "emma/000", "emma/001", "emma/002", "emma/003", "persuasion/000", "persuasion/001",
        "persuasion/002",
    ]  # fmt: skip
    assert documents["emma/000"] == ("EMMA", "By Jane Austen")
    assert documents["emma/001"] == (
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy "
        "disposition, seemed to unite some of the best blessings of existence.",
        "Between them it was more the intimacy of sisters.",
    )
    assert documents["emma/003"] == ("Emma and Harriet had been walking together.", "FINIS")
    assert not any("VOLUME" in p or "CHAPTER" in p for ps in documents.values() for p in ps)


def test_austen_tolerates_na_lines():
    documents = list(austen_documents({"x": ["Chapter 1", None, "Some text here.", None]}))
    assert [(d.doc_id, d.paragraphs) for d in documents] == [("x/001", ("Some text here.",))]


def test_lazyload_db_round_trip_without_r():
    rdb, rdx = lazyload_db({"b": ["x", "", "y"], "a": ["only line"]})
    assert read_lazyload_db(rdb, rdx, "test") == {"a": ["only line"], "b": ["x", "", "y"]}
    documents = list(read_austen(austen_files(), "test"))
    assert documents[0].doc_id == "emma/000" and len(documents) == 7


def test_corrupt_lazyload_db_is_a_clear_error():
    rdb, rdx = lazyload_db({"a": ["line"]})
    with pytest.raises(ConfigurationError, match="lazy-load DB"):
        read_lazyload_db(rdb[:3], rdx, "test")
    with pytest.raises(ConfigurationError, match="not a readable R lazy-load DB"):
        read_lazyload_db(rdb, b"garbage", "test")
    with pytest.raises(ConfigurationError, match="Rdata.rdb/.rdx not found"):
        list(read_austen({AUSTEN_DB + ".rdb": rdb}, "test"))


# What each copy of the package holds (the trimmed one: each novel's first 150 lines).
AUSTEN_COUNTS = {
    "real": {"words": 717_537, "chapters": {"emma": 55, "mansfieldpark": 48, "northangerabbey": 31,
                                            "persuasion": 24, "prideprejudice": 61,
                                            "sensesensibility": 50}},
    "trimmed": {"words": 8_089, "chapters": {"emma": 1, "mansfieldpark": 1, "northangerabbey": 1,
                                             "persuasion": 1, "prideprejudice": 2,
                                             "sensesensibility": 1}},
}  # fmt: skip


@pytest.mark.parametrize("copy", REAL_PACKAGE_COPIES)
def test_the_real_janeaustenr_package(copy, monkeypatch):
    """The Debian package as the corpus build reads it: the .deb found in the cache (no
    download), its novels' lazy-load DB picked out of its members by the source's filter (not
    the package's other `.rdb` files), read, and split into chapters."""
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    source = next(s for s in default_sources() if s.name == "austen")
    deb = JANEAUSTENR.fetch(real_package_cache(copy, "packages", DEB_FILE))
    members = JANEAUSTENR.read_members(deb, source.wants)
    assert sorted(members) == [AUSTEN_DB + ".rdb", AUSTEN_DB + ".rdx"]
    novels = read_lazyload_db(members[AUSTEN_DB + ".rdb"], members[AUSTEN_DB + ".rdx"], copy)
    assert sorted(novels) == [
        "emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice",
        "sensesensibility",
    ]  # fmt: skip
    words = sum(len((line or "").split()) for lines in novels.values() for line in lines)
    assert words == AUSTEN_COUNTS[copy]["words"]
    first_text = next(line for line in novels["prideprejudice"] if line and "truth" in line)
    assert first_text.startswith("It is a truth universally acknowledged")
    chapters = [d for d in austen_documents(novels) if not d.doc_id.endswith("/000")]
    found = {novel: sum(d.doc_id.startswith(novel + "/") for d in chapters) for novel in novels}
    assert found == AUSTEN_COUNTS[copy]["chapters"]  # real Emma: 3 volumes of 18, 18, 19


def test_moby_dick_chapters():
    members = {"package/data/data.txt": fixture_bytes("moby_dick/data.txt")}
    documents = list(read_moby_dick(members, "test"))
    assert [d.doc_id for d in documents] == ["chapter-001", "chapter-002"]
    assert documents[0].paragraphs[:2] == (
        "Loomings.",
        "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money "
        "in my purse, I thought I would sail about a little.",
    )
    with pytest.raises(ConfigurationError, match="no 'CHAPTER <n>.' headings"):
        list(read_moby_dick({"package/data/data.txt": b"just text"}, "test"))


def test_gutenberg_boilerplate_is_stripped():
    text = (
        "The Project Gutenberg eBook of X\nLicence words\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK X ***\nThe story itself.\n"
        "*** END OF THE PROJECT GUTENBERG EBOOK X ***\nMore licence words\n"
    )
    assert strip_gutenberg(text).strip() == "The story itself."
    assert strip_gutenberg("No boilerplate here.") == "No boilerplate here."


def test_speech_clean_up():
    cleaned = remove_stage_directions("Thank you. (Applause.) Go (sic; Iraq) on.")
    assert " ".join(cleaned.split()) == "Thank you. Go (sic; Iraq) on."
    speech = (
        "BARACK OBAMA: Thank you. (Cheers, applause.)\nAUDIENCE MEMBERS: USA! USA!\n"
        "(Applause.)\nAnd so — (laughter) — we go on.\nAUDIENCE MEMBER: No!"
    )
    assert convention_paragraphs(speech) == ["Thank you.", "And so — — we go on."]


def test_tweet_clean_up():
    assert clean_tweet("Q&amp;A: read this http://ow.ly/x1 now pic.twitter.com/abc") == (
        "Q&A: read this now"
    )
    assert clean_tweet("It\u00e2\u20ac\u2122s fixed") == "It\u2019s fixed"  # mojibake repaired
    assert clean_tweet("http://only.a/link") == ""


def test_default_sources_are_pinned_and_distinct():
    sources = default_sources()
    assert len({s.name for s in sources}) == len(sources) == 9
    for source in sources:
        assert source.package.version and source.licence and source.members
        assert source.package.registry in {"pypi", "npm", "debian"}
