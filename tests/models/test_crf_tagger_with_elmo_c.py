"""allennlp-models' CRF tagger (CoNLL-2003 NER) with ELMo-C, from downstream_configs/ner_elmo_c.jsonnet."""

import pytest

import allennlp_models.tagging  # noqa: F401  (registers crf_tagger and the conll2003 reader)
from allennlp.common.testing import ModelTestCase

from tests import FIXTURES_ROOT
from tests.helpers import set_downstream_environment, train_config

CONFIG = FIXTURES_ROOT / "configs" / "ner_elmo_c_tiny.jsonnet"  # imports downstream_configs/
CONLL = FIXTURES_ROOT / "data" / "conll2003.txt"


def set_ner_environment(monkeypatch, archive, baseline: str) -> None:
    set_downstream_environment(
        monkeypatch, archive, baseline, NER_TRAIN_DATA_PATH=str(CONLL),
        NER_TEST_DATA_PATH=str(CONLL), GLOVE_50D=str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt"),
    )  # fmt: skip


class TestCrfTaggerWithElmoC(ModelTestCase):
    @pytest.fixture(autouse=True)
    def environment(self, elmo_c_archive, monkeypatch):
        set_ner_environment(monkeypatch, elmo_c_archive, "none")

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


def test_task_archive_predicts_after_the_bilm_archive_is_deleted(elmo_c_archive, monkeypatch, tmp_path):
    import shutil

    import numpy

    from allennlp.data import Token
    from allennlp.models.archival import load_archive

    bilm = tmp_path / "bilm" / "model.tar.gz"
    bilm.parent.mkdir()
    shutil.copy(elmo_c_archive, bilm)
    set_ner_environment(monkeypatch, bilm, "none")
    train_config(CONFIG, tmp_path / "run", '{"trainer.num_epochs": 1}')
    task_archive = str(tmp_path / "run" / "model.tar.gz")

    def predict():
        archive = load_archive(task_archive)
        words = [Token(word) for word in "EU rejects German call to boycott British lamb .".split()]
        instance = archive.dataset_reader.text_to_instance(words)
        archive.dataset_reader.apply_token_indexers(instance)
        return archive.model.eval().forward_on_instance(instance)

    before = predict()
    shutil.rmtree(bilm.parent)
    after = predict()
    assert after["tags"] == before["tags"]
    numpy.testing.assert_allclose(after["logits"], before["logits"], atol=1e-6)
