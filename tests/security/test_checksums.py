"""
`checksums.sha256` holds a model directory together: it lists exactly the directory's files, by
plain names, every file is checked against it before anything is read, whatever its size, by
every front door (`AutoTokenizer` included), and a mismatch names the file.

Each test changes a copy of a real packaged biLM at test time (and, where a sender would,
regenerates or edits the listing), then loads it through the front doors: `ElmoC`,
`PretrainedBiLM.from_archive`, `load_archive` (`allennlp evaluate` / `predict`), the spaCy
component, Flair's `ElmoCEmbeddings`, Hugging Face's `AutoModel` and `AutoTokenizer`, `package`
and `describe`.

What the tests craft, each refused: a file left out of the listing (it would go unchecked), a
change in a file of any size (none is skipped as too large), a listed name that is absolute or
`../` (reading and hashing the file it names, wherever it is, would be an oracle on the
receiver's files), and each of these through `AutoTokenizer` and `describe` too, which read the
directory's files.
"""

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import model_directory as directory_files
from allennlp_elmo_c.received.model_directory import CHECKSUMS_FILE, WEIGHTS_FILE, verify_checksums
from tests.helpers import RECEIVED_MODEL_DOORS, outcome, regenerate_checksums, without_elmo_c_variables

DOORS = ["ElmoC", "PretrainedBiLM.from_archive", "load_archive", "spaCy", "Flair", "AutoModel",
         "AutoTokenizer", "package", "describe"]  # fmt: skip


@pytest.fixture
def received(model_directory, tmp_path, monkeypatch) -> Path:
    """A copy of the packaged biLM, as received (no ELMO_C_* variable set)."""
    without_elmo_c_variables(monkeypatch)
    target = tmp_path / "received"
    shutil.copytree(model_directory[0], target)
    return target


def listing(directory: Path) -> dict:
    lines = (directory / CHECKSUMS_FILE).read_text().splitlines()
    return {line[66:]: line[:64] for line in lines if line}


def write_listing(directory: Path, entries: dict) -> None:
    (directory / CHECKSUMS_FILE).write_text("".join(f"{digest}  {name}\n" for name, digest in entries.items()))


def tamper(path: Path) -> None:
    """Changes the last 8 bytes of `path` in place (a safetensors file still loads)."""
    data = path.read_bytes()
    path.write_bytes(data[:-8] + bytes(8 if data[-8:] != bytes(8) else [1] * 8))


def refused(door: str, directory: Path, tmp_path: Path, *fragments: str) -> None:
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](directory, tmp_path))
    assert isinstance(error, ConfigurationError), error
    for fragment in fragments:
        assert fragment in str(error)
    assert not (tmp_path / "packaged").exists()


@pytest.mark.parametrize("door", DOORS)
def test_a_file_left_out_of_the_listing_is_refused(door, received, tmp_path):
    """Weights left out of the listing could be anything (here changed) if only listed files
    were checked: a file the listing does not name is refused."""
    entries = listing(received)
    del entries[WEIGHTS_FILE]
    write_listing(received, entries)
    tamper(received / WEIGHTS_FILE)
    refused(door, received, tmp_path, f"{WEIGHTS_FILE} is not listed in {CHECKSUMS_FILE}")


@pytest.mark.parametrize("door", DOORS)
def test_an_extra_file_is_refused(door, received, tmp_path):
    """A file the listing does not name (here a new vocabulary namespace): refused."""
    (received / "vocabulary" / "extra_tags.txt").write_text("anything\n")
    refused(door, received, tmp_path, f"vocabulary/extra_tags.txt is not listed in {CHECKSUMS_FILE}")


