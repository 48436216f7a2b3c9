import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.slim_softmax import SlimSoftmaxOutputHead

HIDDEN, WORDS = 12, 30  # 30 words + padding + unknown = 32 ids


def vocabulary(namespace="lm_targets", num_words=WORDS) -> Vocabulary:
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(num_words)], namespace)
    return vocab


def head(**kwargs) -> SlimSoftmaxOutputHead:
    # 3 sub-pools of 4 sub-vectors (4 ** 3 = 64 combinations for 32 words).
    options = dict(num_subvectors=3, pool_size=12, vocab_namespace="lm_targets")
    options.update(kwargs)
    torch.manual_seed(0)
    slim = SlimSoftmaxOutputHead(HIDDEN, 7, vocabulary(), **options)
    with torch.no_grad():  # a non-zero bias, so that the test sees it
        if slim.bias is not None:
            slim.bias.normal_()
    return slim


def dense_matrix(slim: SlimSoftmaxOutputHead) -> torch.Tensor:
    """The full (V, d) output embedding materialised from the assignment: the vector of word w
    is [S_1[a(w, 1)]; ...; S_K[a(w, K)]], S_k = pool[k] (sub-pool k)."""
    table = slim.table
    assignment = table.assignment.long()
    matrix = torch.stack(
        [
            torch.cat([table.pool[k][assignment[w, k]] for k in range(table.num_subvectors)])
            for w in range(slim.num_words)
        ]
    )
    assert matrix.shape == (slim.num_words, HIDDEN)
    return matrix


def naive_logits(slim: SlimSoftmaxOutputHead, hidden: torch.Tensor) -> torch.Tensor:
    """The full (V, d) matrix built explicitly, then h @ W.T + b."""
    logits = hidden @ dense_matrix(slim).t()
    return logits if slim.bias is None else logits + slim.bias


def batch(seed=0, lengths=(5, 2, 4)):
    generator = torch.Generator().manual_seed(seed)
    timesteps = max(lengths)
    mask = torch.arange(timesteps).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    hidden = torch.randn(len(lengths), timesteps, HIDDEN, generator=generator)
    targets = torch.randint(0, WORDS + 2, (len(lengths), timesteps), generator=generator)
    return hidden, targets, mask


def gradients(module, hidden):
    return [p.grad.clone() for p in module.parameters()] + [hidden.grad.clone()]


@pytest.mark.parametrize("bias", [True, False])
def test_logits_and_gradients_equal_the_full_matrix_computation(bias):
    slim = head(bias=bias)
    hidden = torch.randn(9, HIDDEN, requires_grad=True)
    logits = slim.logits(hidden)
    assert logits.shape == (9, WORDS + 2)
    weights = torch.randn(9, WORDS + 2)
    (logits * weights).sum().backward()
    ours = gradients(slim, hidden)
    slim.zero_grad(), hidden.grad.zero_()
    expected = naive_logits(slim, hidden)
    (expected * weights).sum().backward()
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    for got, want in zip(ours, gradients(slim, hidden)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


class _Logits(torch.nn.Module):
    def __init__(self, slim: SlimSoftmaxOutputHead) -> None:
        super().__init__()
        self.slim = slim

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.slim.logits(hidden)


def test_gradcheck_of_the_logits_in_float64():
    slim = head(num_subvectors=4, pool_size=12).double()  # sub-pools of 3 sub-vectors of 3
    wrapper = _Logits(slim)
    hidden = torch.randn(5, HIDDEN, dtype=torch.float64, requires_grad=True)
    pool = slim.table.pool.detach().clone().requires_grad_(True)
    bias = slim.bias.detach().clone().requires_grad_(True)

    def logits(hidden, pool, bias):
        weights = {"slim.table.pool": pool, "slim.bias": bias}
        return torch.func.functional_call(wrapper, weights, (hidden,))

    assert torch.autograd.gradcheck(logits, (hidden, pool, bias))
    torch.testing.assert_close(logits(hidden, pool, bias), naive_logits(slim, hidden))


def test_loss_is_cross_entropy_of_the_naive_logits_over_masked_positions():
    slim = head()
    hidden, targets, mask = batch()
    hidden.requires_grad_(True)
    output = slim(hidden, mask, target_ids=targets)
    assert int(output["count"]) == 11
    output["loss"].backward()
    ours = gradients(slim, hidden)
    slim.zero_grad(), hidden.grad.zero_()
    expected = torch.nn.functional.cross_entropy(
        naive_logits(slim, hidden[mask]), targets[mask], reduction="sum"
    )
    expected.backward()
    torch.testing.assert_close(output["loss"], expected, atol=1e-5, rtol=1e-5)
    for got, want in zip(ours, gradients(slim, hidden)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert slim.reports_perplexity and slim.needs_target_ids


@pytest.mark.parametrize("chunk", [1, 4, 10])
def test_chunked_loss_and_gradients_equal_the_whole_loss(chunk):
    hidden, targets, mask = batch(seed=1)
    results = []
    for positions_per_chunk in (None, chunk):
        slim = head(positions_per_chunk=positions_per_chunk)
        leaf = hidden.clone().requires_grad_(True)
        loss = slim(leaf, mask, target_ids=targets)["loss"]
        loss.backward()
        results.append([loss.detach()] + gradients(slim, leaf))
    for whole, chunked in zip(*results):
        torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)


def test_parameters_are_the_pool_and_bias_only():
    slim = head()
    shapes = {name: tuple(p.shape) for name, p in slim.named_parameters()}
    # M d / K + V = 12 * 12 / 3 + 32: the 3 sub-pools of M / K = 4 sub-vectors of d / K = 4.
    assert shapes == {"table.pool": (3, 4, 4), "bias": (WORDS + 2,)}
    assert sum(p.numel() for p in slim.parameters()) == 12 * HIDDEN // 3 + WORDS + 2
    assert tuple(slim.state_dict()["table.assignment"].shape) == (WORDS + 2, 3)


def test_built_from_config_like_the_model_does():
    params = Params(
        {"type": "slim_softmax", "num_subvectors": 4, "pool_size": 12, "seed": 3,
         "vocab_namespace": "lm_targets"}  # fmt: skip
    )
    built = OutputHead.from_params(params, input_dim=HIDDEN, target_dim=7, vocab=vocabulary())
    assert isinstance(built, SlimSoftmaxOutputHead)
    assert built.table.assignment.shape == (WORDS + 2, 4)
    again = head(num_subvectors=4, pool_size=12, seed=3)
    assert torch.equal(built.table.assignment, again.table.assignment)
    other = head(num_subvectors=4, pool_size=12, seed=4)
    assert not torch.equal(built.table.assignment, other.table.assignment)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_subvectors": 5}, "embedding_dim 12 is not divisible"),
        ({"pool_size": 10}, "pool_size 10 is not divisible"),
        ({"pool_size": 9}, "too small"),  # sub-pools of 3: 3 ** 3 = 27 < 32 words
        ({"positions_per_chunk": 0}, "positions_per_chunk"),
        ({"vocab_namespace": "unseen_labels"}, "empty"),
    ],
)
def test_bad_configs_are_configuration_errors(options, message):
    with pytest.raises(ConfigurationError, match=message):
        head(**options)


def test_bad_inputs_give_clear_errors():
    slim = head()
    hidden, targets, mask = batch()
    with pytest.raises(ConfigurationError, match="target ids"):
        slim(hidden, mask)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        slim(hidden, mask, target_ids=targets.masked_fill(mask, WORDS + 2))
