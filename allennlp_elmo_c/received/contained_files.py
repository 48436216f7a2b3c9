"""
The files of a directory received from someone else (a model directory, the copy of one inside a
spaCy pipeline), read and copied only as what they are inside it: names given by its files are
plain relative names that resolve inside it, links are refused rather than followed, and copies
take regular files only.

A symbolic link in a received directory would carry the receiver's own files (anything the link
points at) into what they read, and into what they later share (`package`, `save_pretrained`,
spaCy's `to_disk`): such directories are refused, naming the link. Hard links need no check: a
directory's hard link is one of its own files (a sender cannot link to the receiver's files).
"""

import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import List, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_path
from allennlp_elmo_c.received.shown_text import printable, quoted

PathOrStr = Union[str, "os.PathLike[str]"]


def inside_path(root: PathOrStr, name: object, what: str) -> Path:
    """
    `root / name` for a `name` (what the directory's files call `what`) that is a plain relative
    name resolving inside `root` through no symbolic link; else a `ConfigurationError` naming
    the directory, `what` and the name.
    """
    root = Path(root)
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
        raise ConfigurationError(
            f"{root}: {what} {quoted(name)} is not a file name inside the directory"
        )
    pure = PurePosixPath(name)
    if pure.is_absolute() or os.path.isabs(name):
        raise ConfigurationError(
            f"{root}: {what} {quoted(name)} is an absolute path; a directory's files are named "
            "relative to it"
        )
    if ".." in pure.parts or not pure.parts or pure.parts == (".",):
        raise ConfigurationError(
            f"{root}: {what} {quoted(name)} is not inside the directory (a name without '..')"
        )
    path = root
    for part in pure.parts:
        path = path / part
        if path.is_symlink():
            raise ConfigurationError(
                f"{root}: {what} {quoted(name)} goes through the symbolic link {path} (to "
                f"{quoted(os.readlink(path))}); a received directory holds its own files, not links"
            )
    return path


def refuse_links(root: PathOrStr, source: str = "") -> List[str]:
    """
    The names (relative, `/`-separated, sorted) of the regular files under `root`; a
    `ConfigurationError` naming the first symbolic link, or other non-regular file (a FIFO, a
    socket, a device), found under it. `source` names the directory in messages (default
    `root`).
    """
    root = Path(root)
    source = source or str(root)
    files: List[str] = []
    for directory, subdirectories, names in os.walk(root, followlinks=False):
        for name in sorted(subdirectories + names):
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise ConfigurationError(
                    f"{source}: {printable(relative)} is a symbolic link (to "
                    f"{quoted(os.readlink(path))}); a received directory must hold its own files, "
                    "not links: replace the link by the file"
                )
            if stat.S_ISREG(mode):
                files.append(relative)
            elif not stat.S_ISDIR(mode):
                raise ConfigurationError(
                    f"{source}: {printable(relative)} is not a regular file or directory"
                )
    return sorted(files)


def copy_regular_file(source: PathOrStr, target: PathOrStr, link: bool = True) -> str:
    """
    `target` made a hard link to the regular file `source` (never following a symbolic link),
    or a copy of it (another filesystem, or `link` false); atomically. A `source` that is a
    symbolic link or not a regular file is a `ConfigurationError`. Returns `target` (so that it
    serves as `shutil.copytree`'s `copy_function`).
    """
    descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ConfigurationError(f"{source} is not a regular file: not copied")
        with atomic_path(target) as temporary:
            if link:
                os.unlink(temporary)  # a link needs a free name
                try:
                    os.link(source, temporary, follow_symlinks=False)
                    return str(target)
                except OSError:
                    pass
            with os.fdopen(os.dup(descriptor), "rb") as reader, open(temporary, "wb") as writer:
                shutil.copyfileobj(reader, writer, 1 << 22)
    except OSError as error:
        if os.path.islink(source):
            raise ConfigurationError(f"{source} is a symbolic link: not copied") from error
        raise
    finally:
        os.close(descriptor)
    return str(target)


def copy_regular_tree(source: PathOrStr, target: PathOrStr) -> None:
    """Copies (hard-links where it can) the regular files under `source` to `target`, keeping
    their names, after `refuse_links` found no link under `source`."""
    for name in refuse_links(source):
        destination = Path(target) / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        copy_regular_file(Path(source) / name, destination)
