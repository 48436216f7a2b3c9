"""
The matrix products of `allennlp_elmo_c.nn.lstmp`'s fused backend, forward and backward, on CPU
through oneDNN.

On CPU, torch's float32 `mm` calls MKL, which on AMD processors runs its AVX2 code and, at the
shapes of the LSTM's per-step products (16 rows against a 16384 x 512 weight at the paper's
size), well under the machine's AVX-512 rate. oneDNN, which torch ships for its own CPU
inference (`torch.ops.mkldnn._linear_pointwise`, what inductor's frozen linear layers call),
picks its kernels by instruction set: on one core of an AVX-512 AMD EPYC it ran the backward's
products at 120 to 220 GFLOP/s against MKL's 60 to 100 (`experiments/speed/product_rates.py`,
`experiments/speed/RESULTS.md`), and the forward's per-step products (`h_t W_hh^T`, `m_t W_hr^T`) in
3.6 ms against 6.2 (batch 16) and 8.3 against 17.6 (batch 64) at the paper's size.

A different summation order rounds differently, and over long clipped sequences the recurrence
carries a one-ulp difference forward (4e-5 after 40 steps at the demo size). That is float32
rounding, not another function: the backends are judged against a float64 run of the reference,
within twice the float32 reference's own error (which is of that size), for every layer's values
and every gradient (tests/modules/seq2seq_encoders/test_backend_agreement.py,
tests/nn/test_products.py).

oneDNN generates a kernel for each new product shape (about 3 ms here), kept in its primitive
cache (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`, 1024 by default). With the C kernels (`lstmp_cpu`)
every step's products take the whole batch, so a run with fixed batch and window sizes meets a
handful of shapes and pays once for each; without them each step takes the rows still running,
up to two shapes per distinct row count.

`Products(tensor)` uses oneDNN for float32 CPU tensors outside grad mode (the op has no
derivative), when torch has the op and it passes a check against float64 products on first
use; `ELMO_C_ONEDNN=0` switches it off. Otherwise it runs `torch.mm`, MKL on CPU, cuBLAS on a
GPU.
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
    `linear(inputs, weight)` = `inputs @ weight.T`, as `torch.nn.functional.linear` without a
    bias, through oneDNN where it serves `like`'s device and dtype (see the module docstring)
    and `torch.mm` elsewhere.

    # Parameters

    like : `torch.Tensor`
        A tensor with the device and dtype of the operands.
    """

    def __init__(self, like: torch.Tensor) -> None:
        self.onednn = (
            like.device.type == "cpu"
            and like.dtype == torch.float32
            and not torch.is_grad_enabled()
            and os.environ.get("ELMO_C_ONEDNN", "1") != "0"
            and _onednn_works()
        )

    def weight(self, weight: torch.Tensor) -> torch.Tensor:
        """
        `weight` `(out, in)` in the layout `linear` reads fastest, for a weight used in many
        products: oneDNN streams rows, so a transposed view is copied once here (into a pooled
        buffer: at the paper's size W_hh is 32 MB).
        """
        if not self.onednn or weight.is_contiguous():
            return weight
        return POOL.empty(weight.shape, weight).copy_(weight)

    def linear(
        self, inputs: torch.Tensor, weight: torch.Tensor, out: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """
        # Parameters

        inputs : `torch.Tensor`
            `(rows, in)`, any strides.
        weight : `torch.Tensor`
            `(out, in)`, any strides.
        out : `torch.Tensor`, optional
            `(rows, out)`, where the product is written (`torch.mm` writes it there, so that a
            captured CUDA graph allocates nothing; oneDNN's is copied there, a few MB at a
            time).

        # Returns

        `torch.Tensor`
            `(rows, out)`, contiguous: `inputs @ weight.T`.
        """
        if self.onednn and inputs.size(1) > 0:  # (oneDNN has no empty inner dimension)
            if out is None:
                return _onednn_linear(inputs, weight)
            # oneDNN returns a new tensor: in blocks of rows small enough that the allocator
            # serves them from memory it keeps (glibc maps 32 MB and more afresh every time).
            rows = max(1, _BLOCK_BYTES // (4 * max(1, weight.size(0))))
            for start in range(0, inputs.size(0), rows):
                block = _onednn_linear(inputs[start : start + rows], weight)
                out[start : start + rows].copy_(block)
            return out
        return torch.mm(inputs, weight.t(), out=out)

    def accumulate(self, total: torch.Tensor, inputs: torch.Tensor, weight: torch.Tensor) -> None:
        """`total += inputs @ weight.T`, in place (`total` `(rows, out)`)."""
        if self.onednn and inputs.size(1) > 0:
            total.add_(_onednn_linear(inputs, weight))
        else:
            total.addmm_(inputs, weight.t())


def _onednn_linear(inputs: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, None, "none", [], "")


@functools.lru_cache(maxsize=None)
def _onednn_works() -> bool:
    """Whether torch's oneDNN linear runs here and multiplies in float32 (checked once, on
    transposed operands, against float64 products)."""
    if not torch.backends.mkldnn.is_available():
        logger.info("backward products: torch has no oneDNN; the LSTM's backward uses torch.mm")
        return False
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(300, 37, generator=generator).t()  # (37, 300), transposed strides
    weight = torch.randn(300, 129, generator=generator).t()  # (129, 300)
    try:
        with torch.no_grad():
            product = _onednn_linear(inputs, weight)
    except (RuntimeError, AttributeError) as error:
        logger.info("backward products: oneDNN's linear is unavailable (%s); using torch.mm", error)
        return False
    exact = inputs.double() @ weight.double().t()
    # float32 rounding over 300 terms of size ~1: errors around 1e-5; bfloat16 would be ~0.1.
    error = (
        (product.double() - exact).abs().max().item() if product.shape == exact.shape else None
    )
    if error is None or not error < 1e-3:
        logger.warning(
            "backward products: oneDNN's linear is %s from float64 products; using torch.mm",
            error,
        )
        return False
    return True
