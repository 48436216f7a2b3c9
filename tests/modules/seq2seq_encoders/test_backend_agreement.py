"""
The `reference` and `fused` backends are two implementations of one function: values, final
states and every gradient agree on realistic inputs (long and ragged sequences, a non-zero
initial state, clips that really clip, recurrent dropout with the same masks).
"""
import pytest
import torch

from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder
from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import ProjectedLstmLayer

INPUT, CELL, PROJECTION = 12, 24, 16
CELL_CLIP, PROJECTION_CLIP = 1.0, 0.6
TOLERANCES = {torch.float32: 1e-5, torch.float64: 1e-10}


def ragged_lengths(timesteps: int):
    return [timesteps, timesteps - 3, 1, 0, timesteps // 2, timesteps - 1]


def clipping_layer(dtype, recurrence_norm="inside", seed=0) -> ProjectedLstmLayer:
    torch.manual_seed(seed)
    clips = (CELL_CLIP, PROJECTION_CLIP) if recurrence_norm == "inside" else (None, None)
    layer = ProjectedLstmLayer(
        INPUT, CELL, PROJECTION, *clips, recurrent_dropout=0.3, recurrence_norm=recurrence_norm
    )
    with torch.no_grad():
        # Large weights: forget gates near 1 let cells grow past the clip, and a large
        # projection pushes projected states past theirs (a quarter to a third of the entries,
        # measured below), never all of one state at once: a state clipped whole has zero
        # variance, its LayerNorm divides by sqrt(eps), and any rounding difference between two
        # implementations is amplified 300-fold. Random LayerNorm affine parameters.
        layer.input_weight.mul_(2.0)
        layer.gate_bias.normal_(0.0, 1.0)
        layer.gate_bias[CELL : 2 * CELL] += 2.0
        layer.projection_weight.mul_(2.0)
        layer.norm.weight.copy_(1 + 0.5 * torch.randn(PROJECTION))
        layer.norm.bias.copy_(0.5 * torch.randn(PROJECTION))
    return layer.to(dtype).train()


def inputs_and_state(timesteps, dtype, seed=1):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(ragged_lengths(timesteps))
    mask = torch.arange(timesteps).unsqueeze(0) < lengths.unsqueeze(1)
    batch = len(lengths)
    inputs = torch.randn(batch, timesteps, INPUT, generator=generator, dtype=dtype)
    h0 = torch.randn(batch, PROJECTION, generator=generator, dtype=dtype)
    c0 = 2 * torch.randn(batch, CELL, generator=generator, dtype=dtype)
    weights = torch.randn(batch, timesteps, PROJECTION, generator=generator, dtype=dtype)
    return inputs, mask, h0, c0, weights


def assert_equal_to(ours, theirs, tolerance, name):
    """
    Equal to `tolerance` relative to the tensor's scale: a weight gradient sums batch x timesteps
    products, so an entry near zero carries the rounding of the large terms it cancelled.
    """
    scale = max(1.0, theirs.abs().max().item())
    error = (ours - theirs).abs().max().item()
    assert error <= tolerance * scale, f"{name}: max error {error:.3g} at scale {scale:.3g}"


def run_layer(layer, backend, inputs, mask, h0, c0, weights):
    leaves = [t.detach().clone().requires_grad_() for t in (inputs, h0, c0)]
    torch.manual_seed(1234)  # the same dropout mask on both backends
    output, (h_n, c_n) = layer(leaves[0], mask, (leaves[1], leaves[2]), backend=backend)
    loss = (output * weights).sum() + (h_n * h_n).sum() + (c_n * weights[:, 0, :1]).sum()
    parameters = list(layer.parameters())
    grads = torch.autograd.grad(loss, leaves + parameters)
    return [output, h_n, c_n], grads


def assert_backends_agree(layer, batch, tolerance):
    """`fused` equals `reference` on `batch` (`inputs_and_state`): outputs, final states, and the
    gradients of the inputs, initial states and every parameter (each non-zero)."""
    reference_values, reference_grads = run_layer(layer, "reference", *batch)
    fused_values, fused_grads = run_layer(layer, "fused", *batch)
    for name, ours, theirs in zip(["outputs", "h_n", "c_n"], fused_values, reference_values):
        assert_equal_to(ours, theirs, tolerance, name)
    names = ["inputs", "h0", "c0"] + [name for name, _ in layer.named_parameters()]
    for name, ours, theirs in zip(names, fused_grads, reference_grads):
        assert theirs.abs().sum() > 0, name
        assert_equal_to(ours, theirs, tolerance, name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("timesteps", [20, 100])
@pytest.mark.parametrize("recurrence_norm", ["inside", "outside"])
def test_fused_equals_reference_values_states_and_gradients(dtype, timesteps, recurrence_norm):
    layer = clipping_layer(dtype, recurrence_norm)
    batch = inputs_and_state(timesteps, dtype)
    assert_backends_agree(layer, batch, TOLERANCES[dtype])


def test_the_agreement_test_really_clips_and_drops():
    """The inputs above hit both clips often (but not always), and the dropout mask is live."""
    layer = clipping_layer(torch.float64)
    inputs, mask, h0, c0, _ = inputs_and_state(20, torch.float64)
    projected, cells = [], []
    original = layer._layer_norm

    def recording(hidden):
        projected.append(hidden.detach())
        return original(hidden)

    layer._layer_norm = recording  # the reference loop normalises every step's projected state
    state = (h0, c0)
    with torch.no_grad():
        for t in range(mask.size(1)):
            torch.manual_seed(1234)
            _, state = layer(inputs[:, t : t + 1], mask[:, t : t + 1], state, backend="reference")
            cells.append(state[1][mask[:, t]])
    cells, projected = torch.cat(cells), torch.stack(projected)[mask.t()]
    for values, clip in ((cells, CELL_CLIP), (projected, PROJECTION_CLIP)):
        at_clip = (values.abs() == clip).double().mean()
        assert 0.1 < at_clip < 0.6, (clip, at_clip)
    assert not (projected.abs() == PROJECTION_CLIP).all(-1).any()
    # Without dropout the outputs differ: the masks matter.
    batch = inputs_and_state(20, torch.float64)
    with_dropout = run_layer(layer, "fused", *batch)[0][0]
    layer.recurrent_dropout = 0.0
    assert not torch.allclose(run_layer(layer, "fused", *batch)[0][0], with_dropout)


@pytest.mark.parametrize("recurrence_norm", ["inside", "outside"])
def test_encoders_agree_across_backends(recurrence_norm):
    """Two layers, residual, both directions, dropout: the whole encoder, float64."""
    clips = {} if recurrence_norm == "inside" else {"cell_clip": None, "projection_clip": None}
    models = {}
    for backend in ("reference", "fused"):
        torch.manual_seed(0)
        models[backend] = ElmoLstmEncoder(
            INPUT, PROJECTION, CELL, num_layers=2, backend=backend, recurrent_dropout=0.2,
            recurrence_norm=recurrence_norm, return_all_layers=True, **clips,
        ).double().train()  # fmt: skip
    inputs, mask, _, _, _ = inputs_and_state(30, torch.float64)
    results = {}
    for backend, model in models.items():
        leaf = inputs.clone().requires_grad_()
        torch.manual_seed(7)
        layers = model(leaf, mask)
        weights = torch.randn(layers[-1].shape, generator=torch.Generator().manual_seed(3))
        loss = sum(((layer * weights.double()).sum() for layer in layers))
        grads = torch.autograd.grad(loss, [leaf] + list(model.parameters()))
        results[backend] = (layers, grads)
    for index, (ours, theirs) in enumerate(zip(*(results[b][0] for b in models))):
        assert_equal_to(ours, theirs, 1e-10, f"layer {index}")
    names = ["inputs"] + [name for name, _ in models["fused"].named_parameters()]
    for name, ours, theirs in zip(names, *(results[b][1] for b in models)):
        assert_equal_to(ours, theirs, 1e-10, name)


NO_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=NO_GPU)])
def graph_device(request, monkeypatch):
    """
    The fused kernel's GPU path: its loops run on all rows in shapes that do not change from
    batch to batch, replayed from captured CUDA graphs. On CPU the same loops run eagerly.
    """
    from allennlp_elmo_c.nn import cuda_graphs

    if request.param == "cpu":
        monkeypatch.setattr(cuda_graphs, "enabled", lambda device: True)
        monkeypatch.setattr(cuda_graphs, "replay", lambda key, function, args: function(*args))
    else:
        cuda_graphs.clear()
    yield torch.device(request.param)
    cuda_graphs.clear()


