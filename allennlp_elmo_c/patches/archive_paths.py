"""
ELMo-C archives that work from any directory: AllenNLP records the paths of a config as given
(relative to where `allennlp train` ran) and archives only its own files, so a trained ELMo-C
model would need its fastText `.bin` at the same relative path, and a task model the biLM's
archive, wherever it is used. For runs of an ELMo-C config (`is_elmo_c_config`); AllenNLP trains
and archives any other config as it would without the plugin.

1. `allennlp.commands.train.train_model` (what `allennlp train` and `train_model_from_file`
   call): before training, the relative paths of existing fastText files (and of the
   training-time `nearest_neighbour_words` list) in the config are made absolute
   (`fasttext_source.absolute_config_paths`), so config.json, and with it model.tar.gz, records
   where the files are rather than where they were from the training directory. The model is
   built from the same rewritten config. With `--recover`, the run's config.json is read as
   plain JSON (a received run directory's config is data), and a path that it records as given
   (a run started before this rewrite) is left as it is, so that AllenNLP's comparison of the
   two configs still passes. The fingerprint of each fastText `.bin` is recorded beside its path
   (`fasttext_source.record_fingerprints`), so that the trained model refuses any other `.bin`
   wherever it is used. A `fasttext_subwords` indexer given a biLM (`archive_file`) records that
   biLM's fingerprint. When training ends, the machine is added to the run's `hardware.json`
   (`run_info.record_hardware`), for the model card. A config whose checkpointer is not the
   `atomic` one is warned about: AllenNLP's writes checkpoints on their final names, and
   `--recover` fails on a torn one.
2. `archive_model`: a task model's archive bundles the fastText `.bin` of the biLM of each
   `elmo_c_token_embedder` (as `fasttext/<fingerprint>.bin`, linked into the run directory and
   added through AllenNLP's own `include_in_archive`; `bundle_fasttext: false` on the embedder
   leaves it out), so that the task archive loads and predicts after the biLM archive or model
   directory is moved or deleted, with no variable set. The archive is then written by
   `atomic_outputs.archive_model_atomically`, as every archive is.
"""

import inspect
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from allennlp.commands import train as train_command
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import archival
import allennlp.models

from allennlp_elmo_c.archive import checked_fasttext, read_archive_config
from allennlp_elmo_c.common.atomic import link_or_copy
from allennlp_elmo_c.common.config_tree import lookup_dotted
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.fasttext.fasttext_source import (
    absolute_config_paths,
    bundled_name,
    component_nodes,
    record_fingerprints,
    recorded_fasttext_path,
)
from allennlp_elmo_c.patches.atomic_outputs import archive_model_atomically
from allennlp_elmo_c.received.received_config import is_elmo_c_config
from allennlp_elmo_c.received.received_json import read_received_json
from allennlp_elmo_c.training.run_info import record_hardware

logger = logging.getLogger(__name__)

# AllenNLP's functions, kept so that their tests can show the patch is still needed.
ORIGINALS: Dict[str, Callable[..., Any]] = {
    "train_model": train_command.train_model,
    "archive_model": archival.archive_model,
}
# The checkpointer ELMo-C runs are meant to name (`allennlp_elmo_c.training.AtomicCheckpointer`).
ATOMIC_CHECKPOINTER = "atomic"


def _train_model(*args, **kwargs):
    arguments = inspect.signature(ORIGINALS["train_model"]).bind(*args, **kwargs).arguments
    params: Params = arguments["params"]
    config = params.as_dict(quiet=True)
    if not is_elmo_c_config(config):
        return ORIGINALS["train_model"](**arguments)
    _warn_unless_atomic(config)
    keep = None
    existing = os.path.join(arguments["serialization_dir"], archival.CONFIG_NAME)
    if arguments.get("recover") and os.path.isfile(existing):
        # Plain JSON, as AllenNLP writes it: a received run directory's config is data.
        where = f"run directory {arguments['serialization_dir']}: {archival.CONFIG_NAME}"
        keep = read_received_json(existing, where)
    changed = absolute_config_paths(config, keep)
    for key, old, new in changed:
        logger.info("config %s: %s recorded as %s", key, old, new)
    fingerprints = record_fingerprints(config, keep) + _record_indexer_fingerprints(config, keep)
    for key, fingerprint in fingerprints:
        logger.info("config %s: fastText fingerprint %d recorded", key, fingerprint)
    if changed or fingerprints:
        arguments["params"] = Params(config, params.history)
    result = ORIGINALS["train_model"](**arguments)
    if not arguments.get("dry_run"):
        record_hardware(arguments["serialization_dir"])
    return result


