"""
A model directory's files (`python -m allennlp_elmo_c package`) and its listing,
`checksums.sha256`, written and checked here. It holds exactly: config.json, model.safetensors,
vocabulary/*.txt (and AllenNLP's empty `.lock`), the files its biLM reads (named in `files`, by
kind), checksums.sha256 and README.md; anything else is refused.
"""
import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, List, Set, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.contained_files import inside_path, refuse_links
from allennlp_elmo_c.received.limits import quoted

MODEL_TYPE = "elmo_c"  # its config.json's `model_type` (Hugging Face's `AutoConfig` key too)
DIRECTORY_FORMAT = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCABULARY_DIR = "vocabulary"
CHECKSUMS_FILE = "checksums.sha256"
MODEL_CARD = "README.md"
VOCABULARY_LOCK = f"{VOCABULARY_DIR}/.lock"  # what AllenNLP's `Vocabulary.from_files` creates
FIXED_FILES = (CONFIG_FILE, WEIGHTS_FILE, CHECKSUMS_FILE, MODEL_CARD)
# The keys of config.json `package` writes (beside transformers' own).
CONFIG_KEYS = frozenset({
    "model_type", "architectures", "bilm", "files", "fasttext", "hidden_size", "num_hidden_layers",
    "elmo_c_format", "parameters", "packaged", "training",
})  # fmt: skip
FILE_KINDS = ("fasttext", "tokenizer")  # what `files` may name
# The files Hugging Face's `from_pretrained` loaders read from a directory by name, beside
# config.json and the weights: never a file of a model directory.
HUGGING_FACE_FILES = frozenset({
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "vocab.txt", "merges.txt", "preprocessor_config.json", "processor_config.json",
    "generation_config.json", "pytorch_model.bin", "tf_model.h5", "flax_model.msgpack",
    "model.safetensors.index.json", "pytorch_model.bin.index.json", "adapter_config.json",
    "chat_template.json",
})  # fmt: skip
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_HEX = re.compile(r"[0-9a-fA-F]{64}")
_DIGESTS: Dict[Tuple[int, ...], str] = {}  # by (device, inode, size, mtime, ctime) of the file
_CHUNK = 1 << 22


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of the regular file `path` (not through a link), once per process while
    the file is unchanged."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        before = os.fstat(descriptor)
        if not stat.S_ISREG(before.st_mode):
            raise ConfigurationError(f"{path} is not a regular file")
        key = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns)
        if key not in _DIGESTS:
            digest = hashlib.sha256()
            with os.fdopen(os.dup(descriptor), "rb") as stream:
                for chunk in iter(lambda: stream.read(_CHUNK), b""):
                    digest.update(chunk)
            after = os.fstat(descriptor)
            if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != key[2:]:
                return digest.hexdigest()
            _DIGESTS[key] = digest.hexdigest()
        return _DIGESTS[key]
    finally:
        os.close(descriptor)


