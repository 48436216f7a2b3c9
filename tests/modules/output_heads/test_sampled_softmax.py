import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads import sampled_softmax as sampled_module
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.sampled_softmax import (
    SampledSoftmaxOutputHead,
    expected_counts,
    log_uniform_probabilities,
    sample_log_uniform,
)
from tests.helpers import (
    INPUT,
    NAMESPACE,
    TINY_FASTTEXT,
    batch,
    embedder,
    reference_nll,
    vocabulary,
)

TINY_BIN = str(TINY_FASTTEXT)

WORDS = [f"w{i}" for i in range(40)]  # 42 ids with padding and OOV


def numpy_probability(ids, num_words):
    """TensorFlow's log-uniform formula, in float64."""
    ids = np.asarray(ids, dtype=np.float64)
    return (np.log(ids + 2) - np.log(ids + 1)) / np.log(num_words + 1)


def head(num_samples=10, seed=0, **kwargs) -> SampledSoftmaxOutputHead:
    torch.manual_seed(seed)
    sampled = SampledSoftmaxOutputHead(
        INPUT, 16, vocabulary(WORDS), vocab_namespace=NAMESPACE, num_samples=num_samples, **kwargs
    )
    with torch.no_grad():
        sampled.output_bias.normal_()
    return sampled


@pytest.mark.parametrize("num_words", [5, 1000, 800_000])
def test_log_uniform_probabilities_match_the_formula_and_sum_to_one(num_words):
    ids = torch.arange(num_words)
    got = log_uniform_probabilities(ids, num_words).double().numpy()
    np.testing.assert_allclose(got, numpy_probability(np.arange(num_words), num_words), rtol=1e-5)
    assert got.sum() == pytest.approx(1.0, abs=1e-4)
    assert np.all(np.diff(got) < 0)  # frequent (small) ids are the likely ones


def test_expected_counts_match_one_minus_the_probability_of_never_drawing():
    ids = torch.tensor([0, 1, 7, 500, 799_999])
    got = expected_counts(ids, 800_000, 12_345).double().numpy()
    expected = 1 - (1 - numpy_probability(ids.numpy(), 800_000)) ** 12_345
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def sequential_reference(num_words, num_samples, chunk_size, seed):
    """TensorFlow's unique sampler, one draw at a time, from the same stream of uniforms."""
    torch.manual_seed(seed)
    chosen, tries = [], 0
    while len(chosen) < num_samples:
        for uniform in torch.rand(chunk_size, dtype=torch.float64).tolist():
            tries += 1
            draw = min(int(math.exp(uniform * math.log(num_words + 1))) - 1, num_words - 1)
            if draw not in chosen:
                chosen.append(draw)
                if len(chosen) == num_samples:
                    return chosen, tries
    raise AssertionError


@pytest.mark.parametrize("num_words, num_samples, chunk_size", [(50, 20, 8), (1000, 64, None)])
def test_sampler_is_the_sequential_unique_sampler(num_words, num_samples, chunk_size):
    for seed in range(3):
        torch.manual_seed(seed)
        ids, tries = sample_log_uniform(num_words, num_samples, torch.device("cpu"), chunk_size)
        expected_ids, expected_tries = sequential_reference(
            num_words, num_samples, chunk_size or max(2 * num_samples, 64), seed
        )
        assert ids.tolist() == expected_ids
        assert tries == expected_tries
        assert len(set(ids.tolist())) == num_samples and tries >= num_samples


def test_sampler_draws_from_the_log_uniform_distribution():
    num_words, draws = 12, 6000
    torch.manual_seed(0)
    first = [int(sample_log_uniform(num_words, 1, torch.device("cpu"))[0]) for _ in range(draws)]
    counts = np.bincount(first, minlength=num_words)
    expected = numpy_probability(np.arange(num_words), num_words) * draws
    # Every id within 4.5 standard deviations of its expected count.
    assert np.all(np.abs(counts - expected) < 4.5 * np.sqrt(expected) + 1), (counts, expected)


