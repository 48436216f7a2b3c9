import math
from typing import Dict

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.nn.continuous_losses import LOSSES
from allennlp_elmo_c.nn.in_batch_softmax import DEFAULT_TEMPERATURE, in_batch_softmax_loss

# Every loss of the head, over the batch's real positions: `(N, d) x (N, d) -> (N,)`. LOSSES are
# per position; in_batch_softmax scores each position against the batch's distinct targets.
HEAD_LOSSES = {**LOSSES, "in_batch_softmax": in_batch_softmax_loss}


@OutputHead.register("continuous")
class ContinuousOutputHead(OutputHead):
    """
    ELMo-C's output layer: `Linear(input_dim -> target_dim)` predicts the target word's (frozen)
    embedding, and a loss between the prediction and that embedding replaces the softmax. Its
    cost is O(target_dim) per token whatever the vocabulary size (`in_batch_softmax`: O(distinct
    target words of the batch x target_dim) per token, still no vocabulary).

    Registered as an `OutputHead` with name "continuous".

    # Parameters

    input_dim : `int`
    target_dim : `int`
        Both filled in by the model.
    loss : `str`, optional (default = `"cosine"`)
        `"cosine"` (1 - cosine similarity, the paper's default), `"l2"` (squared distance),
        `"vmf"` (von Mises-Fisher negative log-likelihood, Kumar & Tsvetkov 2019) or
        `"in_batch_softmax"` (-log of the true word's probability under a softmax of the cosines
        between the prediction and the batch's distinct target vectors over `temperature`: the
        other words of the batch's real positions are the negatives, repeats of the true word are
        not; `allennlp_elmo_c/nn/in_batch_softmax.py`). All but `in_batch_softmax` are per
        position; its value for a position depends on the rest of the batch (and, in
        distributed training, on each worker's own batch).
    vmf_lambda_1 : `float`, optional (default = `0.0`)
        vMF regulariser 1: adds `lambda_1 * ||prediction||`.
    vmf_lambda_2 : `float`, optional (default = `1.0`)
        vMF regulariser 2: scales the `prediction . target` term (use < 1).
    temperature : `float`, optional (default = `0.05`)
        `in_batch_softmax` only: divides the cosines (finite, > 0). The default is SimCSE's for its
        normalized in-batch contrastive loss; the logits then span 2 / 0.05 = 40, room for
        p(true word) to approach 1 against thousands of distinct words.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        loss: str = "cosine",
        vmf_lambda_1: float = 0.0,
        vmf_lambda_2: float = 1.0,
        temperature: float = DEFAULT_TEMPERATURE,
    ) -> None:
        super().__init__(input_dim, target_dim)
        if loss not in HEAD_LOSSES:
            raise ConfigurationError(
                f"continuous head: loss must be one of {sorted(HEAD_LOSSES)}, got {loss!r}"
            )
        if loss != "vmf" and (vmf_lambda_1 != 0.0 or vmf_lambda_2 != 1.0):
            raise ConfigurationError("continuous head: vmf_lambda_* only apply to loss 'vmf'")
        if vmf_lambda_1 < 0 or not 0 < vmf_lambda_2 <= 1:
            raise ConfigurationError(
                "continuous head: need vmf_lambda_1 >= 0 and 0 < vmf_lambda_2 <= 1"
            )
        if loss != "in_batch_softmax" and temperature != DEFAULT_TEMPERATURE:
            raise ConfigurationError(
                "continuous head: temperature only applies to loss 'in_batch_softmax'; "
                "remove it or set loss: 'in_batch_softmax'"
            )
        if not 0 < temperature < math.inf:
            raise ConfigurationError(
                f"continuous head: temperature must be finite and > 0, got {temperature}; "
                f"set output_head.temperature to a positive number (default {DEFAULT_TEMPERATURE})"
            )
        self.loss_name = loss
        self._loss = HEAD_LOSSES[loss]
        self._loss_kwargs = {
            "vmf": {"lambda_1": vmf_lambda_1, "lambda_2": vmf_lambda_2},
            "in_batch_softmax": {"temperature": temperature},
        }.get(loss, {})
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
