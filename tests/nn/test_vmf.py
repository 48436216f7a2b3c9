import math
from typing import Tuple

import mpmath
import numpy
import pytest
import scipy.special
import torch

from allennlp_elmo_c.nn import vmf
from allennlp_elmo_c.nn.vmf import log_vmf_normalizer, vmf_loss

ORDERS = [0, 0.5, 1, 4, 4.5, 14, 15.75, 16, 16.5, 49, 149, 150, 255.5, 511]
ARGUMENTS = numpy.logspace(-6, 5, 30)
DIMS = [2, 3, 10, 50, 300, 301, 1024]
KAPPAS = numpy.logspace(-6, 5, 20)


def log_bessel_iv(order: float, x: torch.Tensor) -> torch.Tensor:
    """log I_order(x) in float64 from `vmf`'s scaled Bessel function."""
    log_scaled, _ = vmf._log_scaled_bessel_and_ratio(order, x)
    return log_scaled + torch.xlogy(order, x.double())


def reference_log_iv(order: float, x: float) -> float:
    """log I_order(x) from scipy where the scaled `ive` is representable, else from mpmath."""
    scaled = scipy.special.ive(order, x)
    if 1e-300 < scaled < math.inf:
        return math.log(scaled) + x
    with mpmath.workdps(50):
        return float(mpmath.log(mpmath.besseli(order, x)))


def mp_log_normalizer(kappa: mpmath.mpf, dim: int) -> mpmath.mpf:
    order = mpmath.mpf(dim) / 2 - 1
    return (
        order * mpmath.log(kappa)
        - mpmath.mpf(dim) / 2 * mpmath.log(2 * mpmath.pi)
        - mpmath.log(mpmath.besseli(order, kappa))
    )


def reference_log_normalizer(kappa: float, dim: int) -> float:
    with mpmath.workdps(50):
        return float(mp_log_normalizer(mpmath.mpf(kappa), dim))


def reference_normalizer_derivative(kappa: float, dim: int) -> float:
    """Central finite difference of the 50-digit reference, step 1e-15 relative."""
    with mpmath.workdps(50):
        kappa = mpmath.mpf(kappa)
        step = kappa * mpmath.mpf("1e-15")
        difference = mp_log_normalizer(kappa + step, dim) - mp_log_normalizer(kappa - step, dim)
        return float(difference / (2 * step))


def uniform_log_normalizer(dim: int) -> float:
    return math.lgamma(dim / 2) - math.log(2) - dim / 2 * math.log(math.pi)


def relative_error(value: float, reference: float) -> float:
    """Relative error, absolute where |reference| < 1."""
    return abs(value - reference) / max(1.0, abs(reference))


def test_log_bessel_iv_matches_scipy_and_mpmath():
    worst: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    for order in ORDERS:
        values = log_bessel_iv(order, torch.tensor(ARGUMENTS, dtype=torch.float64))
        for x, value in zip(ARGUMENTS, values.tolist()):
            error = relative_error(value, reference_log_iv(order, x))
            worst = max(worst, (error, order, x))
    assert worst[0] <= 1e-9, f"worst relative error {worst[0]:.3g} at v={worst[1]}, x={worst[2]}"


@pytest.mark.parametrize("order, x", [(149, 1e-3), (149, 0.5), (511, 1e5), (511, 1e-6), (0, 1e5)])
def test_log_bessel_iv_where_scipy_underflows_or_overflows(order: float, x: float):
    scaled = scipy.special.ive(order, x)
    unscaled = scipy.special.iv(order, x)
    assert scaled == 0 or unscaled == 0 or math.isinf(unscaled)
    with mpmath.workdps(50):
        reference = float(mpmath.log(mpmath.besseli(order, x)))
    value = log_bessel_iv(order, torch.tensor([x], dtype=torch.float64)).item()
    assert relative_error(value, reference) <= 1e-12


def test_log_bessel_iv_edge_cases():
    zero = torch.zeros(2, dtype=torch.float64)
    assert log_bessel_iv(0, zero).abs().max().item() < 1e-12
    assert torch.isneginf(log_bessel_iv(2.5, zero)).all()
    assert torch.isfinite(log_bessel_iv(7, torch.tensor([1e-6, 1.0, 1e5]))).all()


