"""
Slim embedding tables (Li, Kulhanek, Wang, Zhao & Wu, "Slim Embedding Layers for Recurrent Neural
Language Models", AAAI 2018): every word vector of size `d` is the concatenation of `K`
sub-vectors of size `d / K`. Sub-vector position `k` takes its sub-vector from its own sub-pool
`S_k` of `M / K` trainable sub-vectors, through a fixed random assignment `a(w, k)`. `M` counts
the sub-vectors of all K sub-pools together, so a vocabulary of `V` words costs `M * d / K`
parameters instead of `V * d`, and the output layer's first step (every hidden chunk `h_k`
against its own sub-pool `S_k`) costs `O(M * d / K)` per position.
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
    The fixed random assignment of sub-vectors to words, as in the paper: for each position `k`,
    the `V * K / M` copies of `range(M / K)` (the ids of sub-pool `S_k`) are concatenated and
    shuffled once, and word `w` takes entry `w` of the shuffled sequence as `a(w, k)`. Every
    sub-vector is therefore used `floor(V * K / M)` or `ceil(V * K / M)` times, and neighbouring
    words (which are of similar frequency in a frequency-sorted vocabulary) share sub-vectors as
    often as any other two. When `M / K` does not divide `V`, the last copy contributes a random
    subset of `range(M / K)` of the missing size (so that no id gets more than one use over the
    others). Only `seed` determines the result (a private generator; the global RNG is
    untouched).

    # Parameters

    num_words : `int`
        V.
    num_subvectors : `int`
        K.
    pool_size : `int`
        M, the sub-vectors of all K sub-pools together; a multiple of K.
    seed : `int`

    # Returns

    `torch.LongTensor` of shape `(num_words, num_subvectors)`: entry `(w, k)` is `a(w, k)`, an
    index into sub-pool `k`, in `[0, pool_size / num_subvectors)`.
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
    `num_words` (V) virtual word vectors of size `embedding_dim` (d): the vector of word `w` is
    `[S_1[a(w, 1)]; ...; S_K[a(w, K)]]`, the concatenation of one sub-vector of size `d / K`
    from each of the K disjoint sub-pools `S_k` (`M / K` trainable sub-vectors each). The
    assignment `a` is fixed and random (`balanced_assignment`), and stored as a persistent buffer
    (`(V, K)`, int32, indices into each position's own sub-pool) so that an archive reloads
    exactly the assignment it was trained with. The `(V, d)` matrix itself is never built.
    Shared by the `slim_embedding` token embedder and the `slim_softmax` output head.

    Parameters: `pool`, `(K, M / K, d / K)`: `pool[k]` is `S_k`; `M * d / K` numbers in all.

    # Parameters

    num_words : `int`
        V.
    embedding_dim : `int`
        d; must be divisible by `num_subvectors`.
    num_subvectors : `int`
        K, the number of sub-vectors per word (and of sub-pools).
    pool_size : `int`
        M, the number of trainable sub-vectors of all K sub-pools together (each sub-pool has
        `M / K`): a multiple of K, with `(M / K) ** K >= num_words` (else some words would
        necessarily share a vector).
    seed : `int`
        Seeds the assignment.
    owner : `str`, optional (default = `"slim"`)
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
            logger.warning(
                "%s: each sub-pool has %d sub-vectors for %d words; %d per sub-pool are never "
                "used",
                owner,
                subpool_size,
                num_words,
                subpool_size - num_words,
            )
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
        # Derived from the assignment, built on first use on each device. Not buffers: DDP
        # would broadcast them at every step.
        self._index: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None

    def rows(self, ids: torch.Tensor) -> torch.LongTensor:
        """The rows of the flat pool `pool.view(M, d / K)` that make up the vectors of `ids`
        `(...)`: `(..., K)`, row `k * M / K + a(w, k)` for position `k` (sub-pool `k` is the
        block of rows `[k * M / K, (k + 1) * M / K)`)."""
        return self._global_rows(self.assignment[ids])

    def _global_rows(self, assignment: torch.Tensor) -> torch.LongTensor:
        offsets = torch.arange(
            0, self.pool_size, self.subpool_size, device=assignment.device, dtype=torch.long
        )
        return assignment.long() + offsets

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """
        # Parameters

        ids : `torch.LongTensor`
            Word ids of any shape `(...)`, in `[0, num_words)`.

        # Returns

        The word vectors, `(..., embedding_dim)`.
        """
        flat_pool = self.pool.view(self.pool_size, -1)
        subvectors = torch.nn.functional.embedding(self.rows(ids), flat_pool)
        return subvectors.reshape(*ids.shape, self.embedding_dim)

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """
        Dot products of `hidden` `(num_positions, embedding_dim)` with every word vector
        (`slim_scores`): per position, O(M * d / K) for the partial products (each chunk of
        `hidden` against its own sub-pool), then O(V * K) for each word's sum of its K of them.

        # Returns

        `(num_words, num_positions)`: transposed, words first (the layout the gather writes).
        """
        return slim_scores(self.pool, hidden, *self.score_index(hidden.device))

    def score_index(
        self, device: torch.device
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        The index `slim_scores` needs, built once per device: `rows` `(V, K)`, word v's score
        sums the partial products of rows `rows[v]` of the flat pool; and its inverse for the
        backward pass (for each row, the words that use it: `slot_words[row_starts[r]:...]`),
        rather than sorted again at every step. All int32.
        """
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
        pool = state_dict.get(prefix + "pool")
        if pool is not None and pool.dim() == 2:
            error_msgs.append(
                f"{prefix}pool is {tuple(pool.shape)}, one pool shared by all sub-vector "
                "positions (the slim layout of earlier versions of allennlp_elmo_c); this "
                f"version has K disjoint sub-pools, {tuple(self.pool.shape)}, and a different "
                "assignment: the weights cannot be converted, train the model again"
            )
            return
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
    The paper's two-step output layer: the score of word `w` for a hidden state `h` split into
    K chunks `h_1..h_K` is `sum_k <h_k, S_k[a(w, k)]>`. Step 1 takes each chunk against every
    sub-vector of its own sub-pool (`K` products of `(M / K, d / K) x (d / K, N)`: O(M d / K) per
    position); step 2 sums each word's K partial products (O(V K) per position). Gradients are
    exact (a custom backward for step 2 only; `tests/nn/test_slim.py` gradchecks it).

    # Parameters

    pool : `torch.Tensor`
        `(K, M / K, d / K)`, the sub-pools.
    hidden : `torch.Tensor`
        `(N, d)`.
    rows, slot_words, row_starts : `torch.Tensor`
        `SlimTable.score_index`.

    # Returns

    `(V, N)`, words first.
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
