import hashlib
from typing import Dict, List

import torch

from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary


PADDING_HASH = 0


def word_hash(text: str) -> int:
    """A stable signed 64-bit hash of a string (BLAKE2b), never `PADDING_HASH`."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


@TokenIndexer.register("word_hash")
class WordHashIndexer(TokenIndexer):
    """
    Each token's `word_hash`, an id without a `Vocabulary` (for `random_vectors`): `word_hashes`
    and `token_mask` `(num_tokens,)`.

    Registered as a `TokenIndexer` with name "word_hash".
    """

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        pass  # open vocabulary: nothing to count

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        hashes = [word_hash(token.text or "") for token in tokens]
        return {"word_hashes": hashes, "token_mask": [True] * len(hashes)}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"word_hashes": [], "token_mask": []}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        num_tokens = padding_lengths["word_hashes"]
        hashes = tokens["word_hashes"][:num_tokens]
        padded = torch.full((num_tokens,), PADDING_HASH, dtype=torch.long)
        padded[: len(hashes)] = torch.tensor(hashes, dtype=torch.long)
        mask = torch.zeros(num_tokens, dtype=torch.bool)
        mask[: len(hashes)] = True
        return {"word_hashes": padded, "token_mask": mask}
