"""
The one way into a pretrained biLM: everything that uses a trained biLM downstream
(`ElmoCRepresentations`, `elmo_c_token_embedder`, `elmo-c-embed`, the spaCy and Hugging Face
front doors) starts from a `PretrainedBiLM`, read from either form of a trained `elmo_c` model:

- its AllenNLP archive, `model.tar.gz`;
- a model directory (`python -m allennlp_elmo_c package`), the unit of sharing: `config.json`
  (`model_type: "elmo_c"`, the biLM's AllenNLP config under `bilm`, its files by name),
  `model.safetensors`, `vocabulary/`, the fastText `.bin`, `checksums.sha256` and a model card
  (`received.model_directory`). Its files are found in the directory itself, wherever it is copied.

Every model read here may have been received from elsewhere. Its files are read and checked in
one pass into a `ReceivedBiLM` (`received.received_model`: the config as plain JSON, checked; files
resolved inside; the fastText `.bin` and its fingerprint; the weights' tensors and what they
hold), and `build_archive` builds from it: first a dry run on the `meta` device, its state dict
compared with the weights, then the model within the budget its weights allow
(`received.allocation_budget`), then its weights. The `allennlp` commands' archives and model
directories (`allennlp_elmo_c.patches.load_archive`) are built by the same `build_archive`.
"""

import json
import logging
import re
import tempfile
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import parse_overrides, remove_keys_from_params, with_overrides
from allennlp.data import DatasetReader, TokenIndexer, Tokenizer, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import (
    CONFIG_NAME,
    Archive,
    _load_dataset_readers,
    get_weights_path,
)

from allennlp_elmo_c.received.allocation_budget import allocation_budget, spend
from allennlp_elmo_c.received.hub_models import check_hub_models
from allennlp_elmo_c.received.model_directory import MODEL_TYPE
from allennlp_elmo_c.received.received_config import (
    REMOVED_ON_LOAD,
    check_bilm_config,
    check_received_config,
    drop_training_only,
    is_bilm_config,
)
from allennlp_elmo_c.received.received_json import parse_received_json, read_received_json
from allennlp_elmo_c.received.received_meta import read_meta
from allennlp_elmo_c.received.received_model import (
    ReceivedModel,
    checked_bilm,
    checked_fasttext_of,
    is_subword_config,
    prepared,
    read_bilm_config,
    read_directory,
    received_bilm,
    unreadable_archive,
)
from allennlp_elmo_c.received.received_vocabulary import ENTRY_BYTES, read_vocabulary
from allennlp_elmo_c.received.received_weights import weights_table
from allennlp_elmo_c.received.shown_text import quoted
from allennlp_elmo_c.received.weights_only import load_weights_only

logger = logging.getLogger(__name__)

