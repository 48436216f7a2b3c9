"""
The Triton kernels of `allennlp_elmo_c.nn.lstmp_triton` compute what the torch ops of
`allennlp_elmo_c.nn.lstmp` do. Without a GPU they run in Triton's CPU interpreter, on CPU tensors.
The interpreter must be chosen (`TRITON_INTERPRET=1`) before triton is imported, and torch imports
it with the test suite: `test_kernels_under_the_triton_interpreter` runs the `test_interpreted_*`
tests in a fresh process with it set (they skip elsewhere, so that a GPU run keeps the compiled
kernels for the CUDA tests at the end).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from allennlp_elmo_c.nn import cuda_graphs, lstmp
from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import ProjectedLstmLayer
from tests.modules.seq2seq_encoders.test_backend_agreement import (
    TOLERANCES,
    assert_equal_to,
    clipping_layer,
    inputs_and_state,
    run_layer,
)

triton = pytest.importorskip("triton")

# One step: the kernels' own rounding. All steps: the recurrence carries it on (the inputs below
# keep it well conditioned: the torch ops are as far from float64 as the kernels are).
KERNEL_TOLERANCE = 1e-6
LOOP_TOLERANCE = 1e-5
BATCH, CELL, PROJECTION, TIMESTEPS = 7, 40, 24, 9
LENGTHS = [9, 9, 6, 5, 2, 1, 0]  # sorted, descending, as lstmp's loops see them

INTERPRETED = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1",
    reason="run in Triton's interpreter by test_kernels_under_the_triton_interpreter",
)


def test_kernels_under_the_triton_interpreter():
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("already under the interpreter")
    root = Path(__file__).resolve().parents[2]
    environment = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(root), environment.get("PYTHONPATH")])
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
               "test_interpreted_", str(Path(__file__).resolve())]  # fmt: skip
    result = subprocess.run(command, cwd=root, env=environment, capture_output=True, text=True)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert " passed" in result.stdout and "skipped" not in result.stdout, report


@pytest.fixture
def kernels(monkeypatch):
    """`lstmp_triton`, its kernels run by Triton's interpreter (on CPU tensors)."""
    from allennlp_elmo_c.nn import lstmp_triton

    # Small blocks: several programs per row, the last one partly masked (CELL = 2.5 blocks).
    monkeypatch.setattr(lstmp_triton, "CELL_BLOCK", 16)
    return lstmp_triton


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
    tensors = step_inputs(normalise, dropout)
    clips = (1.0, 0.6) if clip else (None, None)
    settings = (steps, 1e-5, *clips)
    theirs = lstmp._forward_steps(tensors[0].clone(), *tensors[1:], *settings)
    ours = lstmp._forward_steps_fused(kernels, tensors[0].clone(), *tensors[1:], *settings)
    return tensors, settings, ours, theirs


# Every variant for one step, two of them through all steps.
STEPS = [(v, 1) for v in sorted(VARIANTS)] + [("paper", TIMESTEPS), ("plain", TIMESTEPS)]


@INTERPRETED
@pytest.mark.parametrize("variant, steps", STEPS)
def test_interpreted_forward_kernels_equal_the_torch_ops(kernels, variant, steps):
    _, settings, ours, theirs = run_forward(kernels, variant, steps)
    tolerance = KERNEL_TOLERANCE if steps == 1 else LOOP_TOLERANCE
    for name, mine, reference in zip(FORWARD_NAMES, ours, theirs):
        assert_close(mine, reference, name, tolerance)
    if variant == "paper" and steps > 1:
        # The clips bite on a good share of the entries (but not all).
        cell_keep, projection_keep = theirs[-2:]
        for keep in (cell_keep, projection_keep):
            clipped = 1 - keep.float().mean().item()
            assert 0.1 < clipped < 0.6, clipped


@INTERPRETED
@pytest.mark.parametrize("variant, steps", STEPS)
def test_interpreted_backward_kernels_equal_the_torch_ops(kernels, variant, steps):
    """
    The running-mask loop (every row each step), as on a GPU, with ragged lengths, from the
    torch ops' forward buffers (`steps` 1: the first step only).
    """
    tensors, settings, _, buffers = run_forward(kernels, variant, steps)
    _, _, _, w_hh, w_hr, norm_weight, norm_bias, dropout = tensors
    gates, cells, hiddens, tanh_cells, projected, means, rstds, *keeps = buffers
    generator = torch.Generator().manual_seed(5)
    grad_outputs = torch.randn(TIMESTEPS, BATCH, PROJECTION, generator=generator)
    dh = torch.randn(BATCH, PROJECTION, generator=generator)
    dc = torch.randn(BATCH, CELL, generator=generator)
    rows = torch.arange(BATCH)
    batch_sizes = [sum(1 for n in LENGTHS if n > t) for t in range(TIMESTEPS)]
    running = (torch.tensor(batch_sizes).unsqueeze(1) > rows).unsqueeze(-1)
    saved = (gates, cells, tanh_cells, projected, means, rstds, *keeps, w_hh, w_hr,
             norm_weight, norm_bias, dropout)  # fmt: skip
    clips = (settings[2] is not None, settings[3] is not None)
    theirs = lstmp._backward_steps(grad_outputs, dh.clone(), dc.clone(), running, *saved, None,
                                   steps, clips)  # fmt: skip
    ours = lstmp._backward_steps_fused(kernels, grad_outputs, dh.clone(), dc.clone(), running,
                                       *saved, None, steps, clips)  # fmt: skip
    tolerance = KERNEL_TOLERANCE if steps == 1 else LOOP_TOLERANCE
    names = ["grad_gates", "grad_hiddens", "grad_projected", "dh_carry", "dc_carry"]
    for name, mine, reference in zip(names, ours, theirs):
        assert reference.abs().sum() > 0, name
        assert_close(mine, reference, name, tolerance)
    # Rows past their length get no gradient.
    assert (ours[0][~running.expand(-1, -1, 4 * CELL)] == 0).all()


