"""
The config of a received model is data, not a program: read as plain JSON and checked here before
anything is built, a refusal one `ConfigurationError` line naming the file, the key path and why.

One walk (`_Walk`) checks the built sections against AllenNLP's registries and the registered
constructors' signatures, as `from_params` reads them: registered types, known parameters, values
of their annotated kind (sizes within `received.limits`). Refused whatever the component:
`trust_remote_code`, `*_kwargs`, URLs, archive names and nested archives; parameters that read a
file (`_LOADS`) on other packages' components; model names in a biLM, local paths as model names
in a task model; `REFUSED_KEYS` in a biLM, and in a task model inside lists.
"""
import inspect
import os
import re
import typing
from collections import abc
from typing import Any, Dict, List, NamedTuple, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.common.from_params import FromParams, infer_params, is_base_registrable
from allennlp.common.lazy import Lazy
from allennlp.common.registrable import Registrable

from allennlp_elmo_c.common.config_tree import walk
from allennlp_elmo_c.fasttext.fasttext_source import FASTTEXT_COMPONENTS, FASTTEXT_KEYS
from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.limits import printable, quoted
from allennlp_elmo_c.received.model_directory import CONFIG_KEYS

NOT_SIZES = frozenset({"seed", "fingerprint"})  # integer parameters that are identifiers
# The sections of a training config that no loader reads (a record of the training).
TRAINING_ONLY = frozenset({
    "train_data_path", "validation_data_path", "test_data_path", "datasets_for_vocab_creation",
    "evaluate_on_test", "data_loader", "validation_data_loader", "test_data_loader", "trainer",
    "distributed", "random_seed", "numpy_seed", "pytorch_seed", "batch_weight_key", "type",
    "include_in_archive",
})  # fmt: skip
BUILT = {"model": "Model", "dataset_reader": "DatasetReader",
         "validation_dataset_reader": "DatasetReader"}  # fmt: skip
# Keys AllenNLP's `Model.load` removes from a model's config before building it.
REMOVED_ON_LOAD = frozenset({"pretrained_file", "initializer"})
REFUSED_KEYS = {
    "initializer": "an initializer rewrites or reads weights when the model is built (the "
    "`pretrained` one from any file)",
    "regularizer": "a training-only setting",
    "pretrained_file": "it reads a file outside the model when the model is built",
    "archive_file": "it names another archive to load (a nested archive)",
    "_pretrained": "it loads a module from another archive (a nested archive)",
}
_BILM_REFUSED = frozenset({"initializer", "regularizer", "pretrained_file"})
# Parameter names that read a file, a directory or a program, and those naming a published model.
_LOADS = re.compile(r"path|file|(?:^|_)dir(?:$|_|ector)|archive|._vocab$")
_MODEL_NAME = re.compile(r"(?:^|_)model_name$|^language$")
_URL = re.compile(
    r"^(?:[A-Za-z][A-Za-z0-9+.\-]*://|(?:https?|s3|gs|gcs|hf|file|ftp|sftp|data|az|abfs|r2):)"
)
_ARCHIVE = re.compile(r"\.(?:tar\.gz|tgz|tar\.bz2|tbz2?|tar\.xz|txz|tar|zip)(?:!|$)", re.IGNORECASE)
_NESTED = "'from_archive' loads another archive (a nested archive)"
PLUGIN_PACKAGE = "allennlp_elmo_c"
# Keys of a model directory's config.json that would make Hugging Face load code, other
# components or another config than the one checked.
DIRECTORY_REFUSED = frozenset({
    "auto_map", "custom_pipelines", "tokenizer_class", "processor_class", "configuration_files",
})  # fmt: skip
PROBE_SECONDS = 5.0  # how long the Hugging Face Hub may take to answer


class BiLMConfigParts(NamedTuple):
    """What the walk of a config found, by dotted key path (without the message prefix)."""

    fasttext_components: List[Tuple[str, Dict[str, Any]]]  # `(path, node)`
    fasttext_keys: List[Tuple[str, Dict[str, Any], str]]  # `(path, node, key)`, a `.bin` path
    files: List[Tuple[str, Dict[str, Any], str]]  # every key of the plugin's naming a file
    sizes: List[Tuple[str, int]]


