"""
No archive member is written outside its extraction directory, and no archive fills the disk.

Each test builds, at test time, a copy of a real trained biLM archive with crafted members added,
and loads it through each front door that extracts it: AllenNLP's `load_archive` (what
`allennlp evaluate` / `predict` and `Predictor` call), `allennlp predict` itself, `ElmoC`,
`PretrainedBiLM.from_archive`, and a model directory whose biLM config nests the archive through
a component's `archive_file`. Every load must be refused with a `ConfigurationError` naming the
member, and the files outside (in the test's temporary directory) stay absent or unchanged.

The attacks: AllenNLP's own `extracted_archive` calls `tarfile.extractall` with no filter, so
through it `..` and absolute members, symbolic and hard links would write or overwrite any file
the user can, FIFOs and devices would be created, and a 2 MB archive would be extracted to 2 GiB,
the model still loading.
"""

import gzip
import io
import json
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c import ElmoC
from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
from tests.helpers import (
    RECEIVED_MODEL_DOORS,
    TINY_FASTTEXT,
    outcome,
    regenerate_checksums,
    without_elmo_c_variables,
)

Member = Tuple[tarfile.TarInfo, Optional[bytes]]


# --- crafted archives ----------------------------------------------------------------------------


def regular(name: str, data: bytes) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name: str, kind: bytes, linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3  # /dev/null's numbers
    return info, None


def original_members(archive: Path) -> List[Member]:
    with tarfile.open(archive) as source:
        return [
            (member, source.extractfile(member).read() if member.isfile() else None)  # type: ignore[union-attr]
            for member in source.getmembers()
        ]


