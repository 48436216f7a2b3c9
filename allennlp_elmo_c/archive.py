"""
Loading a trained ELMo-C model (a `model.tar.gz`, an extracted archive or run directory, or a
model directory), every file checked as received, the model built once.
"""

import contextlib
import json
import os
import re
import tempfile
from itertools import chain
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.common.params import parse_overrides, remove_keys_from_params, with_overrides
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import (
    CONFIG_NAME,
    Archive,
    _load_dataset_readers,
    get_weights_path,
)

from allennlp_elmo_c.fasttext.fasttext_source import loading_archive
from allennlp_elmo_c.received.allocation_budget import allocation_budget, spend
from allennlp_elmo_c.received.contained_files import refuse_links
from allennlp_elmo_c.received.limits import ENTRY_BYTES, quoted
from allennlp_elmo_c.received.model_directory import MODEL_TYPE
from allennlp_elmo_c.received.received_config import (
    REMOVED_ON_LOAD,
    check_bilm_config,
    check_hub_models,
    check_received_config,
    drop_training_only,
    is_bilm_config,
)
from allennlp_elmo_c.received.received_json import parse_received_json, read_received_json
from allennlp_elmo_c.received.received_model import (
    ReceivedModel,
    check_vocabulary_directory,
    checked_bilm,
    checked_fasttext_of,
    is_model_archive_member,
    prepared,
    read_bilm_config,
    read_directory,
    read_meta,
    received_bilm,
    unreadable_archive,
)
from allennlp_elmo_c.received.received_vocabulary import read_vocabulary
from allennlp_elmo_c.received.received_weights import load_weights_only, weights_table
from allennlp_elmo_c.received.safe_extract import extracted_archive

MAX_RECORD_FILES = 64
# elmo_lstm's defaults for the sizes a config may leave out.
ELMO_LSTM_DEFAULTS = {"projection_size": 512, "cell_size": 4096, "num_layers": 2}


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
    """A model directory's config.json, checked, its biLM's file names made paths into it."""
    return read_directory(directory)[0]


def read_archive_config(archive_file: str) -> Dict[str, Any]:
    """The biLM's AllenNLP config of an archive or model directory, checked, weights unread."""
    return read_bilm_config(archive_file)[0]


def contextualizer_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """The biLM's contextualizer settings, with elmo_lstm's defaults."""
    return {**ELMO_LSTM_DEFAULTS, **config["model"].get("contextualizer", {})}


def representation_dim(config: Dict[str, Any]) -> int:
    """The size of each layer the biLM gives downstream (`ELMO_C_DIM`): 2 x its projection."""
    return 2 * int(contextualizer_config(config)["projection_size"])


def input_embedder_config(config: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
    """The key and config of the biLM's (first) input token embedder."""
    embedders = config["model"].get("text_field_embedder", {}).get("token_embedders", {})
    return next(iter(embedders.items()), (None, {}))


def checked_fasttext(
    config: Dict[str, Any], source: str, fasttext_path: Optional[str] = None
) -> Tuple[str, Optional[int]]:
    """The fastText `.bin` of the biLM of `config` (read from `source`) and its fingerprint."""
    parts = check_bilm_config(config, f"{source}: {CONFIG_NAME}")
    return checked_fasttext_of(parts, source, fasttext_path, Path(source).is_dir())


def load_elmo_c_archive(
    archive_file: Union[str, Path],
    overrides: Union[str, Dict[str, Any], None] = None,
    cuda_device: int = -1,
    weights_file: Optional[str] = None,
) -> Archive:
    """AllenNLP's `load_archive` for a model with ELMo-C components; its config.json read as
    plain JSON and checked as a received config, never evaluated as jsonnet."""
    if isinstance(overrides, str):
        overrides = parse_overrides(overrides)
    source = str(archive_file)
    if is_model_directory(source):
        if weights_file is not None:
            raise ConfigurationError(f"{source}: a model directory has one set of weights")
        with received_bilm(source) as spec:
            return _built(spec, overrides or {}, cuda_device)
    resolved = cached_path(source)
    with contextlib.ExitStack() as stack:
        if os.path.isdir(resolved):
            refuse_links(resolved, source)  # a link would carry the receiver's own files in
            directory = resolved
        else:
            directory = stack.enter_context(
                extracted_archive(resolved, wanted=is_model_archive_member)
            )
        stack.enter_context(loading_archive(archive_file, directory))
        root = Path(directory)
        check_vocabulary_directory(root, source)
        where = f"{source}: {CONFIG_NAME}"
        config = read_received_json(root / CONFIG_NAME, where)
        parts = check_received_config(config, where)
        weights = Path(weights_file or get_weights_path(directory))
        table = weights_table(weights, f"{source}: {weights.name}")
        spec = ReceivedModel(source, root, False, config, weights, table, parts)
        return _built(spec, overrides or {}, cuda_device)


@contextlib.contextmanager
def bilm_archive(
    archive_file: str, fasttext_path: Optional[str] = None, tokenizer_path: Optional[str] = None
) -> Iterator[Tuple[Archive, Dict[str, Any]]]:
    """The `Archive` of a biLM (all layers returned, its fastText `.bin` found and checked) and
    its config as trained, while the context lasts (an archive's extraction)."""
    try:
        with received_bilm(str(archive_file), fasttext_path, tokenizer_path) as spec:
            yield _built(spec, spec.overrides), spec.config
    except OSError as error:
        raise unreadable_archive(str(archive_file), error) from error
    except ConfigurationError as error:
        if "return_all_layers" in str(error):
            raise ConfigurationError(
                f"{archive_file}: its contextualizer cannot return all layers (use elmo_lstm)"
            ) from error
        raise


def _built(spec: ReceivedModel, overrides: Dict[str, Any], cuda_device: int = -1) -> Archive:
    """The model of `spec` with `overrides` and its readers, built within the budget its
    weights allow; a biLM on `meta`, checked against the weights, then given them."""
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
    with allocation_budget(limit, spec.where, spec.parts.sizes, dry=on_meta):
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
    """`model.load_state_dict(state, strict=True, assign=True)` allowing the missing tensors a
    module authorizes (as `Model.load`), tied parameters kept tied."""
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
    """`(alias, name)` of each parameter that is another's."""
    first: Dict[int, str] = {}
    tied = []
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) in first:
            tied.append((name, first[id(parameter)]))
        first.setdefault(id(parameter), name)
    return tied


