from typing import List, Union

import torch

from allennlp.modules.elmo_lstm import ElmoLstm
from allennlp.modules.seq2seq_encoders.seq2seq_encoder import Seq2SeqEncoder

from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import BiLmEncoder


@Seq2SeqEncoder.register("allennlp_elmo_lstm")
class AllenNlpElmoLstmEncoder(BiLmEncoder):
    """
    AllenNLP's `ElmoLstm` (per-step `LstmCellWithProjection`, residual from the second layer),
    stateless, for the softmax baselines of allennlp-models' `language_model`.
    `projection_size` is its `hidden_size`; `return_all_layers` returns every layer's
    `(batch, timesteps, 2 * projection_size)` (as `language_model_token_embedder` asks).
    """

    def __init__(
        self,
        input_size: int,
        projection_size: int,
        cell_size: int,
        num_layers: int,
        recurrent_dropout: float = 0.1,
        cell_clip: float = 3.0,
        projection_clip: float = 3.0,
        return_all_layers: bool = False,
    ) -> None:
        super().__init__(input_size, projection_size, num_layers)
        self._lstm = ElmoLstm(
            input_size, projection_size, cell_size, num_layers, requires_grad=True,
            recurrent_dropout_probability=recurrent_dropout, memory_cell_clip_value=cell_clip,
            state_projection_clip_value=projection_clip,
        )  # fmt: skip
        self._return_all_layers = return_all_layers

    def forward(
        self, inputs: torch.Tensor, mask: torch.BoolTensor
    ) -> Union[torch.Tensor, List[torch.Tensor]]:
        self._lstm.reset_states()
        layers = self._lstm(inputs, mask)  # (num_layers, batch, timesteps, 2 * projection)
        if not self._return_all_layers:
            return layers[-1]
        return list(layers)
