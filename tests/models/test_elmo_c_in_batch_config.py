"""
`training_config/elmo_c_in_batch_demo.jsonnet`: `elmo_c_demo.jsonnet` with the continuous head's
`in_batch_softmax` loss. At fixture size the whole model runs forward and backward with it, and
each direction's loss is the in-batch softmax of its predictions against its shifted targets.
"""

import json

import pytest
import torch

from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.nn.in_batch_softmax import in_batch_softmax_loss
from tests.helpers import DEMO_AT_FIXTURE_SIZE, DEMO_CONFIG, PROJECT_ROOT, make_demo_data_dir

CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_in_batch_demo.jsonnet"


@pytest.fixture
def params(tmp_path, monkeypatch):
    monkeypatch.setenv("ELMO_C_DATA_DIR", str(make_demo_data_dir(tmp_path / "data")))
    return Params.from_file(str(CONFIG), json.dumps(DEMO_AT_FIXTURE_SIZE))


def test_only_the_loss_and_the_validation_batch_size_differ_from_the_demo(monkeypatch):
    monkeypatch.setenv("ELMO_C_DATA_DIR", "data")
    config = Params.from_file(str(CONFIG)).as_dict()
    demo = Params.from_file(str(DEMO_CONFIG)).as_dict()
    assert config["model"]["output_head"] == {
        "type": "continuous",
        "loss": "in_batch_softmax",
        "temperature": 0.05,
    }
    assert config["validation_data_loader"] == {"type": "lm_stream", "batch_size": 64,
                                                "shuffle": False, "max_instances_in_memory": 12800}
    assert config["data_loader"]["batch_size"] == 64
    for changed in (config, demo):
        changed["model"].pop("output_head")
        changed.pop("validation_data_loader")
    assert config == demo


def test_model_forward_and_backward(params):
    torch.manual_seed(0)
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params["train_data_path"]))[:4]
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    model = Model.from_params(vocab=Vocabulary(), params=params.pop("model"))
    model.train()
    output = model(**batch.as_tensor_dict())
    assert torch.isfinite(output["loss"])
    output["loss"].backward()
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
    # Each direction: the in-batch softmax over its real positions, mean over their count.
    mask = output["mask"][:, 1:]
    embeddings = output["noncontextual_token_embeddings"].detach()
    for direction, targets in (("forward", embeddings[:, 1:]), ("backward", embeddings[:, :-1])):
        predictions = output[f"{direction}_predictions"].detach()
        losses = in_batch_softmax_loss(predictions[mask], targets[mask], 0.05)
        torch.testing.assert_close(output[f"{direction}_loss"].detach(), losses.mean())
    assert len(torch.unique(embeddings[:, 1:][mask], dim=0)) < int(mask.sum())  # words repeat
