import torch

from allennlp_elmo_c.modules.output_heads.losses.continuous_loss import ContinuousLoss
from allennlp_elmo_c.nn.continuous_losses import cosine_loss


@ContinuousLoss.register("cosine")
class CosineLoss(ContinuousLoss):
    """
    `1 - cos(prediction, target)`, in [0, 2] (the paper's default; `cosine_loss`).

    Registered as a `ContinuousLoss` with name "cosine".
    """

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cosine_loss(predictions, targets)
