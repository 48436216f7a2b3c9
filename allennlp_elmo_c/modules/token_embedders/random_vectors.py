from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.data.token_indexers.word_hash import PADDING_HASH, word_hash
from allennlp_elmo_c.nn.hashed_normal import hashed_normal


@TokenEmbedder.register("random_vectors")
class RandomVectorsEmbedder(TokenEmbedder):
    """
    A fixed random N(0, 1) vector per word string (the paper's ELMo-C-Rnd ablation, for an open
    vocabulary): a function of the string's 64-bit hash (the `word_hash` indexer) and `seed`,
    made on the input's device (`hashed_normal`); nothing trained or stored.
    """

    def __init__(self, embedding_dim: int, seed: int = 0) -> None:
        super().__init__()
        if embedding_dim < 1:
            raise ConfigurationError(
                f"random_vectors: embedding_dim must be >= 1, got {embedding_dim}"
            )
        self._dim = embedding_dim
        self._seed = seed

    def get_output_dim(self) -> int:
        return self._dim

    def forward(
        self, word_hashes: torch.LongTensor, token_mask: Optional[torch.BoolTensor] = None
    ) -> torch.Tensor:
        """The `word_hash` indexer's `(batch, num_tokens)` to `(batch, num_tokens,
        embedding_dim)`, zeros at padding (hash 0 or masked)."""
        if word_hashes.dtype != torch.int64:
            raise ConfigurationError(
                "random_vectors needs the word_hash indexer's int64 hashes, "
                f"got {word_hashes.dtype}"
            )
        mask = word_hashes != PADDING_HASH
        if token_mask is not None:
            mask = mask & token_mask.bool()
        vectors = hashed_normal(word_hashes, self._dim, self._seed)
        return vectors * mask.unsqueeze(-1)

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        hashes = torch.tensor([word_hash(word) for word in words], dtype=torch.long)
        return self.forward(hashes.to(device or torch.device("cpu")))
