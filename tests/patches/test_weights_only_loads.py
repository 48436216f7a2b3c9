"""`patches.weights_only_loads`: AllenNLP's checkpoint, archive-weight and best.th loads are
`weights_only=True`; AllenNLP's own functions fail on torch 2.6+ or run a pickle."""

import pickle

import numpy as np
import pytest
import torch

from allennlp.common import Params
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint

from allennlp_elmo_c.patches import weights_only_loads


class _Trainer:
    """Just enough of a Trainer for `Checkpointer.save_checkpoint`."""

    def __init__(self, trainer_state):
        self.trainer_state = trainer_state

    def get_checkpoint_state(self):
        return TrainerCheckpoint({"weight": torch.ones(3)}, self.trainer_state)


def test_recover_loads_training_state_with_non_tensor_objects(tmp_path):
    state = {
        "epochs_completed": 1,
        "batches_in_epoch_completed": 0,
        "metric_tracker": {"best_so_far": np.float64(0.25), "epochs_with_no_improvement": 0},
        "learning_rate_scheduler": {"best": np.float32(1.5)},
    }
    checkpointer = Checkpointer(tmp_path)
    checkpointer.save_checkpoint(_Trainer(state))
    loaded = Checkpointer(tmp_path).load_checkpoint()
    assert torch.equal(loaded.model_state["weight"], torch.ones(3))
    assert loaded.trainer_state["metric_tracker"]["best_so_far"] == 0.25
    assert isinstance(loaded.trainer_state["learning_rate_scheduler"]["best"], np.float32)
    # The unpatched checkpointer uses torch.load's weights_only default and refuses the state.
    with pytest.raises(pickle.UnpicklingError, match="[Ww]eights only load failed"):
        weights_only_loads.ORIGINALS["load_checkpoint"](Checkpointer(tmp_path))


def test_apply_is_idempotent():
    weights_only_loads.apply()
    weights_only_loads.apply()
    assert Checkpointer.load_checkpoint.__name__ == "_load_checkpoint"


def test_allennlp_train_then_recover(tmp_path):
    """A run "crashes" after epoch 1 of 2 (later files removed); --recover resumes and finishes."""
    import json

    from allennlp.commands.train import train_model
    from tests import FIXTURES_ROOT

    params = lambda: Params.from_file(  # noqa: E731
        str(FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"), '{"trainer.num_epochs": 2}'
    )
    train_model(params(), tmp_path)
    assert (tmp_path / "training_state_e1_b0.th").is_file()
    first_epoch_stamp = (tmp_path / "metrics_epoch_0.json").stat().st_mtime_ns
    for name in ("model_state_e2_b0.th", "training_state_e2_b0.th", "model.tar.gz", "metrics.json"):
        (tmp_path / name).unlink()
    train_model(params(), tmp_path, recover=True)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["epoch"] == 1
    # Epoch 1 was not run again: its metrics file is untouched.
    assert (tmp_path / "metrics_epoch_0.json").stat().st_mtime_ns == first_epoch_stamp
    assert (tmp_path / "model.tar.gz").is_file()


class _WritesMarker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (exec, (f"open({str(self.path)!r}, 'w').close()",))


def test_allennlp_weight_loads_are_weights_only_whatever_the_environment(tmp_path, monkeypatch):
    """`read_state_dict` (every archive's weights.th) and the trainer's reload of best.th refuse
    a pickle that runs code even with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, which makes AllenNLP's
    own calls (no weights_only) run it."""
    from allennlp.common.checks import ConfigurationError
    from allennlp.nn import util as nn_util
    from allennlp.training.gradient_descent_trainer import GradientDescentTrainer

    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker, path = tmp_path / "marker", tmp_path / "weights.th"
    torch.save({"weight": torch.ones(2), "x": _WritesMarker(marker)}, path)
    with pytest.raises(ConfigurationError, match="weights.th: refused"):
        nn_util.read_state_dict(path)
    trainer = GradientDescentTrainer.__new__(GradientDescentTrainer)
    trainer._ddp_wrapped_model, trainer.model = None, torch.nn.Linear(2, 1)
    with pytest.raises(ConfigurationError, match="weights.th: refused"):
        trainer._load_model_state(str(path))
    assert not marker.exists()
    torch.save(trainer.model.state_dict(), tmp_path / "best.th")
    trainer._load_model_state(str(tmp_path / "best.th"))
    assert set(nn_util.read_state_dict(tmp_path / "best.th")) == {"weight", "bias"}
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        weights_only_loads.ORIGINALS["read_state_dict"](path)
    assert marker.exists()  # AllenNLP's own function ran the pickle
