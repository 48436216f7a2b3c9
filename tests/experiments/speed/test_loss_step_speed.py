"""`experiments/speed/loss_step_speed.py` at the smoke size (plumbing only, no timing
assertions): each loss gets a row, built with that loss, and the first is the baseline."""
import pytest
import torch

from experiments.speed import loss_step_speed
from experiments.speed.run_models import elmo_c_model

SMOKE = ["--size", "smoke", "--rows", "1000", "--threads", "1", "--batch-size", "3", "--steps", "1",
         "--warmup", "0"]  # fmt: skip


def test_every_loss_gets_a_row_against_the_first(capsys):
    loss_step_speed.main(SMOKE)
    output = capsys.readouterr().out
    rows = [line.split("|")[1:-1] for line in output.splitlines() if line.startswith("| ")]
    assert [cells[0].strip() for cells in rows[1:]] == ["cosine", "vmf", "in_batch_softmax"]
    assert rows[1][3].strip().startswith("1.00x")
    for cells in rows[1:]:
        assert float(cells[1]) > 0 and float(cells[2].replace(",", "")) > 0


def test_the_model_is_built_with_each_loss_and_the_table_given():
    table = torch.randn(1000, 16)
    for loss in ("cosine", "vmf", "in_batch_softmax"):
        model = elmo_c_model("smoke", 1000, loss, table)
        assert model._text_field_embedder.token_embedder_tokens._fasttext.table is table
        heads = model._heads
        assert [heads[f"{d}_lm"].loss_name for d in ("forward", "backward")] == [loss, loss]


def test_an_unknown_loss_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        loss_step_speed.main(SMOKE + ["--losses", "softmax"])
    assert "invalid choice: 'softmax'" in capsys.readouterr().err
