"""Decoding corpus lines, checking tokenized sentences, and warnings throttled to the 1st, 10th,
100th and every 10,000th."""

import logging
from typing import Tuple

from allennlp.common.checks import ConfigurationError


def decode_line(raw: bytes, first: bool = False) -> Tuple[str, bool, bool]:
    """`(line, undecodable, had_nul)` of a raw line: UTF-8 (U+FFFD for other bytes), NULs as
    spaces, a byte order mark dropped from the file's `first` line."""
    try:
        line = raw.decode("utf-8")
        undecodable = False
    except UnicodeDecodeError:
        line = raw.decode("utf-8", errors="replace")
        undecodable = True
    if first and line.startswith("\ufeff"):
        line = line[1:]
    had_nul = "\x00" in line
    if had_nul:
        line = line.replace("\x00", " ")
    return line, undecodable, had_nul


def _worth_logging(count: int) -> bool:
    return count in (1, 10, 100) or count % 10_000 == 0


class TruncationWarnings:
    """Counts the words (`what`) an indexer cut to `max_subwords` `subwords`, logging some."""

    def __init__(
        self, logger: logging.Logger, what: str, max_subwords: int, subwords: str = "subwords"
    ) -> None:
        self.count = 0
        self._logger = logger
        self._what = what
        self._max_subwords = max_subwords
        self._subwords = subwords

    def record(self, text: str) -> None:
        """One more truncated `text`."""
        self.count += 1
        if _worth_logging(self.count):
            self._logger.warning(
                "%d %s had more than %d %s and were truncated (latest: %d characters starting %r)",
                self.count, self._what, self._max_subwords, self._subwords, len(text), text[:20],
            )  # fmt: skip


_ODD_WORDS = {"count": 0}


def check_sentences(sentences: object, logger: logging.Logger) -> None:
    """Refuses, naming the first bad item, anything but a list of lists of strings; words that
    are empty, whitespace or hold control characters are kept, but counted and logged."""
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, (list, tuple)):
        raise ConfigurationError(
            "expected a list of tokenized sentences (lists of strings), e.g. "
            f"[[\"The\", \"council\", \"met\"]], got {type(sentences).__name__}"
        )
    for index, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)) or not isinstance(sentence, (list, tuple)):
            raise ConfigurationError(
                f"sentence {index} is a {type(sentence).__name__}, not a list of words: give "
                "tokenized sentences (lists of strings), e.g. [[\"The\", \"council\", \"met\"]]"
            )
        for position, word in enumerate(sentence):
            if not isinstance(word, str):
                raise ConfigurationError(
                    f"sentence {index}, word {position} is a {type(word).__name__} ({word!r:.40}), "
                    "not a string"
                )
            if not word.strip() or not word.isprintable():
                _ODD_WORDS["count"] += 1
                count = _ODD_WORDS["count"]
                if _worth_logging(count):
                    logger.warning(
                        "%d word(s) were empty, whitespace or held control characters, embedded as "
                        "given (latest: sentence %d, word %d: %r)",
                        count, index, position, word[:20],
                    )  # fmt: skip