def test_log_vmf_normalizer_matches_mpmath():
    worst: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    for dim in DIMS:
        values = log_vmf_normalizer(torch.tensor(KAPPAS, dtype=torch.float64), dim)
        for kappa, value in zip(KAPPAS, values.tolist()):
            error = relative_error(value, reference_log_normalizer(kappa, dim))
            worst = max(worst, (error, dim, kappa))
    assert worst[0] <= 1e-9, f"worst relative error {worst[0]:.3g} at m={worst[1]}, k={worst[2]}"


@pytest.mark.parametrize("dim", DIMS)
def test_log_vmf_normalizer_at_zero_is_the_uniform_density(dim: int):
    kappa = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    value = log_vmf_normalizer(kappa, dim)
    value.sum().backward()
    assert value.detach().sub(uniform_log_normalizer(dim)).abs().max().item() < 1e-12
    assert kappa.grad is not None and kappa.grad.abs().max().item() == 0


@pytest.mark.parametrize("dim", [3, 300, 1024])
def test_log_vmf_normalizer_gradcheck(dim: int):
    kappa = torch.tensor([1e-3, 0.5, 10.0, 300.0, 5e3], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda k: log_vmf_normalizer(k, dim), (kappa,))


def test_log_vmf_normalizer_derivative_matches_mpmath():
    kappas = [1e-6, 1e-3, 0.5, 10.0, 149.0, 300.0, 5e3, 1e5]
    worst: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    for dim in [2, 3, 300, 1024]:
        kappa = torch.tensor(kappas, dtype=torch.float64, requires_grad=True)
        log_vmf_normalizer(kappa, dim).sum().backward()
        assert kappa.grad is not None
        for k, derivative in zip(kappas, kappa.grad.tolist()):
            reference = reference_normalizer_derivative(k, dim)
            worst = max(worst, (abs(derivative - reference) / abs(reference), dim, k))
    assert worst[0] <= 1e-8, f"worst relative error {worst[0]:.3g} at m={worst[1]}, k={worst[2]}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_log_vmf_normalizer_keeps_the_dtype(dtype: torch.dtype):
    kappa = torch.tensor([0.0, 1e-3, 1.0, 1e3, 1e5], dtype=dtype, requires_grad=True)
    value = log_vmf_normalizer(kappa, 300)
    value.sum().backward()
    assert value.dtype == dtype and kappa.grad is not None and kappa.grad.dtype == dtype
    assert torch.isfinite(value).all() and torch.isfinite(kappa.grad).all()
    expected = log_vmf_normalizer(kappa.detach().double(), 300)
    assert torch.allclose(value.double(), expected, rtol=1e-2 if dtype == torch.bfloat16 else 1e-6)


@pytest.mark.parametrize("dim", [1, 0, -3, 2.0, True, "300"])
def test_log_vmf_normalizer_rejects_bad_dims(dim):
    with pytest.raises(ValueError):
        log_vmf_normalizer(torch.ones(2), dim)


def reference_loss(
    predictions: numpy.ndarray, targets: numpy.ndarray, lambda_1: float, lambda_2: float
) -> numpy.ndarray:
    kappas = numpy.linalg.norm(predictions, axis=-1)
    dots = (predictions * targets).sum(-1) / numpy.linalg.norm(targets, axis=-1)
    dim = predictions.shape[-1]
    order = dim / 2 - 1
    log_normalizers = numpy.array(
        [order * math.log(k) - reference_log_iv(order, k) for k in kappas]
    ) - dim / 2 * math.log(2 * math.pi)
    return -log_normalizers - lambda_2 * dots + lambda_1 * kappas


@pytest.mark.parametrize("lambda_1, lambda_2", [(0.0, 1.0), (0.02, 1.0), (0.0, 0.1), (0.5, 0.7)])
def test_vmf_loss_matches_a_hand_computation(lambda_1: float, lambda_2: float):
    generator = numpy.random.default_rng(0)
    directions = generator.normal(size=(12, 300))
    norms = numpy.logspace(-3, 5, 12)
    units = directions / numpy.linalg.norm(directions, axis=-1, keepdims=True)
    predictions = units * norms[:, None]
    targets = generator.normal(size=(12, 300)) * 3
    loss = vmf_loss(torch.tensor(predictions), torch.tensor(targets), lambda_1, lambda_2)
    expected = reference_loss(predictions, targets, lambda_1, lambda_2)
    assert loss.shape == (12,) and loss.dtype == torch.float64
    assert numpy.allclose(loss.numpy(), expected, rtol=1e-10, atol=1e-9)


