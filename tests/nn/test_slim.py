import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.nn.slim import SlimTable, balanced_assignment, slim_scores


@pytest.mark.parametrize(
    "num_words, num_subvectors, pool_size",
    [(10, 2, 6), (37, 3, 12), (7, 4, 8), (100, 8, 64), (1000, 2, 334), (3, 1, 3), (5, 3, 18)],
)
def test_assignment_uses_every_subvector_of_its_subpool_floor_or_ceil_times(
    num_words, num_subvectors, pool_size
):
    assignment = balanced_assignment(num_words, num_subvectors, pool_size, seed=3)
    assert assignment.shape == (num_words, num_subvectors)
    assert assignment.dtype == torch.long
    subpool_size = pool_size // num_subvectors
    # Position k indexes its own sub-pool: values in [0, M / K); each of its sub-vectors is used
    # floor(V / (M / K)) = floor(V K / M) or ceil(V K / M) times.
    assert int(assignment.min()) >= 0 and int(assignment.max()) < subpool_size
    for k in range(num_subvectors):
        counts = torch.bincount(assignment[:, k], minlength=subpool_size)
        assert int(counts.sum()) == num_words
        assert int(counts.min()) >= num_words // subpool_size
        assert int(counts.max()) <= -(-num_words // subpool_size)


def test_assignment_is_one_shuffle_of_all_copies_so_neighbours_can_share():
    # 2,000 words, sub-pools of 20: each column is 100 copies of range(20) shuffled together.
    # With one shuffle per copy (each block of 20 consecutive words a permutation) neighbours
    # inside a block would never share a sub-vector; with one shuffle of all copies two given
    # slots hold the same id with probability (copies - 1) / (V - 1).
    num_words, num_subvectors, pool_size = 2000, 4, 80
    assignment = balanced_assignment(num_words, num_subvectors, pool_size, seed=0)
    subpool_size = pool_size // num_subvectors
    blocks = assignment.view(num_words // subpool_size, subpool_size, num_subvectors)
    permutations = (blocks.sort(dim=1).values == torch.arange(subpool_size).view(1, -1, 1)).all(1)
    assert permutations.float().mean() < 0.01  # ~0 of 400 (block, position) pairs
    same = (assignment[1:] == assignment[:-1]).double().mean().item()
    expected = (num_words // subpool_size - 1) / (num_words - 1)  # 0.0495
    assert abs(same - expected) < 0.3 * expected


def test_assignment_is_determined_by_the_seed_only():
    torch.manual_seed(0)
    first = balanced_assignment(200, 4, 48, seed=11)
    torch.manual_seed(1)  # the global RNG plays no part
    assert torch.equal(first, balanced_assignment(200, 4, 48, seed=11))
    assert not torch.equal(first, balanced_assignment(200, 4, 48, seed=12))
    state = torch.get_rng_state()
    balanced_assignment(200, 4, 48, seed=13)
    assert torch.equal(state, torch.get_rng_state())


def full_matrix(table: SlimTable) -> torch.Tensor:
    """The dense (V, d) embedding, materialised from the sub-pools and the assignment: column
    block k of word w is sub-pool k's sub-vector a(w, k)."""
    assignment = table.assignment.long()
    blocks = [table.pool[k][assignment[:, k]] for k in range(table.num_subvectors)]
    return torch.cat(blocks, dim=1)


def assert_scores_and_gradients_match_the_full_matrix(table: SlimTable, num_positions=6):
    hidden = torch.randn(num_positions, table.embedding_dim, dtype=torch.float64)
    hidden.requires_grad_(True)
    weights = torch.randn(table.num_words, num_positions, dtype=torch.float64)
    scores = table.scores(hidden)
    (scores * weights).sum().backward()
    ours = [table.pool.grad.clone(), hidden.grad.clone()]
    table.pool.grad, hidden.grad = None, None
    expected = full_matrix(table) @ hidden.t()
    (expected * weights).sum().backward()
    torch.testing.assert_close(scores, expected)
    torch.testing.assert_close(ours, [table.pool.grad, hidden.grad])


SIZES = [(37, 12, 3, 12), (5, 6, 3, 18), (40, 8, 1, 40), (9, 8, 8, 16), (64, 8, 2, 16)]


@pytest.mark.parametrize("sizes", SIZES)
def test_table_vectors_scores_and_gradients_match_the_full_matrix(sizes):
    table = SlimTable(*sizes, seed=1).double()
    num_words, dim, k, pool_size = sizes
    assert table.pool.shape == (k, pool_size // k, dim // k)
    assert table.assignment.dtype == torch.int32
    ids = torch.tensor([[0, num_words - 1, 2], [2, 2, 1]])
    torch.testing.assert_close(table(ids), full_matrix(table)[ids])
    assert_scores_and_gradients_match_the_full_matrix(table)


@pytest.mark.parametrize("sizes", SIZES)
def test_gradcheck_of_the_scores_and_the_vectors(sizes):
    table = SlimTable(*sizes, seed=2).double()
    pool = table.pool.detach().clone().requires_grad_(True)
    hidden = torch.randn(4, table.embedding_dim, dtype=torch.float64, requires_grad=True)
    index = table.score_index(hidden.device)
    assert torch.autograd.gradcheck(lambda p, h: slim_scores(p, h, *index), (pool, hidden))
    ids = torch.tensor([[0, table.num_words - 1], [1, 1]])
    vectors = lambda p: torch.func.functional_call(table, {"pool": p}, (ids,))
    assert torch.autograd.gradcheck(vectors, (pool,))


def test_first_step_costs_m_d_over_k_per_position():
    # The partial products are each chunk against its own sub-pool only: 2 N (M / K) (d / K) K
    # = 2 N M d / K flops, K times fewer than one pool shared by all positions.
    num_words, dim, k, pool_size, positions = 500, 64, 8, 128, 10
    table = SlimTable(num_words, dim, k, pool_size, seed=0)
    hidden = torch.randn(positions, dim)
    with FlopCounterMode(display=False) as counter:
        table.scores(hidden)
    assert counter.get_total_flops() == 2 * positions * pool_size * dim // k


def test_parameter_count_is_m_d_over_k():
    table = SlimTable(1000, 64, 8, 400, seed=0)
    assert sum(p.numel() for p in table.parameters()) == 400 * 64 // 8


def test_assignment_is_a_persistent_buffer():
    table = SlimTable(20, 8, 2, 12, seed=5)
    state = table.state_dict()
    assert set(state) == {"pool", "assignment"}
    table.scores(torch.ones(1, 8))
    # The index derived from it is no buffer (DDP would broadcast it at every step).
    assert [name for name, _ in table.named_buffers()] == ["assignment"]
    other = SlimTable(20, 8, 2, 12, seed=6)
    assert not torch.equal(other.assignment, table.assignment)
    other.scores(torch.ones(2, 8))  # builds (and caches) the index of its own assignment
    other.load_state_dict(state)
    assert torch.equal(other.assignment, table.assignment)
    # The scores follow the loaded assignment (the derived index is rebuilt on loading).
    assert_scores_and_gradients_match_the_full_matrix(other.double())
    torch.testing.assert_close(
        other.scores(torch.ones(2, 8, dtype=torch.float64)),
        table.double().scores(torch.ones(2, 8, dtype=torch.float64)),
    )


@pytest.mark.parametrize(
    "sizes, message",
    [
        ((10, 12, 5, 10), "embedding_dim 12 is not divisible"),
        ((10, 12, 3, 10), "pool_size 10 is not divisible"),
        ((101, 12, 2, 20), "too small"),  # 10 ** 2 < 101
        ((10, 12, 0, 4), ">= 1"),
        ((10, 12, 3, 0), ">= 1"),
    ],
)
def test_bad_sizes_are_configuration_errors(sizes, message):
    with pytest.raises(ConfigurationError, match=message):
        SlimTable(*sizes, seed=0)
