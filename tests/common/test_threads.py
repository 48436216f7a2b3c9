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



def stat_text(busy: dict) -> str:
    """A `/proc/stat` whose CPU n spent `busy[n]` ticks busy (split over user, system, irq,
    steal) and 1000 idle, 7 iowait."""
    lines = ["cpu  1 2 3 4 5 6 7 8 0 0"]
    for cpu, ticks in busy.items():
        user, system, irq, steal = ticks - ticks // 2 - 3, ticks // 2, 1, 2
        lines.append(f"cpu{cpu} {user} 0 {system} 1000 7 {irq} 0 {steal} 0 0")
    return "\n".join(lines + ["intr 1 2 3", "ctxt 99"])


class Clocks:
    """Stands in for /proc/stat, this process's CPU seconds and the wall clock."""

    def __init__(self, cpus):
        self.busy = {cpu: 0 for cpu in cpus}
        self.own = 0.0
        self.wall = 0.0

    def load(self, cpus=None):
        return threads.CpuLoad(read_stat=lambda: stat_text(self.busy), own_seconds=lambda: self.own,
                               clock=lambda: self.wall, cpus=cpus)  # fmt: skip

    def run(self, seconds, others, own):
        """`seconds` pass; other processes keep `others` CPUs busy and this one `own`."""
        tick = os.sysconf("SC_CLK_TCK")
        per_cpu = (others + own) * seconds * tick / len(self.busy)
        for cpu in self.busy:
            self.busy[cpu] += round(per_cpu)
        self.own += own * seconds
        self.wall += seconds


def test_the_load_of_others_is_the_cpus_busy_ticks_less_this_process_own_time(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    clocks = Clocks([0, 1])
    load = clocks.load([0, 1])
    clocks.run(10.0, others=1.0, own=0.8)
    assert load.busy_elsewhere() == pytest.approx(1.0, abs=0.01)
    assert load.busy_elsewhere() is None  # no time has passed since: too short to tell
    clocks.run(5.0, others=0.0, own=2.0)  # only this process: nothing busy elsewhere
    assert load.busy_elsewhere() == pytest.approx(0.0, abs=0.01)
    clocks.run(5.0, others=0.4, own=1.6)
    assert threads.free_cpus(load) == 2  # under half a CPU taken: both free
    clocks.run(5.0, others=0.6, own=1.4)
    assert threads.free_cpus(load) == 1
    clocks.run(5.0, others=2.0, own=0.0)
    assert threads.free_cpus(load) == 1  # never fewer than one


def test_only_the_cpus_this_process_may_use_are_watched(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})
    clocks = Clocks([0, 1])
    load = clocks.load()
    assert load.cpus == [1]
    clocks.busy[0] += 10 * os.sysconf("SC_CLK_TCK")  # a busy CPU 0 is not ours
    clocks.wall += 10
    assert load.busy_elsewhere() == pytest.approx(0.0)
    assert threads.free_cpus(load) == 1


def test_where_the_load_cannot_be_read_every_usable_cpu_counts_as_free(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})

    def missing():
        raise FileNotFoundError("/proc/stat")

    load = threads.CpuLoad(read_stat=missing)
    assert load.busy_elsewhere() is None
    assert threads.free_cpus(load) == 2
    other_cpus = threads.CpuLoad(read_stat=lambda: stat_text({5: 0}), cpus=[0, 1])
    assert other_cpus.busy_elsewhere() is None  # no line for CPUs 0 and 1


def test_a_busy_process_on_a_usable_cpu_is_measured_as_busy_elsewhere():
    """Against the real kernel counters: a pinned busy loop takes most of one CPU."""
    import subprocess
    import sys

    cpus = sorted(os.sched_getaffinity(0))
    loop = "import os; os.sched_setaffinity(0, {%d})\nwhile True: pass" % cpus[-1]
    busy = subprocess.Popen([sys.executable, "-c", loop])
    try:
        import time

        time.sleep(0.5)  # started and pinned
        load = threads.CpuLoad()
        time.sleep(1.0)
        assert load.busy_elsewhere() >= 0.5
    finally:
        busy.kill()
        busy.wait()
