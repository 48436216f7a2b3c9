"""
From a received model's files (a model directory or an archive) to a checked description,
`ReceivedModel`: its config, weights' tensors (which give its allocation budget) and, for a biLM,
the load-time overrides that give it its checked fastText `.bin`.
"""
import contextlib
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Meta, _check_version_compatibility

from allennlp_elmo_c.fasttext.fasttext_source import check_fingerprint, resolve_fasttext_path
from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.allocation_budget import budget_of
from allennlp_elmo_c.received.contained_files import inside_path
from allennlp_elmo_c.received.limits import quoted
from allennlp_elmo_c.received.model_directory import (
    CONFIG_FILE,
    DIRECTORY_FORMAT,
    MODEL_TYPE,
    VOCABULARY_DIR,
    WEIGHTS_FILE,
    check_digests,
    check_directory_files,
    read_listing,
)
from allennlp_elmo_c.received.received_config import (
    BiLMConfigParts,
    check_bilm_config,
    check_directory_config,
)
from allennlp_elmo_c.received.received_json import parse_received_json, read_received_json
from allennlp_elmo_c.received.received_weights import Tensor, held_total, weights_table
from allennlp_elmo_c.received.safe_extract import extracted_archive, read_member

ARCHIVE_WEIGHTS = "weights.th"
ARCHIVE_META = "meta.json"
ARCHIVE_FILES = frozenset({CONFIG_FILE, ARCHIVE_META, ARCHIVE_WEIGHTS})
ARCHIVE_DIRECTORIES = frozenset({VOCABULARY_DIR, "fasttext"})
_VERSION = re.compile(r"^\d{1,9}\.\d{1,9}\.[0-9A-Za-z.+\-]{1,40}$")


def read_meta(root: Path, source: str) -> Optional[Meta]:
    """The `meta.json` of the extracted archive `root`, checked and compared with this AllenNLP's
    version as AllenNLP does; `None` if there is none."""
    path = Path(root) / ARCHIVE_META
    if not path.exists() and not path.is_symlink():
        return None
    where = f"{source}: {ARCHIVE_META}"
    data = read_received_json(path, where, limits.MAX_META_BYTES, follow_links=False)
    version = data.get("version") if isinstance(data, dict) else type(data).__name__
    if not isinstance(version, str) or not _VERSION.match(version) or not isinstance(data, dict):
        raise ConfigurationError(
            f"{where}: not AllenNLP's record of its version (an object with a version such as "
            f"'2.10.1'; got {quoted(version, 60)}); remove it, or save the archive again"
        )
    meta = Meta(version=version)
    _check_version_compatibility(source, meta)
    return meta


def is_model_archive_member(name: str) -> bool:
    """Whether the member `name` of a model archive is one a loader reads: its config, weights and
    meta files, and the files directly in `vocabulary/` and `fasttext/`."""
    parts = name.split("/")
    return name in ARCHIVE_FILES or (parts[0] in ARCHIVE_DIRECTORIES and len(parts) <= 2)


@dataclass
class ReceivedModel:
    """A received model, checked (`root`: the directory of its files; `weights`: its tensors;
    `parts`: what checking its config found; `overrides`: a biLM's load-time overrides)."""

    source: str
    root: Path
    is_directory: bool
    config: Dict[str, Any]
    weights_file: Path
    weights: Dict[str, Tensor]
    parts: BiLMConfigParts
    overrides: Dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"model directory {self.source}" if self.is_directory else str(self.source)

    @property
    def budget(self) -> int:
        return budget_of(held_total(self.weights))

    @property
    def vocabulary_directory(self) -> Path:
        return self.root / VOCABULARY_DIR


