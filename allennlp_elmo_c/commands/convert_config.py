"""
`convert-config`: a stock AllenNLP task config that uses ELMo converted to use an ELMo-C model,
the layers that read it resized from the sizes the config tells (docs/using-a-model.md), and
written as JSON.
"""

import argparse
import copy
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import Params

from allennlp_elmo_c.archive import checked_fasttext, read_archive_config
from allennlp_elmo_c.commands.describe import downstream_snippet
from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.config_tree import Key, join_key, walk
from allennlp_elmo_c.received.limits import MAX_CONFIG_BYTES
from allennlp_elmo_c.received.received_json import parse_received_json, read_received_json
from allennlp_elmo_c.received.safe_extract import read_member

# AllenNLP's contextual embedders over a trained language_model archive (allennlp-models' lm).
LM_EMBEDDERS = ("bidirectional_lm_token_embedder", "language_model_token_embedder")
ELMO_C_EMBEDDER = "elmo_c_token_embedder"
STOCK_ELMO_DIM = 1024  # elmo_2x4096_512_2048cnn_2xhighway: 2 x 512


def _stated(read: int, stock_dim: Optional[int], path: str, source: str) -> int:
    if stock_dim is not None and stock_dim != read:
        raise ConfigurationError(f"{path}: --stock-dim {stock_dim}, but {source} says {read}")
    return read


