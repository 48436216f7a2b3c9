"""
One layer of ELMo-C's LSTM with a projection (LSTMP, Sak et al. 2014) over left-aligned,
variable-length sequences, with a hand-written backward pass (backpropagation through time).

Per timestep (gate order input, forget, cell, output as in torch; a row past its length is
computed but ignored, as in the reference loop):

    i, f, g, o = σ, σ, tanh, σ of  W_ih x_t + b + W_hh h_{t-1}
    c_t = clip(f * c_{t-1} + i * g, cell_clip)         (clip optional)
    p_t = clip(W_hr (o * tanh(c_t)), projection_clip)  (clip optional)
    n_t = LayerNorm(p_t)                               (optional; otherwise n_t = p_t)
    h_t = n_t * d                                      (d: recurrent dropout mask, optional)

`(h_t, c_t)` is both the output and the state fed back (the dropped state, as in the paper's
code and AllenNLP's `LstmCellWithProjection`; the initial state h_0 is not dropped): exactly the
per-step loop of `ProjectedLstmLayer`'s reference backend, in one autograd node.

Why a hand-written backward: autograd through a per-step Python loop records a dozen nodes per
step, and slicing precomputed input gates makes each slice's backward materialise a zero tensor of
the whole `(batch, timesteps, 4 * cell)` gradient (quadratic in the sequence length; this is what
torch's own CPU LSTM-with-projection fallback does). Here the forward pass writes every step into
preallocated time-major buffers, the backward loop does two small matrix products per step, and
all weight gradients are a few large matrix products over every timestep at the end.

Without LayerNorm, clips and dropout it is exactly what `torch.lstm` computes with weights
`[w_ih, w_hh, b, 0, w_hr]`; the tests compare values and gradients against `torch.lstm`, against
the reference loop, and with gradcheck.

One loop per pass runs the steps; each step's pointwise work is a few calls into a kernel
module picked by `pointwise_kernels`: fused Triton kernels on a GPU
(`allennlp_elmo_c.nn.lstmp_triton`), C on CPU (`allennlp_elmo_c.nn.lstmp_cpu`, its forward
rounding exactly as the torch ops), or the same functions as torch ops
(`allennlp_elmo_c.nn.lstmp_torch`: float64, or those switched off). On a GPU the loops are
replayed from captured CUDA graphs (`cuda_graphs`). The float32 matrix products of both passes
on CPU run through MKL or oneDNN, whichever has the wider vectors on the machine
(`allennlp_elmo_c.nn.products`): equal to the reference's up to float32 rounding, as judged
against float64. On CPU the buffers come from a pool
(`allennlp_elmo_c.nn.buffer_pool`) rather than fresh pages every step.

Under bfloat16 autocast the same passes run in mixed precision (`lstm_with_projection`,
"Precision"): the products take bfloat16 operands (each weight cast once per pass; h_t also written
to a bfloat16 copy for W_hh's products, dL/d(gates) likewise for W_hh's and the products over every
step) and return float32, into the same float32 buffers the pointwise kernels read and write.
"""

import contextlib
import functools
import logging
import os
from types import ModuleType
from typing import List, NamedTuple, Optional, Tuple

import torch

from allennlp_elmo_c.nn import cuda_graphs, lstmp_torch
from allennlp_elmo_c.nn.buffer_pool import POOL
from allennlp_elmo_c.nn.lstmp_torch import Cell, Step, StepGradients
from allennlp_elmo_c.nn.products import Products
from allennlp_elmo_c.nn.permutation import permute

logger = logging.getLogger(__name__)


