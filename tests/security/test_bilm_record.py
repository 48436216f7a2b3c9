"""
The biLM record a task archive keeps (a line of its vocabulary, read when the biLM archive is
gone) makes its vocabulary files only after counting them: at most `MAX_RECORD_FILES` files, and
the memory reading them takes spent from the task model's budget, before any is written. The
crafted archives are the legacy task fixture (its biLM archive gone) with its record rewritten:
200,000 vocabulary files of a few bytes each (a 100 KB archive), and one namespace of millions of
lines. Each is refused with one line by `load_archive`, no file of the record written. And the
biLM is the one the task archive keeps: a config naming a biLM archive of the receiver's (one
that exists on this machine) never makes the loader open it.
"""

import gzip
import io
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import MAX_RECORD_FILES
from tests import FIXTURES_ROOT
from tests.helpers import outcome, without_elmo_c_variables

TASK = FIXTURES_ROOT / "legacy_models" / "task" / "model.tar.gz"
WRITES: List[str] = []
SCRATCH: List[str] = []


def _record_writes(event: str, args: tuple) -> None:
    if event != "open" or not SCRATCH or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
    path = os.path.abspath(os.fsdecode(args[0]))
    if any(flag in mode for flag in "wax") and path.startswith(SCRATCH[0]):
        WRITES.append(os.fsdecode(args[0]))


sys.addaudithook(_record_writes)


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """Temporary files (the extraction, the record's files) go to `tmp_path/scratch`; the files
    opened for writing there are recorded in `WRITES`."""
    import tempfile

    without_elmo_c_variables(monkeypatch)
    monkeypatch.setattr("allennlp.common.file_utils.CACHE_DIRECTORY", str(tmp_path / "cache"))
    directory = tmp_path / "scratch"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    WRITES.clear()
    SCRATCH.append(str(directory.resolve()))
    yield directory
    SCRATCH.clear()


def _with_record(target: Path, edit: Callable[[Dict[str, str]], None]) -> Path:
    """The legacy task archive with its biLM record's vocabulary files changed by `edit`."""
    out = io.BytesIO()
    with tarfile.open(TASK) as source, tarfile.open(fileobj=out, mode="w") as copy:
        for member in source.getmembers():
            stream = source.extractfile(member) if member.isfile() else None
            data = stream.read() if stream is not None else None
            if member.name.startswith("vocabulary/elmo_c_bilm_"):
                lines = data.decode().splitlines()
                record = json.loads(lines[-1])
                edit(record["vocabulary"])
                data = ("\n".join(lines[:-1] + [json.dumps(record)]) + "\n").encode()
                member.size = len(data)
            copy.addfile(member, io.BytesIO(data) if data is not None else None)
    target.write_bytes(gzip.compress(out.getvalue()))
    return target


def _load(archive: Path) -> None:
    import allennlp_models.tagging  # noqa: F401 (crf_tagger, the conll2003 reader)
    from allennlp.models.archival import load_archive

    load_archive(str(archive))


def _many_files(files: Dict[str, str]) -> None:
    files.update({f"n{index}.txt": "" for index in range(200_000)})


def _many_lines(files: Dict[str, str]) -> None:
    files["words.txt"] = "w\n" * 2_000_000  # 4 MB of text, about 500 MB once read


@pytest.mark.parametrize("edit, fragments", [
    (_many_files, ("200,001 files", f"more than the {MAX_RECORD_FILES} namespaces")),
    (_many_lines, ("more than", "for the vocabulary of the biLM record")),
], ids=["many files", "many lines"])  # fmt: skip
def test_the_records_files_are_counted_before_any_is_written(edit, fragments, scratch, tmp_path):
    archive = _with_record(tmp_path / "received.tar.gz", edit)
    assert archive.stat().st_size < 1_000_000
    error = outcome(lambda: _load(archive))
    record_files = [path for path in WRITES if path.endswith(".txt") and "/vocabulary/" not in path]
    assert record_files == [], f"{len(record_files)} files of the record written"
    assert not [p for p in scratch.rglob("*") if p.is_file()], "an extraction was left behind"
    assert isinstance(error, ConfigurationError), f"{type(error).__name__}: {str(error)[:300]}"
    message = str(error)
    assert "\n" not in message and len(message) < 2000, message[:2000]
    for fragment in fragments:
        assert fragment in message, message


def test_a_record_names_only_plain_vocabulary_files():
    """A name that is no plain `<namespace>.txt` is refused, its control characters escaped."""
    from allennlp_elmo_c.archive import _record_files

    error = outcome(lambda: _record_files({"\x1b[2J../x.txt": ""}, "task.tar.gz", "the record"))
    assert isinstance(error, ConfigurationError), error
    assert "\\x1b[2J../x.txt" in str(error) and "\x1b" not in str(error), str(error)


# --- the biLM a task archive keeps, never a file at the path its config names --------------------

OPENED: List[str] = []
WATCHED: List[str] = []


def _record_opens(event: str, args: tuple) -> None:
    if event != "open" or not WATCHED or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    if os.path.abspath(os.fsdecode(args[0])).startswith(WATCHED[0]):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_record_opens)


def _naming(target: Path, bilm: str, rename_record: bool) -> Path:
    """The legacy task archive whose config names the biLM archive `bilm` (its embedder and
    indexer), its record kept under the namespace of that name (`rename_record`) or not."""
    from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import record_namespace

    out = io.BytesIO()
    with tarfile.open(TASK) as source, tarfile.open(fileobj=out, mode="w") as copy:
        config = json.loads(source.extractfile("config.json").read())  # type: ignore[union-attr]
        old = config["model"]["text_field_embedder"]["token_embedders"]["elmo"]["archive_file"]
        for member in source.getmembers():
            stream = source.extractfile(member) if member.isfile() else None
            data = stream.read() if stream is not None else None
            if member.name == "config.json":
                data = data.replace(json.dumps(old).encode(), json.dumps(bilm).encode())
            if member.name == f"vocabulary/{record_namespace(old)}.txt" and rename_record:
                member.name = f"vocabulary/{record_namespace(bilm)}.txt"
            if data is not None:
                member.size = len(data)
            copy.addfile(member, io.BytesIO(data) if data is not None else None)
    target.write_bytes(gzip.compress(out.getvalue()))
    return target


@pytest.mark.parametrize("rename_record", [True, False], ids=["its record", "no record"])
def test_a_task_archive_never_reads_the_bilm_at_the_path_its_config_names(
    rename_record, elmo_c_archive, scratch, tmp_path
):
    """The config names a biLM archive of the receiver's (it exists there): the task archive's
    biLM is built from the record it keeps and its bundled `.bin`, and without a record it is
    refused in one line; the receiver's archive is never opened."""
    home = tmp_path / "home"
    home.mkdir()
    bilm = home / "model.tar.gz"
    bilm.write_bytes(elmo_c_archive.read_bytes())
    archive = _naming(tmp_path / "received.tar.gz", str(bilm), rename_record)
    OPENED.clear()
    WATCHED[:] = [str(home)]
    try:
        error = outcome(lambda: _load(archive))
    finally:
        WATCHED.clear()
    assert OPENED == [], "the receiver's biLM archive was opened"
    if rename_record:
        assert error is None, f"{type(error).__name__}: {error}"
        return
    assert isinstance(error, ConfigurationError), f"{type(error).__name__}: {error}"
    assert "keeps no record of its biLM" in str(error) and "\n" not in str(error)


def test_the_docs_give_the_records_bound():
    text = (Path(__file__).parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    bound = f"The record may hold at most {MAX_RECORD_FILES} vocabulary files"
    assert bound in " ".join(text.split())
