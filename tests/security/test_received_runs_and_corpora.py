"""
What a received training run, text corpus, or component file (an ELMo char-CNN's options and
HDF5 weights, a BPE tokenizer) may do: nothing of the receiver's is read into what the plugin
writes, no symbolic link is written through or followed, what a file declares is counted against
the budget before it is allocated, and every refusal is one `ConfigurationError` line.
"""

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.describe import describe_archive, format_description
from allennlp_elmo_c.commands.package import package_model
from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus
from allennlp_elmo_c.modules.token_embedders.elmo_char_cnn import ElmoCharCnnEmbedder
from allennlp_elmo_c.received.allocation_budget import allocation_budget
from tests.helpers import write_elmo_files

SECRET = "the receiver's own file: not to be shared\n"


def received_run(elmo_c_archive: Path, target: Path) -> Path:
    """A copy of the fixture biLM's training run directory (as a sender shares it)."""
    shutil.copytree(elmo_c_archive.parent, target, ignore=shutil.ignore_patterns("*.lock"))
    return target


def one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message and "\x1b" not in message and len(message) < 1000, message
    return message


# --- a received training run --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hardware.json", "metrics.json"])
def test_package_never_follows_a_linked_run_record(name, elmo_c_archive, tmp_path):
    """`package RUN_DIR` copies the run's hardware and metrics into the model directory:
    a link there (to the receiver's file) is refused, not copied."""
    run = received_run(elmo_c_archive, tmp_path / "run")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps([{"cpu": SECRET}] if name == "hardware.json" else {"points": [], "x": SECRET}))
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(secret)
    with pytest.raises(ConfigurationError) as refused:
        package_model(str(run), str(tmp_path / "packaged"))
    assert name in one_line(refused.value) and "symbolic link" in str(refused.value)
    assert not (tmp_path / "packaged").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left


@pytest.mark.parametrize("name, content, why", [
    ("hardware.json", {"cpu": "x"}, "not the list"),
    ("hardware.json", ["a string, not a machine"], "hardware"),
    ("metrics.json", [1, 2], "not the dict"),
    ("metrics.json", "[" * 100 + "]" * 100, "nested deeper"),
])  # fmt: skip
def test_package_refuses_a_run_record_of_another_shape_in_one_line(name, content, why, elmo_c_archive, tmp_path):
    run = received_run(elmo_c_archive, tmp_path / "run")
    (run / name).write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ConfigurationError) as refused:
        package_model(str(run), str(tmp_path / "packaged"))
    assert name.split(".")[0] in one_line(refused.value) and why in str(refused.value)


def test_package_of_a_run_records_its_own_hardware(elmo_c_archive, tmp_path):
    run = received_run(elmo_c_archive, tmp_path / "run")
    packaged = package_model(str(run), str(tmp_path / "packaged"))
    training = json.loads((packaged / "config.json").read_text())["training"]
    assert training["hardware"] == json.loads((run / "hardware.json").read_text())


# --- a received text corpus ---------------------------------------------------------------------


def test_prepare_corpus_skips_links_and_counts_them(tmp_path):
    """A link in a received text directory (to the receiver's file, or dangling) is skipped and
    recorded in the manifest, like a FIFO; the linked file's lines never reach train.txt."""
    received = tmp_path / "received"
    received.mkdir()
    (received / "a.txt").write_text("The council met on Friday . Storms closed the schools .\n" * 50)
    secret = tmp_path / "secret.txt"
    secret.write_text("A secret line of the receiver .\n" * 50)
    (received / "linked.txt").symlink_to(secret)
    (received / "dangling.txt").symlink_to(tmp_path / "absent.txt")
    (received / "sub").mkdir()
    (received / "sub" / "linked.jsonl").symlink_to(secret)
    output = prepare_corpus([received], tmp_path / "corpus", validation_fraction=0.5, show_progress=False)
    text = "".join(path.read_text() for path in output.glob("*.txt"))
    assert "secret" not in text and "council" in text
    manifest = json.loads((output / "manifest.json").read_text())
    skipped = {Path(entry["path"]).name: entry["reason"] for entry in manifest["stats"]["skipped"]}
    assert skipped == {name: "symbolic link (not followed)" for name in ("linked.txt", "dangling.txt", "linked.jsonl")}


def test_prepare_corpus_counts_a_deeply_nested_json_line_without_parsing_it(tmp_path, monkeypatch):
    """A line nested deeper than `MAX_DEPTH` is counted as invalid before Python's parser sees
    it (which recurses once per level: a process with a raised recursion limit would overflow
    its stack)."""
    from allennlp_elmo_c.received.limits import MAX_JSON_DEPTH as MAX_DEPTH

    received = tmp_path / "received"
    received.mkdir()
    lines = ["[" * 100_000 + "]" * 100_000, json.dumps({"text": "The council met on Friday ."}),
             json.dumps({"text": "Storms closed the schools ."})]  # fmt: skip
    (received / "a.jsonl").write_text("\n".join(lines) + "\n")
    parse = json.loads

    def shallow_only(text, *args, **kwargs):
        assert not str(text).startswith("[" * (MAX_DEPTH + 1)), "a line nested too deep reached the parser"
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", shallow_only)
    output = prepare_corpus([received], tmp_path / "corpus", validation_fraction=0.5, show_progress=False)
    monkeypatch.undo()
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["stats"]["problems"][str(received / "a.jsonl")] == {"invalid_json_lines": 1}, manifest["stats"]


