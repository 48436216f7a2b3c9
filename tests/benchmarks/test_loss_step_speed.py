"""`benchmarks/loss_step_speed.py` at the smoke size (plumbing only, no timing assertions): each
loss gets a row, built with that loss, and the first is the baseline."""
import subprocess
import sys

import torch

from tests import PROJECT_ROOT
from tests.helpers import load_benchmark

SCRIPT = PROJECT_ROOT / "benchmarks" / "loss_step_speed.py"


def run(*arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--size", "smoke", "--rows", "1000", "--threads", "1",
               "--batch-size", "3", "--steps", "1", "--warmup", "0", *arguments]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT)


def test_every_loss_gets_a_row_against_the_first():
    result = run()
    assert result.returncode == 0, result.stderr
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [cells[0].strip() for cells in rows[1:]] == ["cosine", "vmf", "in_batch_softmax"]
    assert rows[1][3].strip().startswith("1.00x")
    for cells in rows[1:]:
        assert float(cells[1]) > 0 and float(cells[2].replace(",", "")) > 0


def test_the_model_is_built_with_each_loss_and_the_table_given():
    elmo_c_model = load_benchmark("run_models").elmo_c_model
    table = torch.randn(1000, 16)
    for loss in ("cosine", "vmf", "in_batch_softmax"):
        model = elmo_c_model("smoke", 1000, loss, table)
        assert model._text_field_embedder.token_embedder_tokens._fasttext.table is table
        heads = model._heads
        assert [heads[f"{d}_lm"].loss_name for d in ("forward", "backward")] == [loss, loss]


def test_an_unknown_loss_is_refused_by_name():
    result = run("--losses", "softmax")
    assert result.returncode != 0 and "invalid choice: 'softmax'" in result.stderr


def test_the_shared_models_module_loads_once_beside_the_scripts_that_import_it():
    # `run_models` registers an AllenNLP token embedder; a second copy of the module (one from
    # the tests, one from a script's own `from run_models import`) would register it twice.
    models = load_benchmark("run_models")
    runner = load_benchmark("run")
    assert load_benchmark("run_models") is models and load_benchmark("run") is runner
    assert sys.modules["run_models"] is models
