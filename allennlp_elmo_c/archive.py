"""
The one way into a pretrained biLM: everything that uses a trained biLM downstream
(`ElmoCRepresentations`, `elmo_c_token_embedder`, `elmo-c-embed`, the spaCy and Hugging Face
front doors) starts from a `PretrainedBiLM`, read from either form of a trained `elmo_c` model:

- its AllenNLP archive, `model.tar.gz`;
- a model directory (`python -m allennlp_elmo_c package`), the unit of sharing: `config.json`
  (`model_type: "elmo_c"`, the biLM's AllenNLP config under `bilm`, its files by name),
  `model.safetensors`, `vocabulary/`, the fastText `.bin`, `checksums.sha256` and a model card.
  Its files are found in the directory itself, wherever it is copied.

Every model read here may have been received from elsewhere: its config is read as plain JSON
and checked (`common.received_config`) before anything is built, and the model is built within
a memory budget derived from its weights (`common.allocation_budget`).
"""

import copy
import json
import logging
import tarfile
import tempfile
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import parse_overrides, with_overrides
from allennlp.data import DatasetReader, TokenIndexer, Tokenizer, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import (
    CONFIG_NAME,
    META_NAME,
    Archive,
    Meta,
    _check_version_compatibility,
    _load_dataset_readers,
    get_weights_path,
)

from allennlp_elmo_c.common.allocation_budget import allocation_budget, weights_budget
from allennlp_elmo_c.common.contained_files import inside_path, refuse_links
from allennlp_elmo_c.common.fasttext_bin import FastTextBin
from allennlp_elmo_c.common.fasttext_source import (
    BUNDLE_DIR,
    check_fingerprint,
    fasttext_nodes,
    recorded_fasttext_path,
    recorded_fasttext_paths,
    recorded_fingerprint,
    resolve_fasttext_path,
)
from allennlp_elmo_c.common.file_digests import file_sha256
from allennlp_elmo_c.common.received_config import (
    MAX_CONFIG_BYTES,
    check_bilm_config,
    check_directory_config,
    check_received_config,
    drop_training_only,
    named_files,
    parse_received_json,
    read_received_json,
)
from allennlp_elmo_c.common.safe_extract import extracted_archive, read_member

logger = logging.getLogger(__name__)

# A model directory's files.
MODEL_TYPE = "elmo_c"  # its config.json's `model_type` (Hugging Face's `AutoConfig` key too)
DIRECTORY_FORMAT = 1
WEIGHTS_FILE = "model.safetensors"
VOCABULARY_DIR = "vocabulary"
CHECKSUMS_FILE = "checksums.sha256"
MODEL_CARD = "README.md"

# What an AllenNLP model archive is made of (`archive_model`, with a task archive's bundled
# fastText models): the only members extracted from a received one.
ARCHIVE_FILES = frozenset({CONFIG_NAME, META_NAME, "weights.th"})
ARCHIVE_DIRECTORIES = frozenset({VOCABULARY_DIR, BUNDLE_DIR})


def is_model_archive_member(name: str) -> bool:
    """Whether the member `name` (without `./`) of a model archive is one a loader reads: its
    config, weights and meta files, and the files directly in `vocabulary/` and `fasttext/`."""
    parts = name.split("/")
    return name in ARCHIVE_FILES or (parts[0] in ARCHIVE_DIRECTORIES and len(parts) <= 2)


if TYPE_CHECKING:  # a layer above this one
    from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel


def is_model_directory(path: str) -> bool:
    """Whether `path` is a model directory (its config.json says `model_type: "elmo_c"`)."""
    config = Path(path) / CONFIG_NAME
    if not Path(path).is_dir() or not config.is_file():
        return False
    try:
        return read_received_json(config, str(config)).get("model_type") == MODEL_TYPE
    except (ConfigurationError, AttributeError):
        return False


