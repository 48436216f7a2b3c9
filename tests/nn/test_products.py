"""
`Products` multiplies in float32 through oneDNN or torch.mm alike, is chosen where it
should be, and is what the fused backend's CPU backward really runs.
"""
import platform
from pathlib import Path

import pytest
import torch

from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import ProjectedLstmLayer
from allennlp_elmo_c.nn import lstmp, lstmp_torch, products as products_module
from allennlp_elmo_c.nn.products import Products

# (rows, in, out): a demo-size step (ragged: 13 of 64 rows), W_ih's gradient over 40 x 8 rows,
# and a long inner dimension (the paper's dL/dgates @ W_hh has 16384).
SHAPES = [(13, 1024, 128), (320, 100, 1024), (5, 8192, 33)]


def operands(rows, inner, out, transposed):
    generator = torch.Generator().manual_seed(rows + inner)
    inputs = torch.randn(inner if transposed else rows, rows if transposed else inner,
                         generator=generator)  # fmt: skip
    weight = 3 * torch.randn(inner, out, generator=generator)  # (in, out): weight.t() is (out, in)
    return (inputs.t() if transposed else inputs), weight.t()


@pytest.mark.parametrize("onednn", ["1", "0"], ids=["onednn", "torch_mm"])
@pytest.mark.parametrize("prepared", [True, False], ids=["weight", "strided_weight"])
@pytest.mark.parametrize("transposed", [False, True], ids=["rows", "transposed"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_linear_is_a_float32_product(monkeypatch, onednn, prepared, transposed, shape):
    """Within float32 rounding of the float64 product, entry by entry: at most 1e-5 of the sum
    of the terms' magnitudes (bfloat16 or TF32 arithmetic would be ~1e-3); with the weight made
    contiguous by `weight` or passed as the transposed view the backward's big products use."""
    monkeypatch.setenv("ELMO_C_ONEDNN", onednn)
    inputs, weight = operands(*shape, transposed)
    with torch.no_grad():
        products = Products(inputs)
        ours = products.linear(inputs, products.weight(weight) if prepared else weight)
    assert ours.shape == (shape[0], shape[2]) and ours.dtype == torch.float32
    assert ours.is_contiguous()
    exact = inputs.double() @ weight.double().t()
    magnitude = inputs.double().abs() @ weight.double().abs().t()
    assert ((ours.double() - exact).abs() <= 1e-5 * magnitude).all()


def test_empty_inner_dimension_gives_zeros(monkeypatch):
    monkeypatch.delenv("ELMO_C_ONEDNN", raising=False)
    with torch.no_grad():
        ours = Products(torch.zeros(1)).linear(torch.zeros(3, 0), torch.zeros(5, 0))
    assert torch.equal(ours, torch.zeros(3, 5))


def test_torch_mm_writes_into_out():
    inputs, weight = operands(13, 1024, 128, False)
    out = torch.empty(13, 128)
    with torch.no_grad():
        products = Products(torch.zeros(1, dtype=torch.float64))
        assert products.linear(inputs, weight, out=out) is out
    assert torch.equal(out, inputs @ weight.t())


def test_onednn_only_for_float32_cpu_outside_grad_mode(monkeypatch):
    monkeypatch.setenv("ELMO_C_ONEDNN", "1")
    available = products_module._onednn_multiplies(torch.float32)
    with torch.no_grad():
        assert Products(torch.zeros(1)).onednn == available
        assert not Products(torch.zeros(1, dtype=torch.float64)).onednn
        monkeypatch.setenv("ELMO_C_ONEDNN", "0")
        assert not Products(torch.zeros(1)).onednn
    monkeypatch.setenv("ELMO_C_ONEDNN", "1")
    with torch.enable_grad():  # oneDNN's linear has no derivative (a double backward)
        assert not Products(torch.zeros(1)).onednn


@pytest.mark.parametrize("capability, vendor, preferred", [
    ("AVX512", "AuthenticAMD", True), ("AVX2", "AuthenticAMD", False),
    ("AVX512", "GenuineIntel", False), ("AVX2", "GenuineIntel", False), ("DEFAULT", "", False),
])  # fmt: skip
def test_float32_products_take_onednn_by_default_where_mkl_has_narrower_vectors(
    monkeypatch, capability, vendor, preferred
):
    """Unset, `ELMO_C_ONEDNN` leaves float32 products to oneDNN only on AMD processors with
    AVX-512 (MKL runs AVX2 code there); "1" and "0" decide on any CPU."""
    assert products_module.onednn_preferred(capability, vendor) is preferred
    monkeypatch.delenv("ELMO_C_ONEDNN", raising=False)
    monkeypatch.setattr(products_module.torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(products_module, "_cpu_vendor", lambda: vendor)
    available = products_module._onednn_multiplies(torch.float32)
    with torch.no_grad():
        assert Products(torch.zeros(1)).onednn == (preferred and available)
        monkeypatch.setenv("ELMO_C_ONEDNN", "1")
        assert Products(torch.zeros(1)).onednn == available


def test_the_cpu_vendor_is_read_from_proc_cpuinfo():
    vendor = products_module._cpu_vendor()
    if not Path("/proc/cpuinfo").is_file():
        assert vendor == ""
        return
    listed = [line.split(":", 1)[1].strip() for line in
              Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("vendor_id")]  # fmt: skip
    assert vendor == (listed[0] if listed else "")


def test_onednn_works_on_x86():
    """torch's x86-64 wheels ship oneDNN; its linear passes the float64 check there."""
    if platform.machine() != "x86_64" or not torch.backends.mkldnn.is_available():
        pytest.skip("oneDNN is checked on x86-64 builds of torch only")
    assert products_module._onednn_multiplies(torch.float32)


def test_the_check_rejects_a_wrong_product(monkeypatch):
    if not torch.backends.mkldnn.is_available():
        pytest.skip("without oneDNN the check returns before multiplying")
    products_module._onednn_multiplies.cache_clear()
    try:
        monkeypatch.setattr(products_module, "_onednn_linear",
                            lambda inputs, weight: (inputs @ weight.t()).bfloat16().float())  # fmt: skip
        assert not products_module._onednn_multiplies(torch.float32)
        monkeypatch.setattr(products_module, "_onednn_linear",
                            lambda inputs, weight: (inputs @ weight.t())[:-1])  # fmt: skip
        products_module._onednn_multiplies.cache_clear()
        assert not products_module._onednn_multiplies(torch.float32)
    finally:
        monkeypatch.undo()
        products_module._onednn_multiplies.cache_clear()


@pytest.mark.parametrize("loops", ["c_kernels", "torch_ops"])
def test_fused_cpu_backward_runs_its_products_through_onednn(monkeypatch, loops):
    """With `ELMO_C_ONEDNN=1`, every product of the fused layer's CPU backward (2 per step, 4
    over all steps) goes through oneDNN where it works, with the C kernels or the torch ops
    doing the pointwise work; the forward's (2 per step) too where the C kernels run."""
    if not products_module._onednn_multiplies(torch.float32):
        pytest.skip("torch's oneDNN linear does not work here")
    monkeypatch.setenv("ELMO_C_ONEDNN", "1")
    monkeypatch.setenv("ELMO_C_CPU_KERNELS", "1" if loops == "c_kernels" else "0")
    kernels = lstmp.pointwise_kernels(torch.zeros(1), "backward")
    if loops == "c_kernels" and kernels is lstmp_torch:
        pytest.skip("the lstmp C extension is not built")
    assert (kernels is lstmp_torch) == (loops == "torch_ops")
    calls = []
    onednn_linear = products_module._onednn_linear

    def counting(inputs, weight):
        calls.append(tuple(weight.shape))
        return onednn_linear(inputs, weight)

    monkeypatch.setattr(products_module, "_onednn_linear", counting)
    torch.manual_seed(0)
    layer = ProjectedLstmLayer(12, 24, 16, 1.0, 0.6, recurrent_dropout=0.3).train()
    inputs = torch.randn(3, 7, 12, requires_grad=True)
    mask = torch.arange(7).unsqueeze(0) < torch.tensor([[7], [4], [2]])
    output, _ = layer(inputs, mask, None, backend="fused")
    # The forward's two products a step too, whichever kernels run its pointwise work.
    forward = 2 * 7
    assert len(calls) == forward
    assert calls.count((4 * 24, 16)) == calls.count((16, 24)) == forward // 2
    calls.clear()
    output.sum().backward()
    assert len(calls) == 2 * 7 + 4
    assert calls.count((24, 16)) == 7 and calls.count((16, 4 * 24)) == 7


@pytest.mark.parametrize("onednn", ["1", "0"], ids=["onednn", "torch_mm"])
@pytest.mark.parametrize("transposed", [False, True], ids=["rows", "transposed"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bfloat16_operands_give_float32_results(monkeypatch, onednn, transposed, shape):
    """`Products(float32 tensor, torch.bfloat16)`: every method multiplies the operands rounded
    to bfloat16, accumulates in float32 and returns float32: within one bfloat16 rounding of the
    result (2^-8 of its size; on CPU the product is rounded to bfloat16 once) and float32
    rounding of the float64 product of the rounded operands, and not the float32 product."""
    monkeypatch.setenv("ELMO_C_ONEDNN", onednn)
    inputs, weight = operands(*shape, transposed)
    rounded = inputs.bfloat16().double() @ weight.bfloat16().double().t()
    magnitude = inputs.double().abs() @ weight.double().abs().t()
    bias = torch.randn(shape[2])
    with torch.no_grad():
        products = Products(inputs, torch.bfloat16)
        # Cast (and for oneDNN reordered, as the forward's per-step weights are) once.
        prepared = products.weight(weight, rows=shape[0])
        assert prepared.dtype == torch.bfloat16
        assert prepared.is_mkldnn == products.onednn
        results = {
            "linear": products.linear(inputs, prepared),
            "linear_out": products.linear(inputs, prepared, out=torch.empty(shape[0], shape[2])),
            "accumulate": torch.ones(shape[0], shape[2]),
            "affine": products.affine(bias, inputs, prepared, out=torch.empty(shape[0], shape[2])),
        }
        products.accumulate(results["accumulate"], inputs, prepared)
    expected = {"linear": rounded, "linear_out": rounded, "accumulate": rounded + 1,
                "affine": rounded + bias.double()}  # fmt: skip
    for name, ours in results.items():
        assert ours.dtype == torch.float32 and ours.shape == (shape[0], shape[2]), name
        error = (ours.double() - expected[name]).abs()
        assert (error <= 2.0**-8 * rounded.abs() + 1e-5 * magnitude).all(), name
    exact = inputs.double() @ weight.double().t()
    assert (results["linear"].double() - exact).abs().max() > 1e-4 * magnitude.max()


def test_bfloat16_products_of_the_fused_layer(monkeypatch):
    """Under bfloat16 autocast every product of the fused layer's CPU passes multiplies
    bfloat16 operands: the per-step ones (2 a step, forward and backward) and the input product
    through oneDNN where it works, the weight gradients (whose inputs are transposed views)
    through `torch.mm`; no product sees a float32 operand. Without autocast, none sees a
    bfloat16 one."""
    if not products_module._onednn_multiplies(torch.bfloat16):
        pytest.skip("torch's oneDNN bfloat16 linear does not work here")
    monkeypatch.delenv("ELMO_C_ONEDNN", raising=False)
    calls = []
    onednn_linear, mm = products_module._onednn_linear, torch.mm

    def onednn_counting(inputs, weight):
        calls.append(("onednn", inputs.dtype, weight.dtype))
        return onednn_linear(inputs, weight)

    def mm_counting(inputs, other, *args, **kwargs):
        calls.append(("mm", inputs.dtype, other.dtype))
        return mm(inputs, other, *args, **kwargs)

    monkeypatch.setattr(products_module, "_onednn_linear", onednn_counting)
    monkeypatch.setattr(products_module.torch, "mm", mm_counting)
    torch.manual_seed(0)
    layer = ProjectedLstmLayer(12, 24, 16, 1.0, 0.6, recurrent_dropout=0.3).train()
    inputs = torch.randn(3, 7, 12, requires_grad=True)
    mask = torch.arange(7).unsqueeze(0) < torch.tensor([[7], [4], [2]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output, _ = layer(inputs, mask, None, backend="fused")
    assert calls == [("onednn", torch.bfloat16, torch.bfloat16)] * (1 + 2 * 7)
    calls.clear()
    output.sum().backward()
    assert calls.count(("onednn", torch.bfloat16, torch.bfloat16)) == 2 * 7 + 1  # + dL/dx
    assert calls.count(("mm", torch.bfloat16, torch.bfloat16)) == 3  # W_ih, W_hh, W_hr
    assert len(calls) == 2 * 7 + 4
    assert all(p.grad.dtype == torch.float32 for p in layer.parameters())
    calls.clear()
    layer(inputs, mask, None, backend="fused")[0].sum().backward()
    assert calls and all(dtypes == [torch.float32, torch.float32] for _, *dtypes in calls)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_bfloat16_products_on_a_gpu_return_unrounded_float32():
    """On a GPU cuBLAS writes float32 results of the bfloat16 operands (`out_dtype`): within
    float32 accumulation error of the float64 product of the rounded operands, with no bfloat16
    rounding of the result."""
    assert products_module._cublas_results_work(torch.bfloat16)
    inputs, weight = (t.cuda() for t in operands(320, 100, 1024, transposed=True))
    rounded = inputs.bfloat16().double() @ weight.bfloat16().double().t()
    magnitude = inputs.double().abs() @ weight.double().abs().t()
    bias = torch.randn(1024, device="cuda")
    products = Products(inputs, torch.bfloat16)
    prepared = products.weight(weight)
    total = torch.ones(320, 1024, device="cuda")
    products.accumulate(total, inputs, prepared)
    results = {
        "linear": (products.linear(inputs, prepared), rounded),
        "linear_out": (products.linear(inputs, prepared, out=torch.empty_like(total)), rounded),
        "accumulate": (total, rounded + 1),
        "affine": (products.affine(bias, inputs, prepared, out=torch.empty_like(total)),
                   rounded + bias.double()),
    }  # fmt: skip
    for name, (ours, expected) in results.items():
        assert ours.dtype == torch.float32, name
        assert ((ours.double() - expected).abs() <= 1e-5 * magnitude).all(), name
