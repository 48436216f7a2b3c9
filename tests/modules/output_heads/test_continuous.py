import numpy as np
import pytest
import torch
from scipy.spatial.distance import cosine as cosine_distance

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead
from allennlp_elmo_c.modules.output_heads.losses import ContinuousLoss
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.nn.continuous_losses import cosine_loss, l2_loss
from allennlp_elmo_c.nn.vmf import vmf_loss

INPUT, TARGET = 6, 5
LOSSES = ["cosine", "l2", "vmf"]


def batch(seed=0, lengths=(4, 2, 3)):
    generator = torch.Generator().manual_seed(seed)
    timesteps = max(lengths)
    mask = torch.arange(timesteps).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    hidden = torch.randn(len(lengths), timesteps, INPUT, generator=generator)
    targets = 2.0 * torch.randn(len(lengths), timesteps, TARGET, generator=generator)
    return hidden, targets, mask


def head(loss="cosine", seed=0, **kwargs) -> ContinuousOutputHead:
    torch.manual_seed(seed)
    return ContinuousOutputHead(INPUT, TARGET, loss=loss, **kwargs)


# ---------------------------------------------------------------------------------------------
# The losses against numpy / scipy
# ---------------------------------------------------------------------------------------------


def test_cosine_loss_is_one_minus_cosine():
    rng = np.random.default_rng(0)
    predictions, targets = rng.normal(size=(20, 7)), rng.normal(size=(20, 7)) * 3
    expected = [cosine_distance(p, t) for p, t in zip(predictions, targets)]
    got = cosine_loss(torch.from_numpy(predictions), torch.from_numpy(targets))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    # Same direction -> 0, opposite -> 2, any scale.
    p = torch.from_numpy(predictions[:3])
    torch.testing.assert_close(
        cosine_loss(p, 5 * p), torch.zeros(3, dtype=p.dtype), atol=1e-12, rtol=0
    )
    torch.testing.assert_close(cosine_loss(p, -0.1 * p), 2 * torch.ones(3, dtype=p.dtype))


def test_l2_loss_is_squared_distance():
    rng = np.random.default_rng(1)
    predictions, targets = rng.normal(size=(4, 3, 7)), rng.normal(size=(4, 3, 7))
    expected = ((predictions - targets) ** 2).sum(-1)
    got = l2_loss(torch.from_numpy(predictions), torch.from_numpy(targets))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("loss", ["cosine", "l2"])
def test_head_loss_matches_numpy_over_masked_positions(loss):
    model = head(loss)
    hidden, targets, mask = batch()
    with torch.no_grad():
        result = model(hidden, mask, target_embeddings=targets)
        predictions = model.projection(hidden).double().numpy()
    assert result["predictions"].shape == (3, 4, TARGET)
    np.testing.assert_allclose(result["predictions"].numpy(), predictions, rtol=1e-6, atol=1e-6)
    expected = 0.0
    for row, column in mask.nonzero().tolist():
        p, t = predictions[row, column], targets[row, column].double().numpy()
        expected += cosine_distance(p, t) if loss == "cosine" else ((p - t) ** 2).sum()
    assert result["loss"].dim() == 0
    assert result["loss"].item() == pytest.approx(expected, rel=1e-5)
    assert result["count"].item() == int(mask.sum()) == 9


def test_vmf_head_delegates_to_vmf_loss():
    model = head("vmf", vmf_lambda_1=0.02, vmf_lambda_2=0.3)
    hidden, targets, mask = batch()
    with torch.no_grad():
        result = model(hidden, mask, target_embeddings=targets)
        predictions = model.projection(hidden)
        expected = vmf_loss(predictions[mask], targets[mask], lambda_1=0.02, lambda_2=0.3).sum()
        default = vmf_loss(predictions[mask], targets[mask]).sum()
    torch.testing.assert_close(result["loss"], expected)
    assert not torch.isclose(expected, default)  # the lambdas are really passed on
    assert result["count"].item() == 9


# ---------------------------------------------------------------------------------------------
# Masking
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_padding_with_nan_and_inf_targets_changes_nothing(loss):
    hidden, targets, mask = batch(seed=3)
    results = []
    for poison in (False, True):
        model = head(loss, seed=1)
        x = hidden.clone()
        t = targets.clone()
        if poison:
            padding = ~mask
            t[padding] = float("nan")
            t[1, 2:, 0] = float("inf")
            t[2, 3, 1] = -float("inf")
            x[padding] = 1e4 * torch.randn(int(padding.sum()), INPUT)  # finite garbage in padding
        x.requires_grad_()
        result = model(x, mask, target_embeddings=t)
        result["loss"].backward()
        grads = [p.grad.clone() for p in model.parameters()]
        results.append(
            (result["loss"].detach(), result["count"], grads, x.grad[mask].clone(), x.grad[~mask])
        )
    clean_loss, clean_count, clean_grads, clean_x, _ = results[0]
    loss_value, count, grads, x_grad, x_pad_grad = results[1]
    assert torch.isfinite(loss_value)
    torch.testing.assert_close(loss_value, clean_loss)
    assert count.item() == clean_count.item() == int(mask.sum())
    for got, expected in zip(grads, clean_grads):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x_grad, clean_x)
    assert torch.equal(x_pad_grad, torch.zeros_like(x_pad_grad))


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_is_a_sum_over_masked_positions(loss):
    model = head(loss)
    hidden, targets, mask = batch()
    with torch.no_grad():
        whole = model(hidden, mask, target_embeddings=targets)
        parts = [
            model(
                hidden[row : row + 1], mask[row : row + 1], target_embeddings=targets[row : row + 1]
            )
            for row in range(3)
        ]
        empty = model(hidden, torch.zeros_like(mask), target_embeddings=targets)
    torch.testing.assert_close(whole["loss"], sum(part["loss"] for part in parts))
    assert [part["count"].item() for part in parts] == [4, 2, 3]
    assert empty["loss"].item() == 0.0 and empty["count"].item() == 0


