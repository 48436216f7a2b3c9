"""downstream_configs/snli_elmo_c.jsonnet (ESIM on SNLI): ESIM's initializer regexes leave the
pretrained biLM untouched. (tests/test_downstream_configs.py trains it on jsonl fixtures.)"""

import torch

import allennlp_models.pair_classification  # noqa: F401  (registers esim and the snli reader)
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from tests import FIXTURES_ROOT
from tests.helpers import set_downstream_environment

CONFIG = FIXTURES_ROOT / "configs" / "snli_elmo_c_tiny.jsonnet"  # imports downstream_configs/
SNLI = str(FIXTURES_ROOT / "data" / "snli.jsonl")


def set_environment(monkeypatch, archive, baseline):
    set_downstream_environment(monkeypatch, archive, baseline, SNLI_TRAIN=SNLI, SNLI_DEV=SNLI)


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
