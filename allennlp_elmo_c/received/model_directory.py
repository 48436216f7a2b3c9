"""
A model directory's files (`python -m allennlp_elmo_c package`) and its listing,
`checksums.sha256`, written and checked here. It holds exactly: config.json, model.safetensors,
vocabulary/*.txt (and AllenNLP's empty `.lock`), the files its biLM reads (named in `files`, by
kind), checksums.sha256 and README.md. Anything else (a subdirectory, a `tokenizer_config.json`,
a file its biLM does not read, one under a name Hugging Face's loaders read) is refused.
"""
import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, List, Set, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.contained_files import inside_path, refuse_links

MODEL_TYPE = "elmo_c"  # its config.json's `model_type` (Hugging Face's `AutoConfig` key too)
DIRECTORY_FORMAT = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCABULARY_DIR = "vocabulary"
CHECKSUMS_FILE = "checksums.sha256"
MODEL_CARD = "README.md"
# The lock file AllenNLP's `Vocabulary.from_files` creates (empty) in a vocabulary it reads.
VOCABULARY_LOCK = f"{VOCABULARY_DIR}/.lock"
# The files of every model directory (beside the vocabulary and the files `files` names).
FIXED_FILES = (CONFIG_FILE, WEIGHTS_FILE, CHECKSUMS_FILE, MODEL_CARD)
# The keys of config.json `package` writes (beside transformers' own).
CONFIG_KEYS = frozenset({
    "model_type", "architectures", "bilm", "files", "fasttext", "hidden_size", "num_hidden_layers",
    "elmo_c_format", "parameters", "packaged", "training",
})  # fmt: skip
# The kinds of file `files` may name (what `package` copies beside the weights).
FILE_KINDS = ("fasttext", "tokenizer")
# The files Hugging Face's `from_pretrained` loaders read from a directory by name, beside
# config.json and the weights: never a file of a model directory.
HUGGING_FACE_FILES = frozenset({
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "vocab.txt", "merges.txt", "preprocessor_config.json", "processor_config.json",
    "generation_config.json", "pytorch_model.bin", "tf_model.h5", "flax_model.msgpack",
    "model.safetensors.index.json", "pytorch_model.bin.index.json", "adapter_config.json",
    "chat_template.json",
})  # fmt: skip
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
_HEX = re.compile(r"[0-9a-fA-F]{64}")

PathOrStr = Union[str, "os.PathLike[str]"]
# Digests computed, by (device, inode, size, modification and change times) of the file.
_DIGESTS: Dict[Tuple[int, int, int, int, int], str] = {}
_CHUNK = 1 << 22


