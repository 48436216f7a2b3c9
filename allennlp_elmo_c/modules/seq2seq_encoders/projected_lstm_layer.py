"""
One layer, one direction of ELMo's LSTM with a projection (Sak et al. 2014): the cell state has
`cell_size` units, the hidden state fed back into the recurrence and passed to the next layer is
a `projection_size` linear projection of it. Two ways to run the same weights:

- `reference`: a per-timestep loop as in the ELMo-C paper's code: LayerNorm on the projected state
  *inside* the recurrence, cell and projection clipping, variational dropout on the recurrent
  state (one mask for all timesteps).
- `fused`: the whole sequence in one kernel call, then LayerNorm on the outputs. On GPU that is
  `torch.lstm` over packed sequences (what `torch.nn.LSTM(proj_size=...)` runs: cuDNN). On CPU,
  where oneDNN has no projection support and torch's fallback has a quadratic backward pass,
  it is `allennlp_elmo_c.nn.lstmp` (the same function with a hand-written backward). A fused kernel cannot clip or drop its recurrent state, so clipping is skipped and the
  dropout mask (one per sequence, shared over time) is applied to the layer's output instead.

Both backends keep their parameters under names that task-config initializer regexes for
`torch.nn.LSTM` (`.*weight_ih.*`, `.*weight_hh.*`, `.*bias_ih.*`, `.*bias_hh.*`) do not match.
"""

import logging
from typing import Optional, Tuple

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from allennlp.nn.initializers import block_orthogonal

from allennlp_elmo_c.nn.lstmp import lstm_with_projection

logger = logging.getLogger(__name__)

State = Tuple[torch.Tensor, torch.Tensor]  # (hidden (batch, projection), cell (batch, cell))


