"""
Every name inside a received model is a plain relative name that resolves inside it, a model
directory holding a symbolic link is refused, and what the plugin writes from a model (`package`,
`save_pretrained`, spaCy's `to_disk`, a task model's record of its biLM) copies only the
model's own regular files.

Each test builds its crafted model at test time from a real packaged biLM (copied, its
`checksums.sha256` regenerated as a sender would), with "outside" files in the test's own
temporary directory standing for the receiver's files: a fastText `.bin` elsewhere, and a
"secret" whose content must never appear in any output.

The attacks, each refused: `files` and fastText names that are absolute or `../` would make a
model directory read files anywhere; a symbolic link in it would carry the file it points at into
the vocabulary, into `package`'s and `save_pretrained`'s output, spaCy's saved pipeline and a task
model's record; a `vocabulary` tar file would be extracted by AllenNLP's `cached_path` through a
chain of symbolic links outside its cache; `from_record` would write vocabulary files wherever a
record names them.
"""

import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import List

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
from tests.helpers import (
    RECEIVED_MODEL_DOORS,
    contained_received_copy,
    edit_directory_config,
    outcome,
    regenerate_checksums,
    without_elmo_c_variables,
)

SECRET = "s3cret-token-of-the-receiver-4417"
FASTTEXT = "vectors.bin"  # the packaged fixture's fastText file


@pytest.fixture
def received(model_directory, tmp_path, monkeypatch) -> Path:
    return contained_received_copy(model_directory[0], tmp_path, monkeypatch)


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SECRET + "\n")
    return path


def set_fasttext_names(config: dict, name: str, in_files: bool = True) -> None:
    """Every fastText name of a directory's config made `name`."""
    bilm = config["bilm"]
    bilm["dataset_reader"]["token_indexers"]["tokens"]["model_path"] = name
    bilm["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_path"] = name
    config["fasttext"]["file"] = name
    if in_files:
        config["files"]["fasttext"] = name
    else:
        config["files"].pop("fasttext")


def assert_secret_absent(*places: Path) -> None:
    for place in places:
        files = [place] if place.is_file() else list(place.rglob("*")) if place.exists() else []
        for path in files:
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path


DOORS = ["ElmoC", "load_archive", "AutoModel", "AutoTokenizer", "package", "describe"]


# --- names in config.json ------------------------------------------------------------------------


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("form", ["absolute", "climbing", "outside files"])
def test_a_fasttext_name_outside_the_directory_is_refused(form, door, received, tmp_path):
    """`files` names (and the biLM's fastText names) that are absolute or climb out with `..`
    would make the directory read the file they name, wherever it is (here a `.bin` the receiver
    has elsewhere): refused, nothing packaged."""
    elsewhere = tmp_path / "elsewhere" / FASTTEXT
    elsewhere.parent.mkdir()
    shutil.move(received / FASTTEXT, elsewhere)
    name = {"absolute": str(elsewhere), "climbing": f"../elsewhere/{FASTTEXT}",
            "outside files": str(elsewhere)}[form]  # fmt: skip
    if form == "climbing":
        # Resolved against the directory by the loader: the name leaves it.
        assert (received / name).resolve() == elsewhere.resolve()
    edit_directory_config(received, lambda config: set_fasttext_names(config, name, in_files=form != "outside files"))
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
    assert isinstance(error, ConfigurationError), error
    assert name in str(error) or str(elsewhere) in str(error)
    assert not (tmp_path / "packaged").exists()


@pytest.mark.parametrize("name", ["/etc/hostname", "../README.md", "vocabulary/../../x.bin"])
def test_files_names_must_be_plain(name, received, tmp_path):
    """A `files` name that no value of the biLM's config uses (not exploitable by itself, as such
    a name is never read; the fastText test above shows one that is used): refused all the same,
    as every name a model directory gives must be plain."""
    edit_directory_config(received, lambda config: config["files"].update(extra=name))
    error = outcome(lambda: RECEIVED_MODEL_DOORS["ElmoC"](received, tmp_path))
    assert isinstance(error, ConfigurationError) and repr(name) in str(error) and "files.extra" in str(error)


