from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.nn.slim import SlimTable


@TokenEmbedder.register("slim_embedding")
class SlimEmbedding(TokenEmbedder):
    """
    A trainable word embedding over a `single_id` indexer with slim storage (Li et al., AAAI
    2018), the layout of the `slim_softmax` head (`SlimTable`): `num_subvectors` K divides
    `embedding_dim`; `pool_size` M, a multiple of K, has `(M / K) ** K >= num_embeddings`
    (by default the size of `vocab_namespace`); `seed` assigns sub-vectors to words.
    """

    def __init__(
        self,
        embedding_dim: int,
        num_subvectors: int,
        pool_size: int,
        num_embeddings: Optional[int] = None,
        vocab_namespace: str = "tokens",
        vocab: Optional[Vocabulary] = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if num_embeddings is None:
            if vocab is None:
                raise ConfigurationError(
                    "slim_embedding needs either num_embeddings or a vocabulary"
                )
            num_embeddings = vocab.get_vocab_size(vocab_namespace)
        self._vocab = vocab
        self._vocab_namespace = vocab_namespace
        self.table = SlimTable(
            num_embeddings, embedding_dim, num_subvectors, pool_size, seed, "slim_embedding"
        )

    def get_output_dim(self) -> int:
        return self.table.embedding_dim

    def forward(self, tokens: torch.LongTensor) -> torch.Tensor:
        if tokens.numel():
            low, high = (int(value) for value in torch.aminmax(tokens))  # one host sync
            if low < 0 or high >= self.table.num_words:
                raise ValueError(
                    f"slim_embedding: token ids must lie in [0, {self.table.num_words}), got "
                    f"[{low}, {high}]"
                )
        return self.table(tokens)

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        """`(len(words), embedding_dim)`; unknown words get `@@UNKNOWN@@`'s."""
        if self._vocab is None:
            raise ConfigurationError("slim_embedding.embed_strings needs the vocabulary")
        try:
            ids = [self._vocab.get_token_index(word, self._vocab_namespace) for word in words]
        except KeyError as error:
            raise ConfigurationError(
                f"slim_embedding: a word is missing from the vocabulary namespace "
                f"{self._vocab_namespace!r}, which has no unknown token"
            ) from error
        ids_tensor = torch.tensor(ids, dtype=torch.long, device=device or self.table.pool.device)
        return self.forward(ids_tensor)