def on(device, tensors):
    return [t.to(device) for t in tensors]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_graph_path_equals_reference(graph_device, dtype):
    """
    Batches of one shape: eager until the shape is captured, then replayed with new values each
    time; ragged lengths.
    """
    from allennlp_elmo_c.nn import cuda_graphs

    layer = clipping_layer(dtype).to(graph_device)
    for seed in range(1, cuda_graphs.CAPTURE_AFTER + 3):
        batch = on(graph_device, inputs_and_state(20, dtype, seed=seed))
        assert_backends_agree(layer, batch, TOLERANCES[dtype])


def test_graph_path_encoder_reuses_graphs_before_backward(graph_device):
    """
    Both directions of a layer have the same shapes, so they replay one graph before either's
    backward runs: each must keep its own saved activations.
    """
    models = {}
    for backend in ("reference", "fused"):
        torch.manual_seed(0)
        models[backend] = ElmoLstmEncoder(
            INPUT, PROJECTION, CELL, num_layers=2, backend=backend, recurrent_dropout=0.2,
            return_all_layers=True,
        ).double().train().to(graph_device)  # fmt: skip
    inputs, mask, _, _, _ = on(graph_device, inputs_and_state(30, torch.float64))
    weights = torch.randn(len(mask), 30, 2 * PROJECTION, dtype=torch.float64).to(graph_device)
    results = {}
    for backend, model in models.items():
        leaf = inputs.clone().requires_grad_()
        torch.manual_seed(7)
        layers = model(leaf, mask)
        loss = sum(((layer * weights).sum() for layer in layers))
        results[backend] = (layers, torch.autograd.grad(loss, [leaf] + list(model.parameters())))
    for index, (ours, theirs) in enumerate(zip(*(results[b][0] for b in models))):
        assert_equal_to(ours, theirs, 1e-10, f"layer {index}")
    names = ["inputs"] + [name for name, _ in models["fused"].named_parameters()]
    for name, ours, theirs in zip(names, *(results[b][1] for b in models)):
        assert_equal_to(ours, theirs, 1e-10, name)


