import torch

from allennlp_elmo_c.modules.output_heads.losses.continuous_loss import ContinuousLoss
from allennlp_elmo_c.nn.continuous_losses import l2_loss


@ContinuousLoss.register("l2")
class L2Loss(ContinuousLoss):
    """
    Squared Euclidean distance `||prediction - target||^2` (`l2_loss`).

    Registered as a `ContinuousLoss` with name "l2".
    """

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return l2_loss(predictions, targets)
