import torch

from experiments.common import machine


def test_the_line_is_written_from_the_description(monkeypatch):
    description = machine.machine_description(torch.device("cpu"), threads=3)
    assert description["device"] == "CPU, 3 threads" and description["torch_threads"] == "3"
    assert "gpu" not in description
    description.update(cpu="Some CPU", cpu_cores="8", usable_cpus="8", torch="2.0", python="3.11")
    assert machine.machine_line(description) == "Some CPU, 8 cores, no GPU, torch 2.0, Python 3.11"
    description.update(usable_cpus="2", gpu="Some GPU")
    assert machine.machine_line(description) == (
        "Some CPU, 8 cores (2 usable), Some GPU, torch 2.0, Python 3.11")
    monkeypatch.setattr(machine, "machine_description", lambda: description)
    assert machine.machine() == machine.machine_line(description)
