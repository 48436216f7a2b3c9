"""
A received model's AllenNLP vocabulary, checked before AllenNLP reads it (whole, into two
dictionaries): regular UTF-8 files, each padded namespace starting with `@@UNKNOWN@@` (AllenNLP
asserts it), their lines counted by streaming (each costs `ENTRY_BYTES`) and held to the budget.
"""
import copy
import stat
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import namespace_match
from allennlp.data import Vocabulary
from allennlp.data.vocabulary import DEFAULT_OOV_TOKEN, NAMESPACE_PADDING_FILE

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.limits import printable, quoted

_CHUNK = 1 << 20


def _namespace_files(directory: Path, where: str) -> List[Path]:
    """The namespace files AllenNLP reads (every entry not hidden but the padding file); each of
    them, the padding file and `.lock` (which AllenNLP opens for writing) a regular file."""
    paths = sorted(path for path in directory.iterdir() if not path.name.startswith("."))
    for path in paths + [directory / ".lock"]:
        if not path.exists() and not path.is_symlink() and path.name == ".lock":
            continue
        mode = path.lstat().st_mode
        if not stat.S_ISREG(mode):
            kind = {stat.S_IFLNK: "a symbolic link", stat.S_IFDIR: "a directory"}.get(
                stat.S_IFMT(mode), "not a file"
            )
            raise ConfigurationError(
                f"{where}: vocabulary/{printable(path.name)} is {kind}, not a vocabulary file; a "
                "vocabulary directory holds the regular .txt files AllenNLP wrote"
            )
    return [path for path in paths if path.name != NAMESPACE_PADDING_FILE]


def _count_lines(path: Path, where: str) -> Tuple[int, str]:
    """`(lines, first line)` of a UTF-8 file (AllenNLP would fail on another), streamed."""
    lines, first, last, offset = 0, None, "\n", 0
    with open(path, encoding="utf-8", newline="") as stream:
        try:
            for chunk in iter(lambda: stream.read(_CHUNK), ""):
                first = chunk.split("\n", 1)[0][:4096] if first is None else first
                lines += chunk.count("\n")
                last, offset = chunk[-1], offset + len(chunk)
        except UnicodeDecodeError:
            raise ConfigurationError(
                f"{where}: the vocabulary file {printable(path.name)} is not UTF-8 (near character "
                f"{offset}); a vocabulary AllenNLP wrote is UTF-8 text"
            ) from None
    return lines + (last != "\n"), first or ""


def vocabulary_bytes(directory: Path, where: str) -> int:
    """The memory reading the vocabulary `directory` takes (its files' bytes plus `ENTRY_BYTES`
    per line); a padded namespace not starting with `@@UNKNOWN@@` is refused."""
    namespace_files = _namespace_files(directory, where)
    patterns: List[str] = []
    if (directory / NAMESPACE_PADDING_FILE).is_file():
        with open(directory / NAMESPACE_PADDING_FILE, "rb") as stream:
            data = stream.read(limits.MAX_PATTERNS_BYTES + 1)
        if len(data) > limits.MAX_PATTERNS_BYTES:
            raise ConfigurationError(f"{where}: {NAMESPACE_PADDING_FILE} is larger than "
                                     f"{limits.MAX_PATTERNS_BYTES} bytes")  # fmt: skip
        patterns = [line for line in data.decode("utf-8", "replace").splitlines() if line]
    total = 0
    for path in namespace_files:
        namespace = path.name.replace(".txt", "")
        padded = not any(namespace_match(pattern, namespace) for pattern in patterns)
        lines, first = _count_lines(path, where)
        if padded and lines and first != DEFAULT_OOV_TOKEN:
            raise ConfigurationError(
                f"{where}: the vocabulary namespace {printable(path.name)} is padded but its first "
                f"line is {quoted(first, 40)}, not {DEFAULT_OOV_TOKEN}: not a vocabulary "
                "AllenNLP wrote"
            )
        total += path.stat().st_size + lines * limits.ENTRY_BYTES
    return total


def read_vocabulary(
    directory: Path, where: str, budget: Optional[int] = None,
    params: Optional[Dict[str, Any]] = None,
) -> Tuple[Vocabulary, int]:  # fmt: skip
    """AllenNLP's vocabulary of `directory` and the memory it took, refused before any line is
    read into memory if it would take more than `budget` bytes. `params` (a config's
    `vocabulary`) chooses, as `Model.load` reads them, the class and its padding and OOV tokens."""
    cost = vocabulary_bytes(directory, where)
    if budget is not None and cost > budget:
        largest = max(_namespace_files(directory, where), key=lambda path: path.stat().st_size)
        raise ConfigurationError(
            f"{where}: reading its vocabulary would take about {cost:,} bytes, more than the "
            f"{budget:,} its weights allow (largest namespace file: {largest.name}, "
            f"{largest.stat().st_size:,} bytes); refused before reading it"
        )
    chosen = Params(copy.deepcopy(params or {}))
    kind = chosen.pop_choice("type", Vocabulary.list_available(), default_to_first_choice=True)
    vocabulary_class, _ = Vocabulary.resolve_class_name(kind)
    vocabulary = vocabulary_class.from_files(
        str(directory), chosen.get("padding_token"), chosen.get("oov_token")
    )
    return vocabulary, cost
