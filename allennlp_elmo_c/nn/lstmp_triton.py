"""
The per-step pointwise work of `allennlp_elmo_c.nn.lstmp`'s LSTMP cell as Triton kernels (GPU).

Between its two matrix products a step of the cell does a dozen small pointwise operations
forward (gate activations, cell update, clips and their masks, tanh, LayerNorm, dropout) and
about twice as many backward; run as torch ops, even inside a captured CUDA graph, each is a
kernel launch and a round trip through memory. Here they are five kernels, each reading its
inputs once and writing everything the rest of the pass needs:

forward, per step t, after `gates[t] += h_{t-1} W_hh^T`:
    `cell_forward`        over (row, cell): activations written over `gates[t]`, c_t (clipped),
                          the clip's keep mask, tanh(c_t), and m_t = o * tanh(c_t) for `W_hr`;
    `projection_forward`  over rows: p_t clipped in place (and its keep mask), LayerNorm (mean,
                          1 / std) and h_t = LayerNorm(p_t) * dropout, emitted and fed back;
backward, per step t (every row, results kept for the rows still running):
    `projection_backward` over rows: (carry + dL/dh_t) * dropout, LayerNorm backward, clip mask;
    `gate_backward`       over (row, cell): dL/d(gate pre-activations), the cell carry;
    `carry_backward`      over (row, projection): the hidden carry dL/d(gates) W_hh.

The math is exactly `lstmp_torch`'s, the same five functions as torch ops (values agree to float32
rounding; tests/nn/test_lstmp_triton.py). The kernels run on float32 only (the recurrence runs in
float32 under autocast too, see `lstm_with_projection`); `lstmp.pointwise_kernels` falls back to
`lstmp_torch` for any other dtype and on CPU. LayerNorm statistics are those of
`torch.native_layer_norm` (biased variance, rstd = 1 / sqrt(var + eps)), accumulated in float32.
Each launch has a grid fixed by the shapes and no host synchronisation: capturable in a CUDA
graph. The rows of a LayerNorm or its backward live in one program (`projection_size` up to a
few thousand).
"""

from typing import Optional

import torch
import triton
import triton.language as tl

# Columns of the cell state per program of the (row, cell) kernels.
CELL_BLOCK = 1024


@triton.jit
def _tanh(x):
    # libdevice's tanh is not available to Triton's CPU interpreter (the tests run the kernels
    # there); this is accurate to a few float32 ulps: an odd Taylor polynomial near zero (terms
    # to x^9, truncation below 4e-9 relative for |x| < 1/4), (1 - e^-2|x|) / (1 + e^-2|x|) beyond.
    a = tl.abs(x)
    e = tl.exp(-2.0 * a)
    far = (1.0 - e) / (1.0 + e)
    s = x * x
    near = a * (
        1.0 + s * (-1.0 / 3.0 + s * (2.0 / 15.0 + s * (-17.0 / 315.0 + s * (62.0 / 2835.0))))
    )
    t = tl.where(a < 0.25, near, far)
    return tl.where(x < 0.0, -t, t)


