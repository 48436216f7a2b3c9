"""
Extracting a tar archive received from someone else without writing outside the extraction
directory or filling the disk. Every member is checked as its header is read, before anything is
extracted; a refusal is one `ConfigurationError` naming the archive and the member.

Python's `tarfile.data_filter` refuses climbing names, links outside and special files, and
extraction goes through it too; beside it, a received archive may hold no absolute name, no
symbolic link, a hard link only to a regular file before it, each name once. What it extracts,
and what `tarfile` reads before a member is known, is bounded by the archive limits of `limits`.
"""
import contextlib
import lzma
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import PurePosixPath
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.limits import quoted

PathOrStr = Union[str, "os.PathLike[str]"]
Wanted = Optional[Callable[[str], bool]]
_EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
             tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)  # fmt: skip
_FILTERED = {  # what `tarfile.data_filter` refuses, said for a message
    tarfile.OutsideDestinationError: "climbs out of the extraction directory",
    tarfile.SpecialFileError: "is a device or FIFO (a special file)",
    tarfile.AbsolutePathError: "has an absolute name",
}
_FIX = (
    "If the archive is trusted, raise the bounds in allennlp_elmo_c.received.limits "
    "(MAX_EXTRACTED_BYTES, MAX_COMPRESSION_RATIO, MAX_MEMBERS) before loading it."
)
_PLAIN = ("Only plain relative names, regular files and directories, and hard links to them, "
          "are extracted from a received archive.")  # fmt: skip


def _limits_text() -> str:
    return (
        f"at most {limits.MAX_EXTRACTED_BYTES} bytes, {limits.MAX_MEMBERS} members and "
        f"directories, and {limits.MAX_COMPRESSION_RATIO} times the archive's size beyond "
        f"{limits.RATIO_FLOOR_BYTES} bytes"
    )


def shown_name(name: str) -> str:
    return quoted(name, 120)


class _Refused(Exception):
    """Raised inside `tarfile` (not a `tarfile` error: it would take it for the archive's end)."""


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses, before `tarfile` reads them, an extended header over `MAX_HEADER_BYTES`, more
    than `MAX_CHAINED_HEADERS` of them in a row and sparse maps; then a name over
    `MAX_NAME_BYTES`. The members' sizes bound the rest of what is read (`_checked_members`)."""

    def _proc_member(self, tarfile_):  # tarfile's hook, called once the 512-byte header is read
        chained = getattr(tarfile_, "_elmo_c_chained_headers", 0)
        if self.type == tarfile.GNUTYPE_SPARSE:
            self._proc_gnusparse_10(None, None, tarfile_)
        if self.type in _EXTENDED:
            if self.size > limits.MAX_HEADER_BYTES:
                raise _Refused(
                    f"a member's extended header (pax or GNU long name) holds {self.size} bytes, "
                    f"more than the {limits.MAX_HEADER_BYTES} allowed; refused before it was "
                    "read, nothing was extracted. A model archive's names are short: rebuild "
                    "the archive."
                )
            if chained >= limits.MAX_CHAINED_HEADERS:
                raise _Refused(
                    f"{chained + 1} extended headers (pax or GNU long name) come before one "
                    f"member, more than the {limits.MAX_CHAINED_HEADERS} allowed; refused, "
                    "nothing was extracted. Rebuild the archive with an ordinary tar."
                )
            tarfile_._elmo_c_chained_headers = chained + 1  # the next header is read in this call
        try:
            member = super()._proc_member(tarfile_)
        finally:
            tarfile_._elmo_c_chained_headers = chained
        for value in (member.name, member.linkname):
            if len(value.encode("utf-8", "surrogateescape")) > limits.MAX_NAME_BYTES:
                raise _Refused(f"member {shown_name(value)} has a name longer than "
                               f"{limits.MAX_NAME_BYTES} bytes; nothing was extracted. {_PLAIN}")
        return member

    def _proc_gnusparse_10(self, next, pax_headers, tarfile_):  # a sparse map of any length
        raise _Refused(f"member {shown_name(self.name)} is a sparse file; nothing was extracted. "
                       + _PLAIN)


def extracted_bytes_limit(archive_size: int) -> int:
    ratio_bound = max(limits.RATIO_FLOOR_BYTES, limits.MAX_COMPRESSION_RATIO * archive_size)
    return min(limits.MAX_EXTRACTED_BYTES, ratio_bound)


def _refused(archive_file: PathOrStr, member: str, why: str, fix: str = _PLAIN):
    return ConfigurationError(
        f"archive {archive_file}: member {shown_name(member)} {why}; nothing was extracted. {fix}"
    )


def _normalized(name: str) -> str:
    """A member or link name without `./` and repeated slashes."""
    parts = PurePosixPath(name).parts
    return PurePosixPath(*parts).as_posix() if parts else "."


