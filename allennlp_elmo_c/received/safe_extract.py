"""
Extracting a tar archive received from someone else (a `model.tar.gz`, a task archive) without
writing outside the extraction directory or filling the disk.

Every member is checked as its header is read, before anything is extracted; a refusal is one
`ConfigurationError` naming the archive and the member. Python's own `tarfile.data_filter`
refuses climbing names, links outside and special files, and extraction goes through it too;
beside it, a received archive may hold no absolute name, no symbolic link, a hard link only to a
regular file before it, each name once. What it extracts, and what `tarfile` reads into memory
before a member is known, is bounded by the archive limits of `received.limits`.
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

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.shown_text import quoted

SHOWN_NAME_CHARACTERS = 120
_HEADER_BYTES = 3 * tarfile.BLOCKSIZE  # tar headers and padding per member, beyond its data

_COMPRESSIONS = (
    (b"\x1f\x8b", gzip.GzipFile),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)
# What a corrupt compressed stream raises, beside OSError.
_DECOMPRESSION_ERRORS = (zlib.error, lzma.LZMAError, EOFError)

PathOrStr = Union[str, "os.PathLike[str]"]


_FIX = (
    "If the archive is trusted, raise the bounds in allennlp_elmo_c.received.limits "
    "(MAX_EXTRACTED_BYTES, MAX_COMPRESSION_RATIO, MAX_MEMBERS) before loading it."
)


def _limits_text() -> str:
    return (
        f"at most {limits.MAX_EXTRACTED_BYTES} bytes, {limits.MAX_MEMBERS} members and "
        f"directories, and {limits.MAX_COMPRESSION_RATIO} times the archive's size beyond "
        f"{limits.RATIO_FLOOR_BYTES} bytes"
    )


def shown_name(name: str) -> str:
    return quoted(name, SHOWN_NAME_CHARACTERS)


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses an extended header over `MAX_HEADER_BYTES` before `tarfile` reads it into memory,
    more than `MAX_CHAINED_HEADERS` of them, and a name over `MAX_NAME_BYTES`."""

    def _proc_member(self, tarfile_):  # tarfile's hook, called once the 512-byte header is read
        extended = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                    tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)  # fmt: skip
        if self.type in extended and self.size > limits.MAX_HEADER_BYTES:
            raise _HeaderTooLarge(self.size)
        chained = getattr(tarfile_, "_elmo_c_chained_headers", 0)
        if self.type in extended:
            if chained >= limits.MAX_CHAINED_HEADERS:
                raise _HeadersChained(chained + 1)
            # The next header is read within this call.
            tarfile_._elmo_c_chained_headers = chained + 1
        try:
            member = super()._proc_member(tarfile_)
        finally:
            tarfile_._elmo_c_chained_headers = chained
        for value in (member.name, member.linkname):
            if len(value.encode("utf-8", "surrogateescape")) > limits.MAX_NAME_BYTES:
                raise _NameTooLong(value)
        return member


# Not `tarfile` errors, which `tarfile` would take for the end of the archive.
class _HeaderTooLarge(Exception):
    pass


class _HeadersChained(Exception):
    pass


class _NameTooLong(Exception):
    pass


def extracted_bytes_limit(archive_size: int) -> int:
    ratio_bound = max(limits.RATIO_FLOOR_BYTES, limits.MAX_COMPRESSION_RATIO * archive_size)
    return min(limits.MAX_EXTRACTED_BYTES, ratio_bound)


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


# What `tarfile.data_filter` refuses, said for a message.
_FILTERED = {
    tarfile.OutsideDestinationError: "climbs out of the extraction directory",
    tarfile.SpecialFileError: "is a device or FIFO (a special file)",
    tarfile.AbsolutePathError: "has an absolute name",
}
_DESTINATION = "/extraction-directory"


def _member_name(member: tarfile.TarInfo, archive_file: str) -> str:
    """The member's name without a leading `./`, refused where `tarfile.data_filter` refuses it
    or is absolute (which the filter would make relative)."""
    if not member.name or member.name.startswith(("/", "\\")) or os.path.isabs(member.name):
        raise _refused(archive_file, member.name, "has an absolute name")
    if not member.issym():  # refused below, wherever it points
        try:
            tarfile.data_filter(member, _DESTINATION)
        except tarfile.FilterError as error:
            why = _FILTERED.get(type(error), "is a hard link outside the extraction directory")
            raise _refused(archive_file, member.name, why) from None
    return _normalized(member.name)


