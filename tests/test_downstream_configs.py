"""Every config in downstream_configs/ trains for one epoch on tiny fixtures."""

import json
import shutil

import pytest

import allennlp_models.classification  # noqa: F401  (registers bcn; the CLI would import it)

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import set_downstream_environment, train_config

TINY = FIXTURES_ROOT / "fasttext" / "tiny.bin"


@pytest.fixture
def demo_data_dir(tmp_path):
    """The layout `build-demo-data` makes, with the tiny fixtures in it."""
    (tmp_path / "fasttext").mkdir()
    shutil.copy(TINY, tmp_path / "fasttext" / "news.100d.bin")
    (tmp_path / "sentiment").mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(
            FIXTURES_ROOT / "data" / "sentiment.jsonl", tmp_path / "sentiment" / f"{split}.jsonl"
        )
    return tmp_path


@pytest.mark.parametrize("baseline, input_dim", [("none", 16 + 16), ("fasttext", 16)])
def test_demo_sentiment(monkeypatch, tmp_path, demo_data_dir, elmo_c_archive, baseline, input_dim):
    set_downstream_environment(
        monkeypatch, elmo_c_archive, baseline, ELMO_C_DATA_DIR=str(demo_data_dir)
    )
    overrides = {"trainer.num_epochs": 1, "model.pre_encode_feedforward.input_dim": input_dim}
    config = PROJECT_ROOT / "downstream_configs" / "demo_sentiment_elmo_c.jsonnet"
    metrics = train_config(config, tmp_path / "run", overrides=json.dumps(overrides))
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