def read_directory(directory: str, resolve: bool = True) -> Tuple[Dict[str, Any], BiLMConfigParts]:
    """A model directory's config.json, checked with its files, the file names of its biLM made
    paths into the directory (unless not `resolve`); and what checking its biLM found."""
    root = Path(directory)
    listed, present = read_listing(root)
    if CONFIG_FILE not in listed:
        raise ConfigurationError(f"model directory {directory}: {CONFIG_FILE} is missing; "
                                 "package the model again")  # fmt: skip
    check_digests(root, listed, [CONFIG_FILE])
    where = f"model directory {directory}: {CONFIG_FILE}"
    config = read_received_json(root / CONFIG_FILE, where)
    if not isinstance(config, dict) or config.get("model_type") != MODEL_TYPE:
        raise ConfigurationError(f"{directory} is not an ELMo-C model directory (no model_type "
                                 f"{MODEL_TYPE!r} in its {CONFIG_FILE})")  # fmt: skip
    version = config.get("elmo_c_format", 0)
    if not isinstance(version, int) or version > DIRECTORY_FORMAT:
        raise ConfigurationError(
            f"model directory {directory} has format {version!r}; this version of "
            f"allennlp-elmo-c reads up to {DIRECTORY_FORMAT}: upgrade allennlp-elmo-c"
        )
    check_directory_config(config, where)
    files = config.get("files", {})
    if not isinstance(files, dict):
        raise ConfigurationError(f"model directory {directory}: `files` in {CONFIG_FILE} is "
                                 "not a mapping")  # fmt: skip
    check_vocabulary_directory(root, str(root))
    parts = checked_bilm(config.get("bilm"), directory, where, prefix="bilm.", in_directory=True)
    fasttext = config.get("fasttext")
    if isinstance(fasttext, dict) and "file" in fasttext:
        inside_path(root, fasttext["file"], f"`fasttext.file` of {CONFIG_FILE}")
    inside = root.resolve()
    named = []
    for key, node, name in parts.files:  # each a file of the directory, by a plain name
        value = node[name]
        if value is None:
            continue
        if isinstance(value, str) and Path(value).is_relative_to(inside):  # absolute, inside
            value = Path(value).relative_to(inside).as_posix()
        path = inside_path(inside, value, f"`bilm.{key}` of {CONFIG_FILE}")
        if resolve:
            node[name] = str(path)
        named.append(value)
    check_directory_files(root, present, files, named)
    check_digests(root, listed, sorted(set(listed) - {CONFIG_FILE}))
    return config, parts


def check_vocabulary_directory(root: Path, source: str) -> None:
    """`vocabulary` must be a real directory (AllenNLP would extract a file there)."""
    if not inside_path(root, VOCABULARY_DIR, "vocabulary").is_dir():
        raise ConfigurationError(
            f"{source}: `{VOCABULARY_DIR}` must be a real directory (of the vocabulary's .txt "
            "files); an archive or other file there is not read"
        )


def checked_bilm(
    config: Any, source: str, where: Optional[str] = None, prefix: str = "",
    in_directory: bool = False,
) -> BiLMConfigParts:  # fmt: skip
    """An `elmo_c` biLM's config, checked (`check_bilm_config`); what the check found."""
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {source} has no model in its config.json")
    if config["model"].get("type") != "elmo_c":
        raise ConfigurationError(
            f"{source} holds a {config['model'].get('type')} model, not an elmo_c model"
        )
    return check_bilm_config(config, where or f"{source}: {CONFIG_FILE}", prefix, in_directory)


def read_bilm_config(path: str) -> Tuple[Dict[str, Any], BiLMConfigParts]:
    """The biLM's config of a model directory or an archive (not extracted), checked."""
    if Path(path).is_dir():
        config, parts = read_directory(path)
        return config["bilm"], parts
    try:
        data = read_member(path, CONFIG_FILE, limits.MAX_CONFIG_BYTES)
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise unreadable_archive(path, error) from error
    config = None if data is None else parse_received_json(data, f"{path}: {CONFIG_FILE}")
    return config, checked_bilm(config, path)  # type: ignore[return-value]


def unreadable_archive(archive_file: str, error: Exception) -> ConfigurationError:
    return ConfigurationError(f"ELMo-C archive {archive_file} is not a readable model.tar.gz "
                              f"({error})")  # fmt: skip


def is_subword_config(config: Dict[str, Any]) -> bool:
    """Whether a biLM was pretrained on BPE subwords (its reader has a `bpe` tokenizer)."""
    tokenizer = config.get("dataset_reader", {}).get("tokenizer") or {}
    return tokenizer.get("type") == "bpe"


def recorded_fasttext(parts: BiLMConfigParts, source: str) -> Optional[str]:
    """The one fastText path a checked config records; `None` if it reads no fastText."""
    paths = {node[key] for _, node, key in parts.fasttext_keys}
    if len(paths) > 1:
        raise ConfigurationError(f"{source} refers to several fastText files ({sorted(paths)}): "
                                 "fasttext_path cannot say which to replace")  # fmt: skip
    return next(iter(paths), None)