# ---------------------------------------------------------------------------------------------
# Zero vectors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_zero_targets_and_zero_predictions_are_finite(loss):
    model = head(loss)
    with torch.no_grad():
        model.projection.bias.zero_()
    hidden, targets, mask = batch()
    hidden = hidden.clone()
    hidden[0] = 0.0  # row 0: zero predictions (zero bias)
    targets = targets.clone()
    targets[1] = 0.0  # row 1: zero targets
    targets[0, 1] = 0.0  # both zero
    hidden.requires_grad_()
    result = model(hidden, mask, target_embeddings=targets)
    assert torch.isfinite(result["loss"])
    result["loss"].backward()
    assert torch.isfinite(hidden.grad).all()
    for name, parameter in model.named_parameters():
        assert torch.isfinite(parameter.grad).all(), name
    # The loss functions themselves, on a zero prediction against a zero and a non-zero target.
    with torch.no_grad():
        predictions = model.projection(hidden)
        assert torch.equal(predictions[0], torch.zeros_like(predictions[0]))
    p = torch.zeros(2, TARGET, requires_grad=True)
    t = torch.stack([torch.zeros(TARGET), torch.ones(TARGET)])
    values = ContinuousLoss.by_name(loss)()(p, t)
    assert torch.isfinite(values).all()
    values.sum().backward()
    assert torch.isfinite(p.grad).all()
    if loss == "cosine":  # a zero vector counts as orthogonal
        torch.testing.assert_close(values, torch.ones(2))


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"loss": "softmax"},
        {"loss": "Cosine"},
        {"loss": "cosine", "vmf_lambda_1": 0.1},
        {"loss": "l2", "vmf_lambda_2": 0.5},
        {"loss": "vmf", "vmf_lambda_2": 0.0},
        {"loss": "vmf", "vmf_lambda_2": 1.5},
        {"loss": "vmf", "vmf_lambda_2": -0.5},
        {"loss": "vmf", "vmf_lambda_1": -0.1},
    ],
)
def test_bad_configuration(kwargs):
    with pytest.raises(ConfigurationError):
        ContinuousOutputHead(INPUT, TARGET, **kwargs)


def test_good_vmf_configuration():
    model = ContinuousOutputHead(INPUT, TARGET, loss="vmf", vmf_lambda_1=0.0, vmf_lambda_2=1.0)
    assert model.loss_name == "vmf"
    ContinuousOutputHead(INPUT, TARGET, loss="vmf", vmf_lambda_1=0.5, vmf_lambda_2=0.01)


def test_target_dimension_mismatch_and_missing_targets():
    model = head("cosine")
    hidden, targets, mask = batch()
    with pytest.raises(ConfigurationError, match="dimension"):
        model(hidden, mask, target_embeddings=torch.randn(3, 4, TARGET + 1))
    with pytest.raises(ConfigurationError):
        model(hidden, mask)
    with pytest.raises(ConfigurationError):
        model(hidden, mask, target_ids=torch.zeros(3, 4, dtype=torch.long))


def test_from_params():
    model = OutputHead.from_params(Params({"type": "continuous", "input_dim": 4, "target_dim": 3}))
    assert isinstance(model, ContinuousOutputHead)
    assert (model.input_dim, model.target_dim, model.loss_name) == (4, 3, "cosine")
    assert model.projection.weight.shape == (3, 4)
    model = OutputHead.from_params(
        Params(
            {
                "type": "continuous",
                "input_dim": 4,
                "target_dim": 3,
                "loss": "vmf",
                "vmf_lambda_2": 0.5,
            }
        )
    )
    assert model.loss_name == "vmf"
    with pytest.raises(ConfigurationError):
        OutputHead.from_params(
            Params({"type": "continuous", "input_dim": 4, "target_dim": 3, "loss": "dot"})
        )
    # Target embeddings can be float64/float16 (e.g. straight from a .bin); the head casts them.
    hidden = torch.randn(2, 3, 4)
    mask = torch.ones(2, 3, dtype=torch.bool)
    result = model(hidden, mask, target_embeddings=torch.randn(2, 3, 3, dtype=torch.float64))
    assert result["loss"].dtype == torch.float32
