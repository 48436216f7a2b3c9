import re
import threading

import numpy as np
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
from allennlp.nn import InitializerApplicator

from allennlp_elmo_c.modules.seq2seq_encoders import elmo_lstm
from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import (
    BACKENDS,
    ElmoLstmEncoder,
    reverse_padded,
)
from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import ProjectedLstmLayer

INPUT, PROJECTION, CELL = 5, 4, 6
LENGTHS = [7, 4, 6, 1]
TORCH_LSTM_PATTERNS = [".*weight_ih.*", ".*weight_hh.*", ".*bias_ih.*", ".*bias_hh.*"]


def encoder(backend: str = "reference", **kwargs) -> ElmoLstmEncoder:
    settings = dict(projection_size=PROJECTION, cell_size=CELL, num_layers=3, recurrent_dropout=0.0)
    settings.update(kwargs)
    return ElmoLstmEncoder(INPUT, backend=backend, **settings)


def mask_for(lengths, timesteps=None) -> torch.BoolTensor:
    timesteps = timesteps or max(lengths)
    return torch.arange(timesteps).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)


def padded_batch(lengths=LENGTHS, seed=0):
    generator = torch.Generator().manual_seed(seed)
    mask = mask_for(lengths)
    # Padding holds garbage, not zeros: the encoder must ignore it.
    inputs = torch.randn(len(lengths), mask.size(1), INPUT, generator=generator)
    return inputs, mask


