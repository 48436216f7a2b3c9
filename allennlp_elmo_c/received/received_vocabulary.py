"""
A received model's AllenNLP vocabulary, checked before AllenNLP reads it (whole, into two
dictionaries): its lines counted by streaming (each costs about `ENTRY_BYTES`), held to the
budget, each padded namespace starting with `@@UNKNOWN@@` (AllenNLP asserts it).
"""
import codecs
import copy
import stat
from pathlib import Path
from typing import Any, Dict, List, Optional

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import namespace_match
from allennlp.data import Vocabulary
from allennlp.data.vocabulary import DEFAULT_OOV_TOKEN, NAMESPACE_PADDING_FILE

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.limits import printable, quoted

_CHUNK = 1 << 20


def _namespace_files(directory: Path, where: str = "") -> List[Path]:
    """The namespace files AllenNLP reads: every entry not hidden but the padding file, each a
    regular file; an entry AllenNLP would open that is a directory, a link or anything but a
    regular file (its `.lock` included, which AllenNLP opens for writing) is a
    `ConfigurationError` (`where` names the model)."""
    for name in (".lock", NAMESPACE_PADDING_FILE):
        _check_regular(directory / name, where, missing_ok=True)
    paths = sorted(
        path for path in directory.iterdir()
        if not path.name.startswith(".") and path.name != NAMESPACE_PADDING_FILE
    )
    for path in paths:
        _check_regular(path, where)
    return paths


def _check_regular(path: Path, where: str, missing_ok: bool = False) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    if not stat.S_ISREG(mode):
        kind = (
            "a symbolic link" if stat.S_ISLNK(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "not a file"
        )
        raise ConfigurationError(
            f"{where}: vocabulary/{printable(path.name)} is {kind}, not a vocabulary file; a "
            "vocabulary directory holds the regular .txt files AllenNLP wrote"
        )


def vocabulary_bytes(directory: Path, where: str) -> int:
    """
    The memory reading the vocabulary `directory` takes (its files' bytes plus `ENTRY_BYTES` per
    line), each file streamed once; a padded namespace not starting with `@@UNKNOWN@@` is a
    `ConfigurationError` naming the file (`where` names the model).
    """
    namespace_files = _namespace_files(directory, where)
    patterns_file = directory / NAMESPACE_PADDING_FILE
    patterns: List[str] = []
    if patterns_file.is_file():
        with open(patterns_file, "rb") as stream:
            data = stream.read(limits.MAX_PATTERNS_BYTES + 1)
        if len(data) > limits.MAX_PATTERNS_BYTES:
            raise ConfigurationError(
                f"{where}: {NAMESPACE_PADDING_FILE} is larger than "
                f"{limits.MAX_PATTERNS_BYTES} bytes"
            )
        patterns = [line for line in data.decode("utf-8", "replace").splitlines() if line]
    total = 0
    for path in namespace_files:
        namespace = path.name.replace(".txt", "")
        padded = not any(namespace_match(pattern, namespace) for pattern in patterns)
        lines, size, first = _count_lines(path, where)
        if padded and lines and first != DEFAULT_OOV_TOKEN:
            raise ConfigurationError(
                f"{where}: the vocabulary namespace {printable(path.name)} is padded but its first "
                f"line is {quoted(first, 40)}, not {DEFAULT_OOV_TOKEN}: not a vocabulary "
                "AllenNLP wrote"
            )
        total += size + lines * limits.ENTRY_BYTES
    return total


def _count_lines(path: Path, where: str) -> "tuple[int, int, str]":
    """`(lines, bytes, first line)` of a file, streamed; a file that is not UTF-8 (which
    AllenNLP would fail to read with a `UnicodeDecodeError`) is a `ConfigurationError`."""
    lines = size = 0
    first: Optional[bytes] = None
    head = b""
    last = b"\n"
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(_CHUNK), b""):
            _check_utf8(decoder, chunk, path, where, size)
            if first is None:
                head += chunk
                if b"\n" in head or len(head) > 4096:
                    first = head.split(b"\n", 1)[0][:4096]
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
    _check_utf8(decoder, b"", path, where, size, final=True)
    if first is None:
        first = head
    if size and last != b"\n":
        lines += 1
    return lines, size, first.decode("utf-8", "replace")


def _check_utf8(
    decoder, chunk: bytes, path: Path, where: str, offset: int, final: bool = False
) -> None:
    try:
        decoder.decode(chunk, final=final)
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"{where}: the vocabulary file {printable(path.name)} is not UTF-8 (near byte "
            f"{offset + error.start}); a vocabulary AllenNLP wrote is UTF-8 text"
        ) from None


def read_vocabulary(
    directory: Path,
    where: str,
    budget: Optional[int] = None,
    params: Optional[Dict[str, Any]] = None,
) -> "tuple[Vocabulary, int]":
    """
    AllenNLP's vocabulary of `directory` and the memory it took, checked first
    (`vocabulary_bytes`): a vocabulary that would take more than `budget` bytes is a
    `ConfigurationError` before any line is read into memory. `params` (a config's `vocabulary`)
    chooses, as AllenNLP's `Model.load` reads them, the `Vocabulary` class and its padding and
    OOV tokens.
    """
    cost = vocabulary_bytes(directory, where)
    if budget is not None and cost > budget:
        sizes: Dict[str, int] = {
            path.name: path.stat().st_size for path in _namespace_files(directory, where)
        }
        largest = max(sizes, key=sizes.get) if sizes else "?"
        raise ConfigurationError(
            f"{where}: reading its vocabulary would take about {cost:,} bytes, more than the "
            f"{budget:,} its weights allow (largest namespace file: {largest}, "
            f"{sizes.get(largest, 0):,} bytes); refused before reading it"
        )
    chosen = Params(copy.deepcopy(params or {}))
    kind = chosen.pop_choice("type", Vocabulary.list_available(), default_to_first_choice=True)
    vocabulary_class, _ = Vocabulary.resolve_class_name(kind)
    return (
        vocabulary_class.from_files(
            str(directory), chosen.get("padding_token"), chosen.get("oov_token")
        ),
        cost,
    )