def read_directory_config(directory: str) -> Dict[str, Any]:
    """
    A model directory's config.json, with the file names of its biLM config (the fastText
    `.bin`, a BPE tokenizer) made absolute paths into the directory, so the directory works
    wherever it is.
    """
    verify_checksums(Path(directory))
    where = f"model directory {directory}: {CONFIG_NAME}"
    config = read_received_json(Path(directory) / CONFIG_NAME, where)
    if not isinstance(config, dict) or config.get("model_type") != MODEL_TYPE:
        raise ConfigurationError(f"{directory} is not an ELMo-C model directory (no model_type "
                                 f"{MODEL_TYPE!r} in its {CONFIG_NAME})")  # fmt: skip
    if config.get("elmo_c_format", 0) > DIRECTORY_FORMAT:
        raise ConfigurationError(
            f"model directory {directory} has format {config['elmo_c_format']}; this version of "
            f"allennlp-elmo-c reads up to {DIRECTORY_FORMAT}: upgrade allennlp-elmo-c"
        )
    check_directory_config(config, where)
    bilm = config.get("bilm")
    _check_config(bilm, directory, where, prefix="bilm.", in_directory=True)
    files = config.get("files", {})
    if not isinstance(files, dict):
        raise ConfigurationError(f"model directory {directory}: `files` in {CONFIG_NAME} is not a mapping")
    for kind, name in files.items():
        inside_path(directory, name, f"`files.{kind}` of {CONFIG_NAME}")
        _replace_values(bilm, name, str(Path(directory).resolve() / name))
    _check_named_files(Path(directory), config, bilm)
    return config


def _check_named_files(root: Path, config: Dict[str, Any], bilm: Dict[str, Any]) -> None:
    """The files a model directory's config names (`fasttext.file`, and every file-naming key of
    its biLM, `received_config.FILE_KEYS`: fastText, tokenizer, char-CNN options and weights) are
    its own: inside it by a plain name, through no link (`inside_path`). Each biLM value is made
    the path into the directory (a relative name is never read from the working directory). The
    vocabulary must be a real directory."""
    fasttext = config.get("fasttext")
    if isinstance(fasttext, dict) and "file" in fasttext:
        inside_path(root, fasttext["file"], f"`fasttext.file` of {CONFIG_NAME}")
    inside = root.resolve()
    for key, node, name in named_files(bilm):
        value = node[name]
        if value is None:
            continue
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).is_relative_to(inside):
            value = Path(value).relative_to(inside).as_posix()  # a `files` name, made a path above
        node[name] = str(inside_path(inside, value, f"`bilm.{key}` of {CONFIG_NAME}"))
    check_vocabulary_directory(root, str(root))


def check_vocabulary_directory(root: Path, source: str) -> None:
    """A received model's `vocabulary` must be a real directory (AllenNLP would extract a file
    there as an archive, into its cache)."""
    vocabulary = inside_path(root, VOCABULARY_DIR, "vocabulary")
    if not vocabulary.is_dir():
        raise ConfigurationError(
            f"{source}: `{VOCABULARY_DIR}` must be a real directory (of the vocabulary's .txt "
            "files); an archive or other file there is not read"
        )