def _checked_members(
    archive: tarfile.TarFile,
    archive_file: str,
    archive_size: int,
    wanted: Optional[Callable[[str], bool]] = None,
) -> Iterator[Tuple[tarfile.TarInfo, bool]]:
    limit = extracted_bytes_limit(archive_size)
    files: Dict[str, tarfile.TarInfo] = {}
    names: Set[str] = set()
    created: Set[str] = set()  # what extracting the wanted members creates, directories included
    count = 0
    total = 0
    for member in archive:  # lazily: the next header is read once this one is accepted
        name = _member_name(member, archive_file)
        count += 1
        if count > limits.MAX_MEMBERS:
            why = f"is beyond the {limits.MAX_MEMBERS} members an archive may hold"
            raise _refused(archive_file, member.name, why, _FIX)
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
            if len(parts) > limits.MAX_PATH_DEPTH:
                raise _refused(
                    archive_file, member.name,
                    f"is {len(parts)} directories deep, beyond the {limits.MAX_PATH_DEPTH} an "
                    "extracted name may be",
                )  # fmt: skip
            created.update(
                PurePosixPath(*parts[:end]).as_posix() for end in range(1, len(parts) + 1)
            )
            if len(created) > limits.MAX_MEMBERS:
                raise _refused(
                    archive_file, member.name,
                    f"brings the files and directories extracting the archive creates beyond "
                    f"{limits.MAX_MEMBERS}", _FIX,
                )  # fmt: skip
        yield member, take


@contextlib.contextmanager
def open_checked_archive(
    archive_file: PathOrStr, wanted: Optional[Callable[[str], bool]] = None
) -> Iterator[Tuple[tarfile.TarFile, List[tarfile.TarInfo]]]:
    """`archive_file` opened with every member checked as its header is read (see the module
    docstring), and the members `wanted` (by name without `./`; all by default); a corrupt
    archive raises `tarfile.ReadError`."""
    with _bounded_archive(archive_file) as (archive, size):
        checked = _checked_members(archive, str(archive_file), size, wanted)
        yield archive, [member for member, take in checked if take]


@contextlib.contextmanager
def _bounded_archive(archive_file: PathOrStr) -> Iterator[Tuple[tarfile.TarFile, int]]:
    path = Path(archive_file)
    size = path.stat().st_size
    stream = _BoundedStream(
        _decompressed(path),
        extracted_bytes_limit(size) + (limits.MAX_MEMBERS + 20) * _HEADER_BYTES,
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
            f"{error.args[0]} bytes, more than the {limits.MAX_HEADER_BYTES} allowed; refused "
            "before it was read, nothing was extracted. A model archive's names are short: "
            "rebuild the archive."
        ) from None
    except _HeadersChained as error:
        raise ConfigurationError(
            f"archive {archive_file}: {error.args[0]} extended headers (pax or GNU long name) "
            f"come before one member, more than the {limits.MAX_CHAINED_HEADERS} allowed; refused, "
            "nothing was extracted. Rebuild the archive with an ordinary tar."
        ) from None
    except _NameTooLong as error:
        raise _refused(
            str(archive_file), error.args[0],
            f"has a name longer than {limits.MAX_NAME_BYTES} bytes",
        ) from None
    finally:
        stream.close()


def read_member(archive_file: PathOrStr, name: str, max_bytes: int) -> Optional[bytes]:
    """The bytes of the regular file `name` (or `./name`) of `archive_file` (at most
    `max_bytes`), `None` if it has none; members are checked and read in order up to it only (an
    AllenNLP archive's `config.json` comes first)."""
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
    """Extracts the members `wanted` (all by default) of `archive_file` into `directory`, every
    member checked first."""
    with open_checked_archive(archive_file, wanted) as (archive, members):
        archive.extractall(directory, members=members, filter="data")


@contextlib.contextmanager
def extracted_archive(
    resolved_archive_file: PathOrStr,
    cleanup: bool = True,
    wanted: Optional[Callable[[str], bool]] = None,
) -> Iterator[str]:
    """AllenNLP's `extracted_archive` (same arguments) through `extract_archive`: a temporary
    directory of the archive's files (`wanted` only), removed at the end unless not `cleanup`."""
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
