"""
Losses between predicted vectors and target word vectors, all `(..., dim) x (..., dim) -> (...)`,
finite (value and gradient) for zero vectors and large norms.
"""

from typing import Callable, Dict

import torch

from allennlp_elmo_c.nn.vmf import vmf_loss

EPSILON = 1e-8


def cosine_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """`1 - cos(prediction, target)`, in [0, 2]; a zero vector counts as orthogonal."""
    dot = (predictions * targets).sum(-1)
    norms = predictions.norm(dim=-1).clamp(min=EPSILON) * targets.norm(dim=-1).clamp(min=EPSILON)
    return 1.0 - dot / norms


def l2_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distance `||prediction - target||^2`."""
    return (predictions - targets).pow(2).sum(-1)


LOSSES: Dict[str, Callable[..., torch.Tensor]] = {
    "cosine": cosine_loss,
    "l2": l2_loss,
    "vmf": vmf_loss,
}