# --- symbolic links in a model directory --------------------------------------------------------


@pytest.mark.parametrize("door", DOORS + ["PretrainedBiLM.from_archive", "spaCy"])
def test_a_linked_fasttext_file_is_refused(door, received, tmp_path):
    """A model directory's `.bin` that is a symbolic link to a file of the receiver's (the
    directory would read it, and `package` copy it): refused, nothing packaged."""
    elsewhere = tmp_path / "elsewhere.bin"
    shutil.move(received / FASTTEXT, elsewhere)
    (received / FASTTEXT).symlink_to(elsewhere)
    regenerate_checksums(received)
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
    assert isinstance(error, ConfigurationError), error
    assert f"{FASTTEXT} is a symbolic link" in str(error)
    assert not (tmp_path / "packaged").exists()


def linked_secret(received: Path, secret: Path) -> Path:
    """The received directory with `vocabulary/secret_tags.txt` a link to the receiver's secret
    (a file of a namespace without padding, so its lines become the namespace's tokens), not
    listed in the checksums."""
    (received / "vocabulary" / "secret_tags.txt").symlink_to(secret)
    regenerate_checksums(received)
    return received


def test_package_never_copies_a_linked_secret(received, secret, tmp_path):
    """A vocabulary file linked to the receiver's secret would make the secret a vocabulary
    namespace that `package` writes into the directory to share: refused, the secret written
    nowhere."""
    error = outcome(lambda: RECEIVED_MODEL_DOORS["package"](linked_secret(received, secret), tmp_path))
    assert_secret_absent(tmp_path / "packaged", tmp_path / "scratch")
    assert isinstance(error, ConfigurationError) and "vocabulary/secret_tags.txt" in str(error)


def test_a_task_record_never_holds_a_linked_secret(received, secret):
    """The record a task model keeps of its biLM (its vocabulary) would hold the secret's lines,
    and with it every task archive trained on the biLM: refused, no record holds the secret."""
    records: List[str] = []
    error = outcome(lambda: records.append(PretrainedBiLM.from_archive(str(linked_secret(received, secret))).record()))
    assert not any(SECRET in record for record in records)
    assert isinstance(error, ConfigurationError) and "vocabulary/secret_tags.txt" in str(error)


def test_save_pretrained_never_copies_a_linked_secret(received, secret, tmp_path):
    """`ElmoCModel.save_pretrained` would copy the vocabulary through the link. Here the link
    appears after loading, so the copy itself refuses it; a directory holding the link is not
    loaded in the first place."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(received))
    linked_secret(received, secret)
    output = tmp_path / "saved"
    error = outcome(lambda: model.save_pretrained(str(output)))
    assert_secret_absent(output)
    assert isinstance(error, ConfigurationError) and "secret_tags.txt" in str(error)
    # And a directory holding the link is not loaded in the first place.
    error = outcome(lambda: AutoModel.from_pretrained(str(received)))
    assert isinstance(error, ConfigurationError) and "vocabulary/secret_tags.txt" in str(error)


def test_spacy_to_disk_never_copies_a_linked_secret(received, secret, tmp_path):
    """`nlp.to_disk` copying the model directory with `copytree` would hard-link (else copy)
    the secret the link points at: refused, the secret written nowhere."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(linked_secret(received, secret)), "device": "cpu"})
    output = tmp_path / "pipeline"
    error = outcome(lambda: nlp.to_disk(output))
    assert_secret_absent(output)
    assert isinstance(error, ConfigurationError) and "vocabulary/secret_tags.txt" in str(error)