def test_vmf_loss_regularisers():
    predictions = torch.randn(2, 4, 50, dtype=torch.float64) * 5
    targets = torch.randn(2, 4, 50, dtype=torch.float64)
    kappa = predictions.norm(dim=-1)
    cosine = torch.nn.functional.cosine_similarity(predictions, targets, dim=-1)
    base = vmf_loss(predictions, targets)
    assert base.shape == (2, 4)
    assert torch.allclose(vmf_loss(predictions, targets, lambda_1=0.3), base + 0.3 * kappa)
    assert torch.allclose(
        vmf_loss(predictions, targets, lambda_2=0.25), base + 0.75 * kappa * cosine
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vmf_loss_is_finite_at_the_extremes(dtype: torch.dtype):
    dim = 300
    unit = torch.nn.functional.normalize(torch.randn(dim, dtype=torch.float64), dim=0)
    predictions = torch.stack([torch.zeros_like(unit), unit * 1e5, unit * 3.0, unit]).to(dtype)
    targets = torch.stack([unit, unit, torch.zeros(dim), -unit]).to(dtype)
    predictions.requires_grad_()
    targets.requires_grad_()
    loss = vmf_loss(predictions, targets, lambda_1=0.01, lambda_2=0.5)
    loss.sum().backward()
    assert loss.dtype == dtype and predictions.grad is not None and targets.grad is not None
    assert torch.isfinite(loss).all()
    assert torch.isfinite(predictions.grad).all() and torch.isfinite(targets.grad).all()
    rtol = 1e-6 if dtype == torch.float32 else 1e-12
    uniform = -uniform_log_normalizer(dim)
    assert math.isclose(loss[0].item(), uniform, rel_tol=rtol)
    # At a zero prediction only the direction term pulls: -lambda_2 * unit target.
    assert torch.allclose(predictions.grad[0].double(), -0.5 * unit, atol=1e-6)
    zero_target = -reference_log_normalizer(3.0, dim) + 0.03
    assert math.isclose(loss[2].item(), zero_target, rel_tol=rtol)


def test_vmf_loss_gradcheck():
    predictions = torch.randn(3, 20, dtype=torch.float64, requires_grad=True)
    targets = torch.randn(3, 20, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda p: vmf_loss(p, targets, 0.1, 0.8), (predictions,))


def test_vmf_loss_under_bfloat16_autocast_on_cpu():
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 300)
    inputs = torch.randn(8, 16)
    targets = torch.randn(8, 300)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        predictions = layer(inputs) * 20
        loss = vmf_loss(predictions, targets, lambda_1=0.01)
        same_dtype = vmf_loss(predictions.float(), targets)
    assert predictions.dtype == torch.bfloat16 and loss.dtype == torch.float32
    assert same_dtype.dtype == torch.float32
    loss.sum().backward()
    assert torch.isfinite(loss).all() and layer.weight.grad is not None
    assert torch.isfinite(layer.weight.grad).all()
    expected = vmf_loss(predictions.detach().double(), targets.double(), lambda_1=0.01)
    assert torch.allclose(loss.double(), expected, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs", [{"lambda_2": 0.0}, {"lambda_2": 1.5}, {"lambda_2": math.nan}, {"lambda_1": -0.1}]
)
def test_vmf_loss_rejects_bad_weights(kwargs):
    with pytest.raises(ValueError):
        vmf_loss(torch.ones(2, 3), torch.ones(2, 3), **kwargs)


def test_vmf_loss_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(2, 4\)"):
        vmf_loss(torch.ones(2, 3), torch.ones(2, 4))
    with pytest.raises(ValueError):
        vmf_loss(torch.tensor(1.0), torch.tensor(1.0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    kappa = torch.logspace(-6, 5, 50, dtype=torch.float64)
    for dim in [3, 300]:
        on_gpu = kappa.cuda().requires_grad_()
        on_cpu = kappa.clone().requires_grad_()
        value_gpu = log_vmf_normalizer(on_gpu, dim)
        value_cpu = log_vmf_normalizer(on_cpu, dim)
        value_gpu.sum().backward()
        value_cpu.sum().backward()
        assert value_gpu.device.type == "cuda"
        assert torch.allclose(value_gpu.cpu(), value_cpu, rtol=1e-12)
        assert on_gpu.grad is not None and on_cpu.grad is not None
        assert torch.allclose(on_gpu.grad.cpu(), on_cpu.grad, rtol=1e-12)
    predictions = torch.randn(4, 300, device="cuda", requires_grad=True)
    loss = vmf_loss(predictions, torch.randn(4, 300, device="cuda"))
    loss.sum().backward()
    assert loss.device.type == "cuda" and torch.isfinite(loss).all()
