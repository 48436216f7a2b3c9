"""
SHA-256 digests of files, each hashed once per process while unchanged: kept in memory under
the file's device, inode, size, modification and change times (`st_ctime_ns`, which no user
can set back).
"""
import hashlib
import os
import stat
from typing import Dict, Tuple, Union

from allennlp.common.checks import ConfigurationError

_DIGESTS: Dict[Tuple[int, int, int, int, int], str] = {}
_CHUNK = 1 << 22

PathOrStr = Union[str, "os.PathLike[str]"]


def file_sha256(path: PathOrStr) -> str:
    """The SHA-256 (hex) of the regular file `path` (a symbolic link is refused, not followed)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        before = os.fstat(descriptor)
        if not stat.S_ISREG(before.st_mode):
            raise ConfigurationError(f"{path} is not a regular file")
        key = (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns)
        if key in _DIGESTS:
            return _DIGESTS[key]
        digest = hashlib.sha256()
        with os.fdopen(os.dup(descriptor), "rb") as stream:
            for chunk in iter(lambda: stream.read(_CHUNK), b""):
                digest.update(chunk)
        after = os.fstat(descriptor)
        value = digest.hexdigest()
        if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == key[2:]:  # unchanged meanwhile
            _DIGESTS[key] = value
        return value
    finally:
        os.close(descriptor)
