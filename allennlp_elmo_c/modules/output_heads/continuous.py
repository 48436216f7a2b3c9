from typing import Dict

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.nn.continuous_losses import LOSSES


@OutputHead.register("continuous")
class ContinuousOutputHead(OutputHead):
    """
    ELMo-C's output layer: `Linear(input_dim -> target_dim)` predicts the target word's (frozen)
    embedding, and a loss between the prediction and that embedding replaces the softmax. Its
    cost is O(target_dim) per token whatever the vocabulary size.

    Registered as an `OutputHead` with name "continuous".

    # Parameters

    input_dim : `int`
    target_dim : `int`
        Both filled in by the model.
    loss : `str`, optional (default = `"cosine"`)
        `"cosine"` (1 - cosine similarity, the paper's default), `"l2"` (squared distance) or
        `"vmf"` (von Mises-Fisher negative log-likelihood, Kumar & Tsvetkov 2019).
    vmf_lambda_1 : `float`, optional (default = `0.0`)
        vMF regulariser 1: adds `lambda_1 * ||prediction||`.
    vmf_lambda_2 : `float`, optional (default = `1.0`)
        vMF regulariser 2: scales the `prediction . target` term (use < 1).
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        loss: str = "cosine",
        vmf_lambda_1: float = 0.0,
        vmf_lambda_2: float = 1.0,
    ) -> None:
        super().__init__(input_dim, target_dim)
        if loss not in LOSSES:
            raise ConfigurationError(
                f"continuous head: loss must be one of {sorted(LOSSES)}, got {loss!r}"
            )
        if loss != "vmf" and (vmf_lambda_1 != 0.0 or vmf_lambda_2 != 1.0):
            raise ConfigurationError("continuous head: vmf_lambda_* only apply to loss 'vmf'")
        if vmf_lambda_1 < 0 or not 0 < vmf_lambda_2 <= 1:
            raise ConfigurationError(
                "continuous head: need vmf_lambda_1 >= 0 and 0 < vmf_lambda_2 <= 1"
            )
        self.loss_name = loss
        self._loss = LOSSES[loss]
        self._loss_kwargs = (
            {"lambda_1": vmf_lambda_1, "lambda_2": vmf_lambda_2} if loss == "vmf" else {}
        )
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
        losses = self._loss(
            predictions[mask].to(dtype), target_embeddings[mask].to(dtype), **self._loss_kwargs
        )
        return {"loss": losses.sum(), "count": mask.sum(), "predictions": predictions}
