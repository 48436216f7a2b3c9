"""allennlp-models' CRF tagger (CoNLL-2003 NER) with ELMo-C, from downstream_configs/ner_elmo_c.jsonnet."""

import json

import pytest

import allennlp_models.tagging  # noqa: F401  (registers crf_tagger and the conll2003 reader)
from allennlp.common.testing import ModelTestCase

from tests import FIXTURES_ROOT

CONFIG = FIXTURES_ROOT / "configs" / "ner_elmo_c_tiny.jsonnet"  # imports downstream_configs/
CONLL = FIXTURES_ROOT / "data" / "conll2003.txt"


def ner_environment(archive, baseline: str) -> dict:
    return {
        "NER_TRAIN_DATA_PATH": str(CONLL),
        "NER_TEST_DATA_PATH": str(CONLL),
        "GLOVE_50D": str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt"),
        "ELMO_C_ARCHIVE": str(archive),
        "ELMO_C_FASTTEXT": str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
        "ELMO_C_BASELINE": baseline,
    }


class TestCrfTaggerWithElmoC(ModelTestCase):
    @pytest.fixture(autouse=True)
    def environment(self, elmo_c_archive, monkeypatch):
        for name, value in ner_environment(elmo_c_archive, "none").items():
            monkeypatch.setenv(name, value)

    def test_train_save_and_load(self):
        self.set_up_model(CONFIG, CONLL)
        self.ensure_model_can_train_save_and_load(CONFIG)

    def test_elmo_c_parameters_are_frozen_and_mixed(self):
        self.set_up_model(CONFIG, CONLL)
        model = self.model
        trainable = [n for n, p in model.named_parameters() if p.requires_grad and "elmo" in n]
        assert trainable and all("scalar_mixes" in name for name in trainable)
        # The config's scalar_parameters L2 regularizer reaches the mix.
        assert any("scalar_parameters" in name for name in trainable)


@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_ner_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    from allennlp.commands.train import train_model_from_file

    for name, value in ner_environment(elmo_c_archive, baseline).items():
        monkeypatch.setenv(name, value)
    train_model_from_file(str(CONFIG), str(tmp_path / "run"))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "best_validation_f1-measure-overall" in metrics
