"""The `elmo_c` trainer: a checkpointer without a `type` is the atomic one, so a run whose user
replaces the checkpointer object (`-o`, which drops the config's `type`) still recovers past a
torn newest checkpoint; `best.th` and the rest are `gradient_descent`'s."""

import json
import os

import pytest

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.training.atomic_checkpointer import AtomicCheckpointer
from tests import FIXTURES_ROOT

CONFIG = str(FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet")
# The user's override replaces the config's checkpointer object: AllenNLP's merge drops `type`.
OVERRIDE = {"trainer.checkpointer": {"save_every_num_batches": 1, "keep_most_recent_by_count": 3},
            "trainer.num_epochs": 2}  # fmt: skip


def params(trainer_type: str) -> Params:
    return Params.from_file(CONFIG, json.dumps({**OVERRIDE, "trainer.type": trainer_type}))


def tear_newest(run) -> None:
    """What a crash while AllenNLP's checkpointer writes leaves, and the end of the run gone."""
    newest = max((run / name for name in os.listdir(run) if name.startswith("model_state_")),
                 key=lambda path: path.stat().st_mtime_ns)  # fmt: skip
    os.truncate(newest, 100)
    for name in ("model.tar.gz", "metrics.json"):
        (run / name).unlink()


@pytest.mark.parametrize("trainer_type", ["elmo_c", "gradient_descent"])
def test_a_torn_checkpoint_recovers_when_an_override_drops_the_checkpointers_type(
    tmp_path, trainer_type
):
    run = tmp_path / trainer_type
    train_model(params(trainer_type), run)
    tear_newest(run)
    if trainer_type == "gradient_descent":  # AllenNLP's own checkpointer: what the trainer fixes
        with pytest.raises(ConfigurationError, match="Could not recover training"):
            train_model(params(trainer_type), run, recover=True)
        return
    train_model(params(trainer_type), run, recover=True)
    assert json.loads((run / "metrics.json").read_text())["epoch"] == 1
    assert (run / "model.tar.gz").is_file() and (run / "best.th").is_file()
    assert list(run.glob("model_state_*.unusable"))


def test_a_checkpointer_named_with_a_type_is_the_one_named(tmp_path):
    from allennlp.training.trainer import Trainer

    named = Params.from_file(CONFIG, '{"trainer.type": "elmo_c", '
                             '"trainer.checkpointer": {"type": "default"}}')  # fmt: skip
    trainer = Trainer.by_name("elmo_c")  # the constructor AllenNLP calls
    assert trainer.__self__.__name__ == "ElmoCTrainer"
    assert named["trainer"]["checkpointer"]["type"] == "default"
    plain = params("elmo_c")
    assert "type" not in plain["trainer"]["checkpointer"]
    assert AtomicCheckpointer  # the type-less case is the test above
