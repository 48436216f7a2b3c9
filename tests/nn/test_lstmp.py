import pytest
import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from allennlp_elmo_c.nn.lstmp import lstm_with_projection

BATCH, TIMESTEPS, INPUT, CELL, PROJECTION = 4, 6, 5, 7, 3


def random_args(lengths, dtype=torch.float64):
    torch.manual_seed(0)
    shapes = [(BATCH, TIMESTEPS, INPUT), (BATCH, PROJECTION), (BATCH, CELL), (4 * CELL, INPUT),
              (4 * CELL, PROJECTION), (4 * CELL,), (PROJECTION, CELL)]  # fmt: skip
    tensors = [torch.randn(*shape, dtype=dtype, requires_grad=True) for shape in shapes]
    inputs, hidden, cell, w_ih, w_hh, bias, w_hr = tensors
    return inputs, torch.tensor(lengths), hidden, cell, w_ih, w_hh, bias, w_hr


def torch_reference(inputs, lengths, hidden, cell, w_ih, w_hh, bias, w_hr):
    """torch.lstm over packed sequences (rows of length 0 excluded)."""
    keep = lengths > 0
    packed = pack_padded_sequence(
        inputs[keep], lengths[keep], batch_first=True, enforce_sorted=False
    )
    order = packed.sorted_indices
    state = (hidden[keep][order].unsqueeze(0), cell[keep][order].unsqueeze(0))
    weights = [w_ih, w_hh, bias, torch.zeros_like(bias), w_hr]
    output, h, c = torch.lstm(
        packed.data, packed.batch_sizes, state, weights, True, 1, 0.0, False, False
    )
    output = PackedSequence(output, packed.batch_sizes, order, packed.unsorted_indices)
    output, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
    return output, h[0][packed.unsorted_indices], c[0][packed.unsorted_indices], keep


@pytest.mark.parametrize("lengths", [[6, 6, 6, 6], [6, 3, 0, 5], [1, 2, 3, 4]])
def test_matches_torch_lstm_values_and_gradients(lengths):
    args = random_args(lengths)
    outputs, h_n, c_n = lstm_with_projection(*args)
    expected, expected_h, expected_c, keep = torch_reference(*args)
    torch.testing.assert_close(outputs[keep], expected)
    torch.testing.assert_close(h_n[keep], expected_h)
    torch.testing.assert_close(c_n[keep], expected_c)
    # Empty rows: no output, state unchanged.
    assert torch.all(outputs[~keep] == 0)
    torch.testing.assert_close(h_n[~keep], args[2][~keep])
    # Gradients of a loss on outputs and final states agree with autograd through torch.lstm.
    weights = torch.randn_like(outputs)
    differentiable = [args[0], args[2], args[3], *args[4:]]
    ours = torch.autograd.grad(
        (outputs * weights).sum() + h_n[keep].sum() + c_n[keep].pow(2).sum(), differentiable
    )
    theirs = torch.autograd.grad(
        (expected * weights[keep]).sum() + expected_h.sum() + expected_c.pow(2).sum(),
        differentiable,
        allow_unused=True,
    )
    for mine, reference in zip(ours, theirs):
        reference = torch.zeros_like(mine) if reference is None else reference
        torch.testing.assert_close(mine, reference)


def test_gradcheck():
    inputs, lengths, hidden, cell, *weights = random_args([6, 3, 0, 5])
    function = lambda x, h, c, *w: lstm_with_projection(x, lengths, h, c, *w)  # noqa: E731
    assert torch.autograd.gradcheck(function, (inputs, hidden, cell, *weights))


def test_float32_is_close_to_float64():
    args64 = random_args([6, 2, 4, 6])
    args32 = [a.detach().float() if a.is_floating_point() else a for a in args64]
    torch.testing.assert_close(
        lstm_with_projection(*args32)[0],
        lstm_with_projection(*args64)[0].float(),
        atol=1e-5,
        rtol=1e-4,
    )


