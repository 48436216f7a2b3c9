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
2. `load_archive` (also where `allennlp.models`, the `evaluate` and `predict` commands and
   `Predictor` imported it by name): notes the archive file being loaded
   (`fasttext_source.loading_archive`), so that a fastText `model_path` of the archived config
   that does not exist is also looked for beside the archive (AllenNLP extracts it to a
   temporary directory, which says nothing of where the archive is). A model directory
   (`python -m allennlp_elmo_c package`) is loaded by `archive.load_model_directory`, so
   `allennlp evaluate` / `predict` take one wherever they take an archive.
"""

import inspect
import json
import logging
import os
from typing import Any, Callable, Dict

from allennlp.commands import evaluate as evaluate_command
from allennlp.commands import predict as predict_command
from allennlp.commands import train as train_command
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import parse_overrides
from allennlp.models import archival
import allennlp.models
from allennlp.predictors import predictor as predictor_module

from allennlp_elmo_c.archive import is_model_directory, load_model_directory
from allennlp_elmo_c.training.run_info import record_hardware
from allennlp_elmo_c.common.fasttext_source import (
    absolute_config_paths,
    loading_archive,
    record_fingerprints,
)

logger = logging.getLogger(__name__)

ORIGINALS: Dict[str, Callable[..., Any]] = {
    "train_model": train_command.train_model,
    "load_archive": archival.load_archive,
}


def _train_model(*args, **kwargs):
    arguments = inspect.signature(ORIGINALS["train_model"]).bind(*args, **kwargs).arguments
    params: Params = arguments["params"]
    config = params.as_dict(quiet=True)
    keep = None
    existing = os.path.join(arguments["serialization_dir"], archival.CONFIG_NAME)
    if arguments.get("recover") and os.path.isfile(existing):
        with open(existing, encoding="utf-8") as file:
            keep = json.load(file)
    changed = absolute_config_paths(config, keep)
    for key, old, new in changed:
        logger.info("config %s: %s recorded as %s", key, old, new)
    fingerprints = record_fingerprints(config, keep)
    for key, fingerprint in fingerprints:
        logger.info("config %s: fastText fingerprint %d recorded", key, fingerprint)
    if changed or fingerprints:
        arguments["params"] = Params(config, params.history)
    result = ORIGINALS["train_model"](**arguments)
    if not arguments.get("dry_run"):
        record_hardware(arguments["serialization_dir"])
    return result


def _load_archive(archive_file, *args, **kwargs):
    if is_model_directory(str(archive_file)):
        arguments = inspect.signature(ORIGINALS["load_archive"]).bind(archive_file, *args, **kwargs)
        arguments.apply_defaults()
        options = arguments.arguments
        if options["weights_file"] is not None:
            raise ConfigurationError(f"{archive_file}: a model directory has one set of weights")
        overrides = options["overrides"]
        if isinstance(overrides, str):
            overrides = parse_overrides(overrides)
        return load_model_directory(str(archive_file), overrides, options["cuda_device"])
    with loading_archive(archive_file):
        return ORIGINALS["load_archive"](archive_file, *args, **kwargs)


def apply() -> None:
    """Applies both patches once; calling it again does nothing."""
    if train_command.train_model is _train_model:
        return
    _train_model.__doc__ = ORIGINALS["train_model"].__doc__
    _load_archive.__doc__ = ORIGINALS["load_archive"].__doc__
    train_command.train_model = _train_model
    for module in (archival, allennlp.models, evaluate_command, predict_command, predictor_module):
        module.load_archive = _load_archive  # type: ignore[attr-defined]
