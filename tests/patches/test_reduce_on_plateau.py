"""`patches.reduce_on_plateau`: the scheduler works on torch 2.7+; AllenNLP's own constructor
does not."""

import pytest
import torch

from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from allennlp_elmo_c.patches import reduce_on_plateau


def optimizer():
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=1.0)


def test_reduce_on_plateau_from_config_works_and_reduces():
    params = Params({"type": "reduce_on_plateau", "factor": 0.5, "patience": 0, "verbose": True})
    scheduler = LearningRateScheduler.from_params(optimizer=optimizer(), params=params)
    scheduler.step(1.0)
    scheduler.step(2.0)  # worse (mode "min"), patience 0: halve
    assert scheduler.get_values() == [0.5]
    restored = LearningRateScheduler.from_params(
        optimizer=optimizer(), params=Params({"type": "reduce_on_plateau"})
    )
    restored.load_state_dict(scheduler.state_dict())
    assert restored.lr_scheduler.best == 1.0
    # The unpatched AllenNLP constructor passes `verbose`, which torch no longer accepts.
    original = reduce_on_plateau.ORIGINAL
    with pytest.raises(TypeError, match="verbose"):
        original(scheduler, optimizer())


def test_reduce_on_plateau_passes_every_option_to_torch():
    options = {"mode": "max", "factor": 0.25, "patience": 3, "threshold_mode": "abs",
               "threshold": 0.01, "cooldown": 2, "min_lr": 0.001, "eps": 1e-6}  # fmt: skip
    scheduler = LearningRateScheduler.from_params(
        optimizer=optimizer(), params=Params({"type": "reduce_on_plateau", **options})
    )
    torch_scheduler = scheduler.lr_scheduler
    assert {name: getattr(torch_scheduler, name) for name in options if name != "min_lr"} == {
        name: value for name, value in options.items() if name != "min_lr"
    }
    assert torch_scheduler.min_lrs == [0.001]