@pytest.mark.parametrize("door", DOORS)
def test_a_listed_file_that_is_missing_is_refused(door, received, tmp_path):
    """A listed file that is missing: refused by every door, `AutoTokenizer` and `describe`
    (which read the directory without the loader) included."""
    entries = listing(received)
    entries["tokenizer.json"] = hashlib.sha256(b"{}").hexdigest()
    write_listing(received, entries)
    refused(door, received, tmp_path, "tokenizer.json", "missing")


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("form", ["absolute", "climbing"])
def test_a_listed_name_outside_the_directory_is_refused(form, door, received, tmp_path):
    """A listed name joined to the directory would have the file it names read and hashed
    wherever it is (an oracle on the receiver's files: here the listed digest matches, so the
    model would load): an absolute or climbing name is refused."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the receiver's own file\n")
    name = str(outside) if form == "absolute" else "../outside.txt"
    entries = listing(received)
    entries[name] = hashlib.sha256(outside.read_bytes()).hexdigest()
    write_listing(received, entries)
    refused(door, received, tmp_path, repr(name))


@pytest.mark.parametrize("door", DOORS)
def test_a_large_file_is_checked(door, received, tmp_path, monkeypatch):
    """No file is skipped on load for its size (here or over 1 GiB): a large file is hashed in
    chunks of `directory_files._CHUNK` bytes (4 MiB). Here a chunk is 1 KiB, so that the weights
    (~21 KB) are hashed as a large file is, and their last chunk is changed: refused."""
    monkeypatch.setattr(directory_files, "_CHUNK", 1024)
    weights = received / WEIGHTS_FILE
    assert weights.stat().st_size > 8 * directory_files._CHUNK
    assert WEIGHTS_FILE in verify_checksums(received)  # every chunk hashed: the listing's digest
    tamper(weights)
    refused(door, received, tmp_path, f"{WEIGHTS_FILE} does not match its checksum")


@pytest.mark.parametrize("door", DOORS)
def test_a_mismatch_names_the_file(door, received, tmp_path):
    """A changed file is refused with its name by every door, `AutoTokenizer` and `describe`
    (which read the directory without the loader) included."""
    (received / "vocabulary" / "non_padded_namespaces.txt").write_text("*tags\n*labels\n*words\n")
    refused(door, received, tmp_path, "vocabulary/non_padded_namespaces.txt does not match its checksum")


def test_auto_tokenizer_checks_the_files_it_reads(received, tmp_path):
    """A changed config.json (here its reader's sentence length), which `AutoTokenizer` reads:
    refused, not read without a word."""
    config = received / "config.json"
    config.write_text(config.read_text().replace('"max_sequence_length": 12', '"max_sequence_length": 13'))
    refused("AutoTokenizer", received, tmp_path, "config.json does not match its checksum")


def test_a_file_changed_after_a_load_is_refused_on_the_next(received, tmp_path):
    """A file's digest is kept per process, and must not outlive a change to the file, even one
    that keeps its size and modification time: the next load refuses the changed file."""
    RECEIVED_MODEL_DOORS["ElmoC"](received, tmp_path)
    weights = received / WEIGHTS_FILE
    before = weights.stat()
    tamper(weights)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_size == before.st_size
    refused("ElmoC", received, tmp_path, f"{WEIGHTS_FILE} does not match its checksum")


@pytest.mark.parametrize("line", ["not a checksum line", f"{'0' * 64}  vocabulary//../README.md",
                                  f"{'0' * 63}  README.md"])  # fmt: skip
def test_a_malformed_listing_is_refused(line, received):
    """A line that is not a plain checksum line (read as one, it would name a missing file, or
    mismatch): refused for what it is."""
    with (received / CHECKSUMS_FILE).open("a") as stream:
        stream.write(line + "\n")
    with pytest.raises(ConfigurationError, match=CHECKSUMS_FILE):
        verify_checksums(received)


def test_the_lock_file_allennlp_leaves_is_no_extra_file(received, tmp_path):
    """Reading a vocabulary leaves an empty `vocabulary/.lock` (AllenNLP's reader); a directory
    loads again with it, listed or not. One with content is a file like any other."""
    lock = received / "vocabulary" / ".lock"
    RECEIVED_MODEL_DOORS["ElmoC"](received, tmp_path)
    assert lock.is_file() and lock.stat().st_size == 0
    assert ".lock" not in (received / CHECKSUMS_FILE).read_text()
    RECEIVED_MODEL_DOORS["AutoTokenizer"](received, tmp_path)
    regenerate_checksums(received)  # a listing that names it
    lock.unlink()
    RECEIVED_MODEL_DOORS["ElmoC"](received, tmp_path)
    write_listing(received, {k: v for k, v in listing(received).items() if k != "vocabulary/.lock"})
    lock.write_text("not empty\n")
    refused("ElmoC", received, tmp_path, f"vocabulary/.lock is not listed in {CHECKSUMS_FILE}")


def test_outputs_list_exactly_their_files(received, tmp_path):
    """What `package` and `save_pretrained` write verifies as received (no link, exact list)."""
    from transformers import AutoModel

    RECEIVED_MODEL_DOORS["package"](received, tmp_path)
    assert verify_checksums(tmp_path / "packaged")
    AutoModel.from_pretrained(str(received)).save_pretrained(str(tmp_path / "saved"))
    checked = verify_checksums(tmp_path / "saved")
    assert sorted(p.relative_to(tmp_path / "saved").as_posix() for p in (tmp_path / "saved").rglob("*")
                  if p.is_file() and p.name not in (CHECKSUMS_FILE, ".lock")) == checked  # fmt: skip
