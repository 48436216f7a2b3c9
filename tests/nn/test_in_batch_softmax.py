"""
`in_batch_softmax_loss` against a float64 reference written out from the definition: a softmax
over the cosines between a prediction and the batch's distinct target vectors, over a temperature.
"""

import math
from typing import List

import pytest
import torch

from allennlp_elmo_c.nn.continuous_losses import EPSILON
from allennlp_elmo_c.nn.in_batch_softmax import distinct_rows, in_batch_softmax_loss

DIM = 7


def reference_losses(
    predictions: torch.Tensor, targets: torch.Tensor, temperature: float
) -> torch.Tensor:
    """The definition, one position and one word at a time, in the inputs' dtype (autograd
    through the scalar operations gives the reference gradients)."""
    words: List[torch.Tensor] = []
    for target in targets:  # distinct words by exact comparison, in order of appearance
        if not any(torch.equal(target, word) for word in words):
            words.append(target)

    def norm(vector):
        return torch.sqrt(sum(value * value for value in vector)).clamp(min=EPSILON)

    losses = []
    for prediction, target in zip(predictions, targets):
        logits = [
            sum(a * b for a, b in zip(prediction, word)) / (norm(prediction) * norm(word))
            / temperature
            for word in words
        ]
        true = next(k for k, word in enumerate(words) if torch.equal(word, target))
        largest = max(logit.detach() for logit in logits)
        log_sum_exp = largest + torch.log(sum(torch.exp(logit - largest) for logit in logits))
        losses.append(log_sum_exp - logits[true])
    return torch.stack(losses)


def repeated_words(seed: int, positions: int = 14, vocabulary: int = 5, dtype=torch.float32):
    """`positions` targets drawn from `vocabulary` word vectors (so words repeat; one of them is
    the zero vector) and random predictions."""
    generator = torch.Generator().manual_seed(seed)
    table = 2.0 * torch.randn(vocabulary, DIM, generator=generator, dtype=dtype)
    table[-1] = 0.0
    ids = torch.randint(vocabulary, (positions,), generator=generator)
    ids[:3] = torch.tensor([0, 0, 1])  # repeats for sure
    predictions = torch.randn(positions, DIM, generator=generator, dtype=dtype)
    return predictions, table, ids


def max_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    return (value.double() - reference).abs().max().item()


def assert_float32_as_good_as_the_reference(got, reference32, reference64):
    """`got` (the implementation, float32) is as close to the float64 reference as the float32
    reference itself is, within 2x, plus a floor of one float32 ulp of the largest value."""
    allowed = 2 * max_error(reference32, reference64)
    floor = torch.finfo(torch.float32).eps * max(1.0, reference64.abs().max().item())
    assert max_error(got, reference64) <= allowed + floor, (
        max_error(got, reference64),
        allowed,
        floor,
    )


