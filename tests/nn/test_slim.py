import pytest
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.nn.slim import SlimTable, balanced_assignment


@pytest.mark.parametrize(
    "num_words, num_subvectors, pool_size",
    [(10, 2, 5), (37, 3, 10), (7, 4, 5), (100, 8, 64), (1000, 2, 333), (3, 1, 3), (5, 3, 16)],
)
def test_assignment_uses_every_pool_vector_floor_or_ceil_times(
    num_words, num_subvectors, pool_size
):
    assignment = balanced_assignment(num_words, num_subvectors, pool_size, seed=3)
    assert assignment.shape == (num_words, num_subvectors)
    assert assignment.dtype == torch.long
    assert int(assignment.min()) >= 0 and int(assignment.max()) < pool_size
    counts = torch.bincount(assignment.flatten(), minlength=pool_size)
    slots = num_words * num_subvectors
    assert int(counts.sum()) == slots
    assert int(counts.min()) >= slots // pool_size
    assert int(counts.max()) <= -(-slots // pool_size)


def test_assignment_is_the_cut_concatenation_of_shuffled_copies():
    # 7 words x 3 = 21 slots over a pool of 5: copies 1-4 are whole permutations of range(5),
    # the fifth holds the remaining single slot.
    flat = balanced_assignment(7, 3, 5, seed=0).flatten()
    for copy in range(4):
        assert sorted(flat[5 * copy : 5 * (copy + 1)].tolist()) == list(range(5))


def test_assignment_is_determined_by_the_seed_only():
    torch.manual_seed(0)
    first = balanced_assignment(200, 4, 50, seed=11)
    torch.manual_seed(1)  # the global RNG plays no part
    assert torch.equal(first, balanced_assignment(200, 4, 50, seed=11))
    assert not torch.equal(first, balanced_assignment(200, 4, 50, seed=12))
    state = torch.get_rng_state()
    balanced_assignment(200, 4, 50, seed=13)
    assert torch.equal(state, torch.get_rng_state())


def full_matrix(table: SlimTable) -> torch.Tensor:
    return table.pool[table.assignment.long()].reshape(table.num_words, table.embedding_dim)


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


@pytest.mark.parametrize("sizes", [(37, 12, 3, 10), (5, 6, 3, 16), (40, 8, 1, 40), (9, 8, 8, 2)])
def test_table_vectors_scores_and_gradients_match_the_full_matrix(sizes):
    table = SlimTable(*sizes, seed=1).double()
    num_words, dim = sizes[:2]
    assert table.pool.shape == (sizes[3], dim // sizes[2])
    assert table.assignment.dtype == torch.int32
    ids = torch.tensor([[0, num_words - 1, 2], [2, 2, 1]])
    torch.testing.assert_close(table(ids), full_matrix(table)[ids])
    assert_scores_and_gradients_match_the_full_matrix(table)


def test_assignment_is_a_persistent_buffer():
    table = SlimTable(20, 8, 2, 6, seed=5)
    state = table.state_dict()
    assert set(state) == {"pool", "assignment"}
    table.scores(torch.ones(1, 8))
    # The index derived from it is no buffer (DDP would broadcast it at every step).
    assert [name for name, _ in table.named_buffers()] == ["assignment"]
    other = SlimTable(20, 8, 2, 6, seed=6)
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
        ((10, 12, 5, 4), "not divisible"),
        ((101, 12, 2, 10), "too small"),
        ((10, 12, 0, 4), ">= 1"),
        ((10, 12, 3, 0), ">= 1"),
    ],
)
def test_bad_sizes_are_configuration_errors(sizes, message):
    with pytest.raises(ConfigurationError, match=message):
        SlimTable(*sizes, seed=0)