def test_training_loss_is_the_corrected_sampled_softmax_without_accidental_hits(monkeypatch):
    sampled = head(num_samples=5)
    hidden, targets, mask = batch(sampled.num_words)
    targets[0, 0], targets[1, 0] = 3, 7  # both among the samples: accidental hits
    # The sampler draws ranks among the candidates, the ids after @@PADDING@@ (id = rank + 1).
    ranks, tries = torch.tensor([0, 2, 6, 1, 29]), 9
    samples = ranks + 1
    monkeypatch.setattr(sampled_module, "sample_log_uniform", lambda *args: (ranks, tries))
    sampled.train()
    loss = sampled(hidden, mask, target_ids=targets)["loss"].item()

    weight = sampled.output_embedding.detach().double().numpy()
    bias = sampled.output_bias.detach().double().numpy()
    states = sampled.project(hidden[mask]).detach().double().numpy()
    # The correction: log-uniform over the 41 candidates' ranks (id - 1).
    candidates = sampled.num_words - 1
    log_q = lambda ids: np.log(
        1 - (1 - numpy_probability(np.asarray(ids) - 1, candidates)) ** tries
    )
    expected = 0.0
    for state, target in zip(states, targets[mask].tolist()):
        true = state @ weight[target] + bias[target] - log_q([target])[0]
        others = [s for s in samples.tolist() if s != target]
        negatives = weight[others] @ state + bias[others] - log_q(others)
        expected -= true - logsumexp(np.concatenate([[true], negatives]))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_training_gradient_reaches_only_targets_and_samples(monkeypatch):
    sampled = head(num_samples=4)
    hidden, targets, mask = batch(sampled.num_words)
    ranks = torch.tensor([0, 1, 5, 9])
    samples = ranks + 1  # the ids after @@PADDING@@
    monkeypatch.setattr(sampled_module, "sample_log_uniform", lambda *args: (ranks, 6))
    sampled(hidden, mask, target_ids=targets)["loss"].backward()
    touched = set(samples.tolist()) | set(targets[mask].tolist())
    rows_with_gradient = set(torch.nonzero(sampled.output_embedding.grad.abs().sum(1)).view(-1))
    assert {int(i) for i in rows_with_gradient} == touched


def test_evaluation_is_the_full_softmax():
    sampled = head(num_samples=5)
    hidden, targets, mask = batch(sampled.num_words)
    sampled.eval()
    loss = sampled(hidden, mask, target_ids=targets)["loss"].item()
    logits = (
        hidden[mask].double().numpy() @ sampled.output_embedding.detach().double().numpy().T
        + sampled.output_bias.detach().double().numpy()
    )
    # @@PADDING@@ (0) is no candidate: training never moves its logit, which takes no mass.
    logits[:, 0] = -np.inf
    assert loss == pytest.approx(reference_nll(logits, targets[mask].numpy()), rel=1e-5)
    assert sampled.logits(hidden[mask])[:, 0].eq(float("-inf")).all()
    # ... and differs from the (random) sampled loss of training.
    sampled.train()
    assert sampled(hidden, mask, target_ids=targets)["loss"].item() != pytest.approx(loss)


def test_built_by_name_with_elmos_default_and_capped_for_small_vocabularies():
    built = OutputHead.from_params(
        Params({"type": "sampled_softmax", "vocab_namespace": NAMESPACE}),
        input_dim=INPUT,
        target_dim=16,
        vocab=vocabulary([f"w{i}" for i in range(20_000)]),
    )
    assert isinstance(built, SampledSoftmaxOutputHead) and built.num_samples == 8192
    assert head(num_samples=8192).num_samples == 20  # 41 candidates (42 ids - padding): half
    with pytest.raises(ConfigurationError, match="num_samples"):
        head(num_samples=0)


