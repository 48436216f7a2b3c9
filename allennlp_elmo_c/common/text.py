"""
What every reader of a raw corpus line does the same way: decoding, and the throttled warning
of a word cut to a maximum number of subwords.
"""

import logging
from typing import Tuple

BYTE_ORDER_MARK = "\ufeff"


def decode_line(raw: bytes, first: bool = False) -> Tuple[str, bool, bool]:
    """
    One raw corpus line as the package reads text everywhere (the `lm_corpus` reader,
    `elmo-c-embed`, `train-bpe`): UTF-8, with U+FFFD for bytes that are not UTF-8, NUL characters
    as spaces, and a byte order mark removed from the file's `first` line.

    # Returns

    `(line, undecodable, had_nul)`: the text, and whether it held bytes that are not UTF-8 and
    NUL characters (for the callers' counts).
    """
    try:
        line = raw.decode("utf-8")
        undecodable = False
    except UnicodeDecodeError:
        line = raw.decode("utf-8", errors="replace")
        undecodable = True
    if first and line.startswith(BYTE_ORDER_MARK):
        line = line[1:]
    had_nul = "\x00" in line
    if had_nul:
        line = line.replace("\x00", " ")
    return line, undecodable, had_nul


class TruncationWarnings:
    """
    Counts the words an indexer cut to its maximum number of subwords and logs the 1st, 10th,
    100th and every 10,000th (a corpus with many of them must not flood the log).

    # Parameters

    logger : `logging.Logger`
        The indexer's logger.
    what : `str`
        The units, e.g. "token(s)" or "word(s)".
    max_subwords : `int`
        The indexer's maximum, named in the message.
    subwords : `str`, optional (default = `"subwords"`)
        The name of the subwords in the message, e.g. "fastText subwords".
    """

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
        if self.count in (1, 10, 100) or self.count % 10_000 == 0:
            self._logger.warning(
                "%d %s had more than %d %s and were truncated (latest: %d characters starting %r)",
                self.count,
                self._what,
                self._max_subwords,
                self._subwords,
                len(text),
                text[:20],
            )


_ODD_WORDS = {"count": 0}


def check_sentences(sentences: object, logger: logging.Logger) -> None:
    """
    What the Python front doors (`batch_to_ids`, `ElmoCEmbedder`, the Hugging Face tokenizer,
    the spaCy component) accept as tokenized text: a list of sentences, each a list of strings.
    Anything else is a `ConfigurationError` naming the first bad item. Words that are empty,
    whitespace or hold control characters (NUL, ...) are embedded as given (one vector per word,
    as the caller's alignment expects), but counted and logged (1st, 10th, 100th, every 10,000th):
    they are usually a tokenization mistake, and `elmo-c-embed`, which splits lines on
    whitespace, never makes them.
    """
    from allennlp.common.checks import ConfigurationError

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
                if count in (1, 10, 100) or count % 10_000 == 0:
                    logger.warning(
                        "%d word(s) were empty, whitespace or held control characters, embedded as "
                        "given (latest: sentence %d, word %d: %r)",
                        count, index, position, word[:20],
                    )  # fmt: skip
