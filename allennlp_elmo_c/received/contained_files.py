"""
The files of a directory received from someone else, read and copied only as what they are inside
it: names resolve inside it, symbolic links are refused rather than followed (they would carry the
receiver's files into what they read and later share), copies take regular files only.
"""
import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import List, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_path
from allennlp_elmo_c.received.limits import printable, quoted

PathOrStr = Union[str, "os.PathLike[str]"]


def inside_path(root: PathOrStr, name: object, what: str) -> Path:
    """`root / name` for a plain relative `name` inside `root` through no link (`what` names it
    in the refusal)."""
    root = Path(root)
    pure = PurePosixPath(name) if isinstance(name, str) else None
    if pure is None or not name or "\x00" in name or "\\" in name:  # type: ignore[operator]
        why = "is not a file name inside the directory"
    elif pure.is_absolute() or os.path.isabs(name):  # type: ignore[arg-type]
        why = "is an absolute path; a directory's files are named relative to it"
    elif ".." in pure.parts or pure.parts in ((), (".",)):
        why = "is not inside the directory (a name without '..')"
    else:
        path = root
        for part in pure.parts:
            path = path / part
            if path.is_symlink():
                raise ConfigurationError(
                    f"{root}: {what} {quoted(name)} goes through the symbolic link {path} (to "
                    f"{quoted(os.readlink(path))}); a received directory holds its own files, "
                    "not links"
                )
        return path
    raise ConfigurationError(f"{root}: {what} {quoted(name)} {why}")


def refuse_links(root: PathOrStr, source: str = "") -> List[str]:
    """The relative names of the regular files under `root`, sorted; the first link or other
    non-regular file is refused (`source` names the directory)."""
    root = Path(root)
    files: List[str] = []
    for directory, subdirectories, names in os.walk(root, followlinks=False):
        for name in sorted(subdirectories + names):
            path = Path(directory) / name
            relative = printable(path.relative_to(root).as_posix())
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise ConfigurationError(
                    f"{source or root}: {relative} is a symbolic link (to "
                    f"{quoted(os.readlink(path))}); a received directory must hold its own files, "
                    "not links: replace the link by the file"
                )
            if stat.S_ISREG(mode):
                files.append(path.relative_to(root).as_posix())
            elif not stat.S_ISDIR(mode):
                raise ConfigurationError(
                    f"{source or root}: {relative} is not a regular file or directory"
                )
    return sorted(files)


def copy_regular_file(source: PathOrStr, target: PathOrStr, link: bool = True) -> str:
    """`target` made atomically a hard link to (with `link` false, a copy of) the regular file
    `source`, never through a link; returns `target`."""
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
    """Copies (hard-links where it can) the regular files under `source` to `target`, refusing
    any link under `source`."""
    for name in refuse_links(source):
        destination = Path(target) / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        copy_regular_file(Path(source) / name, destination)