def test_fixed_output_layer_trains_only_bias_and_projection():
    sampled = head(freeze_output_embedding=True, output_embedding_fasttext=TINY_BIN)
    frozen = sampled.output_embedding.detach().clone()
    trainable = {
        name: p.detach().clone() for name, p in sampled.named_parameters() if p.requires_grad
    }
    assert set(trainable) == {"output_bias", "projection.weight", "projection.bias"}
    optimizer = torch.optim.Adam([p for p in sampled.parameters() if p.requires_grad], lr=0.1)
    hidden, targets, mask = batch(sampled.num_words)
    sampled(hidden, mask, target_ids=targets)["loss"].backward()
    optimizer.step()
    assert torch.equal(sampled.output_embedding.detach(), frozen)
    for name, parameter in sampled.named_parameters():
        if parameter.requires_grad:
            assert not torch.equal(parameter.detach(), trainable[name]), name


def test_tied_sampled_softmax_trains_the_input_embedding():
    text_field_embedder = embedder()
    sampled = SampledSoftmaxOutputHead(
        INPUT,
        16,
        vocabulary(),
        text_field_embedder=text_field_embedder,
        vocab_namespace=NAMESPACE,
        num_samples=3,
        tie_input_embedding=True,
    )
    weight = text_field_embedder._token_embedders["tokens"].weight
    assert sampled.output_embedding is weight
    hidden, targets, mask = batch(sampled.num_words)
    sampled(hidden, mask, target_ids=targets)["loss"].backward()
    assert weight.grad.abs().sum() > 0


def test_autocast_training_loss_is_float32():
    sampled = head()
    hidden, targets, mask = batch(sampled.num_words)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = sampled(hidden, mask, target_ids=targets)["loss"]
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


def test_padding_is_never_sampled_and_the_correction_is_the_samplers_distribution():
    sampled = head(num_samples=1)
    assert (sampled.first_candidate_id, sampled.num_candidates) == (1, sampled.num_words - 1)
    torch.manual_seed(0)
    draws = 6000
    first = []
    for _ in range(draws):
        ids, tries = sampled.draw_samples(torch.device("cpu"))
        assert tries == 1  # one distinct sample takes one draw
        first.append(int(ids[0]))
    counts = np.bincount(first, minlength=sampled.num_words)
    assert counts[0] == 0  # @@PADDING@@
    assert counts[1] > 0  # @@UNKNOWN@@ is a target (words under min_count), so a candidate
    # With one draw the expected count is the probability of each id: a distribution over the
    # candidates only, which the draws follow.
    ids = torch.arange(1, sampled.num_words)
    probabilities = sampled.log_expected_counts(ids, 1).double().exp().numpy()
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    expected = probabilities * draws
    assert np.all(np.abs(counts[1:] - expected) < 4.5 * np.sqrt(expected) + 1), (counts, expected)


def test_over_many_batches_padding_never_appears_and_expected_counts_match_the_draws():
    # Several distinct samples per batch: how often each id is among a batch's samples, against
    # the mean of the expected counts the correction uses for it.
    sampled = head(num_samples=8)
    torch.manual_seed(1)
    batches = 3000
    seen = np.zeros(sampled.num_words)
    expected = np.zeros(sampled.num_words)
    all_ids = torch.arange(1, sampled.num_words)
    for _ in range(batches):
        ids, tries = sampled.draw_samples(torch.device("cpu"))
        assert len(set(ids.tolist())) == 8 and int(ids.min()) >= 1
        seen[ids.numpy()] += 1
        expected[1:] += sampled.log_expected_counts(all_ids, tries).double().exp().numpy()
    assert seen[0] == 0 and expected[0] == 0
    assert seen.sum() == 8 * batches
    # TensorFlow's correction 1 - (1 - p)^tries ignores that `tries` depends on the draws; it
    # stays within a few percent of the inclusion frequencies here.
    np.testing.assert_allclose(seen[1:] / batches, expected[1:] / batches, rtol=0.1, atol=0.01)


def test_training_with_a_padding_target_is_an_error():
    sampled = head()
    hidden, targets, mask = batch(sampled.num_words)
    targets[0, 0] = 0
    with pytest.raises(ValueError, match="PADDING"):
        sampled(hidden, mask, target_ids=targets)
