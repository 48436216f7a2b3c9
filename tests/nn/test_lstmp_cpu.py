"""
The C kernels of `allennlp_elmo_c.nn.lstmp_cpu` compute what the torch ops of
`allennlp_elmo_c.nn.lstmp` do (the forward ones bit for bit), and the fused backend uses them on
CPU for float32 by default.
"""
import os
import platform
import subprocess
import sys

import pytest
import torch

from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder
from allennlp_elmo_c.nn import lstmp, lstmp_torch
from tests.modules.seq2seq_encoders.test_backend_agreement import assert_equal_to
from tests.nn.kernel_checks import STEPS, check_backward, check_forward, check_layer

try:
    from allennlp_elmo_c.nn import lstmp_cpu
except ImportError as error:  # built by `make install` (setup.py); optional there
    pytest.skip(f"the lstmp C extension is not built: {error}", allow_module_level=True)


@pytest.mark.parametrize("variant, steps", STEPS)
def test_forward_kernels_equal_the_torch_ops(variant, steps):
    check_forward(lstmp_cpu, variant, steps)


@pytest.mark.parametrize("variant, steps", STEPS)
def test_backward_kernels_equal_the_torch_ops(variant, steps):
    check_backward(lstmp_cpu, variant, steps)


@pytest.mark.parametrize("graphs", [False, True], ids=["eager", "graph_loops"])
def test_layer_with_c_kernels_equals_reference(monkeypatch, graphs):
    check_layer(lstmp_cpu, monkeypatch, graphs)


def test_c_kernels_by_default_for_float32(monkeypatch):
    monkeypatch.delenv("ELMO_C_CPU_KERNELS", raising=False)
    for stage in ("forward", "backward"):
        assert lstmp.pointwise_kernels(torch.zeros(1), stage) is lstmp_cpu
        assert lstmp.pointwise_kernels(torch.zeros(1, dtype=torch.float64), stage) is lstmp_torch
    monkeypatch.setenv("ELMO_C_CPU_KERNELS", "0")
    for stage in ("forward", "backward"):
        assert lstmp.pointwise_kernels(torch.zeros(1), stage) is lstmp_torch
    # Where torch's rounding cannot be reproduced, the forward steps run as torch ops.
    monkeypatch.delenv("ELMO_C_CPU_KERNELS")
    monkeypatch.setattr(lstmp_cpu, "FORWARD_AS_TORCH", False)
    assert lstmp.pointwise_kernels(torch.zeros(1), "forward") is lstmp_torch
    assert lstmp.pointwise_kernels(torch.zeros(1), "backward") is lstmp_cpu


def test_forward_math_is_torchs_on_x86_with_mkl():
    """On the platform torch's wheels are built for (x86-64, MKL), the C sigmoid and tanh are
    torch's bit for bit (checked at import, with torch's thread count and one thread)."""
    if platform.machine() != "x86_64" or not torch.backends.mkl.is_available():
        pytest.skip("torch's expf/tanh are looked up on x86-64 builds with MKL only")
    assert lstmp_cpu.FORWARD_AS_TORCH
    for threads in (1, 2):
        assert lstmp_cpu.check_math_against_torch(threads)


@pytest.mark.parametrize("capability, width", [("avx2", 8), ("avx512", 16)])
def test_each_vector_width_is_torchs(capability, width):
    """The C sigmoid's AVX2 and AVX-512 instances (one macro body) each equal torch's at the
    width torch runs with `ATEN_CPU_CAPABILITY` (a fresh process: torch reads it at start)."""
    if platform.machine() != "x86_64" or not torch.backends.mkl.is_available():
        pytest.skip("torch's expf/tanh are looked up on x86-64 builds with MKL only")
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if ("avx512f" if width == 16 else "avx2") not in flags.split():
        pytest.skip(f"this CPU has no {capability}")
    code = (
        "from allennlp_elmo_c.nn import lstmp_cpu as m; "
        "print(m._torch_math()[0], m.check_math_against_torch(1), m.check_math_against_torch(2))"
    )
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, OMP_NUM_THREADS="2")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-3:] == [str(width), "True", "True"]


def test_the_math_check_fails_where_rounding_differs():
    """The import-time check tells apart an implementation that rounds like torch from one that
    differs only in which elements the vector loop covers, or in the thread split."""
    if not lstmp_cpu.FORWARD_AS_TORCH:
        pytest.skip("torch's math not found on this machine")
    width, exp, tanh = lstmp_cpu._torch_math()
    if width == 0:
        pytest.skip("torch runs without vectors here: its vector and scalar loops agree")
    try:
        lstmp_cpu._lstmp_cpu.set_math(0, 0, tanh)  # every element by the scalar loop
        assert not lstmp_cpu.check_math_against_torch(1)
    finally:
        lstmp_cpu._lstmp_cpu.set_math(width, exp, tanh)
    # The thread split: a view torch splits mid-row between two threads, done as if by one.
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        rows, length, stride = 5, 8216, 16432
        base = lstmp_cpu._telling_values(rows * stride).view(rows, stride)
        expected = base.clone()
        torch.sigmoid_(expected[:, :length])
        for threads, same in ((2, True), (1, False)):
            ours = base.clone()
            lstmp_cpu._lstmp_cpu.sigmoid_(ours.data_ptr(), rows, length, stride, threads)
            assert lstmp_cpu._same_bits(ours, expected) is same, threads
    finally:
        torch.set_num_threads(saved)