def checked_fasttext_of(
    parts: BiLMConfigParts, source: str, fasttext_path: Optional[str] = None,
    is_directory: bool = False,
) -> Tuple[str, int]:  # fmt: skip
    """The fastText `.bin` of a checked config (`fasttext_path`, else as `fasttext_source` finds
    it; a directory's own) and the fingerprint it recorded and the `.bin` matched."""
    recorded = recorded_fasttext(parts, source)
    if recorded is None:
        raise ConfigurationError(f"{source}: the biLM reads no fastText file")
    if fasttext_path is None and is_directory:
        fasttext_path = recorded  # a model directory's own .bin, whatever the environment says
    values = {node.get("fingerprint") for _, node in parts.fasttext_components}
    if None in values:
        raise ConfigurationError(
            f"{source} records no fastText fingerprint: it was not trained with allennlp_elmo_c "
            "imported; train it again with `--include-package allennlp_elmo_c`"
        )
    if len(values) > 1:
        raise ConfigurationError(f"{source} records several fastText fingerprints {sorted(values)}")
    expected = values.pop()
    resolved = resolve_fasttext_path(recorded, source, fasttext_path, expected)
    check_fingerprint(resolved, expected, f"{recorded}, recorded in {source}")
    return resolved, expected


def prepared(
    config: Dict[str, Any], parts: BiLMConfigParts, source: str, fasttext_path: Optional[str],
    tokenizer_path: Optional[str], is_directory: bool = False,
) -> Dict[str, Any]:  # fmt: skip
    """The load-time overrides of a checked biLM config: all layers, no candidate list, every
    fastText path the checked `.bin` found, a BPE tokenizer at `tokenizer_path`."""
    subword = is_subword_config(config)
    if subword and fasttext_path is not None:
        raise ConfigurationError(f"{source} is a BPE subword biLM: it reads no fastText")
    if not subword and tokenizer_path is not None:
        raise ConfigurationError(f"{source} is not a BPE subword biLM: no tokenizer_path")
    overrides: Dict[str, Any] = {
        "model.contextualizer.return_all_layers": True,
        "model.nearest_neighbour_words": None,
    }
    if not subword and recorded_fasttext(parts, source) is not None:
        resolved, _ = checked_fasttext_of(parts, source, fasttext_path, is_directory)
        overrides.update({path: resolved for path, _, _ in parts.fasttext_keys})
    elif fasttext_path is not None:
        raise ConfigurationError(f"{source}: the biLM reads no fastText file (fasttext_path)")
    if tokenizer_path is not None:
        overrides["dataset_reader.tokenizer.tokenizer_path"] = tokenizer_path
    return overrides


@contextlib.contextmanager
def received_bilm(
    path: str, fasttext_path: Optional[str] = None, tokenizer_path: Optional[str] = None
) -> Iterator[ReceivedModel]:
    """The `ReceivedModel` of a model directory or a biLM archive (extracted while inside)."""
    if Path(path).is_dir():
        config, parts = read_directory(path)
        yield _described(path, Path(path), True, config["bilm"], parts, fasttext_path,
                         tokenizer_path, Path(path) / WEIGHTS_FILE)  # fmt: skip
        return
    if not Path(path).is_file():
        raise ConfigurationError(f"ELMo-C archive {path} does not exist")
    try:
        with extracted_archive(path, wanted=is_model_archive_member) as extracted:
            root = Path(extracted)
            check_vocabulary_directory(root, path)
            config = read_received_json(root / CONFIG_FILE, f"{path}: {CONFIG_FILE}")
            yield _described(path, root, False, config, checked_bilm(config, path), fasttext_path,
                             tokenizer_path, root / ARCHIVE_WEIGHTS)  # fmt: skip
    except (tarfile.TarError, EOFError) as error:
        raise unreadable_archive(path, error) from error


def _described(
    source: str, root: Path, is_directory: bool, config: Dict[str, Any], parts: BiLMConfigParts,
    fasttext_path: Optional[str], tokenizer_path: Optional[str], weights_file: Path,
) -> ReceivedModel:  # fmt: skip
    where = f"{'model directory ' if is_directory else ''}{source}: {weights_file.name}"
    if not weights_file.is_file():
        raise ConfigurationError(f"{where} is missing")
    overrides = prepared(config, parts, source, fasttext_path, tokenizer_path, is_directory)
    table = weights_table(weights_file, where)
    return ReceivedModel(source, root, is_directory, config, weights_file, table, parts, overrides)
