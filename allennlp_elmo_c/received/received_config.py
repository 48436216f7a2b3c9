"""
What the config of a model received from elsewhere may say: a received model is data, not a
program. Every loader of the package reads a received config with `read_received_json` (plain
JSON, size- and depth-capped: never jsonnet, so no `importstr` of a local file and no
`std.extVar` of an environment variable can reach it, and no program runs while it is read),
and checks it with `check_bilm_config` or `check_task_config` before anything is built. A
refusal is a `ConfigurationError` naming the file, the key path and why.

**A biLM's config** (a model directory's `bilm`, a biLM archive's `config.json`, the biLM record
a task archive keeps) is checked against an allowlist, `COMPONENTS`: the plugin's own component
types (and the few AllenNLP ones its biLMs are trained with) in each place of the config, with
the keys each may have. Its top-level keys are:

- the built sections, `model`, `dataset_reader`, `validation_dataset_reader`: every component
  must be of an allowed type for its place (a component without `type` is AllenNLP's default for
  that place, which must be allowed too), with allowed keys only;
- `vocabulary`: only its `type` is read when a model is loaded (AllenNLP picks the vocabulary
  class with it; the files come from the model's own `vocabulary/`), and it must be one of
  `VOCABULARY_TYPES`; its other keys say how training built the vocabulary;
- `TRAINING_ONLY` sections (data paths, data loaders, trainer, seeds): kept as a record of the
  training, never read by any loader, and not checked (a corpus at a URL is a legitimate
  training record);
- any other top-level key is refused.

Inside the built sections of a biLM, these are refused, whatever component they are in:
other types; `*_kwargs` keys (arguments passed through to another library) and
`trust_remote_code` (anywhere in the file); strings that are URLs (`http:`, `s3:`, `hf://`,
`file:` ...: nothing is fetched) or name an archive (`.tar.gz`, `.zip`, `archive.zip!member`);
nested archives (`archive_file`, `from_archive` types, AllenNLP's `_pretrained`);
initializers and regularizers (`initializer` can read weights from any file); and the
training-only keys that name outside files (`pretrained_file`). The training-only
`model.nearest_neighbour_words` (a candidate word list, read for a validation metric) is dropped
by every loader (`drop_training_only`) from an archive or a record, which `allennlp train`
writes with it; a model directory, which `package` writes without it, is refused if it has one.

**A task archive's config** (any AllenNLP model with an ELMo-C component, `is_elmo_c_config`:
`crf_tagger`, `srl`, ... over `elmo_c_token_embedder`; an archive with no ELMo-C component is
AllenNLP's to load, unchecked) is checked against an allowlist too, `TASK_COMPONENTS`
(`received.task_components`): every component of its built sections must be of one of the types
named there (the AllenNLP and allennlp-models components the task configs of
`downstream_configs/` use, a few generic AllenNLP modules, the plugin's task-side components),
and each key that names what a component loads keeps to its rule: a Hugging Face or spaCy model
name (`model_name`, `srl`'s `bert_model_name`, `language`) must not be a local path, a file or
program outside the model (`srl_eval_path`, `bcn`'s `elmo`) is refused, and the plugin's own
files are found by the plugin's loaders. Its `vocabulary.type` must be one of
`VOCABULARY_TYPES`. The generic refusals apply to its built sections too: `*_kwargs`,
`trust_remote_code`, URLs, nested archives (`from_archive` types, `_pretrained`,
`override_weights_file`, `archive_file` anywhere but on the plugin's `elmo_c_token_embedder` and
`fasttext_subwords`, whose biLM is itself read as a received biLM) and archive names (but those
two `archive_file`s). Keys that AllenNLP's loader removes before it builds the model
(`pretrained_file`, `initializer`) are not looked into; it does not remove them inside a list,
so there they are refused. The biLM record a task archive keeps goes through the full biLM
check (`PretrainedBiLM.from_record`).

**Numbers.** A received config's numbers are plain: a float must be finite (`1e400` is refused,
not read as infinity) and an integer must fit in 64 bits; in a biLM's config every size a
component takes (`SIZE_KEYS`: `cell_size`, `embedding_dim`, `num_embeddings`, ...) must be a
non-negative integer of at most `MAX_SIZE` (`num_layers` at most `MAX_LAYERS`), or null where the
component takes none. The memory these sizes make is then held to the weights' budget
(`received.allocation_budget`).

`check_bilm_config` returns what its walk of the components found (`BiLMConfigParts`: the
fastText components, the keys naming files, the sizes), so that no loader walks the config again
to find them.

A user's own configs (`allennlp train`, `-o` overrides on the command line) are not received:
they stay jsonnet, and overrides are merged after the check.
"""