def _warn_unless_atomic(config: Dict[str, Any]) -> None:
    """Warns when an ELMo-C run's checkpointer is not the `atomic` one (AllenNLP's default is
    its own `Checkpointer`, whatever plugins are loaded)."""
    trainer = config.get("trainer")
    checkpointer = trainer.get("checkpointer") if isinstance(trainer, dict) else None
    kind = checkpointer.get("type") if isinstance(checkpointer, dict) else None
    if kind != ATOMIC_CHECKPOINTER:
        logger.warning(
            "the trainer's checkpointer is %s, not an atomic checkpointer: a crash while it "
            "writes leaves a torn checkpoint that --recover cannot skip. Give "
            "trainer.checkpointer type '%s' to get allennlp_elmo_c's atomic checkpoints",
            repr(kind) if kind is not None else "AllenNLP's default",
            ATOMIC_CHECKPOINTER,
        )


def _record_indexer_fingerprints(config: Dict[str, Any], keep: Optional[Dict[str, Any]]):
    """`record_fingerprints` for `fasttext_subwords` indexers given a biLM (`archive_file`), so
    that they find the task archive's bundled copy once the biLM is gone."""
    changed = []
    for key, node in component_nodes(config, ("fasttext_subwords",)):
        archive_file = node.get("archive_file")
        if (
            "fingerprint" in node
            or not isinstance(archive_file, str)
            or not os.path.exists(archive_file)
        ):
            continue
        if keep is not None and lookup_dotted(keep, key + ".fingerprint") is None:
            continue
        _, fingerprint = checked_fasttext(read_archive_config(archive_file), archive_file)
        if fingerprint is not None:
            node["fingerprint"] = fingerprint
            changed.append((key, fingerprint))
    return changed


def bundle_fasttext(serialization_dir: str) -> List[str]:
    """
    Links (or copies) into `serialization_dir/fasttext/` the fastText `.bin` of the biLM of every
    `elmo_c_token_embedder` of the run's config.json (unless it says `bundle_fasttext: false`),
    as `<fingerprint>.bin`; returns their names relative to `serialization_dir`. A biLM that
    cannot be read any more is skipped with a warning.
    """
    config_file = Path(serialization_dir) / archival.CONFIG_NAME
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    names = []
    for key, node in component_nodes(config, ("elmo_c_token_embedder",)):
        if not node.get("bundle_fasttext", True) or not isinstance(node.get("archive_file"), str):
            continue
        try:
            bilm_config = read_archive_config(node["archive_file"])
            if recorded_fasttext_path(bilm_config, node["archive_file"]) is None:
                continue  # a biLM over BPE subwords or a char-CNN: no fastText
            path, fingerprint = checked_fasttext(
                bilm_config, node["archive_file"], node.get("fasttext_path")
            )
        except ConfigurationError as error:
            logger.warning("%s: its fastText model is not bundled in the archive (%s)", key, error)
            continue
        if fingerprint is None:
            fingerprint = FastTextBin.load(path).fingerprint
        name = bundled_name(fingerprint)
        target = Path(serialization_dir) / name
        if not target.is_file():
            link_or_copy(path, target)
        if name not in names:
            names.append(name)
    return names


def _archive_model(serialization_dir, *args, **kwargs):
    arguments = inspect.signature(ORIGINALS["archive_model"]).bind(
        serialization_dir, *args, **kwargs
    )
    bundled = bundle_fasttext(str(serialization_dir))
    if bundled:
        include = list(arguments.arguments.get("include_in_archive") or [])
        arguments.arguments["include_in_archive"] = include + [
            n for n in bundled if n not in include
        ]
        logger.info("the archive bundles the fastText model(s) %s", ", ".join(bundled))
    return archive_model_atomically(*arguments.args, **arguments.kwargs)


def apply() -> None:
    """Replaces `train_model` and `archive_model` (once), the latter also where
    `allennlp.commands.train` and `allennlp.models` imported it by name."""
    if train_command.train_model is _train_model:
        return
    _train_model.__doc__ = ORIGINALS["train_model"].__doc__
    _archive_model.__doc__ = ORIGINALS["archive_model"].__doc__
    train_command.train_model = _train_model
    for module in (archival, train_command, allennlp.models):
        module.archive_model = _archive_model  # type: ignore[attr-defined]