def file_sha256(path: PathOrStr) -> str:
    """The SHA-256 (hex) of the regular file `path` (not through a link), once per process while
    the file is unchanged."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        before = os.fstat(descriptor)
        if not stat.S_ISREG(before.st_mode):
            raise ConfigurationError(f"{path} is not a regular file")
        key = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns)
        if key in _DIGESTS:
            return _DIGESTS[key]
        digest = hashlib.sha256()
        with os.fdopen(os.dup(descriptor), "rb") as stream:
            for chunk in iter(lambda: stream.read(_CHUNK), b""):
                digest.update(chunk)
        after = os.fstat(descriptor)
        if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == key[2:]:
            _DIGESTS[key] = digest.hexdigest()
        return digest.hexdigest()
    finally:
        os.close(descriptor)


def write_checksums(directory: Path) -> None:
    """`checksums.sha256` for every file of `directory` (`sha256sum`'s format)."""
    lines: List[str] = []
    for name in refuse_links(directory):
        if name == CHECKSUMS_FILE or is_vocabulary_lock(directory, name):
            continue
        if "\n" in name or "\\" in name:
            raise ConfigurationError(
                f"{directory}: the file name {name!r} cannot be listed in {CHECKSUMS_FILE}"
            )
        lines.append(f"{file_sha256(directory / name)}  {name}")
    (directory / CHECKSUMS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


def is_vocabulary_lock(root: Path, name: str) -> bool:
    return name == VOCABULARY_LOCK and (root / name).stat().st_size == 0


def _shown(name: str) -> str:
    if len(name) > 120:
        return f"{name[:120]!r}... ({len(name)} characters)"
    return name if name.isprintable() and name == name.strip() else repr(name)


def read_listing(root: Path) -> Tuple[Dict[str, str], Set[str]]:
    """`({name: digest}, files present)` of a model directory whose `checksums.sha256` lists
    exactly its files (its empty `vocabulary/.lock` may be absent from either) and no link; a
    `ConfigurationError` names the first that fails."""
    present = set(refuse_links(root, f"model directory {root}"))
    if CHECKSUMS_FILE not in present:
        raise ConfigurationError(
            f"model directory {root}: {CHECKSUMS_FILE} is missing; package the model again"
        )
    present.discard(CHECKSUMS_FILE)
    listed: Dict[str, str] = {}
    for number, line in enumerate(
        (root / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines(), 1
    ):
        if not line.strip():
            continue
        expected, separator, name = line[:64], line[64:66], line[66:]
        if separator not in ("  ", " *") or not _HEX.fullmatch(expected):
            raise ConfigurationError(
                f"model directory {root}: line {number} of {CHECKSUMS_FILE} is not "
                "'<sha256>  <name>'"
            )
        while name.startswith("./"):  # what `find . -type f -exec sha256sum {} +` writes
            name = name[2:]
        inside_path(root, name, f"the file listed on line {number} of {CHECKSUMS_FILE}")
        if name == CHECKSUMS_FILE:
            raise ConfigurationError(
                f"model directory {root}: line {number} of {CHECKSUMS_FILE} lists {CHECKSUMS_FILE} "
                "itself, whose digest it cannot hold; remove that line"
            )
        if name in listed:
            raise ConfigurationError(
                f"model directory {root}: {CHECKSUMS_FILE} lists {_shown(name)} twice"
            )
        listed[name] = expected.lower()
    if (
        VOCABULARY_LOCK in present
        and VOCABULARY_LOCK not in listed
        and is_vocabulary_lock(root, VOCABULARY_LOCK)
    ):
        present.discard(VOCABULARY_LOCK)
    if (
        VOCABULARY_LOCK in listed
        and VOCABULARY_LOCK not in present
        and listed[VOCABULARY_LOCK] == _EMPTY_SHA256
    ):
        del listed[VOCABULARY_LOCK]
    for name in sorted(listed):
        if name not in present:
            similar = [file for file in present if file.strip() == name.strip()]
            hint = (
                f" (the directory has {_shown(similar[0])}: the names differ in spaces)"
                if similar
                else ""
            )
            raise ConfigurationError(
                f"model directory {root}: {_shown(name)}, listed in {CHECKSUMS_FILE}, is "
                f"missing (or not a regular file){hint}"
            )
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise ConfigurationError(
            f"model directory {root}: {_shown(unlisted[0])} is not listed in {CHECKSUMS_FILE} (a "
            "model directory holds only the files it lists); remove it, or package the model again"
        )
    return listed, present


def check_digests(root: Path, listed: Dict[str, str], names: Iterable[str]) -> None:
    """Every file of `names` matches its digest in `listed`."""
    for name in names:
        if file_sha256(root / name) != listed[name]:
            raise ConfigurationError(
                f"model directory {root}: {_shown(name)} does not match its checksum in "
                f"{CHECKSUMS_FILE} (changed or corrupt); package the model again"
            )


def check_directory_files(root: Path, present: Iterable[str], named: Iterable[str]) -> None:
    """The files `present` are what `package` writes: the fixed ones, `vocabulary/*.txt` and
    those its config.json `named`; no directory but `vocabulary/`."""
    named = set(named)
    for path in sorted(root.rglob("*")):  # no link: `refuse_links` refused them
        if path.is_dir() and path.relative_to(root).as_posix() != VOCABULARY_DIR:
            raise ConfigurationError(
                f"model directory {root}: {_shown(path.relative_to(root).as_posix())} is a "
                f"directory; a model directory holds no directory but {VOCABULARY_DIR}/"
            )
    for name in sorted(named & HUGGING_FACE_FILES):
        raise ConfigurationError(
            f"model directory {root}: its biLM reads {_shown(name)}, a name Hugging Face's "
            "loaders read from a directory (`AutoTokenizer` before any check); `package` never "
            "writes it: package the model again"
        )
    for name in sorted(present):
        parts = PurePosixPath(name).parts
        if name in FIXED_FILES or name == VOCABULARY_LOCK or name in named:
            continue
        if (
            len(parts) == 2
            and parts[0] == VOCABULARY_DIR
            and parts[1].endswith(".txt")
            and not parts[1].startswith(".")
        ):
            continue
        raise ConfigurationError(
            f"model directory {root}: {_shown(name)} is not a file a model directory holds "
            f"(`package` writes {', '.join(FIXED_FILES)}, {VOCABULARY_DIR}/*.txt and the files "
            "its config.json names); a received directory holding others is refused: remove it, "
            "or package the model again"
        )


def check_files_list(root: Path, files: Dict[str, object], read: Iterable[str]) -> List[str]:
    """A model directory's `files` (kind -> name): each of `FILE_KINDS`, naming a file its biLM
    reads (`read`). Returns the names."""
    read = {os.path.normpath(name) for name in read}
    for kind, name in files.items():
        entry = f"`files.{_shown(str(kind))}` of {CONFIG_FILE}"
        inside_path(root, name, entry)
        if kind not in FILE_KINDS:
            raise ConfigurationError(
                f"model directory {root}: {entry} is not a kind of file a model directory holds "
                f"(`package` writes {', '.join(FILE_KINDS)}); remove it, or package the model again"
            )
        if os.path.normpath(str(name)) not in read:
            raise ConfigurationError(
                f"model directory {root}: {entry} names {_shown(str(name))}, which its biLM does "
                "not read (`files` names only the biLM's own files); package the model again"
            )
    return [str(name) for name in files.values()]


def verify_checksums(root: Path) -> List[str]:
    """`read_listing` and `check_digests` of every file listed; returns the files checked."""
    listed, _ = read_listing(root)
    check_digests(root, listed, sorted(listed))
    return sorted(listed)
