"""
The continuous head with `loss: "in_batch_softmax"`: its loss and its projection's gradients
against a float64 reference over the real positions of a padded batch with repeated words, on the
CPU and, where there is one, on a GPU.
"""

import copy
import os

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.nn.in_batch_softmax import DEFAULT_TEMPERATURE
from tests.nn.test_in_batch_softmax import assert_float32_as_good_as_the_reference, reference_losses

INPUT, TARGET = 6, 5
LENGTHS = (5, 2, 4)


def padded_batch(seed=0):
    """Hidden states, targets and mask of 3 sequences; the real positions' targets are 4 words
    (so they repeat), the padding's are other vectors."""
    generator = torch.Generator().manual_seed(seed)
    timesteps = max(LENGTHS)
    mask = torch.arange(timesteps).unsqueeze(0) < torch.tensor(LENGTHS).unsqueeze(1)
    hidden = torch.randn(len(LENGTHS), timesteps, INPUT, generator=generator)
    words = 2.0 * torch.randn(4, TARGET, generator=generator)
    ids = torch.randint(4, (len(LENGTHS), timesteps), generator=generator)
    ids[0, :2] = 0  # a repeat for sure
    targets = words[ids]
    targets[~mask] = torch.randn(int((~mask).sum()), TARGET, generator=generator)
    return hidden, targets, mask


def head(seed=0, **kwargs) -> ContinuousOutputHead:
    torch.manual_seed(seed)
    return ContinuousOutputHead(INPUT, TARGET, loss="in_batch_softmax", **kwargs)


def reference_run(model, hidden, targets, mask, dtype):
    """The head's loss and projection gradients by the written-out definition, in `dtype`."""
    weight = model.projection.weight.detach().to(dtype, copy=True).requires_grad_()
    bias = model.projection.bias.detach().to(dtype, copy=True).requires_grad_()
    positions = mask.nonzero().tolist()
    predictions = torch.stack([hidden[b, t].to(dtype) @ weight.t() + bias for b, t in positions])
    real_targets = torch.stack([targets[b, t].to(dtype) for b, t in positions])
    loss = reference_losses(predictions, real_targets, model._loss.temperature).sum()
    loss.backward()
    return loss.detach(), weight.grad, bias.grad


@pytest.mark.parametrize("temperature", [DEFAULT_TEMPERATURE, 0.5])
def test_loss_and_gradients_match_the_float64_reference(temperature):
    model = head(temperature=temperature)
    hidden, targets, mask = padded_batch()
    result = model(hidden, mask, target_embeddings=targets)
    result["loss"].backward()
    got = (result["loss"].detach(), model.projection.weight.grad, model.projection.bias.grad)
    reference32 = reference_run(model, hidden, targets, mask, torch.float32)
    reference64 = reference_run(model, hidden, targets, mask, torch.float64)
    for value, expected32, expected64 in zip(got, reference32, reference64):
        assert value.dtype == torch.float32
        assert_float32_as_good_as_the_reference(value, expected32, expected64)
    assert result["count"].item() == sum(LENGTHS)
    assert result["predictions"].shape == (3, max(LENGTHS), TARGET)


def run_on(model, hidden, targets, mask, device, dtype):
    """The head's loss and the gradients of its projection and of the hidden states, run on
    `device` in `dtype`, returned on the CPU in float64."""
    model = copy.deepcopy(model).to(device=device, dtype=dtype)
    x = hidden.to(device=device, dtype=dtype, copy=True).requires_grad_()
    result = model(x, mask.to(device), target_embeddings=targets.to(device=device, dtype=dtype))
    result["loss"].backward()
    got = (result["loss"], model.projection.weight.grad, model.projection.bias.grad, x.grad)
    return tuple(value.detach().cpu().double() for value in got)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.skipif(
    os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1",
    reason="TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 runs float32 products in TF32 whatever torch's flag",
)
def test_cuda_matches_a_float64_run_on_a_realistic_batch():
    # 32 windows of up to 20 tokens, ragged (1 to 20 real positions), the demo encoder's 128-d
    # projection, 300-d targets drawn from a Zipf distribution over 2,000 words (so the frequent
    # words repeat many times and the rare ones once), padding with other vectors.
    generator = torch.Generator().manual_seed(4)
    windows, timesteps, input_dim, target_dim = 32, 20, 128, 300
    lengths = torch.randint(1, timesteps + 1, (windows,), generator=generator)
    lengths[0] = timesteps
    mask = torch.arange(timesteps).unsqueeze(0) < lengths.unsqueeze(1)
    hidden = torch.randn(windows, timesteps, input_dim, generator=generator)
    table = torch.randn(2000, target_dim, generator=generator) / target_dim**0.5
    zipf = 1.0 / torch.arange(1, 2001, dtype=torch.float64)
    ids = torch.multinomial(zipf, windows * timesteps, replacement=True, generator=generator)
    targets = table[ids].view(windows, timesteps, target_dim)
    targets[~mask] = torch.randn(int((~mask).sum()), target_dim, generator=generator)
    real_ids = ids.view(windows, timesteps)[mask]
    assert torch.bincount(real_ids).max() >= 10  # the batch does repeat words
    torch.manual_seed(5)
    model = ContinuousOutputHead(input_dim, target_dim, loss="in_batch_softmax")

    reference64 = run_on(model, hidden, targets, mask, "cpu", torch.float64)
    cpu32 = run_on(model, hidden, targets, mask, "cpu", torch.float32)
    # TF32 products (10-bit mantissas) would be 10-100x the allowed error: float32 is the claim.
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        cuda32 = run_on(model, hidden, targets, mask, "cuda", torch.float32)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    for got, expected32, expected64 in zip(cuda32, cpu32, reference64):
        assert_float32_as_good_as_the_reference(got, expected32, expected64)
    # The padding's hidden states get no gradient on the GPU either.
    assert torch.equal(cuda32[3][~mask], torch.zeros_like(cuda32[3][~mask]))