def _plugin_registrations() -> Tuple[Dict[str, frozenset], frozenset]:
    """(name -> the bases this plugin registers it under, the names anything else registers)."""
    mine: Dict[str, set] = {}
    others = set()
    for base, names in Registrable._registry.items():
        for name, (subclass, _) in names.items():
            if subclass.__module__.split(".")[0] == PLUGIN_PACKAGE:
                mine.setdefault(name, set()).add(base.__name__)
            else:
                others.add(name)
    return {name: frozenset(bases) for name, bases in mine.items()}, frozenset(others)


def plugin_component_names() -> frozenset:
    """The names only this plugin registers."""
    mine, others = _plugin_registrations()
    return frozenset(mine) - others


def is_elmo_c_config(config: Any) -> bool:
    """Whether a config's built sections build a component of this plugin (a name other packages
    register too counts only as a section's own type): only these are checked as received."""
    if not isinstance(config, dict):
        return False
    mine, others = _plugin_registrations()
    for section, base in BUILT.items():
        node = config.get(section)
        own = node.get("type") if isinstance(node, dict) else None
        if isinstance(own, str) and base in mine.get(own, ()):
            return True
        for _, _, item in walk(node, section):
            kind = item.get("type") if isinstance(item, dict) else None
            if isinstance(kind, str) and kind in mine and kind not in others:
                return True
    return False


def is_bilm_config(config: Any) -> bool:
    model = config.get("model") if isinstance(config, dict) else None
    return isinstance(model, dict) and model.get("type") == "elmo_c"


def check_received_config(config: Any, where: str) -> BiLMConfigParts:
    """`check_bilm_config` for an `elmo_c` model's config, `check_task_config` for any other."""
    if is_bilm_config(config):
        return check_bilm_config(config, where)
    return check_task_config(config, where)


def check_bilm_config(
    config: Any, where: str, prefix: str = "", in_directory: bool = False
) -> BiLMConfigParts:
    """Refuses a received biLM's config that is not plain registered components; `prefix` is its
    key in the file (`bilm.` in a model directory), `in_directory` refuses
    `model.nearest_neighbour_words` (`package` never writes it). Returns what the walk found."""
    parts = _Walk(where, prefix, True).config(config)
    if in_directory and config["model"].get("nearest_neighbour_words") is not None:
        raise _refusal(where, prefix + "model.nearest_neighbour_words",
                       "names a word list outside the model (a training-time setting that "
                       "`package` never writes)")  # fmt: skip
    return parts


def check_task_config(config: Any, where: str, prefix: str = "") -> BiLMConfigParts:
    """Refuses a received task model's config that asks for code, a fetch, a nested archive or
    an outside file, or is not plain registered components."""
    return _Walk(where, prefix, False).config(config)


def drop_training_only(config: Dict[str, Any]) -> Dict[str, Any]:
    """A biLM config without `model.nearest_neighbour_words` (read in training only)."""
    if not is_bilm_config(config) or "nearest_neighbour_words" not in config["model"]:
        return config
    model = {k: v for k, v in config["model"].items() if k != "nearest_neighbour_words"}
    return {**config, "model": model}


