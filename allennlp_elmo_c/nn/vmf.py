"""
Numerics of the von Mises-Fisher (vMF) loss of Kumar & Tsvetkov (ICLR 2019), "Von Mises-Fisher
Loss for Training Sequence to Sequence Models with Continuous Outputs".

For a predicted vector `e` of dimension `m`, `kappa = ||e||` and a unit target `u`,

    NLLvMF(e; u) = -log C_m(kappa) - lambda_2 * e.u + lambda_1 * kappa,
    log C_m(kappa) = (m/2 - 1) log kappa - (m/2) log(2 pi) - log I_{m/2-1}(kappa),
    d log C_m / d kappa = -I_{m/2}(kappa) / I_{m/2-1}(kappa),

with `I_v` the modified Bessel function of the first kind, which under- and overflows. Here, in
float64 on the tensor's device, `s_v(x) = log(I_v(x) / x^v)` and `q_v(x) = I_{v+1}(x) / (x I_v(x))`,
finite down to `x = 0`, give `log C_m(kappa) = -(m/2) log(2 pi) - s_{m/2-1}(kappa)` and its
derivative `-kappa q_{m/2-1}(kappa)`. For `v >= 16` they come from the Debye uniform asymptotic
expansion (DLMF 10.41.3, 12 terms; `rho = sqrt(v^2 + x^2)`, `t = v / rho`):
`s_v(x) = rho - v log(v + rho) - log(2 pi rho) / 2 + log(sum_k u_k(t) / v^k)`,
`q_v = exp(s_{v+1} - s_v)`; below, from order `v + n >= 16` down the stable backward recurrence
`q_{k-1} = 1 / (2k + x^2 q_k)`, `s_{k-1} = s_k + log(2k + x^2 q_k)`.
"""

import functools
import math
from fractions import Fraction
from typing import Tuple

import torch
from torch.autograd.function import FunctionCtx, once_differentiable


# Orders below this are evaluated at a higher order and brought down by the recurrence.
_MIN_DEBYE_ORDER = 16
# Terms u_0(t) ... u_11(t) of the Debye expansion: about 1e-14 relative error at order 16.
_DEBYE_TERMS = 12
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@functools.lru_cache(maxsize=None)
def _debye_polynomials() -> Tuple[Tuple[Fraction, ...], ...]:
    """
    Exact coefficients, in increasing powers of `t`, of the Debye polynomials `u_k(t)`, from
    `u_{k+1}(t) = t^2 (1 - t^2) u_k'(t) / 2 + int_0^t (1 - 5 s^2) u_k(s) ds / 8` (DLMF 10.41.9).
    """
    polynomials = [[Fraction(1)]]
    for _ in range(_DEBYE_TERMS - 1):
        previous = polynomials[-1]
        polynomial = [Fraction(0)] * (len(previous) + 3)
        for i, coefficient in enumerate(previous):
            polynomial[i + 1] += i * coefficient / 2 + coefficient / (8 * (i + 1))
            polynomial[i + 3] -= i * coefficient / 2 + 5 * coefficient / (8 * (i + 3))
        polynomials.append(polynomial)
    return tuple(tuple(polynomial) for polynomial in polynomials)


@functools.lru_cache(maxsize=128)
def _debye_series_coefficients(order: float) -> Tuple[float, ...]:
    """Coefficients of `sum_k u_k(t) / order^k` as one polynomial in `t`, highest power first."""
    inverse_order = 1 / Fraction(order)
    combined = [Fraction(0)] * (3 * _DEBYE_TERMS - 2)
    for k, polynomial in enumerate(_debye_polynomials()):
        for power, coefficient in enumerate(polynomial):
            combined[power] += coefficient * inverse_order**k
    return tuple(float(coefficient) for coefficient in reversed(combined))


def _debye_log_scaled_bessel(order: float, x: torch.Tensor) -> torch.Tensor:
    """`s_order(x) = log(I_order(x) / x^order)` from the Debye expansion, for `order >= 16`."""
    rho = torch.sqrt(x * x + order * order)
    t = order / rho
    coefficients = _debye_series_coefficients(order)
    series = torch.full_like(x, coefficients[0])
    for coefficient in coefficients[1:]:
        series = series * t + coefficient
    log_exponential = rho - order * torch.log(order + rho)
    return log_exponential - 0.5 * torch.log(rho) - _HALF_LOG_2PI + torch.log(series)