def write_checksums(directory: Path) -> None:
    """`checksums.sha256` for every file of `directory` (`sha256sum`'s format)."""
    lines: List[str] = []
    for name in refuse_links(directory):
        if name == CHECKSUMS_FILE or _is_empty_lock(directory, name):
            continue
        if "\n" in name or "\\" in name:
            raise ConfigurationError(f"{directory}: the file name {name!r} cannot be listed in "
                                     f"{CHECKSUMS_FILE}")  # fmt: skip
        lines.append(f"{file_sha256(directory / name)}  {name}")
    (directory / CHECKSUMS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _is_empty_lock(root: Path, name: str) -> bool:
    return name == VOCABULARY_LOCK and (root / name).stat().st_size == 0


def _shown(name: str) -> str:
    return name if name.isprintable() and name == name.strip() else quoted(name)


def _refused(root: Path, what: str) -> ConfigurationError:
    return ConfigurationError(f"model directory {root}: {what}")


def read_listing(root: Path) -> Tuple[Dict[str, str], Set[str]]:
    """`({name: digest}, files present)` of a model directory whose `checksums.sha256` lists
    exactly its files (its empty `vocabulary/.lock` may be absent from either) and no link."""
    present = set(refuse_links(root, f"model directory {root}"))
    if CHECKSUMS_FILE not in present:
        raise _refused(root, f"{CHECKSUMS_FILE} is missing; package the model again")
    present.discard(CHECKSUMS_FILE)
    listed: Dict[str, str] = {}
    lines = (root / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        expected, separator, name = line[:64], line[64:66], line[66:]
        if separator not in ("  ", " *") or not _HEX.fullmatch(expected):
            raise _refused(root, f"line {number} of {CHECKSUMS_FILE} is not '<sha256>  <name>'")
        while name.startswith("./"):  # what `find . -type f -exec sha256sum {} +` writes
            name = name[2:]
        inside_path(root, name, f"the file listed on line {number} of {CHECKSUMS_FILE}")
        if name == CHECKSUMS_FILE or name in listed:
            raise _refused(root, f"{CHECKSUMS_FILE} lists {_shown(name)} twice or itself")
        listed[name] = expected.lower()
    lock = VOCABULARY_LOCK
    if lock in present and lock not in listed and _is_empty_lock(root, lock):
        present.discard(lock)
    if lock not in present and listed.get(lock) == _EMPTY_SHA256:
        del listed[lock]
    for name in sorted(set(listed) - present):
        similar = [f" (the directory has {_shown(file)}: the names differ in spaces)"
                   for file in present if file.strip() == name.strip()]  # fmt: skip
        raise _refused(root, f"{_shown(name)}, listed in {CHECKSUMS_FILE}, is missing (or not a "
                       f"regular file){''.join(similar[:1])}")  # fmt: skip
    for name in sorted(present - set(listed)):
        raise _refused(root, f"{_shown(name)} is not listed in {CHECKSUMS_FILE} (a model "
                       "directory holds only the files it lists); remove it, or package the "
                       "model again")  # fmt: skip
    return listed, present


def check_digests(root: Path, listed: Dict[str, str], names: Iterable[str]) -> None:
    """Every file of `names` matches its digest in `listed`."""
    for name in names:
        if file_sha256(root / name) != listed[name]:
            raise _refused(root, f"{_shown(name)} does not match its checksum in "
                           f"{CHECKSUMS_FILE} (changed or corrupt); package the model again")


def check_directory_files(
    root: Path, present: Iterable[str], files: Dict[str, object], named: Iterable[str]
) -> None:
    """The files `present` are what `package` writes: the fixed ones, `vocabulary/*.txt` and the
    files its biLM reads (`named`), each listed in config.json's `files` (kind -> name) under one
    of `FILE_KINDS`; no directory but `vocabulary/`, no name Hugging Face's loaders read."""
    named = set(named)
    for kind, name in files.items():
        entry = f"`files.{_shown(kind)}` of {CONFIG_FILE}"
        inside_path(root, name, entry)
        if kind not in FILE_KINDS:
            raise _refused(root, f"{entry} is not a kind of file a model directory holds "
                           f"(`package` writes {', '.join(FILE_KINDS)}); remove it, or package "
                           "the model again")  # fmt: skip
        if os.path.normpath(str(name)) not in {os.path.normpath(n) for n in named}:
            raise _refused(root, f"{entry} names {_shown(name)}, which its biLM does not "
                           "read (`files` names only the biLM's own files); package the model "
                           "again")  # fmt: skip
    for path in sorted(root.rglob("*")):  # no link: `refuse_links` refused them
        if path.is_dir() and path.relative_to(root).as_posix() != VOCABULARY_DIR:
            raise _refused(root, f"{_shown(path.relative_to(root).as_posix())} is a "
                           f"directory; a model directory holds no directory but {VOCABULARY_DIR}/")
    for name in sorted(named & HUGGING_FACE_FILES):
        raise _refused(root, f"its biLM reads {_shown(name)}, a name Hugging Face's loaders "
                       "read from a directory (`AutoTokenizer` before any check); `package` "
                       "never writes it: package the model again")  # fmt: skip
    for name in sorted(present):
        parts = PurePosixPath(name).parts
        vocabulary = len(parts) == 2 and parts[0] == VOCABULARY_DIR and parts[1].endswith(".txt")
        if name in FIXED_FILES or name == VOCABULARY_LOCK or name in named or (
            vocabulary and not parts[1].startswith(".")
        ):
            continue
        raise _refused(root, f"{_shown(name)} is not a file a model directory holds (`package` "
                       f"writes {', '.join(FIXED_FILES)}, {VOCABULARY_DIR}/*.txt and the files its "
                       "config.json names); a received directory holding others is refused: "
                       "remove it, or package the model again")  # fmt: skip


def verify_checksums(root: Path) -> List[str]:
    """`read_listing` and `check_digests` of every file listed; returns the files checked."""
    listed, _ = read_listing(root)
    check_digests(root, listed, sorted(listed))
    return sorted(listed)
