"""
Losses between predicted vectors and target word vectors, all `(..., dim) x (..., dim) -> (...)`,
finite (value and gradient) for zero vectors and large norms. The von Mises-Fisher loss is in
`vmf.py`, the in-batch softmax in `in_batch_softmax.py`; the continuous head's registered losses
(`allennlp_elmo_c/modules/output_heads/losses/`) call them.
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

