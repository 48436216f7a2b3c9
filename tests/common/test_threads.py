"""`allennlp_elmo_c.common.threads`: thread counts never exceed the CPUs the process may use."""
import logging
import os

import pytest
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common import threads


@pytest.fixture
def one_cpu(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})


def test_usable_cpus_are_the_affinity_mask_not_the_machine(one_cpu):
    assert threads.usable_cpus() == 1


def test_a_count_above_the_usable_cpus_is_cut_to_them_with_a_warning(one_cpu, caplog):
    with caplog.at_level(logging.WARNING, logger=threads.__name__):
        assert threads.thread_count(4, "train-fasttext: threads") == 1
    assert "train-fasttext: threads: 4 asked for, but this process may use 1 CPU(s)" in caplog.text
    assert threads.thread_count(None) == 1 and threads.thread_count(1) == 1


def test_fewer_than_one_thread_is_refused_by_name():
    with pytest.raises(ConfigurationError, match="probe-screen: threads must be >= 1, got 0"):
        threads.thread_count(0, "probe-screen: threads")


def test_torch_threads_follow_the_cut_count(one_cpu):
    saved = torch.get_num_threads()
    try:
        assert threads.set_torch_threads(2) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(saved)