# --- describe -----------------------------------------------------------------------------------


def test_describe_prints_no_control_character_of_a_received_file(elmo_c_archive, tmp_path):
    """A sender's metrics.json (beside the archive) that would clear the screen and print a
    "verified" line is printed escaped and cut; an epoch that is not a count is not counted."""
    run = received_run(elmo_c_archive, tmp_path / "run")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics.update(epoch="x", training_duration="\x1b[2J\x1b[H\r\u202everified: safe to use" + "!" * 10_000)
    (run / "metrics.json").write_text(json.dumps(metrics))
    info = describe_archive(str(run / "model.tar.gz"))
    text = format_description(info)
    assert info["training"]["epochs"] is None
    assert all(character.isprintable() or character == "\n" for character in text)
    assert "\\x1b[2J\\x1b[H\\r\\u202everified" in text and len(text) < 4000


# --- component files: an ELMo char-CNN, a BPE tokenizer -----------------------------------------


def elmo_pair(directory: Path):
    return write_elmo_files(directory, [[1, 4], [2, 4]], n_highway=1, char_dim=4, output_dim=8)


def test_an_hdf5_dataset_stored_in_another_file_is_refused(tmp_path):
    """HDF5 external storage would read a file of the receiver's (or hang on a FIFO) into the
    weights."""
    options, weights = elmo_pair(tmp_path / "elmo")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(261 * 4, dtype=np.float32).tobytes())
    with h5py.File(weights, "a") as file:
        del file["char_embed"]
        file.create_dataset("char_embed", shape=(261, 4), dtype=np.float32,
                            external=[(str(secret), 0, h5py.h5f.UNLIMITED)])  # fmt: skip
    with pytest.raises(ConfigurationError) as refused:
        ElmoCharCnnEmbedder(options, weights)
    assert "char_embed" in one_line(refused.value) and "other files" in str(refused.value)


def test_an_hdf5_link_to_another_file_is_refused(tmp_path):
    options, weights = elmo_pair(tmp_path / "elmo")
    other_options, other = elmo_pair(tmp_path / "other")
    with h5py.File(weights, "a") as file:
        del file["CNN_proj"]
        file["CNN_proj"] = h5py.ExternalLink(other, "CNN_proj")
    with pytest.raises(ConfigurationError) as refused:
        ElmoCharCnnEmbedder(options, weights)
    assert "CNN_proj" in one_line(refused.value) and "ExternalLink" in str(refused.value)


def test_an_hdf5_dataset_declared_past_the_budget_is_refused_before_it_is_read(tmp_path):
    """A dataset declared at 1 GiB (compressed to nothing on disk) counts as 1 GiB against the
    budget before any of it is read; outside a budget (the user's own files) it is not counted."""
    options, weights = elmo_pair(tmp_path / "elmo")
    with h5py.File(weights, "a") as file:
        del file["CNN_high_0/b_carry"]
        file.create_dataset("CNN_high_0/b_carry", shape=(1 << 28,), dtype=np.float32, chunks=(1 << 20,),
                            compression="gzip", fillvalue=0.0)  # fmt: skip
    assert Path(weights).stat().st_size < 1 << 20
    with pytest.raises(ConfigurationError) as refused:
        with allocation_budget(64 << 20, "a received model"):
            ElmoCharCnnEmbedder(options, weights)
    assert "datasets of" in one_line(refused.value) and "Refused before allocating" in str(refused.value)
    small_options, small = elmo_pair(tmp_path / "small")
    with allocation_budget(64 << 20, "a received model"):
        ElmoCharCnnEmbedder(small_options, small)


def test_a_deeply_nested_elmo_options_file_is_one_line(tmp_path):
    options, weights = elmo_pair(tmp_path / "elmo")
    Path(options).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigurationError) as refused:
        ElmoCharCnnEmbedder(options, weights)
    assert "options" in one_line(refused.value) and "nested deeper" in str(refused.value)


def test_a_tokenizer_files_padding_is_dropped(bpe, tmp_path):
    """A `tokenizer.json` padding every encoding to a fixed length of its choosing (allocated per
    word) is read without it: each word has its own subwords only."""
    from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer

    config = json.loads((bpe / "tokenizer.json").read_text())
    config["padding"] = {"strategy": {"Fixed": 1 << 20}, "direction": "Right", "pad_to_multiple_of": None,
                         "pad_id": 0, "pad_type_id": 0, "pad_token": "@@UNKNOWN@@"}  # fmt: skip
    crafted = tmp_path / "tokenizer.json"
    crafted.write_text(json.dumps(config))
    plain = BpeTokenizer(str(bpe / "tokenizer.json"))
    padded = BpeTokenizer(str(crafted))
    sentence = "The council met"
    assert [t.text for t in padded.tokenize(sentence)] == [t.text for t in plain.tokenize(sentence)]
