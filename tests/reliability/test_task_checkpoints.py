"""
The fault suite of `test_checkpoints.py` on a downstream task model: the CRF tagger of
`downstream_configs/ner_elmo_c.jsonnet` (with a trained fixture biLM) at fixture size, through
`allennlp train` as a user runs it, with no checkpointer named beyond the config's own. Each
interrupted run, resumed with `--recover`, ends with the metrics and weights of an uninterrupted
run, bit for bit (the config carries the random generator state).
"""

import json
import os
import signal

import pytest
import torch

from tests import FIXTURES_ROOT
from tests.helpers import TINY_ELMO_C_DIM, TINY_FASTTEXT
from tests.reliability.test_checkpoints import assert_same_weights, run_training, temporaries

CONFIG = FIXTURES_ROOT / "configs" / "ner_elmo_c_tiny.jsonnet"
CONLL = FIXTURES_ROOT / "data" / "conll2003.txt"
FINAL = "model_state_e2_b0.th"  # after the second (last) epoch


def train(archive, run, recover=False, fault=None, kill_at=None):
    overrides = {
        "data_loader.batch_size": 1,
        "trainer.num_epochs": 2,
        "trainer.checkpointer.save_every_num_batches": 1,
        # The config's callbacks (rng_state among them) and the test's fault injectors.
        "trainer.callbacks": [{"type": "console_logger", "should_log_inputs": False},
                              {"type": "rng_state"}, {"type": "sigkill_at_batch"},
                              {"type": "write_faults"}],  # fmt: skip
    }
    variables = {
        "ELMO_C_ARCHIVE": str(archive), "ELMO_C_BASELINE": "none",
        "ELMO_C_FASTTEXT": str(TINY_FASTTEXT), "ELMO_C_DIM": str(TINY_ELMO_C_DIM),
        "NER_TRAIN_DATA_PATH": str(CONLL), "NER_TEST_DATA_PATH": str(CONLL),
        "GLOVE_50D": str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt"),
    }  # fmt: skip
    return run_training(CONFIG, run, overrides, variables, recover, fault, kill_at)


@pytest.fixture(scope="module")
def reference(elmo_c_archive, tmp_path_factory):
    run = tmp_path_factory.mktemp("task_reference") / "run"
    done = train(elmo_c_archive, run)
    assert done.returncode == 0, done.stderr[-3000:]
    return run


def recover_and_compare(archive, run, reference, resumes_from):
    resumed = train(archive, run, recover=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert f"atomic checkpointer: resuming from {run / resumes_from}" in log
    assert "rng_state: random generator states restored" in log
    assert temporaries(run) == []
    assert_same_weights(torch.load(reference / FINAL), torch.load(run / FINAL))
    ours, theirs = (json.loads((r / "metrics.json").read_text()) for r in (run, reference))
    for key in ("best_validation_f1-measure-overall", "training_loss", "validation_loss"):
        assert ours[key] == theirs[key], key
    return log


def test_killed_between_checkpoints(elmo_c_archive, reference, tmp_path):
    run = tmp_path / "run"
    crashed = train(elmo_c_archive, run, kill_at=3)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    recover_and_compare(elmo_c_archive, run, reference, "model_state_e0_b2.th")


def test_torn_newest_checkpoint(elmo_c_archive, reference, tmp_path):
    run = tmp_path / "run"
    crashed = train(elmo_c_archive, run, kill_at=3)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    for name in ("model_state_e0_b2.th", "training_state_e0_b2.th"):
        os.truncate(run / name, 100)
    log = recover_and_compare(elmo_c_archive, run, reference, "model_state_e0_b1.th")
    assert "skipping the checkpoint after epoch 0, batch 2" in log


def test_disk_full_and_sigkill_while_saving(elmo_c_archive, reference, tmp_path):
    run = tmp_path / "full"
    crashed = train(elmo_c_archive, run, fault="enospc:training_state_e0_b2")
    assert crashed.returncode == 1 and "No space left on device" in crashed.stderr
    recover_and_compare(elmo_c_archive, run, reference, "model_state_e0_b1.th")
    run = tmp_path / "killed"
    crashed = train(elmo_c_archive, run, fault="sigkill:model_state_e0_b2")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    recover_and_compare(elmo_c_archive, run, reference, "model_state_e0_b1.th")
