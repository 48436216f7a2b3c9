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

from allennlp_elmo_c.nn import cuda_graphs, lstmp, lstmp_torch
from tests.modules.seq2seq_encoders.test_backend_agreement import assert_equal_to
from tests.nn.kernel_checks import (
    FORWARD_NAMES,
    LOOP_TOLERANCE,
    STEPS,
    check_backward,
    check_forward,
    check_layer,
)

triton = pytest.importorskip("triton")

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


@INTERPRETED
@pytest.mark.parametrize("variant, steps", STEPS)
def test_interpreted_forward_kernels_equal_the_torch_ops(kernels, variant, steps):
    check_forward(kernels, variant, steps)


@INTERPRETED
@pytest.mark.parametrize("variant, steps", STEPS)
def test_interpreted_backward_kernels_equal_the_torch_ops(kernels, variant, steps):
    check_backward(kernels, variant, steps)


@INTERPRETED
def test_interpreted_layer_with_triton_kernels_equals_reference(kernels, monkeypatch):
    """The paper's cell through `cuda_graphs.replay` as on a GPU (the interpreter is slow: the
    kernel tests above cover the variants)."""
    check_layer(kernels, monkeypatch, graphs=True)


GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


def gpu_problem(normalise=True, clip=True, dropout=True, projection_scale=0.015, seed=0):
    """
    `lstm_with_projection`'s arguments at a bigger size (two cell blocks, the second partly
    masked; ragged lengths from 0 to all steps), scaled to keep the recurrence well conditioned.
    """
    batch, timesteps, inputs, cell, projection = 48, 25, 96, 1100, 300
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return scale * torch.randn(*shape, generator=generator)

    lengths = torch.randint(0, timesteps + 1, (batch,), generator=generator)
    lengths[0], lengths[1] = timesteps, 0
    arguments = dict(
        inputs=randn(batch, timesteps, inputs), hidden=randn(batch, projection),
        cell=randn(batch, cell, scale=2.0), w_ih=randn(4 * cell, inputs, scale=0.1),
        w_hh=randn(4 * cell, projection, scale=0.05), bias=randn(4 * cell),
        w_hr=randn(projection, cell, scale=projection_scale),
    )  # fmt: skip
    arguments["bias"][cell : 2 * cell] += 2.0
    if normalise:
        arguments["norm_weight"] = 1 + 0.5 * randn(projection)
        arguments["norm_bias"] = 0.5 * randn(projection)
    if dropout:
        keep = torch.rand(batch, projection, generator=generator) > 0.3
        arguments["dropout"] = keep.float() / 0.7
    arguments = {key: value.cuda() for key, value in arguments.items()}
    clips = dict(cell_clip=1.0, projection_clip=0.6) if clip else {}
    weights = randn(batch, timesteps, projection).cuda()
    return arguments, lengths.cuda(), clips, weights


def run_lstmp(arguments, lengths, clips, weights):
    """Values and the gradients of every tensor argument (the dropout mask has none)."""
    leaves = {k: v.clone().requires_grad_(k != "dropout") for k, v in arguments.items()}
    outputs, h_n, c_n = lstmp.lstm_with_projection(lengths=lengths, **leaves, **clips)
    loss = (outputs * weights).sum() + (h_n * h_n).sum() + (c_n * weights[:, 0, :1]).sum()
    names = [key for key in leaves if key != "dropout"]
    grads = torch.autograd.grad(loss, [leaves[key] for key in names])
    return {"outputs": outputs, "h_n": h_n, "c_n": c_n,
            **{"grad " + key: grad for key, grad in zip(names, grads)}}  # fmt: skip


@GPU
def test_triton_kernels_only_for_float32_on_a_gpu(monkeypatch):
    from allennlp_elmo_c.nn import lstmp_triton

    assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda")) is lstmp_triton
    assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda", dtype=torch.double)) is lstmp_torch
    monkeypatch.setenv("ELMO_C_TRITON", "0")
    assert lstmp.pointwise_kernels(torch.zeros(1, device="cuda")) is lstmp_torch