def crafted(source: Path, target: Path, extra: List[Member]) -> Path:
    """`source` (a model.tar.gz) with the `extra` members added after its own."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, "w:gz") as archive:
        for info, data in original_members(source) + extra:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return target


def climbing(tmp_path: Path, name: str) -> str:
    """A member name that climbs from any extraction directory to `tmp_path / name`."""
    return "../" * 40 + str(tmp_path / name).lstrip("/")


class Attack:
    """Members that would write outside, and the check that nothing did."""

    def __init__(self, tmp_path: Path, kind: str) -> None:
        self.kind = kind
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.victim = self.outside / "victim.txt"
        self.victim.write_text("the receiver's own file\n")
        if kind == "dotdot":
            self.member = climbing(tmp_path, "outside/planted-dotdot.txt")
            self.members = [regular(self.member, b"planted\n")]
        elif kind == "absolute":
            self.member = str(self.outside / "planted-absolute.txt")
            self.members = [regular(self.member, b"planted\n")]
        elif kind == "symlink":
            self.member = "escape"
            self.members = [special("escape", tarfile.SYMTYPE, str(self.outside)),
                            regular("escape/planted-symlink.txt", b"planted\n")]  # fmt: skip
        elif kind == "hardlink":
            self.member = "victim"
            self.members = [special("victim", tarfile.LNKTYPE, str(self.victim)),
                            regular("victim", b"overwritten\n")]  # fmt: skip
        elif kind == "fifo":
            self.member = "pipe"
            self.members = [special("pipe", tarfile.FIFOTYPE)]
        elif kind == "device":
            self.member = "null"
            self.members = [special("null", tarfile.CHRTYPE)]
        else:
            raise ValueError(kind)

    def assert_nothing_written(self) -> None:
        assert sorted(p.name for p in self.outside.iterdir()) == ["victim.txt"]
        assert self.victim.read_text() == "the receiver's own file\n"


ATTACKS = ["dotdot", "absolute", "symlink", "hardlink", "fifo", "device"]
WHY = {"dotdot": "climbs out", "absolute": "absolute name", "symlink": "symbolic link",
       "hardlink": "hard link", "fifo": "FIFO", "device": "device"}  # fmt: skip


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """The temporary directory every extraction goes into (within the test's own directory)."""
    directory = tmp_path / "scratch"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    without_elmo_c_variables(monkeypatch)
    return directory


# --- the front doors -----------------------------------------------------------------------------


def nesting_directory(model_directory: Path, archive: Path, target: Path) -> Path:
    """A copy of the model directory whose biLM's input embedder is an `elmo_c_token_embedder`
    over `archive` (shipped in the directory, named in `files`), its checksums regenerated as a
    sender would."""
    shutil.copytree(model_directory, target)
    shutil.copyfile(archive, target / "nested.tar.gz")
    config = json.loads((target / "config.json").read_text())
    config["files"]["nested"] = "nested.tar.gz"
    embedders = config["bilm"]["model"]["text_field_embedder"]["token_embedders"]
    embedders["tokens"] = {"type": "elmo_c_token_embedder", "archive_file": "nested.tar.gz"}
    (target / "config.json").write_text(json.dumps(config))
    regenerate_checksums(target)
    return target


DOORS = ["load_archive", "allennlp predict", "ElmoC", "PretrainedBiLM.from_archive"]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("kind", ATTACKS)
def test_a_crafted_member_is_refused_before_anything_is_extracted(
    kind, door, elmo_c_archive, tmp_path, scratch
):
    """Extracted without a filter, `..`, absolute and symbolic-link members would be written
    outside, a hard link would let a later member overwrite the file it points at, FIFOs and
    devices would be created, and the model would load: each refused, naming the member and the
    archive, nothing written."""
    attack = Attack(tmp_path, kind)
    archive = crafted(elmo_c_archive, tmp_path / "received" / "model.tar.gz", attack.members)
    error = outcome(lambda: RECEIVED_MODEL_DOORS[door](archive, tmp_path))
    attack.assert_nothing_written()
    assert isinstance(error, ConfigurationError), error
    assert WHY[kind] in str(error) and attack.member[:100] in str(error) and str(archive) in str(error)
    assert list(scratch.iterdir()) == []  # nothing left extracted


@pytest.mark.parametrize("kind", ["dotdot", "symlink", "hardlink"])
def test_an_archive_nested_in_a_model_directory_is_refused(kind, elmo_c_archive, model_directory,
                                                           tmp_path, scratch):  # fmt: skip
    """A model directory whose config names an archive it ships (a component's `archive_file`)
    would have it extracted, members outside included: refused, nothing written."""
    attack = Attack(tmp_path, kind)
    archive = crafted(elmo_c_archive, tmp_path / "nested.tar.gz", attack.members)
    directory = nesting_directory(model_directory[0], archive, tmp_path / "received")
    error = outcome(lambda: ElmoC(str(directory), 1, dropout=0.0))
    attack.assert_nothing_written()
    assert isinstance(error, ConfigurationError), error
    assert list(scratch.iterdir()) == []


# --- size and ratio ------------------------------------------------------------------------------


def tar_bytes(members: List[Member]) -> bytes:
    """Members as tar blocks, without the end-of-archive blocks."""
    stream = io.BytesIO()
    for info, data in members:
        stream.write(info.tobuf(format=tarfile.GNU_FORMAT))
        if data:
            stream.write(data + bytes(-len(data) % tarfile.BLOCKSIZE))
    return stream.getvalue()


def bomb(source: Path, target: Path, gib: int = 2) -> Path:
    """`source` with a member of `gib` GiB of zeros added, about 1 MB per GiB on disk (gzip
    members concatenated: built in milliseconds)."""
    header = tarfile.TarInfo("padding.bin")
    header.size = gib << 30
    zeros = gzip.compress(bytes(1 << 20))
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        out.write(gzip.compress(tar_bytes(original_members(source)) + header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(gib << 10):
            out.write(zeros)
        out.write(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))
    return target


@pytest.mark.parametrize("door", ["load_archive", "PretrainedBiLM.from_archive"])
def test_a_decompression_bomb_is_refused_before_extraction(door, elmo_c_archive, tmp_path, scratch):
    """A 2 MB archive that extracts to 2 GiB (and would then load): refused before extraction,
    the message naming the fix."""
    archive = bomb(elmo_c_archive, tmp_path / "received" / "model.tar.gz")
    assert archive.stat().st_size < 4 << 20
    with pytest.raises(ConfigurationError, match="padding.bin") as refusal:
        RECEIVED_MODEL_DOORS[door](archive, tmp_path)
    assert "MAX_COMPRESSION_RATIO" in str(refusal.value)  # the fix is named
    assert list(scratch.iterdir()) == []


def test_the_size_bound_holds_for_incompressible_members(elmo_c_archive, tmp_path, scratch, monkeypatch):
    """What an archive extracts is bounded, incompressible members included (here a 3 MB member
    of random bytes against a bound lowered to 1 MB, standing for a disk-filling one): refused."""
    from allennlp_elmo_c.received import limits

    monkeypatch.setattr(limits, "MAX_EXTRACTED_BYTES", 1 << 20)
    monkeypatch.setattr(limits, "RATIO_FLOOR_BYTES", 1 << 20)
    archive = crafted(elmo_c_archive, tmp_path / "model.tar.gz", [regular("noise.bin", TINY_FASTTEXT.read_bytes() * 60)])
    with pytest.raises(ConfigurationError, match="noise.bin.*MAX_EXTRACTED_BYTES"):
        PretrainedBiLM.from_archive(str(archive))
    assert list(scratch.iterdir()) == []


def test_too_many_members_are_refused(elmo_c_archive, tmp_path, scratch, monkeypatch):
    """The number of members (each an inode) is bounded: more than `MAX_MEMBERS` are refused,
    nothing extracted."""
    from allennlp_elmo_c.received import limits

    monkeypatch.setattr(limits, "MAX_MEMBERS", 20)
    extra = [regular(f"many/{index}.txt", b"") for index in range(30)]
    archive = crafted(elmo_c_archive, tmp_path / "model.tar.gz", extra)
    with pytest.raises(ConfigurationError, match="MAX_MEMBERS"):
        PretrainedBiLM.from_archive(str(archive))
    assert list(scratch.iterdir()) == []


def test_a_plain_archive_still_loads_and_leaves_nothing(elmo_c_archive, tmp_path, scratch):
    """Not an attack: the archive as trained loads through every door, and its extraction
    directory is removed."""
    for door in ("load_archive", "ElmoC", "PretrainedBiLM.from_archive", "describe"):
        RECEIVED_MODEL_DOORS[door](elmo_c_archive, tmp_path)
    assert list(scratch.iterdir()) == []


# --- what extraction creates, and what tarfile reads before a member is known ------------------


def directory_bomb(source: Path, target: Path, members: int, depth: int) -> Path:
    """`source` with `members` empty files added, each `depth` directories deep (a few hundred
    bytes each, compressed)."""
    extra = [regular("/".join(["d"] * depth + [f"{index}.txt"]), b"") for index in range(members)]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for info, data in original_members(source) + extra:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return target


@pytest.mark.parametrize("depth", [900, 1500])
def test_a_directory_bomb_creates_nothing(depth, elmo_c_archive, tmp_path, scratch):
    """100 members each 900 directories deep (a 23 KB archive), all extracted, would make one
    load create about 88,000 directories, then load the model; at depth 1,500 the load would end
    in a `RecursionError` after 31 s. Only the members a model archive is made of are extracted
    (the archive loads), and an extraction of every member refuses the depth."""
    from allennlp_elmo_c.received.received_model import is_model_archive_member
    from allennlp_elmo_c.received.limits import MAX_PATH_DEPTH
    from allennlp_elmo_c.received.safe_extract import extract_archive

    archive = directory_bomb(elmo_c_archive, tmp_path / "received" / "model.tar.gz", 100, depth)
    assert archive.stat().st_size < 64 << 10
    RECEIVED_MODEL_DOORS["ElmoC"](archive, tmp_path)
    RECEIVED_MODEL_DOORS["load_archive"](archive, tmp_path)
    assert list(scratch.iterdir()) == []
    extracted = tmp_path / "extracted"
    extracted.mkdir()
    extract_archive(archive, extracted, wanted=is_model_archive_member)
    assert {p.relative_to(extracted).parts[0] for p in extracted.rglob("*")} == {
        "config.json", "weights.th", "vocabulary", "meta.json"
    }
    assert sum(p.is_dir() for p in extracted.rglob("*")) == 1  # vocabulary/
    everything = tmp_path / "everything"
    everything.mkdir()
    with pytest.raises(ConfigurationError, match=f"is {depth + 1} directories deep, beyond the {MAX_PATH_DEPTH}"):
        extract_archive(archive, everything)
    assert list(everything.iterdir()) == []


def test_the_directories_a_name_implies_count_as_members(elmo_c_archive, tmp_path, scratch, monkeypatch):
    """Each directory an extracted member's name creates counts toward `MAX_MEMBERS`."""
    from allennlp_elmo_c.received import limits, safe_extract

    monkeypatch.setattr(limits, "MAX_MEMBERS", 30)
    archive = directory_bomb(elmo_c_archive, tmp_path / "model.tar.gz", 1, 30)
    with pytest.raises(ConfigurationError, match="files and directories .* beyond 30"):
        safe_extract.extract_archive(archive, scratch)
    assert list(scratch.iterdir()) == []


def pax_name_archive(source: Path, target: Path, name_bytes: int) -> Path:
    """`source` with, after its members, a pax header whose `path` record is `name_bytes` long,
    written without holding it in memory (it compresses about 1000 times)."""
    body = name_bytes + len(" path=\n")  # a record is "<its own length> path=<name>\n"
    length = body + len(str(body + len(str(body))))
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, length
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wb") as out:
        out.write(tar_bytes(original_members(source)) + pax.tobuf(format=tarfile.USTAR_FORMAT))
        out.write(f"{length} path=".encode())
        chunk = b"n" * (1 << 20)
        for _ in range(name_bytes >> 20):
            out.write(chunk)
        out.write(b"n" * (name_bytes & ((1 << 20) - 1)) + b"\n" + bytes(-length % tarfile.BLOCKSIZE))
        out.write(regular("x", b"")[0].tobuf(format=tarfile.USTAR_FORMAT) + bytes(2 * tarfile.BLOCKSIZE))
    return target


@pytest.mark.parametrize("door", ["ElmoC", "load_archive", "describe"])
def test_a_huge_pax_name_is_refused_before_it_is_read(door, elmo_c_archive, tmp_path, scratch):
    """A 60 MB pax member name costs +0.45 GiB if read, and a refusal quoting it carries the
    whole name. It is refused from the header's declared size, before tarfile reads it; the
    message says how large it was, and names no name."""
    import tracemalloc

    archive = pax_name_archive(elmo_c_archive, tmp_path / "received" / "model.tar.gz", 60 << 20)
    assert archive.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        error = outcome(lambda: RECEIVED_MODEL_DOORS[door](archive, tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, ConfigurationError), error
    message = str(error)
    assert "extended header" in message and "holds 629145" in message and len(message) < 600, message
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB"
    assert list(scratch.iterdir()) == []


def test_a_long_name_is_cut_in_the_message(elmo_c_archive, tmp_path, scratch):
    """A name within the caps but long (4,000 characters, climbing out) is quoted cut."""
    name = "../" + "a" * 4000
    archive = crafted(elmo_c_archive, tmp_path / "model.tar.gz", [regular(name, b"")])
    with pytest.raises(ConfigurationError, match=r"\.\.\. \(4003 characters\)") as refusal:
        PretrainedBiLM.from_archive(str(archive))
    assert len(str(refusal.value)) < 600
