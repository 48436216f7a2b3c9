"""
Atomic file writes: a file appears under its final name complete or not at all. It is written to
a hidden temporary in the same directory (`.<name>.<pid>.<8 hex>.tmp`), fsynced and `os.replace`d
onto its name; a failed writer's temporary is removed, a killed one's by
`remove_stale_temporaries`.
"""

import contextlib
import errno
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import IO, Iterator, List, Set, Union


PathOrStr = Union[str, "os.PathLike[str]"]

_TEMPORARY_RE = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.tmp$")

# The temporaries this process is writing now (a restarted run may get a killed one's pid).
_IN_PROGRESS: Set[Path] = set()


def temporary_name(path: PathOrStr) -> Path:
    """A fresh temporary name for `path`, in its directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def fsync_directory(directory: PathOrStr) -> None:
    """Makes a rename in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.EBADF):  # filesystems without directory fsync
            raise
    finally:
        os.close(descriptor)


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def atomic_path(path: PathOrStr) -> Iterator[Path]:
    """Yields a new empty temporary file beside `path`, renamed onto `path` when the block
    ends normally and removed when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_name(path)
    # Exclusive, with the umask's permissions (not mkstemp's 0600).
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    _IN_PROGRESS.add(temporary.absolute())
    try:
        yield temporary
        _fsync_file(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    finally:
        _IN_PROGRESS.discard(temporary.absolute())
    fsync_directory(path.parent)


@contextlib.contextmanager
def atomic_open(path: PathOrStr, mode: str = "w") -> Iterator[IO]:
    """`path` opened for writing (`mode` "w", UTF-8, or "wb") through `atomic_path`."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes a whole file: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as temporary:
        if mode == "wb":
            with open(temporary, "wb") as out:
                yield out
        else:
            with open(temporary, "w", encoding="utf-8", newline="\n") as out:
                yield out


def remove_stale_temporaries(directory: PathOrStr) -> List[Path]:
    """Removes (and returns) the temporaries in `directory` of processes that no longer run
    and this process's own that it is not writing now."""
    removed: List[Path] = []
    directory = Path(directory)
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        match = _TEMPORARY_RE.match(entry.name)
        if match is None or entry.absolute() in _IN_PROGRESS:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and _process_is_running(pid):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        removed.append(entry)
    return removed


def _process_is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        pass
    return True


def link_or_copy(source: PathOrStr, target: PathOrStr, link: bool = True) -> str:
    """`target` made, atomically, a hard link to `source`, or a copy where a link cannot be
    made or `link` is false. Returns `target` (a `shutil.copytree` `copy_function`)."""
    with atomic_path(target) as temporary:
        if link:
            os.unlink(temporary)  # a link needs a free name
            try:
                os.link(source, temporary)
                return str(target)
            except OSError:
                pass
        shutil.copyfile(source, temporary)
    return str(target)
