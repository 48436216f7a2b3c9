"""
`lstmp_torch`'s five functions on CPU in C (`_lstmp_cpu.c`, built by `setup.py`), float32. The
forward ones call torch's own expf and tanh; `FORWARD_AS_TORCH` says whether they round as
torch's operators bit for bit here (checked at import; else `lstmp` runs the forward as torch
ops). Every tensor is checked (dtype, device, layout, size) before the C code reads it.
"""
import ctypes
import logging
import os
from typing import Optional, Tuple

import torch

from allennlp_elmo_c.nn import _lstmp_cpu  # noqa: F401  (ImportError when not built)
from allennlp_elmo_c.nn.lstmp_torch import Cell, Step, StepGradients

logger = logging.getLogger(__name__)

# torch's `Vectorized<float>` width and SLEEF expf per capability (DEFAULT: glibc's expf).
_VECTOR_EXP = {"AVX512": (16, "Sleef_expf16_u10"), "AVX2": (8, "Sleef_expf8_u10")}


def _torch_math() -> Tuple[int, int, int]:
    """The vector width and the addresses of torch's vector expf (0 without) and MKL's vmsTanh
    in this process's libtorch_cpu."""
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
    """Values whose sigmoid torch's vector and scalar loops round differently (random ones
    where they never do): a probe of them fails where an element is given to the wrong loop."""
    values = _probe_values(1 << 16, seed=99)
    by_vector = torch.sigmoid(values)  # contiguous, a multiple of 32 long: the vector loop
    by_scalar = torch.sigmoid(values.repeat_interleave(2)[::2])  # strided: the scalar loop
    telling = values[by_vector.view(torch.int32) != by_scalar.view(torch.int32)]
    if telling.numel() == 0:
        return _probe_values(count, seed=98)
    return telling.repeat(count // telling.numel() + 1)[:count]


def check_math_against_torch(threads: int) -> bool:
    """Whether `_lstmp_cpu`'s sigmoid and tanh give torch's results bit for bit over
    `threads` threads."""
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        # (rows, length, row stride): every remainder modulo 8, 16 and 32, and views torch
        # splits mid-row between threads.
        shapes = [(3, 64, 256), (3, 61, 256), (5, 45, 180), (7, 250, 1000), (7, 301, 1204),
                  (16, 8192, 16384), (65, 530, 2120), (1, 40027, 40027),
                  (5, 8216, 16432)]  # fmt: skip
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
        logger.warning(
            "lstmp_cpu: the C sigmoid/tanh do not reproduce torch's on this machine; "
            "the LSTM's forward steps run as torch ops (the backward ones in C)"
        )
        return False
    return True


FORWARD_AS_TORCH = _set_up_forward()


def _address(tensor: Optional[torch.Tensor], dtype: torch.dtype, numel: int) -> int:
    if tensor is None:
        return 0
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


def cell_forward(step: Step, cell: Cell, memory: torch.Tensor) -> None:
    """`lstmp_torch.cell_forward`, in C."""
    rows, size = step.cells_prev.shape
    n, clip = rows * size, cell.cell_clip
    _lstmp_cpu.cell_forward(
        _address(step.gates, _F, 4 * n), _address(step.cells_prev, _F, n),
        _address(step.cells_next, _F, n), _address(step.cell_keep, _B, n),
        _address(step.tanh_cells, _F, n), _address(memory, _F, n), rows, size,
        clip is not None, 0.0 if clip is None else clip, torch.get_num_threads(),
    )  # fmt: skip


def projection_forward(step: Step, cell: Cell) -> None:
    """`lstmp_torch.projection_forward`: the clip (and without a LayerNorm the dropout) in C,
    the LayerNorm torch's own, so that h_t rounds as the torch ops'."""
    rows, size = step.projected.shape
    n, clip, dropout = rows * size, cell.projection_clip, cell.dropout
    normalise = cell.norm_weight is not None
    _lstmp_cpu.projection_forward(
        _address(step.projected, _F, n),
        _address(step.projection_keep if clip is not None else None, _B, n),
        _address(step.hiddens, _F, n), _address(dropout, _F, n), rows, size, clip is not None,
        0.0 if clip is None else clip, not normalise, dropout is not None and not normalise,
    )  # fmt: skip
    if normalise:
        _address(step.means, _F, rows), _address(step.rstds, _F, rows)
        torch.ops.aten.native_layer_norm.out(
            step.projected, (size,), cell.norm_weight, cell.norm_bias, cell.norm_eps,
            out0=step.hiddens, out1=step.means, out2=step.rstds,
        )  # fmt: skip
        if dropout is not None:
            step.hiddens.mul_(dropout)


def projection_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """`lstmp_torch.projection_backward`, in C (`grads.running` required)."""
    rows, size = step.projected.shape
    n, grad_outputs = rows * size, grads.grad_outputs
    if (
        grad_outputs.dtype != _F
        or grad_outputs.device.type != "cpu"
        or grad_outputs.shape != (rows, size)
        or grad_outputs.stride(1) != 1
    ):
        raise ValueError("lstmp_cpu: grad_outputs must be float32 (rows, projection) on the "
                         "CPU with contiguous rows")  # fmt: skip
    normalise, clip = cell.norm_weight is not None, cell.projection_clip is not None
    _lstmp_cpu.projection_backward(
        _address(grads.dh_carry, _F, n), grad_outputs.data_ptr(), grad_outputs.stride(0),
        _address(step.projected, _F, n), _address(step.means if normalise else None, _F, rows),
        _address(step.rstds if normalise else None, _F, rows),
        _address(cell.norm_weight, _F, size),
        _address(step.projection_keep if clip else None, _B, n),
        _address(cell.dropout, _F, n), _address(grads.running, _B, rows),
        _address(grads.grad_hiddens, _F, n), _address(grads.grad_projected, _F, n), rows, size,
        normalise, clip, cell.dropout is not None, torch.get_num_threads(),
    )  # fmt: skip


def gate_backward(step: Step, grads: StepGradients, cell: Cell) -> None:
    """`lstmp_torch.gate_backward`, in C (`grads.running` required)."""
    rows, size = grads.dm.shape
    n, clip = rows * size, cell.cell_clip is not None
    _lstmp_cpu.gate_backward(
        _address(grads.dm, _F, n), _address(grads.dc_carry, _F, n),
        _address(step.gates, _F, 4 * n), _address(step.cells_prev, _F, n),
        _address(step.tanh_cells, _F, n), _address(step.cell_keep if clip else None, _B, n),
        _address(grads.running, _B, rows), _address(grads.grad_gates, _F, 4 * n), rows, size,
        clip, torch.get_num_threads(),
    )  # fmt: skip


def carry_backward(grads: StepGradients) -> None:
    """`lstmp_torch.carry_backward`, in C (`grads.running` required)."""
    rows, size = grads.dr.shape
    n = rows * size
    _lstmp_cpu.carry_backward(
        _address(grads.dr, _F, n), _address(grads.running, _B, rows),
        _address(grads.dh_carry, _F, n), rows, size,
    )  # fmt: skip
