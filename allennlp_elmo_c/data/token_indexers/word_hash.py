import hashlib
from typing import Dict, List

import torch

from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary


PADDING_HASH = 0


def word_hash(text: str) -> int:
    """
    A stable 64-bit hash of a string, as a signed int64 value that is never `PADDING_HASH` (0):
    the first 8 bytes (little-endian) of the BLAKE2b digest of its UTF-8 bytes. Unlike Python's
    `hash()` it is the same in every process and on every machine. Lone surrogates are encoded
    with `surrogatepass`, so any `str` hashes. The one digest equal to 0 is mapped to 1 (a
    collision with probability 2^-64).
    """
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


@TokenIndexer.register("word_hash")
class WordHashIndexer(TokenIndexer):
    """
    Maps each token string to its 64-bit `word_hash`: an open-vocabulary id that needs no
    `Vocabulary`, for embedders whose vectors are a function of the string (`random_vectors`).
    Different strings get different ids up to 64-bit hash collisions: a vocabulary of a million
    words has one with probability ~3e-8.

    Registered as a `TokenIndexer` with name "word_hash".

    # Parameters

    token_min_padding_length : `int`, optional (default = `0`)
        See `TokenIndexer`.

    # Output

    `word_hashes`: `(num_tokens,)` int64, padded with `PADDING_HASH` = 0, which no string hashes
    to; `token_mask`: `(num_tokens,)` True for real tokens. The mask is not called `mask` so that
    the field can also hold other indexers (AllenNLP's `get_text_field_mask` refuses two `mask`
    outputs); without one, `get_text_field_mask` compares the first lowest-dimensional tensor
    with 0, which gives the same mask for `word_hashes` since real tokens are never 0.
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
