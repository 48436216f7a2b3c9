"""
Crash and resume: `allennlp train` on the demo config (tiny sizes) is killed with SIGKILL in the
middle of an epoch, `allennlp train --recover` resumes from the last mid-epoch checkpoint and
finishes, and the result equals an uninterrupted run with the same seed: the weights bit for bit
and the metrics exactly (the `rng_state` callback restores the dropout generator; AllenNLP replays
the data order). The kill is a real SIGKILL (no cleanup, no atexit), sent by the training process
to itself from a test-only callback at a fixed batch, so the test is deterministic.
"""

import json
import os
import signal
import subprocess
import sys

import torch


from tests import PROJECT_ROOT
from tests.helpers import DEMO_AT_FIXTURE_SIZE, DEMO_CONFIG, KILL_ENV, make_demo_data_dir


def train(data_dir, run, recover=False, kill_at=None):
    overrides = {
        **DEMO_AT_FIXTURE_SIZE,
        "trainer.num_epochs": 2,
        # Dotted: keeps the config's checkpointer (`atomic`), adds to it.
        "trainer.checkpointer.save_every_num_batches": 2,
        "trainer.callbacks": [{"type": "rng_state"}, {"type": "sigkill_at_batch"}],
    }
    environment = dict(os.environ, ELMO_C_DATA_DIR=str(data_dir), OMP_NUM_THREADS="1")
    environment.pop(KILL_ENV, None)
    if kill_at is not None:
        environment[KILL_ENV] = str(kill_at)
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(DEMO_CONFIG), "-s", str(run)]
    command += ["-o", json.dumps(overrides), "--include-package", __name__]
    command += ["--file-friendly-logging"] + (["--recover"] if recover else [])
    return subprocess.run(
        command, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=600
    )


def test_sigkill_mid_epoch_then_recover_equals_an_uninterrupted_run(tmp_path):
    data = make_demo_data_dir(tmp_path / "data")

    reference = train(data, tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-3000:]

    crashed = tmp_path / "crashed"
    killed = train(data, crashed, kill_at=5)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    # Killed inside epoch 0 after the checkpoint at batch 4: nothing of the epoch's end exists.
    assert (crashed / "model_state_e0_b4.th").is_file()
    assert not (crashed / "metrics_epoch_0.json").exists()
    assert not (crashed / "model.tar.gz").exists()

    resumed = train(data, crashed, recover=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = (crashed / "out.log").read_text()
    assert "rng_state: random generator states restored" in log

    expected = json.loads((tmp_path / "reference" / "metrics.json").read_text())
    actual = json.loads((crashed / "metrics.json").read_text())
    assert actual["epoch"] == expected["epoch"] == 1
    for name, value in expected.items():
        if "loss" in name or "cosine" in name or "accuracy" in name:
            assert actual[name] == value, name  # tolerance: none (same floats)
    final = "model_state_e2_b0.th"
    expected_weights = torch.load(tmp_path / "reference" / final)
    actual_weights = torch.load(crashed / final)
    assert expected_weights.keys() == actual_weights.keys()
    for name in expected_weights:
        assert torch.equal(expected_weights[name], actual_weights[name]), name


def test_without_the_callback_a_resumed_run_differs(tmp_path, monkeypatch):
    """Shows what `rng_state` is for (and that the test above can fail): the same crash and
    resume without it ends with different weights, because the resumed batches draw other
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
