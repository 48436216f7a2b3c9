"""Fixtures shared by the paper-config tests (test_baseline_configs.py, test_slim_config.py)."""

import pytest

from tests.helpers import LM_DATA, SENTENCES, TINY_FASTTEXT, train_small_fasttext


@pytest.fixture
def paper_environment(monkeypatch):
    """The paper configs' environment: the fixture corpus and the 16-d fixture fastText."""
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(TINY_FASTTEXT))
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(SENTENCES))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(LM_DATA / "dev.txt"))


@pytest.fixture(scope="module")
def fasttext_300d(tmp_path_factory):
    """A 300-d fastText .bin (the paper's input size)."""
    # (The fixture corpus is too small: fastText diverges on it now and then.)
    return train_small_fasttext(tmp_path_factory.mktemp("fasttext_300d"), dim=300, bucket=1000)