@INTERPRETED
@pytest.mark.parametrize(
    "recurrence_norm, graphs", [("inside", True), ("outside", False)], ids=["inside", "outside"]
)
def test_interpreted_layer_with_triton_kernels_equals_reference(kernels, monkeypatch, graphs, recurrence_norm):
    """
    A whole layer, forward and backward, with the kernels standing in for the torch ops (on CPU,
    interpreted), against the reference backend: values, final states and every gradient. With
    `graphs` the loops go through `cuda_graphs.replay` as on a GPU; without, they run eagerly
    (still every row each step backward).
    """
    calls = []

    def forced(tensor):
        calls.append(tensor.device)
        return kernels

    monkeypatch.setattr(lstmp, "pointwise_kernels", forced)
    if graphs:
        monkeypatch.setattr(cuda_graphs, "enabled", lambda device: True)
        monkeypatch.setattr(cuda_graphs, "replay", lambda key, function, args: function(*args))
    dtype = torch.float32
    layer = clipping_layer(dtype, recurrence_norm)
    batch = inputs_and_state(20, dtype)
    reference_values, reference_grads = run_layer(layer, "reference", *batch)
    fused_values, fused_grads = run_layer(layer, "fused", *batch)
    assert len(calls) == 2  # forward and backward
    for name, ours, theirs in zip(["outputs", "h_n", "c_n"], fused_values, reference_values):
        assert_equal_to(ours, theirs, TOLERANCES[dtype], name)
    names = ["inputs", "h0", "c0"] + [name for name, _ in layer.named_parameters()]
    for name, ours, theirs in zip(names, fused_grads, reference_grads):
        assert theirs.abs().sum() > 0, name
        assert_equal_to(ours, theirs, TOLERANCES[dtype], name)


def test_kernels_only_for_float32_on_a_gpu(monkeypatch):
    assert lstmp.pointwise_kernels(torch.zeros(1)) is None
    if torch.cuda.is_available():
        assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda")) is not None
        assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda", dtype=torch.double)) is None
        monkeypatch.setenv("ELMO_C_TRITON", "0")
        assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda")) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
@pytest.mark.parametrize("graphs", ["1", "0"], ids=["graphs", "eager"])
def test_triton_path_equals_torch_ops_on_a_gpu(monkeypatch, graphs):
    """Compiled kernels against the torch ops, on a GPU, at a bigger size (two cell blocks)."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setenv("ELMO_C_CUDA_GRAPHS", graphs)
    device = torch.device("cuda")
    input_size, cell, projection, batch, timesteps = 96, 1100, 300, 48, 25
    torch.manual_seed(0)
    layer = ProjectedLstmLayer(input_size, cell, projection, 1.0, 0.6, recurrent_dropout=0.3)
    with torch.no_grad():
        layer.input_weight.mul_(2.0)
        layer.gate_bias.normal_(0.0, 1.0)
        layer.gate_bias[cell : 2 * cell] += 2.0
        layer.projection_weight.mul_(2.0)
        layer.norm.weight.copy_(1 + 0.5 * torch.randn(projection))
        layer.norm.bias.copy_(0.5 * torch.randn(projection))
    layer = layer.to(device).train()
    inputs = torch.randn(batch, timesteps, input_size, device=device)
    lengths = torch.randint(0, timesteps + 1, (batch,), device=device)
    lengths[0] = timesteps
    mask = torch.arange(timesteps, device=device) < lengths.unsqueeze(1)
    h0 = torch.randn(batch, projection, device=device)
    c0 = 2 * torch.randn(batch, cell, device=device)
    weights = torch.randn(batch, timesteps, projection, device=device)
    batch_tensors = (inputs, mask, h0, c0, weights)
    results = {}
    for triton_on in ("1", "0"):
        monkeypatch.setenv("ELMO_C_TRITON", triton_on)
        cuda_graphs.clear()
        results[triton_on] = run_layer(layer, "fused", *batch_tensors)
    cuda_graphs.clear()
    (ours, our_grads), (theirs, their_grads) = results["1"], results["0"]
    for name, mine, reference in zip(["outputs", "h_n", "c_n"], ours, theirs):
        assert_equal_to(mine, reference, 1e-5, name)
    names = ["inputs", "h0", "c0"] + [name for name, _ in layer.named_parameters()]
    for name, mine, reference in zip(names, our_grads, their_grads):
        assert reference.abs().sum() > 0, name
        assert_equal_to(mine, reference, 1e-5, name)