def _replace_values(node: Any, old: str, new: str) -> None:
    """Replaces, in place, every string value `old` of a nested config by `new`."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in list(items):
        if value == old:
            node[key] = new
        else:
            _replace_values(value, old, new)


def read_archive_config(archive_file: str) -> Dict[str, Any]:
    """
    The biLM's AllenNLP config, from an archive (its config.json, read without loading any
    weights: AllenNLP writes it first, so reading stops there, `safe_extract.read_member`) or a
    model directory (`read_directory_config`'s `bilm`).
    """
    if Path(archive_file).is_dir():
        return read_directory_config(archive_file)["bilm"]
    try:
        data = read_member(archive_file, CONFIG_NAME, MAX_CONFIG_BYTES)
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise unreadable_archive(archive_file, error) from error
    config = None if data is None else parse_received_json(data, f"{archive_file}: {CONFIG_NAME}")
    _check_config(config, archive_file)
    return config  # type: ignore[return-value]


# elmo_lstm's defaults for the sizes a config may leave out
# (allennlp_elmo_c/modules/seq2seq_encoders/elmo_lstm.py).
ELMO_LSTM_DEFAULTS = {"projection_size": 512, "cell_size": 4096, "num_layers": 2}


def contextualizer_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """The biLM's contextualizer settings from an archive's config, with elmo_lstm's defaults."""
    return {**ELMO_LSTM_DEFAULTS, **config["model"].get("contextualizer", {})}


def representation_dim(config: Dict[str, Any]) -> int:
    """The size of each layer the biLM gives downstream: 2 x its projection (one per
    direction); what the downstream configs call `ELMO_C_DIM`."""
    return 2 * int(contextualizer_config(config)["projection_size"])


def input_embedder_config(config: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
    """The key and config of the biLM's (first) input token embedder."""
    embedders = config["model"].get("text_field_embedder", {}).get("token_embedders", {})
    return next(iter(embedders.items()), (None, {}))


def is_subword_config(config: Dict[str, Any]) -> bool:
    """True for the config of a biLM pretrained on BPE subwords (its reader has a `bpe`
    tokenizer)."""
    tokenizer = config.get("dataset_reader", {}).get("tokenizer") or {}
    return tokenizer.get("type") == "bpe"


def with_fingerprint(config: Dict[str, Any], fingerprint: int) -> Dict[str, Any]:
    """A copy of `config` whose fastText components all record `fingerprint`."""
    config = copy.deepcopy(config)
    for _, node in fasttext_nodes(config):
        node["fingerprint"] = fingerprint
    return config


def load_model_directory(
    directory: str, overrides: Optional[Dict[str, Any]] = None, cuda_device: int = -1
) -> Archive:
    """
    A model directory as AllenNLP's `load_archive` gives an archive (the `allennlp` commands
    load one this way: `allennlp_elmo_c.training.archive_paths`): the model built from the
    directory's biLM config (with `overrides`), its `model.safetensors` loaded strictly, and the
    readers. Every file of the directory is checked against `checksums.sha256` first
    (`read_directory_config`).
    Weights saved by `ElmoCModel.save_pretrained` (under `bilm.`, without the output heads) load
    too, the model then having no output heads.
    """
    import safetensors.torch

    root = Path(directory)
    config = read_directory_config(directory)["bilm"]
    params = Params(with_overrides(config, overrides or {}))
    vocab = Vocabulary.from_files(str(root / VOCABULARY_DIR))
    try:
        budget = weights_budget(root / WEIGHTS_FILE)
    except (OSError, ValueError, RuntimeError) as error:  # safetensors' errors for bad files
        raise ConfigurationError(f"model directory {directory}: unreadable {WEIGHTS_FILE} ({error})")
    # Sizes the config declares are held to what the weights' header says before they are allocated.
    with allocation_budget(budget, f"model directory {directory}", config):
        model = Model.from_params(vocab=vocab, params=params.duplicate().pop("model"))
    try:
        state = safetensors.torch.load_file(str(root / WEIGHTS_FILE))
    except (OSError, ValueError, RuntimeError) as error:  # safetensors' errors for bad files
        raise ConfigurationError(f"model directory {directory}: unreadable {WEIGHTS_FILE} ({error})")
    if state and all(name.startswith("bilm.") for name in state):  # as ElmoCModel saves them
        state = {name[len("bilm."):]: tensor for name, tensor in state.items()}
    if not any(name.startswith("_heads.") for name in state):
        # Saved without its output heads (by ElmoCModel, which runs only the layers): the
        # representations are complete; what needs the heads (next-word prediction) says so.
        model.delete_softmax()  # type: ignore[operator]
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise _weights_mismatch(error, WEIGHTS_FILE, f"model directory {directory}") from error
    if cuda_device >= 0:
        model.cuda(cuda_device)
    reader = DatasetReader.from_params(params.duplicate().pop("dataset_reader"))
    validation_reader = DatasetReader.from_params(
        params.duplicate().get("validation_dataset_reader", params.get("dataset_reader").duplicate())
    )
    return Archive(model, params, reader, validation_reader, None)


def write_checksums(directory: Path) -> None:
    """`checksums.sha256` for every file of `directory` (sorted, `sha256sum`'s format); a
    directory holding a symbolic link (or other non-regular file) is refused, naming it."""
    lines: List[str] = []
    for name in refuse_links(directory):
        if name == CHECKSUMS_FILE or _is_vocabulary_lock(directory, name):
            continue
        if "\n" in name or "\\" in name:
            raise ConfigurationError(f"{directory}: the file name {name!r} cannot be listed in {CHECKSUMS_FILE}")
        lines.append(f"{file_sha256(directory / name)}  {name}")
    (directory / CHECKSUMS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


# The lock file AllenNLP's `Vocabulary.from_files` creates (empty) in a vocabulary it reads.
VOCABULARY_LOCK = f"{VOCABULARY_DIR}/.lock"
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _is_vocabulary_lock(root: Path, name: str) -> bool:
    """`vocabulary/.lock`, empty: what reading the vocabulary leaves, not part of the model."""
    return name == VOCABULARY_LOCK and (root / name).stat().st_size == 0


def verify_checksums(root: Path) -> List[str]:
    """
    Checks a model directory against its `checksums.sha256` (`sha256sum`'s format): the listing
    names exactly the directory's files (plain relative names, each once; the empty
    `vocabulary/.lock` AllenNLP's reader leaves may be absent from either), the directory holds
    no symbolic link, and every file matches its SHA-256, whatever its size (a file is hashed
    once per process while unchanged: `common.file_digests`). A `ConfigurationError` names the
    first file that fails. Returns the files checked.
    """
    present = set(refuse_links(root, f"model directory {root}"))
    if CHECKSUMS_FILE not in present:
        raise ConfigurationError(f"model directory {root}: {CHECKSUMS_FILE} is missing; package the model again")
    present.discard(CHECKSUMS_FILE)
    listed: Dict[str, str] = {}
    for number, line in enumerate((root / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines(), 1):
        expected, separator, name = line[:64], line[64:66], line[66:]
        if not line.strip():
            continue
        if separator not in ("  ", " *") or len(expected) != 64 or not all(c in "0123456789abcdefABCDEF" for c in expected):
            raise ConfigurationError(
                f"model directory {root}: line {number} of {CHECKSUMS_FILE} is not '<sha256>  <name>'"
            )
        inside_path(root, name, f"the file listed on line {number} of {CHECKSUMS_FILE}")
        if name in listed:
            raise ConfigurationError(f"model directory {root}: {CHECKSUMS_FILE} lists {name} twice")
        listed[name] = expected.lower()
    if VOCABULARY_LOCK in present and VOCABULARY_LOCK not in listed and _is_vocabulary_lock(root, VOCABULARY_LOCK):
        present.discard(VOCABULARY_LOCK)
    if VOCABULARY_LOCK in listed and VOCABULARY_LOCK not in present and listed[VOCABULARY_LOCK] == _EMPTY_SHA256:
        del listed[VOCABULARY_LOCK]
    for name in sorted(listed):
        if name not in present:
            raise ConfigurationError(
                f"model directory {root}: {name}, listed in {CHECKSUMS_FILE}, is missing (or not "
                "a regular file)"
            )
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise ConfigurationError(
            f"model directory {root}: {unlisted[0]} is not listed in {CHECKSUMS_FILE} (a model "
            "directory holds only the files it lists); remove it, or package the model again"
        )
    for name in sorted(listed):
        if file_sha256(root / name) != listed[name]:
            raise ConfigurationError(
                f"model directory {root}: {name} does not match its checksum in {CHECKSUMS_FILE} "
                "(changed or corrupt); package the model again"
            )
    return sorted(listed)


def checked_fasttext(
    config: Dict[str, Any], source: str, fasttext_path: Optional[str] = None
) -> Tuple[str, Optional[int]]:
    """
    The fastText `.bin` of the biLM of `config` (read from `source`), and the fingerprint it was
    checked against: `fasttext_path` if given, else found as `fasttext_source` says (a model
    directory's own file, for a directory). A `.bin` that is not the model the biLM was trained
    with is a `ConfigurationError` naming both. An archive trained before fingerprints were
    recorded is checked against the file it recorded, if that still exists (its fingerprint is
    then returned, to be kept: `record()` carries it into task models, `package` into model
    directories); else a warning says the check could not be made, and the fingerprint is None.
    """
    recorded = recorded_fasttext_path(config, source)
    if recorded is None:
        raise ConfigurationError(f"{source}: the biLM reads no fastText file")
    if fasttext_path is None and Path(source).is_dir():
        fasttext_path = recorded  # a model directory's own .bin, whatever the environment says
    expected = recorded_fingerprint(config, source)
    resolved = resolve_fasttext_path(recorded, source, fasttext_path, expected)
    if expected is None and Path(recorded).is_file():
        expected = FastTextBin.load(recorded).fingerprint
    if expected is None:
        logger.warning(
            "%s was trained before fastText fingerprints were recorded and its .bin %s is not at "
            "its recorded path: that %s is the same model cannot be checked",
            source, recorded, resolved,
        )  # fmt: skip
    else:
        check_fingerprint(resolved, expected, f"{recorded}, recorded in {source}")
    return resolved, expected


def fasttext_overrides(config: Dict[str, Any], new_path: str, archive_file: str) -> Dict[str, str]:
    """
    Overrides that point every fastText path of an archived config (input and target
    embedders, indexers, a fastText-initialised output layer) at `new_path`.
    """
    if recorded_fasttext_path(config, archive_file) is None:
        raise ConfigurationError(f"{archive_file}: the biLM reads no fastText file (fasttext_path)")
    return {path: new_path for path in recorded_fasttext_paths(config)}


class PretrainedBiLM:
    """
    A trained `elmo_c` biLM, read once from its archive, with what downstream code needs of it:
    the model (its contextualizer returns all layers), its single input token embedder and the
    token indexer and tokenizer it was pretrained with, and the pretraining reader's boundary
    tokens. Build it with `from_archive`; `ElmoCRepresentations(bilm=...)` takes it as
    AllenNLP's `Elmo(module=...)` takes a ready biLM.

    # Parameters

    model : `ElmoCLanguageModel`
        The biLM (loaded with `return_all_layers`).
    token_indexers : `Dict[str, TokenIndexer]`
        The pretraining reader's indexers; the one of the input embedder's key is kept.
    tokenizer : `Tokenizer`
        The pretraining reader's tokenizer.
    boundary_tokens : `Tuple[str, str]`
        The pretraining reader's start and end tokens.
    is_subword : `bool`
        Whether the biLM reads BPE subwords (ELMo-Sub) rather than words.
    archive_file : `str`, optional
        Where it was read from (for messages, and for indexers that read the archive).
    config : `Dict[str, Any]`, optional
        The archive's `config.json` as trained (before any load-time override), for `record`.
    """

    def __init__(
        self,
        model: "ElmoCLanguageModel",
        token_indexers: Dict[str, TokenIndexer],
        tokenizer: Tokenizer,
        boundary_tokens: Tuple[str, str],
        is_subword: bool,
        archive_file: Optional[str] = None,
        config: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.archive_file = archive_file or "the biLM"
        self.config = config
        input_embedders = model.input_token_embedders
        if len(input_embedders) != 1:
            raise ConfigurationError(
                f"{self.archive_file}: expected a biLM over one input token embedder, found "
                f"{sorted(input_embedders)}"
            )
        ((self.input_key, self.token_embedder),) = input_embedders.items()
        if self.input_key not in token_indexers:
            raise ConfigurationError(
                f"{self.archive_file}: no token indexer for the input embedder's key "
                f"{self.input_key!r} (the reader has {sorted(token_indexers)})"
            )
        self.model = model
        self.token_indexer = token_indexers[self.input_key]
        self.tokenizer = tokenizer
        self.boundary_tokens = boundary_tokens
        self.is_subword = is_subword

    @classmethod
    def from_archive(
        cls,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """
        Reads `archive_file` (decompressed once): its `config.json` decides the overrides, then
        AllenNLP's `load_archive` builds the model and reader from the same directory.
        Training-time-only settings (the validation candidate word list) are dropped, so an
        archive loads anywhere its weights and fastText file are.

        # Parameters

        archive_file : `str`
            A `model.tar.gz` of an `elmo_c` model, or a model directory.
        fasttext_path : `str`, optional
            The biLM's fastText `.bin` at another path than recorded in the archive (every
            fastText path of the config is replaced). Without it, the `.bin` is the model
            directory's own, or, for an archive, looked for in the environment variable
            `ELMO_C_FASTTEXT`, at the recorded path, then beside the archive
            (`allennlp_elmo_c.common.fasttext_source`). Whichever it is, a `.bin` that is not the
            one the biLM was trained with is a `ConfigurationError`.
        tokenizer_path : `str`, optional
            For a biLM over BPE subwords: its tokenizer JSON at another path than recorded.
        """
        if Path(archive_file).is_dir():
            return cls._from_directory(str(archive_file), fasttext_path, tokenizer_path)
        if not Path(archive_file).is_file():
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        try:
            with extracted_archive(archive_file, wanted=is_model_archive_member) as directory:
                check_vocabulary_directory(Path(directory), archive_file)
                config = _read_config(Path(directory) / CONFIG_NAME, archive_file)
                config, overrides = cls._prepared(config, archive_file, fasttext_path, tokenizer_path)
                archive = load_archive_directory(directory, archive_file, overrides)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise unreadable_archive(archive_file, error) from error
        except ConfigurationError as error:
            if "return_all_layers" in str(error):
                raise ConfigurationError(
                    f"{archive_file}: its contextualizer cannot return all layers (use "
                    "elmo_lstm)"
                ) from error
            raise
        return cls._built(archive.model, archive.dataset_reader, config, archive_file)

    @classmethod
    def _from_directory(
        cls, directory: str, fasttext_path: Optional[str], tokenizer_path: Optional[str]
    ) -> "PretrainedBiLM":
        """A model directory's biLM: its own fastText `.bin` unless `fasttext_path` is given
        (the environment's `ELMO_C_FASTTEXT` is not looked at)."""
        config = read_directory_config(directory)["bilm"]
        config, overrides = cls._prepared(config, directory, fasttext_path, tokenizer_path)
        archive = load_model_directory(directory, overrides)
        return cls._built(archive.model, archive.dataset_reader, config, directory)

    @classmethod
    def _built(
        cls, model: Model, reader: DatasetReader, config: Dict[str, Any], archive_file: str
    ) -> "PretrainedBiLM":
        boundary_tokens = reader.boundary_tokens  # type: ignore[attr-defined]
        if len(boundary_tokens) != 2:
            raise ConfigurationError(f"{archive_file}: expected one start and one end token")
        return cls(
            model,  # type: ignore[arg-type]
            token_indexers=reader.token_indexers,  # type: ignore[attr-defined]
            tokenizer=reader.tokenizer,  # type: ignore[attr-defined]
            boundary_tokens=(boundary_tokens[0], boundary_tokens[1]),
            is_subword=is_subword_config(config),
            archive_file=archive_file,
            config=config,
        )

    def record(self) -> str:
        """
        What is needed to build this biLM again without its archive (its `config.json` and
        vocabulary; not its weights), as one JSON line for `from_record`. A task model that
        contains the biLM's weights in its own state dict keeps it (`elmo_c_token_embedder`
        stores it in the task's vocabulary), so the task archive loads after the biLM archive
        is moved or deleted.
        """
        if self.config is None:
            raise ConfigurationError(f"{self.archive_file}: no config to record (not read from an archive)")
        with tempfile.TemporaryDirectory() as directory:
            self.vocab.save_to_files(directory)
            files = {
                path.name: path.read_text(encoding="utf-8")
                for path in sorted(Path(directory).iterdir())
                if path.suffix == ".txt"
            }
        return json.dumps({"config": self.config, "vocabulary": files}, ensure_ascii=False)

    @classmethod
    def from_record(
        cls,
        record: str,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """
        The biLM of a `record()`, built from its config without weights: its parameters and
        persistent buffers are on the `meta` device (`has_weights` is false), so that running it
        is an error rather than a model with random weights. Only for a module whose state dict
        then brings the trained ones (`ElmoCRepresentations` loads them, with
        `allocate_weights`). The fastText `.bin` is found as for `from_archive` (the archive
        itself is not needed).
        """
        where = f"the biLM record of {archive_file} (kept in the task model's vocabulary)"
        data = parse_received_json(record, where, max_bytes=None)
        if not isinstance(data, dict) or not isinstance(data.get("vocabulary"), dict):
            raise ConfigurationError(f"{where}: not a record of a biLM's config and vocabulary")
        config = data.get("config")
        _check_config(config, archive_file, where)
        config, overrides = cls._prepared(config, archive_file, fasttext_path, tokenizer_path)
        with tempfile.TemporaryDirectory() as directory:
            for name, text in data["vocabulary"].items():
                if not _is_record_file_name(name) or not isinstance(text, str):
                    raise ConfigurationError(
                        f"the biLM record of {archive_file} names the vocabulary file {name!r}; "
                        "a record's vocabulary files are plain '<namespace>.txt' names"
                    )
                (Path(directory) / name).write_text(text, encoding="utf-8")
            vocab = Vocabulary.from_files(directory)
        params = Params(with_overrides(config, overrides))
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        # What a state dict restores goes to meta (a non-persistent buffer, which none restores,
        # keeps the value it was built with).
        restored = {id(tensor) for tensor in model.state_dict(keep_vars=True).values()}
        model._apply(lambda tensor: tensor.to("meta") if id(tensor) in restored else tensor)
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        return cls._built(model, reader, config, archive_file)

    @property
    def has_weights(self) -> bool:
        """False for a biLM built by `from_record` until storage for its weights is allocated
        (`allocate_weights`, just before a state dict brings them): its tensors are then still
        on the `meta` device."""
        return not any(
            tensor.is_meta for tensor in chain(self.model.parameters(), self.model.buffers())
        )

    def allocate_weights(self, device: torch.device) -> None:
        """
        Gives the `meta` tensors of a biLM built by `from_record` storage on `device` (their
        dtypes kept), not initialised: only just before a state dict brings their values.
        (`load_state_dict` without `assign`, as AllenNLP's `load_archive` calls it, copies into
        the existing tensors, and copying into a `meta` tensor silently does nothing.)
        """
        self.model._apply(
            lambda tensor: torch.empty_like(tensor, device=device) if tensor.is_meta else tensor
        )

    @staticmethod
    def _prepared(
        config: Dict[str, Any],
        source: str,
        fasttext_path: Optional[str],
        tokenizer_path: Optional[str],
    ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """
        The config to record (with the fingerprint of the biLM's fastText model) and the
        load-time overrides: all layers returned, the training-only candidate list dropped, every
        fastText path pointed at the `.bin` found (which must be the one the biLM was trained
        with), a BPE tokenizer at `tokenizer_path`.
        """
        subword = is_subword_config(config)
        if subword and fasttext_path is not None:
            raise ConfigurationError(f"{source} is a BPE subword biLM: it reads no fastText")
        if not subword and tokenizer_path is not None:
            raise ConfigurationError(f"{source} is not a BPE subword biLM: no tokenizer_path")
        overrides: Dict[str, Any] = {
            "model.contextualizer.return_all_layers": True,
            # Only used in validation, and the file may not exist where the archive is used.
            "model.nearest_neighbour_words": None,
        }
        recorded = None if subword else recorded_fasttext_path(config, source)
        if recorded is not None:
            resolved, expected = checked_fasttext(config, source, fasttext_path)
            if expected is not None:
                config = with_fingerprint(config, expected)
            overrides.update(fasttext_overrides(config, resolved, source))
        elif fasttext_path is not None:
            raise ConfigurationError(f"{source}: the biLM reads no fastText file (fasttext_path)")
        if tokenizer_path is not None:
            overrides["dataset_reader.tokenizer.tokenizer_path"] = tokenizer_path
        return config, overrides

    @property
    def vocab(self) -> Vocabulary:
        """The biLM's vocabulary (what `token_indexer` indexes with, if it uses one)."""
        return self.model.vocab

    @property
    def num_layers(self) -> int:
        """Number of representation layers: the input projection + the LSTM layers."""
        return self.model.num_layers()

    def get_output_dim(self) -> int:
        """Size of every layer (forward || backward)."""
        return self.model.contextualizer.get_output_dim()

    @property
    def fasttext_path(self) -> Optional[str]:
        """The fastText `.bin` the input embedder reads; `None` for any other input."""
        # The `fasttext` embedder's property (by name: this layer is below the modules).
        path = getattr(self.token_embedder, "model_path", None)
        return path if isinstance(path, str) else None


def _is_record_file_name(name: Any) -> bool:
    """Whether `name` is a vocabulary file name `record()` writes: `<namespace>.txt`, one plain
    name (no directory, no link, not hidden)."""
    return (
        isinstance(name, str)
        and name.endswith(".txt")
        and not name.startswith(".")
        and not any(c in name for c in "/\\\x00")
        and Path(name).name == name
    )


def _read_config(path: Path, archive_file: str) -> Dict[str, Any]:
    config = read_received_json(path, f"{archive_file}: {CONFIG_NAME}")
    _check_config(config, archive_file)
    return config


def _check_config(
    config: Any,
    archive_file: str,
    where: Optional[str] = None,
    prefix: str = "",
    in_directory: bool = False,
) -> None:
    """An `elmo_c` biLM's config, checked as a received one (`check_bilm_config`; `where` names
    the file in messages, `prefix` the key of the config in it)."""
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no model in its config.json")
    model_type = config["model"].get("type")
    if model_type != "elmo_c":
        raise ConfigurationError(f"{archive_file} holds a {model_type} model, not an elmo_c model")
    check_bilm_config(config, where or f"{archive_file}: {CONFIG_NAME}", prefix, in_directory)


def load_archive_directory(
    directory: str,
    source: str,
    overrides: Union[str, Dict[str, Any], None] = None,
    cuda_device: int = -1,
    weights_file: Optional[str] = None,
) -> Archive:
    """
    An extracted archive (or a training run's directory) as AllenNLP's `load_archive` gives it,
    but with its config.json read as plain JSON, never evaluated as jsonnet (no `importstr` of a
    local file, no `std.extVar` of the environment), and checked as a received config
    (`common.received_config`: the biLM allowlist for an `elmo_c` model, the generic refusals for
    any other) before anything is built; its training-only settings dropped
    (`drop_training_only`), then `overrides` (the user's, e.g. `-o` of `allennlp predict`) merged.
    The model is built within a memory budget derived from the size of its weights
    (`common.allocation_budget`). `source` names the archive in messages.
    """
    root = Path(directory)
    where = f"{source}: {CONFIG_NAME}"
    config = read_received_json(root / CONFIG_NAME, where)
    check_received_config(config, where)
    if isinstance(overrides, str):
        overrides = parse_overrides(overrides)
    params = Params(with_overrides(drop_training_only(config), overrides or {}))
    weights = Path(weights_file or get_weights_path(str(root)))
    try:
        budget = weights_budget(weights)
    except (OSError, ValueError, RuntimeError) as error:
        raise ConfigurationError(f"{source}: unreadable weights {weights} ({error})") from error
    dataset_reader, validation_dataset_reader = _load_dataset_readers(params.duplicate(), str(root))
    try:
        with allocation_budget(budget, source, config):
            model = Model.load(
                params.duplicate(), serialization_dir=str(root), weights_file=str(weights), cuda_device=cuda_device
            )
    except RuntimeError as error:
        if "state dict" not in str(error).replace("_", " "):
            raise
        raise _weights_mismatch(error, weights.name, source) from error
    meta = Meta.from_path(str(root / META_NAME)) if (root / META_NAME).is_file() else None
    if meta is not None:
        _check_version_compatibility(source, meta)
    return Archive(model, params, dataset_reader, validation_dataset_reader, meta)


def _weights_mismatch(error: RuntimeError, weights_name: str, source: str) -> ConfigurationError:
    """The error for weights (`weights_name` of `source`) whose tensors do not match the model its
    config builds: torch's or AllenNLP's `error` (missing, unexpected or mis-sized tensors)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = "; ".join(lines[1:] or lines)
    if len(detail) > 500:
        detail = detail[:500] + " ..."
    return ConfigurationError(
        f"{source}: {weights_name} does not match the model its config.json describes ({detail}); "
        "the weights and the config must come from the same saved model: package or save it again"
    )


def unreadable_archive(archive_file: str, error: Exception) -> ConfigurationError:
    """The error for an archive that cannot be read (truncated, not a tar.gz, ...)."""
    return ConfigurationError(
        f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
    )
