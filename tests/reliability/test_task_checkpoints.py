"""
The fault suite of `test_checkpoints.py` on downstream task models, through `allennlp train` as a
user runs it, with a trained fixture biLM at fixture size:
- `ner_elmo_c`: the CRF tagger of `downstream_configs/ner_elmo_c.jsonnet`: killed between
  checkpoints, its newest checkpoint torn, the disk full and a SIGKILL while saving;
- `converted`: allennlp-models' stock-shaped NER config converted by `convert-config` (which names
  no checkpointer at all, and gets the `atomic` one): killed between checkpoints. (Both runs get the same checkpointer,
  the override's whole object, the `atomic` one: the other faults would go through the same
  checkpointing code again; the converted config's own part is its model, resumed bit for bit.)
Each interrupted run, resumed with `--recover`, ends with the metrics and weights of an
uninterrupted run, bit for bit (the run carries the random generator state).
"""

import json
import os
import shutil
import signal

import pytest

from tests import FIXTURES_ROOT
from tests.helpers import TINY_ELMO_C_DIM, TINY_FASTTEXT
from tests.reliability.test_checkpoints import check_resumed, run_training

CONFIG = FIXTURES_ROOT / "configs" / "ner_elmo_c_tiny.jsonnet"
CONLL = FIXTURES_ROOT / "data" / "conll2003.txt"
GLOVE = FIXTURES_ROOT / "data" / "glove_tiny.50d.txt"
FINAL = "model_state_e2_b0.th"  # after the second (last) epoch


@pytest.fixture(scope="module", params=["ner_elmo_c", "converted"])
def config(request, elmo_c_archive, tmp_path_factory):
    """The task config under test."""
    if request.param == "ner_elmo_c":
        return CONFIG
    from allennlp_elmo_c.commands.convert_config import convert_config_file

    output = tmp_path_factory.mktemp("converted") / "ner.json"
    variables = {"NER_TRAIN_DATA_PATH": str(CONLL), "NER_TEST_DATA_PATH": str(CONLL), "GLOVE_50D": str(GLOVE)}
    convert_config_file(str(FIXTURES_ROOT / "configs" / "stock" / "ner_elmo.jsonnet"), str(elmo_c_archive),
                        str(output), variables)  # fmt: skip
    assert json.loads(output.read_text())["trainer"]["checkpointer"] == {"type": "atomic"}
    return output


def train(config, archive, run, recover=False, fault=None, kill_at=None):
    overrides = {
        "data_loader.batch_size": 1,
        "trainer.num_epochs": 2,
        # The whole object (the converted config has no checkpointer to merge a dotted key into).
        "trainer.checkpointer": {"type": "atomic", "save_every_num_batches": 1},
        # The config's callbacks (rng_state among them) and the test's fault injectors.
        "trainer.callbacks": [{"type": "console_logger", "should_log_inputs": False},
                              {"type": "rng_state"}, {"type": "sigkill_at_batch"},
                              {"type": "write_faults"}],  # fmt: skip
    }
    variables = {
        "ELMO_C_ARCHIVE": str(archive), "ELMO_C_BASELINE": "none",
        "ELMO_C_FASTTEXT": str(TINY_FASTTEXT), "ELMO_C_DIM": str(TINY_ELMO_C_DIM),
        "NER_TRAIN_DATA_PATH": str(CONLL), "NER_TEST_DATA_PATH": str(CONLL),
        "GLOVE_50D": str(GLOVE),
    }  # fmt: skip
    return run_training(config, run, overrides, variables, recover, fault, kill_at)


@pytest.fixture(scope="module")
def reference(config, elmo_c_archive, tmp_path_factory):
    run = tmp_path_factory.mktemp("task_reference") / "run"
    done = train(config, elmo_c_archive, run)
    assert done.returncode == 0, done.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def killed(config, elmo_c_archive, tmp_path_factory):
    """A run SIGKILLed at batch 3 of epoch 0, after the checkpoint at batch 2; read only (a test
    recovers a copy)."""
    run = tmp_path_factory.mktemp("task_killed") / "run"
    crashed = train(config, elmo_c_archive, run, kill_at=3)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    return run


def recover_and_compare(config, archive, run, reference, resumes_from):
    log = check_resumed(train(config, archive, run, recover=True), run, reference, resumes_from, FINAL)
    ours, theirs = (json.loads((r / "metrics.json").read_text()) for r in (run, reference))
    for key in ("best_validation_f1-measure-overall", "training_loss", "validation_loss"):
        assert ours[key] == theirs[key], key
    return log


def test_killed_between_checkpoints(config, elmo_c_archive, reference, killed, tmp_path):
    run = shutil.copytree(killed, tmp_path / "run")
    recover_and_compare(config, elmo_c_archive, run, reference, "model_state_e0_b2.th")


# The checkpointing faults on the first config only (see the module's docstring).
@pytest.mark.parametrize("config", ["ner_elmo_c"], indirect=True)
def test_torn_newest_checkpoint(config, elmo_c_archive, reference, killed, tmp_path):
    run = shutil.copytree(killed, tmp_path / "run")
    for name in ("model_state_e0_b2.th", "training_state_e0_b2.th"):
        os.truncate(run / name, 100)
    log = recover_and_compare(config, elmo_c_archive, run, reference, "model_state_e0_b1.th")
    assert "skipping the checkpoint after epoch 0, batch 2" in log


@pytest.mark.parametrize("config", ["ner_elmo_c"], indirect=True)
def test_disk_full_and_sigkill_while_saving(config, elmo_c_archive, reference, tmp_path):
    run = tmp_path / "full"
    crashed = train(config, elmo_c_archive, run, fault="enospc:training_state_e0_b2")
    assert crashed.returncode == 1 and "No space left on device" in crashed.stderr
    recover_and_compare(config, elmo_c_archive, run, reference, "model_state_e0_b1.th")
    run = tmp_path / "killed"
    crashed = train(config, elmo_c_archive, run, fault="sigkill:model_state_e0_b2")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    recover_and_compare(config, elmo_c_archive, run, reference, "model_state_e0_b1.th")
