"""
One layer of ELMo-C's LSTM with a projection (LSTMP, Sak et al. 2014) over left-aligned,
variable-length sequences, with a hand-written backward pass. Per timestep (torch's gate order):

    i, f, g, o = σ, σ, tanh, σ of  W_ih x_t + b + W_hh h_{t-1}
    c_t = clip(f * c_{t-1} + i * g, cell_clip)         (clip optional)
    p_t = clip(W_hr (o * tanh(c_t)), projection_clip)  (clip optional)
    n_t = LayerNorm(p_t)                               (optional; otherwise n_t = p_t)
    h_t = n_t * d                                      (d: recurrent dropout mask, optional)

`(h_t, c_t)` is the output and the state fed back (h_0 is not dropped), as in
`ProjectedLstmLayer`'s reference loop, in one autograd node; each step's pointwise work runs in
the kernel module `pointwise_kernels` picks; on a GPU the loops are replayed from CUDA graphs.
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
    The kernels for `stage` ("forward" or "backward") on `tensor`'s device and dtype:
    `lstmp_triton` on a GPU (float32, `ELMO_C_TRITON` not "0"), `lstmp_cpu` on CPU (float32,
    built, `ELMO_C_CPU_KERNELS` not "0"; its forward only if `FORWARD_AS_TORCH`), else
    `lstmp_torch`.
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
    # A pooled buffer whose steps (dimension 0) from `written` on are zero.
    buffer = POOL.empty(shape, like, dtype)
    buffer[written:] = 0
    return buffer


class Buffers(NamedTuple):
    """What the forward pass writes and the backward pass reads, time-major."""

    gates: torch.Tensor  # (timesteps, batch, 4 * cell): W_ih x + b, then the activations
    cells: torch.Tensor  # (timesteps + 1, batch, cell): c_0, then c_t
    hiddens: torch.Tensor  # (timesteps + 1, batch, projection): h_0, then h_t
    tanh_cells: torch.Tensor  # (timesteps, batch, cell)
    projected: torch.Tensor  # (timesteps, batch, projection): p_t, clipped
    means: Optional[torch.Tensor]  # (timesteps, batch, 1), with a LayerNorm
    rstds: Optional[torch.Tensor]
    cell_keep: torch.Tensor  # (timesteps, batch, cell) bool: true where no clip ran
    projection_keep: torch.Tensor  # (timesteps, batch, projection) bool
    low_hiddens: Optional[torch.Tensor]

    @property
    def recurrent(self) -> torch.Tensor:
        """h_0 .. h_T as the products with W_hh read them."""
        return self.hiddens if self.low_hiddens is None else self.low_hiddens

    def step(self, t: int, rows: Optional[int] = None) -> Step:
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
    """The recurrence over `steps` steps on all rows; `gates` holds W_ih x + b."""
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
    Backpropagation through the `steps` steps, the carries updated in place: with `running`
    `(timesteps, batch, 1)` on all rows (fixed shapes, for CUDA graphs), with `batch_sizes`
    (`lstmp_torch` only) on `[:batch_sizes[t]]`. Returns dL/d(gates), dL/dn_t, dL/dp_t, the
    carries, and dL/d(gates) in `product_dtype`.
    """
    timesteps, batch, four_cells = buffers.gates.shape
    projection_size = w_hr.size(0)
    product_dtype = buffers.gates.dtype if product_dtype is None else product_dtype
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
        # inputs: (batch, timesteps, in), rows sorted by length, descending.
        batch, timesteps, _ = inputs.shape
        steps = sum(1 for n in batch_sizes if n > 0)
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
        # The products over every timestep: a @ b as products.linear(a, b.t()).
        products = Products(inputs, product_dtype)
        flat_gates = low_grad_gates.view(timesteps * batch, -1)
        time_major_inputs = inputs.transpose(0, 1).reshape(timesteps * batch, input_size)
        grad_inputs = products.linear(flat_gates, w_ih.t())
        grad_inputs = grad_inputs.view(timesteps, batch, input_size).transpose(0, 1)
        grad_w_ih = products.linear(
            flat_gates.t(), time_major_inputs.t(), out=POOL.empty(w_ih.shape, w_ih)
        )
        grad_bias = grad_gates.view(timesteps * batch, -1).sum(0)
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
    The layer over `inputs` `(batch, timesteps, input_size)`, left-aligned, of `lengths`
    `(batch,)` (0 allowed), from the states `hidden` `(batch, projection)` and `cell` `(batch,
    cell)`. `w_ih`, `w_hh`, `bias`, `w_hr`: `(4 * cell, input_size)`, `(4 * cell, projection)`,
    `(4 * cell,)`, `(projection, cell)`; `norm_weight`, `norm_bias` `(projection,)`: both or
    neither; the clips bound the cell and the projected state; `dropout` `(batch, projection)`,
    scaled, multiplies the state fed back, emitted and returned (not the initial state).

    Returns outputs `(batch, timesteps, projection)` (zeros past each length) and the states
    after each sequence's last step. Under bfloat16 autocast the matrix products take bfloat16
    operands with float32 results; under float16 autocast the layer runs in float32.
    """
    if (norm_weight is None) != (norm_bias is None):
        raise ValueError("lstm_with_projection: give both norm_weight and norm_bias, or neither")
    device_type, product_dtype = inputs.device.type, inputs.dtype
    autocast = contextlib.nullcontext()
    if device_type in ("cpu", "cuda") and torch.is_autocast_enabled(device_type):
        bfloat16 = torch.get_autocast_dtype(device_type) == torch.bfloat16
        product_dtype = torch.bfloat16 if bfloat16 else torch.float32
        inputs, hidden, cell, w_ih, w_hh, bias, w_hr, norm_weight, norm_bias, dropout = (
            None if t is None else t.float()
            for t in (inputs, hidden, cell, w_ih, w_hh, bias, w_hr, norm_weight, norm_bias, dropout)
        )
        autocast = torch.autocast(device_type, enabled=False)
    order = torch.argsort(lengths, descending=True, stable=True)
    unsort = torch.argsort(order)

    def rows(tensor: torch.Tensor) -> torch.Tensor:  # sorted by length, longest first
        return permute(tensor, 0, order, unsort)

    def unsorted(tensor: torch.Tensor) -> torch.Tensor:
        return permute(tensor, 0, unsort, order)

    steps = torch.arange(inputs.size(1), device=lengths.device)
    batch_sizes = (lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(1).tolist()
    # Triton kernels and graph captures run on the current CUDA device: make it the inputs'.
    device = torch.cuda.device(inputs.device) if inputs.is_cuda else contextlib.nullcontext()
    with autocast, device:
        outputs, h_n, c_n = _LstmpFunction.apply(
            rows(inputs), batch_sizes, rows(hidden), rows(cell), w_ih, w_hh, bias, w_hr,
            norm_weight, norm_bias, norm_eps, cell_clip, projection_clip,
            None if dropout is None else dropout.index_select(0, order), product_dtype,
        )  # fmt: skip
        return unsorted(outputs), unsorted(h_n), unsorted(c_n)
