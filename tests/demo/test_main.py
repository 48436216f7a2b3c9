import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.demo.main import CONFIG, DOWNSTREAM_CONFIG, config
from tests.helpers import PROJECT_ROOT


def test_configs_take_their_variables_from_the_demo_not_the_environment(tmp_path, monkeypatch):
    for name in ("ELMO_C_DATA_DIR", "ELMO_C_ARCHIVE", "ELMO_C_BASELINE"):
        monkeypatch.delenv(name, raising=False)
    params = config(PROJECT_ROOT, CONFIG, {"ELMO_C_DATA_DIR": str(tmp_path)})
    assert params["train_data_path"].startswith(str(tmp_path))
    downstream = config(
        PROJECT_ROOT,
        DOWNSTREAM_CONFIG,
        {"ELMO_C_DATA_DIR": str(tmp_path), "ELMO_C_ARCHIVE": "x.tar.gz", "ELMO_C_BASELINE": "none"},
    )
    assert downstream["train_data_path"].startswith(str(tmp_path))


def test_a_missing_project_directory_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="--project-dir"):
        config(tmp_path, CONFIG, {"ELMO_C_DATA_DIR": str(tmp_path)})
