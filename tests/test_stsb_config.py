"""downstream_configs/stsb_elmo_c.jsonnet: ESIM at hidden size 100 on STS-B's similarity bands,
evaluating on its test file too. (tests/test_downstream_configs.py trains it on the tab-separated
fixture.)"""



import allennlp_models.pair_classification  # noqa: F401  (registers esim and the reader)
from allennlp.common import Params

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import TINY_ELMO_C_DIM, set_downstream_environment

CONFIG = PROJECT_ROOT / "downstream_configs" / "stsb_elmo_c.jsonnet"
STSB = str(FIXTURES_ROOT / "data" / "stsb.tsv")


def set_environment(monkeypatch, archive, baseline):
    set_downstream_environment(
        monkeypatch, archive, baseline, STSB_TRAIN=STSB, STSB_DEV=STSB, STSB_TEST=STSB
    )


def test_stsb_config_is_snli_esim_at_hidden_100(elmo_c_archive, monkeypatch):
    set_environment(monkeypatch, elmo_c_archive, "none")
    params = Params.from_file(str(CONFIG)).as_dict()
    assert params["dataset_reader"]["type"] == "quora_paraphrase"
    assert params["train_data_path"] == STSB and params["evaluate_on_test"] is True
    model = params["model"]
    assert model["type"] == "esim" and model["encoder"]["input_size"] == TINY_ELMO_C_DIM
    assert model["encoder"]["hidden_size"] == model["inference_encoder"]["hidden_size"] == 100
    assert model["projection_feedforward"]["input_dim"] == 800
    assert model["output_feedforward"]["input_dim"] == 800
    assert model["output_logit"]["hidden_dims"] == 3  # the three bands
    # ESIM's initializer (the test of snli_elmo_c.jsonnet shows it leaves the biLM alone).
    assert model["initializer"]["regexes"][2][0] == ".*weight_ih.*"
