"""
Losses between predicted and target word vectors, `(..., dim) x (..., dim) -> (...)`, finite for
zero vectors and large norms (the vMF and in-batch softmax losses have modules of their own).
"""

import torch

EPSILON = 1e-8


def cosine_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """`1 - cos(prediction, target)`, in [0, 2]; a zero vector counts as orthogonal."""
    dot = (predictions * targets).sum(-1)
    norms = predictions.norm(dim=-1).clamp(min=EPSILON) * targets.norm(dim=-1).clamp(min=EPSILON)
    return 1.0 - dot / norms


def l2_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distance `||prediction - target||^2`."""
    return (predictions - targets).pow(2).sum(-1)