@triton.jit
def _cell_forward_kernel(
    gates, cells_prev, cells_next, cell_keep, tanh_cells, memory, cell_size, clip,
    CLIP: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = columns < cell_size
    gate_row = gates + row * 4 * cell_size + columns
    i = tl.sigmoid(tl.load(gate_row, mask=mask, other=0.0))
    f = tl.sigmoid(tl.load(gate_row + cell_size, mask=mask, other=0.0))
    g = _tanh(tl.load(gate_row + 2 * cell_size, mask=mask, other=0.0))
    o = tl.sigmoid(tl.load(gate_row + 3 * cell_size, mask=mask, other=0.0))
    tl.store(gate_row, i, mask=mask)
    tl.store(gate_row + cell_size, f, mask=mask)
    tl.store(gate_row + 2 * cell_size, g, mask=mask)
    tl.store(gate_row + 3 * cell_size, o, mask=mask)
    offsets = row * cell_size + columns
    c = f * tl.load(cells_prev + offsets, mask=mask, other=0.0) + i * g
    if CLIP:
        tl.store(cell_keep + offsets, (c >= -clip) & (c <= clip), mask=mask)
        c = tl.clamp(c, -clip, clip, propagate_nan=tl.PropagateNan.ALL)
    tl.store(cells_next + offsets, c, mask=mask)
    tanh_c = _tanh(c)
    tl.store(tanh_cells + offsets, tanh_c, mask=mask)
    tl.store(memory + offsets, o * tanh_c, mask=mask)


@triton.jit
def _projection_forward_kernel(
    projected, keep, hiddens, means, rstds, weight, bias, dropout, size, clip, eps,
    CLIP: tl.constexpr, NORM: tl.constexpr, DROPOUT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    columns = tl.arange(0, BLOCK)
    mask = columns < size
    offsets = row * size + columns
    p = tl.load(projected + offsets, mask=mask, other=0.0).to(tl.float32)
    if CLIP:
        tl.store(keep + offsets, (p >= -clip) & (p <= clip), mask=mask)
        p = tl.clamp(p, -clip, clip, propagate_nan=tl.PropagateNan.ALL)
        tl.store(projected + offsets, p, mask=mask)
    if NORM:
        mean = tl.sum(p, axis=0) / size
        centred = tl.where(mask, p - mean, 0.0)
        variance = tl.sum(centred * centred, axis=0) / size
        rstd = 1.0 / tl.sqrt_rn(variance + eps)
        tl.store(means + row, mean)
        tl.store(rstds + row, rstd)
        w = tl.load(weight + columns, mask=mask, other=0.0)
        b = tl.load(bias + columns, mask=mask, other=0.0)
        h = centred * rstd * w + b
    else:
        h = p
    if DROPOUT:
        h = h * tl.load(dropout + offsets, mask=mask, other=0.0)
    tl.store(hiddens + offsets, h, mask=mask)


@triton.jit
def _projection_backward_kernel(
    dh_carry, grad_outputs, projected, means, rstds, weight, keep, dropout, running,
    grad_hiddens, grad_projected, size, grad_outputs_stride, CLIP: tl.constexpr,
    NORM: tl.constexpr, DROPOUT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    columns = tl.arange(0, BLOCK)
    mask = columns < size
    offsets = row * size + columns
    dh = tl.load(dh_carry + offsets, mask=mask, other=0.0)
    dh = dh + tl.load(grad_outputs + row * grad_outputs_stride + columns, mask=mask, other=0.0)
    if DROPOUT:  # dL/dn_t, the state before its dropout
        dh = dh * tl.load(dropout + offsets, mask=mask, other=0.0)
    if NORM:
        p = tl.load(projected + offsets, mask=mask, other=0.0)
        mean = tl.load(means + row)
        rstd = tl.load(rstds + row)
        w = tl.load(weight + columns, mask=mask, other=0.0)
        normalised = tl.where(mask, (p - mean) * rstd, 0.0)
        scaled = dh * w  # zero past the row's end
        mean_scaled = tl.sum(scaled, axis=0) / size
        mean_projection = tl.sum(scaled * normalised, axis=0) / size
        dp = (scaled - mean_scaled - normalised * mean_projection) * rstd
    else:
        dp = dh
    if CLIP:
        dp = dp * tl.load(keep + offsets, mask=mask, other=0).to(tl.float32)
    runs = tl.load(running + row) != 0
    tl.store(grad_hiddens + offsets, tl.where(runs, dh, 0.0), mask=mask)
    tl.store(grad_projected + offsets, tl.where(runs, dp, 0.0), mask=mask)


@triton.jit
def _gate_backward_kernel(
    dm, dc_carry, gates, cells_prev, tanh_cells, cell_keep, running, grad_gates, cell_size,
    CLIP: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = columns < cell_size
    offsets = row * cell_size + columns
    gate_row = row * 4 * cell_size + columns
    i = tl.load(gates + gate_row, mask=mask, other=0.0)
    f = tl.load(gates + gate_row + cell_size, mask=mask, other=0.0)
    g = tl.load(gates + gate_row + 2 * cell_size, mask=mask, other=0.0)
    o = tl.load(gates + gate_row + 3 * cell_size, mask=mask, other=0.0)
    tanh_c = tl.load(tanh_cells + offsets, mask=mask, other=0.0)
    dm_ = tl.load(dm + offsets, mask=mask, other=0.0)
    carry = tl.load(dc_carry + offsets, mask=mask, other=0.0)
    dc = carry + dm_ * o * (1.0 - tanh_c * tanh_c)
    if CLIP:
        dc = dc * tl.load(cell_keep + offsets, mask=mask, other=0).to(tl.float32)
    c = tl.load(cells_prev + offsets, mask=mask, other=0.0)
    runs = tl.load(running + row) != 0
    tl.store(grad_gates + gate_row, tl.where(runs, (dc * g) * (i * (1.0 - i)), 0.0), mask=mask)
    tl.store(grad_gates + gate_row + cell_size,
             tl.where(runs, (dc * c) * (f * (1.0 - f)), 0.0), mask=mask)  # fmt: skip
    tl.store(grad_gates + gate_row + 2 * cell_size,
             tl.where(runs, (dc * i) * (1.0 - g * g), 0.0), mask=mask)  # fmt: skip
    tl.store(grad_gates + gate_row + 3 * cell_size,
             tl.where(runs, (dm_ * tanh_c) * (o * (1.0 - o)), 0.0), mask=mask)  # fmt: skip
    tl.store(dc_carry + offsets, tl.where(runs, dc * f, carry), mask=mask)


@triton.jit
def _carry_backward_kernel(dr, running, dh_carry, size, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    columns = tl.arange(0, BLOCK)
    mask = columns < size
    offsets = row * size + columns
    value = tl.load(dr + offsets, mask=mask, other=0.0)
    runs = tl.load(running + row) != 0
    carry = tl.load(dh_carry + offsets, mask=mask, other=0.0)
    tl.store(dh_carry + offsets, tl.where(runs, value, carry), mask=mask)


def _block(size: int) -> int:
    return triton.next_power_of_2(size)


def _check(*tensors: Optional[torch.Tensor]) -> None:
    # Shape checks only (host metadata): no synchronisation, capturable.
    for tensor in tensors:
        if tensor is not None and not tensor.is_contiguous():
            raise ValueError("lstmp_triton: every tensor must be contiguous")


def cell_forward(
    gates: torch.Tensor,
    cells_prev: torch.Tensor,
    cells_next: torch.Tensor,
    cell_keep: torch.Tensor,
    tanh_cells: torch.Tensor,
    memory: torch.Tensor,
    cell_clip: Optional[float],
) -> None:
    """
    One step's cell: `gates` `(batch, 4 * cell)` (pre-activations, overwritten by i, f, g, o),
    `cells_prev` c_{t-1}; writes c_t (clipped), `cell_keep` (where the clip let c_t through;
    untouched without a clip), tanh(c_t) and `memory` = o * tanh(c_t), all `(batch, cell)`.
    """
    _check(gates, cells_prev, cells_next, cell_keep, tanh_cells, memory)
    batch, cell_size = cells_prev.shape
    grid = (batch, triton.cdiv(cell_size, CELL_BLOCK))
    _cell_forward_kernel[grid](
        gates, cells_prev, cells_next, cell_keep, tanh_cells, memory, cell_size,
        0.0 if cell_clip is None else cell_clip, CLIP=cell_clip is not None, BLOCK=CELL_BLOCK,
    )  # fmt: skip


def projection_forward(
    projected: torch.Tensor,
    projection_keep: torch.Tensor,
    hiddens: torch.Tensor,
    means: Optional[torch.Tensor],
    rstds: Optional[torch.Tensor],
    norm_weight: Optional[torch.Tensor],
    norm_bias: Optional[torch.Tensor],
    norm_eps: float,
    projection_clip: Optional[float],
    dropout: Optional[torch.Tensor],
) -> None:
    """
    One step's projected state `projected` `(batch, projection)`: clipped in place (with
    `projection_keep`), then h_t = LayerNorm(p_t) * dropout into `hiddens` with `means`, `rstds`
    `(batch, 1)` (without `norm_weight` p_t in place of LayerNorm(p_t); without `dropout` no
    mask): the state emitted and fed back into W_hh.
    """
    _check(projected, projection_keep, hiddens, means, rstds, dropout)
    batch, size = projected.shape
    normalise, drop = norm_weight is not None, dropout is not None
    _projection_forward_kernel[(batch,)](
        projected, projection_keep, hiddens,
        means if normalise else projected, rstds if normalise else projected,
        norm_weight if normalise else projected, norm_bias if normalise else projected,
        dropout if drop else projected, size,
        0.0 if projection_clip is None else projection_clip, norm_eps,
        CLIP=projection_clip is not None, NORM=normalise, DROPOUT=drop, BLOCK=_block(size),
    )  # fmt: skip


def projection_backward(
    dh_carry: torch.Tensor,
    grad_outputs: torch.Tensor,
    projected: torch.Tensor,
    means: Optional[torch.Tensor],
    rstds: Optional[torch.Tensor],
    norm_weight: Optional[torch.Tensor],
    projection_keep: Optional[torch.Tensor],
    dropout: Optional[torch.Tensor],
    running: torch.Tensor,
    grad_hiddens: torch.Tensor,
    grad_projected: torch.Tensor,
) -> None:
    """
    dL/dn_t = (`dh_carry` + `grad_outputs`) * `dropout` (the gradient of the state before its
    dropout) into `grad_hiddens` and dL/dp_t (through the LayerNorm and the clip's
    `projection_keep`, when given) into `grad_projected`, both `(batch, projection)` and zero
    for rows not `running` `(batch, 1)`. `grad_outputs` may be a view with rows apart (a step of
    batch-major gradients); the rest are contiguous.
    """
    if grad_outputs.stride(1) != 1:
        raise ValueError("lstmp_triton: grad_outputs must have contiguous rows")
    _check(dh_carry, projected, means, rstds, projection_keep, dropout, running,
           grad_hiddens, grad_projected)  # fmt: skip
    batch, size = projected.shape
    normalise, clip, drop = norm_weight is not None, projection_keep is not None, dropout is not None
    _projection_backward_kernel[(batch,)](
        dh_carry, grad_outputs, projected, means if normalise else projected,
        rstds if normalise else projected, norm_weight if normalise else projected,
        projection_keep if clip else running, dropout if drop else projected, running,
        grad_hiddens, grad_projected, size, grad_outputs.stride(0), CLIP=clip, NORM=normalise,
        DROPOUT=drop, BLOCK=_block(size),
    )  # fmt: skip


def gate_backward(
    dm: torch.Tensor,
    dc_carry: torch.Tensor,
    gates: torch.Tensor,
    cells_prev: torch.Tensor,
    tanh_cells: torch.Tensor,
    cell_keep: Optional[torch.Tensor],
    running: torch.Tensor,
    grad_gates: torch.Tensor,
) -> None:
    """
    From dL/dm_t `dm` and the cell carry `dc_carry` `(batch, cell)`: dL/d(pre-activation gates)
    into `grad_gates` `(batch, 4 * cell)` (zero for rows not `running`), and the carry
    dL/dc_t * f updated in place for the running rows (`cell_keep`: the clip's mask, if any).
    """
    _check(dm, dc_carry, gates, cells_prev, tanh_cells, cell_keep, running, grad_gates)
    batch, cell_size = dm.shape
    grid = (batch, triton.cdiv(cell_size, CELL_BLOCK))
    clip = cell_keep is not None
    _gate_backward_kernel[grid](
        dm, dc_carry, gates, cells_prev, tanh_cells, cell_keep if clip else running, running,
        grad_gates, cell_size, CLIP=clip, BLOCK=CELL_BLOCK,
    )  # fmt: skip


def carry_backward(dr: torch.Tensor, running: torch.Tensor, dh_carry: torch.Tensor) -> None:
    """`dh_carry` `(batch, projection)` = dr (dL/d(gates) W_hh) for the `running` rows."""
    _check(dr, running, dh_carry)
    batch, size = dr.shape
    _carry_backward_kernel[(batch,)](dr, running, dh_carry, size, BLOCK=_block(size))
