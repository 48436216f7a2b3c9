"""
Slim embedding tables (Li et al., AAAI 2018): a word vector of size `d` is `K` sub-vectors of size
`d / K`, the `k`-th from its own sub-pool `S_k` of `M / K` trainable sub-vectors through a fixed
random assignment `a(w, k)`: `M * d / K` parameters instead of `V * d`.
"""

import logging
from typing import Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)


def balanced_assignment(
    num_words: int, num_subvectors: int, pool_size: int, seed: int
) -> torch.LongTensor:
    """
    The paper's fixed random assignment `(num_words, num_subvectors)`, entry `(w, k)` = `a(w, k)`:
    for each `k`, copies of `range(M / K)` (the last a random part of it) shuffled by `seed`'s
    own generator, so every sub-vector is used `floor(V K / M)` or `ceil(V K / M)` times.
    """
    if pool_size % num_subvectors:
        raise ValueError(f"pool_size {pool_size} is not a multiple of {num_subvectors}")
    subpool_size = pool_size // num_subvectors
    copies, remainder = divmod(num_words, subpool_size)
    generator = torch.Generator().manual_seed(seed)
    # A stable argsort of independent uniform keys is a uniformly random permutation per row.
    keys = torch.rand(num_subvectors, subpool_size, generator=generator, device="cpu")
    partial_copy = torch.argsort(keys, dim=1, stable=True)[:, :remainder]
    full_copies = torch.arange(subpool_size).repeat(copies).expand(num_subvectors, -1)
    sequence = torch.cat([full_copies, partial_copy], dim=1)  # (K, V), not yet shuffled
    keys = torch.rand(num_subvectors, num_words, generator=generator, device="cpu")
    shuffle = torch.argsort(keys, dim=1, stable=True)
    return sequence.gather(1, shuffle).t().contiguous()


class SlimTable(torch.nn.Module):
    """
    `num_words` (V) word vectors of size `embedding_dim` (d), word `w`'s being
    `[S_1[a(w, 1)]; ...; S_K[a(w, K)]]`, without building the `(V, d)` matrix. `pool`
    `(K, M / K, d / K)` holds the `num_subvectors` (K) sub-pools of `pool_size` (M) sub-vectors
    in all; the assignment of `seed` is a persistent int32 buffer `(V, K)`. `owner` names the
    component in error messages.
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
        if pool_size % num_subvectors:
            raise ConfigurationError(
                f"{owner}: pool_size {pool_size} is not divisible by num_subvectors "
                f"{num_subvectors} (pool_size counts the sub-vectors of all {num_subvectors} "
                "sub-pools, pool_size / num_subvectors each)"
            )
        subpool_size = pool_size // num_subvectors
        if subpool_size**num_subvectors < num_words:
            raise ConfigurationError(
                f"{owner}: pool_size {pool_size} is too small: sub-pools of {subpool_size} give "
                f"{subpool_size} ** {num_subvectors} sub-vector combinations, too few for "
                f"{num_words} words to have distinct vectors"
            )
        if subpool_size > num_words:
            logger.warning("%s: each sub-pool has %d sub-vectors for %d words; %d per sub-pool "
                           "are never used", owner, subpool_size, num_words,
                           subpool_size - num_words)  # fmt: skip
        self.num_words = num_words
        self.embedding_dim = embedding_dim
        self.num_subvectors = num_subvectors
        self.pool_size = pool_size
        self.subpool_size = subpool_size
        subvector_dim = embedding_dim // num_subvectors
        # Word vectors of about unit norm: each coordinate ~ N(0, 1 / embedding_dim).
        self.pool = torch.nn.Parameter(
            torch.randn(num_subvectors, subpool_size, subvector_dim) / embedding_dim**0.5
        )
        assignment = balanced_assignment(num_words, num_subvectors, pool_size, seed)
        self.register_buffer("assignment", assignment.to(torch.int32), persistent=True)
        # `score_index`, per device (not buffers: DDP would broadcast them every step).
        self._index: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None

    def rows(self, ids: torch.Tensor) -> torch.LongTensor:
        """The rows of the flat pool `pool.view(M, d / K)` that make up the vectors of `ids`:
        `(..., K)`."""
        return self._global_rows(self.assignment[ids])

    def _global_rows(self, assignment: torch.Tensor) -> torch.LongTensor:
        offsets = torch.arange(
            0, self.pool_size, self.subpool_size, device=assignment.device, dtype=torch.long
        )
        return assignment.long() + offsets

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The word vectors `(..., embedding_dim)` of `ids` `(...)`."""
        flat_pool = self.pool.view(self.pool_size, -1)
        subvectors = torch.nn.functional.embedding(self.rows(ids), flat_pool)
        return subvectors.reshape(*ids.shape, self.embedding_dim)

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """Dot products of `hidden` `(num_positions, embedding_dim)` with every word vector
        (`slim_scores`): `(num_words, num_positions)`."""
        return slim_scores(self.pool, hidden, *self.score_index(hidden.device))

    def score_index(
        self, device: torch.device
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`slim_scores`'s int32 index on `device`: `rows` `(V, K)`, the flat pool's rows each
        word sums; for the backward, the words that use each row (`slot_words`, `row_starts`)."""
        if self._index is None or self._index[0].device != device:
            k = self.num_subvectors
            rows = self._global_rows(self.assignment.to(device)).reshape(-1)
            order = torch.argsort(rows, stable=True)
            counts = torch.bincount(rows, minlength=self.pool_size)
            index = (rows.view(self.num_words, k), order // k, torch.cumsum(counts, 0) - counts)
            self._index = tuple(tensor.to(torch.int32) for tensor in index)  # type: ignore
        return self._index

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        self._index = None  # the loaded assignment may differ from the one it was built from


def slim_scores(
    pool: torch.Tensor,
    hidden: torch.Tensor,
    rows: torch.Tensor,
    slot_words: torch.Tensor,
    row_starts: torch.Tensor,
) -> torch.Tensor:
    """
    The paper's two-step output layer `(V, N)`: word `w`'s score for `h = [h_1; ...; h_K]` `(N,
    d)` is `sum_k <h_k, S_k[a(w, k)]>`: each chunk against its own sub-pool `(K, M / K, d / K)`
    (O(M d / K) a position), then each word's K partial products summed (O(V K)).
    """
    num_subvectors, subpool_size, subvector_dim = pool.shape
    num_positions = hidden.size(0)
    # (K, d / K, N): chunk k of every position.
    chunks = hidden.reshape(num_positions, num_subvectors, subvector_dim).permute(1, 2, 0)
    # Row k * M / K + j of `partial` holds S_k[j] . (chunk k of each position).
    partial = torch.bmm(pool, chunks).view(num_subvectors * subpool_size, num_positions)
    return _SumOfPartials.apply(partial, rows, slot_words, row_starts)


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
