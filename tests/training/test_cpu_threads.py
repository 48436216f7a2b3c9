"""The `cpu_threads` callback: a CPU run trains on the free CPUs, measured again as it goes; the
user's thread count (config or OMP_NUM_THREADS) wins; a GPU run is left alone."""
import logging
from types import SimpleNamespace

import pytest
import torch

from allennlp.common import Params
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.training import cpu_threads

CPU = SimpleNamespace(cuda_device=torch.device("cpu"))


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    saved = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    yield
    torch.set_num_threads(saved)


class FreeCpus:
    """Stands in for `free_cpus`: the counts to report, in turn."""

    def __init__(self, *counts):
        self.counts = list(counts)
        self.calls = 0

    def __call__(self, load=None, interval=0.25):
        self.calls += 1
        return self.counts.pop(0)


def training_batch(callback):
    callback.on_batch(CPU, [], [], {}, epoch=0, batch_number=1, is_training=True)


def test_a_cpu_run_starts_on_the_free_cpus_and_follows_them(monkeypatch, tmp_path, caplog):
    free = FreeCpus(1, 1, 2)
    monkeypatch.setattr(cpu_threads, "free_cpus", free)
    clock = [100.0]
    monkeypatch.setattr(cpu_threads.time, "monotonic", lambda: clock[0])
    callback = TrainerCallback.from_params(Params({"type": "cpu_threads"}),
                                           serialization_dir=str(tmp_path))  # fmt: skip
    with caplog.at_level(logging.INFO, logger=cpu_threads.__name__):
        callback.on_start(CPU)
        assert torch.get_num_threads() == 1
        clock[0] += 10
        training_batch(callback)  # before CHECK_SECONDS: not measured
        assert free.calls == 1
        clock[0] += 25
        training_batch(callback)
        assert free.calls == 2 and torch.get_num_threads() == 1
        callback.on_batch(CPU, [], [], {}, epoch=0, batch_number=1, is_training=False)
        assert free.calls == 2  # validation batches do not count
        clock[0] += 31
        training_batch(callback)
        assert torch.get_num_threads() == 2
    assert "Training on 1 torch thread(s): the free CPUs" in caplog.text
    assert "Now 2 free CPU(s): training on 2 torch thread(s) (was 1)" in caplog.text


@pytest.mark.parametrize("how", ["config", "environment", "gpu"])
def test_the_users_count_or_a_gpu_run_is_left_as_it_is(monkeypatch, tmp_path, how):
    free = FreeCpus()
    monkeypatch.setattr(cpu_threads, "free_cpus", free)
    torch.set_num_threads(2)
    trainer = CPU
    if how == "environment":
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
    if how == "gpu":
        trainer = SimpleNamespace(cuda_device=torch.device("cuda", 0))
    callback = cpu_threads.CpuThreads(str(tmp_path), threads=1 if how == "config" else None)
    callback.on_start(trainer)
    training_batch(callback)
    assert free.calls == 0
    assert torch.get_num_threads() == (1 if how == "config" else 2)

