import math

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models import Model
from allennlp.training import GradientDescentTrainer

from allennlp_elmo_c.training.direction_grad_norm import GradNormPerDirection, direction_groups
from tests.helpers import FIXTURES_ROOT, PROJECT_ROOT, SENTENCES

CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"


def model_and_batch():
    params = Params.from_file(str(CONFIG))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(str(SENTENCES)))[:8]
    vocab = Vocabulary()
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    batch = Batch(instances)
    batch.index_instances(vocab)
    return model, instances, vocab, batch.as_tensor_dict()


def trainer_with(model, instances, vocab, tmp_path, grad_norm=None):
    loader = SimpleDataLoader(instances, 8, vocab=vocab)
    callback = GradNormPerDirection(str(tmp_path), max_norm=1.0)
    trainer = GradientDescentTrainer(
        model, torch.optim.SGD(model.parameters(), lr=0.1), loader, grad_norm=grad_norm,
        serialization_dir=str(tmp_path), callbacks=[callback],
    )  # fmt: skip
    callback.on_start(trainer)
    return trainer


def group_norm(group):
    return math.sqrt(sum(p.grad.double().pow(2).sum().item() for p in group if p.grad is not None))


def test_groups_are_the_two_language_models():
    model, *_ = model_and_batch()
    groups = direction_groups(model)
    assert set(groups) == {"forward_lm", "backward_lm"}  # the fastText input is frozen
    names = {id(p): n for n, p in model.named_parameters()}
    for direction in ("forward_lm", "backward_lm"):
        assert all(direction in names[id(p)] for p in groups[direction])
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert sum(len(g) for g in groups.values()) == len(trainable)


def test_huge_gradients_of_one_direction_leave_the_other_untouched(tmp_path):
    model, instances, vocab, tensors = model_and_batch()
    model(**tensors)["loss"].backward()
    groups = direction_groups(model)
    forward, backward = groups["forward_lm"], groups["backward_lm"]
    with torch.no_grad():
        for parameter in forward:
            parameter.grad.mul_(1e6)
        # The backward LM's gradients below the clip: they must come out exactly as they went in.
        scale = 0.5 / group_norm(backward)
        for parameter in backward:
            parameter.grad.mul_(scale)
    before = {id(p): p.grad.clone() for p in forward + backward}
    forward_norm = group_norm(forward)
    expected_total = math.hypot(forward_norm, group_norm(backward))

    trainer = trainer_with(model, instances, vocab, tmp_path)
    total = trainer.rescale_gradients()

    assert total == pytest.approx(expected_total, rel=1e-6)
    for parameter in backward:
        assert torch.equal(parameter.grad, before[id(parameter)])
    assert group_norm(forward) == pytest.approx(1.0, rel=1e-5)
    for parameter in forward:  # scaled down as a whole, direction kept
        expected = before[id(parameter)] / forward_norm
        assert torch.allclose(parameter.grad, expected, rtol=1e-4, atol=1e-12)


def test_a_joint_norm_would_have_shrunk_the_quiet_direction(tmp_path):
    """The trainer's `grad_norm` (one norm over both LMs) on the same gradients: what the
    callback avoids."""
    model, instances, vocab, tensors = model_and_batch()
    model(**tensors)["loss"].backward()
    groups = direction_groups(model)
    with torch.no_grad():
        for parameter in groups["forward_lm"]:
            parameter.grad.mul_(1e6)
    quiet = group_norm(groups["backward_lm"])
    loader = SimpleDataLoader(instances, 8, vocab=vocab)
    trainer = GradientDescentTrainer(
        model, torch.optim.SGD(model.parameters(), lr=0.1), loader, grad_norm=1.0,
        serialization_dir=str(tmp_path),
    )  # fmt: skip
    trainer.rescale_gradients()
    assert group_norm(groups["backward_lm"]) < 1e-3 * quiet


def test_a_trainer_grad_norm_still_applies_to_everything_afterwards(tmp_path):
    model, instances, vocab, tensors = model_and_batch()
    model(**tensors)["loss"].backward()
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.grad is not None:
                parameter.grad.mul_(1e6)
    trainer = trainer_with(model, instances, vocab, tmp_path, grad_norm=0.5)
    trainer.rescale_gradients()
    groups = direction_groups(model)
    assert math.hypot(*(group_norm(g) for g in groups.values())) == pytest.approx(0.5, rel=1e-5)


def test_refuses_a_model_without_directions(tmp_path):
    model = torch.nn.Linear(3, 2)
    loader = SimpleDataLoader([], 1)
    trainer = GradientDescentTrainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loader)
    with pytest.raises(ConfigurationError, match="grad_norm_per_direction"):
        GradNormPerDirection(str(tmp_path)).on_start(trainer)
    with pytest.raises(ConfigurationError, match="max_norm"):
        GradNormPerDirection(str(tmp_path), max_norm=0.0)


PRETRAINING_CONFIGS = sorted(path.name for path in (PROJECT_ROOT / "training_config").glob("elmo_*"))


@pytest.mark.parametrize("name", PRETRAINING_CONFIGS)
def test_every_pretraining_config_clips_each_direction_on_its_own(name, monkeypatch, tmp_path):
    for variable in ("ELMO_C_FASTTEXT", "ELMO_C_TRAIN_DATA", "ELMO_C_VALIDATION_DATA",
                     "ELMO_C_DATA_DIR", "ELMO_C_SOURCE_ARCHIVE", "ELMO_C_BPE",
                     "ELMO_C_ELMO_OPTIONS", "ELMO_C_ELMO_WEIGHTS", "ELMO_C_VOCABULARY"):  # fmt: skip
        monkeypatch.setenv(variable, str(tmp_path / "x"))
    monkeypatch.setenv("ELMO_C_ADAPT_STEPS", "100")
    trainer = Params.from_file(str(PROJECT_ROOT / "training_config" / name)).as_dict()["trainer"]
    types = [callback["type"] for callback in trainer.get("callbacks", [])]
    assert "grad_norm_per_direction" in types, name
    assert "grad_norm" not in trainer, name
