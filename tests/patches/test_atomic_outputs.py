"""
One test per patched AllenNLP writer in `allennlp_elmo_c.patches.atomic_outputs`: the disk fills
up in the middle of the write; the patched writer leaves the previous file as it was and no
temporary, where AllenNLP's own (`ORIGINALS`) leaves a partial file under the final name.
"""

import builtins
import codecs
import json
import os
import shutil
import tarfile

import pytest
import torch

from allennlp.commands import train as train_command
from allennlp.common import Params, meta, params, util as common_util
from allennlp.data import Vocabulary
from allennlp.models import archival
from allennlp.training import gradient_descent_trainer

from allennlp_elmo_c.patches import archive_paths, atomic_outputs
from tests.write_faults import FillingDisk, disk_full, faulty_torch_save

ORIGINALS = atomic_outputs.ORIGINALS


def fill_disk_on_open(monkeypatch, module):
    """`open` in `module` (AllenNLP's writers call the builtin) writes 16 characters, then the
    disk is full."""
    monkeypatch.setattr(module, "open", lambda path, *a, **k: FillingDisk(builtins.open, path),
                        raising=False)  # fmt: skip


def only(directory):
    return sorted(os.listdir(directory))


def test_apply_is_idempotent_and_replaces_every_imported_name():
    atomic_outputs.apply()
    atomic_outputs.apply()
    # archive_paths wraps the atomic writer (to bundle a task model's fastText .bin).
    assert archival.archive_model is train_command.archive_model is archive_paths._archive_model
    assert common_util.dump_metrics is atomic_outputs._dump_metrics
    assert ORIGINALS["archive_model"] is not atomic_outputs.archive_model_atomically


def test_dump_metrics(tmp_path, monkeypatch):
    path = tmp_path / "metrics.json"
    common_util.dump_metrics(str(path), {"epoch": 0})
    fill_disk_on_open(monkeypatch, common_util)
    with pytest.raises(OSError, match="No space left"):
        common_util.dump_metrics(str(path), {"epoch": 1, "loss": 0.5})
    assert json.loads(path.read_text()) == {"epoch": 0} and only(tmp_path) == ["metrics.json"]
    with pytest.raises(OSError):
        ORIGINALS["dump_metrics"](str(path), {"epoch": 1, "loss": 0.5})
    assert path.read_text() == '{\n  "epoch": 1,\n'  # the first 16 characters


@pytest.mark.parametrize("module", [params, meta])
def test_config_and_meta_to_file(tmp_path, monkeypatch, module):
    path = tmp_path / "config.json"
    if module is params:
        old, new = Params({"a": 1}), Params({"a": 2, "trainer": {"num_epochs": 10}})
        write, original = Params.to_file, ORIGINALS["params_to_file"]
    else:
        old, new = meta.Meta("1.0"), meta.Meta("2.0.0-a-longer-version")
        write, original = meta.Meta.to_file, ORIGINALS["meta_to_file"]
    write(old, str(path))
    expected = path.read_text()
    fill_disk_on_open(monkeypatch, module)
    with pytest.raises(OSError, match="No space left"):
        write(new, str(path))
    assert path.read_text() == expected and only(tmp_path) == ["config.json"]
    with pytest.raises(OSError):
        original(new, str(path))
    assert len(path.read_text()) == 16


def test_vocabulary_save_to_files(tmp_path, monkeypatch):
    directory = tmp_path / "vocabulary"
    Vocabulary({"tokens": {"old": 1}}).save_to_files(str(directory))
    expected = {name: (directory / name).read_bytes() for name in only(directory)}
    real_open = codecs.open

    def failing_open(path, *args, **kwargs):
        if os.path.basename(path) == "tokens.txt":
            return FillingDisk(builtins.open, path, capacity=3)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(codecs, "open", failing_open)
    new = Vocabulary({"tokens": {"new": 1, "words": 1}, "labels": {"x": 1}})
    with pytest.raises(OSError, match="No space left"):
        new.save_to_files(str(directory))
    assert {name: (directory / name).read_bytes() for name in only(directory)} == expected
    assert only(tmp_path) == ["vocabulary"]
    with pytest.raises(OSError):
        ORIGINALS["save_to_files"](new, str(directory))
    assert (directory / "tokens.txt").read_text() == "@@U"  # partial

    monkeypatch.undo()
    new.save_to_files(str(directory))
    assert Vocabulary.from_files(str(directory)).get_token_to_index_vocabulary("tokens") == (
        new.get_token_to_index_vocabulary("tokens")
    )
    assert only(tmp_path) == ["vocabulary"]


