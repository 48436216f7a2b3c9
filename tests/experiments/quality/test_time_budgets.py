import contextlib
import json

import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from experiments.quality import time_budgets
from experiments.quality.time_budgets import TrainingTimeBudgets
from allennlp_elmo_c.training.tokens_seen import predicted_tokens
from tests.helpers import FIXTURES_ROOT, PROJECT_ROOT, train_config


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def batch_of(lengths):
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return {"tokens": {"tokens": {"token_mask": mask, "subword_ids": mask.long()}}}


def test_tokens_are_the_positions_each_direction_predicts():
    assert predicted_tokens(batch_of([21, 21, 5, 1])) == 20 + 20 + 4 + 0


def test_training_time_leaves_out_what_happens_between_epochs(monkeypatch, tmp_path):
    clock = FakeClock()
    monkeypatch.setattr(time_budgets.time, "perf_counter", clock)
    callback = TrainingTimeBudgets(str(tmp_path), minutes=[100.0], timeline_every=2)
    batch = [batch_of([21, 21])]

    def train(seconds):
        clock.now += seconds
        callback.on_batch(None, batch, [], {}, 0, 1, is_training=True, is_primary=False)

    callback.on_start(None, is_primary=False)
    clock.now += 9.0  # building the data loader
    train(2.0)  # the first batch after the start starts the clock (its time is lost)
    train(3.0)
    clock.now += 50.0  # validation and checkpoints at the epoch's end
    callback.on_epoch(None, {}, 0, is_primary=False)
    clock.now += 7.0
    train(4.0)  # the first batch of an epoch starts the clock again
    train(1.0)
    callback.on_batch(None, batch, [], {}, 0, 1, is_training=False, is_primary=False)
    assert callback.seconds == pytest.approx(4.0)
    assert (callback.batches, callback.tokens) == (4, 4 * 40)
    assert callback.timeline == [[3.0, 80], [4.0, 160]]
    # Resumed from its checkpointed state, it counts on.
    resumed = TrainingTimeBudgets(str(tmp_path), minutes=[100.0])
    resumed.load_state_dict(json.loads(json.dumps(callback.state_dict())))
    assert resumed.state_dict() == callback.state_dict()


def test_a_resume_leaves_out_the_replay_of_the_epochs_already_trained(monkeypatch, tmp_path):
    # `allennlp train --recover` calls on_start, then re-reads every batch of the epochs already
    # trained without training on them or calling on_batch, then trains on.
    clock = FakeClock()
    monkeypatch.setattr(time_budgets.time, "perf_counter", clock)
    callback = TrainingTimeBudgets(str(tmp_path), minutes=[1.0], timeline_every=1)
    callback.load_state_dict({"seconds": 50.0, "batches": 10, "tokens": 400, "saved": [],
                              "timeline": [[50.0, 400]]})  # fmt: skip
    batch = [batch_of([21, 21])]
    callback.on_start(None, is_primary=False)
    clock.now += 377.0  # the replay
    for seconds in (0.5, 0.5, 0.5):
        clock.now += seconds
        callback.on_batch(None, batch, [], {}, 0, 1, is_training=True, is_primary=False)
    assert callback.seconds == pytest.approx(51.0)
    assert callback.saved == []  # the 60-second budget has not passed
    assert callback.timeline[-1] == [51.0, 400 + 3 * 40]


def test_bad_settings():
    with pytest.raises(ConfigurationError, match="minutes"):
        TrainingTimeBudgets("x", minutes=[])
    with pytest.raises(ConfigurationError, match="minutes"):
        TrainingTimeBudgets("x", minutes=[10, 0])
    with pytest.raises(ConfigurationError, match="timeline_every"):
        TrainingTimeBudgets("x", minutes=[10], timeline_every=0)
    with pytest.raises(ConfigurationError, match="clock must be one of"):
        TrainingTimeBudgets("x", minutes=[10], clock="process")


def test_the_cpu_clock_counts_the_process_time_not_the_elapsed_time(monkeypatch, tmp_path):
    wall, cpu = FakeClock(), FakeClock()
    monkeypatch.setattr(time_budgets.time, "perf_counter", wall)
    monkeypatch.setattr(time_budgets.time, "process_time", cpu)
    callback = TrainingTimeBudgets(str(tmp_path), minutes=[100.0], clock="cpu")
    callback.on_start(None, is_primary=False)
    for _ in range(3):
        wall.now += 10.0  # another process has the core most of the time
        cpu.now += 2.0
        callback.on_batch(None, [batch_of([21])], [], {}, 0, 1, is_training=True, is_primary=False)
    assert callback.seconds == pytest.approx(4.0)


def test_a_training_run_writes_each_budget_and_stops_after_the_last(tmp_path):
    budgets = [0.0001, 0.0002]  # minutes: 6 and 12 ms, passed within the first batches
    overrides = {
        "trainer.num_epochs": 50,
        "data_loader.batches_per_epoch": 2,
        "trainer.callbacks": [{"type": "training_time_budgets", "minutes": budgets,
                               "timeline_every": 1}],  # fmt: skip
    }
    with contextlib.chdir(PROJECT_ROOT):
        metrics = train_config(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet", tmp_path / "run",
                               json.dumps(overrides))  # fmt: skip
    assert metrics["epoch"] < 49  # stopped after the epoch in which the last budget passed
    for minutes in budgets:
        record = json.loads((tmp_path / "run" / f"budget-{minutes:g}min.json").read_text())
        assert record["training_seconds"] >= 60 * minutes and record["tokens"] > 0
        model = load_archive(str(tmp_path / "run" / f"budget-{minutes:g}min.tar.gz")).model
        assert model.num_layers() == 3
    timeline = json.loads((tmp_path / "run" / "budget-timeline.json").read_text())["points"]
    assert [p[1] for p in timeline] == sorted(p[1] for p in timeline) and len(timeline) >= 2