class ProjectedLstmLayer(torch.nn.Module):
    """
    # Parameters

    input_size : `int`
    cell_size : `int`
    projection_size : `int`
    cell_clip : `float`, optional
        Clip the cell state to `[-cell_clip, cell_clip]` (reference backend).
    projection_clip : `float`, optional
        Clip the projected state to `[-projection_clip, projection_clip]` (reference backend).
    recurrent_dropout : `float`
        Variational dropout probability (see the module docstring for where each backend puts it).
    """

    def __init__(
        self,
        input_size: int,
        cell_size: int,
        projection_size: int,
        cell_clip: Optional[float] = None,
        projection_clip: Optional[float] = None,
        recurrent_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.cell_size = cell_size
        self.projection_size = projection_size
        self.cell_clip = cell_clip
        self.projection_clip = projection_clip
        self.recurrent_dropout = recurrent_dropout
        gates = 4 * cell_size
        self.input_weight = torch.nn.Parameter(torch.empty(gates, input_size))
        self.state_weight = torch.nn.Parameter(torch.empty(gates, projection_size))
        self.gate_bias = torch.nn.Parameter(torch.empty(gates))
        self.projection_weight = torch.nn.Parameter(torch.empty(projection_size, cell_size))
        self.norm = torch.nn.LayerNorm(projection_size)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Gate order (input, forget, cell, output) is torch's; forget-gate bias 1 as in ELMo.
        block_orthogonal(self.input_weight.data, [self.cell_size, self.input_weight.size(1)])
        block_orthogonal(self.state_weight.data, [self.cell_size, self.projection_size])
        torch.nn.init.xavier_uniform_(self.projection_weight.data)
        self.gate_bias.data.zero_()
        self.gate_bias.data[self.cell_size : 2 * self.cell_size].fill_(1.0)
        self.norm.reset_parameters()

    def _layer_norm(self, hidden: torch.Tensor) -> torch.Tensor:
        # Called functionally: the kernel between two LayerNorms is invisible to module hooks,
        # and AllenNLP's normalization-bias check would otherwise see "norm followed by norm".
        norm = self.norm
        return torch.nn.functional.layer_norm(
            hidden, norm.normalized_shape, norm.weight, norm.bias, norm.eps
        )

    def initial_state(self, batch_size: int, like: torch.Tensor) -> State:
        return (
            like.new_zeros(batch_size, self.projection_size),
            like.new_zeros(batch_size, self.cell_size),
        )

    def _dropout_mask(self, batch_size: int, like: torch.Tensor) -> Optional[torch.Tensor]:
        if not self.training or self.recurrent_dropout == 0.0:
            return None
        keep = 1.0 - self.recurrent_dropout
        return like.new_empty(batch_size, self.projection_size).bernoulli_(keep) / keep

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        state: Optional[State] = None,
        backend: str = "fused",
    ) -> Tuple[torch.Tensor, State]:
        """
        # Parameters

        inputs : `torch.Tensor`
            `(batch_size, timesteps, input_size)`; sequences left-aligned (padding at the end).
        mask : `torch.BoolTensor`
            `(batch_size, timesteps)`.
        state : `State`, optional
            Initial `(hidden, cell)`; zeros if None.

        # Returns

        outputs `(batch_size, timesteps, projection_size)` (zeros at padding) and the state after
        each sequence's last real token.
        """
        if state is None:
            state = self.initial_state(inputs.size(0), inputs)
        if backend == "reference":
            return self._forward_reference(inputs, mask, state)
        return self._forward_fused(inputs, mask, state)

    def _forward_reference(
        self, inputs: torch.Tensor, mask: torch.BoolTensor, state: State
    ) -> Tuple[torch.Tensor, State]:
        hidden, cell = state
        dropout = self._dropout_mask(inputs.size(0), inputs)
        projected_inputs = torch.nn.functional.linear(inputs, self.input_weight, self.gate_bias)
        outputs = []
        # unbind, not [:, t]: the backward of T slices would write T full-size zero tensors.
        for t, step_inputs in enumerate(projected_inputs.unbind(1)):
            recurrent = hidden if dropout is None else hidden * dropout
            gates = torch.addmm(step_inputs, recurrent, self.state_weight.t())
            input_gate, forget_gate, cell_gate, output_gate = gates.chunk(4, dim=1)
            new_cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(input_gate) * torch.tanh(
                cell_gate
            )
            if self.cell_clip is not None:
                new_cell = new_cell.clamp(-self.cell_clip, self.cell_clip)
            new_hidden = (torch.sigmoid(output_gate) * torch.tanh(new_cell)).matmul(
                self.projection_weight.t()
            )
            if self.projection_clip is not None:
                new_hidden = new_hidden.clamp(-self.projection_clip, self.projection_clip)
            new_hidden = self._layer_norm(new_hidden)
            step = mask[:, t].unsqueeze(1)
            hidden = torch.where(step, new_hidden, hidden)
            cell = torch.where(step, new_cell, cell)
            outputs.append(new_hidden)
        output = torch.stack(outputs, dim=1) * mask.unsqueeze(-1)
        return output, (hidden, cell)

    def _forward_fused(
        self, inputs: torch.Tensor, mask: torch.BoolTensor, state: State
    ) -> Tuple[torch.Tensor, State]:
        lengths = mask.sum(1)
        if inputs.is_cuda:
            output, hidden, cell = self._cudnn(inputs, lengths, state)
        else:
            output, hidden, cell = lstm_with_projection(
                inputs, lengths, state[0], state[1], self.input_weight, self.state_weight,
                self.gate_bias, self.projection_weight,
            )  # fmt: skip
        output = self._layer_norm(output)
        dropout = self._dropout_mask(inputs.size(0), inputs)
        if dropout is not None:
            output = output * dropout.unsqueeze(1)
        return output * mask.unsqueeze(-1), (hidden, cell)

    def _cudnn(
        self, inputs: torch.Tensor, lengths: torch.Tensor, state: State
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # torch.lstm over packed sequences; empty rows (length 0) run one step and keep their state.
        packed = pack_padded_sequence(
            inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False
        )
        order = packed.sorted_indices
        initial = (state[0][order].unsqueeze(0), state[1][order].unsqueeze(0))
        weights = [
            self.input_weight,
            self.state_weight,
            self.gate_bias,
            torch.zeros_like(self.gate_bias),
            self.projection_weight,
        ]
        output, hidden, cell = torch.lstm(
            packed.data, packed.batch_sizes, initial, weights, True, 1, 0.0, self.training, False
        )
        output = PackedSequence(output, packed.batch_sizes, order, packed.unsorted_indices)
        output, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
        unsort = packed.unsorted_indices
        empty = (lengths == 0).unsqueeze(1)
        hidden = torch.where(empty, state[0], hidden[0][unsort])
        cell = torch.where(empty, state[1], cell[0][unsort])
        return output, hidden, cell