def randomise_norms(module: torch.nn.Module, seed: int = 1) -> None:
    """LayerNorms start as the identity affine map; random ones make the tests see gamma/beta."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for submodule in module.modules():
            if isinstance(submodule, torch.nn.LayerNorm):
                submodule.weight.copy_(
                    1 + 0.5 * torch.randn(submodule.weight.shape, generator=generator)
                )
                submodule.bias.copy_(0.5 * torch.randn(submodule.bias.shape, generator=generator))


# ---------------------------------------------------------------------------------------------
# No peeking: the forward LM sees only tokens 0..t, the backward LM only tokens t..n-1.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train_dropout"])
def test_no_peeking_at_every_layer(backend, training):
    torch.manual_seed(0)
    dropout = 0.3 if training else 0.0
    model = encoder(backend, recurrent_dropout=dropout, return_all_layers=True)
    randomise_norms(model)
    model.train(training)
    inputs, mask = padded_batch()

    def run(x):
        torch.manual_seed(1234)  # the same dropout masks for every run
        with torch.no_grad():
            return model(x, mask)

    base = run(inputs)
    assert len(base) == model.num_layers + 1
    if training:  # the dropout is really on: another seed gives other outputs
        torch.manual_seed(99)
        with torch.no_grad():
            other = model(inputs, mask)
        assert not torch.equal(other[-1], base[-1])
    for layer in base:
        assert layer.shape == (len(LENGTHS), max(LENGTHS), 2 * PROJECTION)
        assert torch.equal(layer[~mask], torch.zeros_like(layer[~mask]))  # exactly zero

    generator = torch.Generator().manual_seed(5)
    for row, length in enumerate(LENGTHS):
        others = [r for r in range(len(LENGTHS)) if r != row]
        for changed in range(length):
            new_inputs = inputs.clone()
            new_inputs[row, changed] += 1.0 + torch.rand(INPUT, generator=generator)
            outputs = run(new_inputs)
            for index, (old, new) in enumerate(zip(base, outputs)):
                where = f"layer {index}, row {row}, token {changed} changed"
                forward_old, forward_new = old[row, :, :PROJECTION], new[row, :, :PROJECTION]
                backward_old, backward_new = old[row, :, PROJECTION:], new[row, :, PROJECTION:]
                # Forward half: positions before the changed token are untouched, it changes.
                assert torch.equal(forward_new[:changed], forward_old[:changed]), where
                assert not torch.allclose(forward_new[changed], forward_old[changed]), where
                # Backward half: positions after the changed token are untouched, it changes.
                assert torch.equal(backward_new[changed + 1 :], backward_old[changed + 1 :]), where
                assert not torch.allclose(backward_new[changed], backward_old[changed]), where
                # Nothing crosses rows, padding stays exactly zero.
                assert torch.equal(new[others], old[others]), where
                assert torch.equal(new[~mask], torch.zeros_like(new[~mask])), where


@pytest.mark.parametrize("backend", BACKENDS)
def test_padding_values_are_ignored(backend):
    torch.manual_seed(0)
    model = encoder(backend).eval()
    inputs, mask = padded_batch()
    with torch.no_grad():
        base = model(inputs, mask)
        garbage = inputs.clone()
        garbage[~mask] = 1e3 * torch.randn(int((~mask).sum()), INPUT)
        assert torch.equal(model(garbage, mask), base)
        # A row's outputs do not depend on the batch it is in (nor on the batch's max length), up
        # to float32 rounding: a batch of another size multiplies in other GEMM blocks (MKL's AVX2
        # kernels reorder the sums: 3e-6 seen on outputs of ~0.1), while anything leaking from
        # other rows or from padding moves them by far more.
        for row, length in enumerate(LENGTHS):
            alone = model(inputs[row : row + 1, :length], mask[row : row + 1, :length])
            torch.testing.assert_close(alone[0], base[row, :length], atol=2e-5, rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# reverse_padded
# ---------------------------------------------------------------------------------------------


def test_reverse_padded_hand_built():
    tensor = torch.tensor([[1, 2, 3, -1], [4, 5, -2, -3], [6, 7, 8, 9], [-4, -5, -6, -7]])
    lengths = torch.tensor([3, 2, 4, 0])
    expected = torch.tensor([[3, 2, 1, -1], [5, 4, -2, -3], [9, 8, 7, 6], [-4, -5, -6, -7]])
    assert torch.equal(reverse_padded(tensor, lengths), expected)
    assert torch.equal(reverse_padded(expected, lengths), tensor)


def test_reverse_padded_with_feature_dimensions_twice_is_identity():
    tensor = torch.randn(3, 5, 2, 4)
    lengths = torch.tensor([5, 1, 3])
    reversed_ = reverse_padded(tensor, lengths)
    assert torch.equal(reversed_[0], tensor[0].flip(0))
    assert torch.equal(reversed_[1], tensor[1])
    assert torch.equal(reversed_[2, :3], tensor[2, :3].flip(0))
    assert torch.equal(reversed_[2, 3:], tensor[2, 3:])  # padding stays where it was
    assert torch.equal(reverse_padded(reversed_, lengths), tensor)


# ---------------------------------------------------------------------------------------------
# The per-step computation of each backend
# ---------------------------------------------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _layer_norm(x, gamma, beta, eps=1e-5):
    return (x - x.mean()) / np.sqrt(x.var() + eps) * gamma + beta


def _numpy_step(layer: ProjectedLstmLayer, x, h, c, clip=True):
    """One LSTM-with-projection step written out: gates i, f, g, o; clips; LayerNorm."""
    W = layer.input_weight.detach().double().numpy()
    U = layer.state_weight.detach().double().numpy()
    b = layer.gate_bias.detach().double().numpy()
    P = layer.projection_weight.detach().double().numpy()
    gamma = layer.norm.weight.detach().double().numpy()
    beta = layer.norm.bias.detach().double().numpy()
    n = layer.cell_size
    gates = W @ x + U @ h + b
    i, f, g, o = gates[:n], gates[n : 2 * n], gates[2 * n : 3 * n], gates[3 * n :]
    cell = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    if clip and layer.cell_clip is not None:
        cell = np.clip(cell, -layer.cell_clip, layer.cell_clip)
    projected = P @ (_sigmoid(o) * np.tanh(cell))
    if clip and layer.projection_clip is not None:
        projected = np.clip(projected, -layer.projection_clip, layer.projection_clip)
    return _layer_norm(projected, gamma, beta), cell


def _known_layer(cell_clip=0.6, projection_clip=0.3) -> ProjectedLstmLayer:
    layer = ProjectedLstmLayer(3, 2, 2, cell_clip=cell_clip, projection_clip=projection_clip)
    with torch.no_grad():
        layer.input_weight.copy_(torch.linspace(-1.2, 1.5, 24).view(8, 3))
        layer.state_weight.copy_(torch.linspace(0.9, -0.8, 16).view(8, 2))
        layer.gate_bias.copy_(torch.tensor([0.1, -0.2, 1.0, 1.0, 0.3, -0.4, 0.2, 0.5]))
        layer.projection_weight.copy_(torch.tensor([[0.7, -1.3], [0.4, 0.9]]))
        layer.norm.weight.copy_(torch.tensor([1.5, 0.5]))
        layer.norm.bias.copy_(torch.tensor([0.2, -0.1]))
    return layer


def test_reference_step_equals_hand_written_lstm_with_projection():
    layer = _known_layer().eval()
    x = np.array([0.5, -1.0, 2.0])
    h0, c0 = np.array([0.3, -0.7]), np.array([0.9, -0.4])
    expected_h, expected_c = _numpy_step(layer, x, h0, c0)
    # The clips are active in this example (otherwise the test would not see them).
    unclipped_h, unclipped_c = _numpy_step(layer, x, h0, c0, clip=False)
    assert np.abs(unclipped_c).max() > layer.cell_clip
    assert not np.allclose(unclipped_h, expected_h)

    state = (torch.tensor(h0[None], dtype=torch.float), torch.tensor(c0[None], dtype=torch.float))
    inputs = torch.tensor(x[None, None], dtype=torch.float)
    with torch.no_grad():
        output, (h1, c1) = layer(
            inputs, torch.ones(1, 1, dtype=torch.bool), state, backend="reference"
        )
    np.testing.assert_allclose(output[0, 0].numpy(), expected_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1[0].numpy(), expected_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1[0].numpy(), expected_c, rtol=1e-5, atol=1e-6)

    # A second step feeds the LayerNormed projected state back (LayerNorm inside the recurrence).
    x2 = np.array([-0.3, 0.8, 0.1])
    expected_h2, expected_c2 = _numpy_step(layer, x2, expected_h, expected_c)
    inputs = torch.tensor(np.stack([x, x2])[None], dtype=torch.float)
    with torch.no_grad():
        output, (h2, c2) = layer(
            inputs, torch.ones(1, 2, dtype=torch.bool), state, backend="reference"
        )
    np.testing.assert_allclose(output[0, 1].numpy(), expected_h2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2[0].numpy(), expected_c2, rtol=1e-5, atol=1e-6)


def test_reference_encoder_one_layer_one_timestep_by_hand():
    torch.manual_seed(0)
    model = ElmoLstmEncoder(
        3,
        projection_size=2,
        cell_size=2,
        num_layers=1,
        backend="reference",
        cell_clip=0.6,
        projection_clip=0.3,
        recurrent_dropout=0.0,
    ).eval()
    randomise_norms(model)
    x = np.array([0.5, -1.0, 2.0])
    halves = []
    for direction in ("forward_lm", "backward_lm"):
        stack = model.stacks[direction]
        linear = stack.input_projection
        projection = linear.weight.detach().double().numpy() @ x + linear.bias.detach().numpy()
        norm = stack.input_norm
        gamma, beta = norm.weight.detach().double().numpy(), norm.bias.detach().double().numpy()
        projected = _layer_norm(projection, gamma, beta)
        hidden, _ = _numpy_step(stack.layers[0], projected, np.zeros(2), np.zeros(2))
        halves.append(hidden)
    with torch.no_grad():
        output = model(
            torch.tensor(x[None, None], dtype=torch.float), torch.ones(1, 1, dtype=torch.bool)
        )
    np.testing.assert_allclose(output[0, 0].numpy(), np.concatenate(halves), rtol=1e-5, atol=1e-6)


def _torch_lstm_like(layer: ProjectedLstmLayer, input_size: int) -> torch.nn.LSTM:
    lstm = torch.nn.LSTM(
        input_size, layer.cell_size, proj_size=layer.projection_size, batch_first=True
    )
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(layer.input_weight)
        lstm.weight_hh_l0.copy_(layer.state_weight)
        lstm.bias_ih_l0.copy_(layer.gate_bias)
        lstm.bias_hh_l0.zero_()
        lstm.weight_hr_l0.copy_(layer.projection_weight)
    return lstm.eval()


NO_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=NO_GPU)]


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("device", DEVICES)
def test_outside_variant_equals_torch_lstm_with_projection_then_layer_norm(device):
    # recurrence_norm 'outside' is a plain LSTMP (cuDNN's on a GPU) with LayerNorm on its outputs.
    # cuDNN's RNNs round float32 to TF32 by default (torch.backends.cudnn.allow_tf32), and each
    # batch shape may take another algorithm; this test compares the computations in float32.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        _check_outside_variant(device)


def _check_outside_variant(device):
    torch.manual_seed(0)
    layer = ProjectedLstmLayer(INPUT, CELL, PROJECTION, recurrence_norm="outside").eval()
    randomise_norms(layer)
    with torch.no_grad():
        layer.gate_bias.normal_()
    # Train mode: cuDNN runs an RNN's backward only then (one layer, no dropout: the same function).
    lstm = _torch_lstm_like(layer, INPUT).train()
    layer, lstm = layer.to(device), lstm.to(device)
    inputs, mask = padded_batch()
    inputs, mask = inputs.to(device).requires_grad_(), mask.to(device)
    h0 = torch.randn(len(LENGTHS), PROJECTION, device=device)
    c0 = torch.randn(len(LENGTHS), CELL, device=device)
    weights = torch.randn(len(LENGTHS), max(LENGTHS), PROJECTION, device=device)
    output, (h_n, c_n) = layer(inputs, mask, (h0, c0), backend="fused")
    assert torch.equal(output[~mask], torch.zeros_like(output[~mask]))
    (output * weights).sum().backward()
    expected_input_grad = torch.zeros_like(inputs)
    for row, length in enumerate(LENGTHS):
        state = (h0[row].view(1, 1, -1), c0[row].view(1, 1, -1))
        row_inputs = inputs[row : row + 1, :length].detach().requires_grad_()
        expected, (expected_h, expected_c) = lstm(row_inputs, state)
        expected = torch.nn.functional.layer_norm(
            expected, (PROJECTION,), layer.norm.weight, layer.norm.bias, layer.norm.eps
        )
        torch.testing.assert_close(output[row, :length], expected[0], atol=1e-5, rtol=1e-5)
        # The carried state is the kernel's own (before the LayerNorm of the outputs).
        torch.testing.assert_close(h_n[row], expected_h[0, 0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(c_n[row], expected_c[0, 0], atol=1e-5, rtol=1e-5)
        (expected[0] * weights[row, :length]).sum().backward()
        expected_input_grad[row, :length] = row_inputs.grad
    # Gradients agree too (the CPU kernel has a hand-written backward).
    torch.testing.assert_close(inputs.grad, expected_input_grad, atol=1e-5, rtol=1e-4)
    pairs = [
        (layer.input_weight, lstm.weight_ih_l0),
        (layer.state_weight, lstm.weight_hh_l0),
        (layer.gate_bias, lstm.bias_ih_l0),
        (layer.projection_weight, lstm.weight_hr_l0),
    ]
    for ours, theirs in pairs:
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(lstm.bias_hh_l0.grad, lstm.bias_ih_l0.grad)  # one bias is enough


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_empty_rows_keep_their_state_and_output_zeros(backend, device):
    torch.manual_seed(0)
    layer = ProjectedLstmLayer(INPUT, CELL, PROJECTION).to(device).eval()
    inputs, _ = padded_batch([3, 3, 3])
    inputs = inputs.to(device)
    mask = mask_for([3, 0, 2]).to(device)
    h0, c0 = torch.randn(3, PROJECTION, device=device), torch.randn(3, CELL, device=device)
    with torch.no_grad():
        output, (h, c) = layer(inputs, mask, (h0, c0), backend=backend)
        assert torch.equal(output[1], torch.zeros_like(output[1]))
        assert torch.equal(h[1], h0[1]) and torch.equal(c[1], c0[1])
        assert not torch.allclose(h[0], h0[0]) and not torch.allclose(h[2], h0[2])
        # The non-empty rows are as if the empty row were not there.
        rows = [0, 2]
        alone, (h_alone, c_alone) = layer(
            inputs[rows], mask[rows], (h0[rows], c0[rows]), backend=backend
        )
        torch.testing.assert_close(output[rows], alone, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(h[rows], h_alone, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(c[rows], c_alone, atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Clipping (reference backend)
# ---------------------------------------------------------------------------------------------


def test_clipping_bounds_cell_and_projection_in_the_reference_backend():
    torch.manual_seed(0)
    results = {}
    for clips in [(0.5, 0.25), (None, None)]:
        layer = ProjectedLstmLayer(
            INPUT, CELL, PROJECTION, cell_clip=clips[0], projection_clip=clips[1]
        )
        with torch.no_grad():
            layer.input_weight.normal_(0, 50.0)
            layer.state_weight.normal_(0, 50.0)
            layer.gate_bias.normal_(0, 50.0)
            layer.projection_weight.normal_(0, 100.0)
        layer.eval()
        before_norm = []
        original = layer._layer_norm

        def recording(hidden, original=original, before_norm=before_norm):
            before_norm.append(hidden.detach().clone())
            return original(hidden)

        layer._layer_norm = recording  # the reference loop calls self._layer_norm at every step
        inputs, mask = padded_batch()
        inputs = inputs * mask.unsqueeze(-1)
        cells = []
        with torch.no_grad():
            state = None
            for t in range(mask.size(1)):  # step by step to see every cell state
                _, state = layer(
                    inputs[:, t : t + 1], mask[:, t : t + 1], state, backend="reference"
                )
                cells.append(state[1])
        assert len(before_norm) == mask.size(1)
        results[clips] = (torch.stack(cells), torch.stack(before_norm))
    cells, projected = results[(0.5, 0.25)]
    assert cells.abs().max() <= 0.5 and torch.isclose(cells.abs().max(), torch.tensor(0.5))
    assert projected.abs().max() <= 0.25 and torch.isclose(
        projected.abs().max(), torch.tensor(0.25)
    )
    # Without clipping the same huge weights go far beyond those bounds.
    cells, projected = results[(None, None)]
    assert cells.abs().max() > 0.9 and projected.abs().max() > 10.0


def test_encoder_passes_clips_to_every_layer():
    model = encoder(cell_clip=2.5, projection_clip=1.5, recurrent_dropout=0.2)
    for stack in model.stacks.values():
        for layer in stack.layers:
            assert (layer.cell_clip, layer.projection_clip, layer.recurrent_dropout) == (
                2.5,
                1.5,
                0.2,
            )


# ---------------------------------------------------------------------------------------------
# Parameters shared by both backends
# ---------------------------------------------------------------------------------------------


def test_backends_share_parameters_and_state_dicts_move_between_them():
    torch.manual_seed(0)
    reference = encoder("reference", num_layers=1, cell_clip=None, projection_clip=None)
    torch.manual_seed(1)
    fused = encoder("fused", num_layers=1, cell_clip=None, projection_clip=None)
    reference_state, fused_state = reference.state_dict(), fused.state_dict()
    assert list(reference_state) == list(fused_state)
    assert all(reference_state[k].shape == fused_state[k].shape for k in reference_state)
    fused.load_state_dict(reference_state, strict=True)
    for key, value in fused.state_dict().items():
        assert torch.equal(value, reference_state[key])
    inputs, mask = padded_batch()
    with torch.no_grad():  # the same function (test_backend_agreement.py proves it in depth)
        torch.testing.assert_close(
            fused.eval()(inputs, mask), reference.eval()(inputs, mask), atol=1e-5, rtol=1e-5
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameter_names_escape_torch_lstm_initializer_regexes(backend):
    model = encoder(backend)
    names = [name for name, _ in model.named_parameters()]
    assert names and len(names) == len(model.state_dict())
    for name in names:
        for pattern in TORCH_LSTM_PATTERNS:
            assert not re.search(pattern, name), (name, pattern)
    # So a task config's LSTM initializers leave this encoder alone.
    before = {k: v.clone() for k, v in model.state_dict().items()}
    regexes = [(pattern, {"type": "constant", "val": 7.0}) for pattern in TORCH_LSTM_PATTERNS]
    InitializerApplicator(regexes)(model)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


# ---------------------------------------------------------------------------------------------
# Stateful
# ---------------------------------------------------------------------------------------------


def _stateful_pair(backend):
    torch.manual_seed(0)
    stateless = encoder(backend, return_all_layers=True).eval()
    randomise_norms(stateless)
    stateful = encoder(backend, return_all_layers=True, stateful=True).eval()
    stateful.load_state_dict(stateless.state_dict())
    return stateless, stateful


def _two_windows(backend):
    """`_stateful_pair`, 2 rows of 8 tokens to read as two windows of 4, the mask of a full
    window, and the stateless encoder's layers over all 8 tokens."""
    stateless, stateful = _stateful_pair(backend)
    inputs, _ = padded_batch([8, 8])
    with torch.no_grad():
        whole = stateless(inputs, torch.ones(2, 8, dtype=torch.bool))
    return stateless, stateful, inputs, torch.ones(2, 4, dtype=torch.bool), whole


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateful_forward_direction_halves_equal_whole(backend):
    stateless, stateful = _stateful_pair(backend)
    inputs, _ = padded_batch([8, 8, 8])
    lengths = [8, 5, 4]  # padding only in the second half
    mask = mask_for(lengths, 8)
    with torch.no_grad():
        whole = stateless(inputs, mask)
        first = stateful(inputs[:, :4], mask[:, :4])
        second = stateful(inputs[:, 4:], mask[:, 4:])
    for index, layer in enumerate(whole):
        halves = torch.cat([first[index], second[index]], dim=1)
        torch.testing.assert_close(
            halves[..., :PROJECTION], layer[..., :PROJECTION], atol=1e-5, rtol=1e-5
        )
        assert torch.equal(halves[~mask], torch.zeros_like(halves[~mask]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateful_row_without_tokens_in_a_window_keeps_its_state(backend):
    stateless, stateful, inputs, full, whole = _two_windows(backend)
    with torch.no_grad():
        stateful(inputs[:, :4], full)
        # Row 1 has run out of text in this window; row 0 reads something unrelated.
        middle = stateful(torch.randn(2, 4, INPUT), torch.tensor([[True] * 4, [False] * 4]))
        last = stateful(inputs[:, 4:], full)
    for layer in middle:
        assert torch.equal(layer[1], torch.zeros_like(layer[1]))
    for index, layer in enumerate(whole):
        torch.testing.assert_close(
            last[index][1, :, :PROJECTION], layer[1, 4:, :PROJECTION], atol=1e-5, rtol=1e-5
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateful_backward_direction_continues_from_the_previous_window(backend):
    # The backward stack's final state is the one after reading a window right to left, i.e.
    # after its *first* token; carried into the next window it is where the backward LM starts
    # reading that window (from its last token). So window B after window A gets the backward
    # states of the sequence B ++ A read whole.
    stateless, stateful = _stateful_pair(backend)
    inputs, _ = padded_batch([8, 8])
    a, b = inputs[:, :4], inputs[:, 4:]
    mask = torch.ones(2, 4, dtype=torch.bool)
    with torch.no_grad():
        first = stateful(a, mask)
        second = stateful(b, mask)
        fresh_a = stateless(a, mask)
        b_then_a = stateless(torch.cat([b, a], dim=1), torch.ones(2, 8, dtype=torch.bool))
        fresh_b = stateless(b, mask)
    for index in range(len(first)):
        torch.testing.assert_close(first[index], fresh_a[index], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(
            second[index][..., PROJECTION:],
            b_then_a[index][:, :4, PROJECTION:],
            atol=1e-5,
            rtol=1e-5,
        )
    # ...which really depends on the carried state (LSTM layers only; layer 0 has no state).
    assert not torch.allclose(
        second[-1][..., PROJECTION:], fresh_b[-1][..., PROJECTION:], atol=1e-4
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_reset_states_and_batch_size_change(backend):
    stateless, stateful = _stateful_pair(backend)
    inputs, mask = padded_batch([6, 6, 6])
    with torch.no_grad():
        stateful(inputs, mask)
        carried = stateful(inputs, mask)
        fresh = stateless(inputs, mask)
        assert not torch.allclose(carried[-1], fresh[-1], atol=1e-4)
        stateful.reset_states()
        for got, expected in zip(stateful(inputs, mask), fresh):
            torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
        # A different batch size starts from zero states too.
        smaller, small_mask = inputs[:2], mask[:2]
        for got, expected in zip(stateful(smaller, small_mask), stateless(smaller, small_mask)):
            torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    # The stateless encoder keeps nothing.
    with torch.no_grad():
        for got, expected in zip(stateless(inputs, mask), fresh):
            assert torch.equal(got, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reset_states_with_a_mask_resets_only_those_rows(backend):
    stateless, stateful, inputs, full, whole = _two_windows(backend)
    with torch.no_grad():
        fresh = stateless(inputs[:, 4:], full)
        stateful(inputs[:, :4], full)
        stateful.reset_states(torch.tensor([True, False]))  # row 0 starts a new document
        second = stateful(inputs[:, 4:], full)
    torch.testing.assert_close(second[-1][0], fresh[-1][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        second[-1][1, :, :PROJECTION], whole[-1][1, 4:, :PROJECTION], atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateful_states_are_detached(backend):
    torch.manual_seed(0)
    model = encoder(backend, stateful=True, recurrent_dropout=0.1).train()
    inputs, mask = padded_batch([5, 5])
    first = inputs.clone().requires_grad_()
    model(first, mask)
    second = inputs.clone().requires_grad_()
    model(second, mask).sum().backward()
    assert first.grad is None and second.grad is not None


# ---------------------------------------------------------------------------------------------
# Interface, configuration, gradients
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_output_dims_and_interface(backend):
    model = encoder(backend, num_layers=2)
    assert model.get_input_dim() == INPUT
    assert model.get_output_dim() == 2 * PROJECTION
    assert model.is_bidirectional() is True
    assert model.stateful is False and encoder(backend, stateful=True).stateful is True
    assert model.num_layers == 2
    inputs, mask = padded_batch()
    output = model(inputs, mask)
    assert isinstance(output, torch.Tensor)
    assert output.shape == (len(LENGTHS), max(LENGTHS), model.get_output_dim())
    model.return_all_layers = True
    layers = model.eval()(inputs, mask)
    assert isinstance(layers, list) and len(layers) == 3
    model.return_all_layers = False
    assert torch.equal(model(inputs, mask), layers[-1])
    assert all(layer.shape == output.shape for layer in layers)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backend": "cudnn"},
        {"backend": "Fused"},
        {"recurrence_norm": "after"},
        {"recurrence_norm": "outside"},  # with the default clips
        {"recurrence_norm": "outside", "cell_clip": None},
        {"recurrence_norm": "outside", "projection_clip": None},
        {"input_size": 0},
        {"projection_size": 0},
        {"cell_size": 0},
        {"num_layers": 0},
        {"projection_size": -3},
        {"recurrent_dropout": 1.0},
        {"recurrent_dropout": -0.1},
    ],
)
def test_configuration_errors(kwargs):
    settings = dict(input_size=INPUT, projection_size=PROJECTION, cell_size=CELL, num_layers=1)
    settings.update(kwargs)
    with pytest.raises(ConfigurationError):
        ElmoLstmEncoder(**settings)


def test_from_params():
    params = Params(
        {
            "type": "elmo_lstm",
            "input_size": INPUT,
            "projection_size": PROJECTION,
            "cell_size": CELL,
            "num_layers": 2,
            "backend": "reference",
            "cell_clip": 1.0,
            "projection_clip": 2.0,
            "recurrent_dropout": 0.2,
            "return_all_layers": True,
        }
    )
    model = Seq2SeqEncoder.from_params(params)
    assert isinstance(model, ElmoLstmEncoder)
    assert (model.backend, model.num_layers, model.get_output_dim()) == (
        "reference",
        2,
        2 * PROJECTION,
    )
    assert model.stacks["forward_lm"].layers[1].cell_clip == 1.0
    with pytest.raises(ConfigurationError):
        Seq2SeqEncoder.from_params(
            Params({"type": "elmo_lstm", "input_size": 3, "backend": "nope"})
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_reach_every_parameter(backend):
    torch.manual_seed(0)
    model = encoder(backend, recurrent_dropout=0.1).train()
    randomise_norms(model)
    inputs, mask = padded_batch()
    inputs.requires_grad_()
    model(inputs, mask).sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, name
        assert torch.isfinite(parameter.grad).all(), name
    assert torch.isfinite(inputs.grad).all() and inputs.grad[mask].abs().sum() > 0
    assert torch.equal(inputs.grad[~mask], torch.zeros_like(inputs.grad[~mask]))
    # The sum of a LayerNorm's outputs hardly depends on its input, so use a weighted sum to see
    # a non-zero gradient everywhere.
    model.zero_grad()
    output = model(inputs, mask)
    (output * torch.randn(output.shape)).sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad.abs().sum() > 0, name


def test_paper_size_parameter_count(monkeypatch):
    # Orthogonal initialisation of the 4096-cell matrices takes ~30 s on a small CPU; counting
    # parameters does not need it.
    monkeypatch.setattr(ProjectedLstmLayer, "reset_parameters", lambda self: None)
    model = ElmoLstmEncoder(300, projection_size=512, cell_size=4096, num_layers=2, backend="fused")
    d, p, c, layers = 300, 512, 4096, 2
    input_projection = d * p + p + 2 * p  # Linear with bias, LayerNorm (gamma, beta)
    lstm_layer = (
        4 * c * p + 4 * c * p + 4 * c + p * c + 2 * p
    )  # W_x, W_h, one gate bias, P, LayerNorm
    expected = 2 * (input_projection + layers * lstm_layer)  # two directions
    assert expected == 75_877_376
    assert sum(parameter.numel() for parameter in model.parameters()) == expected
    assert model.get_output_dim() == 1024
    biggest = max(parameter.numel() for parameter in model.parameters())
    assert biggest == 4 * c * p  # 16384 x 512


def test_reverse_padded_gradient_is_the_same_reversal():
    """Its backward gathers by the same index (the reversal is its own inverse): gradcheck on a
    ragged batch with an empty and a full row, and the gradient is the reversed gradient."""
    tensor = torch.randn(4, 7, 3, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([7, 3, 0, 5])
    assert torch.autograd.gradcheck(lambda t: reverse_padded(t, lengths), (tensor,))
    grad = torch.randn(4, 7, 3, dtype=torch.float64)
    (ours,) = torch.autograd.grad(reverse_padded(tensor, lengths), tensor, grad)
    assert torch.equal(ours, reverse_padded(grad, lengths))
    assert torch.equal(ours[2], grad[2]) and torch.equal(ours[1, 3:], grad[1, 3:])


def test_input_of_the_projection_size_gets_layer_norm_alone():
    """As the paper's code: no input Linear where the input already has the projection's size;
    layer 0 is then LayerNorm(input) of each direction."""
    torch.manual_seed(0)
    model = ElmoLstmEncoder(8, projection_size=8, cell_size=6, num_layers=1,
                            return_all_layers=True).eval()  # fmt: skip
    randomise_norms(model)
    assert all(stack.input_projection is None for stack in model.stacks.values())
    assert not any("input_projection" in name for name, _ in model.named_parameters())
    inputs, mask = torch.randn(3, 5, 8), mask_for([5, 3, 0], 5)
    with torch.no_grad():
        layer0 = model(inputs, mask)[0]
    for half, stack in zip(layer0.chunk(2, dim=-1), model.stacks.values()):
        norm = stack.input_norm
        expected = torch.nn.functional.layer_norm(inputs, (8,), norm.weight, norm.bias, norm.eps)
        assert torch.allclose(half, expected * mask.unsqueeze(-1), atol=1e-6)
    # Different sizes keep their Linear.
    assert all(
        stack.input_projection is not None for stack in encoder(projection_size=8).stacks.values()
    )


@pytest.mark.parametrize("return_all_layers", [False, True])
def test_directions_at_once_compute_what_they_compute_in_turn(return_all_layers, monkeypatch):
    # On two torch threads the directions run concurrently (`nn.concurrent`), one thread each:
    # outputs, final states and gradients bit for bit those of one thread running them in turn.
    stack_forward, ran_on = elmo_lstm._DirectionStack.forward, set()

    def spied(*args, **kwargs):
        ran_on.add((threading.get_ident(), torch.get_num_threads()))
        return stack_forward(*args, **kwargs)

    monkeypatch.setattr(elmo_lstm._DirectionStack, "forward", spied)
    model = encoder("fused", recurrent_dropout=0.3, stateful=True,
                    return_all_layers=return_all_layers)  # fmt: skip
    randomise_norms(model)
    inputs, mask = padded_batch()
    inputs.requires_grad_()
    layers = model.num_layers + 1 if return_all_layers else 1
    weights = torch.randn(len(LENGTHS), mask.size(1), 2 * PROJECTION * layers)
    joined = (lambda outputs: torch.cat(outputs, -1)) if return_all_layers else (lambda top: top)
    results = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        try:
            model.reset_states()
            ran_on.clear()
            torch.manual_seed(0)
            outputs = joined(model(inputs, mask))
            states = [t for direction in model._states.values() for state in direction
                      for t in state]  # fmt: skip
            inputs.grad = None
            model.zero_grad()
            (outputs * weights).sum().backward()
            model.eval()
            with torch.no_grad():
                evaluated = joined(model(inputs, mask))
            model.train()
        finally:
            torch.set_num_threads(1)
        gradients = [inputs.grad] + [parameter.grad for parameter in model.parameters()]
        results.append([outputs, evaluated, *states, *gradients])
        assert len({thread for thread, _ in ran_on}) == threads
        assert {count for _, count in ran_on} == {1}
    assert all(torch.equal(ours, theirs) for ours, theirs in zip(results[0], results[1]))
