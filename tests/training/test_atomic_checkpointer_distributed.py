"""
The `atomic` checkpointer under two gloo processes laid out as `allennlp train` lays out two
machines of one process each (`ALLENNLP_PROCS_PER_NODE=1`, a directory per machine): each
machine keeps its newest checkpoints, a time-based save happens after the same batch on both,
and `--recover` refuses machines whose newest checkpoints differ.

The processes are started once (`outcomes`, a module fixture); each test reads its scenario's
outcome on both ranks.
"""

import json
import os
import traceback
from pathlib import Path
from typing import Dict

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from allennlp_elmo_c.training import atomic_checkpointer
from allennlp_elmo_c.training.atomic_checkpointer import AtomicCheckpointer
from tests.training.test_atomic_checkpointer import _Trainer, save

WORLD_SIZE = 2


class _Clock:
    """`time.time` for the checkpointer's module: `now` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now


def keeps_its_newest(directory: Path, rank: int) -> Dict:
    save(directory, (0, 2), (0, 4), (1, 0), keep_most_recent_by_count=2)
    return {"files": sorted(os.listdir(directory))}


def saves_on_rank_0s_clock(directory: Path, rank: int) -> Dict:
    checkpointer = AtomicCheckpointer(directory, save_every_num_seconds=100)
    clock = _Clock()
    original, atomic_checkpointer.time = atomic_checkpointer.time, clock  # type: ignore
    try:
        checkpointer._last_save_time = 0.0
        saved = []
        for batch in range(1, 6):
            # Rank 0: 40 s a batch, so due after batch 3; rank 1's clock is always past due.
            clock.now = 40.0 * batch if rank == 0 else 1e9
            if checkpointer.maybe_save_checkpoint(_Trainer(0, batch), 0, batch):
                saved.append(batch)
                checkpointer._last_save_time = clock.now  # AllenNLP's save set the real time
    finally:
        atomic_checkpointer.time = original  # type: ignore
    return {"saved": saved, "files": sorted(os.listdir(directory))}


def recovers_together(directory: Path, rank: int) -> Dict:
    save(directory, (0, 2), (0, 4))
    state = AtomicCheckpointer(directory).load_checkpoint()
    return {"point": state.trainer_state["batches_in_epoch_completed"]}


def refuses_different_points(directory: Path, rank: int) -> Dict:
    # Rank 1 was killed before it wrote its checkpoint after batch 4.
    save(directory, *([(0, 2), (0, 4)] if rank == 0 else [(0, 2)]))
    AtomicCheckpointer(directory).load_checkpoint()
    return {}


def refuses_when_one_rank_cannot_load(directory: Path, rank: int) -> Dict:
    save(directory, (0, 2))
    if rank == 1:
        (directory / "model_state_e0_b2.th").write_bytes(b"not a checkpoint")
    AtomicCheckpointer(directory).load_checkpoint()
    return {}


SCENARIOS = {
    function.__name__: function
    for function in (
        keeps_its_newest,
        saves_on_rank_0s_clock,
        recovers_together,
        refuses_different_points,
        refuses_when_one_rank_cannot_load,
    )
}


def worker(rank: int, store: str, out: str) -> None:
    os.environ["ALLENNLP_PROCS_PER_NODE"] = "1"  # as `allennlp train` on 2 machines x 1 process
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD_SIZE)
    try:
        outcomes = {}
        for name, scenario in SCENARIOS.items():
            directory = Path(out, name, f"node{rank}")
            directory.mkdir(parents=True)
            try:
                outcomes[name] = {"result": scenario(directory, rank)}
            except Exception as error:  # noqa: BLE001  (the tests look at it)
                outcomes[name] = {"error": f"{type(error).__name__}: {error}"}
                outcomes[name]["traceback"] = traceback.format_exc()
        Path(out, f"rank{rank}.json").write_text(json.dumps(outcomes))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    out = tmp_path_factory.mktemp("atomic_distributed")
    mp.spawn(worker, args=(str(out / "store"), str(out)), nprocs=WORLD_SIZE)
    by_rank = [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(WORLD_SIZE)]
    return {name: [by_rank[rank][name] for rank in range(WORLD_SIZE)] for name in SCENARIOS}


def results(outcomes, name):
    for rank, outcome in enumerate(outcomes[name]):
        assert "error" not in outcome, f"rank {rank}: {outcome.get('traceback')}"
    return [outcome["result"] for outcome in outcomes[name]]


def test_every_machine_keeps_its_newest_checkpoints(outcomes):
    expected = [
        f"{kind}_state_{point}.th" for kind in ("model", "training") for point in ("e0_b4", "e1_b0")
    ]
    for result in results(outcomes, "keeps_its_newest"):
        assert result["files"] == expected


def test_a_time_based_save_happens_after_the_same_batch_on_every_machine(outcomes):
    for result in results(outcomes, "saves_on_rank_0s_clock"):
        assert result["saved"] == [3]
        assert result["files"] == ["model_state_e0_b3.th", "training_state_e0_b3.th"]


def test_machines_with_the_same_newest_checkpoint_recover(outcomes):
    assert [result["point"] for result in results(outcomes, "recovers_together")] == [4, 4]


def test_recover_refuses_machines_whose_newest_checkpoints_differ(outcomes):
    for outcome in outcomes["refuses_different_points"]:
        message = outcome.get("error", "")
        assert message.startswith("ConfigurationError"), outcome
        assert "resume from different points in training" in message
        assert "rank 0: the checkpoint after epoch 0, batch 4 in" in message
        assert "rank 1: the checkpoint after epoch 0, batch 2 in" in message
        assert "then rerun every machine with --recover" in message


def test_recover_fails_on_every_machine_when_one_has_no_checkpoint_that_loads(outcomes):
    first, second = (
        outcome.get("error", "") for outcome in outcomes["refuses_when_one_rank_cannot_load"]
    )
    assert "rank(s) [1] found no checkpoint that loads" in first
    assert "no checkpoint in" in second and "model_state_e0_b2.th: does not load" in second
