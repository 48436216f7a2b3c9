import os
import subprocess
import sys

import pytest

from allennlp_elmo_c.common.atomic import (
    atomic_open,
    atomic_path,
    remove_stale_temporaries,
    temporary_name,
)
from tests.write_faults import disk_full


def test_atomic_open_replaces_only_when_the_block_succeeds(tmp_path):
    path = tmp_path / "sub" / "out.txt"
    with atomic_open(path) as out:
        out.write("old\n")
    with pytest.raises(OSError, match="No space left"):
        with atomic_open(path) as out:
            out.write("new, half")
            raise disk_full()
    assert path.read_text() == "old\n" and os.listdir(path.parent) == ["out.txt"]
    with atomic_open(path, "wb") as out:
        out.write(b"\x00new")
    assert path.read_bytes() == b"\x00new" and os.listdir(path.parent) == ["out.txt"]
    with pytest.raises(ValueError, match="whole file"):
        with atomic_open(path, "a"):
            pass


def test_atomic_path_hides_the_temporary_and_cleans_up_on_interrupt(tmp_path):
    path = tmp_path / "model_state_e0_b2.th"
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(path) as temporary:
            assert temporary.parent == tmp_path and temporary.name.startswith(".")
            assert not list(tmp_path.glob("model_state_e*_b*.th"))
            temporary.write_bytes(b"half")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_remove_stale_temporaries_spares_running_writers(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".best.th.{dead_pid}.0123abcd.tmp"
    stale.write_bytes(b"half")
    stale_directory = tmp_path / f".vocabulary.{dead_pid}.0123abcd.tmp"
    stale_directory.mkdir()
    (stale_directory / "tokens.txt").write_text("half")
    live = tmp_path / ".metrics.json.1.0123abcd.tmp"  # pid 1 runs
    live.write_text("{")
    others = [tmp_path / "best.th", tmp_path / ".hidden", tmp_path / ".x.12.nothex!!.tmp"]
    for other in others:
        other.write_text("")
    with atomic_path(tmp_path / "model.tar.gz") as writing:  # this process, writing now
        removed = remove_stale_temporaries(tmp_path)
        assert writing.exists()
    assert sorted(removed) == sorted([stale, stale_directory])
    assert not stale.exists() and not stale_directory.exists() and live.exists()
    assert all(other.exists() for other in others)
    # One of this process's own that it is not writing: left by an earlier process of this id.
    own = temporary_name(tmp_path / "config.json")
    own.write_text("{")
    assert remove_stale_temporaries(tmp_path) == [own]


def test_link_or_copy_links_copies_and_replaces(tmp_path, monkeypatch):
    from allennlp_elmo_c.common.atomic import link_or_copy

    source = tmp_path / "source.bin"
    source.write_bytes(b"weights")
    (tmp_path / "linked").write_bytes(b"an older file")  # replaced
    assert link_or_copy(source, tmp_path / "linked") == str(tmp_path / "linked")
    assert os.path.samefile(source, tmp_path / "linked")
    link_or_copy(source, tmp_path / "copied", link=False)
    assert not os.path.samefile(source, tmp_path / "copied")
    assert (tmp_path / "copied").read_bytes() == b"weights"

    def cross_device(*args):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    link_or_copy(source, tmp_path / "other_fs")
    assert (tmp_path / "other_fs").read_bytes() == b"weights"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copied", "linked", "other_fs", "source.bin"]
