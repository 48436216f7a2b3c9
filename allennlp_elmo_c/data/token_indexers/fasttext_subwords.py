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
    Maps each token to its fastText subword rows: the word's own row if it is in the model's
    dictionary, then the rows of its hashed character n-grams, as fastText's `get_subwords`
    does. Their mean (the `fasttext` token embedder) is fastText's word vector, so every string
    gets a vector without an AllenNLP `Vocabulary`. Ids are cached per token string; only the
    `.bin`'s dictionary is read.

    Registered as a `TokenIndexer` with name "fasttext_subwords".

    # Parameters

    model_path : `str`, optional
        The fastText `.bin`. If it does not exist, `$ELMO_C_FASTTEXT`, then the file of that name
        beside the archive being loaded (`fasttext_source.resolve_missing_fasttext`).
    archive_file : `str`, optional
        Instead of `model_path`: an ELMo-C biLM archive whose fastText model is used, found as its
        users find it (`allennlp_elmo_c.fasttext.fasttext_source`); a missing archive falls back
        to `ELMO_C_FASTTEXT`. Give exactly one of the two.
    max_subwords_per_token : `int`, optional (default = `256`)
        A token with more subwords keeps the first this many (its own row first); such tokens
        are counted and logged.
    cache_size : `int`, optional (default = `1_000_000`)
        Token strings whose ids are kept; the cache is emptied when full.
    token_min_padding_length : `int`, optional (default = `0`)
        See `TokenIndexer`.
    fingerprint : `int`, optional (default = `None`)
        The `FastTextBin.fingerprint` of the `.bin` the model was trained with (recorded by
        training): any other file is a `ConfigurationError` naming both.

    # Output

    `token_mask` `(num_tokens,)`; `subword_ids` `(total_subwords,)`, each token's ids one after
    the other, padded to the batch's longest sentence; `subword_counts` `(num_tokens,)` (which ids
    are whose); `fasttext_fingerprint` `(1,)`, which the embedder checks against its own `.bin` on
    every batch. The mask is not called `mask`: AllenNLP's `get_text_field_mask` refuses two
    `mask` outputs in one text field, and a task may index the same tokens twice.
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
        # A task archive being loaded: the copy of the .bin it bundles, whether the biLM
        # archive exists or not (its embedder builds the biLM from the task's record; the
        # fingerprint check still guards the pair).
        bundled = bundled_fasttext(fingerprint)
        if bundled is not None:
            return bundled
        if not Path(archive_file).exists():
            # E.g. a task archive used after the biLM archive was deleted, bundling no .bin.
            from_environment = os.environ.get(FASTTEXT_ENV)
            if from_environment and Path(from_environment).is_file():
                logger.warning(
                    "fasttext_subwords: %s does not exist; using $%s = %s",
                    archive_file,
                    FASTTEXT_ENV,
                    from_environment,
                )
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
        """
        `subword_ids` of each of `texts`: cached strings from the cache, the others hashed all at
        once (`FastTextBin.subword_ids_batch`) and cached.
        """
        cache = self._cache
        found = list(map(cache.get, texts))
        if None not in found:
            return found
        # (A word missing twice is hashed twice: rarer and cheaper than removing repeats.)
        missing = [text for text, ids in zip(texts, found) if ids is None]
        computed, cut = self._model.subword_ids_and_cuts(missing, limit=self._max_subwords)
        for index in cut:
            self._truncations.record(missing[index])
        new = dict(zip(missing, computed))
        if len(cache) + len(new) > self._cache_size:
            cache.clear()
        if len(new) <= self._cache_size:
            cache.update(new)
        # A cached word's ids as found; each other word's from `new` (found None).
        return list(map(new.get, texts, found))

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        pass  # open vocabulary: nothing to count

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        # Lists (AllenNLP's convention), fresh ones: the cached tuples cannot be changed by users.
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
        # The mask first: here `subword_ids` has as many dimensions as the mask, and AllenNLP's
        # get_text_field_mask takes the first lowest-dimensional output.
        return {
            "token_mask": mask,
            "subword_ids": ids,
            "subword_counts": all_counts,
            "fasttext_fingerprint": torch.tensor([self._model.fingerprint], dtype=torch.long),
        }
