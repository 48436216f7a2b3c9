"""
The one way into a pretrained biLM: everything that uses a trained biLM downstream
(`ElmoCRepresentations`, `elmo_c_token_embedder`, `elmo-c-embed`, the spaCy and Hugging Face
front doors) starts from a `PretrainedBiLM`, read from either form of a trained `elmo_c` model:

- its AllenNLP archive, `model.tar.gz`;
- a model directory (`python -m allennlp_elmo_c package`), the unit of sharing: `config.json`
  (`model_type: "elmo_c"`, the biLM's AllenNLP config under `bilm`, its files by name),
  `model.safetensors`, `vocabulary/`, the fastText `.bin`, `checksums.sha256` and a model card.
  Its files are found in the directory itself, wherever it is copied.
"""

import copy
import hashlib
import json
import logging
import tarfile
import tempfile
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import with_overrides
from allennlp.data import DatasetReader, TokenIndexer, Tokenizer, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import CONFIG_NAME, Archive, extracted_archive, load_archive

from allennlp_elmo_c.common.fasttext_bin import FastTextBin
from allennlp_elmo_c.common.fasttext_source import (
    check_fingerprint,
    fasttext_nodes,
    recorded_fasttext_path,
    recorded_fasttext_paths,
    recorded_fingerprint,
    resolve_fasttext_path,
)

logger = logging.getLogger(__name__)

# A model directory's files.
MODEL_TYPE = "elmo_c"  # its config.json's `model_type` (Hugging Face's `AutoConfig` key too)
DIRECTORY_FORMAT = 1
WEIGHTS_FILE = "model.safetensors"
VOCABULARY_DIR = "vocabulary"
CHECKSUMS_FILE = "checksums.sha256"
MODEL_CARD = "README.md"

if TYPE_CHECKING:  # a layer above this one
    from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel


def is_model_directory(path: str) -> bool:
    """Whether `path` is a model directory (its config.json says `model_type: "elmo_c"`)."""
    config = Path(path) / CONFIG_NAME
    if not Path(path).is_dir() or not config.is_file():
        return False
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type") == MODEL_TYPE
    except (OSError, ValueError, AttributeError):
        return False