# The most vocabulary files a biLM record may hold (a biLM's vocabulary has a few namespaces).
MAX_RECORD_FILES = 64

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
    A model directory's config.json, checked (`received.received_model.read_directory`: its
    listing and files, its config), with the file names of its biLM config (the fastText `.bin`,
    a BPE tokenizer) made absolute paths into the directory, so the directory works wherever it
    is.
    """
    return read_directory(directory)[0]


def read_archive_config(archive_file: str) -> Dict[str, Any]:
    """
    The biLM's AllenNLP config, checked, from an archive (its config.json, read without loading
    any weights) or a model directory (`read_directory_config`'s `bilm`).
    """
    return read_bilm_config(archive_file)[0]


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


def checked_fasttext(
    config: Dict[str, Any], source: str, fasttext_path: Optional[str] = None
) -> Tuple[str, Optional[int]]:
    """
    The fastText `.bin` of the biLM of `config` (read from `source` by `read_archive_config`)
    and the fingerprint it was checked against (`received.received_model.checked_fasttext_of`).
    """
    parts = check_bilm_config(config, f"{source}: {CONFIG_NAME}")
    return checked_fasttext_of(parts, source, fasttext_path, Path(source).is_dir())


def build_archive(
    spec: ReceivedModel, overrides: Dict[str, Any], cuda_device: int = -1
) -> Archive:
    """
    The model a `ReceivedModel` describes, as AllenNLP's `load_archive` gives an archive: its
    config (with `overrides`) built once, its weights loaded strictly, its readers. A biLM is
    built on `meta` within the budget its weights allow (`received.allocation_budget`), checked
    against the weights' names and shapes, then given them (`assign`); a task model is built
    for real within that budget, its Hugging Face models checked first.
    """
    params = Params(with_overrides(drop_training_only(spec.config), overrides))
    vocabulary = params.get("vocabulary", Params({})).as_dict(quiet=True)
    vocab, vocabulary_cost = read_vocabulary(
        spec.vocabulary_directory, spec.where, spec.budget, vocabulary
    )
    model_params = params.get("model").duplicate()
    remove_keys_from_params(model_params, sorted(REMOVED_ON_LOAD))  # the weights bring these
    on_meta = is_bilm_config(spec.config)
    if not on_meta:
        check_hub_models(params.as_dict(quiet=True), spec.source)  # fails fast where unreachable
    limit = spec.budget - vocabulary_cost
    with allocation_budget(limit, spec.where, spec.config, dry=on_meta, sizes=spec.sizes):
        model = Model.from_params(
            vocab=vocab, params=model_params, serialization_dir=str(spec.root)
        )
        model.extend_embedder_vocab()
    tied = _tied_parameters(model)
    if on_meta:
        meta = {name: torch.empty(t.shape, dtype=t.dtype, device="meta")
                for name, t in spec.weights.items()}  # fmt: skip
        _load_weights(model, meta, spec, tied)  # names and shapes, before anything is read
    _load_weights(model, _read_weights(spec), spec, tied)
    unloaded = [name for name, t in chain(model.named_parameters(), model.named_buffers())
                if t.is_meta]  # fmt: skip
    if unloaded:
        raise ConfigurationError(f"{spec.where}: its weights do not restore {unloaded[:5]}")
    if cuda_device >= 0:
        model.cuda(cuda_device)
    reader, validation_reader = _load_dataset_readers(params.duplicate(), str(spec.root))
    meta_file = None if spec.is_directory else read_meta(spec.root, spec.source)
    return Archive(model, params, reader, validation_reader, meta_file)


def _read_weights(spec: ReceivedModel) -> Dict[str, torch.Tensor]:
    """The weights' tensors (whose header `received_weights` checked)."""
    if spec.weights_file.suffix != ".safetensors":
        return load_weights_only(spec.weights_file, map_location="cpu")
    import safetensors.torch

    try:
        return safetensors.torch.load_file(str(spec.weights_file))
    except (OSError, ValueError, RuntimeError) as error:  # safetensors' errors for bad files
        raise ConfigurationError(
            f"{spec.where}: unreadable {spec.weights_file.name} ({error})"
        ) from error


def _load_weights(
    model: Model, state: Dict[str, torch.Tensor], spec: ReceivedModel, tied: List[Tuple[str, str]]
) -> None:
    """`model.load_state_dict(state, strict=True, assign=True)` with the missing tensors a module
    authorizes (as `Model.load`), tied parameters kept tied; a mismatch refused naming the
    weights. A model directory's weights may be `ElmoCModel`'s (under `bilm.`, no output heads)."""
    from allennlp.nn.module import _check_incompatible_keys

    if spec.is_directory:
        if state and all(name.startswith("bilm.") for name in state):  # as ElmoCModel saves them
            state = {name[len("bilm.") :]: tensor for name, tensor in state.items()}
        if not any(name.startswith("_heads.") for name in state):
            model.delete_softmax()  # type: ignore[operator]
    try:
        missing, unexpected = torch.nn.Module.load_state_dict(
            model, state, strict=False, assign=True
        )
        missing, unexpected = model._post_load_state_dict(missing, unexpected)
        missing = [key for key in missing if not _authorized(model, key)]
        _check_incompatible_keys(model, missing, unexpected, True)
    except RuntimeError as error:
        raise _weights_mismatch(error, spec.weights_file.name, spec.where) from error
    for alias, name in tied:
        module, _, attribute = alias.rpartition(".")
        try:
            setattr(model.get_submodule(module), attribute, model.get_parameter(name))
        except AttributeError:  # one of them was dropped (the output heads)
            pass


def _tied_parameters(model: Model) -> List[Tuple[str, str]]:
    """`(alias, name)` of each parameter that is another's (a tied output embedding)."""
    first: Dict[int, str] = {}
    tied = []
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) in first:
            tied.append((name, first[id(parameter)]))
        first.setdefault(id(parameter), name)
    return tied


