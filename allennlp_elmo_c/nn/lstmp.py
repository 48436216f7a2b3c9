"""
An LSTM with a recurrent projection (LSTMP, Sak et al. 2014) over left-aligned, variable-length
sequences, with a hand-written backward pass (backpropagation through time) for the CPU.

Why: `torch.lstm` with `proj_size` runs cuDNN on GPU, but on CPU oneDNN has no projection
support and torch falls back to a generic per-timestep implementation whose autograd graph slices
the precomputed input gates at every step; each slice's backward materialises a zero tensor of
the whole `(batch, timesteps, 4 * cell)` gradient, making the backward pass quadratic in the
sequence length. Here the forward loop keeps only what the backward needs, the backward loop
does two small matrix products per step, and the weight gradients are three large matrix
products over all timesteps at the end.

It computes exactly what `torch.lstm` computes with weights `[w_ih, w_hh, b, 0, w_hr]`
(gate order input, forget, cell, output); the tests compare values and gradients.
"""

from typing import List, Tuple

import torch


class _LstmpFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, batch_sizes, h0, c0, w_ih, w_hh, bias, w_hr):
        # inputs: (batch, timesteps, in), rows sorted by length, descending; batch_sizes[t] rows
        # are still running at step t.
        batch, timesteps, _ = inputs.shape
        cell_size = w_hh.size(0) // 4
        input_gates = torch.addmm(bias, inputs.reshape(batch * timesteps, -1), w_ih.t())
        input_gates = input_gates.view(batch, timesteps, 4 * cell_size)
        hidden, cell = h0.clone(), c0.clone()
        outputs = inputs.new_zeros(batch, timesteps, w_hr.size(0))
        saved: List[Tuple[torch.Tensor, ...]] = []
        for t in range(timesteps):
            n = batch_sizes[t]
            if n == 0:
                break
            h_prev, c_prev = hidden[:n], cell[:n]
            # One sigmoid over all four gates and one tanh for the cell gate: fewer kernels
            # (each op costs microseconds of dispatch, which matters at small sizes).
            pre_activation = torch.addmm(input_gates[:n, t], h_prev, w_hh.t())
            i, f, _, o = pre_activation.sigmoid().chunk(4, dim=1)
            g = pre_activation[:, 2 * cell_size : 3 * cell_size].tanh()
            c = torch.addcmul(f * c_prev, i, g)
            tanh_c = torch.tanh(c)
            m = o * tanh_c
            h = m.matmul(w_hr.t())
            saved.append((i, f, g, o, c_prev, tanh_c, m, h_prev))
            hidden = torch.cat([h, hidden[n:]]) if n < batch else h
            cell = torch.cat([c, cell[n:]]) if n < batch else c
            outputs[:n, t] = h
        ctx.save_for_backward(inputs, w_ih, w_hh, w_hr)
        ctx.saved_steps = saved
        ctx.batch_sizes = batch_sizes
        return outputs, hidden, cell

    @staticmethod
    def backward(ctx, grad_outputs, grad_hidden, grad_cell):
        inputs, w_ih, w_hh, w_hr = ctx.saved_tensors
        saved, batch_sizes = ctx.saved_steps, ctx.batch_sizes
        batch, timesteps, _ = inputs.shape
        cell_size = w_hh.size(0) // 4
        dh_carry = (
            grad_hidden.clone()
            if grad_hidden is not None
            else inputs.new_zeros(batch, w_hr.size(0))
        )
        dc_carry = (
            grad_cell.clone() if grad_cell is not None else inputs.new_zeros(batch, cell_size)
        )
        grad_gates = inputs.new_zeros(batch, timesteps, 4 * cell_size)
        grad_h_total = inputs.new_zeros(batch, timesteps, w_hr.size(0))
        for t in range(len(saved) - 1, -1, -1):
            n = batch_sizes[t]
            i, f, g, o, c_prev, tanh_c, m, h_prev = saved[t]
            dh = dh_carry[:n] + grad_outputs[:n, t]
            grad_h_total[:n, t] = dh
            dm = dh.matmul(w_hr)
            do = dm * tanh_c
            dc = dc_carry[:n] + dm * o * (1 - tanh_c * tanh_c)
            di, df, dg = dc * g, dc * c_prev, dc * i
            dgates = torch.cat(
                [di * i * (1 - i), df * f * (1 - f), dg * (1 - g * g), do * o * (1 - o)], dim=1
            )
            grad_gates[:n, t] = dgates
            dh_carry[:n] = dgates.matmul(w_hh)
            dc_carry[:n] = dc * f
        flat_gates = grad_gates.view(batch * timesteps, -1)
        grad_inputs = flat_gates.matmul(w_ih).view_as(inputs)
        grad_w_ih = flat_gates.t().matmul(inputs.reshape(batch * timesteps, -1))
        grad_bias = flat_gates.sum(0)
        # h_{t-1} and m_t for every (row, step) that ran, aligned with grad_gates / grad_h_total.
        h_prev_all = inputs.new_zeros(batch, timesteps, w_hr.size(0))
        m_all = inputs.new_zeros(batch, timesteps, cell_size)
        for t, (_, _, _, _, _, _, m, h_prev) in enumerate(saved):
            n = batch_sizes[t]
            h_prev_all[:n, t] = h_prev
            m_all[:n, t] = m
        grad_w_hh = flat_gates.t().matmul(h_prev_all.view(batch * timesteps, -1))
        grad_w_hr = (
            grad_h_total.view(batch * timesteps, -1).t().matmul(m_all.view(batch * timesteps, -1))
        )
        return grad_inputs, None, dh_carry, dc_carry, grad_w_ih, grad_w_hh, grad_bias, grad_w_hr


def lstm_with_projection(
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    hidden: torch.Tensor,
    cell: torch.Tensor,
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    bias: torch.Tensor,
    w_hr: torch.Tensor,
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

    # Returns

    outputs `(batch, timesteps, projection_size)` (zeros past each length), and the hidden and
    cell states after each sequence's last step.
    """
    if inputs.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        # The hand-written backward mixes saved activations with the weights; under CPU
        # autocast (bf16/fp16) the recurrence runs in float32 instead, as autocast does for its
        # precision-sensitive ops (the cell state accumulates over every timestep).
        with torch.autocast("cpu", enabled=False):
            return lstm_with_projection(
                inputs.float(),
                lengths,
                *(t.float() for t in (hidden, cell, w_ih, w_hh, bias, w_hr)),
            )
    order = torch.argsort(lengths, descending=True, stable=True)
    unsort = torch.argsort(order)
    timesteps = inputs.size(1)
    steps = torch.arange(timesteps, device=lengths.device)
    batch_sizes = (lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(1).tolist()
    outputs, h_n, c_n = _LstmpFunction.apply(
        inputs[order], batch_sizes, hidden[order], cell[order], w_ih, w_hh, bias, w_hr
    )
    return outputs[unsort], h_n[unsort], c_n[unsort]
