"""downstream_configs/coref_elmo_c.jsonnet: its derived dimensions agree with the coref model's own
checks at full size. (tests/test_downstream_configs.py trains it on a CoNLL-2012-format fixture.)"""

import pytest

import allennlp_models.coref  # noqa: F401  (registers the coref model and reader)
from allennlp.common import Params

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import set_downstream_environment

CONFIG = FIXTURES_ROOT / "configs" / "coref_elmo_c_tiny.jsonnet"  # imports downstream_configs/
DOCUMENT = str(FIXTURES_ROOT / "data" / "coref.gold_conll")


def set_environment(monkeypatch, archive, baseline):
    set_downstream_environment(
        monkeypatch, archive, baseline, COREF_TRAIN_DATA_PATH=DOCUMENT,
        COREF_DEV_DATA_PATH=DOCUMENT, COREF_TEST_DATA_PATH=DOCUMENT,
        GLOVE_6B_300D=str(FIXTURES_ROOT / "data" / "glove_tiny.300d.txt"),
    )  # fmt: skip


@pytest.mark.parametrize("baseline, text_dim", [("none", 1424), ("fasttext", 700)])
def test_full_size_dimensions(monkeypatch, elmo_c_archive, baseline, text_dim):
    set_environment(monkeypatch, elmo_c_archive, baseline)
    monkeypatch.delenv("ELMO_C_DIM")  # the plugin's defaults: 1024, the paper's size ...
    monkeypatch.delenv("ELMO_C_FASTTEXT_DIM")  # ... and 300, cc.en.300.bin's
    model = Params.from_file(str(PROJECT_ROOT / "downstream_configs" / "coref_elmo_c.jsonnet"))[
        "model"
    ]
    span = 2 * 2 * 200 + 20 + text_dim
    assert model["context_layer"]["input_size"] == text_dim
    assert model["mention_feedforward"]["input_dim"] == span
    assert model["antecedent_feedforward"]["input_dim"] == 3 * span + 20
