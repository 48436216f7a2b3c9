"""
Slim embedding tables (Li, Kulhanek, Wang, Zhao & Wu, "Slim Embedding Layers for Recurrent Neural
Language Models", AAAI 2018): every word vector is the concatenation of `K` sub-vectors taken
from one shared pool of `M` trainable sub-vectors through a fixed random assignment, so a
vocabulary of `V` words of dimension `d` costs `M * d / K` parameters instead of `V * d`.
"""

import logging
import math
from typing import Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)


def balanced_assignment(
    num_words: int, num_subvectors: int, pool_size: int, seed: int
) -> torch.LongTensor:
    """
    The fixed random assignment of pool sub-vectors to word positions: `ceil(V * K / M)`
    independently shuffled copies of `range(M)`, concatenated, cut to the first `V * K` entries
    and reshaped to `(V, K)`. Every pool vector is therefore used either `floor(V * K / M)` or
    `ceil(V * K / M)` times (independent draws would leave some unused and overload others).
    Only `seed` determines the result (a private generator; the global RNG is untouched).

    # Returns

    `torch.LongTensor` of shape `(num_words, num_subvectors)` with values in `[0, pool_size)`.
    """
    slots = num_words * num_subvectors
    copies = math.ceil(slots / pool_size)
    generator = torch.Generator().manual_seed(seed)
    keys = torch.rand(copies, pool_size, generator=generator, device="cpu")
    # A stable argsort of independent uniform keys is a uniformly random permutation per row.
    shuffled = torch.argsort(keys, dim=1, stable=True)
    return shuffled.reshape(-1)[:slots].reshape(num_words, num_subvectors)


class SlimTable(torch.nn.Module):
    """
    `num_words` virtual word vectors of size `embedding_dim`, each the concatenation of
    `num_subvectors` (K) sub-vectors of size `embedding_dim / K` from a trainable `pool`
    (`(pool_size, embedding_dim / K)`), chosen by the fixed `assignment` (a persistent buffer,
    `(num_words, K)`, int32, so an archive reloads exactly the assignment it was trained with).
    The `(num_words, embedding_dim)` matrix itself is never built. Shared by the
    `slim_embedding` token embedder and the `slim_softmax` output head.

    # Parameters

    num_words : `int`
    embedding_dim : `int`
        Must be divisible by `num_subvectors`.
    num_subvectors : `int`
        K, the number of sub-vectors per word.
    pool_size : `int`
        M, the number of shared sub-vectors; `M ** K >= num_words` is required (else some words
        would necessarily share a vector).
    seed : `int`
        Seeds the assignment.
    owner : `str`
        Names the component in error messages.
    """

    def __init__(
        self,
        num_words: int,
        embedding_dim: int,
        num_subvectors: int,
        pool_size: int,
        seed: int,
        owner: str = "slim",
    ) -> None:
        super().__init__()
        if num_words < 1 or embedding_dim < 1 or num_subvectors < 1 or pool_size < 1:
            raise ConfigurationError(
                f"{owner}: need num_words, embedding_dim, num_subvectors and pool_size >= 1, got "
                f"{num_words}, {embedding_dim}, {num_subvectors}, {pool_size}"
            )
        if embedding_dim % num_subvectors:
            raise ConfigurationError(
                f"{owner}: embedding_dim {embedding_dim} is not divisible by num_subvectors "
                f"{num_subvectors}"
            )
        if pool_size**num_subvectors < num_words:
            raise ConfigurationError(
                f"{owner}: pool_size {pool_size} is too small: {pool_size} ** {num_subvectors} "
                f"sub-vector combinations cannot give {num_words} words distinct vectors"
            )
        if pool_size > num_words * num_subvectors:
            logger.warning(
                "%s: pool_size %d exceeds the %d word slots; %d pool vectors are never used",
                owner,
                pool_size,
                num_words * num_subvectors,
                pool_size - num_words * num_subvectors,
            )
        self.num_words = num_words
        self.embedding_dim = embedding_dim
        self.num_subvectors = num_subvectors
        self.pool_size = pool_size
        subvector_dim = embedding_dim // num_subvectors
        # Word vectors of about unit norm: each coordinate ~ N(0, 1 / embedding_dim).
        self.pool = torch.nn.Parameter(torch.randn(pool_size, subvector_dim) / embedding_dim**0.5)
        assignment = balanced_assignment(num_words, num_subvectors, pool_size, seed)
        self.register_buffer("assignment", assignment.to(torch.int32), persistent=True)
        # Derived from the assignment, built on first use on each device. Not buffers: DDP
        # would broadcast them at every step.
        self._index: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """
        # Parameters

        ids : `torch.LongTensor`
            Word ids of any shape `(...)`, in `[0, num_words)`.

        # Returns

        The word vectors, `(..., embedding_dim)`.
        """
        subvectors = torch.nn.functional.embedding(self.assignment[ids], self.pool)
        return subvectors.reshape(*ids.shape, self.embedding_dim)

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """
        Dot products of `hidden` `(num_positions, embedding_dim)` with every word vector, in two
        steps: the partial products of each of the K chunks of `hidden` with every pool vector
        (`(M * K, num_positions)`, O(num_positions * M * embedding_dim)), then for each word the
        sum of its K partial products (O(num_positions * num_words * K)).

        # Returns

        `(num_words, num_positions)`: transposed, words first (the layout the gather writes).
        """
        num_positions = hidden.size(0)
        k = self.num_subvectors
        # (subvector_dim, K * N): column k * N + n is chunk k of position n.
        chunks = hidden.reshape(num_positions, k, -1).permute(2, 1, 0)
        chunks = chunks.reshape(-1, k * num_positions)
        # Row m * K + k of `partial` holds pool[m] . (chunk k of each position).
        partial = (self.pool @ chunks).view(self.pool_size * k, num_positions)
        return _SumOfPartials.apply(partial, *self._index_on(partial.device))

    def _index_on(self, device: torch.device) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        Word v's score sums rows `rows[v]` of the partial products; the backward pass needs the
        inverse (for each row, the words that use it: `slot_words[row_starts[r]:...]`), built
        once here rather than sorted again at every step.
        """
        if self._index is None or self._index[0].device != device:
            k = self.num_subvectors
            assignment = self.assignment.to(device)
            offsets = torch.arange(k, device=device)
            rows = (assignment.long() * k + offsets).reshape(-1)
            order = torch.argsort(rows, stable=True)
            counts = torch.bincount(rows, minlength=self.pool_size * k)
            index = (rows.view(self.num_words, k), order // k, torch.cumsum(counts, 0) - counts)
            self._index = tuple(tensor.to(torch.int32) for tensor in index)  # type: ignore
        return self._index

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._index = None  # the loaded assignment may differ from the one it was built from


class _SumOfPartials(torch.autograd.Function):
    """`scores[v] = sum_k partial[rows[v, k]]`, with a backward pass that gathers each row's
    gradient from the words that use it (no scatter, no sort)."""

    @staticmethod
    def forward(ctx, partial, rows, slot_words, row_starts):  # type: ignore
        ctx.save_for_backward(slot_words, row_starts)
        return torch.nn.functional.embedding_bag(rows, partial, mode="sum")

    @staticmethod
    def backward(ctx, grad):  # type: ignore
        slot_words, row_starts = ctx.saved_tensors
        grad_partial = torch.nn.functional.embedding_bag(
            slot_words, grad.contiguous(), row_starts, mode="sum"
        )
        return grad_partial, None, None, None
