"""
The continuous head's losses are a registry (`ContinuousLoss`): a new loss is one registered
class, which the head's config then names.
"""

import re

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.registrable import Registrable

from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead
from allennlp_elmo_c.modules.output_heads.losses import ContinuousLoss, continuous_loss_names
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead

INPUT, TARGET = 6, 5


@pytest.fixture
def toy_loss():
    """An L1 loss registered by this test alone (and removed after it)."""

    @ContinuousLoss.register("toy_l1")
    class ToyL1Loss(ContinuousLoss):
        def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return (predictions - targets).abs().sum(-1)

    yield ToyL1Loss
    del Registrable._registry[ContinuousLoss]["toy_l1"]


def test_a_registered_loss_trains_a_head_by_name(toy_loss):
    torch.manual_seed(0)
    params = {"type": "continuous", "input_dim": INPUT, "target_dim": TARGET, "loss": "toy_l1"}
    model = OutputHead.from_params(Params(params))
    assert model.loss_name == "toy_l1" and isinstance(model._loss, toy_loss)
    hidden, targets = torch.randn(3, 4, INPUT), torch.randn(3, 4, TARGET)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1, 2:] = False
    result = model(hidden, mask, target_embeddings=targets)
    predictions = model.projection(hidden)
    expected = (predictions[mask] - targets[mask]).abs().sum()
    torch.testing.assert_close(result["loss"], expected)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = model(hidden, mask, target_embeddings=targets)["loss"]
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_a_loss_key_of_another_loss_names_the_loss_it_belongs_to(toy_loss):
    with pytest.raises(ConfigurationError, match="temperature only applies to loss "):
        ContinuousOutputHead(INPUT, TARGET, loss="toy_l1", temperature=0.1)
    # Its default is no setting of another loss.
    ContinuousOutputHead(INPUT, TARGET, loss="toy_l1", temperature=0.05, vmf_lambda_2=1.0)


def test_the_registered_losses_are_the_documented_ones():
    """The plugin's losses are those the head's docstring names, and only they are registered
    outside a test."""
    section = ContinuousOutputHead.__doc__.split("    loss : ")[1].split("    vmf_lambda_1")[0]
    documented = sorted(set(re.findall(r'`"([a-z_0-9]+)"`', section)))
    assert documented == continuous_loss_names() == ["cosine", "in_batch_softmax", "l2", "vmf"]


def test_an_unknown_loss_names_the_registered_ones():
    with pytest.raises(ConfigurationError, match=r"loss must be one of \['cosine', "):
        ContinuousOutputHead(INPUT, TARGET, loss="toy_l1")
