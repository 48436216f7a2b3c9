"""The `atomic` checkpointer: atomic saves, and `load_checkpoint` falling back past damage."""

import logging
import os

import numpy as np
import pytest
import torch

from allennlp.common import Lazy, Params
from allennlp.common.checks import ConfigurationError
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint

from allennlp_elmo_c.common.atomic import temporary_name
from allennlp_elmo_c.training.atomic_checkpointer import AtomicCheckpointer
from tests.write_faults import faulty_torch_save


class _Trainer:
    """Just enough of a Trainer for `save_checkpoint`: the state after `epochs` epochs and
    `batches` batches, with weights `value`."""

    def __init__(self, epochs: int, batches: int, value: float = 0.0) -> None:
        self.state = TrainerCheckpoint(
            {"weight": torch.full((3,), value)},
            {
                "version": 1,
                "epochs_completed": epochs,
                "batches_in_epoch_completed": batches,
                "metric_tracker": {"best_so_far": np.float64(value)},  # not weights_only-safe
            },
        )

    def get_checkpoint_state(self):
        return self.state


def save(directory, *points, **kwargs):
    checkpointer = AtomicCheckpointer(directory, **kwargs)
    for value, point in enumerate(points):
        checkpointer.save_checkpoint(_Trainer(*point, value=float(value)))
    return checkpointer


def names(directory):
    return sorted(os.listdir(directory))


def test_registered_by_default_keeps_two_and_saves_pairs(tmp_path):
    checkpointer = Checkpointer.from_params(
        Params({"type": "atomic"}), serialization_dir=str(tmp_path)
    )
    assert isinstance(checkpointer, AtomicCheckpointer)
    for value, point in enumerate([(0, 2), (0, 4), (1, 0)]):
        checkpointer.save_checkpoint(_Trainer(*point, value=float(value)))
    assert names(tmp_path) == [
        "model_state_e0_b4.th",
        "model_state_e1_b0.th",
        "training_state_e0_b4.th",
        "training_state_e1_b0.th",
    ]
    loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert torch.equal(loaded.model_state["weight"], torch.full((3,), 2.0))
    assert loaded.trainer_state["metric_tracker"]["best_so_far"] == 2.0
    # A plain open() would give the file these permissions (the umask's, not 0600).
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "model_state_e1_b0.th").st_mode & 0o777 == 0o666 & ~umask


def test_keep_most_recent_by_count_below_one_is_refused_and_one_warned(tmp_path, caplog):
    with pytest.raises(ConfigurationError, match="at least 1"):
        AtomicCheckpointer(tmp_path, keep_most_recent_by_count=0)
    with caplog.at_level(logging.WARNING):
        AtomicCheckpointer(tmp_path, keep_most_recent_by_count=1)
    assert "no older checkpoint to fall back to" in caplog.text


@pytest.mark.parametrize("failing", ["training_state_e0_b4", "model_state_e0_b4"])
def test_a_save_that_fills_the_disk_leaves_the_older_checkpoints(tmp_path, monkeypatch, failing):
    checkpointer = save(tmp_path, (0, 2))
    before = {name: (tmp_path / name).read_bytes() for name in names(tmp_path)}
    monkeypatch.setattr(torch, "save", faulty_torch_save(torch.save, failing, "enospc"))
    with pytest.raises(OSError, match="No space left on device"):
        checkpointer.save_checkpoint(_Trainer(0, 4, value=1.0))
    # Nothing of the failed checkpoint, no temporary; the older one untouched.
    assert {name: (tmp_path / name).read_bytes() for name in names(tmp_path)} == before
    loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert loaded.trainer_state["batches_in_epoch_completed"] == 2


def test_a_file_of_the_same_name_is_replaced(tmp_path):
    (tmp_path / "model_state_e0_b2.th").write_bytes(b"left by a crashed run")
    save(tmp_path, (0, 2))
    loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert torch.equal(loaded.model_state["weight"], torch.zeros(3))


