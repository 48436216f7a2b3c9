"""
`lstmp_torch`'s five functions as Triton kernels (GPU, float32), one launch each, every one
reading its inputs once; LayerNorm statistics as `torch.native_layer_norm`'s, a row in one
program. No host synchronisation: capturable in a CUDA graph.
"""

from typing import Optional

import torch
import triton
import triton.language as tl

from allennlp_elmo_c.nn.lstmp_torch import Cell, Step, StepGradients

# Columns of the cell state per program of the (row, cell) kernels.
CELL_BLOCK = 1024


@triton.jit
def _tanh(x):
    # (libdevice's tanh is not in Triton's CPU interpreter, where the tests run.) A few ulps:
    # an odd Taylor polynomial to x^9 for |x| < 1/4, (1 - e^-2|x|) / (1 + e^-2|x|) beyond.
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


def cell_forward(step: Step, cell: Cell, memory: torch.Tensor) -> None:
    """`lstmp_torch.cell_forward`, one kernel."""
    _check(*step[:5], memory)
    rows, cell_size = step.cells_prev.shape
    clip = cell.cell_clip
    _cell_forward_kernel[(rows, triton.cdiv(cell_size, CELL_BLOCK))](
        step.gates, step.cells_prev, step.cells_next, step.cell_keep, step.tanh_cells, memory,
        cell_size, 0.0 if clip is None else clip, CLIP=clip is not None, BLOCK=CELL_BLOCK,
    )  # fmt: skip


def projection_forward(step: Step, cell: Cell) -> None:
    """`lstmp_torch.projection_forward`, one kernel."""
    _check(*step[5:], cell.dropout)
    rows, size = step.projected.shape
    normalise, drop = cell.norm_weight is not None, cell.dropout is not None
    clip = cell.projection_clip
    projected = step.projected  # (what stands for a tensor a variant does not read)
    _projection_forward_kernel[(rows,)](
        projected, step.projection_keep, step.hiddens,
        step.means if normalise else projected, step.rstds if normalise else projected,
        cell.norm_weight if normalise else projected, cell.norm_bias if normalise else projected,
        cell.dropout if drop else projected, size, 0.0 if clip is None else clip, cell.norm_eps,
        CLIP=clip is not None, NORM=normalise, DROPOUT=drop, BLOCK=_block(size),
    )  # fmt: skip


def projection_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """`lstmp_torch.projection_backward`, one kernel (`grads.running` required)."""
    if grads.grad_outputs.stride(1) != 1:
        raise ValueError("lstmp_triton: grad_outputs must have contiguous rows")
    _check(*step[5:], cell.dropout, grads.dh_carry, grads.running, *grads[6:])
    rows, size = step.projected.shape
    normalise, drop = cell.norm_weight is not None, cell.dropout is not None
    clip, projected = cell.projection_clip is not None, step.projected
    _projection_backward_kernel[(rows,)](
        grads.dh_carry, grads.grad_outputs, projected, step.means if normalise else projected,
        step.rstds if normalise else projected, cell.norm_weight if normalise else projected,
        step.projection_keep if clip else grads.running, cell.dropout if drop else projected,
        grads.running, grads.grad_hiddens, grads.grad_projected, size,
        grads.grad_outputs.stride(0), CLIP=clip, NORM=normalise, DROPOUT=drop,
        BLOCK=_block(size),
    )  # fmt: skip


def gate_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """`lstmp_torch.gate_backward`, one kernel (`grads.running` required)."""
    _check(*step[:5], grads.dm, grads.dc_carry, grads.running, grads.grad_gates)
    rows, cell_size = grads.dm.shape
    clip = cell.cell_clip is not None
    _gate_backward_kernel[(rows, triton.cdiv(cell_size, CELL_BLOCK))](
        grads.dm, grads.dc_carry, step.gates, step.cells_prev, step.tanh_cells,
        step.cell_keep if clip else grads.running, grads.running, grads.grad_gates, cell_size,
        CLIP=clip, BLOCK=CELL_BLOCK,
    )  # fmt: skip


def carry_backward(grads: StepGradients) -> None:
    """`lstmp_torch.carry_backward`, one kernel (`grads.running` required)."""
    _check(grads.dr, grads.running, grads.dh_carry)
    rows, size = grads.dr.shape
    _carry_backward_kernel[(rows,)](
        grads.dr, grads.running, grads.dh_carry, size, BLOCK=_block(size)
    )
