"""
The per-step pointwise work of `allennlp_elmo_c.nn.lstmp`'s LSTMP cell on CPU, in C
(`_lstmp_cpu.c`, built by `setup.py`): the five functions of `lstmp_triton`, same arguments, same
results. A step of the cell at the demo size (batch 64, cell 256) is two small matrix products
and a dozen (forward) to two dozen (backward) pointwise torch operators whose dispatch, a few
microseconds each, costs as much as their arithmetic; here each group is one call that reads its
inputs once. `lstmp.pointwise_kernels` picks this module for float32 CPU tensors when the
extension is built (`ELMO_C_CPU_KERNELS=0` runs the torch ops instead).

The forward functions round exactly as `lstmp_torch`'s torch ops (the reference
backend's) do: one float32 operation at a time, torch's own LayerNorm, and torch's own sigmoid
and tanh arithmetic, from the libraries torch runs (SLEEF's vector `expf` for the vector width
of torch's CPU capability, glibc's `expf` where torch's scalar loop runs, MKL's `vmsTanh`).
`FORWARD_AS_TORCH` says whether that was found and reproduced torch bit for bit on this
machine (checked at import); where not, the forward steps run as torch ops. The backward
functions only multiply and add saved activations (LayerNorm's statistics accumulated in
double): gradients within float32 rounding of the torch ops' (tests/nn/test_lstmp_cpu.py).
With `torch.get_num_threads()` above one, each call splits its rows between that many OpenMP
threads (torch's own pool); results do not depend on it.

Every tensor must be float32 (masks: bool), contiguous (`grad_outputs`: contiguous rows), on
the CPU, with the shapes documented in `lstmp_triton`; this is checked before the C code reads
their memory.
"""
import ctypes
import logging
import os
from typing import Optional, Tuple

import torch

from allennlp_elmo_c.nn import _lstmp_cpu  # noqa: F401  (ImportError when not built)

logger = logging.getLogger(__name__)

# The vector width (float lanes) of torch's `Vectorized<float>` per CPU capability, and the
# SLEEF expf it calls; without vectors (DEFAULT) torch's loops call glibc's expf.
_VECTOR_EXP = {"AVX512": (16, "Sleef_expf16_u10"), "AVX2": (8, "Sleef_expf8_u10")}


def _torch_math() -> Tuple[int, int, int]:
    """The vector width and the addresses of torch's vector expf (0 without) and of MKL's
    vmsTanh, looked up in the libtorch_cpu this process runs (KeyError, OSError or
    AttributeError where they are not there)."""
    capability = torch.backends.cpu.get_cpu_capability()
    width, exp_name = _VECTOR_EXP.get(capability, (0, None))
    library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    address = lambda name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value  # noqa: E731
    return width, address(exp_name) if exp_name else 0, address("vmsTanh")


