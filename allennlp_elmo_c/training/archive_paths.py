"""
Archives that work from any directory. Applied once, when `allennlp_elmo_c` is imported.

1. `allennlp.commands.train.train_model` (what `allennlp train` and `train_model_from_file`
   call): before training, the relative paths of existing fastText files (and of the
   training-time `nearest_neighbour_words` list) in the config are made absolute
   (`fasttext_source.absolute_config_paths`), so config.json, and with it model.tar.gz, records
   where the files are rather than where they were from the training directory. The model is
   built from the same rewritten config. With `--recover`, a path that the run's config.json
   records as given (a run started before this rewrite) is left as it is, so that AllenNLP's
   comparison of the two configs still passes. The fingerprint of each fastText `.bin` is
   recorded beside its path (`fasttext_source.record_fingerprints`), so that the trained model
   refuses any other `.bin` wherever it is used. When training ends, the machine is added to
   the run's `hardware.json` (`run_info.record_hardware`), for the model card.
   A `fasttext_subwords` indexer given a biLM (`archive_file`) records that biLM's fingerprint.
2. `archive_model`: a task model's archive bundles the fastText `.bin` of the biLM of each
   `elmo_c_token_embedder` (as `fasttext/<fingerprint>.bin`, linked into the run directory and
   added through AllenNLP's own `include_in_archive`; `bundle_fasttext: false` on the embedder
   leaves it out), so that the task archive loads and predicts after the biLM archive or model
   directory is moved or deleted, with no variable set.
3. `load_archive` (also where `allennlp.models`, the `evaluate` and `predict` commands and
   `Predictor` imported it by name): extracts the archive itself, through
   `common.safe_extract` (which also replaces AllenNLP's own `extracted_archive`, so no
   archive member is written outside its place), refuses a `vocabulary` that is not a real
   directory (AllenNLP would extract it as an archive into its cache) or an archive that is a
   directory holding a symbolic link (`contained_files.refuse_links`), and notes the archive
   and the extraction directory (`fasttext_source.loading_archive`), so that a fastText `.bin` whose
   recorded path does not exist is found among the archive's bundled files or beside the
   archive. The archive's config.json is read as plain JSON and checked as a received config
   before anything is built (`archive.load_archive_directory`; AllenNLP would evaluate it as
   jsonnet with every environment variable as an external variable). A model directory
   (`python -m allennlp_elmo_c package`) is loaded by `archive.load_model_directory`, so
   `allennlp evaluate` / `predict` take one wherever they take an archive.
"""

import inspect
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from allennlp.commands import evaluate as evaluate_command
from allennlp.commands import predict as predict_command
from allennlp.commands import train as train_command
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.common.params import parse_overrides
from allennlp.models import archival
import allennlp.models
from allennlp.predictors import predictor as predictor_module

from allennlp_elmo_c.archive import (
    check_vocabulary_directory,
    checked_fasttext,
    is_model_archive_member,
    is_model_directory,
    load_archive_directory,
    load_model_directory,
    read_archive_config,
)
from allennlp_elmo_c.common.atomic import link_or_copy
from allennlp_elmo_c.common.contained_files import refuse_links
from allennlp_elmo_c.common.fasttext_bin import FastTextBin
from allennlp_elmo_c.common.fasttext_source import (
    absolute_config_paths,
    bundled_name,
    component_nodes,
    loading_archive,
    lookup_dotted,
    record_fingerprints,
    recorded_fasttext_path,
)
from allennlp_elmo_c.common.received_config import read_received_json
from allennlp_elmo_c.common.safe_extract import extracted_archive
from allennlp_elmo_c.training.run_info import record_hardware

logger = logging.getLogger(__name__)

ORIGINALS: Dict[str, Callable[..., Any]] = {
    "train_model": train_command.train_model,
    "load_archive": archival.load_archive,
    "archive_model": archival.archive_model,
}
# The `archive_model` that `_archive_model` calls: what was in place when `apply` ran (the atomic
# writer of `atomic_outputs`, applied before this module's patches).
ARCHIVE_MODEL: List[Callable[..., Any]] = [archival.archive_model]


