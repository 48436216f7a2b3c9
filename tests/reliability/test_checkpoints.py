"""
Crash and resume, and checkpoints that survive the crash that interrupts them. `allennlp train`
on the demo config (tiny sizes, a checkpoint every 2 batches) is killed with SIGKILL in the middle
of an epoch, and `allennlp train --recover` resumes from the last mid-epoch checkpoint and
finishes with the result of an uninterrupted run with the same seed: the weights bit for bit and
the metrics exactly (the `rng_state` callback restores the dropout generator; AllenNLP replays the
data order, without re-reading the batches trained: `lm_stream` and `skip_trained_batches`).
The kill is a real SIGKILL (no cleanup, no atexit), sent by the training process to
itself from a test-only callback at a fixed batch, so the test is deterministic. Then the run is
interrupted while it writes a file: the disk fills up in the middle of a checkpoint, a SIGKILL
lands in the middle of `torch.save` or of writing `model.tar.gz`; or the newest checkpoint is
truncated afterwards. In each case nothing that looks finished is left half-written, `--recover`
resumes from the last intact state, and the run ends with exactly the weights of an uninterrupted
run. (test_crash_resume.py shows that without `rng_state` a resumed run differs.)

The faults are injected in the training process by a test-only callback (`write_faults`) named
in the config, driven by `$ELMO_C_TEST_WRITE_FAULT` ("<enospc|sigkill>:<part of the file name>").
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile

import pytest
import torch

from allennlp.training.callbacks.callback import TrainerCallback

from tests import PROJECT_ROOT
from tests.helpers import DEMO_AT_FIXTURE_SIZE, DEMO_CONFIG, KILL_ENV, make_demo_data_dir
from tests.write_faults import fail, faulty_torch_save

FAULT_ENV = "ELMO_C_TEST_WRITE_FAULT"
FINAL = "model_state_e2_b0.th"  # the weights after the last epoch


@TrainerCallback.register("write_faults")
class WriteFaults(TrainerCallback):
    """
    From the start of training, with `$ELMO_C_TEST_WRITE_FAULT` = "<fault>:<name part>": the
    `torch.save` to a file whose name contains the part, or for "model.tar.gz" the archive's
    writing once it holds the weights, writes half and fails with the fault (`write_faults`).
    Does nothing without the variable.
    """

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        setting = os.environ.get(FAULT_ENV)
        if not setting:
            return
        fault, name_part = setting.split(":", 1)
        if name_part != "model.tar.gz":
            torch.save = faulty_torch_save(torch.save, name_part, fault)
            return
        real_add = tarfile.TarFile.add

        def add(archive, name, arcname=None, *args, **kwargs):
            real_add(archive, name, arcname, *args, **kwargs)
            if arcname == "weights.th" and "model.tar.gz" in str(archive.name):
                archive.fileobj.flush()
                fail(fault)

        tarfile.TarFile.add = add


# Three spellings of "a checkpoint every 2 batches": the dotted key keeps the config's
# checkpointer (its type `atomic`); an object replaces it whole, as AllenNLP merges overrides,
# naming its type again or not (the `elmo_c` trainer's type-less checkpointer is atomic).
EVERY_2_BATCHES = {
    "dotted": {"trainer.checkpointer.save_every_num_batches": 2},
    "object": {"trainer.checkpointer": {"type": "atomic", "save_every_num_batches": 2}},
    "object without type": {"trainer.checkpointer": {"save_every_num_batches": 2}},
}


def run_training(config, run, overrides, variables, recover=False, fault=None, kill_at=None):
    """`allennlp train` of `config` in a subprocess with the fault injectors of this module
    (`overrides` must name them among the callbacks) and the environment `variables`."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", **variables)
    environment.pop(KILL_ENV, None)
    environment.pop(FAULT_ENV, None)
    if kill_at is not None:
        environment[KILL_ENV] = str(kill_at)
    if fault is not None:
        environment[FAULT_ENV] = fault
    command = [sys.executable, "-m", "allennlp_elmo_c", "train", str(config), "-s", str(run)]
    command += ["-o", json.dumps(overrides), "--include-package", __name__]
    command += ["--file-friendly-logging"] + (["--recover"] if recover else [])
    return subprocess.run(
        command, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=600
    )


def train(data_dir, run, recover=False, fault=None, kill_at=None, spelling="dotted"):
    overrides = {
        **DEMO_AT_FIXTURE_SIZE,
        "trainer.num_epochs": 2,
        **EVERY_2_BATCHES[spelling],
        "trainer.callbacks": [
            {"type": "rng_state"},
            {"type": "sigkill_at_batch"},
            {"type": "write_faults"},
            {"type": "skip_trained_batches"},
        ],
    }
    return run_training(DEMO_CONFIG, run, overrides, {"ELMO_C_DATA_DIR": str(data_dir)},
                        recover, fault, kill_at)  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_demo_data_dir(tmp_path_factory.mktemp("checkpoints") / "data")


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """An uninterrupted run."""
    run = tmp_path_factory.mktemp("reference") / "run"
    done = train(data, run)
    assert done.returncode == 0, done.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def killed_at_batch_5(data, tmp_path_factory):
    """A run SIGKILLed at batch 5 of epoch 0 (the dotted spelling), after the checkpoint at batch
    4; read only: a test recovers a copy (`copy_of`)."""
    run = tmp_path_factory.mktemp("killed") / "run"
    crashed = train(data, run, kill_at=5)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    return run


