"""
The per-step pointwise work of `allennlp_elmo_c.nn.lstmp`'s LSTMP cell as torch operators: the
five functions of `lstmp_cpu` (C) and `lstmp_triton` (GPU), same arguments, same results, on
any device and dtype. `lstmp.pointwise_kernels` picks this module where neither of those
serves (float64, `ELMO_C_CPU_KERNELS=0`, `ELMO_C_TRITON=0`, the C extension not built). It is also
what the other two are tested against (tests/nn/kernel_checks.py).

The forward functions round as the reference backend's per-step loop does (one torch operator per
term, torch's own LayerNorm). Unlike the other two modules, the backward functions also take
`running=None` ("every row runs"): `lstmp` then hands them only the rows still running at each
step (`[:batch_sizes[t]]`), rather than every row and a mask.
"""
from typing import Optional

import torch


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
    cell_size = cells_prev.size(1)
    torch.sigmoid_(gates[:, : 2 * cell_size])
    torch.tanh_(gates[:, 2 * cell_size : 3 * cell_size])
    torch.sigmoid_(gates[:, 3 * cell_size :])
    i, f, g, o = gates.chunk(4, dim=1)
    torch.add(f * cells_prev, i * g, out=cells_next)
    if cell_clip is not None:
        torch.logical_and(cells_next >= -cell_clip, cells_next <= cell_clip, out=cell_keep)
        cells_next.clamp_(-cell_clip, cell_clip)
    torch.tanh(cells_next, out=tanh_cells)
    torch.mul(o, tanh_cells, out=memory)


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
    if projection_clip is not None:
        torch.logical_and(
            projected >= -projection_clip, projected <= projection_clip, out=projection_keep
        )
        projected.clamp_(-projection_clip, projection_clip)
    if norm_weight is not None:
        torch.ops.aten.native_layer_norm.out(
            projected, (projected.size(1),), norm_weight, norm_bias, norm_eps, out0=hiddens,
            out1=means, out2=rstds,
        )  # fmt: skip
    else:
        hiddens.copy_(projected)
    if dropout is not None:
        hiddens.mul_(dropout)


def projection_backward(
    dh_carry: torch.Tensor,
    grad_outputs: torch.Tensor,
    projected: torch.Tensor,
    means: Optional[torch.Tensor],
    rstds: Optional[torch.Tensor],
    norm_weight: Optional[torch.Tensor],
    projection_keep: Optional[torch.Tensor],
    dropout: Optional[torch.Tensor],
    running: Optional[torch.Tensor],
    grad_hiddens: torch.Tensor,
    grad_projected: torch.Tensor,
) -> None:
    """
    dL/dn_t = (`dh_carry` + `grad_outputs`) * `dropout` (the gradient of the state before its
    dropout) into `grad_hiddens` and dL/dp_t (through the LayerNorm and the clip's
    `projection_keep`, when given) into `grad_projected`, both `(batch, projection)` and zero
    for rows not `running` `(batch, 1)` (every row runs when it is None).
    """
    dh = dh_carry + grad_outputs
    if dropout is not None:
        dh = dh * dropout
    if norm_weight is not None:
        dp, _, _ = torch.ops.aten.native_layer_norm_backward(
            dh, projected, (projected.size(1),), means, rstds, norm_weight, None,
            [True, False, False],
        )  # fmt: skip
    else:
        dp = dh
    if projection_keep is not None:
        dp = dp * projection_keep
    if running is not None:
        dh, dp = torch.where(running, dh, 0.0), torch.where(running, dp, 0.0)
    grad_hiddens.copy_(dh)
    grad_projected.copy_(dp)


def gate_backward(
    dm: torch.Tensor,
    dc_carry: torch.Tensor,
    gates: torch.Tensor,
    cells_prev: torch.Tensor,
    tanh_cells: torch.Tensor,
    cell_keep: Optional[torch.Tensor],
    running: Optional[torch.Tensor],
    grad_gates: torch.Tensor,
) -> None:
    """
    From dL/dm_t `dm` and the cell carry `dc_carry` `(batch, cell)`: dL/d(pre-activation gates)
    into `grad_gates` `(batch, 4 * cell)` (zero for rows not `running`), and the carry
    dL/dc_t * f updated in place for the running rows (`cell_keep`: the clip's mask, if any).
    """
    i, f, g, o = gates.chunk(4, dim=1)
    dc = torch.addcmul(dc_carry, dm * o, 1 - tanh_cells * tanh_cells)  # dL/dc_t
    if cell_keep is not None:
        dc = dc * cell_keep
    di, df, dg, do = grad_gates.chunk(4, dim=1)
    torch.mul(dc * g, i * (1 - i), out=di)
    torch.mul(dc * cells_prev, f * (1 - f), out=df)
    torch.mul(dc * i, 1 - g * g, out=dg)
    torch.mul(dm * tanh_cells, o * (1 - o), out=do)
    if running is None:
        torch.mul(dc, f, out=dc_carry)
    else:
        grad_gates.copy_(torch.where(running, grad_gates, 0.0))
        dc_carry.copy_(torch.where(running, dc * f, dc_carry))


def carry_backward(
    dr: torch.Tensor, running: Optional[torch.Tensor], dh_carry: torch.Tensor
) -> None:
    """`dh_carry` `(batch, projection)` = dr (dL/d(gates) W_hh) for the `running` rows."""
    dh_carry.copy_(dr if running is None else torch.where(running, dr, dh_carry))
