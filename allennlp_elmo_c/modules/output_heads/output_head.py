from typing import Dict, Optional

import torch

from allennlp.common import Registrable
from allennlp.common.checks import ConfigurationError


class OutputHead(torch.nn.Module, Registrable):
    """
    The output layer of one direction of a language model: hidden states `(batch, timesteps,
    input_dim)` to a loss against the targets (the next word forward, the previous backward).
    The `elmo_c` model builds one per direction (`Lazy[OutputHead]`) with `input_dim`,
    `target_dim` and, to a subclass that names them, `vocab` and `text_field_embedder`. Heads
    over a vocabulary set `needs_target_ids`, those with a per-token negative log-likelihood
    `reports_perplexity`; a subclass implements `score`.
    """

    needs_target_ids = False
    reports_perplexity = False

    def __init__(self, input_dim: int, target_dim: int) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.target_dim = target_dim

    def forward(
        self,
        hidden: torch.Tensor,
        mask: torch.BoolTensor,
        target_embeddings: Optional[torch.Tensor] = None,
        target_ids: Optional[torch.LongTensor] = None,
    ) -> Dict[str, torch.Tensor]:
        """
        `hidden` `(batch, timesteps, input_dim)` predicts, where `mask` `(batch, timesteps)`,
        the `target_embeddings` `(batch, timesteps, target_dim)` or (`needs_target_ids`) the
        `target_ids` `(batch, timesteps)`. Returns `"loss"`, summed over the masked positions,
        `"count"`, their number, and for heads that predict vectors `"predictions"` `(batch,
        timesteps, target_dim)`.
        """
        targets = target_ids if self.needs_target_ids else target_embeddings
        if targets is None:
            needed = "target embeddings"
            if self.needs_target_ids:
                needed = "target ids (set the model's target_ids_key)"
            raise ConfigurationError(f"{type(self).__name__} needs {needed}")
        return self.score(hidden, mask, targets)

    def score(
        self, hidden: torch.Tensor, mask: torch.BoolTensor, targets: torch.Tensor
    ) -> Dict[str, torch.Tensor]:
        """What `forward` returns, given the targets this head needs."""
        raise NotImplementedError
