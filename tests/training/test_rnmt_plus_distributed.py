"""
The paper config's schedule block (`training_config/elmo_c.jsonnet`, unchanged) under two gloo
worker processes: the learning rate at every update equals the single-process schedule at the
same total batch, and the constructor's log names the world size, the total batch and the steps.
"""
import json
import logging
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from allennlp_elmo_c.training import rnmt_plus
from tests.helpers import PROJECT_ROOT

PAPER_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c.jsonnet"
WORLD_SIZE = 2


def paper_schedule_block() -> dict:
    """The trainer's optimizer and scheduler blocks of the paper config."""
    environment = {
        "ELMO_C_FASTTEXT": "unused.bin",
        "ELMO_C_TRAIN_DATA": "unused.txt",
        "ELMO_C_VALIDATION_DATA": "unused.txt",
    }
    trainer = Params.from_file(str(PAPER_CONFIG), ext_vars=environment).as_dict()["trainer"]
    return {"optimizer": trainer["optimizer"], "scheduler": trainer["learning_rate_scheduler"]}


def learning_rates(block: dict, last: int):
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=block["optimizer"]["lr"])
    scheduler = LearningRateScheduler.from_params(
        optimizer=optimizer, params=Params(dict(block["scheduler"]))
    )
    rates = []
    for update in range(1, last + 1):
        scheduler.step_batch(update)
        rates.append(optimizer.param_groups[0]["lr"])
    return scheduler, rates


def last_update(block: dict, total_batch: int) -> int:
    # Past the end of the decay, where the schedule holds.
    return int(block["scheduler"]["decay_end_examples"] // total_batch) + 1000


def worker(rank: int, store: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD_SIZE)
    try:
        block = paper_schedule_block()
        total = block["scheduler"]["batch_size_per_worker"] * WORLD_SIZE
        records = []
        handler = logging.Handler()
        handler.emit = lambda record: records.append(record.getMessage())  # type: ignore
        logging.getLogger(rnmt_plus.__name__).addHandler(handler)
        logging.getLogger(rnmt_plus.__name__).setLevel(logging.INFO)
        scheduler, rates = learning_rates(block, last_update(block, total))
        result = {
            "rates": rates,
            "log": records,
            "steps": [scheduler.warmup_steps, scheduler.decay_start, scheduler.decay_end],
            "batch_scale": scheduler.batch_scale,
        }
        Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def test_two_workers_follow_the_single_process_schedule_of_the_same_total_batch(tmp_path):
    mp.spawn(worker, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=WORLD_SIZE)
    block = paper_schedule_block()
    per_worker = block["scheduler"]["batch_size_per_worker"]
    total = per_worker * WORLD_SIZE
    single = {**block, "scheduler": {**block["scheduler"], "batch_size_per_worker": total}}
    scheduler, expected = learning_rates(single, last_update(block, total))
    assert scheduler.batch_scale == total / 128
    for rank in range(WORLD_SIZE):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["rates"] == expected  # every update, exactly
        assert result["batch_scale"] == total / 128
        decay = [int(0.4 * 400e6 // total), int(2.0 * 400e6 // total)]
        assert result["steps"] == [10000] + decay
        (line,) = [message for message in result["log"] if "world size" in message]
        assert f"world size {WORLD_SIZE}, total batch {total}, n = {total / 128}" in line
        assert f"warm-up 10000 updates, decay from update {decay[0]} to {decay[1]}" in line
    # Not the schedule the one-worker batch would give (what the config did before).
    _, one_worker = learning_rates(block, last_update(block, total))
    assert one_worker != expected


@pytest.mark.parametrize("workers", [1, 4])
def test_the_paper_config_gives_the_papers_schedule_on_any_number_of_gpus(monkeypatch, workers):
    monkeypatch.setattr(rnmt_plus, "world_size", lambda: workers)
    block = paper_schedule_block()
    parameter = torch.nn.Parameter(torch.zeros(1))
    scheduler = LearningRateScheduler.from_params(
        optimizer=torch.optim.SGD([parameter], lr=1e-4), params=Params(dict(block["scheduler"]))
    )
    total = 768 * workers  # the paper: 768 per GPU, on 4 GPUs
    assert scheduler.batch_scale == total / 128  # 24 on 4 GPUs
    assert scheduler.warmup_steps == 10000
    assert scheduler.decay_start == int(0.4 * 400_000_000 / total)  # 52,083 on 4 GPUs
    assert scheduler.decay_end == int(2.0 * 400_000_000 / total)  # 260,416 on 4 GPUs


def test_a_run_resumed_on_another_number_of_workers_follows_its_new_schedule(monkeypatch, caplog):
    """The checkpoint gives the position in the schedule, the run gives the schedule."""
    block = paper_schedule_block()

    def scheduler_on(workers):
        monkeypatch.setattr(rnmt_plus, "world_size", lambda: workers)
        parameter = torch.nn.Parameter(torch.zeros(1))
        return LearningRateScheduler.from_params(
            optimizer=torch.optim.SGD([parameter], lr=1e-4), params=Params(dict(block["scheduler"]))
        )

    one = scheduler_on(1)
    one.step_batch(60_000)
    four = scheduler_on(4)
    with caplog.at_level(logging.WARNING):
        four.load_state_dict(one.state_dict())
    assert "differs from this run's" in caplog.text
    assert four.last_epoch == 60_000
    assert (four.batch_scale, four.decay_start) == (24.0, 52_083)
    fresh = scheduler_on(4)
    fresh.step_batch(60_000)
    assert four.get_values() == fresh.get_values()
