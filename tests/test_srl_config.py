"""downstream_configs/srl_elmo_c.jsonnet trains one epoch on a CoNLL-2012-format fixture."""

import json
import shutil

import pytest

import allennlp_models.structured_prediction  # noqa: F401  (registers srl model and reader)
from allennlp.commands.train import train_model_from_file

from tests import FIXTURES_ROOT

CONFIG = FIXTURES_ROOT / "configs" / "srl_elmo_c_tiny.jsonnet"  # imports downstream_configs/
CONLL_2012 = str(FIXTURES_ROOT / "data" / "conll2012")


@pytest.mark.skipif(shutil.which("perl") is None, reason="the SRL scorer needs perl")
@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_srl_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    environment = {
        "SRL_TRAIN_DATA_PATH": CONLL_2012,
        "SRL_VALIDATION_DATA_PATH": CONLL_2012,
        "ELMO_C_ARCHIVE": str(elmo_c_archive),
        "ELMO_C_FASTTEXT": str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
        "ELMO_C_BASELINE": baseline,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    train_model_from_file(str(CONFIG), str(tmp_path / "run"))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0.0 <= metrics["best_validation_f1-measure-overall"] <= 1.0