def test_gradcheck_with_layer_norm_clips_and_dropout():
    inputs, lengths, hidden, cell, *weights = random_args([6, 3, 0, 5])
    generator = torch.Generator().manual_seed(3)
    norm_weight = (1 + 0.3 * torch.randn(PROJECTION, generator=generator)).double()
    norm_bias = (0.3 * torch.randn(PROJECTION, generator=generator)).double()
    norm_weight.requires_grad_(), norm_bias.requires_grad_()
    dropout = (torch.rand(BATCH, PROJECTION, generator=generator) > 0.3).double() / 0.7

    def function(x, h, c, *parameters):
        return lstm_with_projection(
            x, lengths, h, c, *parameters[:4], norm_weight=parameters[4],
            norm_bias=parameters[5], cell_clip=1.5, projection_clip=1.0, dropout=dropout,
        )  # fmt: skip

    # The random weights are large enough for both clips to be active somewhere.
    with torch.no_grad():
        plain = lstm_with_projection(inputs, lengths, hidden, cell, *weights)
    assert plain[2].abs().max() > 1.5 and plain[0].abs().max() > 1.0
    arguments = (inputs, hidden, cell, *weights, norm_weight, norm_bias)
    assert torch.autograd.gradcheck(function, arguments)


def test_norm_weight_and_bias_come_together():
    inputs, lengths, hidden, cell, *weights = random_args([6, 3, 0, 5])
    with pytest.raises(ValueError, match="norm_weight and norm_bias"):
        lstm_with_projection(
            inputs, lengths, hidden, cell, *weights, norm_weight=torch.ones(PROJECTION)
        )



def float32_args(lengths):
    """`random_args` in float32 with a LayerNorm, clips and a dropout mask: the paper's cell."""
    inputs, lengths, hidden, cell, *weights = random_args(lengths, torch.float32)
    generator = torch.Generator().manual_seed(3)
    norm = [(1 + 0.3 * torch.randn(PROJECTION, generator=generator)).requires_grad_(),
            (0.3 * torch.randn(PROJECTION, generator=generator)).requires_grad_()]  # fmt: skip
    dropout = (torch.rand(BATCH, PROJECTION, generator=generator) > 0.3).float() / 0.7
    return (inputs, hidden, cell, *weights, *norm), lengths, dropout


def values_and_gradients(leaves, lengths, dropout, autocast=None):
    """Outputs, final states and the gradients of every leaf, under `autocast` (a dtype) or
    none."""
    inputs, hidden, cell, *weights, norm_weight, norm_bias = leaves
    with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        results = lstm_with_projection(
            inputs, lengths, hidden, cell, *weights, norm_weight=norm_weight, norm_bias=norm_bias,
            cell_clip=1.5, projection_clip=1.0, dropout=dropout,
        )  # fmt: skip
    loss = sum((result * (index + 1)).sum() for index, result in enumerate(results))
    return list(results) + list(torch.autograd.grad(loss, leaves))


def test_bfloat16_autocast_keeps_float32_results_and_gradients():
    """Mixed precision: float32 outputs, states and gradients (for float32 leaves, which keep
    their dtype), off the float32 results by bfloat16 rounding: more than float32's, a few
    percent at most."""
    leaves, lengths, dropout = float32_args([6, 3, 0, 5])
    float32 = values_and_gradients(leaves, lengths, dropout)
    mixed = values_and_gradients(leaves, lengths, dropout, torch.bfloat16)
    assert all(leaf.dtype == torch.float32 for leaf in leaves)
    for ours, theirs in zip(mixed, float32):
        assert ours.dtype == torch.float32 and ours.shape == theirs.shape
        assert (ours - theirs).norm() <= 0.05 * theirs.norm()
    assert any((ours - theirs).norm() > 1e-4 * theirs.norm() for ours, theirs in zip(mixed, float32))


def test_float16_autocast_and_earlier_bfloat16_calls_leave_float32_unchanged():
    """Under float16 autocast the layer runs in float32: the same bits as without autocast; and
    a float32 call after a bfloat16 one (pooled buffers, cast weights) gives the same bits as
    before it."""
    leaves, lengths, dropout = float32_args([6, 3, 0, 5])
    before = values_and_gradients(leaves, lengths, dropout)
    values_and_gradients(leaves, lengths, dropout, torch.bfloat16)
    after = values_and_gradients(leaves, lengths, dropout)
    half = values_and_gradients(leaves, lengths, dropout, torch.float16)
    for ours, theirs, halves in zip(after, before, half):
        assert torch.equal(ours, theirs) and torch.equal(halves, theirs)