def _probe_values(count: int, seed: int) -> torch.Tensor:
    # Gate pre-activations of every scale, and the values where functions turn special.
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(count, generator=generator)
    values *= torch.tensor([0.1, 1.0, 4.0, 30.0, 200.0]).repeat(count // 5 + 1)[:count]
    special = [0.0, -0.0, 1e-40, -1e-40, 88.7, -88.7, 103.0, -103.0, float("inf"),
               float("-inf"), float("nan")]  # fmt: skip
    values[: len(special)] = torch.tensor(special)
    return values


def _same_bits(ours: torch.Tensor, theirs: torch.Tensor) -> bool:
    both_nan = ours.isnan() & theirs.isnan()
    return bool(((ours.view(torch.int32) == theirs.view(torch.int32)) | both_nan).all())


def _telling_values(count: int) -> torch.Tensor:
    """Values whose sigmoid torch's vector loop and its scalar loop round differently (so that
    a probe made of them fails wherever an element is assigned to the wrong loop), or random
    ones where the two loops agree everywhere."""
    values = _probe_values(1 << 16, seed=99)
    by_vector = torch.sigmoid(values)  # contiguous, a multiple of 32 long: the vector loop
    by_scalar = torch.sigmoid(values.repeat_interleave(2)[::2])  # strided: the scalar loop
    telling = values[by_vector.view(torch.int32) != by_scalar.view(torch.int32)]
    if telling.numel() == 0:
        return _probe_values(count, seed=98)
    return telling.repeat(count // telling.numel() + 1)[:count]


def check_math_against_torch(threads: int) -> bool:
    """
    Whether `_lstmp_cpu`'s sigmoid (on strided views, as `torch.sigmoid_` splits them over
    `threads` threads) and tanh give torch's results bit for bit on probe values: views with
    rows whose length is and is not a multiple of the vector loop's step, and views large enough
    for torch to split them between threads mid-row, made of values that the vector and the
    scalar loop round differently.
    """
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        # (rows, length, row stride): lengths of every remainder modulo 8, 16 and 32 (the
        # vector loop's step per capability), and views torch splits mid-row between threads.
        shapes = [(3, 64, 256), (3, 61, 256), (5, 45, 180), (7, 250, 1000), (7, 301, 1204),
                  (16, 8192, 16384), (65, 530, 2120), (1, 40027, 40027), (5, 8216, 16432)]  # fmt: skip
        for seed, (rows, length, stride) in enumerate(shapes):
            size = rows * stride
            base = (_telling_values(size) if seed % 2 else _probe_values(size, seed))
            base = base.view(rows, stride)
            ours = base.clone()
            _lstmp_cpu.sigmoid_(ours.data_ptr(), rows, length, stride, threads)
            expected = base.clone()
            torch.sigmoid_(expected[:, :length])
            if not _same_bits(ours, expected):
                return False
            flat = base[:, :length].contiguous().view(-1)
            tanh = torch.empty_like(flat)
            _lstmp_cpu.tanh(flat.data_ptr(), tanh.data_ptr(), flat.numel())
            if not _same_bits(tanh, torch.tanh(flat)):
                return False
        return True
    finally:
        torch.set_num_threads(saved)


def _set_up_forward() -> bool:
    try:
        _lstmp_cpu.set_math(*_torch_math())
    except (KeyError, OSError, AttributeError, ValueError) as error:
        logger.info("lstmp_cpu: torch's expf/tanh not found (%s); the LSTM's forward steps run "
                    "as torch ops (the backward ones in C)", error)  # fmt: skip
        return False
    threads = sorted({1, torch.get_num_threads()})
    if not all(check_math_against_torch(count) for count in threads):
        logger.warning("lstmp_cpu: the C sigmoid/tanh do not reproduce torch's on this machine; "
                       "the LSTM's forward steps run as torch ops (the backward ones in C)")  # fmt: skip
        return False
    return True


FORWARD_AS_TORCH = _set_up_forward()


def _address(tensor: Optional[torch.Tensor], dtype: torch.dtype, numel: int) -> int:
    # The C code trusts these: dtype, device, layout and size are checked here.
    if tensor is None:
        return 0
    # (Each step calls this a few dozen times: `is`/`is_cpu` rather than building dtype and
    # device objects to compare.)
    if (
        tensor.dtype is not dtype
        or not tensor.is_cpu
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
        torch.get_num_threads(),
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
    """`lstmp_triton.projection_forward`: p_t clipped in place, h_t = LayerNorm(p_t) * dropout
    (with `means`, `rstds` `(batch, 1)`; torch's own LayerNorm, so that h_t rounds as the torch
    ops')."""
    batch, size = projected.shape
    n = batch * size
    normalise, drop, clip = norm_weight is not None, dropout is not None, projection_clip
    _lstmp_cpu.projection_forward(
        _address(projected, _F, n), _address(projection_keep if clip is not None else None, _B, n),
        _address(hiddens, _F, n), _address(dropout, _F, n), batch, size, clip is not None,
        0.0 if clip is None else clip, not normalise, drop and not normalise,
    )  # fmt: skip
    if normalise:
        _address(means, _F, batch), _address(rstds, _F, batch)
        torch.ops.aten.native_layer_norm.out(
            projected, (size,), norm_weight, norm_bias, norm_eps, out0=hiddens, out1=means,
            out2=rstds,
        )  # fmt: skip
        if drop:
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
    running: torch.Tensor,
    grad_hiddens: torch.Tensor,
    grad_projected: torch.Tensor,
) -> None:
    """`lstmp_triton.projection_backward`: dL/dn_t (the state before its dropout) into
    `grad_hiddens`, dL/dp_t into `grad_projected` (zero for rows not `running` `(batch, 1)`);
    `grad_outputs` may have rows apart."""
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
        _address(projection_keep, _B, n), _address(dropout, _F, n), _address(running, _B, batch),
        _address(grad_hiddens, _F, n), _address(grad_projected, _F, n), batch, size, normalise,
        projection_keep is not None, dropout is not None, torch.get_num_threads(),
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
        cell_keep is not None, torch.get_num_threads(),
    )  # fmt: skip


def carry_backward(dr: torch.Tensor, running: torch.Tensor, dh_carry: torch.Tensor) -> None:
    """`lstmp_triton.carry_backward`: `dh_carry` = dr for the `running` rows."""
    batch, size = dr.shape
    n = batch * size
    _lstmp_cpu.carry_backward(
        _address(dr, _F, n), _address(running, _B, batch), _address(dh_carry, _F, n), batch, size
    )
