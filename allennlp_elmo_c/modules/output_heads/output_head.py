from typing import Dict, Optional

import torch

from allennlp.common import Registrable
from allennlp.common.checks import ConfigurationError


class OutputHead(torch.nn.Module, Registrable):
    """
    The output layer of one direction of a language model: turns the encoder's hidden states into
    a loss against the targets (the next word for the forward LM, the previous word for the
    backward LM). Heads are swappable in config; the `elmo_c` model builds one per direction
    (as `Lazy[OutputHead]`), passing the sizes it knows.

    # Parameters

    input_dim : `int`
        Size of the hidden states (the encoder's projection size).
    target_dim : `int`
        Size of the target embeddings (e.g. 300 for fastText); heads that predict ids may ignore it.

    The model also offers `vocab` and `text_field_embedder` to a subclass that names them.
    Subclasses over a vocabulary set `needs_target_ids = True`; heads whose loss is a negative
    log-likelihood per token set `reports_perplexity = True`. Subclasses implement `score`.
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
        # Parameters

        hidden : `torch.Tensor`
            `(batch_size, timesteps, input_dim)`, the states that predict the targets.
        mask : `torch.BoolTensor`
            `(batch_size, timesteps)`: which positions have a target.
        target_embeddings : `torch.Tensor`, optional
            `(batch_size, timesteps, target_dim)`, the target words' embeddings.
        target_ids : `torch.LongTensor`, optional
            `(batch_size, timesteps)`, the target words' ids, for heads over a vocabulary.

        # Returns

        A dict with `"loss"`, the loss summed over the masked positions (a scalar), and `"count"`,
        the number of those positions (a scalar tensor); heads that predict a vector also return
        `"predictions"`, `(batch_size, timesteps, target_dim)`.
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
        """
        What `forward` returns, once it has the targets this head needs: the target ids
        `(batch_size, timesteps)` if `needs_target_ids`, else the target embeddings
        `(batch_size, timesteps, target_dim)`.
        """
        raise NotImplementedError
