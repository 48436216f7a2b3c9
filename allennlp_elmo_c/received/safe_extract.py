"""
Extracting a tar archive received from someone else (a `model.tar.gz`, a task archive) without
writing outside the extraction directory or filling the disk.

Every member is checked before any is extracted, and a refusal is a `ConfigurationError` naming
the archive and the member:
- names must be relative and stay inside (no absolute name, no `..` component), each once;
- only regular files and directories are extracted, and hard links to a regular file the archive
  itself holds before them (what `tarfile` writes for a file added twice); symbolic links,
  hard links to anything else, devices, FIFOs and other member types are refused. A hard link
  counts as the bytes of the file it links to (`tarfile` extracts it as a full copy when that
  file is not extracted), against the bounds below;
- the archive may hold at most `MAX_MEMBERS` members and `MAX_EXTRACTED_BYTES` bytes of files,
  and, above `RATIO_FLOOR_BYTES`, at most `MAX_COMPRESSION_RATIO` times its own size on disk.
  Members are checked as their headers are read, so a member declaring too much is refused
  before its data is decompressed, and the decompressed stream itself stops at that bound;
- what `tarfile` reads into memory before a member is known is bounded before it is read: an
  extended header (a pax header, a GNU long name or link) holds at most `MAX_HEADER_BYTES`, at
  most `MAX_CHAINED_HEADERS` of them come before one member (`tarfile` reads a chain of them
  recursively), and a name is at most `MAX_NAME_BYTES`;
- what extraction creates is counted: the directories a member's name implies count as members,
  and an extracted name is at most `MAX_DEPTH` components deep.
An extraction may take only some members (`wanted`: a model archive's loaders take the files a
model archive is made of); the others are checked as above but never written. Then the members
are extracted with `tarfile`'s `data` filter (Python 3.11.4+), which also drops set-uid bits,
group/other write permission and ownership. Names are quoted in messages cut to
`SHOWN_NAME_CHARACTERS`.

These bounds are module constants: a trusted archive beyond them is extracted after raising the
constant, e.g. `allennlp_elmo_c.received.safe_extract.MAX_EXTRACTED_BYTES = 100 << 30`.
"""

import bz2
import contextlib
import gzip
import io
import lzma
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.shown_text import quoted

# The most bytes of files an archive may extract (a task archive bundling a 7 GB fastText model
# is well within).
MAX_EXTRACTED_BYTES = 32 << 30
# The most bytes extracted per byte of the archive on disk, checked once more than
# RATIO_FLOOR_BYTES are extracted (model weights and fastText vectors hardly compress; a file of
# zeros compresses about 1000 times with gzip).
MAX_COMPRESSION_RATIO = 50
RATIO_FLOOR_BYTES = 64 << 20
# The most members (files, directories, links) of an archive.
MAX_MEMBERS = 10_000
# The most bytes of one extended header (pax, GNU long name or link), read into memory by tarfile.
MAX_HEADER_BYTES = 64 << 10
# The most extended headers (pax, GNU long name or link) before one member (tar writes two at
# most: a long name and a long link name, or one pax header).
MAX_CHAINED_HEADERS = 4
# The longest member name (bytes of UTF-8; a path on Linux is at most 4096).
MAX_NAME_BYTES = 4096
# The most components of an extracted member's name (a model archive's are 1 or 2 deep).
MAX_DEPTH = 32
# The most characters of a name quoted in a message.
SHOWN_NAME_CHARACTERS = 120
# Bytes of tar headers and padding allowed per member beyond its data, in the decompressed stream.
_HEADER_BYTES = 3 * tarfile.BLOCKSIZE

_COMPRESSIONS = (
    (b"\x1f\x8b", gzip.GzipFile),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)
# What a corrupt compressed stream raises, beside OSError.
_DECOMPRESSION_ERRORS = (zlib.error, lzma.LZMAError, EOFError)

PathOrStr = Union[str, "os.PathLike[str]"]


_FIX = (
    "If the archive is trusted, raise the bounds in allennlp_elmo_c.received.safe_extract "
    "(MAX_EXTRACTED_BYTES, MAX_COMPRESSION_RATIO, MAX_MEMBERS) before loading it."
)


def _limits_text() -> str:
    return (
        f"at most {MAX_EXTRACTED_BYTES} bytes, {MAX_MEMBERS} members and directories, and "
        f"{MAX_COMPRESSION_RATIO} times the archive's size beyond {RATIO_FLOOR_BYTES} bytes"
    )


