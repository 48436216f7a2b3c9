"""
How every command reads a corpus: the files a corpus path names (never a symbolic link) and their
lines in pieces of at most `PIECE_BYTES`.
"""

import glob
import logging
import os
import stat
from typing import IO, Callable, Iterable, Iterator, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path

from allennlp_elmo_c.common.text import decode_line

logger = logging.getLogger(__name__)

PIECE_BYTES = 100_000
_ASCII_WHITESPACE = (b" ", b"\t", b"\r", b"\x0b", b"\x0c")


def file_problem(path: str) -> Optional[str]:
    """Why `path` is not read as a corpus file (a link, not a regular file), or None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISLNK(mode):
        return "symbolic link (not followed)"
    return None if stat.S_ISREG(mode) else "not a regular file"


def corpus_files(file_path: str, command: str = "lm_corpus") -> List[str]:
    """The files of a corpus path: one file (or URL), or a glob pattern's files, sorted."""
    file_path = str(file_path)
    if glob.has_magic(file_path):
        paths = []
        for path in sorted(glob.glob(file_path)):
            problem = file_problem(path)
            if problem is None:
                paths.append(path)
            elif not os.path.isdir(path):
                logger.warning("%s: %s skipped: %s", command, path, problem)
        if not paths:
            raise ConfigurationError(f"{command}: {file_path} matches no corpus file")
        return paths
    if os.path.islink(file_path):
        raise ConfigurationError(
            f"{command}: {file_path} is a symbolic link, not followed: name the file itself"
        )
    try:
        path = cached_path(file_path)
    except FileNotFoundError as error:
        raise ConfigurationError(f"{command}: corpus file {file_path} not found") from error
    if os.path.isdir(path):
        raise ConfigurationError(
            f"{command}: {file_path} is a directory, not a corpus file (for the shards of "
            f"prepare-corpus --shard-tokens give a pattern, e.g. {file_path}/train-*.txt)"
        )
    return [path]


def line_pieces(
    stream: IO[bytes], count: Callable[[str], None] = lambda problem: None
) -> Iterator[Tuple[bytes, bool]]:
    """The lines of `stream` as `(bytes, ends_line)`, a longer line than `PIECE_BYTES` cut at
    whitespace, else before a UTF-8 lead byte; `count` is told of each cut."""
    carry = b""
    in_long_line = False
    while True:
        raw = carry + stream.readline(PIECE_BYTES - len(carry))
        if not raw:
            return
        if raw.endswith(b"\n") or len(raw) < PIECE_BYTES:
            yield raw, True
            carry, in_long_line = b"", False
            continue
        if not in_long_line:
            count("long_lines_cut")
            in_long_line = True
        cut = max(raw.rfind(space) for space in _ASCII_WHITESPACE) + 1
        if cut <= 0:
            count("long_words_cut")
            cut = len(raw)
            while cut > len(raw) - 4 and (raw[cut - 1] & 0xC0) == 0x80:
                cut -= 1
            if raw[cut - 1] >= 0xC0:
                cut -= 1
        yield raw[:cut], False
        carry = raw[cut:]


Line = Iterator[Tuple[str, bool, bool]]


def corpus_lines(paths: Iterable[str]) -> Iterator[Line]:
    """Every line of `paths`, as an iterator of its pieces decoded by `decode_line`; those not
    taken before the next line is asked for are read past."""
    for path in paths:
        with open(path, "rb") as stream:
            pieces = line_pieces(stream)
            first = True
            for raw, ends in pieces:
                line = _line(raw, ends, pieces, first)
                yield line
                for _ in line:
                    pass
                first = False


def _line(raw: bytes, ends: bool, pieces: Iterator[Tuple[bytes, bool]], first: bool) -> Line:
    yield decode_line(raw, first=first)
    while not ends:
        raw, ends = next(pieces, (b"", True))
        yield decode_line(raw)


def has_text(paths: Iterable[str]) -> bool:
    """Whether any line of `paths`, decoded, holds more than whitespace."""
    return any(text.strip() for line in corpus_lines(paths) for text, _, _ in line)
