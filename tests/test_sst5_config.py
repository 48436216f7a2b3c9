"""downstream_configs/sst5_elmo_c.jsonnet (BCN on SST-5) trains one epoch on PTB-tree fixtures."""

import json

import pytest

import allennlp_models.classification  # noqa: F401  (registers bcn and sst_tokens)
from allennlp.commands.train import train_model_from_file

from tests import FIXTURES_ROOT

CONFIG = FIXTURES_ROOT / "configs" / "sst5_elmo_c_tiny.jsonnet"  # imports downstream_configs/


@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_sst5_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    trees = str(FIXTURES_ROOT / "data" / "sst5.txt")
    environment = {
        "SST_TRAIN": trees,
        "SST_DEV": trees,
        "SST_TEST": trees,
        "GLOVE_840B_300D": str(FIXTURES_ROOT / "data" / "glove_tiny.300d.txt"),
        "ELMO_C_ARCHIVE": str(elmo_c_archive),
        "ELMO_C_FASTTEXT": str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
        "ELMO_C_BASELINE": baseline,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    train_model_from_file(str(CONFIG), str(tmp_path / "run"))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