def shown_name(name: str) -> str:
    """`name` quoted for a message, its control characters escaped, cut to
    `SHOWN_NAME_CHARACTERS` (its length said)."""
    return quoted(name, SHOWN_NAME_CHARACTERS)


class _BoundedTarInfo(tarfile.TarInfo):
    """A `TarInfo` that refuses an extended header (pax, GNU long name or link) larger than
    `MAX_HEADER_BYTES` before `tarfile` reads it into memory (a 60 MB pax name otherwise costs
    several copies of itself), and a name longer than `MAX_NAME_BYTES`."""

    def _proc_member(self, tarfile_):  # tarfile's hook, called once the 512-byte header is read
        extended = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                    tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)  # fmt: skip
        if self.type in extended and self.size > MAX_HEADER_BYTES:
            raise _HeaderTooLarge(self.size)
        chained = getattr(tarfile_, "_elmo_c_chained_headers", 0)
        if self.type in extended:
            if chained >= MAX_CHAINED_HEADERS:
                raise _HeadersChained(chained + 1)
            # The next header is read within this call.
            tarfile_._elmo_c_chained_headers = chained + 1
        try:
            member = super()._proc_member(tarfile_)
        finally:
            tarfile_._elmo_c_chained_headers = chained
        for value in (member.name, member.linkname):
            if len(value.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
                raise _NameTooLong(value)
        return member


class _HeaderTooLarge(Exception):
    """An extended header over `MAX_HEADER_BYTES` (turned into a `ConfigurationError` naming the
    archive; not a `tarfile` error, which `tarfile` would take for the end of the archive)."""


class _HeadersChained(Exception):
    """More than `MAX_CHAINED_HEADERS` extended headers before one member."""


class _NameTooLong(Exception):
    """A member name over `MAX_NAME_BYTES`."""


def extracted_bytes_limit(archive_size: int) -> int:
    """The most bytes of files an archive of `archive_size` bytes on disk may extract."""
    return min(MAX_EXTRACTED_BYTES, max(RATIO_FLOOR_BYTES, MAX_COMPRESSION_RATIO * archive_size))


class _BoundedStream(io.RawIOBase):
    """A decompressed stream that refuses to be read or sought beyond `limit` bytes."""

    def __init__(self, stream: IO[bytes], limit: int, archive_file: str) -> None:
        super().__init__()
        self._stream = stream
        self._limit = limit
        self._archive_file = archive_file

    def _check(self, end: int) -> None:
        if end > self._limit:
            raise ConfigurationError(
                f"archive {self._archive_file} decompresses to more than {self._limit} bytes "
                f"({_limits_text()}); refused before extraction. {_FIX}"
            )

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        position = self._stream.tell()
        allowed = max(self._limit + 1 - position, 0)
        data = self._stream.read(allowed if size is None or size < 0 or size > allowed else size)
        self._check(position + len(data))
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._stream.tell()
        elif whence == io.SEEK_END:
            raise io.UnsupportedOperation("a decompressed archive cannot seek from its end")
        self._check(offset)
        return self._stream.seek(offset)

    def tell(self) -> int:
        return self._stream.tell()

    def close(self) -> None:
        self._stream.close()
        super().close()


def _decompressed(path: Path) -> IO[bytes]:
    """`path`'s tar stream: decompressed (gzip, bzip2, xz) or the file itself."""
    with open(path, "rb") as probe:
        magic = probe.read(6)
    for prefix, opener in _COMPRESSIONS:
        if magic.startswith(prefix):
            return opener(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _refused(archive_file: str, member: str, why: str, fix: str = "") -> ConfigurationError:
    return ConfigurationError(
        f"archive {archive_file}: member {shown_name(member)} {why}; nothing was extracted. "
        + (
            fix
            or "Only plain relative names, regular files and directories, and hard links to "
            "them, are extracted from a received archive."
        )
    )


def _normalized(name: str) -> str:
    """A member or link name without `./` and repeated slashes."""
    parts = PurePosixPath(name).parts
    return PurePosixPath(*parts).as_posix() if parts else "."


def _member_name(member: tarfile.TarInfo, archive_file: str) -> str:
    """The member's name without a leading `./`, refused if absolute or climbing out."""
    name = member.name
    if not name or name.startswith(("/", "\\")) or os.path.isabs(name):
        raise _refused(archive_file, name, "has an absolute name")
    if ".." in PurePosixPath(name).parts:
        raise _refused(archive_file, name, "climbs out of the extraction directory (..)")
    return _normalized(name)


def checked_members(
    archive: tarfile.TarFile,
    archive_file: str,
    archive_size: int,
    wanted: Optional[Callable[[str], bool]] = None,
) -> List[tarfile.TarInfo]:
    """
    The members of `archive` (opened for reading, not yet iterated) to extract: every member is
    checked as its header is read (see the module docstring), those `wanted` (by their names
    without `./`; all by default) are returned. A `ConfigurationError` names the first refused
    member.
    """
    return [
        member
        for member, take in _checked_members(archive, archive_file, archive_size, wanted)
        if take
    ]


def _checked_members(
    archive: tarfile.TarFile,
    archive_file: str,
    archive_size: int,
    wanted: Optional[Callable[[str], bool]] = None,
) -> Iterator[Tuple[tarfile.TarInfo, bool]]:
    """`checked_members`, one member at a time, with whether it is to be extracted."""
    limit = extracted_bytes_limit(archive_size)
    files: Dict[str, tarfile.TarInfo] = {}
    names: Set[str] = set()
    created: Set[str] = set()  # what extracting the wanted members creates, directories included
    count = 0
    total = 0
    for member in archive:  # lazily: the next header is read once this one is accepted
        name = _member_name(member, archive_file)
        count += 1
        if count > MAX_MEMBERS:
            raise _refused(archive_file, member.name, f"is beyond the {MAX_MEMBERS} members an "
                           "archive may hold", _FIX)  # fmt: skip
        if name in names and name != ".":
            raise _refused(archive_file, member.name, "appears twice")
        if member.issym():
            raise _refused(
                archive_file, member.name, f"is a symbolic link (to {shown_name(member.linkname)})"
            )
        if member.islnk():
            if _normalized(member.linkname) not in files:
                raise _refused(
                    archive_file, member.name,
                    f"is a hard link to {shown_name(member.linkname)}, not to a regular file of "
                    "the archive before it",
                )  # fmt: skip
            total += files[_normalized(member.linkname)].size  # extracted as a copy if need be
        elif member.ischr() or member.isblk():
            raise _refused(archive_file, member.name, "is a device")
        elif member.isfifo():
            raise _refused(archive_file, member.name, "is a FIFO")
        elif member.isfile():
            total += member.size
            files[name] = member
        elif not member.isdir():
            raise _refused(archive_file, member.name, f"has an unsupported type ({member.type!r})")
        if total > limit:
            counted = (
                "(a hard link, counted as the copy tarfile may make) " if member.islnk() else ""
            )
            raise _refused(
                archive_file, member.name,
                f"{counted}brings the files to extract to {total} bytes, over the {limit} bytes "
                f"allowed for an archive of {archive_size} bytes ({_limits_text()})", _FIX,
            )  # fmt: skip
        names.add(name)
        take = wanted is None or name == "." or wanted(name)
        if take and name != ".":
            parts = PurePosixPath(name).parts
            if len(parts) > MAX_DEPTH:
                raise _refused(
                    archive_file, member.name,
                    f"is {len(parts)} directories deep, beyond the {MAX_DEPTH} an extracted name "
                    "may be",
                )  # fmt: skip
            created.update(
                PurePosixPath(*parts[:end]).as_posix() for end in range(1, len(parts) + 1)
            )
            if len(created) > MAX_MEMBERS:
                raise _refused(
                    archive_file, member.name,
                    f"brings the files and directories extracting the archive creates beyond "
                    f"{MAX_MEMBERS}", _FIX,
                )  # fmt: skip
        yield member, take


@contextlib.contextmanager
def open_checked_archive(
    archive_file: PathOrStr, wanted: Optional[Callable[[str], bool]] = None
) -> Iterator[Tuple[tarfile.TarFile, List[tarfile.TarInfo]]]:
    """
    `archive_file` opened for reading with every member checked, and the members `wanted`
    (`checked_members`): reading them (`extractfile`) or extracting them (`extract_archive`)
    decompresses no more than the bounds allow. A corrupt archive raises `tarfile.ReadError`.
    """
    with _bounded_archive(archive_file) as (archive, size):
        yield archive, checked_members(archive, str(archive_file), size, wanted)


@contextlib.contextmanager
def _bounded_archive(archive_file: PathOrStr) -> Iterator[Tuple[tarfile.TarFile, int]]:
    """`archive_file` opened for reading over a bounded decompressed stream, its members not yet
    read, with its size on disk."""
    path = Path(archive_file)
    size = path.stat().st_size
    stream = _BoundedStream(
        _decompressed(path),
        extracted_bytes_limit(size) + (MAX_MEMBERS + 20) * _HEADER_BYTES,
        str(archive_file),
    )
    try:
        opened = tarfile.open(  # type: ignore[call-overload]
            fileobj=stream, mode="r:", tarinfo=_BoundedTarInfo
        )
        with opened as archive:
            yield archive, size
    except _DECOMPRESSION_ERRORS as error:
        raise tarfile.ReadError(f"{archive_file}: corrupt compressed data ({error})") from error
    except _HeaderTooLarge as error:
        raise ConfigurationError(
            f"archive {archive_file}: a member's extended header (pax or GNU long name) holds "
            f"{error.args[0]} bytes, more than the {MAX_HEADER_BYTES} allowed; refused before it "
            "was read, nothing was extracted. A model archive's names are short: rebuild the "
            "archive."
        ) from None
    except _HeadersChained as error:
        raise ConfigurationError(
            f"archive {archive_file}: {error.args[0]} extended headers (pax or GNU long name) "
            f"come before one member, more than the {MAX_CHAINED_HEADERS} allowed; refused, "
            "nothing was extracted. Rebuild the archive with an ordinary tar."
        ) from None
    except _NameTooLong as error:
        raise _refused(
            str(archive_file), error.args[0], f"has a name longer than {MAX_NAME_BYTES} bytes"
        ) from None
    finally:
        stream.close()


def read_member(archive_file: PathOrStr, name: str, max_bytes: int) -> Optional[bytes]:
    """
    The bytes of the regular file `name` (or `./name`) of `archive_file`, `None` if it has no
    such member. Members are read in order, each header checked as `open_checked_archive` checks
    it, up to the first named `name` (an AllenNLP archive's `config.json` comes first, so the rest
    is not decompressed). A member `name` that is not a regular file, or holds more than
    `max_bytes` bytes, is a `ConfigurationError` naming the archive and the member. A corrupt
    archive raises `tarfile.ReadError`.
    """
    wanted = _normalized(name)
    with _bounded_archive(archive_file) as (archive, size):
        for member, _ in _checked_members(archive, str(archive_file), size):
            if _normalized(member.name) != wanted:
                continue
            if not member.isfile():
                raise _refused(archive_file, member.name, "is not a regular file",
                               "Rebuild the archive with it as a plain file.")  # fmt: skip
            if member.size > max_bytes:
                raise ConfigurationError(
                    f"archive {archive_file}: member {shown_name(member.name)} holds "
                    f"{member.size} bytes, larger than the {max_bytes} bytes read from it; refused "
                    "before reading it"
                )
            return archive.extractfile(member).read()  # type: ignore[union-attr]
    return None


def extract_archive(
    archive_file: PathOrStr, directory: PathOrStr, wanted: Optional[Callable[[str], bool]] = None
) -> None:
    """Extracts the members `wanted` (all by default) of `archive_file` into `directory` (an
    existing directory), every member checked first (see the module docstring)."""
    if not hasattr(tarfile, "data_filter"):  # Python before 3.11.4
        raise ConfigurationError(
            f"extracting {archive_file} needs Python's tarfile data filter (Python 3.11.4 or "
            "newer): upgrade Python"
        )
    with open_checked_archive(archive_file, wanted) as (archive, members):
        archive.extractall(directory, members=members, filter="data")


@contextlib.contextmanager
def extracted_archive(
    resolved_archive_file: PathOrStr,
    cleanup: bool = True,
    wanted: Optional[Callable[[str], bool]] = None,
) -> Iterator[str]:
    """
    AllenNLP's `allennlp.models.archival.extracted_archive` (same arguments), extracting
    through `extract_archive` (only the members `wanted`, if given): yields a new temporary
    directory holding the archive's files, removed at the end unless `cleanup` is false (then the
    caller removes it). If the extraction fails, the directory is removed and nothing is yielded.
    """
    directory = tempfile.mkdtemp()
    try:
        extract_archive(resolved_archive_file, directory, wanted)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield directory
    finally:
        if cleanup:
            shutil.rmtree(directory, ignore_errors=True)
