import itertools
import logging
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data.token_indexers.token_indexer import IndexedTokenList, TokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary

from allennlp_elmo_c.archive import checked_fasttext, read_archive_config
from allennlp_elmo_c.common.text import TruncationWarnings
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.fasttext.fasttext_source import (
    FASTTEXT_ENV,
    bundled_fasttext,
    check_fingerprint,
    recorded_fasttext_path,
    resolve_missing_fasttext,
    trained_with,
)

logger = logging.getLogger(__name__)


@TokenIndexer.register("fasttext_subwords")
class FastTextSubwordsIndexer(TokenIndexer):
    """
    Maps each token to its fastText subword rows, as fastText's `get_subwords`; their mean (the
    `fasttext` embedder) is fastText's word vector, for any string, without a `Vocabulary`.

    Registered as a `TokenIndexer` with name "fasttext_subwords".

    # Parameters

    model_path : `str`, optional
        The fastText `.bin` (if missing, found as `fasttext_source.resolve_missing_fasttext` says).
    archive_file : `str`, optional
        Instead of `model_path`: an ELMo-C biLM archive whose fastText model is used.
    max_subwords_per_token : `int`, optional (default = `256`)
        A token with more keeps its first this many (counted and logged).
    cache_size : `int`, optional (default = `1_000_000`)
        Token strings whose ids are kept; the cache is emptied when full.
    token_min_padding_length : `int`, optional (default = `0`)
    fingerprint : `int`, optional (default = `None`)
        The fingerprint of the `.bin` the model was trained with; another is refused.

    # Output

    `token_mask` `(num_tokens,)` (not `mask`: a field may hold two indexers); `subword_ids`
    `(total_subwords,)`, each token's ids one after the other; `subword_counts` `(num_tokens,)`;
    `fasttext_fingerprint` `(1,)`, which the embedder checks.
    """

    def __init__(
        self,
        model_path: Optional[str] = None,
        archive_file: Optional[str] = None,
        max_subwords_per_token: int = 256,
        cache_size: int = 1_000_000,
        token_min_padding_length: int = 0,
        fingerprint: Optional[int] = None,
    ) -> None:
        super().__init__(token_min_padding_length)
        if max_subwords_per_token < 1:
            raise ConfigurationError("fasttext_subwords: max_subwords_per_token must be >= 1")
        if (model_path is None) == (archive_file is None):
            raise ConfigurationError(
                "fasttext_subwords: give exactly one of model_path (a fastText .bin) and "
                "archive_file (an ELMo-C archive, whose fastText model is then used), got "
                f"model_path={model_path!r}, archive_file={archive_file!r}"
            )
        if archive_file is not None:
            model_path = self._archive_fasttext(archive_file, fingerprint)
        else:
            model_path = resolve_missing_fasttext(
                model_path, "fasttext_subwords indexer", fingerprint
            )
        if fingerprint is not None:
            check_fingerprint(model_path, fingerprint, trained_with(fingerprint))
        self._model = FastTextBin.load(model_path)
        self._max_subwords = max_subwords_per_token
        self._cache_size = cache_size
        self._cache: Dict[str, Tuple[int, ...]] = {}
        self._truncations = TruncationWarnings(
            logger, "token(s)", max_subwords_per_token, "fastText subwords"
        )

    @staticmethod
    def _archive_fasttext(archive_file: str, fingerprint: Optional[int]) -> str:
        # A task archive being loaded: the copy of the .bin it bundles.
        bundled = bundled_fasttext(fingerprint)
        if bundled is not None:
            return bundled
        if not Path(archive_file).exists():
            from_environment = os.environ.get(FASTTEXT_ENV)
            if from_environment and Path(from_environment).is_file():
                logger.warning("fasttext_subwords: %s does not exist; using $%s = %s",
                               archive_file, FASTTEXT_ENV, from_environment)  # fmt: skip
                return from_environment
            raise ConfigurationError(
                f"fasttext_subwords: ELMo-C archive {archive_file} does not exist; give model_path "
                "(the biLM's fastText .bin) instead, or set the environment variable "
                f"{FASTTEXT_ENV}"
            )
        config = read_archive_config(archive_file)
        if recorded_fasttext_path(config, archive_file) is None:
            raise ConfigurationError(
                f"fasttext_subwords: the biLM {archive_file} reads no fastText model; index its "
                "words with the indexer it was pretrained with"
            )
        return checked_fasttext(config, archive_file)[0]

    @property
    def model_path(self) -> str:
        """The fastText `.bin` this indexer reads."""
        return str(self._model.path)

    @property
    def num_truncated(self) -> int:
        """How many tokens were cut to `max_subwords_per_token` subwords."""
        return self._truncations.count

    def subword_ids(self, text: str) -> Tuple[int, ...]:
        """The (possibly truncated) subword ids of one token string."""
        return self.subword_ids_of([text])[0]

    def subword_ids_of(self, texts: List[str]) -> List[Tuple[int, ...]]:
        """`subword_ids` of each of `texts`, the uncached ones computed at once and cached."""
        cache = self._cache
        found = list(map(cache.get, texts))
        if None not in found:
            return found
        missing = [text for text, ids in zip(texts, found) if ids is None]
        computed, cut = self._model.subword_ids_and_cuts(missing, limit=self._max_subwords)
        for index in cut:
            self._truncations.record(missing[index])
        new = dict(zip(missing, computed))
        if len(cache) + len(new) > self._cache_size:
            cache.clear()
        if len(new) <= self._cache_size:
            cache.update(new)
        return list(map(new.get, texts, found))

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        pass  # open vocabulary: nothing to count

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        subwords = list(map(list, self.subword_ids_of([token.text or "" for token in tokens])))
        return {
            "subword_ids": subwords,
            "token_mask": [True] * len(subwords),
            "subword_counts": list(map(len, subwords)),
            "fasttext_fingerprint": [self._model.fingerprint],
        }

    def get_empty_token_list(self) -> IndexedTokenList:
        return {
            "subword_ids": [],
            "token_mask": [],
            "subword_counts": [],
            "fasttext_fingerprint": [self._model.fingerprint],
        }

    def get_padding_lengths(self, indexed_tokens: IndexedTokenList) -> Dict[str, int]:
        num_tokens = max(len(indexed_tokens["subword_ids"]), self._token_min_padding_length)
        return {"subword_ids": sum(indexed_tokens["subword_counts"]), "num_tokens": num_tokens}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        num_tokens = padding_lengths["num_tokens"]
        num_flat = padding_lengths["subword_ids"]
        rows = tokens["subword_ids"][:num_tokens]
        flat = list(itertools.chain.from_iterable(rows))
        if len(flat) > num_flat:  # only if asked for less than the padding lengths give
            flat = flat[:num_flat]
            ends = [min(end, num_flat) for end in itertools.accumulate(map(len, rows))]
            counts = [end - begin for begin, end in zip([0] + ends[:-1], ends)]
        else:
            counts = [len(row) for row in rows]
        ids = torch.zeros(num_flat, dtype=torch.long)
        ids[: len(flat)] = torch.tensor(flat, dtype=torch.long)
        all_counts = torch.zeros(num_tokens, dtype=torch.long)
        all_counts[: len(counts)] = torch.tensor(counts, dtype=torch.long)
        mask = torch.zeros(num_tokens, dtype=torch.bool)
        mask[: min(len(tokens["token_mask"]), num_tokens)] = True
        # The mask first: `get_text_field_mask` takes the first lowest-dimensional output.
        return {
            "token_mask": mask,
            "subword_ids": ids,
            "subword_counts": all_counts,
            "fasttext_fingerprint": torch.tensor([self._model.fingerprint], dtype=torch.long),
        }