def test_recover_skips_a_truncated_newest_checkpoint(tmp_path, caplog):
    save(tmp_path, (0, 2), (0, 4))
    for name in ("model_state_e0_b4.th", "training_state_e0_b4.th"):
        os.truncate(tmp_path / name, 100)
    with caplog.at_level(logging.WARNING):
        loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert loaded.trainer_state["batches_in_epoch_completed"] == 2
    assert torch.equal(loaded.model_state["weight"], torch.zeros(3))
    warning = caplog.text
    assert "skipping the checkpoint after epoch 0, batch 4" in warning
    for name in ("model_state_e0_b4.th", "training_state_e0_b4.th"):
        assert f"{tmp_path / name}: does not load (100 bytes)" in warning
        # Set aside: kept, but no longer a checkpoint.
        assert (tmp_path / (name + ".unusable")).stat().st_size == 100
        assert not (tmp_path / name).exists()
    assert AtomicCheckpointer(tmp_path).find_latest_checkpoint()[0].endswith("e0_b2.th")


def test_recover_skips_a_checkpoint_missing_a_file(tmp_path, caplog):
    """A kill between the two files of a save leaves the training state alone."""
    save(tmp_path, (0, 2), (0, 4))
    os.remove(tmp_path / "model_state_e0_b4.th")
    (temporary_name(tmp_path / "model_state_e0_b4.th")).write_bytes(b"half")
    with caplog.at_level(logging.WARNING):
        loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert loaded.trainer_state["batches_in_epoch_completed"] == 2
    assert f"{tmp_path / 'model_state_e0_b4.th'}: missing" in caplog.text
    # The killed write's temporary is gone (this process's id, but not being written by it).
    assert names(tmp_path) == [
        "model_state_e0_b2.th",
        "training_state_e0_b2.th",
        "training_state_e0_b4.th.unusable",
    ]


def test_recover_skips_a_training_state_of_another_point(tmp_path, caplog):
    save(tmp_path, (0, 2), (0, 4))
    os.replace(tmp_path / "training_state_e0_b2.th", tmp_path / "training_state_e0_b4.th")
    save(tmp_path, (0, 2))
    with caplog.at_level(logging.WARNING):
        loaded = AtomicCheckpointer(tmp_path).load_checkpoint()
    assert loaded.trainer_state["batches_in_epoch_completed"] == 2
    assert "holds the state after (0, 2), not after (0, 4)" in caplog.text


def test_recover_with_no_loadable_checkpoint_lists_every_file(tmp_path):
    save(tmp_path, (0, 2), (0, 4))
    os.truncate(tmp_path / "model_state_e0_b4.th", 0)
    os.remove(tmp_path / "training_state_e0_b4.th")
    (tmp_path / "model_state_e0_b2.th").write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigurationError) as raised:
        AtomicCheckpointer(tmp_path).load_checkpoint()
    message = str(raised.value)
    assert f"{tmp_path / 'model_state_e0_b4.th'}: does not load (0 bytes)" in message
    assert f"{tmp_path / 'training_state_e0_b4.th'}: missing" in message
    assert f"{tmp_path / 'model_state_e0_b2.th'}: does not load (16 bytes)" in message
    assert f"{tmp_path / 'training_state_e0_b2.th'}" not in message  # it loads
    # Nothing was renamed: the files are as they were, for the user to look at.
    assert "model_state_e0_b4.th" in names(tmp_path)


def test_the_atomic_checkpointer_is_built_where_a_config_names_it(tmp_path):
    checkpointer = Checkpointer.from_params(Params({"type": "atomic", "save_every_num_batches": 3}),
                                            serialization_dir=tmp_path)  # fmt: skip
    assert isinstance(checkpointer, AtomicCheckpointer) and checkpointer._save_every_num_batches == 3


@pytest.mark.parametrize("params", [{}, {"type": "default"}], ids=["absent", "default"])
def test_allennlps_default_checkpointer_stays_allennlps(params, tmp_path):
    """The plugin registers "atomic" only: a config that names no checkpointer, or AllenNLP's
    "default", gets AllenNLP's own `Checkpointer`."""
    if params:
        checkpointer = Checkpointer.from_params(Params(dict(params)), serialization_dir=tmp_path)
    else:  # what the trainer builds when the config has no checkpointer
        checkpointer = Lazy(Checkpointer).construct(serialization_dir=str(tmp_path))
    assert type(checkpointer) is Checkpointer