def _authorized(model: Model, key: str) -> bool:
    """Whether a module of `model` lists `key` in its `authorized_missing_keys`."""
    for prefix, module in model.named_modules():
        head = f"{prefix}." if prefix else ""
        patterns = getattr(type(module), "authorized_missing_keys", None) or []
        if key.startswith(head) and any(re.search(p, key[len(head) :]) for p in patterns):
            return True
    return False


def _weights_mismatch(error: RuntimeError, weights_name: str, source: str) -> ConfigurationError:
    """The error for weights whose tensors do not match the model its config builds."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    detail = "; ".join(lines[1:] or lines)
    if len(detail) > 500:
        detail = detail[:500] + " ..."
    return ConfigurationError(
        f"{source}: {weights_name} does not match the model its config.json describes ({detail}); "
        "the weights and the config must come from the same saved model: package or save it again"
    )


def bilm_record(config: Dict[str, Any], vocab: Vocabulary) -> str:
    """A biLM's config and vocabulary (not its weights) as one JSON line, for `record_params`."""
    with tempfile.TemporaryDirectory() as directory:
        vocab.save_to_files(directory)
        files = {
            path.name: path.read_text(encoding="utf-8")
            for path in sorted(Path(directory).iterdir())
            if path.suffix == ".txt"
        }
    return json.dumps({"config": config, "vocabulary": files}, ensure_ascii=False)


def record_params(
    record: str,
    archive_file: str,
    fasttext_path: Optional[str] = None,
    tokenizer_path: Optional[str] = None,
) -> Tuple[Params, Vocabulary, Dict[str, Any]]:
    """The params (load-time overrides applied) and vocabulary of a `bilm_record`, checked as a
    received config, and its config; `archive_file` names the biLM the record stands for."""
    where = f"the biLM record of {archive_file} (kept in the task model's vocabulary)"
    data = parse_received_json(record, where, max_bytes=None)
    if not isinstance(data, dict) or not isinstance(data.get("vocabulary"), dict):
        raise ConfigurationError(f"{where}: not a record of a biLM's config and vocabulary")
    config = data.get("config")
    parts = checked_bilm(config, archive_file, where)
    overrides = prepared(config, parts, archive_file, fasttext_path, tokenizer_path)
    files = _record_files(data["vocabulary"], archive_file, where)
    with tempfile.TemporaryDirectory() as directory:
        for name, text in files.items():
            (Path(directory) / name).write_text(text, encoding="utf-8")
        vocab, _ = read_vocabulary(Path(directory), where)
    return Params(with_overrides(config, overrides)), vocab, config


def _record_files(files: Dict[Any, Any], archive_file: str, where: str) -> Dict[str, str]:
    """The vocabulary files of a biLM record, checked before any is written, their memory
    spent from the budget being enforced."""
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
    """Whether `name` is one plain `<namespace>.txt` name (no directory, not hidden)."""
    return (
        isinstance(name, str)
        and name.endswith(".txt")
        and not name.startswith(".")
        and not any(c in name for c in "/\\\x00")
        and Path(name).name == name
    )

