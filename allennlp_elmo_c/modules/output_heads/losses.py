"""
The losses of the `continuous` head between its predictions and the target vectors at the
batch's real positions, `(N, d) x (N, d) -> (N,)`, finite (value and gradient) for zero vectors
and large norms. Each calls its function in `allennlp_elmo_c/nn/`; `head_keys` maps the head's
keys to a loss's constructor arguments.
"""

import inspect
import math
from typing import Any, Dict, List, Optional

import torch

from allennlp.common import Registrable
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.nn.continuous_losses import cosine_loss, l2_loss
from allennlp_elmo_c.nn.in_batch_softmax import DEFAULT_TEMPERATURE, in_batch_softmax_loss
from allennlp_elmo_c.nn.vmf import vmf_loss


class ContinuousLoss(Registrable):
    default_implementation = "cosine"
    head_keys: Dict[str, str] = {}

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


@ContinuousLoss.register("cosine")
class CosineLoss(ContinuousLoss):
    """`1 - cos(prediction, target)`, in [0, 2] (the paper's default)."""

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cosine_loss(predictions, targets)


@ContinuousLoss.register("l2")
class L2Loss(ContinuousLoss):
    """`||prediction - target||^2`."""

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return l2_loss(predictions, targets)


@ContinuousLoss.register("vmf")
class VmfLoss(ContinuousLoss):
    """
    The von Mises-Fisher negative log-likelihood of Kumar & Tsvetkov (2019): `lambda_1 >= 0`
    adds `lambda_1 * ||prediction||`, `lambda_2` in `(0, 1]` scales the `prediction . target`
    term (the head's `vmf_lambda_1`, `vmf_lambda_2`).
    """

    head_keys = {"vmf_lambda_1": "lambda_1", "vmf_lambda_2": "lambda_2"}

    def __init__(self, lambda_1: float = 0.0, lambda_2: float = 1.0) -> None:
        if lambda_1 < 0 or not 0 < lambda_2 <= 1:
            raise ConfigurationError(
                "continuous head: need vmf_lambda_1 >= 0 and 0 < vmf_lambda_2 <= 1, got "
                f"{lambda_1} and {lambda_2}; set them in that range (defaults 0.0 and 1.0)"
            )
        self.lambda_1 = lambda_1
        self.lambda_2 = lambda_2

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return vmf_loss(predictions, targets, lambda_1=self.lambda_1, lambda_2=self.lambda_2)


@ContinuousLoss.register("in_batch_softmax")
class InBatchSoftmaxLoss(ContinuousLoss):
    """
    `-log` of the true word's probability under a softmax of the cosines between the prediction
    and the batch's distinct target vectors over `temperature` (finite, > 0; the head's
    `temperature`): the batch's other words are the negatives.
    """

    head_keys = {"temperature": "temperature"}

    def __init__(self, temperature: float = DEFAULT_TEMPERATURE) -> None:
        if not 0 < temperature < math.inf:
            raise ConfigurationError(
                f"continuous head: temperature must be finite and > 0, got {temperature}; "
                f"set output_head.temperature to a positive number (default {DEFAULT_TEMPERATURE})"
            )
        self.temperature = temperature

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return in_batch_softmax_loss(predictions, targets, self.temperature)


def continuous_loss_names() -> List[str]:
    return sorted(ContinuousLoss.list_available())


def build_continuous_loss(name: str, head_values: Dict[str, Optional[Any]]) -> ContinuousLoss:
    """
    The loss registered as `name`, built with the head's loss keys (`head_values`, None where
    the config leaves one out). A key of another loss is refused unless it holds its default.
    """
    names = continuous_loss_names()
    if name not in names:
        raise ConfigurationError(f"continuous head: loss must be one of {names}, got {name!r}")
    chosen = ContinuousLoss.by_name(name)
    kwargs = {}
    for key, value in head_values.items():
        if value is None:
            continue
        if key in chosen.head_keys:
            kwargs[chosen.head_keys[key]] = value
            continue
        owner = next(n for n in names if key in ContinuousLoss.by_name(n).head_keys)
        owner_class = ContinuousLoss.by_name(owner)
        argument = inspect.signature(owner_class).parameters[owner_class.head_keys[key]]
        if value != argument.default:
            raise ConfigurationError(
                f"continuous head: {key} only applies to loss {owner!r}; "
                f"remove it or set loss: {owner!r}"
            )
    return chosen(**kwargs)
