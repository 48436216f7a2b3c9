import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_elmo_c.modules.token_embedders.slim_embedding import SlimEmbedding

WORDS = ["<S>", "</S>", "the", "cat", "sat", "on", "a", "mat"]


def vocabulary() -> Vocabulary:
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(WORDS, "tokens")
    vocab.add_tokens_to_namespace(["x", "y"], "tags")  # a namespace without @@UNKNOWN@@
    return vocab


def embedder(**kwargs) -> SlimEmbedding:
    # 2 sub-pools of 4 sub-vectors of 3 (4 ** 2 = 16 combinations for 10 words).
    options = {"type": "slim_embedding", "embedding_dim": 6, "num_subvectors": 2, "pool_size": 8}
    options.update(kwargs)
    return TokenEmbedder.from_params(Params(options), vocab=vocabulary())


def full_matrix(slim: SlimEmbedding) -> torch.Tensor:
    """The dense (V, d) matrix from the assignment: column block k of word w is S_k[a(w, k)]."""
    table = slim.table
    assignment = table.assignment.long()
    return torch.cat([table.pool[k][assignment[:, k]] for k in range(2)], dim=1)


def test_vectors_and_gradients_equal_rows_of_the_full_matrix():
    slim = embedder()
    assert slim.get_output_dim() == 6
    assert slim.table.num_words == len(WORDS) + 2  # + padding and unknown
    ids = torch.tensor([[2, 3, 4, 0], [9, 9, 1, 0]])
    vectors = slim(ids)
    assert vectors.shape == (2, 4, 6)
    weights = torch.randn(2, 4, 6)
    (vectors * weights).sum().backward()
    ours = slim.table.pool.grad.clone()
    slim.zero_grad()
    expected = full_matrix(slim)[ids]
    (expected * weights).sum().backward()
    torch.testing.assert_close(vectors, expected)
    torch.testing.assert_close(ours, slim.table.pool.grad)
    # A word's vector is its K sub-vectors, concatenated in order, the k-th from sub-pool k.
    first, second = slim.table.assignment[3].tolist()
    torch.testing.assert_close(
        vectors[0, 1], torch.cat([slim.table.pool[0, first], slim.table.pool[1, second]])
    )


def test_gradcheck_of_the_vectors_in_float64():
    slim = embedder().double()
    pool = slim.table.pool.detach().clone().requires_grad_(True)
    ids = torch.tensor([[2, 3, 4, 0], [9, 9, 1, 0]])
    vectors = lambda p: torch.func.functional_call(slim, {"table.pool": p}, (ids,))
    assert torch.autograd.gradcheck(vectors, (pool,))


def test_same_layout_as_the_slim_softmax_head():
    from allennlp_elmo_c.modules.output_heads.slim_softmax import SlimSoftmaxOutputHead

    vocab = vocabulary()
    torch.manual_seed(0)
    output = SlimSoftmaxOutputHead(6, 6, vocab, num_subvectors=2, pool_size=8, seed=7)
    slim = embedder(seed=7)
    assert torch.equal(output.table.assignment, slim.table.assignment)
    with torch.no_grad():
        slim.table.pool.copy_(output.table.pool)
    hidden = torch.randn(3, 6)
    ids = torch.arange(slim.table.num_words)
    torch.testing.assert_close(
        output.logits(hidden) - output.bias, hidden @ slim(ids).t(), atol=1e-6, rtol=1e-6
    )


def test_only_the_pool_is_trainable():
    slim = embedder(pool_size=8)
    # M d / K = 8 * 6 / 2 numbers: 2 sub-pools of 4 sub-vectors of 3.
    shapes = {name: tuple(p.shape) for name, p in slim.named_parameters()}
    assert shapes == {"table.pool": (2, 4, 3)}
    assert set(slim.state_dict()) == {"table.pool", "table.assignment"}


def test_embed_strings_uses_the_vocabulary_and_unknown_for_oov():
    slim = embedder()
    vocab = vocabulary()
    vectors = slim.embed_strings(["<S>", "cat", "never-seen"])
    ids = [vocab.get_token_index(w) for w in ("<S>", "cat", "@@UNKNOWN@@")]
    torch.testing.assert_close(vectors, full_matrix(slim)[ids])


def test_embed_strings_errors():
    with pytest.raises(ConfigurationError, match="no unknown token"):
        embedder(vocab_namespace="tags").embed_strings(["z"])
    plain = SlimEmbedding(embedding_dim=4, num_subvectors=2, pool_size=6, num_embeddings=9)
    assert plain.table.num_words == 9
    with pytest.raises(ConfigurationError, match="needs the vocabulary"):
        plain.embed_strings(["the"])


def test_seed_fixes_the_assignment():
    assert torch.equal(embedder(seed=4).table.assignment, embedder(seed=4).table.assignment)
    assert not torch.equal(embedder(seed=4).table.assignment, embedder(seed=5).table.assignment)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_subvectors": 4}, "embedding_dim 6 is not divisible"),
        ({"pool_size": 7}, "pool_size 7 is not divisible"),
        ({"pool_size": 6}, "too small"),  # sub-pools of 3: 3 ** 2 = 9 < 10 words
    ],
)
def test_bad_configs_are_configuration_errors(options, message):
    with pytest.raises(ConfigurationError, match=message):
        embedder(**options)


def test_needs_a_vocabulary_or_a_size():
    with pytest.raises(ConfigurationError, match="num_embeddings or a vocabulary"):
        SlimEmbedding(embedding_dim=4, num_subvectors=2, pool_size=6)


def test_out_of_range_ids_are_an_error():
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        embedder()(torch.tensor([[1, 10]]))
