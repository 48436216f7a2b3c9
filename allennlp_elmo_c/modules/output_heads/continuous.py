from typing import Dict, Optional

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.losses import build_continuous_loss
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead


@OutputHead.register("continuous")
class ContinuousOutputHead(OutputHead):
    """
    ELMo-C's output layer: `Linear(input_dim -> target_dim)` predicts the target word's (frozen)
    embedding, and a loss between the prediction and that embedding replaces the softmax: no
    vocabulary.

    Registered as an `OutputHead` with name "continuous".

    # Parameters

    input_dim : `int`
    target_dim : `int`
        Both filled in by the model.
    loss : `str`, optional (default = `"cosine"`)
        The name of a registered `ContinuousLoss`: `"cosine"` (the paper's default), `"l2"`,
        `"vmf"` (Kumar & Tsvetkov 2019) or `"in_batch_softmax"` (against the batch's distinct
        target vectors).
    vmf_lambda_1 : `float`, optional (default = `0.0`)
    vmf_lambda_2 : `float`, optional (default = `1.0`)
        `vmf` only: its `lambda_1` and `lambda_2`.
        `vmf` only: its `lambda_1` (adds `lambda_1 * ||prediction||`) and `lambda_2` (scales the
        `prediction . target` term, use < 1).
    temperature : `float`, optional (default = `0.05`)
        `in_batch_softmax` only: divides the cosines.

    Each of the last three keys is refused with another loss unless it holds its default.
        `in_batch_softmax` only: divides the cosines (finite, > 0).

    Each of the last three keys is its loss's own setting (`ContinuousLoss.head_keys`), refused
    with another loss unless it holds its default.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        loss: str = "cosine",
        vmf_lambda_1: Optional[float] = None,
        vmf_lambda_2: Optional[float] = None,
        temperature: Optional[float] = None,
    ) -> None:
        super().__init__(input_dim, target_dim)
        loss_keys = {
            "vmf_lambda_1": vmf_lambda_1, "vmf_lambda_2": vmf_lambda_2, "temperature": temperature
        }
        self.loss_name = loss
        self._loss = build_continuous_loss(loss, loss_keys)
        self.projection = torch.nn.Linear(input_dim, target_dim)

    def score(
        self, hidden: torch.Tensor, mask: torch.BoolTensor, target_embeddings: torch.Tensor
    ) -> Dict[str, torch.Tensor]:
        if target_embeddings.size(-1) != self.target_dim:
            raise ConfigurationError(
                f"continuous head: targets have dimension {target_embeddings.size(-1)}, "
                f"the head predicts {self.target_dim}"
            )
        predictions = self.projection(hidden)
        # Only real positions go through the loss, so padding can never produce NaN/inf. The loss
        # runs in float32 at least: under fp16/bf16 autocast, squared norms of 300-d vectors
        # overflow float16 (max 65504) and bfloat16 keeps only 8 bits of mantissa.
        dtype = torch.promote_types(predictions.dtype, torch.float32)
        losses = self._loss(predictions[mask].to(dtype), target_embeddings[mask].to(dtype))
        return {"loss": losses.sum(), "count": mask.sum(), "predictions": predictions}
