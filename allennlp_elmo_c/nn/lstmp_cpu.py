"""
The per-step pointwise work of `allennlp_elmo_c.nn.lstmp`'s LSTMP cell on CPU, in C
(`_lstmp_cpu.c`, built by `setup.py`): the five functions of `lstmp_triton`, same arguments, same
results. A step of the cell at the demo size (batch 64, cell 256) is two small matrix products
and a dozen (forward) to two dozen (backward) pointwise torch operators whose dispatch, a few
microseconds each, costs as much as their arithmetic; here each group is one call that reads its
inputs once. `lstmp.pointwise_kernels` picks this module for float32 CPU tensors when the
extension is built (`ELMO_C_CPU_KERNELS=0` runs the torch ops instead). The math is
`lstmp._forward_steps` / `lstmp._backward_steps`' (tests/nn/test_lstmp_cpu.py); transcendental
functions come from glibc's vector math library (a few float32 ulps from torch's).

Every tensor must be float32 (masks: bool), contiguous (`grad_outputs`: contiguous rows), on
the CPU, with the shapes documented in `lstmp_triton`; this is checked before the C code reads
their memory.
"""
from typing import Optional

import torch

from allennlp_elmo_c.nn import _lstmp_cpu  # noqa: F401  (ImportError when not built)


def _address(tensor: Optional[torch.Tensor], dtype: torch.dtype, numel: int) -> int:
    # The C code trusts these: dtype, device, layout and size are checked here.
    if tensor is None:
        return 0
    if (
        tensor.dtype != dtype
        or tensor.device.type != "cpu"
        or not tensor.is_contiguous()
        or tensor.numel() != numel
    ):
        raise ValueError(
            f"lstmp_cpu: expected a contiguous CPU {dtype} tensor of {numel} elements, got "
            f"{tensor.dtype} {tuple(tensor.shape)} on {tensor.device}"
        )
    return tensor.data_ptr()


_F, _B = torch.float32, torch.bool


def cell_forward(
    gates: torch.Tensor,
    cells_prev: torch.Tensor,
    cells_next: torch.Tensor,
    cell_keep: torch.Tensor,
    tanh_cells: torch.Tensor,
    memory: torch.Tensor,
    cell_clip: Optional[float],
) -> None:
    """`lstmp_triton.cell_forward`: activations over `gates` `(batch, 4 * cell)`, c_t, the clip's
    mask, tanh(c_t) and o * tanh(c_t), each `(batch, cell)`."""
    batch, cell = cells_prev.shape
    n = batch * cell
    _lstmp_cpu.cell_forward(
        _address(gates, _F, 4 * n), _address(cells_prev, _F, n), _address(cells_next, _F, n),
        _address(cell_keep, _B, n), _address(tanh_cells, _F, n), _address(memory, _F, n),
        batch, cell, cell_clip is not None, 0.0 if cell_clip is None else cell_clip,
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
    recurrent: Optional[torch.Tensor],
) -> None:
    """`lstmp_triton.projection_forward`: p_t clipped in place, h_t = LayerNorm(p_t) (with
    `means`, `rstds` `(batch, 1)`) and h_t * dropout into `recurrent`."""
    batch, size = projected.shape
    n = batch * size
    normalise, drop, clip = norm_weight is not None, dropout is not None, projection_clip
    _lstmp_cpu.projection_forward(
        _address(projected, _F, n), _address(projection_keep if clip is not None else None, _B, n),
        _address(hiddens, _F, n), _address(means if normalise else None, _F, batch),
        _address(rstds if normalise else None, _F, batch),
        _address(norm_weight, _F, size), _address(norm_bias if normalise else None, _F, size),
        _address(dropout, _F, n), _address(recurrent if drop else None, _F, n), batch, size,
        clip is not None, 0.0 if clip is None else clip, normalise, norm_eps, drop,
    )  # fmt: skip


def projection_backward(
    dh_carry: torch.Tensor,
    grad_outputs: torch.Tensor,
    projected: torch.Tensor,
    means: Optional[torch.Tensor],
    rstds: Optional[torch.Tensor],
    norm_weight: Optional[torch.Tensor],
    projection_keep: Optional[torch.Tensor],
    running: torch.Tensor,
    grad_hiddens: torch.Tensor,
    grad_projected: torch.Tensor,
) -> None:
    """`lstmp_triton.projection_backward`: dL/dh_t into `grad_hiddens`, dL/dp_t into
    `grad_projected` (zero for rows not `running` `(batch, 1)`); `grad_outputs` may have rows
    apart."""
    batch, size = projected.shape
    n = batch * size
    if (
        grad_outputs.dtype != _F
        or grad_outputs.device.type != "cpu"
        or grad_outputs.shape != (batch, size)
        or grad_outputs.stride(1) != 1
    ):
        raise ValueError("lstmp_cpu: grad_outputs must be float32 (batch, projection) on the "
                         "CPU with contiguous rows")  # fmt: skip
    normalise = norm_weight is not None
    _lstmp_cpu.projection_backward(
        _address(dh_carry, _F, n), grad_outputs.data_ptr(), grad_outputs.stride(0),
        _address(projected, _F, n), _address(means if normalise else None, _F, batch),
        _address(rstds if normalise else None, _F, batch), _address(norm_weight, _F, size),
        _address(projection_keep, _B, n), _address(running, _B, batch),
        _address(grad_hiddens, _F, n), _address(grad_projected, _F, n), batch, size, normalise,
        projection_keep is not None,
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
    """`lstmp_triton.gate_backward`: dL/d(pre-activation gates) into `grad_gates` (zero for rows
    not `running`), the cell carry dL/dc_t * f in place for the running rows."""
    batch, cell = dm.shape
    n = batch * cell
    _lstmp_cpu.gate_backward(
        _address(dm, _F, n), _address(dc_carry, _F, n), _address(gates, _F, 4 * n),
        _address(cells_prev, _F, n), _address(tanh_cells, _F, n), _address(cell_keep, _B, n),
        _address(running, _B, batch), _address(grad_gates, _F, 4 * n), batch, cell,
        cell_keep is not None,
    )  # fmt: skip


def carry_backward(
    dr: torch.Tensor, dropout: Optional[torch.Tensor], running: torch.Tensor, dh_carry: torch.Tensor
) -> None:
    """`lstmp_triton.carry_backward`: `dh_carry` = dr * dropout (or dr) for the `running` rows."""
    batch, size = dr.shape
    n = batch * size
    _lstmp_cpu.carry_backward(
        _address(dr, _F, n), _address(dropout, _F, n), _address(running, _B, batch),
        _address(dh_carry, _F, n), batch, size, dropout is not None,
    )  # fmt: skip
