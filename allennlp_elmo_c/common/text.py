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