def _authorized(model: Model, key: str) -> bool:
    """Whether a module of `model` authorizes `key` (a state-dict key relative to `model`) to be
    missing: it matches one of the module's `authorized_missing_keys` patterns."""
    for prefix, module in model.named_modules():
        head = f"{prefix}." if prefix else ""
        patterns = getattr(type(module), "authorized_missing_keys", None) or []
        if key.startswith(head) and any(re.search(p, key[len(head) :]) for p in patterns):
            return True
    return False


def load_model_directory(
    directory: str, overrides: Optional[Dict[str, Any]] = None, cuda_device: int = -1
) -> Archive:
    """
    A model directory as AllenNLP's `load_archive` gives an archive (the `allennlp` commands
    load one this way: `allennlp_elmo_c.patches.load_archive`): `build_archive` of its
    `ReceivedBiLM`, with `overrides` (the user's, e.g. `-o` of `allennlp predict`).
    """
    with received_bilm(directory) as spec:
        return build_archive(spec, overrides or {}, cuda_device)


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
            (`allennlp_elmo_c.fasttext.fasttext_source`). Whichever it is, a `.bin` that is not the
            one the biLM was trained with is a `ConfigurationError`.
        tokenizer_path : `str`, optional
            For a biLM over BPE subwords: its tokenizer JSON at another path than recorded.
        """
        try:
            with received_bilm(str(archive_file), fasttext_path, tokenizer_path) as spec:
                archive = build_archive(spec, spec.overrides)
        except OSError as error:
            raise unreadable_archive(str(archive_file), error) from error
        except ConfigurationError as error:
            if "return_all_layers" in str(error):
                raise ConfigurationError(
                    f"{archive_file}: its contextualizer cannot return all layers (use elmo_lstm)"
                ) from error
            raise
        return cls._built(archive.model, archive.dataset_reader, spec.config, str(archive_file))

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
            raise ConfigurationError(
                f"{self.archive_file}: no config to record (not read from an archive)"
            )
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
        parts = checked_bilm(config, archive_file, where)
        config, _, overrides, _ = prepared(
            config, parts, archive_file, fasttext_path, tokenizer_path
        )
        files = _record_files(data["vocabulary"], archive_file, where)
        with tempfile.TemporaryDirectory() as directory:
            for name, text in files.items():
                (Path(directory) / name).write_text(text, encoding="utf-8")
            vocab, _ = read_vocabulary(Path(directory), where)
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


def _record_files(files: Dict[Any, Any], archive_file: str, where: str) -> Dict[str, str]:
    """
    The vocabulary files of a biLM record (`where`, of `archive_file`), checked before any is
    written: plain `<namespace>.txt` names of text, at most `MAX_RECORD_FILES` of them (the
    namespaces of a biLM are a handful), and the memory reading them will take (their bytes and
    `ENTRY_BYTES` per line, as `received_vocabulary` counts it) spent from the budget being
    enforced (`received.allocation_budget`: the task model's, while it is loaded).
    """
    if len(files) > MAX_RECORD_FILES:
        raise ConfigurationError(
            f"{where}: its vocabulary has {len(files):,} files, more than the {MAX_RECORD_FILES} "
            "namespaces a biLM's vocabulary has; refused before writing any"
        )
    for name, text in files.items():
        if not _is_record_file_name(name) or not isinstance(text, str):
            raise ConfigurationError(
                f"the biLM record of {archive_file} names the vocabulary file "
                f"{quoted(name)}; a record's vocabulary files are plain '<namespace>.txt' "
                "names of text"
            )
    cost = sum(
        len(text.encode("utf-8")) + (text.count("\n") + 1) * ENTRY_BYTES for text in files.values()
    )
    spend(cost, f"the vocabulary of {where}")
    return files


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
    (`received.received_config`: the biLM allowlist for an `elmo_c` model, the generic refusals for
    any other) before anything is built; then `build_archive` with `overrides` (the user's, e.g.
    `-o` of `allennlp predict`). `source` names the archive in messages.
    """
    root = Path(directory)
    where = f"{source}: {CONFIG_NAME}"
    config = read_received_json(root / CONFIG_NAME, where)
    check_received_config(config, where)
    if isinstance(overrides, str):
        overrides = parse_overrides(overrides)
    weights = Path(weights_file or get_weights_path(str(root)))
    table = weights_table(weights, f"{source}: {weights.name}")
    spec = ReceivedModel(source, root, False, config, weights, table)
    return build_archive(spec, overrides or {}, cuda_device)


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
