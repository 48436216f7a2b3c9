import logging
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders.seq2seq_encoder import Seq2SeqEncoder

from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import (
    ProjectedLstmLayer,
    State,
    layer_norm,
)
from allennlp_elmo_c.nn.concurrent import concurrently, threads_each
from allennlp_elmo_c.nn.permutation import permute

logger = logging.getLogger(__name__)

DIRECTIONS = ("forward_lm", "backward_lm")
BACKENDS = ("reference", "fused")


def reverse_padded(tensor: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each sequence of `tensor` `(batch, timesteps, ...)` reversed within its length."""
    timesteps = tensor.size(1)
    positions = torch.arange(timesteps, device=tensor.device).unsqueeze(0)
    lengths = lengths.unsqueeze(1)
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    index = index.view(*index.shape, *([1] * (tensor.dim() - 2))).expand_as(tensor)
    return permute(tensor, 1, index, index)  # its own inverse


class BiLmEncoder(Seq2SeqEncoder):
    """`(batch, timesteps, input_size)` in, forward || backward states of `projection_size`
    each out, from `num_layers` LSTM layers (what the model and `ElmoC` read)."""

    def __init__(self, input_size: int, projection_size: int, num_layers: int) -> None:
        super().__init__(stateful=False)
        self.input_size = input_size
        self.projection_size = projection_size
        self.num_layers = num_layers

    def get_input_dim(self) -> int:
        return self.input_size

    def get_output_dim(self) -> int:
        return 2 * self.projection_size

    def is_bidirectional(self) -> bool:
        return True


class _DirectionStack(torch.nn.Module):
    """One direction: input projection (if the sizes differ) + LayerNorm, then `num_layers`
    layers of `make_layer` (residual from the 2nd)."""

    def __init__(
        self,
        input_size: int,
        projection_size: int,
        num_layers: int,
        make_layer: Callable[[], ProjectedLstmLayer],
        residual: bool,
    ) -> None:
        super().__init__()
        self.residual = residual
        # With a bias, as the paper's code: the LayerNorm after it removes only the bias's mean
        # over features, so the rest of it still moves every feature by its own amount.
        self.input_projection: Optional[torch.nn.Linear] = (
            torch.nn.Linear(input_size, projection_size) if input_size != projection_size else None
        )
        self.input_norm = torch.nn.LayerNorm(projection_size)
        self.layers = torch.nn.ModuleList(make_layer() for _ in range(num_layers))

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        states: List[Optional[State]],
        backend: str,
        dropouts: Optional[List[Optional[torch.Tensor]]] = None,
    ) -> Tuple[List[torch.Tensor], List[State]]:
        if self.input_projection is not None:
            inputs = self.input_projection(inputs)  # (batch, timesteps, projection_size)
        hidden = layer_norm(self.input_norm, inputs)
        hidden = hidden * mask.unsqueeze(-1)
        outputs, final_states = [hidden], []
        for index, layer in enumerate(self.layers):
            dropout = None if dropouts is None else dropouts[index]
            output, state = layer(hidden, mask, states[index], backend, dropout)
            hidden = output + hidden if (self.residual and index > 0) else output
            outputs.append(hidden)
            final_states.append(state)
        return outputs, final_states


@Seq2SeqEncoder.register("elmo_lstm")
class ElmoLstmEncoder(BiLmEncoder):
    """
    The encoder of an ELMo-shaped biLM: two independent stacks, left to right (forward LM) and
    right to left (backward LM). Each: `Linear(input_size -> projection_size)` + LayerNorm (no
    Linear when the sizes are equal), then `num_layers` `ProjectedLstmLayer`s (cell
    `cell_size`, output `projection_size`; `cell_clip`, `projection_clip`, `recurrent_dropout`,
    `recurrence_norm` as there), residual from the second on. `backend` (`"fused"` or
    `"reference"`) is how the layers run, never what they compute. `stateful` carries each
    row's final states, detached, to the next call of the same batch size (`reset_states`
    clears them). `return_all_layers` returns `num_layers + 1` tensors, the input projection
    then each LSTM layer, each `(batch, timesteps, 2 * projection_size)`, forward first.
    """

    def __init__(
        self,
        input_size: int,
        projection_size: int = 512,
        cell_size: int = 4096,
        num_layers: int = 2,
        backend: str = "fused",
        cell_clip: Optional[float] = 3.0,
        projection_clip: Optional[float] = 3.0,
        recurrent_dropout: float = 0.1,
        residual: bool = True,
        stateful: bool = False,
        return_all_layers: bool = False,
        recurrence_norm: str = "inside",
    ) -> None:
        super().__init__(input_size, projection_size, num_layers)
        self.stateful = stateful
        if backend not in BACKENDS:
            raise ConfigurationError(
                f"elmo_lstm: backend must be one of {BACKENDS}, got {backend!r}"
            )
        if min(input_size, projection_size, cell_size, num_layers) < 1:
            raise ConfigurationError("elmo_lstm: sizes and num_layers must be positive")
        if not 0.0 <= recurrent_dropout < 1.0:
            raise ConfigurationError("elmo_lstm: recurrent_dropout must be in [0, 1)")
        self.backend = backend
        self.return_all_layers = return_all_layers
        self._keep_states = stateful
        self._states: Optional[Dict[str, List[State]]] = None

        def layer() -> ProjectedLstmLayer:
            return ProjectedLstmLayer(
                projection_size,
                cell_size,
                projection_size,
                cell_clip=cell_clip,
                projection_clip=projection_clip,
                recurrent_dropout=recurrent_dropout,
                recurrence_norm=recurrence_norm,
            )

        self.stacks = torch.nn.ModuleDict(
            {
                direction: _DirectionStack(input_size, projection_size, num_layers, layer, residual)
                for direction in DIRECTIONS
            }
        )

    def reset_states(self, mask: torch.BoolTensor = None) -> None:
        """Forgets the carried states of every row, or of the rows where `mask` `(batch,)`."""
        if mask is None or self._states is None:
            self._states = None
            return
        keep = (~mask.bool()).unsqueeze(1)
        self._states = {
            direction: [(h * keep.to(h.dtype), c * keep.to(c.dtype)) for h, c in states]
            for direction, states in self._states.items()
        }

    def _initial_states(self, batch_size: int) -> Dict[str, List[Optional[State]]]:
        if self._states is None or self._states["forward_lm"][0][0].size(0) != batch_size:
            if self._states is not None:
                logger.debug("elmo_lstm: batch size changed, resetting the stateful states")
            return {direction: [None] * self.num_layers for direction in DIRECTIONS}
        return self._states

    def forward(
        self, inputs: torch.Tensor, mask: torch.BoolTensor
    ) -> Union[torch.Tensor, List[torch.Tensor]]:
        """`inputs` `(batch, timesteps, input_size)`, `mask` left-aligned; returns forward ||
        backward `(batch, timesteps, 2 * projection_size)`, zeros at padding, of the top layer
        or (`return_all_layers`) of every layer."""
        mask = mask.bool()
        lengths = mask.sum(1)
        initial_states = self._initial_states(inputs.size(0))
        final_states: Dict[str, List[State]] = {}

        def direction_outputs(direction: str, dropouts=None):
            def run(inputs: torch.Tensor) -> List[torch.Tensor]:
                backward = direction == "backward_lm"
                sequence = reverse_padded(inputs, lengths) if backward else inputs
                outputs, final_states[direction] = self.stacks[direction](
                    sequence, mask, initial_states[direction], self.backend, dropouts
                )
                if not self.return_all_layers:
                    outputs = outputs[-1:]  # only the top layer is turned back and returned
                if backward:
                    outputs = [reverse_padded(output, lengths) for output in outputs]
                return outputs

            return run

        # Both directions at once, each on its share of the threads (see `nn.concurrent`), on a
        # CPU with at least two; their dropout masks drawn first, in the order of the loop.
        threads = threads_each(len(DIRECTIONS)) if inputs.device.type == "cpu" else 0
        if threads and not torch.is_autocast_enabled("cpu"):
            stacks = [self.stacks[direction] for direction in DIRECTIONS]
            masks = [[layer._dropout_mask(inputs.size(0), inputs) for layer in stack.layers]
                     for stack in stacks]  # fmt: skip
            runs = [direction_outputs(*pair) for pair in zip(DIRECTIONS, masks)]
            parameters = [list(stack.parameters()) for stack in stacks]
            layers_per_direction = dict(
                zip(DIRECTIONS, concurrently(runs, inputs, parameters, threads))
            )
        else:
            layers_per_direction = {d: direction_outputs(d)(inputs) for d in DIRECTIONS}
        if self._keep_states:
            self._states = {
                direction: [(h.detach(), c.detach()) for h, c in final_states[direction]]
                for direction in DIRECTIONS
            }
        layers = [
            torch.cat([forward, backward], dim=-1)
            for forward, backward in zip(*(layers_per_direction[d] for d in DIRECTIONS))
        ]
        return layers if self.return_all_layers else layers[0]
