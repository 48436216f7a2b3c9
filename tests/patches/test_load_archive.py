"""`patches.load_archive`: ELMo-C archives and model directories load the plugin's way, any other
archive through AllenNLP's own `load_archive`, decided from the archive's config.json alone;
where the patched function is looked up."""

import json
import sys
import types
from pathlib import Path

import pytest

from allennlp.commands import evaluate as evaluate_command
from allennlp.common.checks import ConfigurationError
from allennlp.models import archival

from allennlp_elmo_c.patches import load_archive as patch

PLAIN = {"model": {"type": "basic_classifier", "text_field_embedder": {"token_embedders": {
    "tokens": {"type": "pretrained_transformer", "model_name": "/a/local/bert",
               "tokenizer_kwargs": {"do_lower_case": True}}}}}}  # fmt: skip
ELMO_C_TASK = {"model": {"type": "basic_classifier", "text_field_embedder": {"token_embedders": {
    "tokens": {"type": "elmo_c_token_embedder", "archive_file": "bilm.tar.gz"},
    "other": {"type": "pretrained_transformer", "model_name": "bert", "tokenizer_kwargs": {}}}}}}  # fmt: skip


class _AllenNLPs(Exception):
    """Raised by the stand-in for AllenNLP's own `load_archive`."""


@pytest.fixture
def allennlps(monkeypatch):
    """AllenNLP's own `load_archive`, replaced by one that says it was called."""

    def load(archive_file, *args, **kwargs):
        raise _AllenNLPs(str(archive_file))

    monkeypatch.setitem(patch.ORIGINALS, "load_archive", load)


def run_directory(tmp_path: Path, config) -> Path:
    directory = tmp_path / "run"
    (directory / "vocabulary").mkdir(parents=True)
    (directory / "vocabulary" / "non_padded_namespaces.txt").write_text("*tags\n*labels\n")
    text = config if isinstance(config, str) else json.dumps(config)
    (directory / "config.json").write_text(text)
    return directory


def test_an_archive_without_elmo_c_components_is_allennlps(tmp_path, allennlps):
    with pytest.raises(_AllenNLPs):
        archival.load_archive(str(run_directory(tmp_path, PLAIN)))


def test_an_elmo_c_task_archive_gets_the_received_model_checks(tmp_path, allennlps):
    with pytest.raises(ConfigurationError, match="tokenizer_kwargs: a `\\*_kwargs` key"):
        archival.load_archive(str(run_directory(tmp_path, ELMO_C_TASK)))


def test_a_config_that_is_not_json_is_allennlps(tmp_path, allennlps):
    """A trailing comma, which AllenNLP's loader accepts: loaded as without the plugin."""
    with pytest.raises(_AllenNLPs):
        archival.load_archive(str(run_directory(tmp_path, json.dumps(PLAIN)[:-1] + ",}")))


def test_the_patched_function_is_where_allennlp_looks_it_up_and_nowhere_else(monkeypatch):
    """`apply` replaces AllenNLP's lookups and leaves a module of someone else's that imported
    AllenNLP's function by name before the plugin as it is."""
    original = patch.ORIGINALS["load_archive"]
    theirs = types.ModuleType("someone_elses_module")
    theirs.load_archive = original
    monkeypatch.setitem(sys.modules, theirs.__name__, theirs)
    for module in patch.LOOKED_UP_IN:  # as before the plugin was imported
        monkeypatch.setattr(module, "load_archive", original)
    patch.apply()
    for module in patch.LOOKED_UP_IN:
        assert module.load_archive is patch._load_archive, module.__name__
    assert evaluate_command.load_archive is patch._load_archive
    assert theirs.load_archive is original
