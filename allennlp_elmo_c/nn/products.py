"""
The matrix products of `allennlp_elmo_c.nn.lstmp`: on CPU through MKL (`torch.mm`) or oneDNN,
whichever has the wider float32 vectors here (`onednn_preferred`; `ELMO_C_ONEDNN=1` takes oneDNN
wherever it works, `0` never), oneDNN outside grad mode only and after a check against float64
products; on a GPU through cuBLAS. bfloat16 operands give float32 results (oneDNN's rounded to
bfloat16 once on the way).
"""
import functools
import logging
import os
from typing import Optional

import torch

from allennlp_elmo_c.nn.buffer_pool import POOL

logger = logging.getLogger(__name__)

_BLOCK_BYTES = 8 << 20


class Products:
    """
    Products with the results' device and dtype of `like` and operands of `dtype` (`like.dtype`,
    or `torch.bfloat16`).
    """

    def __init__(self, like: torch.Tensor, dtype: Optional[torch.dtype] = None) -> None:
        self.dtype = like.dtype if dtype is None else dtype
        self.result_dtype = like.dtype
        self.mixed = self.dtype != like.dtype
        self.onednn = (
            like.device.type == "cpu"
            and like.dtype == torch.float32
            and self.dtype in (torch.float32, torch.bfloat16)
            and not torch.is_grad_enabled()
            and _onednn_chosen(self.dtype)
        )
        self.cublas_results = self.mixed and like.is_cuda and _cublas_results_work(self.dtype)

    def weight(self, weight: torch.Tensor, rows: Optional[int] = None) -> torch.Tensor:
        """`weight` `(out, in)` as `linear` reads it fastest in many products (of `rows` rows):
        cast once, contiguous for oneDNN, reordered for oneDNN's bfloat16 kernels."""
        if self.mixed and weight.dtype != self.dtype:
            low = weight.to(self.dtype)
            if self.onednn and rows is not None:
                return torch.ops.mkldnn._reorder_linear_weight(low, rows)
            # (A cast, then a copy: faster than one copy that casts and transposes.)
            return POOL.empty(weight.shape, weight, self.dtype).copy_(low)
        if not self.onednn or weight.is_contiguous():
            return weight
        return POOL.empty(weight.shape, weight).copy_(weight)

    def _operand(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.dtype) if self.mixed and tensor.dtype != self.dtype else tensor

    def linear(
        self, inputs: torch.Tensor, weight: torch.Tensor, out: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """`inputs @ weight.T` `(rows, out)` in the results' dtype (into `out` if given)."""
        inputs, weight = self._operand(inputs), self._operand(weight)
        # (oneDNN has no empty inner dimension; its linear copies strided inputs first.)
        rows_or_reordered = inputs.stride(1) == 1 or weight.is_mkldnn
        if self.onednn and inputs.size(1) > 0 and (not self.mixed or rows_or_reordered):
            if out is None:
                return _onednn_linear(inputs, weight).to(self.result_dtype)
            # oneDNN returns a new tensor: in blocks the allocator serves from memory it keeps.
            rows = max(1, _BLOCK_BYTES // (inputs.element_size() * max(1, weight.size(0))))
            for start in range(0, inputs.size(0), rows):
                block = _onednn_linear(inputs[start : start + rows], weight)
                out[start : start + rows].copy_(block)
            return out
        if not self.mixed:
            return torch.mm(inputs, weight.t(), out=out)
        if self.cublas_results:
            if out is None:
                return torch.mm(inputs, weight.t(), out_dtype=self.result_dtype)
            return torch.mm(inputs, weight.t(), out_dtype=self.result_dtype, out=out)
        product = torch.mm(inputs, weight.t())
        return product.to(self.result_dtype) if out is None else out.copy_(product)

    def accumulate(self, total: torch.Tensor, inputs: torch.Tensor, weight: torch.Tensor) -> None:
        """`total += inputs @ weight.T`, in place (`total` `(rows, out)`)."""
        inputs, weight = self._operand(inputs), self._operand(weight)
        if self.onednn and inputs.size(1) > 0:
            total.add_(_onednn_linear(inputs, weight))
        elif not self.mixed:
            total.addmm_(inputs, weight.t())
        elif self.cublas_results:
            torch.addmm(total, inputs, weight.t(), out_dtype=self.result_dtype, out=total)
        else:
            total.add_(torch.mm(inputs, weight.t()))

    def affine(
        self, bias: torch.Tensor, inputs: torch.Tensor, weight: torch.Tensor, out: torch.Tensor
    ) -> torch.Tensor:
        """`out` `(rows, out)` = `bias + inputs @ weight.T` (`bias` `(out,)`): `torch.addmm`,
        where the operands have the results' dtype."""
        if not self.mixed:
            return torch.addmm(bias, inputs, weight.t(), out=out)
        self.linear(inputs, weight, out=out)
        return out.add_(bias)


def onednn_preferred(capability: str, vendor: str) -> bool:
    """Whether oneDNN multiplies float32 with wider vectors than MKL: AMD with AVX-512, where
    MKL runs its AVX2 code."""
    return capability == "AVX512" and vendor == "AuthenticAMD"


@functools.lru_cache(maxsize=None)
def _cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _onednn_chosen(dtype: torch.dtype) -> bool:
    # Unset: bfloat16 operands wherever it works (MKL has no faster bfloat16 product).
    setting = os.environ.get("ELMO_C_ONEDNN")
    if setting == "0":
        return False
    if dtype == torch.float32 and setting != "1" and not onednn_preferred(
        torch.backends.cpu.get_cpu_capability(), _cpu_vendor()
    ):
        return False
    return _onednn_multiplies(dtype)


def _onednn_linear(inputs: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, None, "none", [], "")


# The largest error from float64 products (absolute for float32, relative for bfloat16).
_CHECK_TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 2.0**-7}


@functools.lru_cache(maxsize=None)
def _onednn_multiplies(dtype: torch.dtype) -> bool:
    """Whether oneDNN's linear runs here on `dtype` operands (transposed) within
    `_CHECK_TOLERANCE` of float64 products."""
    if not torch.backends.mkldnn.is_available():
        logger.info("products: torch has no oneDNN; the LSTM's products use torch.mm")
        return False
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(300, 37, generator=generator).t().to(dtype)  # (37, 300), transposed
    weight = torch.randn(300, 129, generator=generator).t().to(dtype)  # (129, 300)
    try:
        with torch.no_grad():
            product = _onednn_linear(inputs, weight)
            if dtype != torch.float32:  # and through a reordered weight (`Products.weight`)
                reordered = torch.ops.mkldnn._reorder_linear_weight(weight, inputs.size(0))
                if not torch.equal(_onednn_linear(inputs, reordered), product):
                    raise RuntimeError("a reordered weight gives another product")
    except (RuntimeError, AttributeError) as error:
        logger.info("products: oneDNN's %s linear is unavailable (%s); using torch.mm",
                    dtype, error)
        return False
    exact = inputs.double() @ weight.double().t()
    scale = 1.0 if dtype == torch.float32 else exact.abs() + 1  # absolute, or relative
    error = (
        ((product.double() - exact).abs() / scale).max().item()
        if product.shape == exact.shape
        else None
    )
    if error is None or not error < _CHECK_TOLERANCE[dtype]:
        logger.warning(
            "products: oneDNN's %s linear is %s from float64 products; using torch.mm", dtype, error
        )
        return False
    return True


@functools.lru_cache(maxsize=None)
def _cublas_results_work(dtype: torch.dtype) -> bool:
    """Whether `mm` and `addmm` take `out_dtype` on a GPU (capturable: nothing read back)."""
    operands = torch.ones(1, 1, dtype=dtype, device="cuda")
    total = torch.ones(1, 1, device="cuda")
    try:
        torch.addmm(total, operands, operands, out_dtype=torch.float32, out=total)
        torch.mm(operands, operands, out_dtype=torch.float32, out=total)
    except (RuntimeError, TypeError) as error:
        logger.info("products: no float32 results of %s products on this GPU (%s)", dtype, error)
        return False
    return True


def bfloat16_unsupported(device: torch.device) -> Optional[str]:
    """Why `device` has no fast bfloat16 matrix products (None where it has them)."""
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return None
        return f"{torch.cuda.get_device_name(device)} has no bfloat16 tensor cores"
    if device.type == "cpu":
        if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return None
        return "torch's oneDNN has no bfloat16 kernels for this CPU (they need AVX-512)"
    return f"the mixed-precision encoder runs on CPU and CUDA devices, not {device.type}"
