from typing import Optional

import torch

from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.vocabulary_head import VocabularyOutputHead
from allennlp_elmo_c.nn.slim import SlimTable


@OutputHead.register("slim_softmax")
class SlimSoftmaxOutputHead(VocabularyOutputHead):
    """
    A full softmax whose output word vectors are slim (Li et al., AAAI 2018; `SlimTable`): the
    logit of `w` is `b_w + sum_k <h_k, S_k[a(w, k)]>`, without the `(V, input_dim)` matrix.
    `num_subvectors` K divides `input_dim`; `pool_size` M, a multiple of K, has `(M / K) ** K
    >= vocabulary size`; `bias`: per word; `seed` assigns sub-vectors to words. The word
    vectors have the hidden state's size.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        num_subvectors: int,
        pool_size: int,
        vocab_namespace: str = "tokens",
        bias: bool = True,
        seed: int = 0,
        positions_per_chunk: Optional[int] = None,
    ) -> None:
        super().__init__(input_dim, target_dim, vocab, vocab_namespace, positions_per_chunk)
        self.table = SlimTable(
            self.num_words, input_dim, num_subvectors, pool_size, seed, "slim_softmax"
        )
        self.bias = torch.nn.Parameter(torch.zeros(self.num_words)) if bias else None

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """The logits `(num_words, num_positions)`, words first."""
        scores = self.table.scores(hidden)
        return scores if self.bias is None else scores + self.bias.unsqueeze(1)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.scores(hidden).t()

    def full_loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        # The softmax over the words axis of the words-first scores: no (N, V) transpose copy.
        log_probs = torch.log_softmax(self.scores(hidden).float(), dim=0)
        return -log_probs.gather(0, target_ids.unsqueeze(0)).sum()
