"""A trained biLM archive moved to another directory, used from a third one with plain AllenNLP
commands (`allennlp evaluate`, `allennlp predict`) and no `-o` overrides: its fastText file is
found from the absolute path training recorded, `$ELMO_C_FASTTEXT` or beside the archive;
otherwise the error says what was tried and how to fix the command (issue #18)."""

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest

from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import read_archive_config
from allennlp_elmo_c.fasttext.fasttext_source import FASTTEXT_ENV, recorded_fasttext_paths

from tests.helpers import LM_DATA, RELATIVE_FASTTEXT, TINY_FASTTEXT, moved_archive as moved

@pytest.fixture
def elsewhere(monkeypatch, tmp_path) -> Path:
    """An empty current directory, away from the repository; no $ELMO_C_FASTTEXT."""
    directory = tmp_path / "cwd"
    directory.mkdir()
    monkeypatch.chdir(directory)
    monkeypatch.delenv(FASTTEXT_ENV, raising=False)
    return directory


def evaluate(monkeypatch, archive: Path, output: Path, *options: str) -> dict:
    argv = ["allennlp", "evaluate", str(archive), str(LM_DATA / "dev.txt"), "--output-file",
            str(output), "--include-package", "allennlp_elmo_c", *options]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    return json.loads(output.read_text())


def test_training_records_absolute_paths(elmo_c_archive):
    config = read_archive_config(str(elmo_c_archive))
    paths = recorded_fasttext_paths(config)
    assert paths  # embedder and indexer
    assert all(Path(path) == TINY_FASTTEXT for path in paths.values())
    assert all(os.path.isabs(path) for path in paths.values())
    assert os.path.isabs(config["model"]["nearest_neighbour_words"])


def test_evaluate_moved_archive_with_the_recorded_path(monkeypatch, elmo_c_archive, tmp_path,
                                                       elsewhere):  # fmt: skip
    archive = moved(elmo_c_archive, tmp_path / "moved")
    metrics = evaluate(monkeypatch, archive, tmp_path / "metrics.json")
    assert -1.0 <= metrics["forward_cosine"] <= 1.0
    # The training-time candidate list (recorded absolute too) is never read from an archive, a
    # received file like any other (docs/security.md); the user's own override gives it back.
    assert "forward_nn_accuracy" not in metrics
    words = json.dumps({"model.nearest_neighbour_words": str(LM_DATA / "candidates.txt")})
    metrics = evaluate(monkeypatch, archive, tmp_path / "metrics-nn.json", "-o", words)
    assert 0.0 <= metrics["forward_nn_accuracy"] <= 1.0


def test_evaluate_with_the_environment_variable(monkeypatch, elmo_c_archive, tmp_path, elsewhere,
                                                caplog):  # fmt: skip
    archive = moved(elmo_c_archive, tmp_path / "moved", relative=True)
    fasttext = tmp_path / "vectors" / "other-name.bin"
    fasttext.parent.mkdir()
    shutil.copy(TINY_FASTTEXT, fasttext)
    monkeypatch.setenv(FASTTEXT_ENV, str(fasttext))
    with caplog.at_level(logging.WARNING):
        metrics = evaluate(monkeypatch, archive, tmp_path / "metrics.json")
    assert -1.0 <= metrics["backward_cosine"] <= 1.0
    assert str(fasttext) in caplog.text
    assert "forward_nn_accuracy" not in metrics  # the training-time candidate list is not read


def test_evaluate_with_the_file_beside_the_archive(monkeypatch, elmo_c_archive, tmp_path,
                                                   elsewhere):  # fmt: skip
    archive = moved(elmo_c_archive, tmp_path / "moved", relative=True)
    shutil.copy(TINY_FASTTEXT, archive.parent / "tiny.bin")
    metrics = evaluate(monkeypatch, archive, tmp_path / "metrics.json")
    assert -1.0 <= metrics["forward_cosine"] <= 1.0


