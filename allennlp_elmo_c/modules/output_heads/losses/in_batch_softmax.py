import math

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.losses.continuous_loss import ContinuousLoss
from allennlp_elmo_c.nn.in_batch_softmax import DEFAULT_TEMPERATURE, in_batch_softmax_loss


@ContinuousLoss.register("in_batch_softmax")
class InBatchSoftmaxLoss(ContinuousLoss):
    """
    `-log` of the true word's probability under a softmax of the cosines between the prediction
    and the batch's distinct target vectors over `temperature` (`in_batch_softmax_loss`): the
    other words of the batch are the negatives, repeats of the true word are not.

    Registered as a `ContinuousLoss` with name "in_batch_softmax".

    # Parameters

    temperature : `float`, optional (default = `0.05`)
        Divides the cosines (finite, > 0; the head's `temperature`; SimCSE's default).
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
