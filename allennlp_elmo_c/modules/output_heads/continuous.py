from typing import Dict, Optional

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.losses import build_continuous_loss
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead


@OutputHead.register("continuous")
class ContinuousOutputHead(OutputHead):
    """
    ELMo-C's output layer: `Linear(input_dim -> target_dim)` predicts the target word's (frozen)
    embedding, and a `ContinuousLoss` against it replaces the softmax: no vocabulary.

    # Parameters

    loss : `str`, optional (default = `"cosine"`)
        A registered `ContinuousLoss`: `"cosine"`, `"l2"`, `"vmf"` or `"in_batch_softmax"`.
    vmf_lambda_1, vmf_lambda_2, temperature : `float`, optional
        The settings of `vmf` (0.0, 1.0) and `in_batch_softmax` (0.05), refused with another
        loss unless they hold its default.
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
        # Only real positions, in float32 at least (squared norms overflow float16).
        dtype = torch.promote_types(predictions.dtype, torch.float32)
        losses = self._loss(predictions[mask].to(dtype), target_embeddings[mask].to(dtype))
        return {"loss": losses.sum(), "count": mask.sum(), "predictions": predictions}
