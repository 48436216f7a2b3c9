"""
Crafted received models, one table (`CRAFTED`) that every front door of `RECEIVED_MODEL_DOORS`
loads: each case is either refused with one `ConfigurationError` line naming what was refused
(its received text escaped and cut), or held (the door does not read that file: it loads, or
refuses for the case's reason), and never ends in another exception, creates a file outside the
test's scratch place, or extracts past the archive bounds.

The cases: a tar archive with thousands of chained GNU long-name headers (tarfile would recurse
into them), hard links to a member the loader does not take (tarfile extracts each as a full
copy), a deeply nested `meta.json`, a vocabulary file that is not UTF-8, a directory named like
a vocabulary file or `.lock`, a `weights.th` holding a list or not a pickle, and a config key of
terminal control sequences three megabytes long, and a char-CNN's ELMo `options.json` nested
100,000 levels deep.
"""

import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import pytest
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits, safe_extract
from tests.helpers import (
    RECEIVED_MODEL_DOORS,
    outcome,
    regenerate_checksums,
    without_elmo_c_variables,
    write_elmo_files,
)

MiB = 1 << 20


def _members(archive: Path) -> List[Tuple[tarfile.TarInfo, Optional[bytes]]]:
    with tarfile.open(archive) as source:
        return [(member, source.extractfile(member).read() if member.isfile() else None)  # type: ignore[union-attr]
                for member in source.getmembers()]  # fmt: skip


def _file(name: str, data: bytes) -> Tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _entry(name: str, kind: bytes, linkname: str = "") -> Tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def rewritten_archive(source: Path, target: Path, replace: Dict[str, bytes], extra=(), tail: bytes = b"") -> Path:
    """`source` (a model.tar.gz) with members' data replaced (`replace`, by name), `extra`
    members added after its own, and then the raw tar blocks `tail` before the end."""
    target.parent.mkdir(parents=True, exist_ok=True)
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.GNU_FORMAT) as archive:
        added = {info.name for info, _ in extra}  # an added member takes the place of its namesake
        for info, data in _members(source):
            if info.name in added:
                continue
            if info.name in replace:
                data = replace[info.name]
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
        for info, data in extra:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
        archive.fileobj.write(tail)  # type: ignore[union-attr]
    import gzip

    target.write_bytes(gzip.compress(stream.getvalue(), compresslevel=1))
    return target


def chained_long_names(count: int, pax: bool = False) -> bytes:
    """`count` GNU long-name headers (or pax headers), each naming the next header's member,
    then a file."""
    blocks = []
    for _ in range(count):
        name = b"31 path=vocabulary/chained.txt\n" if pax else b"vocabulary/chained.txt\0"
        info = tarfile.TarInfo("././@PaxHeader" if pax else "././@LongLink")
        info.type, info.size = (tarfile.XHDTYPE if pax else tarfile.GNUTYPE_LONGNAME), len(name)
        blocks.append(info.tobuf(format=tarfile.GNU_FORMAT)[: tarfile.BLOCKSIZE])
        blocks.append(name + bytes(tarfile.BLOCKSIZE - len(name)))
    info = tarfile.TarInfo("vocabulary/chained.txt")
    info.size = 1
    blocks.append(info.tobuf(format=tarfile.GNU_FORMAT) + b"x" + bytes(tarfile.BLOCKSIZE - 1))
    return b"".join(blocks)


# A padded vocabulary namespace as AllenNLP writes it, with one word in Latin-1.
LATIN1_TOKENS = "@@UNKNOWN@@\nthe\ncafé\n".encode("latin-1")


def weights_pickle(value) -> bytes:
    stream = io.BytesIO()
    torch.save(value, stream)
    return stream.getvalue()


class Case(NamedTuple):
    kind: str  # "archive" or "directory"
    craft: Callable[[Path, Path], Path]  # (the fixture model, the target) -> the crafted model
    fragments: Tuple[str, ...]  # what the one line names
    held_by: Tuple[str, ...] = ()  # doors that never read the crafted file


def _archive_case(replace=None, extra=(), tail=b"", **keywords) -> Callable[[Path, Path], Path]:
    def craft(source: Path, target: Path) -> Path:
        return rewritten_archive(source, target / "model.tar.gz", replace or {}, extra, tail)

    return craft


