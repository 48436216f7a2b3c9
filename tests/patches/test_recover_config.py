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


@pytest.mark.parametrize("linked", ["out.log", "vocabulary"])
def test_recover_of_an_elmo_c_run_holding_a_link_is_refused_before_anything_is_written(
    tmp_path, linked
):
    """A received run whose `out.log` (appended to) or `vocabulary` (written into) is a link to
    a file of the receiver's: refused in one line, the linked file unchanged."""
    from allennlp.common.checks import ConfigurationError
    from allennlp.training import util as training_util

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"model": {"type": "elmo_c"}, "a": "from the environment"}')
    profile = tmp_path / "profile"
    profile.mkdir() if linked == "vocabulary" else profile.write_text("export PATH=/usr/bin\n")
    (run / linked).symlink_to(profile)
    with pytest.raises(ConfigurationError, match=f"{linked}.*symbolic link"):
        training_util.create_serialization_dir(Params(dict(ELMO_C)), str(run), True, False)
    if linked == "out.log":
        assert profile.read_text() == "export PATH=/usr/bin\n"
    else:
        assert list(profile.iterdir()) == []
