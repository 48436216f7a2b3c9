"""`patches.recover_config`: `--recover` of an ELMo-C run reads the run's config.json as plain
JSON; AllenNLP's own function evaluates it as jsonnet."""

import pytest

from allennlp.common import Params

from allennlp_elmo_c.patches import recover_config


# The run's config: an ELMo-C model (`elmo_c` is this plugin's) and a value from the environment.
ELMO_C = {"model": {"type": "elmo_c"}, "a": "from the environment"}


def test_recover_of_an_elmo_c_run_reads_the_run_config_as_plain_json(tmp_path, monkeypatch):
    from allennlp.common.checks import ConfigurationError
    from allennlp.training import util as training_util

    monkeypatch.setenv("COMPAT_TEST_VALUE", "from the environment")
    (tmp_path / "config.json").write_text(
        '{"model": {"type": "elmo_c"}, "a": std.extVar("COMPAT_TEST_VALUE")}'
    )
    with pytest.raises(ConfigurationError, match="not plain JSON"):
        training_util.create_serialization_dir(Params(dict(ELMO_C)), str(tmp_path), True, False)
    # AllenNLP's own function evaluates it as jsonnet, the variable included (and so matches).
    recover_config.ORIGINAL(Params(dict(ELMO_C)), str(tmp_path), True, False)
    (tmp_path / "config.json").write_text(
        '{"model": {"type": "elmo_c"}, "a": "from the environment"}'
    )
    training_util.create_serialization_dir(Params(dict(ELMO_C)), str(tmp_path), True, False)


def test_recover_of_any_other_run_is_allennlps(tmp_path, monkeypatch):
    from allennlp.training import util as training_util

    monkeypatch.setenv("COMPAT_TEST_VALUE", "from the environment")
    (tmp_path / "config.json").write_text(
        '{"model": {"type": "basic_classifier"}, "a": std.extVar("COMPAT_TEST_VALUE")}'
    )
    params = Params({"model": {"type": "basic_classifier"}, "a": "from the environment"})
    training_util.create_serialization_dir(params, str(tmp_path), True, False)
