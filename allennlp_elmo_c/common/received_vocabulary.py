"""
A received model's AllenNLP vocabulary (`vocabulary/`), checked before AllenNLP reads it:
AllenNLP's `Vocabulary.from_files` reads each namespace file whole into two dictionaries (about
`ENTRY_BYTES` per line), and asserts (an `AssertionError`, not a refusal) that a padded namespace
holds `@@UNKNOWN@@`.

`vocabulary_bytes` counts the files' lines by streaming them (no line is kept), checks that each
padded namespace starts with `@@UNKNOWN@@` (where AllenNLP writes it: id 1, after the padding),
and returns the memory reading them will take, which a loader holds to its budget before
`read_vocabulary` reads them.
"""

from pathlib import Path
from typing import Dict, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import namespace_match
from allennlp.data import Vocabulary
from allennlp.data.vocabulary import DEFAULT_OOV_TOKEN, NAMESPACE_PADDING_FILE

# What one vocabulary line costs once read (its string, its entries in two dictionaries).
ENTRY_BYTES = 256
# The most bytes of `non_padded_namespaces.txt` read.
_MAX_PATTERNS_BYTES = 1 << 16
_CHUNK = 1 << 20


def _namespace_files(directory: Path) -> List[Path]:
    """The namespace files AllenNLP reads: every file not hidden but the padding file."""
    return sorted(
        path for path in directory.iterdir() if not path.name.startswith(".") and path.name != NAMESPACE_PADDING_FILE
    )


def vocabulary_bytes(directory: Path, where: str) -> int:
    """
    The memory reading the vocabulary `directory` takes (its files' bytes plus `ENTRY_BYTES` per
    line), each file streamed once; a padded namespace not starting with `@@UNKNOWN@@` is a
    `ConfigurationError` naming the file (`where` names the model).
    """
    patterns_file = directory / NAMESPACE_PADDING_FILE
    patterns: List[str] = []
    if patterns_file.is_file():
        with open(patterns_file, "rb") as stream:
            data = stream.read(_MAX_PATTERNS_BYTES + 1)
        if len(data) > _MAX_PATTERNS_BYTES:
            raise ConfigurationError(f"{where}: {NAMESPACE_PADDING_FILE} is larger than {_MAX_PATTERNS_BYTES} bytes")
        patterns = [line for line in data.decode("utf-8", "replace").splitlines() if line]
    total = 0
    for path in _namespace_files(directory):
        namespace = path.name.replace(".txt", "")
        padded = not any(namespace_match(pattern, namespace) for pattern in patterns)
        lines, size, first = _count_lines(path)
        if padded and lines and first != DEFAULT_OOV_TOKEN:
            shown = first if len(first) <= 40 else f"{first[:40]}..."
            raise ConfigurationError(
                f"{where}: the vocabulary namespace {path.name} is padded but its first line is "
                f"{shown!r}, not {DEFAULT_OOV_TOKEN}: not a vocabulary AllenNLP wrote"
            )
        total += size + lines * ENTRY_BYTES
    return total


def _count_lines(path: Path) -> "tuple[int, int, str]":
    """`(lines, bytes, first line)` of a file, streamed."""
    lines = size = 0
    first: Optional[bytes] = None
    head = b""
    last = b"\n"
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(_CHUNK), b""):
            if first is None:
                head += chunk
                if b"\n" in head or len(head) > 4096:
                    first = head.split(b"\n", 1)[0][:4096]
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
    if first is None:
        first = head
    if size and last != b"\n":
        lines += 1
    return lines, size, first.decode("utf-8", "replace")


def read_vocabulary(directory: Path, where: str, budget: Optional[int] = None) -> "tuple[Vocabulary, int]":
    """
    AllenNLP's vocabulary of `directory` and the memory it took, checked first
    (`vocabulary_bytes`): a vocabulary that would take more than `budget` bytes is a
    `ConfigurationError` before any line is read into memory.
    """
    cost = vocabulary_bytes(directory, where)
    if budget is not None and cost > budget:
        sizes: Dict[str, int] = {path.name: path.stat().st_size for path in _namespace_files(directory)}
        largest = max(sizes, key=sizes.get) if sizes else "?"
        raise ConfigurationError(
            f"{where}: reading its vocabulary would take about {cost:,} bytes, more than the "
            f"{budget:,} its weights allow (largest namespace file: {largest}, {sizes.get(largest, 0):,} "
            "bytes); refused before reading it"
        )
    return Vocabulary.from_files(str(directory)), cost