def test_kernels_refuse_tensors_they_cannot_read():
    cells = torch.zeros(4, 8)
    good = dict(gates=torch.zeros(4, 32), cells_prev=cells, cells_next=torch.zeros(4, 8),
                cell_keep=torch.ones(4, 8, dtype=torch.bool), tanh_cells=torch.zeros(4, 8),
                projected=torch.zeros(4, 3), projection_keep=torch.ones(4, 3, dtype=torch.bool),
                hiddens=torch.zeros(4, 3), means=None, rstds=None)  # fmt: skip
    cell = lstmp_torch.Cell(None, None, 1e-5, 1.0, None, None)
    lstmp_cpu.cell_forward(lstmp_torch.Step(**good), cell, torch.zeros(4, 8))
    for name, bad in [
        ("gates", torch.zeros(4, 32, dtype=torch.float64)),
        ("gates", torch.zeros(32, 4).t()),  # not contiguous
        ("gates", torch.zeros(4, 31)),  # wrong size: the C code would read past it
        ("cell_keep", torch.ones(4, 8)),  # a float mask
    ]:
        with pytest.raises(ValueError, match="lstmp_cpu"):
            lstmp_cpu.cell_forward(lstmp_torch.Step(**dict(good, **{name: bad})), cell,
                                   torch.zeros(4, 8))  # fmt: skip


def encoder_problem(seed=0):
    """Demo-like size with odd widths (vector loops with remainders), long ragged sequences,
    clips that bite, dropout, a non-trivial LayerNorm."""
    torch.manual_seed(seed)
    encoder = ElmoLstmEncoder(
        37, projection_size=45, cell_size=301, num_layers=2, recurrent_dropout=0.2,
        cell_clip=1.0, projection_clip=0.8, return_all_layers=True,
    ).train()  # fmt: skip
    with torch.no_grad():
        for name, parameter in encoder.named_parameters():
            if name.endswith("norm.weight"):
                parameter.copy_(1 + 0.5 * torch.randn_like(parameter))
            elif "gate_bias" in name:
                parameter.normal_(0.0, 1.0)
    lengths = torch.tensor([60, 59, 31, 1, 0, 17, 60, 44] * 3)
    mask = torch.arange(60).unsqueeze(0) < lengths.unsqueeze(1)
    inputs = 2 * torch.randn(len(lengths), 60, 37)
    return encoder, inputs, mask


def run_encoder(encoder, inputs, mask):
    leaf = inputs.clone().requires_grad_()
    torch.manual_seed(7)  # the same dropout masks
    layers = encoder(leaf, mask)
    weights = torch.randn(layers[-1].shape, generator=torch.Generator().manual_seed(3))
    loss = sum((layer * weights).sum() for layer in layers)
    return layers, torch.autograd.grad(loss, [leaf] + list(encoder.parameters()))


@pytest.mark.parametrize("threads", [1, 2])
def test_encoder_with_c_kernels_equals_torch_ops(monkeypatch, threads):
    """
    The whole fused encoder, float32, with the C kernels and with the torch ops, at 1 and 2
    intra-op threads, the matrix products the same (torch.mm: `ELMO_C_ONEDNN=0`): every layer's
    outputs bit for bit (the pointwise forward kernels round as torch does), the input gradient
    and every parameter's gradient (each non-zero) to float32 rounding. (The default path,
    oneDNN's products included, is judged against float64 in test_backend_agreement.py.)
    """
    if not lstmp_cpu.FORWARD_AS_TORCH:
        pytest.skip("torch's math not found on this machine: the forward runs as torch ops")
    monkeypatch.setenv("ELMO_C_ONEDNN", "0")
    encoder, inputs, mask = encoder_problem()
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    results = {}
    try:
        for switch in ("1", "0"):
            monkeypatch.setenv("ELMO_C_CPU_KERNELS", switch)
            results[switch] = run_encoder(encoder, inputs, mask)
    finally:
        torch.set_num_threads(saved)
    for index, (ours, theirs) in enumerate(zip(results["1"][0], results["0"][0])):
        assert torch.equal(ours, theirs), f"layer {index}"
    names = ["inputs"] + [name for name, _ in encoder.named_parameters()]
    for name, ours, theirs in zip(names, results["1"][1], results["0"][1]):
        assert theirs.abs().sum() > 0, name
        assert_equal_to(ours, theirs, 1e-4, name)