import os
import re
from typing import Any, Dict, Iterator, List, NamedTuple, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_tree import join_key, lookup_dotted, walk
from allennlp_elmo_c.fasttext.fasttext_source import FASTTEXT_COMPONENTS, FASTTEXT_KEYS
from allennlp_elmo_c.received.shown_text import printable, quoted
from allennlp_elmo_c.received.task_components import (
    HUB_MODEL,
    NOT_RECEIVED,
    SPACY_MODEL,
    TASK_COMPONENTS,
    UNTYPED_KEYS,
)


# The largest size a biLM's config may give (one dimension of a tensor, a count of rows), and
# the most layers of a contextualizer.
MAX_SIZE = (1 << 31) - 1
MAX_LAYERS = 64
# The keys of `COMPONENTS` that are sizes: integers (null where the component takes none).
SIZE_KEYS = frozenset({
    "input_size", "projection_size", "cell_size", "num_layers", "embedding_dim", "num_embeddings",
    "projection_dim", "padding_index", "num_subvectors", "pool_size", "expected_dim",
    "max_subwords_per_token", "cache_size", "token_min_padding_length", "max_sequence_length",
    "max_instances", "positions_per_chunk", "num_samples", "cutoffs",
})  # fmt: skip

# The sections of an AllenNLP training config that no loader reads (a record of the training).
TRAINING_ONLY = frozenset({
    "train_data_path", "validation_data_path", "test_data_path", "datasets_for_vocab_creation",
    "evaluate_on_test", "data_loader", "validation_data_loader", "test_data_loader", "trainer",
    "distributed", "random_seed", "numpy_seed", "pytorch_seed", "batch_weight_key", "type",
    "include_in_archive",
})  # fmt: skip
# The sections a loader builds.
BUILT = ("model", "dataset_reader", "validation_dataset_reader")
VOCABULARY_TYPES = frozenset({"from_instances", "from_files", "empty", "extend"})
# Keys AllenNLP's `Model.load` removes from the model's config before building it
# (`remove_keys_from_params`): a task archive's are never read.
REMOVED_ON_LOAD = frozenset({"pretrained_file", "initializer"})