def test_evaluate_without_the_file_names_every_fix(monkeypatch, elmo_c_archive, tmp_path,
                                                   elsewhere):  # fmt: skip
    archive = moved(elmo_c_archive, tmp_path / "moved", relative=True)
    with pytest.raises(ConfigurationError) as error:
        evaluate(monkeypatch, archive, tmp_path / "metrics.json")
    message = str(error.value)
    assert f"{FASTTEXT_ENV}=" in message
    assert RELATIVE_FASTTEXT in message
    assert str(archive.parent / "tiny.bin") in message  # beside the archive
    # The -o fix names the archive's own keys.
    assert "-o" in message and "model.text_field_embedder.token_embedders.tokens.model_path" in message


def test_predict_with_the_environment_variable(monkeypatch, elmo_c_archive, tmp_path, elsewhere):
    archive = moved(elmo_c_archive, tmp_path / "moved", relative=True)
    monkeypatch.setenv(FASTTEXT_ENV, str(TINY_FASTTEXT))
    inputs = tmp_path / "sentences.jsonl"
    inputs.write_text(json.dumps({"sentence": "the council closed schools"}) + "\n")
    output = tmp_path / "predictions.jsonl"
    argv = ["allennlp", "predict", str(archive), str(inputs), "--predictor", "elmo_c_next_word",
            "--predictor-args", '{"top_k": 2}', "--output-file", str(output), "--silent",
            "--include-package", "allennlp_elmo_c"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    main(prog="allennlp")
    (line,) = [json.loads(text) for text in output.read_text().splitlines()]
    assert line["tokens"] == ["the", "council", "closed", "schools"]
    assert all(len(words) == 2 for words in line["next_words"])


def test_absolute_config_paths(monkeypatch, tmp_path):
    from allennlp_elmo_c.fasttext.fasttext_source import absolute_config_paths

    monkeypatch.chdir(TINY_FASTTEXT.parent.parent)
    config = {
        "dataset_reader": {"token_indexers": {"tokens": {"type": "fasttext_subwords",
                                                         "model_path": "fasttext/tiny.bin"}}},
        "model": {
            "text_field_embedder": {"token_embedders": {"tokens": {
                "type": "fasttext", "model_path": "fasttext/missing.bin"}}},
            "other": {"type": "something", "model_path": "fasttext/tiny.bin"},
            "nearest_neighbour_words": str(LM_DATA / "candidates.txt"),
            "downstream": {"type": "elmo_c_token_embedder", "archive_file": "model.tar.gz",
                           "fasttext_path": "fasttext/tiny.bin"},
        },
    }  # fmt: skip
    # A run recovered from a config.json recording the relative path keeps it.
    assert absolute_config_paths(json.loads(json.dumps(config)), keep=config) == []
    changed = absolute_config_paths(config)
    key = "dataset_reader.token_indexers.tokens.model_path"
    assert changed == [
        (key, "fasttext/tiny.bin", str(TINY_FASTTEXT)),
        ("model.downstream.fasttext_path", "fasttext/tiny.bin", str(TINY_FASTTEXT)),
    ]
    assert config["dataset_reader"]["token_indexers"]["tokens"]["model_path"] == str(TINY_FASTTEXT)
    # Missing files, other components' paths and absolute paths are left as they are.
    model = config["model"]
    assert model["text_field_embedder"]["token_embedders"]["tokens"]["model_path"] == (
        "fasttext/missing.bin"
    )
    assert model["other"]["model_path"] == "fasttext/tiny.bin"


def test_missing_model_path_outside_an_archive(elsewhere):
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
    from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

    with pytest.raises(ConfigurationError, match=f"{FASTTEXT_ENV}.*not set.*not loading an archive"):
        FastTextEmbedder("missing.bin")
    with pytest.raises(ConfigurationError, match="fasttext_subwords indexer"):
        FastTextSubwordsIndexer(model_path="missing.bin")
