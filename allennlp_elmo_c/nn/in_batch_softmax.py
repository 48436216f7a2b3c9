"""
A vocabulary-free softmax for continuous outputs: each prediction against the distinct target
vectors of its own batch, the true word the positive and every other distinct vector a negative.
"""

import math
from typing import Tuple

import torch

from allennlp_elmo_c.nn.continuous_losses import EPSILON

# Cosines lie in [-1, 1], so the logits span 2 / temperature; SimCSE's value (Gao et al., 2021).
DEFAULT_TEMPERATURE = 0.05


def distinct_rows(vectors: torch.Tensor) -> Tuple[torch.LongTensor, torch.LongTensor]:
    """`first` `(K,)`, the first row of each of the K distinct rows of `vectors` `(N, d)`, and
    `inverse` `(N,)`, each row's group: `vectors[first][inverse]` equals `vectors`."""
    _, inverse = torch.unique(vectors, dim=0, return_inverse=True)
    count = int(inverse.max()) + 1 if inverse.numel() else 0
    positions = torch.arange(inverse.numel(), device=inverse.device)
    first = torch.full((count,), inverse.numel(), dtype=torch.long, device=inverse.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    return first, inverse


def in_batch_softmax_loss(
    predictions: torch.Tensor, targets: torch.Tensor, temperature: float = DEFAULT_TEMPERATURE
) -> torch.Tensor:
    """
    `-log p(true word)` at each of N positions, `(N, d) x (N, d) -> (N,)`, the words being the
    distinct target vectors `u_1 ... u_K` of the batch (`y_i` position i's). With
    `x^ = x / max(||x||, EPSILON)`:

        s_ik = p_i^ . u_k^ / temperature                       (N, K) logits
        loss_i = log sum_k exp(s_ik) - s_(i, y_i)              (cross-entropy, labels y)

    A repeat of the true word is never a negative. Runs in the inputs' dtype, autocast off.
    """
    if not 0 < temperature < math.inf:
        raise ValueError(
            f"in_batch_softmax_loss: temperature must be finite and > 0, got {temperature}"
        )
    if predictions.shape != targets.shape or predictions.dim() != 2:
        raise ValueError(
            f"in_batch_softmax_loss: predictions {tuple(predictions.shape)} and targets "
            f"{tuple(targets.shape)} must both be (N, d)"
        )
    if predictions.size(0) == 0:
        return predictions.new_zeros(0)
    with torch.autocast(device_type=predictions.device.type, enabled=False):
        first, labels = distinct_rows(targets.detach())
        words = targets[first]  # (K, d)
        units = predictions / predictions.norm(dim=-1, keepdim=True).clamp(min=EPSILON)
        word_units = words / words.norm(dim=-1, keepdim=True).clamp(min=EPSILON)
        logits = units @ word_units.t() / temperature  # (N, K)
        return torch.nn.functional.cross_entropy(logits, labels, reduction="none")