# Where a component is in a biLM's config -> its allowed types -> their allowed keys. A key's
# value is a plain JSON value unless `SUBCOMPONENTS` names the place of the component(s) it holds.
COMPONENTS: Dict[str, Dict[str, frozenset]] = {
    "model": {
        "elmo_c": frozenset({
            "text_field_embedder", "contextualizer", "output_head", "target_embedder", "dropout",
            "target_ids_key", "share_output_head", "nearest_neighbour_words", "precision",
        }),
    },
    "dataset_reader": {
        "lm_corpus": frozenset({
            "tokenizer", "token_indexers", "max_sequence_length", "start_tokens", "end_tokens",
            "field_name", "max_instances",
        }),
    },
    "tokenizer": {
        "whitespace": frozenset(),
        "just_spaces": frozenset(),
        "bpe": frozenset({"tokenizer_path", "cache_size"}),
    },
    "token_indexer": {
        "fasttext_subwords": frozenset({
            "model_path", "max_subwords_per_token", "cache_size", "token_min_padding_length",
            "layout", "fingerprint",
        }),
        "word_hash": frozenset({"token_min_padding_length"}),
        "single_id": frozenset({
            "namespace", "lowercase_tokens", "start_tokens", "end_tokens", "feature_name",
            "default_value", "token_min_padding_length",
        }),
        "elmo_characters": frozenset({"namespace", "tokens_to_add", "token_min_padding_length"}),
    },
    "text_field_embedder": {
        "basic": frozenset({"token_embedders"}),
        "subset": frozenset({"token_embedders"}),
    },
    "token_embedder": {
        "fasttext": frozenset({"model_path", "expected_dim", "fingerprint"}),
        "elmo_char_cnn": frozenset({"options_file", "weight_file", "requires_grad"}),
        "random_vectors": frozenset({"embedding_dim", "seed"}),
        "slim_embedding": frozenset({
            "embedding_dim", "num_subvectors", "pool_size", "num_embeddings", "vocab_namespace",
            "seed",
        }),
        "embedding": frozenset({
            "embedding_dim", "num_embeddings", "projection_dim", "padding_index", "trainable",
            "max_norm", "norm_type", "scale_grad_by_freq", "sparse", "vocab_namespace",
        }),
    },
    "seq2seq_encoder": {
        "elmo_lstm": frozenset({
            "input_size", "projection_size", "cell_size", "num_layers", "backend", "cell_clip",
            "projection_clip", "recurrent_dropout", "residual", "stateful", "return_all_layers",
            "recurrence_norm",
        }),
        "allennlp_elmo_lstm": frozenset({
            "input_size", "projection_size", "cell_size", "num_layers", "recurrent_dropout",
            "cell_clip", "projection_clip", "return_all_layers",
        }),
    },
    "output_head": {
        "continuous": frozenset({"loss", "vmf_lambda_1", "vmf_lambda_2", "temperature"}),
        "softmax": frozenset({
            "vocab_namespace", "tie_input_embedding", "freeze_output_embedding",
            "output_embedding_fasttext", "positions_per_chunk",
        }),
        "sampled_softmax": frozenset({
            "vocab_namespace", "tie_input_embedding", "freeze_output_embedding",
            "output_embedding_fasttext", "positions_per_chunk", "num_samples",
        }),
        "adaptive_softmax": frozenset({
            "cutoffs", "vocab_namespace", "div_value", "head_bias", "positions_per_chunk",
        }),
        "slim_softmax": frozenset({
            "num_subvectors", "pool_size", "vocab_namespace", "embedding_dim", "bias", "seed",
            "positions_per_chunk",
        }),
    },
}  # fmt: skip
# The continuous head's `loss`, the name of a `ContinuousLoss`: those the plugin registers.
CONTINUOUS_LOSSES = frozenset({"cosine", "l2", "vmf", "in_batch_softmax"})
# The default type of each place (AllenNLP's `default_implementation`), for a component
# without `type`; places without one need a `type`.
DEFAULT_TYPES = {
    "tokenizer": "spacy",
    "token_indexer": "single_id",
    "text_field_embedder": "basic",
    "token_embedder": "embedding",
}
# Keys whose value is a component (`(place, False)`) or a mapping of names to components
# (`(place, True)`).
SUBCOMPONENTS: Dict[str, Tuple[str, bool]] = {
    "text_field_embedder": ("text_field_embedder", False),
    "target_embedder": ("text_field_embedder", False),
    "contextualizer": ("seq2seq_encoder", False),
    "output_head": ("output_head", False),
    "tokenizer": ("tokenizer", False),
    "token_indexers": ("token_indexer", True),
    "token_embedders": ("token_embedder", True),
}
# Why a known key is refused in a biLM (any key not allowed is refused; these say more).
REFUSED_KEYS = {
    "initializer": "an initializer rewrites or reads weights when the model is built (the "
    "`pretrained` one from any file)",
    "regularizer": "a training-only setting",
    "archive_file": "it names another archive to load (a nested archive)",
    "pretrained_file": "it reads a file outside the model when the model is built",
    "_pretrained": "it loads a module from another archive (a nested archive)",
    "override_weights_file": "it loads weights from a file outside the model",
}
# Components of a task archive that may name an archive: the plugin's own, whose biLM is read
# and checked as a received biLM.
ARCHIVE_FILE_TYPES = frozenset({"elmo_c_token_embedder", "fasttext_subwords"})
# The keys of `COMPONENTS` whose value names a file the component reads (fastText `.bin`s, a BPE
# tokenizer, a char-CNN's ELMo options and weights). In a model directory each names one of the
# directory's own files (`archive.read_directory_config`); in an archive's config they are paths
# on the machine that loads it (docs/security.md).
FILE_KEYS = frozenset({
    "model_path", "output_embedding_fasttext", "tokenizer_path", "options_file", "weight_file",
})  # fmt: skip

_URL = re.compile(
    r"^(?:[A-Za-z][A-Za-z0-9+.\-]*://|(?:https?|s3|gs|gcs|hf|file|ftp|sftp|data|az|abfs|r2):)"
)
_ARCHIVE = re.compile(r"\.(?:tar\.gz|tgz|tar\.bz2|tbz2?|tar\.xz|txz|tar|zip)(?:!|$)", re.IGNORECASE)