def pointwise_kernels(tensor: torch.Tensor, stage: str = "forward") -> ModuleType:
    """
    The module whose five functions run the per-step pointwise work of `stage` ("forward" or
    "backward") on `tensor`'s device and dtype:
    - on a GPU, for float32, `allennlp_elmo_c.nn.lstmp_triton` (triton importable,
      `ELMO_C_TRITON` not "0");
    - on CPU, for float32, `allennlp_elmo_c.nn.lstmp_cpu` (its C extension built by `setup.py`;
      `ELMO_C_CPU_KERNELS=0` switches it off). Its forward kernels round exactly as the torch
      ops do (torch's own sigmoid, tanh and LayerNorm arithmetic); where that cannot be
      reproduced on the machine (`lstmp_cpu.FORWARD_AS_TORCH`), the forward steps run as torch
      ops and only the backward ones, which multiply and add saved activations, in C;
    - elsewhere `allennlp_elmo_c.nn.lstmp_torch`, the same functions as torch ops.
    """
    if tensor.dtype == torch.float32 and tensor.device.type == "cuda":
        if os.environ.get("ELMO_C_TRITON", "1") != "0":
            try:
                from allennlp_elmo_c.nn import lstmp_triton
            except ImportError:
                return lstmp_torch
            return lstmp_triton
    if (
        tensor.dtype == torch.float32
        and tensor.device.type == "cpu"
        and os.environ.get("ELMO_C_CPU_KERNELS", "1") != "0"
    ):
        kernels = _cpu_kernels()
        if kernels is not None and (stage == "backward" or kernels.FORWARD_AS_TORCH):
            return kernels
    return lstmp_torch


@functools.lru_cache(maxsize=None)
def _cpu_kernels() -> Optional[ModuleType]:
    try:
        from allennlp_elmo_c.nn import lstmp_cpu
    except ImportError as error:
        logger.info(
            "lstmp: the C kernels are not built (%s); the LSTM's CPU steps run as torch ops "
            "(slower at small sizes; `make install` builds them)",
            error,
        )
        return None
    return lstmp_cpu


def _empty_after(like: torch.Tensor, written: int, shape: Tuple[int, ...], dtype=None):
    # A pooled buffer whose first `written` steps (dimension 0) are all written by a loop: only
    # the rest is zeroed (at small sizes, filling whole buffers costs a few % of a step).
    buffer = POOL.empty(shape, like, dtype)
    buffer[written:] = 0
    return buffer


class Buffers(NamedTuple):
    """
    What the forward pass writes, time-major so that a step's rows are one contiguous block, and
    the backward pass reads. Every row of the first `steps` steps is written; the steps after
    them (all rows shorter than the batch) are zero.
    """

    gates: torch.Tensor  # (timesteps, batch, 4 * cell): W_ih x + b, then the activations
    cells: torch.Tensor  # (timesteps + 1, batch, cell): c_0, then c_t
    hiddens: torch.Tensor  # (timesteps + 1, batch, projection): h_0, then h_t
    tanh_cells: torch.Tensor  # (timesteps, batch, cell)
    projected: torch.Tensor  # (timesteps, batch, projection): p_t, clipped
    means: Optional[torch.Tensor]  # (timesteps, batch, 1), with a LayerNorm
    rstds: Optional[torch.Tensor]
    cell_keep: torch.Tensor  # (timesteps, batch, cell) bool: true where no clip ran
    projection_keep: torch.Tensor  # (timesteps, batch, projection) bool
    # (timesteps + 1, batch, projection): `hiddens` in the products' dtype, when that is not
    # float32 (the operand of W_hh's products, forward and for its gradient).
    low_hiddens: Optional[torch.Tensor]

    @property
    def recurrent(self) -> torch.Tensor:
        """h_0 .. h_T as the products with W_hh read them."""
        return self.hiddens if self.low_hiddens is None else self.low_hiddens

    def step(self, t: int, rows: Optional[int] = None) -> Step:
        """Step t's first `rows` rows (all by default), as the step kernels take them."""
        statistics = (None, None) if self.means is None else (self.means[t, :rows],
                                                               self.rstds[t, :rows])  # fmt: skip
        return Step(
            self.gates[t, :rows], self.cells[t, :rows], self.cells[t + 1, :rows],
            self.cell_keep[t, :rows], self.tanh_cells[t, :rows], self.projected[t, :rows],
            self.projection_keep[t, :rows], self.hiddens[t + 1, :rows], *statistics,
        )  # fmt: skip


