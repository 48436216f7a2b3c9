"""
The paper config's schedule block (`training_config/elmo_c.jsonnet`) under two gloo worker
processes: the learning rate at every update equals the single-process schedule at the same total
batch, and the constructor's log names the world size, the total batch and the steps. The decay
is sized from the run (epochs x updates an epoch, which the trainer hands over from the data
loader's length): on the corpus size the paper's constants were written for (400M windows in 10
epochs) it is the paper's schedule, and on a 100M-token corpus it starts within the run.
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

from allennlp_elmo_c.data.corpus_size import batches
from allennlp_elmo_c.training import rnmt_plus
from tests.helpers import PROJECT_ROOT

PAPER_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c.jsonnet"
WORLD_SIZE = 2
EPOCHS = 10
# The windows of one epoch of the corpus the paper's constants describe: its run was 400M
# examples, 10 epochs of the 1B Word Benchmark.
PAPER_WINDOWS = 40_000_000


def steps_per_epoch(windows: int, workers: int, per_worker: int = 768) -> int:
    """The updates of an epoch of each worker: its share of the windows in batches."""
    return batches(windows // workers, per_worker)


def paper_schedule_block() -> dict:
    """The trainer's optimizer and scheduler blocks of the paper config."""
    environment = {
        "ELMO_C_FASTTEXT": "unused.bin",
        "ELMO_C_TRAIN_DATA": "unused.txt",
        "ELMO_C_VALIDATION_DATA": "unused.txt",
    }
    trainer = Params.from_file(str(PAPER_CONFIG), ext_vars=environment).as_dict()["trainer"]
    return {"optimizer": trainer["optimizer"], "scheduler": trainer["learning_rate_scheduler"]}


def make_scheduler(block: dict, per_epoch: int, lr: float = 1e-4):
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=lr)
    return LearningRateScheduler.from_params(
        optimizer=optimizer, params=Params(dict(block["scheduler"])), num_epochs=EPOCHS,
        num_steps_per_epoch=per_epoch,
    )  # fmt: skip


def learning_rates(block: dict, last: int, per_epoch: int):
    scheduler = make_scheduler(block, per_epoch, block["optimizer"]["lr"])
    optimizer = scheduler.optimizer
    rates = []
    for update in range(1, last + 1):
        scheduler.step_batch(update)
        rates.append(optimizer.param_groups[0]["lr"])
    return scheduler, rates


def last_update(block: dict, per_epoch: int) -> int:
    # Past the end of the decay, where the schedule holds.
    return int(block["scheduler"]["decay_end_fraction"] * EPOCHS * per_epoch) + 1000


def worker(rank: int, store: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD_SIZE)
    try:
        block = paper_schedule_block()
        records = []
        handler = logging.Handler()
        handler.emit = lambda record: records.append(record.getMessage())  # type: ignore
        logging.getLogger(rnmt_plus.__name__).addHandler(handler)
        logging.getLogger(rnmt_plus.__name__).setLevel(logging.INFO)
        per_epoch = steps_per_epoch(PAPER_WINDOWS, WORLD_SIZE)
        scheduler, rates = learning_rates(block, last_update(block, per_epoch), per_epoch)
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
    per_epoch = steps_per_epoch(PAPER_WINDOWS, WORLD_SIZE)
    single = {**block, "scheduler": {**block["scheduler"], "batch_size_per_worker": total}}
    scheduler, expected = learning_rates(single, last_update(block, per_epoch), per_epoch)
    assert scheduler.batch_scale == total / 128
    for rank in range(WORLD_SIZE):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["rates"] == expected  # every update, exactly
        assert result["batch_scale"] == total / 128
        decay = [int(0.4 * EPOCHS * per_epoch), int(2.0 * EPOCHS * per_epoch)]
        assert result["steps"] == [10000] + decay
        (line,) = [message for message in result["log"] if "world size" in message]
        assert f"world size {WORLD_SIZE}, total batch {total}, n = {total / 128}" in line
        assert f"warm-up 10000 updates, decay from update {decay[0]} to {decay[1]}" in line
    # Not the schedule the one-worker batch would give.
    _, one_worker = learning_rates(block, last_update(block, per_epoch), per_epoch)
    assert one_worker != expected


@pytest.mark.parametrize("workers", [1, 4])
def test_the_paper_config_gives_the_papers_schedule_on_its_corpus(monkeypatch, workers):
    """The paper's constants (decay from 0.4 to 2.0 x 400M examples / total batch) come out for
    the corpus they were written for, up to the last, shorter batch of each epoch, which the
    data loader counts as an update (at most 4 and 20 updates later)."""
    monkeypatch.setattr(rnmt_plus, "world_size", lambda: workers)
    scheduler = make_scheduler(paper_schedule_block(), steps_per_epoch(PAPER_WINDOWS, workers))
    total = 768 * workers  # the paper: 768 per GPU, on 4 GPUs
    assert scheduler.batch_scale == total / 128  # 24 on 4 GPUs
    assert scheduler.warmup_steps == 10000
    paper_start, paper_end = int(0.4 * 400_000_000 / total), int(2.0 * 400_000_000 / total)
    assert paper_start <= scheduler.decay_start <= paper_start + 0.4 * EPOCHS  # 52,083 on 4 GPUs
    assert paper_end <= scheduler.decay_end <= paper_end + 2.0 * EPOCHS  # 260,416 on 4 GPUs


def test_on_a_100m_token_corpus_the_paper_config_decays_within_the_run():
    """100M tokens in 4M sentences (with <S> and </S>, 108M tokens: 5.4M windows of 20 new
    tokens an epoch) on one GPU: 10 epochs of 7,032 updates. With the 1B Word's constants the
    decay would start at update 208,333, after the run's end; sized from the run it starts at 40%
    of it."""
    per_epoch = steps_per_epoch((100_000_000 + 2 * 4_000_000) // 20, 1)
    assert per_epoch == 7032
    scheduler = make_scheduler(paper_schedule_block(), per_epoch)
    assert scheduler.decay_start == int(0.4 * EPOCHS * per_epoch) == 28_128
    assert scheduler.warmup_steps == 10000 < scheduler.decay_start < EPOCHS * per_epoch


def test_a_run_resumed_on_another_number_of_workers_follows_its_new_schedule(monkeypatch, caplog):
    """The checkpoint gives the position in the schedule, the run gives the schedule."""
    block = paper_schedule_block()

    def scheduler_on(workers):
        monkeypatch.setattr(rnmt_plus, "world_size", lambda: workers)
        return make_scheduler(block, steps_per_epoch(PAPER_WINDOWS, workers))

    one = scheduler_on(1)
    one.step_batch(60_000)
    four = scheduler_on(4)
    with caplog.at_level(logging.WARNING):
        four.load_state_dict(one.state_dict())
    assert "differs from this run's" in caplog.text
    assert four.last_epoch == 60_000
    assert (four.batch_scale, four.decay_start) == (24.0, int(0.4 * EPOCHS * 13_021))
    fresh = scheduler_on(4)
    fresh.step_batch(60_000)
    assert four.get_values() == fresh.get_values()
