"""
Writes that stop part-way, as a full disk or a kill in the middle of a write leaves them: the
first half of the content reaches the file, then the write raises `OSError(ENOSPC)` ("enospc")
or the process is killed with SIGKILL ("sigkill": no cleanup, no atexit).
"""

import errno
import io
import os
import signal
from typing import Any, Callable

FAULTS = ("enospc", "sigkill")


def disk_full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def fail(fault: str) -> None:
    """Raises the disk-full error, or kills this process."""
    if fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise disk_full()


def write_half_then_fail(target: Any, data: bytes, fault: str) -> None:
    """Writes the first half of `data` to `target` (a file name or a binary file), makes it
    reach the file, then fails with `fault`."""
    half = data[: len(data) // 2]
    if isinstance(target, (str, os.PathLike)):
        with open(target, "wb") as out:
            out.write(half)
    else:
        target.write(half)
        target.flush()
    fail(fault)


def faulty_torch_save(original: Callable, name_part: str, fault: str) -> Callable:
    """A `torch.save` that, saving to a file whose name contains `name_part`, writes half of it
    and fails with `fault`; other saves are `original`'s."""
    assert fault in FAULTS, fault

    def save(obj, f, *args, **kwargs):
        name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "")
        if name_part in os.path.basename(str(name)):
            buffer = io.BytesIO()
            original(obj, buffer, *args, **kwargs)
            write_half_then_fail(f, buffer.getvalue(), fault)
        return original(obj, f, *args, **kwargs)

    return save


class FillingDisk:
    """A text file for a patched `open`: writes go to the real file at `path` until it holds
    `capacity` characters; the write that would pass that writes what fits and raises
    `OSError(ENOSPC)`, as on a full disk."""

    def __init__(self, real_open: Callable, path: Any, capacity: int = 16) -> None:
        self._file = real_open(path, "w", encoding="utf-8")
        self._room = capacity

    def write(self, text: str) -> int:
        self._file.write(text[: self._room])
        self._file.flush()
        if len(text) > self._room:
            self._room = 0
            raise disk_full()
        self._room -= len(text)
        return len(text)

    def __enter__(self) -> "FillingDisk":
        return self

    def __exit__(self, *exc_info) -> None:
        self._file.close()
