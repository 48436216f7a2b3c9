"""
The per-step pointwise work of `allennlp_elmo_c.nn.lstmp`'s cell as torch operators, on any device
and dtype: the interface (`Cell`, `Step`, `StepGradients`, five functions) that `lstmp_cpu` and
`lstmp_triton` implement for float32. The backward functions also take `running` None (only the
rows still running).
"""
from typing import NamedTuple, Optional

import torch


class Cell(NamedTuple):
    """What every step of one layer's call reads besides its buffers."""

    norm_weight: Optional[torch.Tensor]  # (projection,): LayerNorm of p_t, with norm_bias
    norm_bias: Optional[torch.Tensor]
    norm_eps: float
    cell_clip: Optional[float]
    projection_clip: Optional[float]
    dropout: Optional[torch.Tensor]  # (rows, projection): the recurrent dropout mask, scaled


class Step(NamedTuple):
    """Step t of the forward buffers, `rows` wide."""

    gates: torch.Tensor  # (rows, 4 * cell): W_ih x + b + W_hh h, then i, f, g, o in place
    cells_prev: torch.Tensor  # (rows, cell): c_{t-1}
    cells_next: torch.Tensor  # (rows, cell): c_t, clipped
    cell_keep: torch.Tensor  # (rows, cell) bool: where the cell clip let c_t through
    tanh_cells: torch.Tensor  # (rows, cell): tanh(c_t)
    projected: torch.Tensor  # (rows, projection): p_t = W_hr (o * tanh(c_t)), clipped
    projection_keep: torch.Tensor  # (rows, projection) bool
    hiddens: torch.Tensor  # (rows, projection): h_t = LayerNorm(p_t) * dropout
    means: Optional[torch.Tensor]  # (rows, 1): the LayerNorm's statistics of p_t
    rstds: Optional[torch.Tensor]


class StepGradients(NamedTuple):
    """Step t of the backward pass, `rows` wide; the carries are updated in place to step
    t - 1's."""

    dh_carry: torch.Tensor  # (rows, projection)
    dc_carry: torch.Tensor  # (rows, cell)
    grad_outputs: torch.Tensor  # (rows, projection): dL/d(output t); rows may lie apart
    running: Optional[torch.Tensor]  # (rows, 1) bool: rows within their length (None: all)
    dm: torch.Tensor  # (rows, cell): dL/d(o * tanh(c_t)) = dL/dp_t W_hr
    dr: torch.Tensor  # (rows, projection): dL/d(gates) W_hh
    grad_gates: torch.Tensor  # (rows, 4 * cell): dL/d(pre-activation gates), written
    grad_hiddens: torch.Tensor  # (rows, projection): dL/dn_t (before the dropout), written
    grad_projected: torch.Tensor  # (rows, projection): dL/dp_t, written


def cell_forward(step: Step, cell: Cell, memory: torch.Tensor) -> None:
    """The cell: activations over `step.gates`, c_t (clipped, with its mask), tanh(c_t) and
    `memory` `(rows, cell)` = o * tanh(c_t), the input of W_hr."""
    cell_size = step.cells_prev.size(1)
    gates = step.gates
    torch.sigmoid_(gates[:, : 2 * cell_size])
    torch.tanh_(gates[:, 2 * cell_size : 3 * cell_size])
    torch.sigmoid_(gates[:, 3 * cell_size :])
    i, f, g, o = gates.chunk(4, dim=1)
    c = torch.add(f * step.cells_prev, i * g, out=step.cells_next)
    if cell.cell_clip is not None:
        torch.logical_and(c >= -cell.cell_clip, c <= cell.cell_clip, out=step.cell_keep)
        c.clamp_(-cell.cell_clip, cell.cell_clip)
    torch.mul(o, torch.tanh(c, out=step.tanh_cells), out=memory)


def projection_forward(step: Step, cell: Cell) -> None:
    """`step.projected` (p_t, written by W_hr's product) clipped in place with its mask, then
    h_t = LayerNorm(p_t) * dropout (p_t without a LayerNorm) into `step.hiddens`: the state
    emitted and fed back into W_hh."""
    projected, clip = step.projected, cell.projection_clip
    if clip is not None:
        torch.logical_and(projected >= -clip, projected <= clip, out=step.projection_keep)
        projected.clamp_(-clip, clip)
    if cell.norm_weight is not None:
        torch.ops.aten.native_layer_norm.out(
            projected, (projected.size(1),), cell.norm_weight, cell.norm_bias, cell.norm_eps,
            out0=step.hiddens, out1=step.means, out2=step.rstds,
        )  # fmt: skip
    else:
        step.hiddens.copy_(projected)
    if cell.dropout is not None:
        step.hiddens.mul_(cell.dropout)


def projection_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """dL/dn_t = (`dh_carry` + `grad_outputs`) * dropout into `grads.grad_hiddens` and dL/dp_t
    (through the LayerNorm and the projection clip's mask) into `grads.grad_projected`, both
    zero for rows not `running`."""
    dh = grads.dh_carry + grads.grad_outputs
    if cell.dropout is not None:
        dh = dh * cell.dropout
    if cell.norm_weight is not None:
        dp, _, _ = torch.ops.aten.native_layer_norm_backward(
            dh, step.projected, (dh.size(1),), step.means, step.rstds, cell.norm_weight, None,
            [True, False, False],
        )  # fmt: skip
    else:
        dp = dh
    if cell.projection_clip is not None:
        dp = dp * step.projection_keep
    if grads.running is not None:
        dh, dp = torch.where(grads.running, dh, 0.0), torch.where(grads.running, dp, 0.0)
    grads.grad_hiddens.copy_(dh)
    grads.grad_projected.copy_(dp)


def gate_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """From `grads.dm` and the cell carry: dL/d(pre-activation gates) into `grads.grad_gates`
    (zero for rows not `running`), and the carry dL/dc_t * f in place for the running rows."""
    i, f, g, o = step.gates.chunk(4, dim=1)
    dm, tanh_c = grads.dm, step.tanh_cells
    dc = torch.addcmul(grads.dc_carry, dm * o, 1 - tanh_c * tanh_c)  # dL/dc_t
    if cell.cell_clip is not None:
        dc = dc * step.cell_keep
    di, df, dg, do = grads.grad_gates.chunk(4, dim=1)
    torch.mul(dc * g, i * (1 - i), out=di)
    torch.mul(dc * step.cells_prev, f * (1 - f), out=df)
    torch.mul(dc * i, 1 - g * g, out=dg)
    torch.mul(dm * tanh_c, o * (1 - o), out=do)
    if grads.running is None:
        torch.mul(dc, f, out=grads.dc_carry)
    else:
        grads.grad_gates.copy_(torch.where(grads.running, grads.grad_gates, 0.0))
        grads.dc_carry.copy_(torch.where(grads.running, dc * f, grads.dc_carry))


def carry_backward(grads: StepGradients) -> None:
    """`grads.dh_carry` = `grads.dr` for the `running` rows."""
    running, dr = grads.running, grads.dr
    grads.dh_carry.copy_(dr if running is None else torch.where(running, dr, grads.dh_carry))