def _forward_steps(
    kernels: ModuleType,
    gates: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    w_hh: torch.Tensor,
    w_hr: torch.Tensor,
    cell: Cell,
    steps: int,
    product_dtype: Optional[torch.dtype] = None,
) -> Buffers:
    """
    The recurrence over `steps` steps, each step's pointwise work in two of `kernels`' functions
    (see `pointwise_kernels`), its two matrix products on `product_dtype` operands (by default
    `gates.dtype`; the results in `gates.dtype`). `gates` `(timesteps, batch, 4 * cell)` holds
    W_ih x + b and becomes the buffers' `gates`. Every step runs on all rows, as the reference
    loop does: a row past its length computes values nobody reads (its state is taken at its
    length, its outputs are zeroed, its gradients are zero), and each step's products keep one
    shape.
    """
    timesteps, batch, _ = gates.shape
    cell_size, projection_size = w_hh.size(0) // 4, w_hr.size(0)
    product_dtype = gates.dtype if product_dtype is None else product_dtype
    normalise = cell.norm_weight is not None
    buffers = Buffers(
        gates,
        _empty_after(gates, steps + 1, (timesteps + 1, batch, cell_size)),
        _empty_after(gates, steps + 1, (timesteps + 1, batch, projection_size)),
        _empty_after(gates, steps, (timesteps, batch, cell_size)),
        _empty_after(gates, steps, (timesteps, batch, projection_size)),
        _empty_after(gates, steps, (timesteps, batch, 1)) if normalise else None,
        _empty_after(gates, steps, (timesteps, batch, 1)) if normalise else None,
        POOL.empty((timesteps, batch, cell_size), gates, torch.bool).fill_(True),
        POOL.empty((timesteps, batch, projection_size), gates, torch.bool).fill_(True),
        None if product_dtype == gates.dtype else _empty_after(
            gates, steps + 1, (timesteps + 1, batch, projection_size), product_dtype
        ),
    )  # fmt: skip
    buffers.cells[0], buffers.hiddens[0], buffers.recurrent[0] = c0, h0, h0  # (1 and 2: float32)
    memory = POOL.empty((batch, cell_size), gates)  # o * tanh(c_t), the input of W_hr
    # `Products`: oneDNN or torch.mm (see there); weights cast (and
    # for bfloat16 oneDNN, reordered) once for all steps.
    products = Products(gates, product_dtype)
    w_hh, w_hr = products.weight(w_hh, batch), products.weight(w_hr, batch)
    for t in range(steps):
        step = buffers.step(t)
        products.accumulate(step.gates, buffers.recurrent[t], w_hh)  # += h_{t-1} @ W_hh^T
        kernels.cell_forward(step, cell, memory)
        products.linear(memory, w_hr, out=step.projected)
        kernels.projection_forward(step, cell)
        if buffers.low_hiddens is not None:
            buffers.low_hiddens[t + 1].copy_(step.hiddens)
    return buffers