def read_directory_config(directory: str) -> Dict[str, Any]:
    """
    A model directory's config.json, with the file names of its biLM config (the fastText
    `.bin`, a BPE tokenizer) made absolute paths into the directory, so the directory works
    wherever it is.
    """
    path = Path(directory) / CONFIG_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigurationError(f"model directory {directory}: unreadable {CONFIG_NAME} ({error})")
    if not isinstance(config, dict) or config.get("model_type") != MODEL_TYPE:
        raise ConfigurationError(f"{directory} is not an ELMo-C model directory (no model_type "
                                 f"{MODEL_TYPE!r} in its {CONFIG_NAME})")  # fmt: skip
    if config.get("elmo_c_format", 0) > DIRECTORY_FORMAT:
        raise ConfigurationError(
            f"model directory {directory} has format {config['elmo_c_format']}; this version of "
            f"allennlp-elmo-c reads up to {DIRECTORY_FORMAT}: upgrade allennlp-elmo-c"
        )
    bilm = config.get("bilm")
    _check_config(bilm, directory)
    for name in config.get("files", {}).values():
        _replace_values(bilm, name, str(Path(directory).resolve() / name))
    return config


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
    weights: AllenNLP writes it first, so reading stops there; looking it up by name would
    decompress the whole archive) or a model directory (`read_directory_config`'s `bilm`).
    """
    if Path(archive_file).is_dir():
        return read_directory_config(archive_file)["bilm"]
    config = None
    try:
        with tarfile.open(archive_file) as archive:
            for member in archive:
                if member.name == CONFIG_NAME:
                    config = json.load(archive.extractfile(member))  # type: ignore[arg-type]
                    break
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise unreadable_archive(archive_file, error) from error
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_model_directory(
    directory: str, overrides: Optional[Dict[str, Any]] = None, cuda_device: int = -1
) -> Archive:
    """
    A model directory as AllenNLP's `load_archive` gives an archive (the `allennlp` commands
    load one this way: `allennlp_elmo_c.training.archive_paths`): the model built from the
    directory's biLM config (with `overrides`), its `model.safetensors` loaded strictly, and the
    readers. The weights, config and vocabulary are checked against `checksums.sha256` first.
    Weights saved by `ElmoCModel.save_pretrained` (under `bilm.`, without the output heads) load
    too, the model then having no output heads.
    """
    import safetensors.torch

    root = Path(directory)
    config = read_directory_config(directory)["bilm"]
    verify_checksums(root, skip_large=True)
    params = Params(with_overrides(config, overrides or {}))
    vocab = Vocabulary.from_files(str(root / VOCABULARY_DIR))
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
    model.load_state_dict(state, strict=True)
    if cuda_device >= 0:
        model.cuda(cuda_device)
    reader = DatasetReader.from_params(params.duplicate().pop("dataset_reader"))
    validation_reader = DatasetReader.from_params(
        params.duplicate().get("validation_dataset_reader", params.get("dataset_reader").duplicate())
    )
    return Archive(model, params, reader, validation_reader, None)


def write_checksums(directory: Path) -> None:
    """`checksums.sha256` for every file of `directory` (sorted, `sha256sum`'s format)."""
    lines: List[str] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if name != CHECKSUMS_FILE:
            lines.append(f"{file_sha256(path)}  {name}")
    (directory / CHECKSUMS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


# The files up to this size are checked against checksums.sha256 whenever a directory is loaded;
# larger ones (the fastText .bin) are identified by their fingerprint instead (`sha256sum -c
# checksums.sha256` in the directory checks everything).
CHECKED_ON_LOAD_BYTES = 1 << 30


def verify_checksums(root: Path, skip_large: bool = False) -> List[str]:
    """
    Checks the files listed in a model directory's `checksums.sha256` (`sha256sum`'s format);
    a `ConfigurationError` naming the first missing or changed file. With `skip_large`, files
    over 1 GiB are skipped. Returns the files checked.
    """
    listing = root / CHECKSUMS_FILE
    if not listing.is_file():
        raise ConfigurationError(f"model directory {root}: {CHECKSUMS_FILE} is missing")
    checked = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        expected, _, name = line.partition("  ")
        path = root / name
        if not path.is_file():
            raise ConfigurationError(f"model directory {root}: {name} is missing")
        if skip_large and path.stat().st_size > CHECKED_ON_LOAD_BYTES:
            continue
        if file_sha256(path) != expected:
            raise ConfigurationError(
                f"model directory {root}: {name} does not match its checksum in {CHECKSUMS_FILE} "
                "(changed or corrupt); package the model again"
            )
        checked.append(name)
    return checked


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
            with extracted_archive(archive_file) as directory:
                config = _read_config(Path(directory) / CONFIG_NAME, archive_file)
                config, overrides = cls._prepared(config, archive_file, fasttext_path, tokenizer_path)
                archive = load_archive(directory, overrides=overrides)
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
        data = json.loads(record)
        config = data["config"]
        _check_config(config, archive_file)
        config, overrides = cls._prepared(config, archive_file, fasttext_path, tokenizer_path)
        with tempfile.TemporaryDirectory() as directory:
            for name, text in data["vocabulary"].items():
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


def _read_config(path: Path, archive_file: str) -> Dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise unreadable_archive(archive_file, error) from error
    _check_config(config, archive_file)
    return config


def _check_config(config: Any, archive_file: str) -> None:
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no model in its config.json")
    model_type = config["model"].get("type")
    if model_type != "elmo_c":
        raise ConfigurationError(f"{archive_file} holds a {model_type} model, not an elmo_c model")


def unreadable_archive(archive_file: str, error: Exception) -> ConfigurationError:
    """The error for an archive that cannot be read (truncated, not a tar.gz, ...)."""
    return ConfigurationError(
        f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
    )
