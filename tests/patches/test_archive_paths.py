"""`patches.archive_paths` is for ELMo-C runs only: another config goes to AllenNLP's own
`train_model` unchanged; an ELMo-C run without the atomic checkpointer is warned about. (What the
patch does for ELMo-C runs, and that AllenNLP's archives need it:
`tests/test_archive_anywhere.py`.)"""

import pytest

from allennlp.commands import train as train_command
from allennlp.common import Params

from allennlp_elmo_c.patches import archive_paths


@pytest.fixture
def calls(monkeypatch):
    """The arguments AllenNLP's own `train_model` is called with (it trains nothing here)."""
    seen = []

    def train_model(params, serialization_dir, **kwargs):
        seen.append(params.as_dict(quiet=True))

    train_model.__signature__ = __import__("inspect").signature(
        archive_paths.ORIGINALS["train_model"]
    )
    monkeypatch.setitem(archive_paths.ORIGINALS, "train_model", train_model)
    monkeypatch.setattr(archive_paths, "record_hardware", lambda directory: seen.append("hardware"))
    return seen


def test_a_run_without_elmo_c_components_is_allennlps(calls, tmp_path, caplog):
    config = {"model": {"type": "basic_classifier", "nearest_neighbour_words": "words.txt"},
              "trainer": {"checkpointer": {"type": "default"}}}  # fmt: skip
    (tmp_path / "words.txt").write_text("a\n")
    train_command.train_model(Params(dict(config)), str(tmp_path / "run"))
    assert calls == [config]  # the relative path as given, no hardware.json
    assert "atomic" not in caplog.text


@pytest.mark.parametrize("checkpointer", [None, {"type": "default"}])
def test_an_elmo_c_run_without_the_atomic_checkpointer_is_warned_about(
    checkpointer, calls, tmp_path, caplog
):
    config = {"model": {"type": "elmo_c"}, "trainer": {}}
    if checkpointer is not None:
        config["trainer"]["checkpointer"] = checkpointer
    with caplog.at_level("WARNING"):
        train_command.train_model(Params(config), str(tmp_path / "run"))
    assert "not an atomic checkpointer" in caplog.text and calls[-1] == "hardware"
    caplog.clear()
    config["trainer"]["checkpointer"] = {"type": "atomic"}
    train_command.train_model(Params(config), str(tmp_path / "run2"))
    assert "not an atomic checkpointer" not in caplog.text