def _log_scaled_bessel_and_ratio(
    order: float, x: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """`s_v(x)` and `q_v(x)` for `v = order`, in float64, finite for every `x >= 0`."""
    x = x.to(torch.float64)
    steps = max(0, math.ceil(_MIN_DEBYE_ORDER - order))
    top = order + steps
    log_scaled = _debye_log_scaled_bessel(top, x)
    ratio = torch.exp(_debye_log_scaled_bessel(top + 1, x) - log_scaled)
    x_squared = x * x
    for k in range(steps):
        # From q_n and s_n to q_{n-1} and s_{n-1}, for n = top, top - 1, ..., order + 1.
        denominator = 2 * (top - k) + x_squared * ratio
        ratio = 1 / denominator
        log_scaled = log_scaled + torch.log(denominator)
    return log_scaled, ratio


class _LogVmfNormalizer(torch.autograd.Function):
    """`log C_m(kappa)`, differentiated with the Bessel ratio rather than through its series."""

    @staticmethod
    def forward(ctx: FunctionCtx, kappa: torch.Tensor, dim: int) -> torch.Tensor:
        log_scaled, ratio = _log_scaled_bessel_and_ratio(dim / 2 - 1, kappa)
        # d log C_m / d kappa = -I_{m/2}(kappa) / I_{m/2-1}(kappa) = -kappa q_{m/2-1}(kappa).
        ctx.save_for_backward(kappa.to(torch.float64) * ratio)
        return (-dim * _HALF_LOG_2PI - log_scaled).to(kappa.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None]:
        (bessel_ratio,) = ctx.saved_tensors  # type: ignore
        return (-grad_output.to(torch.float64) * bessel_ratio).to(grad_output.dtype), None


def log_vmf_normalizer(kappa: torch.Tensor, dim: int) -> torch.Tensor:
    """`log C_m(kappa)` of the vMF density on the unit sphere of `R^dim` for floating
    `kappa >= 0` (any shape, its dtype kept), finite at 0; not differentiable twice."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
        raise ValueError(f"log_vmf_normalizer needs an int dim >= 2, got {dim!r}.")
    return _LogVmfNormalizer.apply(kappa, dim)


def vmf_loss(
    predictions: torch.Tensor,
    targets: torch.Tensor,
    lambda_1: float = 0.0,
    lambda_2: float = 1.0,
) -> torch.Tensor:
    """
    NLLvMF with the paper's regularisers, `(..., m) x (..., m) -> (...)` in the inputs' promoted
    dtype: `-log C_m(||e||) - lambda_2 * e . (t / ||t||) + lambda_1 * ||e||` (`lambda_1 >= 0`,
    `0 < lambda_2 <= 1`). A zero prediction gives the uniform density's value, a zero target no
    direction term.
    """
    if not 0.0 < lambda_2 <= 1.0:
        raise ValueError(f"vmf_loss needs 0 < lambda_2 <= 1, got {lambda_2}.")
    if not lambda_1 >= 0.0:
        raise ValueError(f"vmf_loss needs lambda_1 >= 0, got {lambda_1}.")
    if predictions.dim() == 0 or targets.dim() == 0 or predictions.shape[-1] != targets.shape[-1]:
        raise ValueError(
            "vmf_loss needs predictions and targets of shape (..., m) with the same m, got "
            f"{tuple(predictions.shape)} and {tuple(targets.shape)}."
        )
    dtype = torch.promote_types(predictions.dtype, targets.dtype)
    predictions = predictions.to(dtype)
    targets = targets.to(dtype)
    # vector_norm's gradient at a zero vector is 0, and the normaliser is finite at kappa = 0.
    kappa = torch.linalg.vector_norm(predictions, dim=-1)
    target_norms = torch.linalg.vector_norm(targets, dim=-1, keepdim=True)
    unit_targets = targets / target_norms.clamp_min(torch.finfo(dtype).tiny)
    dot = (predictions * unit_targets).sum(dim=-1)
    loss = -log_vmf_normalizer(kappa, predictions.shape[-1]) - lambda_2 * dot
    if lambda_1 > 0:
        loss = loss + lambda_1 * kappa
    return loss.to(dtype)