# The package whose registered components make a config an ELMo-C one (`is_elmo_c_config`).
PLUGIN_PACKAGE = "allennlp_elmo_c"
# The base class of each built section's own component, by the name AllenNLP's `Registrable`
# keeps it under (`BUILT`).
_SECTION_BASES = {
    "model": "Model",
    "dataset_reader": "DatasetReader",
    "validation_dataset_reader": "DatasetReader",
}


def _plugin_registrations() -> Tuple[Dict[str, frozenset], frozenset]:
    """(name -> the base classes this plugin registers it under, the names anything else
    registers), from AllenNLP's `Registrable` registry as it is now."""
    from allennlp.common.registrable import Registrable

    mine: Dict[str, set] = {}
    others = set()
    for base, names in Registrable._registry.items():
        for name, (subclass, _) in names.items():
            if subclass.__module__.split(".")[0] == PLUGIN_PACKAGE:
                mine.setdefault(name, set()).add(base.__name__)
            else:
                others.add(name)
    return {name: frozenset(bases) for name, bases in mine.items()}, frozenset(others)


def is_elmo_c_config(config: Any) -> bool:
    """
    Whether a model's config builds a component of this plugin: a `type` in one of its built
    sections (`BUILT`; the training-only sections build nothing when a model is loaded) that a
    class of `allennlp_elmo_c` is registered under in AllenNLP's `Registrable` registry. A name
    that something else registers too (AllenNLP's `from_archive` model beside this plugin's
    `from_archive` reader) counts only as a section's own type, whose base class is known.
    Every received-model check of the plugin (`received_config`, `allocation_budget`,
    `hub_models`) is for these configs, and AllenNLP loads and trains any other one as it
    would without the plugin. A config that is not a JSON object is not an ELMo-C one.
    """
    if not isinstance(config, dict):
        return False
    mine, others = _plugin_registrations()
    for section in BUILT:
        node = config.get(section)
        own = node.get("type") if isinstance(node, dict) else None
        if isinstance(own, str) and _SECTION_BASES[section] in mine.get(own, ()):
            return True
        for _, _, item in walk(node, section):
            kind = item.get("type") if isinstance(item, dict) else None
            if isinstance(kind, str) and kind in mine and kind not in others:
                return True
    return False


def is_bilm_config(config: Any) -> bool:
    """Whether a config's model is an `elmo_c` biLM."""
    model = config.get("model") if isinstance(config, dict) else None
    return isinstance(model, dict) and model.get("type") == "elmo_c"


def check_received_config(config: Any, where: str) -> None:
    """`check_bilm_config` for an `elmo_c` model's config, `check_task_config` for any other."""
    if is_bilm_config(config):
        check_bilm_config(config, where)
    else:
        check_task_config(config, where)


class BiLMConfigParts(NamedTuple):
    """What `check_bilm_config`'s walk of a biLM's components found, by dotted key path (from the
    config's top, without the prefix of messages)."""

    # `fasttext` embedders and `fasttext_subwords` indexers: `(path, node)`.
    fasttext_components: List[Tuple[str, Dict[str, Any]]]
    # Every key naming a fastText `.bin` (`FASTTEXT_KEYS`): `(path, node, key)`.
    fasttext_keys: List[Tuple[str, Dict[str, Any], str]]
    # Every key naming a file (`FILE_KEYS`): `(path, node, key)`.
    files: List[Tuple[str, Dict[str, Any], str]]
    # Every size (`SIZE_KEYS`, each integer of `cutoffs`): `(path, value)`.
    sizes: List[Tuple[str, int]]


def check_bilm_config(
    config: Any, where: str, prefix: str = "", in_directory: bool = False
) -> BiLMConfigParts:
    """
    Refuses, with a `ConfigurationError` naming `where` and the key path (under `prefix`, e.g.
    `bilm.` for a model directory's config.json), a biLM config that is not made only of allowed
    components with allowed keys and plain sizes (see the module docstring). `in_directory`: the
    config of a model directory, which never holds `model.nearest_neighbour_words`. Returns the
    parts its walk found.
    """
    _check_generic(config, where, prefix, frozenset())
    parts = BiLMConfigParts([], [], [], [])
    for key, value in config.items():
        path = prefix + key
        if key in BUILT:
            place = "model" if key == "model" else "dataset_reader"
            _check_component(value, place, where, path, parts, len(prefix))
        elif key == "vocabulary":
            _check_vocabulary(value, where, path)
    if in_directory and config["model"].get("nearest_neighbour_words") is not None:
        raise _refusal(
            where, prefix + "model.nearest_neighbour_words",
            "names a word list outside the model (a training-time setting that `package` never "
            "writes)",
        )  # fmt: skip
    return parts