def _backward_steps(
    kernels: ModuleType,
    grad_outputs: torch.Tensor,
    dh_carry: torch.Tensor,
    dc_carry: torch.Tensor,
    running: Optional[torch.Tensor],
    buffers: Buffers,
    w_hh: torch.Tensor,
    w_hr: torch.Tensor,
    cell: Cell,
    batch_sizes: Optional[List[int]],
    steps: int,
    product_dtype: Optional[torch.dtype] = None,
) -> Tuple[torch.Tensor, ...]:
    """
    Backpropagation through the `steps` steps, each step's pointwise work in three of `kernels`'
    functions, its two matrix products on `product_dtype` operands (by default the buffers'
    dtype). `grad_outputs` `(timesteps, batch, projection)` (rows may lie apart); `dh_carry`
    and `dc_carry` `(batch, *)` start as the gradients of the final states and are updated in
    place. With `running` `(timesteps, batch, 1)`, every step works on all rows and keeps the
    results of the running ones (shapes that do not change from batch to batch: what a captured
    CUDA graph needs); with `batch_sizes` instead (`lstmp_torch` only), step t works on the
    rows still running (`[:batch_sizes[t]]`). Rows of a product are independent, so both give
    the running rows the same values. Returns dL/d(gates), dL/dn_t (the state before its
    dropout) and dL/dp_t (zeros where nothing ran), the carries, and dL/d(gates) in
    `product_dtype` (the operand of the products over every step: the same tensor in float32).
    """
    timesteps, batch, four_cells = buffers.gates.shape
    projection_size = w_hr.size(0)
    product_dtype = buffers.gates.dtype if product_dtype is None else product_dtype
    # Zero where the loop writes nothing: the steps after `steps`, and, unless every row of each
    # step is written, the rows past their length.
    written = steps if batch_sizes is None else 0
    grad_gates, grad_hiddens, grad_projected = (
        _empty_after(buffers.gates, written, (timesteps, batch, size))
        for size in (four_cells, projection_size, projection_size)
    )
    low_grad_gates = grad_gates if product_dtype == grad_gates.dtype else _empty_after(
        buffers.gates, written, (timesteps, batch, four_cells), product_dtype
    )  # fmt: skip
    dm = POOL.empty((batch, four_cells // 4), buffers.gates)
    dr = POOL.empty((batch, projection_size), buffers.gates)
    products = Products(buffers.gates, product_dtype)
    w_hr_t, w_hh_t = products.weight(w_hr.t()), products.weight(w_hh.t())
    for t in range(steps - 1, -1, -1):
        n = batch if batch_sizes is None else batch_sizes[t]
        grads = StepGradients(
            dh_carry[:n], dc_carry[:n], grad_outputs[t, :n],
            None if running is None else running[t], dm[:n], dr[:n], grad_gates[t, :n],
            grad_hiddens[t, :n], grad_projected[t, :n],
        )  # fmt: skip
        step = buffers.step(t, n)
        rows_cell = cell if n == batch or cell.dropout is None else cell._replace(
            dropout=cell.dropout[:n]
        )  # fmt: skip
        kernels.projection_backward(step, grads, rows_cell)
        products.linear(grads.grad_projected, w_hr_t, out=grads.dm)
        kernels.gate_backward(step, grads, rows_cell)
        step_grad_gates = low_grad_gates[t, :n]
        if low_grad_gates is not grad_gates:
            step_grad_gates.copy_(grads.grad_gates)
        products.linear(step_grad_gates, w_hh_t, out=grads.dr)
        kernels.carry_backward(grads)
    return grad_gates, grad_hiddens, grad_projected, dh_carry, dc_carry, low_grad_gates


class _LstmpFunction(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        inputs: torch.Tensor,
        batch_sizes: List[int],
        h0: torch.Tensor,
        c0: torch.Tensor,
        w_ih: torch.Tensor,
        w_hh: torch.Tensor,
        bias: torch.Tensor,
        w_hr: torch.Tensor,
        norm_weight: Optional[torch.Tensor],
        norm_bias: Optional[torch.Tensor],
        norm_eps: float,
        cell_clip: Optional[float],
        projection_clip: Optional[float],
        dropout: Optional[torch.Tensor],
        product_dtype: torch.dtype,
    ):
        # inputs: (batch, timesteps, in), rows sorted by length, descending; batch_sizes[t] rows
        # are still running at step t. Buffers are time-major so that step t's rows are one
        # contiguous block [t, :n].
        batch, timesteps, _ = inputs.shape
        steps = sum(1 for n in batch_sizes if n > 0)
        # (timesteps, batch, 4 * cell): W_ih x + b, overwritten step by step by the activations.
        gates = POOL.empty((timesteps, batch, w_ih.size(0)), inputs)
        Products(inputs, product_dtype).affine(
            bias, inputs.transpose(0, 1).reshape(-1, inputs.size(2)), w_ih,
            out=gates.view(timesteps * batch, -1),
        )  # fmt: skip
        settings = (norm_eps, cell_clip, projection_clip)
        kernels = pointwise_kernels(inputs)

        def loop(gates, h0, c0, w_hh, w_hr, norm_weight, norm_bias, dropout):
            cell = Cell(norm_weight, norm_bias, *settings, dropout)
            return _forward_steps(kernels, gates, h0, c0, w_hh, w_hr, cell, steps, product_dtype)

        tensors = (gates, h0, c0, w_hh, w_hr, norm_weight, norm_bias, dropout)
        if cuda_graphs.enabled(inputs.device):
            key = ("lstmp forward", kernels.__name__, steps, *settings, product_dtype)
            static = cuda_graphs.replay(key, loop, tensors)
            buffers = Buffers(*(None if t is None else t.clone() for t in static))
        else:
            buffers = loop(*tensors)
        ctx.save_for_backward(inputs, w_ih, w_hh, w_hr, norm_weight, norm_bias, dropout, *buffers)
        ctx.batch_sizes, ctx.steps, ctx.settings = batch_sizes, steps, settings
        ctx.product_dtype = product_dtype
        # Each row's final state: the step at its length (the initial state for length 0).
        rows = torch.arange(batch, device=inputs.device)
        running = torch.tensor(batch_sizes, device=inputs.device).unsqueeze(1) > rows  # (T, B)
        ctx.running = running
        lengths = running.sum(0)
        hiddens, cells = buffers.hiddens, buffers.cells
        outputs = (hiddens[1:] * running.unsqueeze(-1)).transpose(0, 1).contiguous()
        return outputs, hiddens[lengths, rows], cells[lengths, rows]

    @staticmethod
    def backward(ctx, grad_outputs, grad_hidden, grad_cell):  # type: ignore[override]
        inputs, w_ih, w_hh, w_hr, norm_weight, norm_bias, dropout, *saved = ctx.saved_tensors
        buffers = Buffers(*saved)
        gates, _, _, tanh_cells, projected, means, rstds, _, _, _ = buffers
        product_dtype = ctx.product_dtype
        batch, timesteps, input_size = inputs.shape
        cell_size, projection_size = w_hh.size(0) // 4, w_hr.size(0)
        dh_carry = inputs.new_zeros(batch, projection_size)
        dc_carry = inputs.new_zeros(batch, cell_size)
        if grad_hidden is not None:
            dh_carry += grad_hidden
        if grad_cell is not None:
            dc_carry += grad_cell
        grad_outputs = (
            grad_outputs.transpose(0, 1)
            if grad_outputs is not None
            else inputs.new_zeros(timesteps, batch, projection_size)
        )
        kernels = pointwise_kernels(inputs, "backward")
        graphs = cuda_graphs.enabled(inputs.device)
        if graphs or kernels is not lstmp_torch:  # every row each step, masked
            running, batch_sizes = ctx.running.unsqueeze(-1), None
        else:  # the rows still running each step
            running, batch_sizes = None, ctx.batch_sizes

        def loop(grad_outputs, dh_carry, dc_carry, running, w_hh, w_hr, norm_weight, norm_bias,
                 dropout, *buffers):  # fmt: skip
            cell = Cell(norm_weight, norm_bias, *ctx.settings, dropout)
            carries = (grad_outputs, dh_carry, dc_carry, running)
            return _backward_steps(kernels, *carries, Buffers(*buffers), w_hh, w_hr, cell,
                                   batch_sizes, ctx.steps, product_dtype)  # fmt: skip

        tensors = (grad_outputs, dh_carry, dc_carry, running, w_hh, w_hr, norm_weight, norm_bias,
                   dropout, *buffers)  # fmt: skip
        if graphs:
            key = ("lstmp backward", kernels.__name__, ctx.steps, *ctx.settings, product_dtype)
            results = cuda_graphs.replay(key, loop, tensors)
            grad_gates, grad_hiddens, grad_projected, dh_carry, dc_carry, low_grad_gates = results
            dh_carry, dc_carry = dh_carry.clone(), dc_carry.clone()
        else:
            results = loop(*tensors)
            grad_gates, grad_hiddens, grad_projected, dh_carry, dc_carry, low_grad_gates = results
        # The products over every timestep, on `product_dtype` operands (dL/d(gates) as the
        # loop left it in that dtype; the others cast once here): a @ b as
        # products.linear(a, b.t()).
        products = Products(inputs, product_dtype)
        flat_gates = low_grad_gates.view(timesteps * batch, -1)
        time_major_inputs = inputs.transpose(0, 1).reshape(timesteps * batch, input_size)
        grad_inputs = products.linear(flat_gates, w_ih.t())
        grad_inputs = grad_inputs.view(timesteps, batch, input_size).transpose(0, 1)
        # W_ih's and W_hh's gradients as two products (one product against [x_t, r_t] would
        # return non-contiguous halves, which autograd copies: 10% slower at the paper's size),
        # into pooled buffers (32 MB each at the paper's size): autograd hands them on as the
        # weights' `.grad` or adds them there, and the pool takes them back once dropped.
        grad_w_ih = products.linear(
            flat_gates.t(), time_major_inputs.t(), out=POOL.empty(w_ih.shape, w_ih)
        )
        grad_bias = grad_gates.view(timesteps * batch, -1).sum(0)
        # h_{t-1} as fed back (dropped already).
        recurrent = buffers.recurrent[:timesteps].reshape(timesteps * batch, -1)
        grad_w_hh = products.linear(
            flat_gates.t(), recurrent.t(), out=POOL.empty(w_hh.shape, w_hh)
        )
        # m_t = o_t * tanh(c_t) for every (step, row) that ran; zeros elsewhere meet zero grads.
        memory = POOL.empty(tanh_cells.shape, tanh_cells, products.dtype)
        torch.mul(gates[..., 3 * cell_size :], tanh_cells, out=memory)
        grad_w_hr = products.linear(
            grad_projected.view(timesteps * batch, -1).t(),
            memory.view(timesteps * batch, -1).t(),
            out=POOL.empty(w_hr.shape, w_hr),
        )
        grad_norm_weight = grad_norm_bias = None
        if norm_weight is not None:
            normalised = (projected - means) * rstds  # zeros where nothing ran
            grad_norm_weight = (grad_hiddens * normalised).sum((0, 1))
            grad_norm_bias = grad_hiddens.sum((0, 1))
        return (
            grad_inputs, None, dh_carry, dc_carry, grad_w_ih, grad_w_hh, grad_bias, grad_w_hr,
            grad_norm_weight, grad_norm_bias, None, None, None, None, None,
        )  # fmt: skip


def lstm_with_projection(
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    hidden: torch.Tensor,
    cell: torch.Tensor,
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    bias: torch.Tensor,
    w_hr: torch.Tensor,
    norm_weight: Optional[torch.Tensor] = None,
    norm_bias: Optional[torch.Tensor] = None,
    norm_eps: float = 1e-5,
    cell_clip: Optional[float] = None,
    projection_clip: Optional[float] = None,
    dropout: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    # Parameters

    inputs : `torch.Tensor`
        `(batch, timesteps, input_size)`, each sequence left-aligned.
    lengths : `torch.Tensor`
        `(batch,)` sequence lengths (0 allowed).
    hidden, cell : `torch.Tensor`
        Initial states, `(batch, projection_size)` and `(batch, cell_size)`.
    w_ih, w_hh, bias, w_hr : `torch.Tensor`
        `(4 * cell, input_size)`, `(4 * cell, projection)`, `(4 * cell,)`, `(projection, cell)`.
    norm_weight, norm_bias : `torch.Tensor`, optional
        `(projection,)`: LayerNorm of the projected state inside the recurrence (both or neither).
    norm_eps : `float`
    cell_clip, projection_clip : `float`, optional
        Clip the cell state / the projected state (before the LayerNorm) to `[-clip, clip]`.
    dropout : `torch.Tensor`, optional
        `(batch, projection)`: multiplies the state at every step (variational dropout, already
        scaled): the dropped state is fed back, emitted and returned as the final state (the
        initial state is not dropped); receives no gradient.

    # Returns

    outputs `(batch, timesteps, projection_size)` (zeros past each length), and the hidden and
    cell states after each sequence's last step.

    # Precision

    Without autocast everything runs in the inputs' dtype. Under bfloat16 autocast (CPU or
    GPU) the layer is mixed precision: the three matrix products (input, recurrent,
    projection), forward and backward, weight gradients included, multiply bfloat16 operands
    with float32 accumulation (`allennlp_elmo_c.nn.products`; each weight is cast once per
    pass), and everything else runs in float32 as without autocast: the cell state, the gate
    nonlinearities, clips, LayerNorm, the state carried from step to step (of which the
    recurrent product reads a bfloat16 copy), the outputs, final states and every gradient
    returned (float32, for float32 parameters). Under float16 autocast the whole layer runs in
    float32 (no loss scaling here; on a GPU its products then follow torch's float32 precision
    setting, TF32 when allowed).
    """
    if (norm_weight is None) != (norm_bias is None):
        raise ValueError("lstm_with_projection: give both norm_weight and norm_bias, or neither")
    device_type = inputs.device.type
    if device_type in ("cpu", "cuda") and torch.is_autocast_enabled(device_type):
        bfloat16 = torch.get_autocast_dtype(device_type) == torch.bfloat16
        tensors = (hidden, cell, w_ih, w_hh, bias, w_hr, norm_weight, norm_bias, dropout)
        # Autocast off inside: the hand-written passes choose each operation's precision.
        with torch.autocast(device_type, enabled=False):
            return _lstm_with_projection(
                inputs.float(), lengths, *(None if t is None else t.float() for t in tensors),
                norm_eps, cell_clip, projection_clip,
                torch.bfloat16 if bfloat16 else torch.float32,
            )  # fmt: skip
    return _lstm_with_projection(
        inputs, lengths, hidden, cell, w_ih, w_hh, bias, w_hr, norm_weight, norm_bias, dropout,
        norm_eps, cell_clip, projection_clip, inputs.dtype,
    )  # fmt: skip


def _lstm_with_projection(
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    hidden: torch.Tensor,
    cell: torch.Tensor,
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    bias: torch.Tensor,
    w_hr: torch.Tensor,
    norm_weight: Optional[torch.Tensor],
    norm_bias: Optional[torch.Tensor],
    dropout: Optional[torch.Tensor],
    norm_eps: float,
    cell_clip: Optional[float],
    projection_clip: Optional[float],
    product_dtype: torch.dtype,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # `lstm_with_projection` with the matrix products' operand dtype decided.
    order = torch.argsort(lengths, descending=True, stable=True)
    unsort = torch.argsort(order)

    def rows(tensor: torch.Tensor) -> torch.Tensor:  # sorted by length, longest first
        return permute(tensor, 0, order, unsort)

    def unsorted(tensor: torch.Tensor) -> torch.Tensor:
        return permute(tensor, 0, unsort, order)

    timesteps = inputs.size(1)
    steps = torch.arange(timesteps, device=lengths.device)
    batch_sizes = (lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(1).tolist()
    # Triton kernels and graph captures run on the current CUDA device: make it the inputs'
    # (a single-process run on cuda:1 leaves the current device at cuda:0).
    device = torch.cuda.device(inputs.device) if inputs.is_cuda else contextlib.nullcontext()
    with device:
        outputs, h_n, c_n = _LstmpFunction.apply(
            rows(inputs), batch_sizes, rows(hidden), rows(cell), w_ih, w_hh, bias, w_hr,
            norm_weight, norm_bias, norm_eps, cell_clip, projection_clip,
            None if dropout is None else dropout.index_select(0, order), product_dtype,
        )  # fmt: skip
    return unsorted(outputs), unsorted(h_n), unsorted(c_n)
