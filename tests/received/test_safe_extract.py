"""
`safe_extract` on small archives built here: what a plain archive keeps (files, directories,
`./` names, a hard link `tarfile` writes for a file added twice, any compression `tarfile`
writes), and the caps that stop a header declaring more than the archive may hold before it is
read into memory. The attacks through the loaders are in
tests/security/test_archive_extraction.py.
"""

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.safe_extract import extract_archive, extracted_archive, read_member


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz", ""])
def test_a_plain_archive_is_extracted_whole(compression, tmp_path):
    source = tmp_path / "source"
    (source / "vocabulary").mkdir(parents=True)
    (source / "config.json").write_text("{}")
    (source / "vocabulary" / "tokens.txt").write_text("a\nb\n")
    os.link(source / "config.json", source / "copy.json")  # tarfile writes the second as a link
    archive = tmp_path / f"model.tar{'.' + compression if compression else ''}"
    with tarfile.open(archive, f"w:{compression}") as writer:
        writer.add(source, arcname=".")
    assert any(member.islnk() for member in tarfile.open(archive).getmembers())
    with extracted_archive(archive) as directory:
        extracted = Path(directory)
        assert sorted(p.relative_to(extracted).as_posix() for p in extracted.rglob("*")) == [
            "config.json", "copy.json", "vocabulary", "vocabulary/tokens.txt"
        ]
        assert (extracted / "copy.json").read_text() == "{}"
    assert not extracted.exists()


def test_a_header_declaring_too_much_is_not_read(tmp_path):
    """A GNU long-name header (read into memory whole by tarfile) of 1 GiB, in a 1 MB file."""
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = tarfile.GNUTYPE_LONGNAME, 1 << 30
    archive = tmp_path / "model.tar.gz"
    zeros = gzip.compress(bytes(1 << 20))
    with open(archive, "wb") as out:
        out.write(gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(1 << 10):
            out.write(zeros)
    with pytest.raises(ConfigurationError, match="extended header .* holds 1073741824 bytes"):
        extract_archive(archive, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tar.gz"]


def test_a_corrupt_archive_is_a_read_error(tmp_path):
    archive = tmp_path / "model.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as writer:
        info = tarfile.TarInfo("config.json")
        data = os.urandom(1 << 16)
        info.size = len(data)
        writer.addfile(info, io.BytesIO(data))
    archive.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    with pytest.raises((tarfile.TarError, EOFError, OSError)):
        extract_archive(archive, tmp_path / "out")


def _archive_of(path: Path, members: list, format: int = tarfile.GNU_FORMAT) -> Path:
    """A .tar.gz of `(name, data)` regular files, in order."""
    with tarfile.open(path, "w:gz", format=format) as writer:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            writer.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("stored", ["config.json", "./config.json"])
def test_read_member_finds_a_name_with_or_without_dot_slash(stored, tmp_path):
    archive = _archive_of(tmp_path / "model.tar.gz", [(stored, b"{}"), ("weights.th", b"w")])
    assert read_member(archive, "config.json", 100) == b"{}"
    assert read_member(archive, "./config.json", 100) == b"{}"
    assert read_member(archive, "metrics.json", 100) is None


def test_read_member_refuses_a_member_over_its_bound(tmp_path):
    archive = _archive_of(tmp_path / "model.tar.gz", [("config.json", b" " * 101)])
    with pytest.raises(ConfigurationError, match=f"{archive}: member 'config.json' holds 101 bytes"):
        read_member(archive, "config.json", 100)


@pytest.mark.parametrize("format", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_read_member_stops_at_a_long_name_before_reading_it(format, tmp_path):
    """A 4 MB member name (read into memory whole by tarfile) before config.json, in an archive
    of a few KB: refused from its header's size."""
    members = [("a" * (4 << 20), b"x"), ("config.json", b"{}")]
    archive = _archive_of(tmp_path / "model.tar.gz", members, format)
    assert archive.stat().st_size < 1 << 16
    with pytest.raises(ConfigurationError, match="extended header .* holds 41943"):
        read_member(archive, "config.json", 100)


def test_a_sparse_map_is_refused_before_it_is_read(tmp_path):
    """A GNU sparse member's map of extended blocks (each read into memory by tarfile)."""
    info = tarfile.TarInfo("vocabulary/tokens.txt")
    info.type = tarfile.GNUTYPE_SPARSE
    archive = tmp_path / "model.tar"
    archive.write_bytes(info.tobuf(format=tarfile.GNU_FORMAT) + bytes(2 * tarfile.BLOCKSIZE))
    with pytest.raises(ConfigurationError, match="'vocabulary/tokens.txt' is a sparse file"):
        extract_archive(archive, tmp_path / "out")