def check_task_config(config: Any, where: str, prefix: str = "") -> None:
    """
    Refuses, with a `ConfigurationError` naming `where` and the key path, a received task
    model's config that asks for code, a fetch or a nested archive, builds a component that is
    not in `TASK_COMPONENTS`, or names a local model or an outside file or program where one of
    them loads it (see the module docstring).
    """
    _check_generic(config, where, prefix, ARCHIVE_FILE_TYPES)
    if "vocabulary" in config:
        _check_vocabulary(config["vocabulary"], where, prefix + "vocabulary")
    for section in BUILT:
        if section in config:
            skip = REMOVED_ON_LOAD if section == "model" else frozenset()
            _check_task_components(config[section], where, prefix + section, skip)


def _check_task_components(section: Any, where: str, path: str, skip: frozenset) -> None:
    """Every component of a task config's built `section` (at `path`) is of a type of
    `TASK_COMPONENTS`, and the keys it names something to load with keep to their rule (not
    below the keys of `skip` outside lists, which AllenNLP's loader removes)."""
    for key_path, _, item in walk(section, path, skip):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind is None:
            keys = UNTYPED_KEYS
        elif isinstance(kind, str) and kind in TASK_COMPONENTS:
            keys = TASK_COMPONENTS[kind]
        else:
            raise _refusal(
                where, key_path + ".type",
                f"type {quoted(kind, 60)} is not a component a received task model may build "
                "(allowed: TASK_COMPONENTS in allennlp_elmo_c/received/task_components.py)",
            )  # fmt: skip
        for key, rule in keys.items():
            value = item.get(key)
            if value is None:
                continue
            if rule in (HUB_MODEL, SPACY_MODEL):
                _check_model_name(value, where, f"{key_path}.{key}")
            elif rule == NOT_RECEIVED:
                raise _refusal(
                    where, f"{key_path}.{key}",
                    "it names a file or program outside the model to load or run; a received "
                    "task model leaves it out",
                )  # fmt: skip