def serialization_dir(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    Params({"model": {"type": "x"}}).to_file(str(run / "config.json"))
    torch.save({"weight": torch.arange(3000.0)}, run / "best.th")
    Vocabulary().save_to_files(str(run / "vocabulary"))
    return run


def test_archive_model(tmp_path, monkeypatch):
    run = serialization_dir(tmp_path)
    assert archival.archive_model(run) == str(run / "model.tar.gz")
    expected = (run / "model.tar.gz").read_bytes()
    real_add = tarfile.TarFile.add

    def add_then_fill_disk(self, name, arcname=None, *args, **kwargs):
        real_add(self, name, arcname, *args, **kwargs)
        if arcname == "weights.th":
            self.fileobj.flush()
            raise disk_full()

    monkeypatch.setattr(tarfile.TarFile, "add", add_then_fill_disk)
    with pytest.raises(OSError, match="No space left"):
        train_command.archive_model(run)
    assert (run / "model.tar.gz").read_bytes() == expected
    assert not [name for name in only(run) if name.startswith(".")]
    with pytest.raises(OSError):
        ORIGINALS["archive_model"](run)
    with tarfile.open(run / "model.tar.gz") as archive:  # reads as a finished archive
        assert archive.getnames() == ["config.json", "weights.th"]  # no vocabulary

    monkeypatch.undo()
    archival.archive_model(run, archive_path=tmp_path)  # a directory: model.tar.gz in it
    with tarfile.open(tmp_path / "model.tar.gz") as archive:
        assert {"config.json", "weights.th", "vocabulary"} <= set(archive.getnames())


class _Trainer:
    _ddp_wrapped_model = None
    model = torch.nn.Linear(300, 300)


def test_best_th_saved_by_the_trainer(tmp_path, monkeypatch):
    path = tmp_path / "best.th"
    trainer_class = gradient_descent_trainer.GradientDescentTrainer
    trainer_class._save_model_state(_Trainer(), str(path))
    expected = path.read_bytes()
    monkeypatch.setattr(torch, "save", faulty_torch_save(torch.save, "best.th", "enospc"))
    with pytest.raises(OSError, match="No space left"):
        trainer_class._save_model_state(_Trainer(), str(path))
    assert path.read_bytes() == expected and only(tmp_path) == ["best.th"]
    with pytest.raises(OSError):
        ORIGINALS["save_model_state"](_Trainer(), str(path))
    assert 0 < path.stat().st_size < len(expected)


def test_best_th_linked_or_copied_by_the_trainer(tmp_path, monkeypatch):
    source, dest = tmp_path / "model_state_e1_b0.th", tmp_path / "best.th"
    source.write_bytes(b"checkpoint" * 100)
    gradient_descent_trainer.hardlink_or_copy(source, dest)
    assert dest.read_bytes() == source.read_bytes()
    # Another filesystem or Windows: copied, and the copy fills the disk.
    monkeypatch.setattr(os, "link", lambda *args: (_ for _ in ()).throw(OSError(18, "EXDEV")))

    def copy_half(src, dst):
        with open(src, "rb") as i, open(dst, "wb") as o:
            o.write(i.read()[:500])
        raise disk_full()

    monkeypatch.setattr(shutil, "copy", copy_half)
    os.remove(dest)  # as the trainer does before it
    with pytest.raises(OSError, match="No space left"):
        gradient_descent_trainer.hardlink_or_copy(source, dest)
    assert only(tmp_path) == ["model_state_e1_b0.th"]
    with pytest.raises(OSError):
        ORIGINALS["hardlink_or_copy"](source, dest)
    assert dest.stat().st_size == 500
