import hashlib
from typing import Dict, List

import torch

from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary


PADDING_HASH = 0


def word_hash(text: str) -> int:
    """A stable signed 64-bit hash of a string, never `PADDING_HASH`: the first 8 bytes of its
    BLAKE2b digest (a digest of 0 becomes 1)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


@TokenIndexer.register("word_hash")
class WordHashIndexer(TokenIndexer):
    """
    Maps each token to its `word_hash`: an open-vocabulary id without a `Vocabulary`, for
    embedders whose vectors are a function of the string (`random_vectors`).

    Registered as a `TokenIndexer` with name "word_hash".

    # Output

    `word_hashes` `(num_tokens,)`, padded with `PADDING_HASH` (0); `token_mask` `(num_tokens,)`,
    not named `mask` so that the field can hold other indexers as well.
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