def _checked_members(
    archive: tarfile.TarFile, archive_file: str, archive_size: int, wanted: Wanted = None
) -> Iterator[Tuple[tarfile.TarInfo, bool]]:
    """Each member as its header is read (lazily: the next once this one is accepted), and
    whether it is `wanted`."""
    limit = extracted_bytes_limit(archive_size)
    files: Dict[str, tarfile.TarInfo] = {}
    names: Set[str] = set()
    created: Set[str] = set()  # what extracting the wanted members creates, directories included
    total = 0
    for count, member in enumerate(archive, 1):
        refuse = lambda why, fix=_PLAIN: _refused(archive_file, member.name, why, fix)  # noqa: E731
        name = _normalized(member.name)
        if not member.name or member.name.startswith(("/", "\\")) or os.path.isabs(member.name):
            raise refuse("has an absolute name")  # the filter would make it relative
        if member.issym():
            raise refuse(f"is a symbolic link (to {shown_name(member.linkname)})")
        try:
            tarfile.data_filter(member, "/extraction-directory")
        except tarfile.FilterError as error:
            raise refuse(_FILTERED.get(type(error), "is a hard link outside the extraction "
                                                    "directory")) from None  # fmt: skip
        if count > limits.MAX_MEMBERS:
            raise refuse(f"is beyond the {limits.MAX_MEMBERS} members an archive may hold", _FIX)
        if name in names and name != ".":
            raise refuse("appears twice")
        names.add(name)
        if member.islnk():
            if _normalized(member.linkname) not in files:
                raise refuse(f"is a hard link to {shown_name(member.linkname)}, not to a regular "
                             "file of the archive before it")  # fmt: skip
            total += files[_normalized(member.linkname)].size  # extracted as a copy if need be
        elif member.isfile():
            total += member.size
            files[name] = member
        elif not member.isdir():
            raise refuse(f"has an unsupported type ({member.type!r})")
        if total > limit:
            counted = "(a hard link, counted as the copy tarfile may make) " * member.islnk()
            raise refuse(f"{counted}brings the files to extract to {total} bytes, over the "
                         f"{limit} bytes allowed for an archive of {archive_size} bytes "
                         f"({_limits_text()})", _FIX)  # fmt: skip
        take = wanted is None or name == "." or wanted(name)
        parts = PurePosixPath(name).parts if take and name != "." else ()
        if len(parts) > limits.MAX_PATH_DEPTH:
            raise refuse(f"is {len(parts)} directories deep, beyond the {limits.MAX_PATH_DEPTH} "
                         "an extracted name may be")  # fmt: skip
        created.update(PurePosixPath(*parts[:end]).as_posix() for end in range(1, len(parts) + 1))
        if len(created) > limits.MAX_MEMBERS:
            raise refuse("brings the files and directories extracting the archive creates "
                         f"beyond {limits.MAX_MEMBERS}", _FIX)  # fmt: skip
        yield member, take


@contextlib.contextmanager
def _bounded_archive(archive_file: PathOrStr) -> Iterator[Tuple[tarfile.TarFile, int]]:
    """The archive opened for reading (any compression), and its size."""
    try:
        with tarfile.open(archive_file, "r:*", tarinfo=_BoundedTarInfo) as archive:
            yield archive, os.path.getsize(archive_file)
    except (zlib.error, lzma.LZMAError, EOFError) as error:
        raise tarfile.ReadError(f"{archive_file}: corrupt compressed data ({error})") from error
    except _Refused as error:
        raise ConfigurationError(f"archive {archive_file}: {error}") from None


@contextlib.contextmanager
def open_checked_archive(
    archive_file: PathOrStr, wanted: Wanted = None
) -> Iterator[Tuple[tarfile.TarFile, List[tarfile.TarInfo]]]:
    """`archive_file` opened with every member checked, and the members `wanted` (by name
    without `./`; all by default); a corrupt archive raises `tarfile.ReadError`."""
    with _bounded_archive(archive_file) as (archive, size):
        checked = _checked_members(archive, str(archive_file), size, wanted)
        yield archive, [member for member, take in checked if take]


def read_member(archive_file: PathOrStr, name: str, max_bytes: int) -> Optional[bytes]:
    """The bytes of the regular file `name` of `archive_file` (at most `max_bytes`), `None` if it
    has none; members are checked and read in order up to it only."""
    with _bounded_archive(archive_file) as (archive, size):
        for member, _ in _checked_members(archive, str(archive_file), size):
            if _normalized(member.name) != _normalized(name):
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


def extract_archive(archive_file: PathOrStr, directory: PathOrStr, wanted: Wanted = None) -> None:
    """Extracts the members `wanted` (all by default) of `archive_file` into `directory`, every
    member checked first."""
    with open_checked_archive(archive_file, wanted) as (archive, members):
        archive.extractall(directory, members=members, filter="data")


@contextlib.contextmanager
def extracted_archive(
    resolved_archive_file: PathOrStr, cleanup: bool = True, wanted: Wanted = None
) -> Iterator[str]:
    """AllenNLP's `extracted_archive` through `extract_archive`: a temporary directory of the
    archive's files (`wanted` only), removed at the end unless not `cleanup`."""
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