def copy_of(run, target):
    shutil.copytree(run, target)
    return target


def temporaries(run):
    return sorted(path.name for path in run.iterdir() if path.name.endswith(".tmp"))


def assert_same_weights(expected, actual):
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name  # tolerance: none


def check_resumed(resumed, run, reference, resumes_from, final=FINAL) -> str:
    """Checks a finished `--recover` of `run`: it resumed from the checkpoint `resumes_from`
    with the random generator states, left no temporary and ended with the reference run's
    weights (`final`, bit for bit). Returns its log (stdout and stderr)."""
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert f"atomic checkpointer: resuming from {run / resumes_from}" in log
    assert "rng_state: random generator states restored" in log
    assert temporaries(run) == []
    assert_same_weights(torch.load(reference / final), torch.load(run / final))
    return log


def recover_and_compare(data, run, reference, resumes_from, spelling="dotted"):
    """Runs `--recover` on `run` and `check_resumed`s it. Returns its log."""
    return check_resumed(train(data, run, recover=True, spelling=spelling), run, reference, resumes_from)


def test_disk_full_during_a_checkpoint(data, reference, tmp_path):
    run = tmp_path / "run"
    crashed = train(data, run, fault="enospc:training_state_e0_b4")
    assert crashed.returncode == 1, crashed.stderr[-3000:]
    assert "OSError: [Errno 28] No space left on device" in crashed.stderr
    # Nothing of the checkpoint being written, no temporary; the one before is intact.
    assert not list(run.glob("*_e0_b4*")) and temporaries(run) == []
    assert (run / "model_state_e0_b2.th").is_file() and (run / "training_state_e0_b2.th").is_file()
    recover_and_compare(data, run, reference, "model_state_e0_b2.th")


def test_sigkill_mid_epoch_then_recover_equals_an_uninterrupted_run(
    data, reference, killed_at_batch_5, tmp_path
):
    run = copy_of(killed_at_batch_5, tmp_path / "run")
    # Killed inside epoch 0 after the checkpoint at batch 4: nothing of the epoch's end exists.
    assert (run / "model_state_e0_b4.th").is_file()
    assert not (run / "metrics_epoch_0.json").exists()
    assert not (run / "model.tar.gz").exists()
    log = recover_and_compare(data, run, reference, "model_state_e0_b4.th")  # bit for bit
    assert "rng_state: random generator states restored" in (run / "out.log").read_text()
    # The 4 batches trained were not read again (lm_stream, skip_trained_batches).
    assert "lm_stream: resuming after 0 epoch(s) and 4 batch(es): those are not re-read" in log
    expected = json.loads((reference / "metrics.json").read_text())
    actual = json.loads((run / "metrics.json").read_text())
    assert actual["epoch"] == expected["epoch"] == 1
    for name, value in expected.items():
        if "loss" in name or "cosine" in name or "accuracy" in name:
            assert actual[name] == value, name  # tolerance: none (same floats)


@pytest.mark.parametrize("spelling", sorted(EVERY_2_BATCHES))
def test_truncated_newest_checkpoint(data, reference, killed_at_batch_5, tmp_path, spelling):
    run = tmp_path / "run"
    if spelling == "dotted":
        copy_of(killed_at_batch_5, run)
    else:
        crashed = train(data, run, kill_at=5, spelling=spelling)
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    for name in ("model_state_e0_b4.th", "training_state_e0_b4.th"):
        os.truncate(run / name, 100)  # as a kill in the middle of a plain torch.save leaves it
    log = recover_and_compare(data, run, reference, "model_state_e0_b2.th", spelling)
    assert "skipping the checkpoint after epoch 0, batch 4" in log
    for name in ("model_state_e0_b4.th", "training_state_e0_b4.th"):
        assert f"{run / name}: does not load (100 bytes)" in log
        assert (run / (name + ".unusable")).stat().st_size == 100


def test_sigkill_in_the_middle_of_torch_save(data, reference, tmp_path):
    run = tmp_path / "run"
    # The model state is written second: its training state is complete, it is half written.
    crashed = train(data, run, fault="sigkill:model_state_e0_b4")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    assert not (run / "model_state_e0_b4.th").exists()
    assert [name.split(".")[1] for name in temporaries(run)] == ["model_state_e0_b4"]
    log = recover_and_compare(data, run, reference, "model_state_e0_b2.th")
    assert f"{run / 'model_state_e0_b4.th'}: missing" in log
