from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.vocabulary_head import VocabularyOutputHead


@OutputHead.register("adaptive_softmax")
class AdaptiveSoftmaxOutputHead(VocabularyOutputHead):
    """
    An adaptive softmax (Grave et al. 2017; `torch.nn.AdaptiveLogSoftmaxWithLoss`), ELMo-A's
    output layer: the `cutoffs[0]` most frequent words and one entry per tail cluster share
    the head softmax; tail cluster `i`, ids `[cutoffs[i], cutoffs[i + 1])`, has a softmax over
    a `input_dim / div_value^(i + 1)`-dimensional projection. Ids must be sorted by decreasing
    frequency. Log-softmaxes run in float32.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        cutoffs: List[int],
        vocab_namespace: str = "tokens",
        div_value: float = 4.0,
        positions_per_chunk: Optional[int] = None,
    ) -> None:
        super().__init__(input_dim, target_dim, vocab, vocab_namespace, positions_per_chunk)
        cutoffs = list(cutoffs)
        if not cutoffs or any(int(c) != c for c in cutoffs):
            raise ConfigurationError(f"adaptive_softmax: cutoffs must be integers, got {cutoffs}")
        if sorted(set(cutoffs)) != cutoffs or cutoffs[0] <= 0 or cutoffs[-1] >= self.num_words:
            raise ConfigurationError(
                f"adaptive_softmax: cutoffs {cutoffs} must be strictly increasing, positive and "
                f"below the vocabulary size {self.num_words} (namespace {vocab_namespace!r})"
            )
        if div_value < 1.0:
            raise ConfigurationError(f"adaptive_softmax: div_value must be >= 1, got {div_value}")
        smallest = int(input_dim // (div_value ** len(cutoffs)))
        if smallest < 1:
            raise ConfigurationError(
                f"adaptive_softmax: the last tail cluster's projection would be "
                f"{input_dim} / {div_value}^{len(cutoffs)} < 1 dimension; use fewer cutoffs or "
                "a smaller div_value"
            )
        self.adaptive = torch.nn.AdaptiveLogSoftmaxWithLoss(
            input_dim, self.num_words, cutoffs, div_value=div_value
        )

    def _log_softmax(self, layer: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        # The layers run in the autocast dtype if any; the normalisation always in float32.
        return torch.log_softmax(layer(hidden).float(), dim=-1)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        # Normalised log-probabilities (`AdaptiveLogSoftmaxWithLoss.log_prob`): valid logits.
        adaptive = self.adaptive
        head = self._log_softmax(adaptive.head, hidden)
        clusters = [head[:, : adaptive.shortlist_size]]
        for i, tail in enumerate(adaptive.tail):
            cluster_log_prob = head[:, adaptive.shortlist_size + i].unsqueeze(1)
            clusters.append(self._log_softmax(tail, hidden) + cluster_log_prob)
        return torch.cat(clusters, dim=1)

    def full_loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        # `AdaptiveLogSoftmaxWithLoss.forward`, summed: each target's head entry (itself or its
        # cluster) plus, for tail words, its log-probability within the cluster.
        adaptive = self.adaptive
        cutoffs = torch.tensor(adaptive.cutoffs[:-1], device=target_ids.device)
        cluster = torch.bucketize(target_ids, cutoffs, right=True)  # 0 = head
        head_index = torch.where(cluster == 0, target_ids, adaptive.shortlist_size + cluster - 1)
        head = self._log_softmax(adaptive.head, hidden)
        log_likelihood = head.gather(1, head_index.unsqueeze(1)).sum()
        for i, tail in enumerate(adaptive.tail):
            rows = (cluster == i + 1).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            within = target_ids[rows] - adaptive.cutoffs[i]
            tail_log_prob = self._log_softmax(tail, hidden[rows])
            log_likelihood = log_likelihood + tail_log_prob.gather(1, within.unsqueeze(1)).sum()
        return -log_likelihood
