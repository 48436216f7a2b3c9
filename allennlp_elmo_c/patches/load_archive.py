"""
AllenNLP's `load_archive` (what `allennlp evaluate` / `predict`, `Predictor.from_path` and
`Model.from_archive` load a model with) evaluates an archive's config.json as jsonnet with every
environment variable as an external variable, builds whatever it names and has no place for
the files an ELMo-C archive needs (its fastText `.bin`, a model directory's files). For an
archive whose config has ELMo-C components (`is_elmo_c_config`) and for a model directory
(`python -m allennlp_elmo_c package`, always ELMo-C), the patched `load_archive` loads it the
plugin's way; AllenNLP's own `load_archive` loads any other archive, as it would without the
plugin.

Which it is, is decided from the archive's config.json, read without extracting the archive
(`safe_extract.read_member`: AllenNLP writes it first) or from the directory: as JSON where it
parses; otherwise (hand-made jsonnet, a trailing comma) by whether its text names a component
only this plugin registers. A config.json the plugin cannot read (over 4 MiB, a corrupt archive)
is refused in one line.

The plugin's way: the archive is extracted through `received.safe_extract` (no member is written
outside its place; the files of a model archive only); a `vocabulary` that is not a real
directory (AllenNLP would extract it as an archive into its cache) or a directory archive
holding a symbolic link (`contained_files.refuse_links`) is refused; the archive and its
extraction directory are noted (`fasttext_source.loading_archive`), so that a fastText `.bin`
whose recorded path does not exist is found among the archive's bundled files or beside the
archive; then `archive.load_elmo_c_archive` reads config.json as plain JSON, checks it as a
received config and builds the model within the budget of its weights.

Where the patched function is looked up: `allennlp.models.archival.load_archive` (what
`Model.from_archive`, the `from_archive` model and AllenNLP's other late imports read when they
run) and the AllenNLP modules that imported it by name when they were imported
(`LOOKED_UP_IN`: `allennlp.models`, the `evaluate` and `predict` commands, `Predictor`; and
`LOOKED_UP_IN_IF_IMPORTED`, three more of AllenNLP's, where they were imported before the
plugin). No module is looked for in `sys.modules` beyond these: any other that imported
AllenNLP's function by name keeps it, and loads every archive as AllenNLP does.
"""

import inspect
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

# AllenNLP's functions, kept so that their tests can show the patch is still needed.
ORIGINALS = {
    "load_archive": archival.load_archive,
}
# The AllenNLP modules that import `load_archive` by name when they are imported (the others
# import it from `allennlp.models.archival` when they run).
LOOKED_UP_IN = (archival, allennlp.models, evaluate_command, predict_command, predictor_module)
# AllenNLP modules that import it by name too but need optional packages (checklist) or are for
# tests and interpretation: replaced if they were imported before the plugin (imported later,
# they read the patched function from `allennlp.models.archival`).
LOOKED_UP_IN_IF_IMPORTED = (
    "allennlp.commands._checklist_internal",
    "allennlp.common.testing.model_test_case",
    "allennlp.interpret.influence_interpreters.influence_interpreter",
)
_SIGNATURE = inspect.signature(archival.load_archive)


def _is_plugin_archive(resolved: str) -> bool:
    """Whether the config.json of an archive or directory builds a component of this plugin:
    decided from its JSON where it parses as JSON; else (jsonnet, a trailing comma, nested too
    deep) from whether its text names one of the plugin's own components as a string; a
    config.json the plugin cannot read at all (over `MAX_CONFIG_BYTES`, a malformed archive) is
    the plugin's to refuse."""
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


def _load_archive(archive_file, *args, **kwargs):
    arguments = _SIGNATURE.bind(archive_file, *args, **kwargs)
    arguments.apply_defaults()
    options = arguments.arguments
    if not is_model_directory(str(archive_file)) and not _is_plugin_archive(
        cached_path(archive_file)
    ):
        return ORIGINALS["load_archive"](*arguments.args, **arguments.kwargs)
    return load_elmo_c_archive(
        archive_file, options["overrides"], options["cuda_device"], options["weights_file"]
    )


def apply() -> None:
    """Replaces `load_archive` where AllenNLP looks it up (`LOOKED_UP_IN`), once."""
    if archival.load_archive is _load_archive:
        return
    _load_archive.__doc__ = ORIGINALS["load_archive"].__doc__
    for module in LOOKED_UP_IN:
        module.load_archive = _load_archive  # type: ignore[attr-defined]
    original = ORIGINALS["load_archive"]
    for name in LOOKED_UP_IN_IF_IMPORTED:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "load_archive", None) is original:
            module.load_archive = _load_archive  # type: ignore[attr-defined]
