"""downstream_configs/srl_elmo_c.jsonnet trains one epoch on a CoNLL-2012-format fixture."""

import shutil

import pytest

import allennlp_models.structured_prediction  # noqa: F401  (registers srl model and reader)

from tests import FIXTURES_ROOT
from tests.helpers import set_downstream_environment, train_config

CONFIG = FIXTURES_ROOT / "configs" / "srl_elmo_c_tiny.jsonnet"  # imports downstream_configs/
CONLL_2012 = str(FIXTURES_ROOT / "data" / "conll2012")


@pytest.mark.skipif(shutil.which("perl") is None, reason="the SRL scorer needs perl")
@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_srl_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    set_downstream_environment(
        monkeypatch, elmo_c_archive, baseline, SRL_TRAIN_DATA_PATH=CONLL_2012,
        SRL_VALIDATION_DATA_PATH=CONLL_2012,
    )  # fmt: skip
    metrics = train_config(CONFIG, tmp_path / "run")
    assert 0.0 <= metrics["best_validation_f1-measure-overall"] <= 1.0