def _directory_case(edit: Callable[[Path], None]) -> Callable[[Path, Path], Path]:
    def craft(source: Path, target: Path) -> Path:
        shutil.copytree(source, target / "received")
        (target / "received" / "vocabulary" / ".lock").unlink(missing_ok=True)
        edit(target / "received")
        regenerate_checksums(target / "received")  # as a sender would
        return target / "received"

    return craft


def _nested_key(directory: Path) -> None:
    config = json.loads((directory / "config.json").read_text())
    config["bilm"]["model"]["\x1b[2J\x1b[H verified " + "k" * (3 * MiB)] = 1
    (directory / "config.json").write_text(json.dumps(config))


def _nested_elmo_options(directory: Path) -> None:
    """A char-CNN target embedder whose ELMo `options.json` (a file of the directory) is nested
    100,000 levels deep."""
    options, weights = write_elmo_files(directory, [[1, 4], [2, 4]], 1, 4, 8)
    Path(options).write_text("[" * 100_000 + "]" * 100_000)
    config = json.loads((directory / "config.json").read_text())
    config["bilm"]["model"]["target_embedder"] = {"token_embedders": {"tokens": {
        "type": "elmo_char_cnn", "options_file": Path(options).name,
        "weight_file": Path(weights).name,
    }}}  # fmt: skip
    (directory / "config.json").write_text(json.dumps(config))


def _latin1_vocabulary(directory: Path) -> None:
    (directory / "vocabulary" / "tokens.txt").write_bytes(LATIN1_TOKENS)


# Which doors build the biLM from an archive (and read its meta.json); `describe` reads only
# config.json, metrics.json and weights.th of an archive.
ARCHIVE_DOORS = ("ElmoC", "PretrainedBiLM.from_archive", "load_archive", "allennlp predict",
                 "elmo-c-embed", "package", "describe")  # fmt: skip
DIRECTORY_DOORS = tuple(RECEIVED_MODEL_DOORS)

CRAFTED: Dict[str, Case] = {
    "chained long-name headers": Case("archive", _archive_case(tail=chained_long_names(3000)),
                                      ("extended headers",)),
    "hard links to a member not extracted": Case("archive", _archive_case(
        extra=[_file("blob.bin", bytes(MiB))]
        + [_entry(f"vocabulary/copy{i}.txt", tarfile.LNKTYPE, "blob.bin") for i in range(80)]),
        ("hard link", "bytes")),  # 80 MiB made of 1 MiB (and a 100 KB archive)
    "a deeply nested meta.json": Case("archive", _archive_case(
        replace={"meta.json": b"[" * 2000 + b"]" * 2000}), ("meta.json", "nested deeper"),
        held_by=("describe",)),
    "a vocabulary file that is not UTF-8": Case("archive", _archive_case(
        extra=[_file("vocabulary/tokens.txt", LATIN1_TOKENS)]), ("tokens.txt", "not UTF-8"),
        held_by=("describe",)),
    "a directory named like a vocabulary file": Case("archive", _archive_case(
        extra=[_entry("vocabulary/labels.txt", tarfile.DIRTYPE)]), ("labels.txt", "is a directory"),
        held_by=("describe",)),
    "a directory named .lock": Case("archive", _archive_case(
        extra=[_entry("vocabulary/.lock", tarfile.DIRTYPE)]), (".lock", "is a directory"), held_by=("describe",)),
    "weights.th holding a list": Case("archive", _archive_case(
        replace={"weights.th": weights_pickle([1, 2, 3])}), ("weights.th", "not a state dict")),
    "weights.th that is not a pickle": Case("archive", _archive_case(
        replace={"weights.th": b"these bytes are no pickle\n" * 40}), ("weights.th",)),
    "a vocabulary file that is not UTF-8 (directory)": Case("directory", _directory_case(_latin1_vocabulary),
                                                            ("tokens.txt", "not UTF-8"), held_by=("describe",)),
    "a deeply nested ELMo options.json": Case("directory", _directory_case(_nested_elmo_options),
                                              ("options.json", "nested deeper"),
                                              held_by=("describe", "AutoTokenizer")),
    "a 3 MB config key of control sequences": Case("directory", _directory_case(_nested_key),
                                                   ("\\x1b[2J\\x1b[H verified kkk", "characters")),
}  # fmt: skip


def _doors(kind: str) -> Tuple[str, ...]:
    return ARCHIVE_DOORS if kind == "archive" else DIRECTORY_DOORS


