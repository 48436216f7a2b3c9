"""
One layer of the encoder against the paper's cell written out here from its equations (the
paper's code, as AllenNLP's `LstmCellWithProjection` with a LayerNorm after the projection
clip), one sequence at a time, one step at a time, in float64:

    i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of  W_ih x_t + b + W_hh h_{t-1}
    c_t = clamp(f c_{t-1} + i g, -cell_clip, cell_clip)
    p_t = clamp(W_hr (o tanh(c_t)), -projection_clip, projection_clip)
    h_t = d * LayerNorm(p_t)        d: one dropout mask per sequence, already scaled

h_t, dropped, is what the layer emits at step t, what step t + 1 reads, and the final state after
the sequence's last token; the initial state enters undropped.
"""
import pytest
import torch

from tests.modules.seq2seq_encoders.test_backend_agreement import (
    CELL_CLIP,
    PROJECTION_CLIP,
    assert_equal_to,
    clipping_layer,
    inputs_and_state,
)


def paper_cell(layer, inputs, lengths, h0, c0, dropout):
    """Outputs `(batch, timesteps, projection)` (zeros past each length), final h and c."""
    norm = layer.norm
    outputs = torch.zeros(inputs.size(0), inputs.size(1), layer.projection_size, dtype=inputs.dtype)
    finals_h, finals_c = [], []
    for row, length in enumerate(lengths):
        h, c = h0[row], c0[row]
        steps = []
        for t in range(length):
            z = layer.input_weight @ inputs[row, t] + layer.gate_bias + layer.state_weight @ h
            i, f, g, o = z.chunk(4)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            c = torch.clamp(f * c + i * g, -CELL_CLIP, CELL_CLIP)
            p = torch.clamp(layer.projection_weight @ (o * torch.tanh(c)), -PROJECTION_CLIP,
                            PROJECTION_CLIP)  # fmt: skip
            mean = p.mean()
            variance = ((p - mean) ** 2).mean()
            normalised = (p - mean) / torch.sqrt(variance + norm.eps) * norm.weight + norm.bias
            h = dropout[row] * normalised
            steps.append(h)
        if steps:
            outputs[row, :length] = torch.stack(steps)
        finals_h.append(h)
        finals_c.append(c)
    return outputs, torch.stack(finals_h), torch.stack(finals_c)


@pytest.mark.parametrize("backend", ["reference", "fused"])
def test_layer_is_the_papers_cell_with_dropout_on_the_emitted_state(backend):
    layer = clipping_layer(torch.float64)  # clips that bite on a quarter of the entries, dropout 0.3
    inputs, mask, h0, c0, weights = inputs_and_state(24, torch.float64)
    lengths = mask.sum(1).tolist()
    leaves = [t.clone().requires_grad_() for t in (inputs, h0, c0)]
    torch.manual_seed(1234)
    output, (h_n, c_n) = layer(leaves[0], mask, (leaves[1], leaves[2]), backend=backend)
    # The layer's mask, drawn first thing in its forward: the same draw again.
    torch.manual_seed(1234)
    dropout = layer._dropout_mask(inputs.size(0), inputs)
    assert dropout is not None and (dropout == 0).any()

    expected_leaves = [t.clone().requires_grad_() for t in (inputs, h0, c0)]
    expected = paper_cell(layer, *expected_leaves[:1], lengths, *expected_leaves[1:], dropout)

    def loss(out, h, c):
        return (out * weights).sum() + (h * h).sum() + (c * weights[:, 0, :1]).sum()

    parameters = list(layer.parameters())
    grads = torch.autograd.grad(loss(output, h_n, c_n), leaves + parameters)
    expected_grads = torch.autograd.grad(loss(*expected), expected_leaves + parameters)
    for name, ours, theirs in zip(["outputs", "h_n", "c_n"], (output, h_n, c_n), expected):
        assert_equal_to(ours, theirs, 1e-10, name)
    names = ["inputs", "h0", "c0"] + [name for name, _ in layer.named_parameters()]
    for name, ours, theirs in zip(names, grads, expected_grads):
        assert theirs.abs().sum() > 0, name
        assert_equal_to(ours, theirs, 1e-10, name)
    # The emitted state carries the mask: dropped units are exact zeros at every real step.
    dropped = (dropout == 0).unsqueeze(1) & mask.unsqueeze(-1)
    assert (output.detach()[dropped] == 0).all()
