"""
One layer, one direction of ELMo-C's LSTM with a projection (Sak et al. 2014).

`recurrence_norm` chooses the function: `"inside"` (the paper's cell, as AllenNLP's
`LstmCellWithProjection`): per step, cell clip, projection, projection clip, LayerNorm, then
the variational dropout mask, the dropped state fed back; `"outside"`: a plain LSTM with
projection (cuDNN's, no clips), then LayerNorm and the dropout mask on the outputs.
`backend` chooses how it runs: `reference`, a per-timestep loop; `fused`,
`allennlp_elmo_c.nn.lstmp` (cuDNN for `"outside"` on a GPU).
"""

from typing import Optional, Tuple

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from allennlp.common.checks import ConfigurationError
from allennlp.nn.initializers import block_orthogonal

from allennlp_elmo_c.nn.lstmp import lstm_with_projection


State = Tuple[torch.Tensor, torch.Tensor]  # (hidden (batch, projection), cell (batch, cell))
RECURRENCE_NORMS = ("inside", "outside")


def layer_norm(norm: torch.nn.LayerNorm, inputs: torch.Tensor) -> torch.Tensor:
    """`norm(inputs)` as a function: AllenNLP's NormalizationBiasVerification does not flag it."""
    return torch.nn.functional.layer_norm(
        inputs, norm.normalized_shape, norm.weight, norm.bias, norm.eps
    )


class ProjectedLstmLayer(torch.nn.Module):
    """
    `cell_clip`, `projection_clip`: clip the cell and the projected state (`"inside"`);
    `recurrent_dropout`: on the state fed back and emitted (`"inside"`) or on the outputs.
    """

    def __init__(
        self,
        input_size: int,
        cell_size: int,
        projection_size: int,
        cell_clip: Optional[float] = None,
        projection_clip: Optional[float] = None,
        recurrent_dropout: float = 0.0,
        recurrence_norm: str = "inside",
    ) -> None:
        super().__init__()
        if recurrence_norm not in RECURRENCE_NORMS:
            raise ConfigurationError(
                f"recurrence_norm must be one of {RECURRENCE_NORMS}, got {recurrence_norm!r}"
            )
        if recurrence_norm == "outside" and (cell_clip is not None or projection_clip is not None):
            raise ConfigurationError(
                "recurrence_norm 'outside' runs a plain LSTM with projection (cuDNN's), which "
                f"cannot clip its states: set cell_clip and projection_clip to null (got "
                f"{cell_clip} and {projection_clip}), or use recurrence_norm 'inside'"
            )
        self.recurrence_norm = recurrence_norm
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
        return layer_norm(self.norm, hidden)

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
        dropout: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, State]:
        """
        `inputs` `(batch, timesteps, input_size)`, left-aligned, `mask` `(batch, timesteps)`,
        `state` the initial `(hidden, cell)` (zeros if None). Returns outputs `(batch,
        timesteps, projection_size)` (zeros at padding) and the state after each sequence's
        last real token. `dropout`: the recurrent dropout mask, drawn here if None.
        """
        if state is None:
            batch = inputs.size(0)
            state = (inputs.new_zeros(batch, self.projection_size),
                     inputs.new_zeros(batch, self.cell_size))  # fmt: skip
        # Drawn first on both backends, so that the same seed gives the same mask.
        if dropout is None:
            dropout = self._dropout_mask(inputs.size(0), inputs)
        inside = self.recurrence_norm == "inside"
        recurrent_dropout = dropout if inside else None
        if backend == "reference":
            output, state = self._forward_reference(inputs, mask, state, recurrent_dropout)
        elif inputs.is_cuda and not inside and self.projection_size < self.cell_size:
            # (torch.lstm tells a projection by h and c of different sizes: an equal-size
            # projection runs in the fused kernel instead.)
            output, hidden, cell = self._cudnn(inputs, mask.sum(1), state)
            state = (hidden, cell)
        else:
            norm = self.norm
            output, hidden, cell = lstm_with_projection(
                inputs, mask.sum(1), state[0], state[1], self.input_weight, self.state_weight,
                self.gate_bias, self.projection_weight,
                norm_weight=norm.weight if inside else None,
                norm_bias=norm.bias if inside else None,
                norm_eps=norm.eps,
                cell_clip=self.cell_clip,
                projection_clip=self.projection_clip,
                dropout=recurrent_dropout,
            )  # fmt: skip
            state = (hidden, cell)
        if not inside:
            output = self._layer_norm(output)
            if dropout is not None:
                output = output * dropout.unsqueeze(1)
        return output * mask.unsqueeze(-1), state

    def _forward_reference(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        state: State,
        dropout: Optional[torch.Tensor],
    ) -> Tuple[torch.Tensor, State]:
        hidden, cell = state
        inside = self.recurrence_norm == "inside"
        projected_inputs = torch.nn.functional.linear(inputs, self.input_weight, self.gate_bias)
        outputs = []
        # unbind, not [:, t]: the backward of T slices would write T full-size zero tensors.
        for t, step_inputs in enumerate(projected_inputs.unbind(1)):
            gates = torch.addmm(step_inputs, hidden, self.state_weight.t())
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
            if inside:
                new_hidden = self._layer_norm(new_hidden)
            if dropout is not None:
                new_hidden = new_hidden * dropout
            step = mask[:, t].unsqueeze(1)
            hidden = torch.where(step, new_hidden, hidden)
            cell = torch.where(step, new_cell, cell)
            outputs.append(new_hidden)
        output = torch.stack(outputs, dim=1) * mask.unsqueeze(-1)
        return output, (hidden, cell)

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
            # train=True whenever a backward may follow (cuDNN's inference mode has none), also
            # for an eval-mode module: with dropout 0.0 the two modes compute the same values.
            packed.data, packed.batch_sizes, initial, weights, True, 1, 0.0,
            torch.is_grad_enabled(), False,
        )  # fmt: skip
        output = PackedSequence(output, packed.batch_sizes, order, packed.unsorted_indices)
        output, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
        unsort = packed.unsorted_indices
        empty = (lengths == 0).unsqueeze(1)
        hidden = torch.where(empty, state[0], hidden[0][unsort])
        cell = torch.where(empty, state[1], cell[0][unsort])
        return output, hidden, cell