def drop_training_only(config: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a checked biLM config without what training alone reads
    (`model.nearest_neighbour_words`); any other config unchanged."""
    if not is_bilm_config(config) or "nearest_neighbour_words" not in config["model"]:
        return config
    model = {
        key: value for key, value in config["model"].items() if key != "nearest_neighbour_words"
    }
    return {**config, "model": model}


def _check_generic(config: Any, where: str, prefix: str, archive_file_types: frozenset) -> None:
    """The refusals common to every received config: its shape (top-level keys, a model),
    `trust_remote_code` anywhere, and in the built sections `*_kwargs`, nested archives, URLs,
    archive names and local model names (`archive_file` allowed on `archive_file_types`)."""
    if not isinstance(config, dict):
        raise _refusal(where, prefix.rstrip(".") or "(top level)", "is not a JSON object")
    for key_path, key, _ in walk(config, prefix.rstrip(".")):
        if key == "trust_remote_code":
            raise _refusal(where, key_path, "a received model may not ask to run code it brings")
    for key, value in config.items():
        if key not in BUILT and key != "vocabulary" and key not in TRAINING_ONLY:
            raise _refusal(where, prefix + key, "is not a key of an AllenNLP model's config")
    if not isinstance(config.get("model"), (dict, str)):
        raise _refusal(where, prefix + "model", "is missing")
    if not isinstance(config.get("vocabulary", {}), dict):
        raise _refusal(where, prefix + "vocabulary", "is not a JSON object")
    # What AllenNLP's loader removes from a task model's config before building it.
    skip = frozenset() if is_bilm_config(config) else REMOVED_ON_LOAD
    for section in BUILT:
        if section in config:
            section_skip = skip if section == "model" else frozenset()
            _check_section(
                config[section], where, prefix + section, section_skip, archive_file_types
            )


def _check_section(
    section: Any, where: str, path: str, skip: frozenset, archive_file_types: frozenset
) -> None:
    for key_path, key, item in walk(section, path, skip):
        if key in skip:  # reached in a list, where AllenNLP's loader leaves it to be built
            why = f"{REFUSED_KEYS[key]}; AllenNLP's loader removes it only outside lists"
            raise _refusal(where, key_path, why)
        if isinstance(key, str) and key.endswith("_kwargs"):
            raise _refusal(
                where, key_path,
                "a `*_kwargs` key passes arbitrary arguments to another library (e.g. "
                "trust_remote_code to Hugging Face)",
            )  # fmt: skip
        if key in ("_pretrained", "override_weights_file"):
            raise _refusal(where, key_path, REFUSED_KEYS[key])
        if isinstance(item, dict):
            kind = item.get("type")
            if kind == "from_archive":
                why = "'from_archive' loads another archive (a nested archive)"
                raise _refusal(where, key_path + ".type", why)
            if "archive_file" in item and kind not in archive_file_types:
                raise _refusal(where, key_path + ".archive_file", REFUSED_KEYS["archive_file"])
        elif isinstance(item, str):
            if key == "archive_file" and _is_archive_file_of(
                section, path, key_path, archive_file_types
            ):
                continue
            _check_string(item, where, key_path)


def _is_archive_file_of(section: Any, path: str, key_path: str, types: frozenset) -> bool:
    """Whether `key_path` is the `archive_file` of a component of `section` (at `path`) whose
    type is one of `types`."""
    parent = key_path[len(path) + 1:].rpartition(".")[0]
    node = lookup_dotted(section, parent) if parent else section
    return isinstance(node, dict) and node.get("type") in types


def _check_model_name(name: Any, where: str, path: str) -> None:
    """A Hugging Face or spaCy model name must be a name, not a local directory (whose contents
    the library would then load)."""
    if isinstance(name, str) and (
        os.path.isabs(name) or name.startswith((".", "~")) or "\\" in name or os.path.exists(name)
    ):
        raise _refusal(
            where, path,
            f"{name!r} is a local path; a received model may only name a published model, not "
            "load a directory",
        )  # fmt: skip


def _check_component(
    node: Any, place: str, where: str, path: str, parts: BiLMConfigParts, cut: int
) -> None:
    """A component of a biLM's config: an allowed type for `place`, with allowed keys and plain
    sizes; what it holds is added to `parts` (paths without their first `cut` characters, the
    prefix of messages)."""
    kind = _component_type(node, place, where, path)
    if kind in FASTTEXT_COMPONENTS and "model_path" in node:
        parts.fasttext_components.append((path[cut:], node))
    for key, value in node.items():
        key_path = f"{path}.{key}"
        if key == "type":
            continue
        if key not in COMPONENTS[place][kind]:
            why = REFUSED_KEYS.get(key, f"is not a parameter a received {kind!r} may have")
            raise _refusal(where, key_path, why)
        if key in FILE_KEYS:
            parts.files.append((key_path[cut:], node, key))
            if key in FASTTEXT_KEYS and isinstance(value, str):
                parts.fasttext_keys.append((key_path[cut:], node, key))
        if key not in SUBCOMPONENTS:
            _check_plain_value(value, key, where, key_path, parts, cut)
            continue
        sub_place, many = SUBCOMPONENTS[key]
        if not many:
            _check_component(value, sub_place, where, key_path, parts, cut)
            continue
        if not isinstance(value, dict):
            raise _refusal(where, key_path, "is not a mapping of names to components")
        for name, component in value.items():
            _check_component(component, sub_place, where, f"{key_path}.{name}", parts, cut)


def _component_type(node: Any, place: str, where: str, path: str) -> str:
    """The type of a biLM's component at `place` (its place's default if it names none), one
    `COMPONENTS` allows there."""
    if not isinstance(node, dict):
        raise _refusal(where, path, f"is not a component (a JSON object with a type), got {node!r}")
    allowed = COMPONENTS[place]
    kind = node.get("type", DEFAULT_TYPES.get(place))
    if kind not in allowed:
        given = f"type {kind!r}" if "type" in node else f"no type (AllenNLP's default is {kind!r})"
        raise _refusal(
            where, path + ".type" if "type" in node else path,
            f"{given} is not a {place.replace('_', ' ')} a received biLM may build (allowed: "
            f"{', '.join(sorted(allowed))})",
        )  # fmt: skip
    return kind


def _check_plain_value(
    value: Any, key: str, where: str, path: str, parts: BiLMConfigParts, cut: int
) -> None:
    """A key's value that holds no component; a size (`SIZE_KEYS`) is added to `parts`."""
    for item_path, _, item in walk(value, path):
        if isinstance(item, dict) and "type" in item:
            raise _refusal(where, item_path, "holds a component where a plain value is expected")
    if key == "loss" and not (isinstance(value, str) and value in CONTINUOUS_LOSSES):
        allowed = ", ".join(sorted(CONTINUOUS_LOSSES))
        raise _refusal(where, path, f"{value!r} is not a loss a received biLM may use ({allowed})")
    if key in SIZE_KEYS:
        found = _sizes(value, key, where, path)
        parts.sizes.extend((path[cut:] + suffix, size) for suffix, size in found)