class _Walk:
    """One walk of a config's built sections (`bilm`: a biLM's), collecting `parts`."""

    def __init__(self, where: str, prefix: str, bilm: bool) -> None:
        self.where, self.prefix, self.bilm = where, prefix, bilm
        self.parts = BiLMConfigParts([], [], [], [])

    def refuse(self, path: str, why: str) -> ConfigurationError:
        return _refusal(self.where, self.prefix + path, why)

    def config(self, config: Any) -> BiLMConfigParts:
        from allennlp.data import DatasetReader, Vocabulary
        from allennlp.models import Model

        if not isinstance(config, dict):
            raise self.refuse(self.prefix.rstrip(".") or "(top level)", "is not a JSON object")
        _refuse_remote_code(config, self.refuse)
        for key in config:
            if key not in BUILT and key != "vocabulary" and key not in TRAINING_ONLY:
                raise self.refuse(key, "is not a key of an AllenNLP model's config")
        if not isinstance(config.get("model"), dict):
            raise self.refuse("model", "is not a component (a JSON object with a type)")
        vocabulary = config.get("vocabulary", {})
        if not isinstance(vocabulary, dict):
            raise self.refuse("vocabulary", "is not a JSON object")
        self.resolve({"type": vocabulary.get("type", "from_instances")}, Vocabulary, "vocabulary")
        skip = frozenset() if self.bilm else REMOVED_ON_LOAD
        self.component(config["model"], Model, "model", skip)
        for section in ("dataset_reader", "validation_dataset_reader"):
            if section in config:
                self.component(config[section], DatasetReader, section, frozenset())
        return self.parts

    def resolve(self, node: Dict[str, Any], base: type, path: str) -> Tuple[type, Any]:
        """The class (and constructor name) `node` builds where `base` is expected."""
        if not is_base_registrable(base):
            return base, None
        kind = node.get("type", base.default_implementation)  # type: ignore[attr-defined]
        at = path + ".type" if "type" in node else path
        if kind == "from_archive":
            raise self.refuse(at, _NESTED)
        registry = Registrable._registry.get(base, {})
        if not isinstance(kind, str) or kind not in registry:
            given = f"type {quoted(kind, 60)}" if "type" in node else "no type"
            raise self.refuse(at, f"{given} is not a registered {base.__name__}")
        return registry[kind]

    def component(self, node: Any, base: type, path: str, skip: frozenset) -> None:
        """A component where `base` is expected: a registered type, its constructor's keys."""
        if isinstance(node, str) and is_base_registrable(base):
            node = {"type": node}  # `from_params` reads a name as the type
        if not isinstance(node, dict):
            raise self.refuse(path, f"is not a component (a JSON object with a type), got "
                              f"{quoted(node, 60)}")  # fmt: skip
        if "_pretrained" in node:
            raise self.refuse(path + "._pretrained", REFUSED_KEYS["_pretrained"])
        cls, constructor = self.resolve(node, base, path)
        params = infer_params(cls, getattr(cls, constructor) if constructor else cls.__init__)
        plugin = cls.__module__.split(".")[0] == PLUGIN_PACKAGE
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
        if node.get("type") in FASTTEXT_COMPONENTS:
            self.parts.fasttext_components.append((path, node))
        for key, value in node.items():
            if key == "type" or key in skip:
                continue
            key_path = f"{path}.{key}"
            parameter = params.get(key)
            self.key(key, value, key_path, plugin, node, bool(skip) or self.bilm)
            if key == "archive_file":
                continue
            if parameter is None or parameter.kind == parameter.VAR_KEYWORD:
                # Another package's `**kwargs` may take keys of its own; the plugin's pass theirs
                # on to AllenNLP's base classes, whose parameters `infer_params` gives.
                if plugin or not takes_any or key in REFUSED_KEYS:
                    raise self.refuse(
                        key_path, REFUSED_KEYS.get(key, f"is not a parameter of {cls.__name__}")
                    )
                self.value(value, Any, key_path, key, skip)
            else:
                self.value(value, parameter.annotation, key_path, key, skip)

    def key(self, key: Any, value: Any, path: str, plugin: bool, node: Dict, removed: bool) -> None:
        """The refusals that depend on a key's name (see the module docstring)."""
        if isinstance(key, str) and key.endswith("_kwargs"):
            raise self.refuse(path, "a `*_kwargs` key passes arbitrary arguments to another "
                              "library (e.g. trust_remote_code to Hugging Face)")  # fmt: skip
        if self.bilm and key in _BILM_REFUSED:
            raise self.refuse(path, REFUSED_KEYS[key])
        if key in REMOVED_ON_LOAD:  # reached in a list, where AllenNLP's loader leaves it
            if not removed:
                why = f"{REFUSED_KEYS[key]}; AllenNLP's loader removes it only outside lists"
                raise self.refuse(path, why)
            return
        if key == "archive_file":
            if not plugin or self.bilm:
                raise self.refuse(path, REFUSED_KEYS["archive_file"])
            return
        if value is None or not isinstance(key, str):
            return
        if _MODEL_NAME.search(key):
            if self.bilm:
                raise self.refuse(path, "a received biLM is built from its own files: it names no "
                                  "Hugging Face or spaCy model to fetch")  # fmt: skip
            _check_model_name(value, self.where, self.prefix + path)
        elif _LOADS.search(key) or key in FASTTEXT_KEYS:
            if not plugin:
                raise self.refuse(path, "it names a file or program outside the model to load "
                                  "or run; a received model leaves it out")  # fmt: skip
            self.parts.files.append((path, node, key))
            if key in FASTTEXT_KEYS and isinstance(value, str):
                self.parts.fasttext_keys.append((path, node, key))

    def value(self, value: Any, annotation: Any, path: str, key: Any, skip: frozenset) -> None:
        """A value as its parameter's `annotation` says `from_params` reads it."""
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if value is None and (annotation is Any or type(None) in args):
            return
        if origin is typing.Union:
            options = [arg for arg in args if arg is not type(None)]
            errors = []
            for option in options if len(options) > 1 else []:
                try:  # as `from_params`, the first the value builds
                    return self.value(value, option, path, key, skip)
                except ConfigurationError as error:
                    errors.append(error)
            if errors:
                raise errors[0]
            return self.value(value, options[0] if options else Any, path, key, skip)
        if origin is Lazy:
            return self.value(value, args[0], path, key, skip)
        if origin in (dict, abc.Mapping, abc.MutableMapping) and len(args) == 2:
            if not isinstance(value, dict):
                raise self.refuse(path, "is not a mapping of names to values")
            for name, item in value.items():
                self.value(item, args[1], f"{path}.{name}", key, skip)
            return
        if origin in (list, tuple, set, abc.Sequence, abc.Iterable, abc.Set) and args:
            if not isinstance(value, list):
                raise self.refuse(path, f"is not a list, got {quoted(value, 60)}")
            positional = origin is tuple and args[-1] is not Ellipsis
            for index, item in enumerate(value):
                one = (args[index] if index < len(args) else Any) if positional else args[0]
                self.value(item, one, f"{path}.{index}", key, frozenset())
            return
        if inspect.isclass(annotation) and issubclass(annotation, FromParams):
            return self.component(value, annotation, path, skip)
        self.plain(value, annotation, path, key)

    def plain(self, value: Any, annotation: Any, path: str, key: Any) -> None:
        """A value that builds nothing: of its annotated kind, its strings no URL or archive."""
        kinds = {float: (_is_number, "a number"), str: (lambda v: isinstance(v, str), "a string"),
                 bool: (lambda v: isinstance(v, bool), "true or false")}  # fmt: skip
        if annotation is int:
            self.size(value, path, key)
        elif annotation in kinds and not kinds[annotation][0](value):
            raise self.refuse(path, f"{quoted(value, 40)} is not {kinds[annotation][1]}")
        for item_path, item_key, item in walk(value, path):
            if isinstance(item_key, str):
                in_list = any(part.isdigit() for part in item_path[len(path):].split("."))
                self.key(item_key, item, item_path, False, {}, not in_list)
            if isinstance(item, dict) and item.get("type") == "from_archive":
                raise self.refuse(item_path + ".type", _NESTED)
            if isinstance(item, str):
                _check_string(item, self.where, self.prefix + item_path)

    def size(self, value: Any, path: str, key: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(path, f"{quoted(value, 40)} is not a size (a non-negative integer)")
        if key in NOT_SIZES:
            return
        limit = limits.MAX_LAYERS if key == "num_layers" else limits.MAX_SIZE
        if not 0 <= value <= limit:
            raise self.refuse(path, f"{value} is not a size between 0 and {limit}")
        self.parts.sizes.append((path, value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_model_name(name: Any, where: str, path: str) -> None:
    """A Hugging Face or spaCy model name is a published one, not a local directory."""
    if isinstance(name, str) and (
        os.path.isabs(name) or name.startswith((".", "~")) or "\\" in name or os.path.exists(name)
    ):
        raise _refusal(where, path, f"{name!r} is a local path; a received model may only name a "
                       "published model, not load a directory")  # fmt: skip
    if isinstance(name, str):
        _check_string(name, where, path)


def _check_string(value: str, where: str, path: str) -> None:
    if _URL.match(value):
        raise _refusal(where, path, f"{value!r} is a URL; a received model is loaded from its own "
                       "files only, nothing is fetched")  # fmt: skip
    if _ARCHIVE.search(value):
        raise _refusal(where, path, f"{value!r} names an archive (a nested archive is not loaded)")


def _refuse_remote_code(config: Any, refuse) -> None:
    for key_path, key, _ in walk(config):
        if key == "trust_remote_code":
            raise refuse(key_path, "a received model may not ask to run code it brings")


def _refusal(where: str, path: str, why: str) -> ConfigurationError:
    return ConfigurationError(
        f"{where}: {printable(path)}: {printable(why, 400)}. A received model's config is data, "
        "not a program: it is refused before anything is built (docs/security.md)"
    )


def check_directory_config(config: Dict[str, Any], where: str) -> None:
    """A model directory's config.json outside its `bilm`: no `trust_remote_code`, no key of
    `DIRECTORY_REFUSED` or `*_kwargs`; every other key one `package` writes or of transformers'
    `PretrainedConfig`, and `num_labels` a size within `MAX_LABELS`."""
    from transformers import PretrainedConfig

    _refuse_remote_code(config, lambda path, why: _refusal(where, path, why))
    known = CONFIG_KEYS | set(PretrainedConfig().to_dict()) | {"num_labels"}
    for key in config:
        if key in DIRECTORY_REFUSED or key.endswith("_kwargs"):
            raise _refusal(where, key, "it would make Hugging Face load code, components or a "
                           "config the directory names; a model directory's config.json has none")
        if key not in known:
            raise _refusal(where, key, "is not a key of a model directory's config.json (its "
                           "own, or one of transformers' PretrainedConfig)")  # fmt: skip
    labels = config.get("num_labels", 0)
    if type(labels) is not int or not 0 <= labels <= limits.MAX_LABELS:
        raise _refusal(where, "num_labels", f"{printable(labels, 40)} is not a size between 0 and "
                       f"{limits.MAX_LABELS}")  # fmt: skip


def check_hub_models(config: Any, source: str) -> None:
    """Refuses a config naming (`*model_name`) a Hugging Face model missing from the local cache
    when `HF_HUB_OFFLINE=1` or the Hub does not answer within `PROBE_SECONDS` (transformers would
    retry for a minute, then fail)."""
    import requests
    from huggingface_hub import constants, try_to_load_from_cache

    def cached(name: str) -> bool:
        try:
            return isinstance(try_to_load_from_cache(name, "config.json"), str)
        except ValueError:  # not a valid repository id
            return False

    missing = [
        (where, value) for where, key, value in walk(config)
        if isinstance(key, str) and key.endswith("model_name") and isinstance(value, str)
        and not cached(value)
    ]  # fmt: skip
    if not missing:
        return
    key, name = missing[0]
    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE=1 forbids downloading it:"
    else:
        try:
            requests.head(constants.ENDPOINT, timeout=PROBE_SECONDS, allow_redirects=False)
            return
        except requests.RequestException as error:
            why = (f"the Hub at {constants.ENDPOINT} cannot be reached ({type(error).__name__}): "
                   "set HF_HUB_OFFLINE=1 to load only what your cache holds, or")  # fmt: skip
    raise ConfigurationError(
        f"{source}: {key} names the Hugging Face model {name!r}, which is not in your Hugging "
        f"Face cache, and {why} download it first (`huggingface-cli download {name}`, on a "
        "machine with network, into the cache this one uses)"
    )
