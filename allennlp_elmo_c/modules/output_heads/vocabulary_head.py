import logging
from typing import Dict, Optional

import torch
from torch.utils.checkpoint import checkpoint

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead

logger = logging.getLogger(__name__)

# Validation scores at most this many logits at once (256 MB in float32).
EVAL_LOGITS_PER_CHUNK = 1 << 26


class VocabularyOutputHead(OutputHead):
    """
    The shared part of output heads that predict a word id from a closed vocabulary (softmax,
    sampled, adaptive, slim): the vocabulary size, the target ids, the selection of the real
    positions and the summed negative log-likelihood. A subclass implements `logits` (full
    scores over the vocabulary) and may override `loss` (e.g. a sampled loss in training).

    Not registered itself.

    # Parameters

    input_dim : `int`
    target_dim : `int`
        Filled in by the model.
    vocab : `Vocabulary`
        Filled in by the model.
    vocab_namespace : `str`, optional (default = `"tokens"`)
        The namespace of the `single_id` indexer named by the model's `target_ids_key`.
    positions_per_chunk : `int`, optional (default = `None`)
        Score the training loss this many positions at a time, recomputing each chunk's logits in
        the backward pass (see `loss`); the loss and gradients are the same.
    """

    needs_target_ids = True
    reports_perplexity = True

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        vocab_namespace: str = "tokens",
        positions_per_chunk: Optional[int] = None,
    ) -> None:
        super().__init__(input_dim, target_dim)
        if positions_per_chunk is not None and positions_per_chunk < 1:
            raise ConfigurationError(
                f"{type(self).__name__}: positions_per_chunk must be >= 1, got {positions_per_chunk}"
            )
        self.positions_per_chunk = positions_per_chunk
        self.vocab_namespace = vocab_namespace
        self.num_words = vocab.get_vocab_size(vocab_namespace)
        # A padded namespace always holds @@PADDING@@ and @@UNKNOWN@@.
        padded = self.num_words > 0 and vocab.is_padded(vocab_namespace)
        if self.num_words - (2 if padded else 0) < 2:
            raise ConfigurationError(
                f"{type(self).__name__}: the vocabulary namespace {vocab_namespace!r} is empty; "
                "build the vocabulary from the training data or from files"
            )

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """
        # Parameters

        hidden : `torch.Tensor`
            `(num_positions, input_dim)`.

        # Returns

        Unnormalised scores `(num_positions, num_words)`.
        """
        raise NotImplementedError

    def loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        """
        Summed negative log-likelihood of `target_ids` `(num_positions,)` given `hidden`
        `(num_positions, input_dim)`: a full softmax (`full_loss`) unless a subclass
        approximates it. Without gradients (validation) the positions are scored in chunks of at
        most `EVAL_LOGITS_PER_CHUNK` logits: a full softmax over 800K words for a batch of 768
        windows would otherwise need ~50 GB of logits at once. In training, chunks of
        `positions_per_chunk` positions (if set) are recomputed in the backward pass (gradient
        checkpointing): memory O(chunk x V) for one more forward pass of the logits.
        """
        if torch.is_grad_enabled():
            chunk, score = self.positions_per_chunk, self._recomputed_loss
        else:
            chunk, score = max(1, EVAL_LOGITS_PER_CHUNK // self.num_words), self.full_loss
        if chunk is None or hidden.size(0) <= chunk:
            return self.full_loss(hidden, target_ids)
        parts = [score(h, y) for h, y in zip(hidden.split(chunk), target_ids.split(chunk))]
        return torch.stack(parts).sum()

    def _recomputed_loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        return checkpoint(self.full_loss, hidden, target_ids, use_reentrant=False)

    def full_loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        """The summed full-softmax negative log-likelihood (log-softmax in float32)."""
        logits = self.logits(hidden)
        return torch.nn.functional.cross_entropy(logits.float(), target_ids, reduction="sum")

    def forward(
        self,
        hidden: torch.Tensor,
        mask: torch.BoolTensor,
        target_embeddings: Optional[torch.Tensor] = None,
        target_ids: Optional[torch.LongTensor] = None,
    ) -> Dict[str, torch.Tensor]:
        if target_ids is None:
            raise ConfigurationError(
                f"{type(self).__name__} needs target ids (set the model's target_ids_key)"
            )
        if target_ids.shape != mask.shape:
            raise ValueError(
                f"target ids {tuple(target_ids.shape)} do not match the mask {tuple(mask.shape)}"
            )
        targets = target_ids[mask]
        if targets.numel() and int(targets.max()) >= self.num_words:
            raise ValueError(
                f"target id {int(targets.max())} is outside the vocabulary namespace "
                f"{self.vocab_namespace!r} of {self.num_words} words"
            )
        # Only real positions are scored: padding never reaches the softmax.
        return {"loss": self.loss(hidden[mask], targets), "count": mask.sum()}
