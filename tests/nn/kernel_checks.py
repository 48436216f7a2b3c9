"""
Checks shared by the tests of the per-step kernel modules of `allennlp_elmo_c.nn.lstmp`
(`lstmp_triton` on a GPU or in Triton's interpreter, `lstmp_cpu` in C): each module's five
functions, run by `lstmp._forward_steps` / `lstmp._backward_steps`, compute what the same loops
compute with `lstmp_torch`'s torch ops, for every variant of the
cell (LayerNorm, clips, dropout on or off), one step and all steps, with ragged lengths.
"""
import torch

from allennlp_elmo_c.nn import cuda_graphs, lstmp, lstmp_torch
from tests.modules.seq2seq_encoders.test_backend_agreement import (
    TOLERANCES,
    assert_backends_agree,
    assert_equal_to,
    clipping_layer,
    inputs_and_state,
)

# One step: the kernels' own rounding. All steps: the recurrence carries it on (the inputs below
# keep it well conditioned: the torch ops are as far from float64 as the kernels are).
KERNEL_TOLERANCE = 1e-6
LOOP_TOLERANCE = 1e-5
BATCH, CELL, PROJECTION, TIMESTEPS = 7, 40, 24, 9
LENGTHS = [9, 9, 6, 5, 2, 1, 0]  # sorted, descending, as lstmp's loops see them

def step_inputs(normalise, dropout, seed=0):
    """A layer's step tensors, scaled so that the clips below bite on about a quarter."""
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return scale * torch.randn(*shape, generator=generator)

    gates = randn(TIMESTEPS, BATCH, 4 * CELL)
    gates[..., CELL : 2 * CELL] += 2.0  # forget gates near 1: cells grow past the clip
    h0, c0 = randn(BATCH, PROJECTION), randn(BATCH, CELL, scale=2.0)
    w_hh = randn(4 * CELL, PROJECTION, scale=0.1)
    w_hr = randn(PROJECTION, CELL, scale=0.3)
    norm = (1 + 0.5 * randn(PROJECTION), 0.5 * randn(PROJECTION)) if normalise else (None, None)
    mask = None
    if dropout:
        mask = (torch.rand(BATCH, PROJECTION, generator=generator) > 0.3).float() / 0.7
    return gates, h0, c0, w_hh, w_hr, *norm, mask


def assert_close(ours, theirs, name, tolerance=KERNEL_TOLERANCE):
    if theirs is None:
        assert ours is None, name
    elif theirs.dtype == torch.bool:
        assert torch.equal(ours, theirs), name
    else:
        assert_equal_to(ours, theirs, tolerance, name)


FORWARD_NAMES = ["gates", "cells", "hiddens", "tanh_cells", "projected", "means", "rstds",
                 "cell_keep", "projection_keep"]  # fmt: skip
VARIANTS = {
    "paper": (True, True, True),  # LayerNorm, clips, dropout
    "no_norm": (False, True, True),
    "no_clips": (True, False, True),
    "no_dropout": (True, True, False),
    "plain": (False, False, False),
}


def run_forward(kernels, variant, steps=TIMESTEPS):
    normalise, clip, dropout = VARIANTS[variant]
    gates, h0, c0, w_hh, w_hr, norm_weight, norm_bias, mask = step_inputs(normalise, dropout)
    clips = (1.0, 0.6) if clip else (None, None)
    cell = lstmp_torch.Cell(norm_weight, norm_bias, 1e-5, *clips, mask)
    weights = (w_hh, w_hr)
    theirs = lstmp._forward_steps(lstmp_torch, gates.clone(), h0, c0, *weights, cell, steps)
    ours = lstmp._forward_steps(kernels, gates.clone(), h0, c0, *weights, cell, steps)
    return weights, cell, ours, theirs


# Every variant for one step, the paper's through all steps.
STEPS = [(v, 1) for v in sorted(VARIANTS)] + [("paper", TIMESTEPS)]


def check_forward(kernels, variant, steps):
    _, _, ours, theirs = run_forward(kernels, variant, steps)
    tolerance = KERNEL_TOLERANCE if steps == 1 else LOOP_TOLERANCE
    for name, mine, reference in zip(FORWARD_NAMES, ours, theirs):
        assert_close(mine, reference, name, tolerance)
    if variant == "paper" and steps > 1:
        # The clips bite on a good share of the entries (but not all).
        cell_keep, projection_keep = theirs.cell_keep, theirs.projection_keep
        for keep in (cell_keep, projection_keep):
            clipped = 1 - keep.float().mean().item()
            assert 0.1 < clipped < 0.6, clipped


def check_backward(kernels, variant, steps):
    """
    The running-mask loop (every row each step), as on a GPU, with ragged lengths, from the
    torch ops' forward buffers (`steps` 1: the first step only); the output gradients a view
    with rows apart, as `_LstmpFunction.backward` passes them.
    """
    weights, cell, _, buffers = run_forward(kernels, variant, steps)
    generator = torch.Generator().manual_seed(5)
    grad_outputs = torch.randn(BATCH, TIMESTEPS, PROJECTION, generator=generator).transpose(0, 1)
    dh = torch.randn(BATCH, PROJECTION, generator=generator)
    dc = torch.randn(BATCH, CELL, generator=generator)
    rows = torch.arange(BATCH)
    batch_sizes = [sum(1 for n in LENGTHS if n > t) for t in range(TIMESTEPS)]
    running = (torch.tensor(batch_sizes).unsqueeze(1) > rows).unsqueeze(-1)

    def backward(kernels, running, batch_sizes):
        return lstmp._backward_steps(kernels, grad_outputs, dh.clone(), dc.clone(), running,
                                     buffers, *weights, cell, batch_sizes, steps)  # fmt: skip

    theirs = backward(lstmp_torch, running, None)
    ours = backward(kernels, running, None)
    tolerance = KERNEL_TOLERANCE if steps == 1 else LOOP_TOLERANCE
    # The torch ops on the rows still running each step, as on CPU without kernels: the same.
    sliced = backward(lstmp_torch, None, batch_sizes)
    for name, mine, reference in zip(["grad_gates", "grad_hiddens", "grad_projected"], sliced,
                                     theirs):  # fmt: skip
        assert_close(mine, reference, name, tolerance)
    names = ["grad_gates", "grad_hiddens", "grad_projected", "dh_carry", "dc_carry"]
    for name, mine, reference in zip(names, ours, theirs):
        assert reference.abs().sum() > 0, name
        assert_close(mine, reference, name, tolerance)
    # Rows past their length get no gradient.
    assert (ours[0][~running.expand(-1, -1, 4 * CELL)] == 0).all()


def check_layer(kernels, monkeypatch, graphs):
    """
    A whole layer, forward and backward, with `kernels` standing in for the torch ops (on CPU),
    against the reference backend: values, final states and every gradient. With `graphs` the
    loops go through `cuda_graphs.replay` as on a GPU; without, they run eagerly (still every
    row each step backward).
    """
    calls = []

    def forced(tensor, stage="forward"):
        calls.append(tensor.device)
        return kernels

    monkeypatch.setattr(lstmp, "pointwise_kernels", forced)
    if graphs:
        monkeypatch.setattr(cuda_graphs, "enabled", lambda device: True)
        monkeypatch.setattr(cuda_graphs, "replay", lambda key, function, args: function(*args))
    dtype = torch.float32
    layer = clipping_layer(dtype, "inside")
    assert_backends_agree(layer, inputs_and_state(12, dtype), TOLERANCES[dtype])
    assert len(calls) == 2  # forward and backward
