from typing import Callable, Dict, Optional, Tuple

import torch
from torch.utils.checkpoint import checkpoint

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead


# Validation scores at most this many logits at once (256 MB in float32).
EVAL_LOGITS_PER_CHUNK = 1 << 26


class VocabularyOutputHead(OutputHead):
    """
    The shared part of the heads over a closed vocabulary (softmax, sampled, adaptive, slim):
    the summed negative log-likelihood of the target ids of `vocab_namespace` (`"tokens"`) at
    the real positions, in chunks of positions (`loss`). A subclass implements `logits` and may
    override `full_loss` (a cheaper exact loss) or `loss_function` (a sampled one).

    # Parameters

    positions_per_chunk : `int`, optional (default = `None`)
        If given (>= 1), the training loss scores at most this many positions at a time, each
        chunk recomputed in the backward pass: memory O(positions_per_chunk x V), the same loss.
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
                f"{type(self).__name__}: positions_per_chunk must be >= 1, "
                f"got {positions_per_chunk}"
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
        """Unnormalised scores `(num_positions, num_words)` of `hidden` `(num_positions,
        input_dim)`."""
        raise NotImplementedError

    def loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        """
        Summed negative log-likelihood of `target_ids` `(num_positions,)` given `hidden`
        `(num_positions, input_dim)` (`loss_function`), in chunks: of `positions_per_chunk` in
        training, recomputed in the backward pass; of `EVAL_LOGITS_PER_CHUNK` logits without
        gradients.
        """
        chunk_loss, shared = self.loss_function(hidden, target_ids)
        recompute = torch.is_grad_enabled()
        if recompute:
            chunk = self.positions_per_chunk
        else:
            chunk = max(1, EVAL_LOGITS_PER_CHUNK // self.num_words)
        if chunk is None or hidden.size(0) <= chunk:
            return chunk_loss(hidden, target_ids, *shared)
        parts = []
        for hidden_chunk, targets_chunk in zip(hidden.split(chunk), target_ids.split(chunk)):
            if recompute:
                part = checkpoint(
                    chunk_loss, hidden_chunk, targets_chunk, *shared, use_reentrant=False
                )
            else:
                part = chunk_loss(hidden_chunk, targets_chunk, *shared)
            parts.append(part)
        return torch.stack(parts).sum()

    def loss_function(
        self, hidden: torch.Tensor, target_ids: torch.LongTensor
    ) -> Tuple[Callable[..., torch.Tensor], Tuple[torch.Tensor, ...]]:
        """`chunk_loss(hidden_chunk, target_ids_chunk, *shared)`, a chunk's summed negative
        log-likelihood, and `shared`, the tensors every chunk uses (e.g. negative samples)."""
        return self.full_loss, ()

    def full_loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        """The summed full-softmax negative log-likelihood (log-softmax in float32)."""
        logits = self.logits(hidden)
        return torch.nn.functional.cross_entropy(logits.float(), target_ids, reduction="sum")

    def score(
        self, hidden: torch.Tensor, mask: torch.BoolTensor, target_ids: torch.Tensor
    ) -> Dict[str, torch.Tensor]:
        targets = target_ids[mask]
        if targets.numel() and int(targets.max()) >= self.num_words:
            raise ValueError(
                f"target id {int(targets.max())} is outside the vocabulary namespace "
                f"{self.vocab_namespace!r} of {self.num_words} words"
            )
        # Only real positions are scored: padding never reaches the softmax.
        return {"loss": self.loss(hidden[mask], targets), "count": mask.sum()}