def stock_elmo_dim(
    params: Dict[str, Any], path: str, notes: List[str], stock_dim: Optional[int] = None
) -> int:
    """The output size of a stock ELMo or language-model embedder (or BCN's `Elmo`): its
    `projection_dim`, else its local options file's, else `stock_dim`, else its options file's
    name's (`elmo_2x4096_512_...`: 2 x 512), else 1024 with a note."""
    if params.get("type") in LM_EMBEDDERS:
        return stock_lm_dim(params, path, notes, stock_dim)
    if params.get("projection_dim"):
        return int(params["projection_dim"])
    options = str(params.get("options_file", ""))
    if options and Path(options).is_file():
        try:
            recorded = json.loads(Path(options).read_text(encoding="utf-8"))
            read = 2 * int(recorded["lstm"]["projection_dim"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigurationError(
                f"{path}: cannot read the ELMo options file {options} ({error})"
            )
        return _stated(read, stock_dim, path, f"the options file {options}")
    if stock_dim is not None:
        return stock_dim
    match = re.search(r"\d+x\d+_(\d+)_\d+cnn", Path(options).name)
    if match:
        return 2 * int(match.group(1))
    notes.append(
        f"{path}: ELMo size not known from options_file {options!r}; assumed {STOCK_ELMO_DIM} "
        "(state it with --stock-dim)"
    )
    return STOCK_ELMO_DIM


def _lm_archive_config(archive_file: str) -> Dict[str, Any]:
    """The config.json of an AllenNLP archive (a model.tar.gz or a serialization directory)."""
    path = Path(archive_file)
    where = f"{archive_file}: config.json"
    if path.is_dir():
        return read_received_json(path / "config.json", where)
    data = read_member(archive_file, "config.json", MAX_CONFIG_BYTES)
    if data is None:
        raise ValueError("no config.json in it")
    return parse_received_json(data, where)


def stock_lm_dim(
    params: Dict[str, Any], path: str, notes: List[str], stock_dim: Optional[int] = None
) -> int:
    """The output size of a stock language-model embedder: its contextualizer's, from a local LM
    archive, else `stock_dim`, else 1024 (the released transformer ELMo's) with a note."""
    archive_file = str(params.get("archive_file", ""))
    if archive_file and Path(archive_file).exists():
        try:
            config = _lm_archive_config(archive_file)
            contextualizer = config["model"]["contextualizer"]
        except (OSError, ValueError, KeyError, TypeError, tarfile.TarError, EOFError) as error:
            raise ConfigurationError(
                f"{path}: cannot read the language model archive {archive_file} ({error}); "
                "state its output size with --stock-dim after fixing or removing the path"
            ) from error
        read = encoder_dim(contextualizer) if isinstance(contextualizer, dict) else None
        if read is not None:
            return _stated(read, stock_dim, path, f"the language model archive {archive_file}")
        if stock_dim is None:
            kind = (
                contextualizer.get("type") if isinstance(contextualizer, dict) else contextualizer
            )
            raise ConfigurationError(
                f"{path}: the output size of the language model in {archive_file} (a {kind!r} "
                "contextualizer) cannot be told from its config; state it with --stock-dim"
            )
        return stock_dim
    if stock_dim is not None:
        return stock_dim
    notes.append(
        f"{path}: the language model's output size is not known from archive_file {archive_file!r} "
        f"(not a local file); assumed {STOCK_ELMO_DIM} (the released transformer ELMo's; state it "
        "with --stock-dim)"
    )
    return STOCK_ELMO_DIM


def encoder_dim(encoder: Dict[str, Any]) -> Optional[int]:
    """The output size of a seq2vec encoder's or a language model's contextualizer's config,
    `None` where the config does not tell it."""
    kind = encoder.get("type")
    try:
        if kind == "cnn":
            if encoder.get("output_dim"):
                return int(encoder["output_dim"])
            filters = len(encoder.get("ngram_filter_sizes", (2, 3, 4, 5)))
            return int(encoder["num_filters"]) * filters
        if kind in ("lstm", "gru", "rnn", "augmented_lstm", "alternating_lstm"):
            return int(encoder["hidden_size"]) * (2 if encoder.get("bidirectional") else 1)
        if kind == "stacked_bidirectional_lstm":
            return 2 * int(encoder["hidden_size"])
        if kind in ("boe", "bag_of_embeddings"):
            return int(encoder["embedding_dim"])
        if kind == "cnn-highway":
            return int(encoder["projection_dim"])
        if kind == "bidirectional_language_model_transformer":  # forward + backward
            return 2 * int(encoder["input_dim"])
    except (KeyError, TypeError, ValueError):
        return None
    return None


def token_embedder_dim(params: Dict[str, Any]) -> Optional[int]:
    """The output size of a token embedder's config, `None` where it cannot be told from it."""
    kind = params.get("type", "embedding")
    try:
        if kind == "embedding":
            return int(params.get("projection_dim") or params["embedding_dim"])
        if kind == "character_encoding":
            return encoder_dim(params.get("encoder", {}))
        if kind == "pass_through":
            return int(params["hidden_dim"])
        if kind == "empty":
            return 0
        if kind == ELMO_C_EMBEDDER and params.get("expected_output_dim"):
            if params.get("projection_dim"):
                return int(params["projection_dim"])
            mixes = int(params.get("num_output_representations", 1))
            return int(params["expected_output_dim"]) * mixes
    except (KeyError, TypeError, ValueError):
        return None
    return None


ELMO_EMBEDDER = "elmo_token_embedder"
CONVERTED = (ELMO_EMBEDDER, *LM_EMBEDDERS)
ELMO_INDEXER = "elmo_characters"
# What the `elmo_c_run` callback links into a task run, for its archive.
BUNDLED = "fasttext/*.bin"
# ELMo variants whose inputs or outputs differ from elmo_token_embedder's.
UNCONVERTIBLE = {
    "elmo_token_embedder_multilang": "a multilingual ELMo (one biLM per language)",
}
# elmo_token_embedder's settings that elmo_c_token_embedder takes with the same meaning.
CARRIED = ("dropout", "do_layer_norm", "requires_grad", "projection_dim", "scalar_mix_parameters")
# ... and those of the language-model embedders.
LM_CARRIED = ("dropout", "requires_grad")
DROPPED = {
    "options_file": "replaced by archive_file",
    "weight_file": "replaced by archive_file",
    "vocab_to_cache": "not needed: the biLM reads fastText subwords, not a word cache",
    "num_output_representations": "BCN's input ELMo is one mix",
    "keep_sentence_boundaries": "not used by BCN's input ELMo",
}
LM_DROPPED = {
    "archive_file": "the language model's archive; replaced by the ELMo-C archive_file",
    "bos_eos_tokens": f"no meaning for {ELMO_C_EMBEDDER}: it adds its own sentence boundaries",
    "remove_bos_eos": f"no meaning for {ELMO_C_EMBEDDER}: it removes its sentence boundaries "
                      "(keep_sentence_boundaries false)",
    "vocab_namespace": f"no meaning for {ELMO_C_EMBEDDER}: the biLM reads fastText subwords",
}  # fmt: skip
# Keys of the layers that read a text field embedder's output.
DIM_KEYS = ("input_size", "input_dim", "embedding_dim", "vector_dim", "matrix_dim",
            "tensor_1_dim", "tensor_2_dim")  # fmt: skip
BCN_KEY = "elmo_c"  # BCN refuses a token embedder named "elmo"
# Keys whose size keys are never resized: the embedders replaced, and the parsers' POS tags.
NOT_RESIZED = ("text_field_embedder", "pos_tag_embedding")


@dataclass
class Change:
    """One edit of the config: `path` (as `a.b[0].c`) went from `old` to `new`."""

    path: str
    old: Any
    new: Any
    note: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {_short(self.old)} -> {_short(self.new)}"
        return f"{text}  ({self.note})" if self.note else text


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str) and value.startswith("{"):  # a shape, not a value
        return value
    if isinstance(value, dict):
        return f"{{type: {value['type']}, ...}}" if "type" in value else "{...}"
    return json.dumps(value)


def _join(path: str, key: Key) -> str:
    """`join_key`, with a list's index in brackets (`a.b[0].c`)."""
    return f"{path}[{key}]" if isinstance(key, int) else join_key(path, key)


def _dicts(node: Any, path: str = "") -> Iterator[Tuple[str, Dict[str, Any]]]:
    """Every dict in `node` with its path, parents first."""
    return ((at, item) for at, _, item in walk(node, path, join=_join) if isinstance(item, dict))


@dataclass
class Conversion:
    config: Dict[str, Any]
    changes: List[Change]
    notes: List[str]


class _Converter:
    def __init__(
        self,
        config: Dict[str, Any],
        archive_file: str,
        fasttext_path: Optional[str],
        stock_dim: Optional[int] = None,
    ):
        if stock_dim is not None and stock_dim <= 0:
            raise ConfigurationError(f"--stock-dim must be positive, not {stock_dim}")
        self.stock_dim = stock_dim
        self.config = copy.deepcopy(config)
        self.changes: List[Change] = []
        self.notes: List[str] = []
        if not Path(archive_file).exists():
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        archive_config = read_archive_config(archive_file)
        snippet = downstream_snippet(archive_config, archive_file)
        self.indexer = snippet["token_indexers"]["elmo"]
        self.embedder = snippet["token_embedders"]["elmo"]
        if fasttext_path is not None:
            if self.indexer.get("type") != "fasttext_subwords":
                raise ConfigurationError(
                    f"{archive_file}: the biLM reads no fastText (--fasttext-path)"
                )
            checked_fasttext(archive_config, archive_file, fasttext_path)  # the biLM's own .bin?
            self.indexer = {"type": "fasttext_subwords", "model_path": fasttext_path}
            self.embedder = {**self.embedder, "fasttext_path": fasttext_path}
        # old total -> new total of each text field embedder that had ELMo in it
        self.sizes: Dict[int, Tuple[int, str]] = {}
        self.elmo_keys: Dict[str, str] = {}  # indexer key in the stock config -> key now
        self.stock_elmo_dims: List[int] = []  # the output size of each stock ELMo replaced

    def run(self) -> Conversion:
        model = self.config["model"]
        for path, node in _dicts(self.config):
            if node.get("type") in UNCONVERTIBLE:
                raise ConfigurationError(
                    f"cannot convert {path}: {node['type']} is {UNCONVERTIBLE[node['type']]}, not "
                    f"{ELMO_EMBEDDER}; replace it by hand"
                )
        containers = self._elmo_containers()
        bcn = isinstance(model.get("elmo"), dict)
        if not containers and not bcn:
            found = [path for path, node in _dicts(self.config) if node.get("type") == ELMO_INDEXER]
            where = f" (only {ELMO_INDEXER} indexers, at {', '.join(found)})" if found else ""
            raise ConfigurationError(
                f"the config uses no ELMo: no {ELMO_EMBEDDER} and no model-level elmo{where}"
            )
        for path, container in containers.items():
            self._convert_text_field_embedder(path, container)
        if bcn:
            self._convert_bcn()
        self._convert_indexers()
        self._resize()
        self._use_atomic_checkpointer()
        self._use_plugin_trainer()
        return Conversion(self.config, self.changes, self.notes)

    def _use_atomic_checkpointer(self) -> None:
        trainer = self.config.get("trainer")
        if not isinstance(trainer, dict):
            return
        checkpointer = trainer.get("checkpointer", {})
        if not isinstance(checkpointer, dict) or checkpointer.get("type", "default") != "default":
            return
        trainer["checkpointer"] = {**checkpointer, "type": "atomic"}
        self.changes.append(Change("trainer.checkpointer.type", checkpointer.get("type"), "atomic",
                                   "checkpoints that survive a crash, for --recover"))  # fmt: skip

    def _use_plugin_trainer(self) -> None:
        """A `gradient_descent` trainer becomes `elmo_c`, with the `elmo_c_run` callback, and
        the archive includes the fastText `.bin` that callback links (`BUNDLED`)."""
        trainer = self.config.get("trainer")
        if not isinstance(trainer, dict):
            return
        if trainer.get("type", "gradient_descent") == "gradient_descent":
            why = "gradient_descent, atomic when -o drops the type"
            self.changes.append(Change("trainer.type", trainer.get("type"), "elmo_c", why))
            trainer["type"] = "elmo_c"
        callbacks = trainer.setdefault("callbacks", [])
        if isinstance(callbacks, list) and {"type": "elmo_c_run"} not in callbacks:
            callbacks.append({"type": "elmo_c_run"})
            why = "the biLM's fastText .bin linked for the archive"
            self.changes.append(Change("trainer.callbacks", None, "elmo_c_run", why))
        include = self.config.setdefault("include_in_archive", [])
        if isinstance(include, list) and BUNDLED not in include:
            include.append(BUNDLED)
            why = "the task archive carries the biLM's fastText model"
            self.changes.append(Change("include_in_archive", None, BUNDLED, why))

    def _elmo_containers(self) -> Dict[str, Dict[str, Any]]:
        return {path: node for path, node in _dicts(self.config["model"], "model")
                if any(_has_type(value, kind) for value in node.values() for kind in CONVERTED)}

    def _new_embedder(self, stock: Dict[str, Any], path: str) -> Dict[str, Any]:
        new = dict(self.embedder)
        dropped = []
        lm = stock.get("type") in LM_EMBEDDERS
        carried, known = (LM_CARRIED, LM_DROPPED) if lm else (CARRIED, DROPPED)
        for key, value in stock.items():
            if key == "type":
                continue
            if key in carried:
                new[key] = value
            elif key in known:
                dropped.append(f"{key} ({known[key]})")
            else:
                dropped.append(f"{key} (no equivalent in {ELMO_C_EMBEDDER})")
        note = "dropped " + ", ".join(dropped) if dropped else ""
        self.changes.append(Change(path, stock, new, note))
        return new

    def _embedders_total(self, embedders: Dict[str, Any], path: str, skip=()) -> int:
        total = 0
        for key, params in embedders.items():
            if key in skip or not isinstance(params, dict):
                continue
            dim = token_embedder_dim(params)
            if dim is None:
                raise ConfigurationError(
                    f"cannot convert: the output size of {_join(path, key)} (a "
                    f"{params.get('type', 'embedding')} token embedder) cannot be told from the "
                    "config, so the layers that read the text field embedder cannot be resized; "
                    "convert this config by hand"
                )
            total += dim
        return total

    def _convert_text_field_embedder(self, path: str, container: Dict[str, Any]) -> None:
        if not path.endswith(("text_field_embedder", ".token_embedders")):
            raise ConfigurationError(
                f"cannot convert the {ELMO_EMBEDDER} in {path}: it is not in a text field "
                "embedder's token_embedders; replace it by hand"
            )
        # AllenNLP < 1.0: the embedders directly in the text field embedder
        if not path.endswith(".token_embedders"):
            embedders = {
                key: value for key, value in container.items()
                if isinstance(value, dict) and key != "embedder_to_indexer_map"
            }
            for key in embedders:
                del container[key]
            container["token_embedders"] = embedders
            self.changes.append(Change(path, "{<embedders>}", "{token_embedders: {<embedders>}}",
                                       "AllenNLP 2 nests token embedders"))  # fmt: skip
            path = _join(path, "token_embedders")
            container = embedders
        elmo = [key for key, value in container.items()
                if isinstance(value, dict) and value.get("type") in CONVERTED]  # fmt: skip
        others = self._embedders_total(container, path, skip=elmo)
        old_total = new_total = others
        for key in elmo:
            stock = container[key]
            stock_dim = stock_elmo_dim(stock, _join(path, key), self.notes, self.stock_dim)
            self.stock_elmo_dims.append(stock_dim)
            old_total += stock_dim
            container[key] = self._new_embedder(stock, _join(path, key))
            new_total += token_embedder_dim(container[key])  # type: ignore[operator]
            self.elmo_keys[key] = key
        self._add_size(old_total, new_total, path)

    def _convert_bcn(self) -> None:
        model = self.config["model"]
        elmo = model["elmo"]
        if model.get("type") != "bcn":
            raise ConfigurationError(
                f"cannot convert model.elmo: a model-level ELMo module is converted only for BCN "
                f"(this model is {model.get('type')!r}); replace it by hand"
            )
        if model.get("use_integrator_output_elmo"):
            raise ConfigurationError(
                "cannot convert model.elmo: use_integrator_output_elmo = true (BCN's integrator "
                f"output ELMo) needs an allennlp Elmo module, which {ELMO_C_EMBEDDER} cannot "
                "replace; set it false (and num_output_representations to 1) first"
            )
        if not model.get("use_input_elmo"):
            raise ConfigurationError(
                "cannot convert model.elmo: BCN uses it nowhere (use_input_elmo is false)"
            )
        embedders = model.get("text_field_embedder", {}).get("token_embedders")
        if not isinstance(embedders, dict):
            raise ConfigurationError(
                "cannot convert the BCN: its text_field_embedder has no token_embedders"
            )
        path = "model.text_field_embedder.token_embedders"
        if BCN_KEY in embedders:
            raise ConfigurationError(
                f"cannot convert the BCN: {_join(path, BCN_KEY)} exists already"
            )
        others = self._embedders_total(embedders, path)
        stock_dim = stock_elmo_dim(elmo, "model.elmo", self.notes, self.stock_dim)
        self.stock_elmo_dims.append(stock_dim)
        old_total = others + stock_dim
        if int(elmo.get("num_output_representations", 1)) != 1:
            raise ConfigurationError(
                "cannot convert model.elmo: BCN's input ELMo is one mix "
                "(num_output_representations 1)"
            )
        del model["elmo"]
        self.changes.append(Change("model.elmo", elmo, None, f"moved to {_join(path, BCN_KEY)}"))
        for flag in ("use_input_elmo", "use_integrator_output_elmo"):
            if flag in model:
                self.changes.append(Change(_join("model", flag), model.pop(flag), None,
                                           "ELMo-C is in the text field embedder"))  # fmt: skip
        embedders[BCN_KEY] = self._new_embedder(elmo, _join(path, BCN_KEY))
        self.elmo_keys["elmo"] = BCN_KEY
        self._add_size(old_total, others + token_embedder_dim(embedders[BCN_KEY]), path)  # type: ignore[operator]

    def _add_size(self, old: int, new: int, path: str) -> None:
        extras = {0: ""}
        model = self.config["model"]
        if isinstance(model.get("binary_feature_dim"), int):  # SRL's verb indicator
            extras[model["binary_feature_dim"]] = "binary_feature_dim"
        pos = model.get("pos_tag_embedding")
        if isinstance(pos, dict) and isinstance(pos.get("embedding_dim"), int):  # parsers
            extras[pos["embedding_dim"]] = "pos_tag_embedding"
        markers, answers = model.get("marker_embedding_dim"), model.get("num_context_answers")
        if isinstance(markers, int) and isinstance(answers, int) and markers * answers:  # dialog QA
            extras[markers * answers] = (
                f"num_context_answers {answers} x marker_embedding_dim {markers}"
            )
        for extra, name in extras.items():
            known = self.sizes.get(old + extra)
            if known is not None and known[0] != new + extra:
                raise ConfigurationError(
                    f"cannot convert: layers of input size {old + extra} may read {known[1]} or "
                    f"{path}, which change to different sizes; convert this config by hand"
                )
            note = f"reads {path} ({old} -> {new})" + (f" + {name} {extra}" if extra else "")
            self.sizes[old + extra] = (new + extra, note)

    def _convert_indexers(self) -> None:
        found = set()
        for path, node in list(_dicts(self.config)):
            if not (path == "token_indexers" or path.endswith(".token_indexers")):
                continue
            for key in list(node):
                value = node[key]
                if key not in self.elmo_keys:
                    if isinstance(value, dict) and value.get("type") == ELMO_INDEXER:
                        raise ConfigurationError(
                            f"cannot convert {_join(path, key)}: an {ELMO_INDEXER} indexer under "
                            f"a key no {ELMO_EMBEDDER} reads ({sorted(self.elmo_keys) or 'none'})"
                        )
                    continue
                new_key = self.elmo_keys[key]
                new = dict(self.indexer)
                dropped = []
                for setting, setting_value in (value.items() if isinstance(value, dict) else ()):
                    if setting == "token_min_padding_length":
                        new[setting] = setting_value
                    elif setting != "type":
                        dropped.append(setting)
                note = f"dropped {', '.join(dropped)}" if dropped else ""
                if new_key != key:
                    del node[key]
                    note = "; ".join(filter(None, [f"BCN refuses the key {key!r}", note]))
                    moved = f"moved to {_join(path, new_key)}"
                    self.changes.append(Change(_join(path, key), value, None, moved))
                node[new_key] = new
                old = value if new_key == key else None
                self.changes.append(Change(_join(path, new_key), old, new, note))
                found.add(key)
        for key in set(self.elmo_keys) - found:
            raise ConfigurationError(
                f"cannot convert: no reader has a token indexer {key!r} for the ELMo embedder "
                f"{key!r} (its {ELMO_INDEXER} indexer)"
            )

    def _resize(self) -> None:
        """Resizes the size keys (`DIM_KEYS`) whose value is an old text field embedder size,
        alone, plus a known extra feature or 2 to 4 times one; notes those it leaves that may
        still include the stock ELMo's output."""
        mapping = {old: new for old, (new, _) in self.sizes.items() if old != new}
        if not mapping:
            return
        kept: List[Tuple[str, int]] = []
        resized = self._resize_keys(self.config["model"], "model", mapping, kept)
        self._note_undecided(kept, mapping)
        if not resized:
            sizes = ", ".join(f"{old} -> {new}" for old, new in sorted(mapping.items()))
            self.notes.append(
                f"no {'/'.join(DIM_KEYS[:2])}-like key had the old text field embedder size "
                f"({sizes}): if a layer of this model is sized by hand for it, resize it"
            )

    def _resize_keys(
        self, node: Any, path: str, mapping: Dict[int, int], kept: List[Tuple[str, int]]
    ) -> bool:
        """Whether a size key in `node` was resized; those kept are appended to `kept`."""
        resized = False
        if isinstance(node, list):
            for index, value in enumerate(node):
                resized |= self._resize_keys(value, _join(path, index), mapping, kept)
            return resized
        if not isinstance(node, dict):
            return False
        for key, value in node.items():
            child = _join(path, key)
            if key in NOT_RESIZED or _has_type(value, ELMO_C_EMBEDDER):
                continue
            if not _is_size_key(key, value):
                resized |= self._resize_keys(value, child, mapping, kept)
                continue
            new = self._new_size(value, mapping)
            if new is None:
                kept.append((child, value))
                continue
            node[key] = new[0]
            self.changes.append(Change(child, value, node[key], new[1]))
            resized = True
        return resized

    def _new_size(self, value: int, mapping: Dict[int, int]) -> Optional[Tuple[int, str]]:
        """The new size of a size key and the reason, or None."""
        if value in mapping:
            return mapping[value], self.sizes[value][1]
        for times in (2, 3, 4):
            if value % times == 0 and value // times in mapping:
                old = value // times
                return times * mapping[old], (
                    f"{times} x ({self.sizes[old][1]}), e.g. a layer that reads the embeddings "
                    "concatenated with their attended summary"
                )
        return None

    def _note_undecided(self, kept: List[Tuple[str, int]], mapping: Dict[int, int]) -> None:
        smallest_elmo = min(self.stock_elmo_dims, default=STOCK_ELMO_DIM)
        outputs = _layer_output_sizes(self.config["model"])
        for path, value in kept:
            explained = any(value % size == 0 and value // size <= 8 for size in outputs)
            if value >= smallest_elmo and not explained:
                olds = ", ".join(str(old) for old in sorted(mapping))
                self.notes.append(
                    f"undecided: {path} = {value} was left as it was: it is at least the stock "
                    f"ELMo's size ({smallest_elmo}) but neither a text field embedder size that "
                    f"changed ({olds}), nor one plus a known extra feature, nor a multiple of one "
                    "or of another layer's output; if it includes ELMo's output, resize it by hand"
                )


def _has_type(value: Any, kind: str) -> bool:
    return isinstance(value, dict) and value.get("type") == kind


def _is_size_key(key: str, value: Any) -> bool:
    return key in DIM_KEYS and isinstance(value, int) and not isinstance(value, bool)


def _layer_output_sizes(model: Dict[str, Any]) -> List[int]:
    """The output sizes of the model's recurrent encoders and feedforwards: a size key that is a
    small multiple of one (ESIM's 4 x 600) reads those, not the embeddings."""
    sizes = set()
    for _, node in _dicts(model, "model"):
        hidden = node.get("hidden_size")
        if isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0:
            sizes.add(hidden * (2 if node.get("bidirectional") else 1))
        dims = node.get("hidden_dims")
        last = dims[-1] if isinstance(dims, list) and dims else dims
        if isinstance(last, int) and not isinstance(last, bool) and last > 0:
            sizes.add(last)
    return sorted(sizes)


def convert_config(
    config: Dict[str, Any],
    archive_file: str,
    fasttext_path: Optional[str] = None,
    stock_dim: Optional[int] = None,
) -> Conversion:
    """`config` converted to use the ELMo-C archive `archive_file`, with `fasttext_path` for the
    archive's recorded `.bin` and `stock_dim` for the stock embedders' size where given."""
    return _Converter(config, archive_file, fasttext_path, stock_dim).run()


_UNDEFINED = re.compile(r"undefined external variable: (\S+)")


def load_stock_config(
    config_file: str, ext_vars: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """A config file evaluated as `allennlp train` does (`ext_vars` over the environment); an
    unset `std.extVar` is a `ConfigurationError` naming every unset one."""
    if not Path(config_file).is_file():
        raise ConfigurationError(f"config {config_file} does not exist")
    given = dict(ext_vars or {})
    missing: List[str] = []
    while True:
        try:
            values = {**given, **dict.fromkeys(missing, "0")}  # the unset ones found so far: "0"
            params = Params.from_file(config_file, ext_vars=values)
        except RuntimeError as error:  # _jsonnet's errors
            name = _UNDEFINED.search(str(error))
            if name and name.group(1) not in missing and len(missing) < 100:
                missing.append(name.group(1))
                continue
            if missing:
                break
            raise ConfigurationError(f"config {config_file} does not evaluate: {error}") from error
        except ValueError as error:  # not JSON after all
            raise ConfigurationError(
                f"config {config_file} is not a JSON object: {error}"
            ) from error
        break
    if missing:
        raise ConfigurationError(
            f"config {config_file} reads the external variable(s) {', '.join(sorted(missing))} "
            "(std.extVar), which are not set: set them in the environment or give them with "
            "--ext-var NAME=VALUE (their values are written into the converted config)"
        )
    config = params.as_dict(quiet=True)
    if not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"config {config_file} has no model")
    return config


def convert_config_file(
    config_file: str,
    archive_file: str,
    output_file: str,
    ext_vars: Optional[Dict[str, str]] = None,
    fasttext_path: Optional[str] = None,
    stock_dim: Optional[int] = None,
) -> Conversion:
    """Converts `config_file` (`convert_config`) and writes it to `output_file` as JSON, the
    values of its external variables in it."""
    stock = load_stock_config(config_file, ext_vars)
    conversion = convert_config(stock, archive_file, fasttext_path, stock_dim)
    with atomic_open(output_file) as output:
        json.dump(conversion.config, output, indent=2)
    return conversion


def format_conversion(conversion: Conversion, output_file: str) -> str:
    lines = [f"{len(conversion.changes)} change(s):"]
    lines += [f"  {change}" for change in conversion.changes]
    lines += [f"note: {note}" for note in conversion.notes]
    lines.append(f"wrote {output_file}")
    return "\n".join(lines)


def _ext_var(text: str) -> Tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


@Subcommand.register("convert-config")
class ConvertConfig(PluginSubcommand):
    description = (
        "Convert a stock AllenNLP task config that uses ELMo (elmo_token_embedder, a language-"
        "model embedder, or BCN's elmo) to use an ELMo-C model, resizing the layers that read "
        "it; prints every change."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("config_file", type=str, help="the stock config (.jsonnet / .json)")
        subparser.add_argument("archive_file", type=str,
                               help="the ELMo-C model.tar.gz or model directory")
        subparser.add_argument("output_file", type=str,
                               help="where to write the converted config (JSON)")
        subparser.add_argument(
            "--ext-var", type=_ext_var, action="append", default=[], metavar="NAME=VALUE",
            help="an external variable (std.extVar) of the config; overrides the environment",
        )  # fmt: skip
        subparser.add_argument(
            "--fasttext-path", type=str, default=None,
            help="the biLM's fastText .bin, if not where the archive recorded it",
        )  # fmt: skip
        subparser.add_argument(
            "--stock-dim", type=int, default=None, metavar="N",
            help="the output size of the stock ELMo / language-model embedder where the config "
            "does not tell it; default: 1024",
        )  # fmt: skip

    def run(self, args: argparse.Namespace) -> None:
        conversion = convert_config_file(
            args.config_file, args.archive_file, args.output_file, dict(args.ext_var),
            args.fasttext_path, args.stock_dim,
        )  # fmt: skip
        print(format_conversion(conversion, args.output_file))
