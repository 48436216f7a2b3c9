"""
What the `rng_state` callback is for: without it, a run killed mid-epoch and resumed ends with
other weights than an uninterrupted one. (test_checkpoints.py kills the demo config's training
with SIGKILL and resumes it with the callback, bit for bit equal.)
"""

import json

import torch

from tests.helpers import DEMO_AT_FIXTURE_SIZE, DEMO_CONFIG, make_demo_data_dir


def test_without_the_callback_a_resumed_run_differs(tmp_path, monkeypatch):
    """Shows what `rng_state` is for (and that test_checkpoints.py's
    `test_sigkill_mid_epoch_then_recover_equals_an_uninterrupted_run` can fail): the same crash
    and resume without it ends with different weights, because the resumed batches draw other
    dropout masks."""
    from allennlp.common import Params
    from allennlp.commands.train import train_model

    monkeypatch.setenv("ELMO_C_DATA_DIR", str(make_demo_data_dir(tmp_path / "data")))
    overrides = {
        **DEMO_AT_FIXTURE_SIZE,
        "trainer.num_epochs": 1,
        "trainer.checkpointer.save_every_num_batches": 2,
        "trainer.checkpointer.keep_most_recent_by_count": None,
        "trainer.callbacks": [],
        "model.nearest_neighbour_words": None,
    }

    def params():
        return Params.from_file(str(DEMO_CONFIG), json.dumps(overrides))

    train_model(params(), tmp_path / "reference")
    train_model(params(), tmp_path / "crashed")
    # "Crash" after batch 4: keep only that checkpoint.
    for path in (tmp_path / "crashed").iterdir():
        if path.suffix == ".th" and "_e0_b4" not in path.name or path.name.endswith(".json"):
            if path.name != "config.json":
                path.unlink()
    (tmp_path / "crashed" / "model.tar.gz").unlink()
    assert (tmp_path / "crashed" / "training_state_e0_b4.th").is_file()
    train_model(params(), tmp_path / "crashed", recover=True)
    expected = torch.load(tmp_path / "reference" / "model_state_e1_b0.th")
    actual = torch.load(tmp_path / "crashed" / "model_state_e1_b0.th")
    assert any(not torch.equal(expected[name], actual[name]) for name in expected)