def _train_model(*args, **kwargs):
    arguments = inspect.signature(ORIGINALS["train_model"]).bind(*args, **kwargs).arguments
    params: Params = arguments["params"]
    config = params.as_dict(quiet=True)
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


def _record_indexer_fingerprints(config: Dict[str, Any], keep: Optional[Dict[str, Any]]):
    """`record_fingerprints` for `fasttext_subwords` indexers given a biLM (`archive_file`), so
    that they find the task archive's bundled copy once the biLM is gone."""
    changed = []
    for key, node in component_nodes(config, ("fasttext_subwords",)):
        archive_file = node.get("archive_file")
        if "fingerprint" in node or not isinstance(archive_file, str) or not os.path.exists(archive_file):
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
            path, fingerprint = checked_fasttext(bilm_config, node["archive_file"], node.get("fasttext_path"))
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
    arguments = inspect.signature(ORIGINALS["archive_model"]).bind(serialization_dir, *args, **kwargs)
    bundled = bundle_fasttext(str(serialization_dir))
    if bundled:
        include = list(arguments.arguments.get("include_in_archive") or [])
        arguments.arguments["include_in_archive"] = include + [n for n in bundled if n not in include]
        logger.info("the archive bundles the fastText model(s) %s", ", ".join(bundled))
    return ARCHIVE_MODEL[0](*arguments.args, **arguments.kwargs)


def _load_archive(archive_file, *args, **kwargs):
    arguments = inspect.signature(ORIGINALS["load_archive"]).bind(archive_file, *args, **kwargs)
    arguments.apply_defaults()
    options = arguments.arguments
    # AllenNLP's own reading of an archive's config.json (jsonnet, with every environment variable
    # as an external variable) is never used: `load_archive_directory` reads it as plain JSON.
    loaded = {key: options[key] for key in ("overrides", "cuda_device", "weights_file")}
    if is_model_directory(str(archive_file)):
        if options["weights_file"] is not None:
            raise ConfigurationError(f"{archive_file}: a model directory has one set of weights")
        overrides = options["overrides"]
        if isinstance(overrides, str):
            overrides = parse_overrides(overrides)
        return load_model_directory(str(archive_file), overrides, options["cuda_device"])
    resolved = cached_path(archive_file)
    if os.path.isdir(resolved):
        # A directory (a run directory, an extracted archive) is read as it is: a link in it
        # would carry the receiver's own files into the model (its vocabulary, its predictions).
        refuse_links(resolved, str(archive_file))
        check_vocabulary_directory(Path(resolved), str(archive_file))
        with loading_archive(archive_file, resolved):
            return load_archive_directory(resolved, str(archive_file), **loaded)
    # Extracted here rather than by AllenNLP, so that the files the archive bundles are known.
    with extracted_archive(resolved, wanted=is_model_archive_member) as directory, loading_archive(archive_file, directory):
        check_vocabulary_directory(Path(directory), str(archive_file))
        return load_archive_directory(directory, str(archive_file), **loaded)


def apply() -> None:
    """Applies the patches once; calling it again does nothing."""
    if train_command.train_model is _train_model:
        return
    _train_model.__doc__ = ORIGINALS["train_model"].__doc__
    _load_archive.__doc__ = ORIGINALS["load_archive"].__doc__
    _archive_model.__doc__ = ORIGINALS["archive_model"].__doc__
    train_command.train_model = _train_model
    ARCHIVE_MODEL[0] = archival.archive_model  # the atomic writer, if applied first
    for module in (archival, train_command, allennlp.models):
        module.archive_model = _archive_model  # type: ignore[attr-defined]
    for module in (archival, allennlp.models, evaluate_command, predict_command, predictor_module):
        module.load_archive = _load_archive  # type: ignore[attr-defined]
    for module in list(sys.modules.values()):  # any other that imported it by name already
        if vars(module).get("load_archive") is ORIGINALS["load_archive"]:
            module.load_archive = _load_archive  # type: ignore[attr-defined]
    archival.extracted_archive = extracted_archive  # what AllenNLP's own load_archive calls
