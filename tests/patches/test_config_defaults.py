"""The plugin's defaults for config variables: seen by AllenNLP's config parsing when unset,
never written to the environment, and overridden by the environment or explicit ext_vars."""

import os

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common import config_defaults
from allennlp_elmo_c.patches import config_defaults as config_defaults_patch
from tests import PROJECT_ROOT


def read(tmp_path, **ext_vars) -> str:
    config = tmp_path / "config.jsonnet"
    config.write_text("{ dim: std.extVar('ELMO_C_DIM') }")
    return Params.from_file(str(config), ext_vars=ext_vars or None)["dim"]


def test_default_when_unset(monkeypatch, tmp_path):
    monkeypatch.delenv("ELMO_C_DIM", raising=False)
    assert read(tmp_path) == "1024"
    assert "ELMO_C_DIM" not in os.environ
    config_defaults_patch.apply()  # applying twice changes nothing
    assert read(tmp_path) == "1024"


def test_environment_and_ext_vars_win(monkeypatch, tmp_path):
    monkeypatch.setenv("ELMO_C_DIM", "256")
    assert read(tmp_path) == "256"
    assert read(tmp_path, ELMO_C_DIM="16") == "16"


def test_baseline_defaults_to_elmo_c(monkeypatch, tmp_path):
    monkeypatch.delenv("ELMO_C_BASELINE", raising=False)
    config = tmp_path / "config.jsonnet"
    config.write_text("{ use_elmo_c: std.extVar('ELMO_C_BASELINE') != 'fasttext' }")
    assert Params.from_file(str(config))["use_elmo_c"] is True


def test_an_unset_variable_is_a_configuration_error_naming_it(monkeypatch):
    """A downstream config read without its data and archive variables names every one of them
    and what to set it to, not jsonnet's bare "undefined external variable"."""
    for name in ("ELMO_C_ARCHIVE", "ELMO_C_FASTTEXT", "ELMO_C_BASELINE", "POS_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    config = PROJECT_ROOT / "downstream_configs" / "pos_elmo_c.jsonnet"
    with pytest.raises(ConfigurationError) as error:
        Params.from_file(str(config))
    message = str(error.value)
    assert "pos_elmo_c.jsonnet" in message
    for name in ("ELMO_C_ARCHIVE", "ELMO_C_FASTTEXT", "POS_DATA_DIR"):
        assert f"  {name}: {config_defaults.REQUIRED[name]}" in message
    assert "ELMO_C_BASELINE" not in message.split("\n")[0]  # it has a default
    assert "docs/environment-variables.md" in message
    # Still the RuntimeError jsonnet raised, for code that caught that one.
    assert isinstance(error.value, RuntimeError)


def test_only_the_unset_ones_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("ELMO_C_BASELINE", "fasttext")  # no archive read then
    monkeypatch.setenv("ELMO_C_FASTTEXT", "vectors.bin")
    monkeypatch.delenv("POS_DATA_DIR", raising=False)
    monkeypatch.delenv("ELMO_C_ARCHIVE", raising=False)
    config = PROJECT_ROOT / "downstream_configs" / "pos_elmo_c.jsonnet"
    with pytest.raises(ConfigurationError, match="not set: POS_DATA_DIR\n"):
        Params.from_file(str(config))
    # Other jsonnet errors are jsonnet's own.
    broken = tmp_path / "broken.jsonnet"
    broken.write_text("{ a: }")
    with pytest.raises(RuntimeError) as error:
        Params.from_file(str(broken))
    assert not isinstance(error.value, ConfigurationError)


def test_an_unset_variable_of_another_config_is_jsonnets_error(monkeypatch, tmp_path):
    """A config that reads no variable of the plugin's configs gets jsonnet's own error."""
    monkeypatch.delenv("SOMEONE_ELSES_DATA", raising=False)
    config = tmp_path / "theirs.jsonnet"
    config.write_text("{ data: std.extVar('SOMEONE_ELSES_DATA') }")
    with pytest.raises(
        RuntimeError, match="undefined external variable: SOMEONE_ELSES_DATA"
    ) as error:
        Params.from_file(str(config))
    assert not isinstance(error.value, ConfigurationError)


def test_allennlps_own_parsing_has_no_defaults_and_names_one_variable(monkeypatch, tmp_path):
    """What the patch changes: AllenNLP's own functions know no ELMo-C default and stop at the
    first unset variable with jsonnet's words."""
    monkeypatch.delenv("ELMO_C_DIM", raising=False)
    assert "ELMO_C_DIM" not in config_defaults_patch.ORIGINALS["environment_variables"]()
    config = tmp_path / "config.jsonnet"
    config.write_text("{ a: std.extVar('ELMO_C_ARCHIVE'), b: std.extVar('ELMO_C_FASTTEXT') }")
    monkeypatch.delenv("ELMO_C_ARCHIVE", raising=False)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)
    with pytest.raises(RuntimeError) as error:
        config_defaults_patch.ORIGINALS["evaluate_file"](str(config), ext_vars={})
    assert not isinstance(error.value, ConfigurationError) and "ELMO_C_FASTTEXT" not in str(
        error.value
    )
    with pytest.raises(ConfigurationError, match="not set: ELMO_C_ARCHIVE, ELMO_C_FASTTEXT"):
        Params.from_file(str(config))
