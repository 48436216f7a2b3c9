import logging
import os
from typing import Dict, List, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import DEFAULT_OOV_TOKEN, Vocabulary

from allennlp_elmo_c.common.text import TruncationWarnings
from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer

logger = logging.getLogger(__name__)


@TokenIndexer.register("bpe_first_subword")
class BpeFirstSubwordIndexer(TokenIndexer):
    """
    Words in, the sentence's BPE subword ids (between `<S>` and `</S>`) and each word's first
    subword out, as `pretrained_transformer_mismatched` does for a transformer (ELMo-Sub).

    Registered as a `TokenIndexer` with name "bpe_first_subword".

    # Parameters

    tokenizer_path : `str`
        The BPE tokenizer JSON the biLM was pretrained with.
    vocabulary : `Union[str, Vocabulary]`
        The pretraining vocabulary: `train-bpe`'s output (or its `vocabulary/`), or the biLM.
    namespace : `str`, optional (default = `"subwords"`)
    start_token, end_token : `str`, optional (default = `"<S>"`, `"</S>"`)
    max_subwords_per_word : `int`, optional (default = `50`)
        A word with more subwords keeps its first this many (counted and logged).

    # Output

    `subword_ids` and `subword_mask` `(num_subwords,)`; `first_subword` `(num_words,)`, the
    index of each word's first subword (padding words point at `<S>`); `mask` `(num_words,)`.
    """

    def __init__(
        self,
        tokenizer_path: str,
        vocabulary: Union[str, Vocabulary],
        namespace: str = "subwords",
        start_token: str = "<S>",
        end_token: str = "</S>",
        max_subwords_per_word: int = 50,
        token_min_padding_length: int = 0,
    ) -> None:
        super().__init__(token_min_padding_length)
        if max_subwords_per_word < 1:
            raise ConfigurationError("bpe_first_subword: max_subwords_per_word must be >= 1")
        self._tokenizer = BpeTokenizer(tokenizer_path)
        self._vocabulary = (
            vocabulary if isinstance(vocabulary, Vocabulary) else _load_vocabulary(vocabulary)
        )
        self._namespace = namespace
        self._max_subwords = max_subwords_per_word
        self._truncations = TruncationWarnings(logger, "word(s)", max_subwords_per_word)
        token_to_index = self._vocabulary.get_token_to_index_vocabulary(namespace)
        missing = [
            subword
            for subword in [start_token, end_token, *self._tokenizer.subword_vocabulary()]
            if subword not in token_to_index and subword != DEFAULT_OOV_TOKEN
        ]
        if DEFAULT_OOV_TOKEN not in token_to_index:
            missing.insert(0, DEFAULT_OOV_TOKEN)
        if missing:
            raise ConfigurationError(
                f"bpe_first_subword: {len(missing)} subword(s) of {tokenizer_path} (e.g. "
                f"{missing[:5]}) are not in namespace {namespace!r} of {vocabulary}: the tokenizer "
                "and the vocabulary are not from the same `train-bpe` run"
            )
        self._unknown_id = token_to_index[DEFAULT_OOV_TOKEN]
        self._start_id = token_to_index[start_token]
        self._end_id = token_to_index[end_token]

    @property
    def num_truncated(self) -> int:
        return self._truncations.count

    def word_subword_ids(self, word: str) -> List[int]:
        subwords = self._tokenizer.word_subwords(word)
        if not subwords:
            return [self._unknown_id]
        if len(subwords) > self._max_subwords:
            self._truncations.record(word)
            subwords = subwords[: self._max_subwords]
        return [self._vocabulary.get_token_index(s, self._namespace) for s in subwords]

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        pass  # the pretraining vocabulary is fixed

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        subword_ids, first_subword = [self._start_id], []
        for token in tokens:
            first_subword.append(len(subword_ids))
            subword_ids.extend(self.word_subword_ids(token.text or ""))
        subword_ids.append(self._end_id)
        return {
            "subword_ids": subword_ids,
            "subword_mask": [True] * len(subword_ids),
            "first_subword": first_subword,
            "mask": [True] * len(first_subword),
        }

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"subword_ids": [], "subword_mask": [], "first_subword": [], "mask": []}

    def get_padding_lengths(self, indexed_tokens: IndexedTokenList) -> Dict[str, int]:
        num_words = max(len(indexed_tokens["first_subword"]), self._token_min_padding_length)
        return {"subword_ids": len(indexed_tokens["subword_ids"]), "first_subword": num_words}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        num_subwords, num_words = padding_lengths["subword_ids"], padding_lengths["first_subword"]
        subword_ids = torch.zeros(num_subwords, dtype=torch.long)
        ids = tokens["subword_ids"][:num_subwords]
        subword_ids[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        first_subword = torch.zeros(num_words, dtype=torch.long)
        offsets = tokens["first_subword"][:num_words]
        first_subword[: len(offsets)] = torch.tensor(offsets, dtype=torch.long)
        return {
            "subword_ids": subword_ids,
            "subword_mask": torch.arange(num_subwords) < len(ids),
            "first_subword": first_subword,
            "mask": torch.arange(num_words) < len(offsets),
        }


def _load_vocabulary(path: str) -> Vocabulary:
    if os.path.isdir(os.path.join(path, "vocabulary")):  # train-bpe's output directory
        path = os.path.join(path, "vocabulary")
    try:
        return Vocabulary.from_files(path)
    except (OSError, ConfigurationError) as error:
        raise ConfigurationError(
            f"bpe_first_subword: cannot read a vocabulary from {path} (give the `vocabulary/` "
            f"directory of `train-bpe` or the ELMo-Sub model.tar.gz): {error}"
        ) from error
