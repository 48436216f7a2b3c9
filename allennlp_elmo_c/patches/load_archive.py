"""
AllenNLP's `load_archive` evaluates an archive's config.json as jsonnet and has no place for the
files an ELMo-C archive needs (its fastText `.bin`, a model directory's files). A model directory
or an archive whose config.json has ELMo-C components (decided without extracting it: from its
JSON, else from whether its text names a component only the plugin registers) loads through
`archive.load_elmo_c_archive`; any other through AllenNLP's own. Replaced in the modules that
import it by name (`LOOKED_UP_IN`, and `LOOKED_UP_IN_IF_IMPORTED` where already imported).
"""

import json
import os
import sys
from pathlib import Path
from typing import Optional

from allennlp.commands import evaluate as evaluate_command
from allennlp.commands import predict as predict_command
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.models import archival
import allennlp.models
from allennlp.predictors import predictor as predictor_module

from allennlp_elmo_c.archive import is_model_directory, load_elmo_c_archive
from allennlp_elmo_c.received.received_config import is_elmo_c_config, plugin_component_names
from allennlp_elmo_c.received.limits import MAX_CONFIG_BYTES
from allennlp_elmo_c.received.safe_extract import read_member

ORIGINALS = {
    "load_archive": archival.load_archive,
}
LOOKED_UP_IN = (archival, allennlp.models, evaluate_command, predict_command, predictor_module)
LOOKED_UP_IN_IF_IMPORTED = (
    "allennlp.commands._checklist_internal",
    "allennlp.common.testing.model_test_case",
    "allennlp.interpret.influence_interpreters.influence_interpreter",
)


def _is_plugin_archive(resolved: str) -> bool:
    """Whether the config.json of an archive or directory builds a component of this plugin; one
    the plugin cannot read (too big, a malformed archive) is the plugin's to refuse."""
    try:
        if os.path.isdir(resolved):
            path = Path(resolved) / archival.CONFIG_NAME
            if path.stat().st_size > MAX_CONFIG_BYTES:
                return True
            data: Optional[bytes] = path.read_bytes()
        else:
            data = read_member(resolved, archival.CONFIG_NAME, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return False
    except (ConfigurationError, OSError, EOFError):
        return True
    if data is None:
        return False
    try:
        return is_elmo_c_config(json.loads(data))
    except (ValueError, RecursionError):
        text = data.decode("utf-8", errors="replace")
        return any(f'"{name}"' in text or f"'{name}'" in text for name in plugin_component_names())


def _load_archive(archive_file, cuda_device=-1, overrides="", weights_file=None):
    if is_model_directory(str(archive_file)) or _is_plugin_archive(cached_path(archive_file)):
        return load_elmo_c_archive(archive_file, overrides, cuda_device, weights_file)
    return ORIGINALS["load_archive"](archive_file, cuda_device, overrides, weights_file)


def apply() -> None:
    """Replaces `load_archive` where AllenNLP looks it up (`LOOKED_UP_IN`), once."""
    if archival.load_archive is _load_archive:
        return
    _load_archive.__doc__ = ORIGINALS["load_archive"].__doc__
    imported = (sys.modules.get(name) for name in LOOKED_UP_IN_IF_IMPORTED)
    for module in (*LOOKED_UP_IN, *filter(None, imported)):
        if getattr(module, "load_archive", None) is ORIGINALS["load_archive"]:
            module.load_archive = _load_archive  # type: ignore[attr-defined]