@pytest.mark.parametrize("temperature", [0.05, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_values_and_gradients_match_the_float64_reference(seed, temperature):
    predictions, table, ids = repeated_words(seed)
    results = {}
    for name, dtype, function in [
        ("implementation", torch.float32, in_batch_softmax_loss),
        ("reference32", torch.float32, reference_losses),
        ("reference64", torch.float64, reference_losses),
    ]:
        p = predictions.to(dtype, copy=True).requires_grad_()
        # A target embedding table: a word's positions share its row.
        e = table.to(dtype, copy=True).requires_grad_()
        losses = function(p, e[ids], temperature)
        (losses * torch.linspace(0.5, 1.5, len(losses), dtype=dtype)).sum().backward()
        # The zero word's own gradient is scaled by 1 / EPSILON by design (and NaN through the
        # reference's sqrt at 0): it is left out.
        results[name] = (losses.detach(), p.grad, e.grad[:-1])
    for got, reference32, reference64 in zip(
        results["implementation"], results["reference32"], results["reference64"]
    ):
        assert got.dtype == torch.float32
        assert_float32_as_good_as_the_reference(got, reference32, reference64)
    assert (results["reference64"][0] > 0).all()


def test_float64_implementation_matches_the_reference_to_float64_precision():
    predictions, table, ids = repeated_words(2, dtype=torch.float64)
    p = predictions.clone().requires_grad_()
    q = predictions.clone().requires_grad_()
    got = in_batch_softmax_loss(p, table[ids], 0.1)
    expected = reference_losses(q, table[ids], 0.1)
    got.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(p.grad, q.grad, rtol=1e-10, atol=1e-12)


def test_gradient_is_the_documented_closed_form():
    # d loss_i / d p_i = (I - p^ p^T) / ||p|| (sum_k q_ik u_k^ - u_(y_i)^) / temperature.
    predictions, table, ids = repeated_words(3, dtype=torch.float64)
    temperature = 0.2
    p = predictions.clone().requires_grad_()
    in_batch_softmax_loss(p, table[ids], temperature).sum().backward()
    first, labels = distinct_rows(table[ids])
    words = table[ids][first]
    units = words / words.norm(dim=-1, keepdim=True).clamp(min=EPSILON)
    norms = predictions.norm(dim=-1, keepdim=True)
    directions = predictions / norms
    probabilities = torch.softmax(directions @ units.t() / temperature, dim=-1)
    towards_units = (probabilities @ units - units[labels]) / temperature
    radial = (towards_units * directions).sum(-1, keepdim=True) * directions
    torch.testing.assert_close(p.grad, (towards_units - radial) / norms, rtol=1e-10, atol=1e-12)


def test_distinct_rows_groups_exactly_equal_rows():
    vectors = torch.tensor([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [1.0, 2.0 + 1e-6], [0.0, 0.0]])
    first, inverse = distinct_rows(vectors)
    assert len(first) == 3
    torch.testing.assert_close(vectors[first][inverse], vectors, rtol=0, atol=0)
    assert inverse[0] == inverse[2] and inverse[1] == inverse[4]
    assert len({inverse[0].item(), inverse[1].item(), inverse[3].item()}) == 3
    assert sorted(first.tolist()) == [0, 1, 3]  # each group's first row


def test_one_word_batch_has_loss_zero():
    # Every position has the same target: the only word is the true one, p = 1, -log 1 = 0.
    predictions = torch.randn(6, DIM, requires_grad=True)
    target = torch.randn(DIM)
    losses = in_batch_softmax_loss(predictions, target.expand(6, DIM).clone(), 0.05)
    assert torch.equal(losses, torch.zeros(6))
    losses.sum().backward()
    assert torch.equal(predictions.grad, torch.zeros_like(predictions.grad))


def test_a_repeat_of_the_true_word_is_not_a_negative():
    predictions, table, _ = repeated_words(4)
    once = torch.tensor([0, 1, 2])
    repeated = torch.tensor([0, 1, 2, 0, 0, 1])
    # The repeats' predictions are any: each position's loss is against the same three words.
    extra = torch.randn(3, DIM)
    alone = in_batch_softmax_loss(predictions[:3], table[once], 0.1)
    with_repeats = in_batch_softmax_loss(torch.cat([predictions[:3], extra]), table[repeated], 0.1)
    torch.testing.assert_close(with_repeats[:3], alone)
    # A different word in that place is a negative: the loss grows.
    different = in_batch_softmax_loss(
        torch.cat([predictions[:3], extra]), table[torch.tensor([0, 1, 2, 3, 0, 1])], 0.1
    )
    assert (different[:3] > alone).all()


def test_the_loss_is_the_log_of_the_number_of_words_for_orthogonal_or_zero_predictions():
    # All cosines 0: a uniform softmax over the K distinct words (the zero vector is one).
    targets = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    predictions = torch.tensor([[0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0, 1]])
    predictions.requires_grad_()
    losses = in_batch_softmax_loss(predictions, targets, 0.05)
    torch.testing.assert_close(losses, torch.full((4,), math.log(3)))
    losses.sum().backward()
    assert torch.isfinite(predictions.grad).all()


def test_scale_does_not_matter():
    predictions, table, ids = repeated_words(5)
    losses = in_batch_softmax_loss(predictions, table[ids], 0.1)
    scaled = in_batch_softmax_loss(1e6 * predictions, 1e-3 * table[ids], 0.1)
    torch.testing.assert_close(scaled, losses, rtol=1e-5, atol=1e-5)


def test_empty_batch():
    losses = in_batch_softmax_loss(torch.zeros(0, DIM), torch.zeros(0, DIM), 0.1)
    assert losses.shape == (0,)


def test_autocast_does_not_lower_the_precision():
    predictions, table, ids = repeated_words(6)
    expected = in_batch_softmax_loss(predictions, table[ids], 0.05)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = in_batch_softmax_loss(predictions, table[ids], 0.05)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("temperature", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_temperature(temperature):
    with pytest.raises(ValueError, match="temperature"):
        in_batch_softmax_loss(torch.randn(2, DIM), torch.randn(2, DIM), temperature)


def test_bad_shapes():
    with pytest.raises(ValueError, match="must both be"):
        in_batch_softmax_loss(torch.randn(2, DIM), torch.randn(3, DIM), 0.1)
    with pytest.raises(ValueError, match="must both be"):
        in_batch_softmax_loss(torch.randn(2, 3, DIM), torch.randn(2, 3, DIM), 0.1)