def demo_size_run(backend: str, dtype: torch.dtype, clip: float = 1.0):
    # The demo's layer sizes (cell 256, projection 128), 40 ragged steps, clips that bite,
    # dropout: every layer's outputs, then the input's and every parameter's gradient.
    torch.manual_seed(0)
    encoder = ElmoLstmEncoder(100, 128, 256, num_layers=2, backend=backend, cell_clip=clip,
                              projection_clip=clip, return_all_layers=True).to(dtype).train()  # fmt: skip
    generator = torch.Generator().manual_seed(1)
    inputs = (3 * torch.randn(8, 40, 100, generator=generator)).to(dtype).requires_grad_()
    weights = torch.randn(8, 40, 256, generator=generator).to(dtype)
    lengths = torch.tensor([40, 37, 1, 0, 20, 39, 33, 12])
    mask = torch.arange(40).unsqueeze(0) < lengths.unsqueeze(1)
    torch.manual_seed(5)
    outputs = encoder(inputs, mask)
    sum((layer * weights).sum() for layer in outputs[1:]).backward()
    grads = [inputs.grad] + [parameter.grad for parameter in encoder.parameters()]
    names = ["input"] + [name for name, _ in encoder.named_parameters()]
    return [layer.detach().double() for layer in outputs], [grad.double() for grad in grads], names


def errors(run, exact):
    """Each tensor's largest error against the float64 run: `(name, error)` for every layer's
    outputs (absolute) and every gradient (relative to that gradient's largest magnitude)."""
    (outputs, grads, names), (exact_outputs, exact_grads, _) = run, exact
    found = [(f"layer {index}", (ours - theirs).abs().max().item())
             for index, (ours, theirs) in enumerate(zip(outputs, exact_outputs))]  # fmt: skip
    found += [(f"gradient of {name}", (ours - theirs).abs().max().item() / max(1e-12, theirs.abs().max().item()))
              for name, ours, theirs in zip(names, grads, exact_grads)]  # fmt: skip
    return found


# The CPU paths of the `fused` backend: the default (C kernels where built, the products through
# the library `products.onednn_preferred` picks), the torch-op kernels, and the products through
# each library.
CPU_PATHS = {
    "default": {},
    "torch_ops": {"ELMO_C_CPU_KERNELS": "0"},
    "torch_mm": {"ELMO_C_ONEDNN": "0"},
    "onednn": {"ELMO_C_ONEDNN": "1"},
}
FLOOR = 5e-5  # float32 noise: where the reference happens to round luckier on some CPU


@pytest.fixture(scope="module")
def float64_run():
    return demo_size_run("reference", torch.float64)


@pytest.fixture(scope="module")
def reference_errors(float64_run):
    """The float32 reference's own error, per tensor, against its float64 run."""
    found = errors(demo_size_run("reference", torch.float32), float64_run)
    largest = max(error for _, error in found)
    assert 1e-7 < largest < 1e-3  # float32 rounding, not a different function
    return dict(found)


@pytest.mark.parametrize("path", sorted(CPU_PATHS))
def test_every_cpu_path_is_as_exact_as_the_reference(monkeypatch, path, float64_run, reference_errors):
    """
    The standing criterion for every backend path (instead of bitwise agreement between two
    float32 paths): at the demo size (cell 256, projection 128), 40 ragged steps, clips that bite
    and dropout, every layer's outputs and every gradient are within twice the float32
    reference's own error against the float64 run (the reference itself is about 3e-5 off in
    values, 2e-5 relative in gradients: float32 rounding amplified by the recurrence), or 5e-5.
    """
    for name in ("ELMO_C_CPU_KERNELS", "ELMO_C_ONEDNN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in CPU_PATHS[path].items():
        monkeypatch.setenv(name, value)
    for name, ours in errors(demo_size_run("fused", torch.float32), float64_run):
        bound = max(2 * reference_errors[name], FLOOR)
        assert ours <= bound, f"{path}, {name}: {ours:.2e} > {bound:.2e}"


def test_the_criterion_catches_a_clip_one_percent_off(float64_run, reference_errors):
    """A path that clipped at 1.01 instead of 1.0 would fail the criterion above by orders of
    magnitude: the test can tell a different function from float32 rounding."""
    wrong = errors(demo_size_run("fused", torch.float32, clip=1.01), float64_run)
    worst = max(ours / max(2 * reference_errors[name], FLOOR) for name, ours in wrong)
    assert worst > 100, f"a 1% wrong clip exceeds the bound only {worst:.1f}x"
