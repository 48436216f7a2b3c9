"""downstream_configs/snli_elmo_c.jsonnet (ESIM on SNLI) trains one epoch on jsonl fixtures, and
ESIM's initializer regexes leave the pretrained biLM untouched."""

import pytest
import torch

import allennlp_models.pair_classification  # noqa: F401  (registers esim and the snli reader)
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from tests import FIXTURES_ROOT
from tests.helpers import set_downstream_environment, train_config

CONFIG = FIXTURES_ROOT / "configs" / "snli_elmo_c_tiny.jsonnet"  # imports downstream_configs/
SNLI = str(FIXTURES_ROOT / "data" / "snli.jsonl")


def set_environment(monkeypatch, archive, baseline):
    set_downstream_environment(monkeypatch, archive, baseline, SNLI_TRAIN=SNLI, SNLI_DEV=SNLI)


@pytest.mark.parametrize("baseline", ["none", "fasttext"])
def test_snli_config_trains_one_epoch(elmo_c_archive, monkeypatch, tmp_path, baseline):
    set_environment(monkeypatch, elmo_c_archive, baseline)
    metrics = train_config(CONFIG, tmp_path / "run")  # reduce_on_plateau included
    assert 0.0 <= metrics["best_validation_accuracy"] <= 1.0


def test_esim_initializer_does_not_touch_the_bilm(elmo_c_archive, monkeypatch):
    set_environment(monkeypatch, elmo_c_archive, "none")
    params = Params.from_file(str(CONFIG))
    reader = DatasetReader.from_params(params["dataset_reader"])
    vocab = Vocabulary.from_instances(reader.read(SNLI))
    model = Model.from_params(vocab=vocab, params=params["model"])  # runs the initializer
    pretrained = load_archive(str(elmo_c_archive)).model.state_dict()
    bilm = model._text_field_embedder._token_embedders["elmo"]._elmo_c._lm.state_dict()
    checked = 0
    for name, tensor in bilm.items():
        assert torch.equal(tensor, pretrained[name]), name
        checked += 1
    assert checked > 10
