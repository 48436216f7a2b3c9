"""
Every key of a model directory's biLM config that names a file (a parameter of the plugin's
components whose name says it reads a file:
fastText `.bin`s, a BPE tokenizer, a char-CNN's ELMo options and weights) names one of the
directory's own files, by a plain name resolved against the directory, never the working
directory.

The attack: an `elmo_char_cnn` embedder (input or target) whose `options_file` / `weight_file`
names a file elsewhere would make the directory read it, and a relative name would be read from
the working directory: both refused.

The crafted directory is a copy of a real packaged biLM, its `checksums.sha256` regenerated as a
sender would. The outside files are real ELMo options and weights, so a loader that read them
would go on; an audit hook records every file Python opens under the outside directory, to show
the refusal comes before any of them is opened.
"""

import os
from pathlib import Path

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import read_directory_config
from allennlp_elmo_c.received.received_config import check_bilm_config
from tests.helpers import (
    RECEIVED_MODEL_DOORS,
    contained_received_copy,
    OPENED,
    edit_directory_config,
    opens_under,
    outcome,
    write_elmo_files,
)



@pytest.fixture
def watch(tmp_path):
    """`tmp_path/outside`, holding an ELMo options and weights pair (`options.json`,
    `weights.hdf5`); records (in `OPENED`) the files opened under it during the test."""
    outside = tmp_path / "outside"
    write_elmo_files(outside, [[1, 4], [2, 4]], 1, 4, 8)
    with opens_under(str(outside.resolve()) + os.sep):
        yield outside


@pytest.fixture
def received(model_directory, tmp_path, monkeypatch) -> Path:
    return contained_received_copy(model_directory[0], tmp_path, monkeypatch)


def add_char_cnn(config: dict, place: str, options_file: str, weight_file: str) -> str:
    """An `elmo_char_cnn` embedder added to the biLM of a directory's `config`, at `place`
    (`target`, `input`); returns the dotted key of its `options_file`."""
    embedder = {"type": "elmo_char_cnn", "options_file": options_file, "weight_file": weight_file}
    model = config["bilm"]["model"]
    if place == "target":
        model["target_embedder"] = {"token_embedders": {"tokens": embedder}}
        return "bilm.model.target_embedder.token_embedders.tokens.options_file"
    model["text_field_embedder"]["token_embedders"]["chars"] = embedder
    return "bilm.model.text_field_embedder.token_embedders.chars.options_file"


def test_the_file_keys_are_found_from_the_constructors():
    config = {"model": {"type": "elmo_c", "text_field_embedder": {"token_embedders": {
        "chars": {"type": "elmo_char_cnn", "options_file": "o.json", "weight_file": "w.hdf5"},
        "tokens": {"type": "fasttext", "model_path": "v.bin"}}}}}  # fmt: skip
    files = [path for path, _, _ in check_bilm_config(config, "x").files]
    embedders = "model.text_field_embedder.token_embedders"
    assert files == [f"{embedders}.chars.options_file", f"{embedders}.chars.weight_file",
                     f"{embedders}.tokens.model_path"]  # fmt: skip


@pytest.mark.parametrize("door", ["ElmoC", "PretrainedBiLM.from_archive"])
@pytest.mark.parametrize("place", ["target", "input"])
@pytest.mark.parametrize("form", ["absolute", "climbing"])
def test_char_cnn_files_outside_the_directory_are_refused(form, place, door, received, watch, tmp_path):
    options, weights = str(watch / "options.json"), str(watch / "weights.hdf5")
    if form == "climbing":
        options, weights = "../outside/options.json", "../outside/weights.hdf5"
        assert (received / options).resolve() == (watch / "options.json").resolve()
    keys = []
    edit_directory_config(received, lambda config: keys.append(add_char_cnn(config, place, options, weights)))
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
    assert OPENED == []
    assert isinstance(error, ConfigurationError), error
    assert keys[0] in str(error) and options in str(error)


@pytest.mark.parametrize("door", ["ElmoC", "PretrainedBiLM.from_archive"])
def test_a_relative_name_is_never_read_from_the_working_directory(door, received, watch, tmp_path, monkeypatch):
    """`options.json` is in the working directory, not in the model directory: the name means
    the directory's own (missing) file."""
    monkeypatch.chdir(watch)
    edit_directory_config(received, lambda config: add_char_cnn(config, "target", "options.json", "weights.hdf5"))
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
    assert OPENED == []
    assert isinstance(error, ConfigurationError), error
    assert str(received.resolve() / "options.json") in str(error)


def test_a_relative_name_is_made_a_path_into_the_directory(received, watch, monkeypatch):
    write_elmo_files(received, [[1, 4], [2, 4]], 1, 4, 8)
    monkeypatch.chdir(watch)
    edit_directory_config(received, lambda config: add_char_cnn(config, "target", "options.json", "weights.hdf5"))
    embedder = read_directory_config(str(received))["bilm"]["model"]["target_embedder"]["token_embedders"]["tokens"]
    assert embedder["options_file"] == str(received.resolve() / "options.json")
    assert embedder["weight_file"] == str(received.resolve() / "weights.hdf5")
