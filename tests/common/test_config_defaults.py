"""The plugin's defaults for config variables: seen by AllenNLP's config parsing when unset,
never written to the environment, and overridden by the environment or explicit ext_vars."""

import os

from allennlp.common import Params

from allennlp_elmo_c.common import config_defaults


def read(tmp_path, **ext_vars) -> str:
    config = tmp_path / "config.jsonnet"
    config.write_text("{ dim: std.extVar('ELMO_C_DIM') }")
    return Params.from_file(str(config), ext_vars=ext_vars or None)["dim"]


def test_default_when_unset(monkeypatch, tmp_path):
    monkeypatch.delenv("ELMO_C_DIM", raising=False)
    assert read(tmp_path) == "1024"
    assert "ELMO_C_DIM" not in os.environ
    config_defaults.apply()  # applying twice changes nothing
    assert read(tmp_path) == "1024"


def test_environment_and_ext_vars_win(monkeypatch, tmp_path):
    monkeypatch.setenv("ELMO_C_DIM", "256")
    assert read(tmp_path) == "256"
    assert read(tmp_path, ELMO_C_DIM="16") == "16"
