"""`patches.weights_only_loads`: `--recover` with AllenNLP's checkpointer loads the training
state on torch 2.6+, where AllenNLP's own `load_checkpoint` fails."""

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
        weights_only_loads.ORIGINAL(Checkpointer(tmp_path))


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
