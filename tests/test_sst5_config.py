"""downstream_configs/sst5_elmo_c.jsonnet (BCN on SST-5) trains one epoch on PTB-tree fixtures."""

import pytest

import allennlp_models.classification  # noqa: F401  (registers bcn and sst_tokens)

from tests import FIXTURES_ROOT
from tests.helpers import set_downstream_environment, train_config

CONFIG = FIXTURES_ROOT / "configs" / "sst5_elmo_c_tiny.jsonnet"  # imports downstream_configs/


@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_sst5_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    trees = str(FIXTURES_ROOT / "data" / "sst5.txt")
    glove = str(FIXTURES_ROOT / "data" / "glove_tiny.300d.txt")
    set_downstream_environment(
        monkeypatch, elmo_c_archive, baseline, SST_TRAIN=trees, SST_DEV=trees, SST_TEST=trees,
        GLOVE_840B_300D=glove,
    )  # fmt: skip
    metrics = train_config(CONFIG, tmp_path / "run")
    assert 0.0 <= metrics["test_accuracy"] <= 1.0
