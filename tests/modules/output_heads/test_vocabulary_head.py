"""
`positions_per_chunk`, implemented once in `VocabularyOutputHead.loss`: every closed-vocabulary
head takes it from its config, and the chunked loss (each chunk recomputed in the backward pass)
has the same value and gradients as the whole one, on ragged batches.
"""

from typing import Optional

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.from_params import infer_constructor_params

from allennlp_elmo_c.modules.output_heads import vocabulary_head
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.vocabulary_head import VocabularyOutputHead
from tests.helpers import NAMESPACE, vocabulary

INPUT = 16
WORDS = [f"w{i}" for i in range(20)]  # 22 ids with padding and OOV
HEADS = {
    "softmax": {},
    "sampled_softmax": {"num_samples": 6},
    "adaptive_softmax": {"cutoffs": [4, 10]},
    "slim_softmax": {"num_subvectors": 4, "pool_size": 16},
}


def build(name: str, positions_per_chunk: Optional[int]) -> VocabularyOutputHead:
    options = {"type": name, "vocab_namespace": NAMESPACE, **HEADS[name]}
    if positions_per_chunk is not None:
        options["positions_per_chunk"] = positions_per_chunk
    torch.manual_seed(0)  # the same weights for every chunk size
    head = OutputHead.from_params(
        Params(options), input_dim=INPUT, target_dim=7, vocab=vocabulary(WORDS)
    )
    assert head.positions_per_chunk == positions_per_chunk
    for name_, parameter in head.named_parameters():
        if name_.endswith("bias"):  # non-zero biases, so that the test sees them
            with torch.no_grad():
                parameter.normal_(generator=torch.Generator().manual_seed(1))
    return head.train()


def ragged_batch():
    generator = torch.Generator().manual_seed(2)
    lengths = torch.tensor([7, 2, 5, 1, 6])
    mask = torch.arange(int(lengths.max())).unsqueeze(0) < lengths.unsqueeze(1)
    hidden = torch.randn(len(lengths), int(lengths.max()), INPUT, generator=generator)
    targets = torch.randint(1, len(WORDS) + 2, mask.shape, generator=generator)
    targets[0, :4] = torch.tensor([1, 3, 12, 21])  # @@UNKNOWN@@, and every adaptive cluster
    return hidden, targets.masked_fill(~mask, 0), mask


def loss_and_gradients(head: VocabularyOutputHead):
    hidden, targets, mask = ragged_batch()
    hidden.requires_grad_(True)
    torch.manual_seed(3)  # the same negative samples for the sampled softmax
    output = head(hidden, mask, target_ids=targets)
    output["loss"].backward()
    gradients = {name: p.grad for name, p in head.named_parameters() if p.requires_grad}
    return output["loss"].detach(), gradients, hidden.grad


def test_every_closed_vocabulary_head_is_covered_and_takes_positions_per_chunk():
    registered = {
        name
        for name in OutputHead.list_available()
        if issubclass(OutputHead.by_name(name), VocabularyOutputHead)
    }
    assert registered == set(HEADS)
    for name in registered:
        head_class = OutputHead.by_name(name)
        # As a config sees it (a constructor's `**kwargs` take its parent's parameters).
        parameter = infer_constructor_params(head_class)["positions_per_chunk"]
        assert parameter.annotation == Optional[int] and parameter.default is None


@pytest.mark.parametrize("name", sorted(HEADS))
@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_chunked_loss_and_gradients_equal_the_whole_loss(name, chunk, monkeypatch):
    whole_loss, whole_gradients, whole_hidden = loss_and_gradients(build(name, None))
    calls = []
    original = vocabulary_head.checkpoint
    monkeypatch.setattr(
        vocabulary_head, "checkpoint", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    loss, gradients, hidden_gradient = loss_and_gradients(build(name, chunk))
    positions = int(ragged_batch()[2].sum())  # 21
    assert len(calls) == -(-positions // chunk)  # one recomputed chunk each
    torch.testing.assert_close(loss, whole_loss, atol=1e-5, rtol=1e-5)
    assert set(gradients) == set(whole_gradients)
    for parameter, gradient in gradients.items():
        assert gradient is not None and gradient.abs().sum() > 0, parameter
        torch.testing.assert_close(gradient, whole_gradients[parameter], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(hidden_gradient, whole_hidden, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(HEADS))
def test_bad_positions_per_chunk_is_a_configuration_error(name):
    with pytest.raises(ConfigurationError, match="positions_per_chunk must be >= 1"):
        build(name, 0)