def test_a_saved_pipeline_whose_model_is_a_link_is_refused(received, tmp_path):
    """A received pipeline's `elmo_c/model` that is a link to any directory of the receiver's
    (which the pipeline would read and save again): refused."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(received), "device": "cpu"})
    pipeline = tmp_path / "pipeline"
    nlp.to_disk(pipeline)
    shutil.rmtree(pipeline / "elmo_c" / "model")
    (pipeline / "elmo_c" / "model").symlink_to(received)
    error = outcome(lambda: spacy.load(pipeline))
    assert isinstance(error, ConfigurationError) and "symbolic link" in str(error)


# --- a vocabulary that is not a directory --------------------------------------------------------


def linked_vocabulary_tar(outside: Path) -> bytes:
    """A vocabulary tar whose member `escape/planted.txt` lands in `outside` through a chain of
    symbolic links that each look inside when their names are normalised (what the `cached_path`
    check AllenNLP's `Vocabulary.from_files` relies on does): `hop` points at `.`, and `escape`
    at `hop/hop/.../room/../../...` followed by `outside`'s path, which climbs out only once
    `hop` is followed."""
    depth = 30  # levels climbed; the kernel follows at most 40 links per path
    escape = "hop/" * depth + "room/" + "../" * (depth + 1) + str(outside).lstrip("/")
    members = [("hop", tarfile.SYMTYPE, "."), ("room", tarfile.DIRTYPE, ""),
               ("escape", tarfile.SYMTYPE, escape)]  # fmt: skip
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w:gz") as archive:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            archive.addfile(info)
        for name, data in (("escape/planted.txt", b"planted\n"), ("non_padded_namespaces.txt", b"*tags\n*labels\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return stream.getvalue()


@pytest.mark.parametrize("door", ["ElmoC", "load_archive", "AutoTokenizer"])
def test_a_vocabulary_tar_in_a_directory_is_refused(door, received, tmp_path):
    """A `vocabulary` that is a tar file would be extracted as an archive by AllenNLP's
    `cached_path`, writing through its links outside the cache: refused, nothing written
    outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(received / "vocabulary")
    (received / "vocabulary").write_bytes(linked_vocabulary_tar(outside))
    regenerate_checksums(received)
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](received, tmp_path))
    assert list(outside.iterdir()) == []
    assert isinstance(error, ConfigurationError) and "`vocabulary` must be a real directory" in str(error)


@pytest.mark.parametrize("door", ["PretrainedBiLM.from_archive", "load_archive"])
def test_a_vocabulary_tar_in_an_archive_is_refused(door, elmo_c_archive, tmp_path, monkeypatch):
    """The same, from an archive whose `vocabulary` member is a tar file."""
    without_elmo_c_variables(monkeypatch)
    monkeypatch.setattr("allennlp.common.file_utils.CACHE_DIRECTORY", str(tmp_path / "cache"))
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(elmo_c_archive) as source, tarfile.open(archive, "w:gz") as target:
        for member in source.getmembers():
            if member.name.startswith("vocabulary"):
                continue
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
        data = linked_vocabulary_tar(outside)
        info = tarfile.TarInfo("vocabulary")
        info.size = len(data)
        target.addfile(info, io.BytesIO(data))
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](archive, tmp_path))
    assert list(outside.iterdir()) == []
    assert isinstance(error, ConfigurationError) and "`vocabulary` must be a real directory" in str(error)


# --- task records --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["climbing", "absolute"])
def test_a_record_names_only_plain_vocabulary_files(form, elmo_c_archive, tmp_path, monkeypatch):
    """A task archive's biLM record naming a vocabulary file by a climbing or absolute name
    would make `from_record` write it there, outside its temporary directory: refused, nothing
    written."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    target = tmp_path / "planted.txt"
    name = {"climbing": "../" * 40 + str(target).lstrip("/"), "absolute": str(target)}[form]
    record = json.loads(PretrainedBiLM.from_archive(str(elmo_c_archive)).record())
    record["vocabulary"][name] = "planted\n"
    error = outcome(lambda: PretrainedBiLM.from_record(json.dumps(record), str(elmo_c_archive)))
    assert not target.exists()
    assert isinstance(error, ConfigurationError) and "a record's vocabulary files are plain" in str(
        error)
    # The name is shown from its start (a long one cut to a shown length, with its size).
    assert repr(name)[:60] in str(error)
    assert os.listdir(scratch) == []
