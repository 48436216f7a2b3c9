import re
from pathlib import Path
from typing import Dict, List, Tuple

from tokenizers import Tokenizer as HuggingFaceTokenizer

from allennlp.common.checks import ConfigurationError
from allennlp.data.tokenizers import Token, Tokenizer


_WORD = re.compile(r"\S+")


@Tokenizer.register("bpe")
class BpeTokenizer(Tokenizer):
    """
    Splits whitespace-tokenized text into the BPE subwords of a `train-bpe` tokenizer JSON, word
    by word (cached), with their character offsets.

    Registered as a `Tokenizer` with name "bpe".

    # Parameters

    tokenizer_path : `str`
        The tokenizer JSON (`OUTPUT/tokenizer.json` of `train-bpe`).
    cache_size : `int`, optional (default = `1_000_000`)
        Words whose subwords are kept; the cache is emptied when it is full.
    """

    def __init__(self, tokenizer_path: str, cache_size: int = 1_000_000) -> None:
        path = Path(tokenizer_path)
        if not path.is_file():
            raise ConfigurationError(
                f"bpe: tokenizer file {tokenizer_path} does not exist (train one with "
                "`allennlp train-bpe`)"
            )
        try:
            self._tokenizer = HuggingFaceTokenizer.from_file(str(path))
        except Exception as error:  # the library raises plain Exceptions for bad JSON
            raise ConfigurationError(
                f"bpe: {tokenizer_path} is not a `tokenizers` JSON file ({error})"
            ) from error
        self._tokenizer.no_padding()
        self.tokenizer_path = str(path)
        self._cache_size = cache_size
        self._cache: Dict[str, Tuple[Tuple[str, int, int], ...]] = {}

    def _pieces(self, word: str) -> Tuple[Tuple[str, int, int], ...]:
        """(subword, start, end) for each subword of `word`, offsets in characters of `word`."""
        pieces = self._cache.get(word)
        if pieces is None:
            encoding = self._tokenizer.encode(word, add_special_tokens=False)
            pieces = tuple(
                (text, start, end) for text, (start, end) in zip(encoding.tokens, encoding.offsets)
            )
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[word] = pieces
        return pieces

    def subword_vocabulary(self) -> List[str]:
        """Every subword the tokenizer can produce (special tokens included)."""
        return list(self._tokenizer.get_vocab())

    def word_subwords(self, word: str) -> List[str]:
        """The subwords of one word, the first subword first (`[]` for "" and whitespace)."""
        return [text for text, _, _ in self._pieces(word)]

    def tokenize(self, text: str) -> List[Token]:
        tokens = []
        for match in _WORD.finditer(text):
            offset = match.start()
            for piece, start, end in self._pieces(match.group()):
                tokens.append(Token(piece, idx=offset + start, idx_end=offset + end))
        return tokens
