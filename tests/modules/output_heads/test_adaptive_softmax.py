import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.adaptive_softmax import AdaptiveSoftmaxOutputHead
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from tests.helpers import NAMESPACE, batch, vocabulary

WORDS = [f"w{i}" for i in range(38)]  # 40 ids with padding and OOV
INPUT = 64
CUTOFFS = [6, 15, 30]


def head(cutoffs=CUTOFFS, seed=0, **kwargs) -> AdaptiveSoftmaxOutputHead:
    torch.manual_seed(seed)
    return AdaptiveSoftmaxOutputHead(
        INPUT, 300, vocabulary(WORDS), cutoffs=cutoffs, vocab_namespace=NAMESPACE, **kwargs
    )


def adaptive_batch(seed=0):
    hidden, targets, mask = batch(len(WORDS) + 2, input_dim=INPUT, lengths=(9, 5, 7), seed=seed)
    # Every cluster has targets: the head, and each of the three tails.
    targets[0, :4] = torch.tensor([2, 10, 20, 39])
    return hidden, targets, mask


def test_loss_equals_the_torch_modules_own_output():
    adaptive = head()
    hidden, targets, mask = adaptive_batch()
    result = adaptive(hidden, mask, target_ids=targets)
    own = adaptive.adaptive(hidden[mask], targets[mask])
    torch.testing.assert_close(result["loss"], -own.output.sum())
    torch.testing.assert_close(result["loss"] / mask.sum(), own.loss)
    assert result["count"].item() == int(mask.sum())


def test_log_probabilities_equal_the_torch_modules_and_sum_to_one():
    adaptive = head()
    hidden, targets, mask = adaptive_batch()
    log_probs = adaptive.logits(hidden[mask])
    torch.testing.assert_close(log_probs, adaptive.adaptive.log_prob(hidden[mask]))
    assert log_probs.shape == (int(mask.sum()), len(WORDS) + 2)
    torch.testing.assert_close(
        log_probs.double().exp().sum(-1), torch.ones(int(mask.sum()), dtype=torch.float64)
    )
    # The loss is the negative log-probability of the targets.
    expected = -log_probs.gather(1, targets[mask].unsqueeze(1)).sum()
    torch.testing.assert_close(adaptive(hidden, mask, target_ids=targets)["loss"], expected)


def test_built_by_name_with_the_given_clusters():
    built = OutputHead.from_params(
        Params({"type": "adaptive_softmax", "cutoffs": CUTOFFS, "vocab_namespace": NAMESPACE}),
        input_dim=INPUT,
        target_dim=300,
        vocab=vocabulary(WORDS),
    )
    assert isinstance(built, AdaptiveSoftmaxOutputHead)
    assert built.adaptive.cutoffs == CUTOFFS + [len(WORDS) + 2]
    # Head: 6 words + 3 clusters; tails project to 64 / 4 = 16, 64 / 16 = 4, 64 / 64 = 1.
    assert built.adaptive.head.weight.shape == (9, INPUT) and built.adaptive.head.bias is None
    assert [tail[0].out_features for tail in built.adaptive.tail] == [16, 4, 1]
    assert [tail[1].out_features for tail in built.adaptive.tail] == [9, 15, 10]
    assert built.reports_perplexity and built.needs_target_ids


def test_every_parameter_gets_a_gradient_when_every_cluster_has_targets():
    adaptive = head(cutoffs=[6, 15], div_value=2.0)
    hidden, targets, mask = adaptive_batch()
    adaptive(hidden, mask, target_ids=targets)["loss"].backward()
    for name, parameter in adaptive.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize(
    "cutoffs, options, message",
    [
        ([15, 6], {}, "strictly increasing"),
        ([6, 6, 15], {}, "strictly increasing"),
        ([0, 15], {}, "positive"),
        ([6, 40], {}, "below the vocabulary size 40"),
        ([], {}, "integers"),
        ([6.5, 15], {}, "integers"),
        ([2, 4, 6], {"div_value": 8.0}, "dimension"),
        ([6], {"div_value": 0.5}, "div_value"),
    ],
)
def test_bad_cutoffs_are_configuration_errors(cutoffs, options, message):
    with pytest.raises(ConfigurationError, match=message):
        head(cutoffs=cutoffs, **options)


def test_autocast_normalises_in_float32():
    adaptive = head()
    hidden, targets, mask = adaptive_batch()
    full = adaptive(hidden, mask, target_ids=targets)["loss"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = adaptive(hidden, mask, target_ids=targets)["loss"]
        log_probs = adaptive.logits(hidden[mask])
    assert low.dtype == torch.float32 and log_probs.dtype == torch.float32
    assert low.item() == pytest.approx(full.item(), rel=2e-2)
