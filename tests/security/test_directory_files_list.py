"""
A model directory holds only what `package` writes: its config.json's `files` names the files its
biLM reads, under the kinds `package` writes (`FILE_KINDS` of
`allennlp_elmo_c/received/model_directory.py`), and cannot add a file of another kind. The crafted
directory lists a `tokenizer_config.json` in `files` (and in its regenerated `checksums.sha256`)
naming a `BertTokenizer` whose `vocab_file` is a file of the receiver's: `describe`, `ElmoC`,
`AutoModel` and every other plugin door refuse it in one line, before that file is opened.
`AutoTokenizer` reads a `tokenizer_config.json` before any plugin code runs
(docs/security.md says so), so the check is the one `describe` or `AutoModel` makes first.
"""

import json
from pathlib import Path

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.model_directory import HUGGING_FACE_FILES
from tests.helpers import (
    RECEIVED_MODEL_DOORS,
    contained_received_copy,
    OPENED,
    edit_directory_config,
    opens_under,
    outcome,
)

SECRET = "receivers_secret_word"


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file of the receiver's, watched: every open of it is recorded in `OPENED`."""
    path = tmp_path / "home" / "words.txt"
    path.parent.mkdir()
    path.write_text(f"[PAD]\n[UNK]\n{SECRET}\n")
    with opens_under(str(path)):
        yield path


def _add_tokenizer_config(directory: Path, secret: Path, kind: str) -> None:
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "BertTokenizer", "vocab_file": str(secret)})
    )
    edit_directory_config(
        directory, lambda config: config["files"].update({kind: "tokenizer_config.json"})
    )


# Every door that runs the plugin's checks of a model directory (`AutoTokenizer`: see above).
DOORS = [door for door in RECEIVED_MODEL_DOORS if door != "AutoTokenizer"]


@pytest.mark.parametrize("door", DOORS)
def test_files_cannot_add_a_tokenizer_config(door, model_directory, secret, tmp_path, monkeypatch):
    received = contained_received_copy(model_directory[0], tmp_path, monkeypatch)
    _add_tokenizer_config(received, secret, "tokenizer_config")
    (tmp_path / "work").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path / "work"))
    assert OPENED == [], "the receiver's file was read"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (tmp_path / "work" / "packaged").exists()
    assert isinstance(error, ConfigurationError), f"{door}: {type(error).__name__}: {error}"
    message = str(error)
    assert "\n" not in message and "files.tokenizer_config" in message, message
    assert "not a kind of file a model directory holds" in message


def test_files_cannot_name_a_file_the_bilm_does_not_read(
    model_directory, secret, tmp_path, monkeypatch
):
    """Under a kind `package` writes (`tokenizer`) the name must be one the biLM reads."""
    received = contained_received_copy(model_directory[0], tmp_path, monkeypatch)
    _add_tokenizer_config(received, secret, "tokenizer")
    error = outcome(lambda: RECEIVED_MODEL_DOORS["describe"](received, tmp_path))
    assert OPENED == []
    assert isinstance(error, ConfigurationError), error
    assert "files.tokenizer" in str(error) and "which its biLM does not read" in str(error)


def test_a_bilm_file_is_never_named_as_a_hugging_face_file(
    model_directory, secret, tmp_path, monkeypatch
):
    """The fastText `.bin` a sender renames `tokenizer_config.json` (in `files` and in the biLM's
    config alike) is refused: `AutoTokenizer` would read it as its tokenizer's config."""
    received = contained_received_copy(model_directory[0], tmp_path, monkeypatch)
    config = json.loads((received / "config.json").read_text())
    old = config["files"]["fasttext"]
    (received / old).rename(received / "tokenizer_config.json")
    text = (received / "config.json").read_text()
    text = text.replace(json.dumps(old), '"tokenizer_config.json"')
    (received / "config.json").write_text(text)
    edit_directory_config(received, lambda config: None)
    assert "tokenizer_config.json" in HUGGING_FACE_FILES
    for door in ("describe", "ElmoC", "AutoModel"):
        error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
        assert isinstance(error, ConfigurationError), f"{door}: {error!r}"
        assert "its biLM reads tokenizer_config.json" in str(error), str(error)