def test_padding_does_not_change_the_loss_or_gradients():
    hidden, targets, mask = padded_batch(seed=1)
    results = []
    for poison in ("none", "garbage", "real words"):
        model = head(seed=2)
        x, t = hidden.clone(), targets.clone()
        padding = ~mask
        if poison == "garbage":
            t[padding] = float("nan")
            t[1, 3, 0] = float("inf")
            x[padding] = 1e4 * torch.randn(int(padding.sum()), INPUT)
        elif poison == "real words":  # copies of real positions' targets in the padding
            t[padding] = t[0, 0].clone()
        x.requires_grad_()
        result = model(x, mask, target_embeddings=t)
        result["loss"].backward()
        results.append((result["loss"].detach(), model.projection.weight.grad, x.grad))
    for loss, weight_grad, x_grad in results[1:]:
        torch.testing.assert_close(loss, results[0][0])
        torch.testing.assert_close(weight_grad, results[0][1])
        torch.testing.assert_close(x_grad[mask], results[0][2][mask])
        assert torch.equal(x_grad[~mask], torch.zeros_like(x_grad[~mask]))


def test_padding_targets_are_not_negatives():
    # The same real positions with and without padded rows (whose targets are other words).
    hidden, targets, mask = padded_batch(seed=3)
    model = head()
    with torch.no_grad():
        padded = model(hidden, mask, target_embeddings=targets)
        real = hidden[mask].unsqueeze(0), targets[mask].unsqueeze(0)
        packed = model(real[0], torch.ones(1, sum(LENGTHS), dtype=torch.bool),
                       target_embeddings=real[1])  # fmt: skip
    torch.testing.assert_close(padded["loss"], packed["loss"])


def test_one_word_batch_has_loss_zero():
    hidden, _, mask = padded_batch()
    targets = torch.randn(TARGET).expand(3, max(LENGTHS), TARGET)
    result = head()(hidden, mask, target_embeddings=targets)
    assert result["loss"].item() == 0.0 and result["count"].item() == sum(LENGTHS)


def test_empty_mask():
    hidden, targets, mask = padded_batch()
    result = head()(hidden, torch.zeros_like(mask), target_embeddings=targets)
    assert result["loss"].item() == 0.0 and result["count"].item() == 0


def test_autocast_runs_the_loss_in_float32():
    model = head()
    hidden, targets, mask = padded_batch()
    with torch.no_grad():
        expected = model(hidden, mask, target_embeddings=targets)["loss"]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = model(hidden, mask, target_embeddings=targets)["loss"]
    assert got.dtype == torch.float32
    # Only the projection runs in bfloat16 (8 bits of mantissa), amplified by 1 / temperature.
    assert got.item() == pytest.approx(expected.item(), rel=0.05)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"loss": "in_batch_softmax", "temperature": 0.0}, "finite and > 0"),
        ({"loss": "in_batch_softmax", "temperature": -0.1}, "finite and > 0"),
        ({"loss": "in_batch_softmax", "temperature": float("nan")}, "finite and > 0"),
        ({"loss": "in_batch_softmax", "temperature": float("inf")}, "finite and > 0"),
        ({"loss": "cosine", "temperature": 0.1}, "only applies"),
        ({"loss": "vmf", "temperature": 0.1}, "only applies"),
        ({"loss": "in_batch_softmax", "vmf_lambda_1": 0.1}, "vmf_lambda"),
    ],
)
def test_bad_configuration(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        ContinuousOutputHead(INPUT, TARGET, **kwargs)


def test_from_params_passes_the_temperature_on():
    def build(**extra):
        params = {"type": "continuous", "input_dim": INPUT, "target_dim": TARGET, **extra}
        torch.manual_seed(0)
        return OutputHead.from_params(Params(params))

    default = build(loss="in_batch_softmax")
    sharper = build(loss="in_batch_softmax", temperature=0.01)
    assert default.loss_name == sharper.loss_name == "in_batch_softmax"
    assert default._loss.temperature == DEFAULT_TEMPERATURE
    assert sharper._loss.temperature == 0.01
    hidden, targets, mask = padded_batch()
    with torch.no_grad():
        losses = [m(hidden, mask, target_embeddings=targets)["loss"] for m in (default, sharper)]
    assert not torch.isclose(losses[0], losses[1])
    assert not hasattr(build(loss="cosine")._loss, "temperature")