@GPU
@pytest.mark.parametrize("graphs", ["1", "0"], ids=["graphs", "eager"])
@pytest.mark.parametrize("clip", [False, True], ids=["no_clips", "clips"])
def test_triton_path_equals_torch_ops_on_a_gpu(monkeypatch, graphs, clip):
    """
    Compiled kernels against the torch ops on a GPU, the whole function, values and gradients.
    With clips, only the values: a clip is a step function, and one of a million entries that
    rounds to the other side of it (it happens) changes the gradients visibly; the loops are
    compared with the clips below.
    """
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setenv("ELMO_C_CUDA_GRAPHS", graphs)
    problem = gpu_problem(clip=clip)
    results = {}
    for triton_on in ("1", "0"):
        monkeypatch.setenv("ELMO_C_TRITON", triton_on)
        cuda_graphs.clear()
        results[triton_on] = run_lstmp(*problem)
    cuda_graphs.clear()
    for name, reference in results["0"].items():
        if clip and name.startswith("grad"):
            continue
        assert reference.abs().sum() > 0, name
        assert_equal_to(results["1"][name], reference, 1e-5, name)


@GPU
def test_triton_loops_with_clips_equal_the_torch_ops_on_a_gpu(monkeypatch):
    """
    The forward loops agree but for the rare clip decision on an entry within rounding of the
    clip; the backward loops, from the same forward buffers, agree on every gradient.
    """
    from allennlp_elmo_c.nn import lstmp_triton

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    # A larger projection: its clip bites on a few percent (the cells' on about a third).
    arguments, lengths, clips, _ = gpu_problem(projection_scale=0.025)
    a = arguments
    batch, timesteps, _ = a["inputs"].shape
    gates = torch.addmm(a["bias"], a["inputs"].transpose(0, 1).reshape(batch * timesteps, -1),
                        a["w_ih"].t()).view(timesteps, batch, -1)  # fmt: skip
    tensors = (a["hidden"], a["cell"], a["w_hh"], a["w_hr"])
    cell = lstmp_torch.Cell(a["norm_weight"], a["norm_bias"], 1e-5, clips["cell_clip"],
                            clips["projection_clip"], a["dropout"])  # fmt: skip
    theirs = lstmp._forward_steps(lstmp_torch, gates.clone(), *tensors, cell, timesteps)
    ours = lstmp._forward_steps(lstmp_triton, gates.clone(), *tensors, cell, timesteps)
    for name, mine, reference in zip(FORWARD_NAMES, ours, theirs):
        if reference.dtype == torch.bool:
            assert (mine != reference).float().mean() < 1e-5, name
            clipped = 1 - reference.float().mean().item()
            assert 0.01 < clipped < 0.6, (name, clipped)
        else:  # 25 steps of 1100 cells: a little more rounding carried along
            assert_equal_to(mine, reference, 5 * LOOP_TOLERANCE, name)
    cells, hiddens = theirs.cells, theirs.hiddens
    generator = torch.Generator().manual_seed(5)
    grad_outputs = torch.randn(batch, timesteps, hiddens.size(-1), generator=generator).cuda()
    grad_outputs = grad_outputs.transpose(0, 1)  # as `_LstmpFunction.backward` passes it
    dh, dc = torch.randn_like(hiddens[0]), torch.randn_like(cells[0])
    # Every row each step, the results kept for those within their length (any order of rows).
    running = (lengths > torch.arange(timesteps, device="cuda").unsqueeze(1)).unsqueeze(-1)
    saved = (theirs, a["w_hh"], a["w_hr"], cell, None, timesteps)
    theirs = lstmp._backward_steps(lstmp_torch, grad_outputs, dh.clone(), dc.clone(), running,
                                   *saved)  # fmt: skip
    ours = lstmp._backward_steps(lstmp_triton, grad_outputs, dh.clone(), dc.clone(), running,
                                 *saved)  # fmt: skip
    names = ["grad_gates", "grad_hiddens", "grad_projected", "dh_carry", "dc_carry"]
    for name, mine, reference in zip(names, ours, theirs):
        assert reference.abs().sum() > 0, name
        assert_equal_to(mine, reference, LOOP_TOLERANCE, name)