CASES = [(name, door) for name, case in CRAFTED.items() for door in _doors(case.kind)]


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """Where temporary files (extractions) go: within the test's own directory."""
    import tempfile

    without_elmo_c_variables(monkeypatch)
    monkeypatch.setattr("allennlp.common.file_utils.CACHE_DIRECTORY", str(tmp_path / "cache"))
    directory = tmp_path / "scratch"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _bytes_under(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.parametrize("name, door", CASES, ids=[f"{name}-{door}" for name, door in CASES])
def test_a_crafted_model_is_refused_in_one_line_by_every_door(
    name, door, elmo_c_archive, model_directory, tmp_path, scratch, monkeypatch
):
    case = CRAFTED[name]
    source = elmo_c_archive if case.kind == "archive" else model_directory[0]
    model = case.craft(source, tmp_path / "crafted")
    work = tmp_path / "work"
    work.mkdir()
    outside = sorted(p for p in tmp_path.iterdir() if p.name not in ("scratch", "work", "cache", "crafted"))
    peak = {"bytes": 0}
    real_extractall = tarfile.TarFile.extractall

    def measured_extractall(self, path=".", *args, **kwargs):  # what extraction put on disk
        try:
            return real_extractall(self, path, *args, **kwargs)
        finally:
            peak["bytes"] = max(peak["bytes"], _bytes_under(Path(path)))

    monkeypatch.setattr(tarfile.TarFile, "extractall", measured_extractall)
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](model, work))
    assert sorted(p for p in tmp_path.iterdir() if p.name not in ("scratch", "work", "cache", "crafted")) == outside
    assert peak["bytes"] < limits.RATIO_FLOOR_BYTES, f"{peak['bytes']:,} bytes extracted"
    assert not [p for p in scratch.rglob("*") if p.is_file()], "an extraction was left behind"
    if door in case.held_by and not isinstance(error, ConfigurationError):
        assert error is None, f"{door}: {type(error).__name__}: {error}"
        return
    assert isinstance(error, ConfigurationError), f"{door}: {type(error).__name__}: {str(error)[:300]}"
    message = str(error)
    assert "\n" not in message and "\x1b" not in message and len(message) < 2000, message[:2000]
    for fragment in case.fragments:
        assert fragment in message, message


def test_hard_links_count_as_the_bytes_they_make(tmp_path):
    """Eighty hard links to a 1 MiB member make 80 MiB where it is not extracted: past the 64 MiB
    floor of a small archive, refused before extraction; a few links to a file stay within."""
    many = rewritten_archive_plain(tmp_path / "many.tar", 80)
    with pytest.raises(ConfigurationError, match="hard link|bytes"):
        safe_extract.extract_archive(many, tmp_path / "out-many", wanted=lambda name: name != "blob.bin")
    few = rewritten_archive_plain(tmp_path / "few.tar", 3)
    (tmp_path / "out-few").mkdir()
    safe_extract.extract_archive(few, tmp_path / "out-few", wanted=lambda name: name != "blob.bin")
    assert sorted(p.name for p in (tmp_path / "out-few").iterdir()) == ["copy0", "copy1", "copy2"]


def rewritten_archive_plain(target: Path, links: int) -> Path:
    (target.parent / "out-many").mkdir(exist_ok=True)
    with tarfile.open(target, "w") as archive:
        info, data = _file("blob.bin", bytes(MiB))
        archive.addfile(info, io.BytesIO(data))
        for i in range(links):
            archive.addfile(_entry(f"copy{i}", tarfile.LNKTYPE, "blob.bin")[0])
    return target


def test_two_extended_headers_before_a_member_are_read_and_a_chain_is_refused(tmp_path):
    """A long name and a long link name (what GNU tar writes for a long hard link) are read; a
    chain of thousands of GNU long-name or pax headers is one line, not a `RecursionError`."""
    target = tmp_path / "long.tar"
    long_name = "vocabulary/" + "n" * 150 + ".txt"
    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as archive:
        info, data = _file(long_name, b"x")
        archive.addfile(info, io.BytesIO(data))
        archive.addfile(_entry("vocabulary/" + "m" * 150, tarfile.LNKTYPE, long_name)[0])
    assert safe_extract.read_member(target, long_name, 10) == b"x"
    for pax in (False, True):
        target.write_bytes(chained_long_names(2, pax) + bytes(1024))
        assert safe_extract.read_member(target, "vocabulary/chained.txt", 10) == b"x"
        target.write_bytes(chained_long_names(3000, pax) + bytes(1024))
        with pytest.raises(ConfigurationError, match="extended headers"):
            safe_extract.read_member(target, "vocabulary/chained.txt", 10)