def _sizes(value: Any, key: str, where: str, path: str) -> Iterator[Tuple[str, int]]:
    """`(suffix of the key path, size)` of a size key's value (a list for `cutoffs`), each a
    non-negative integer within `MAX_SIZE` (`MAX_LAYERS` for `num_layers`); null is no size."""
    if value is None:
        return
    listed = key == "cutoffs" and isinstance(value, list)
    items = list(enumerate(value)) if listed else [(None, value)]
    limit = MAX_LAYERS if key == "num_layers" else MAX_SIZE
    for index, item in items:
        suffix = "" if index is None else f".{index}"
        if isinstance(item, bool) or not isinstance(item, int):
            shown = repr(item) if len(repr(item)) <= 40 else f"{repr(item)[:40]}..."
            raise _refusal(where, path + suffix, f"{shown} is not a size (a non-negative integer)")
        if not 0 <= item <= limit:
            raise _refusal(where, path + suffix, f"{item} is not a size between 0 and {limit}")
        yield suffix, item


def _check_vocabulary(value: Any, where: str, path: str) -> None:
    if not isinstance(value, dict):
        raise _refusal(where, path, "is not a JSON object")
    kind = value.get("type", "from_instances")
    if kind not in VOCABULARY_TYPES:
        raise _refusal(
            where, path + ".type",
            f"{kind!r} is not a vocabulary type a received model may name (allowed: "
            f"{', '.join(sorted(VOCABULARY_TYPES))})",
        )  # fmt: skip


def _check_string(value: str, where: str, path: str) -> None:
    if _URL.match(value):
        raise _refusal(
            where, path,
            f"{value!r} is a URL; a received model is loaded from its own files only, nothing "
            "is fetched",
        )  # fmt: skip
    if _ARCHIVE.search(value):
        raise _refusal(where, path, f"{value!r} names an archive (a nested archive is not loaded)")


def named_files(config: Any) -> List[Tuple[str, Dict[str, Any], str]]:
    """`(dotted key path, the mapping holding the key, key)` of every `FILE_KEYS` key of
    `config`, at any depth."""
    found = []
    for path, _, node in walk(config, ""):
        if isinstance(node, dict):
            found.extend(
                (join_key(path, key), node, key) for key in node if key in FILE_KEYS
            )
    return sorted(found, key=lambda item: item[0])


def _refusal(where: str, path: str, why: str) -> ConfigurationError:
    return ConfigurationError(
        f"{where}: {printable(path)}: {printable(why, 400)}. A received model's config is data, "
        "not a program: it is refused before anything is built (docs/security.md)"
    )


# Keys of a model directory's config.json (outside `bilm`) that would make Hugging Face load
# code or other components (`tokenizer_class`: `AutoTokenizer` would read the directory with
# that tokenizer instead of the plugin's).
DIRECTORY_REFUSED = frozenset(
    {"auto_map", "custom_pipelines", "tokenizer_class", "processor_class"}
)


def check_directory_config(config: Dict[str, Any], where: str) -> None:
    """A model directory's config.json outside its `bilm` (which `check_bilm_config` checks, with
    the prefix `bilm.`): no `trust_remote_code` anywhere, no `auto_map` or `custom_pipelines`
    (Hugging Face's ways to load code a directory brings), no `tokenizer_class` or
    `processor_class` (another loader than the plugin's), no `*_kwargs`."""
    for key_path, key, _ in walk(config, ""):
        if key == "trust_remote_code":
            raise _refusal(where, key_path, "a received model may not ask to run code it brings")
    for key in config:
        if key in DIRECTORY_REFUSED or key.endswith("_kwargs"):
            raise _refusal(
                where, key,
                "it would make Hugging Face load code or components the directory names; a model "
                "directory's config.json has none",
            )  # fmt: skip
