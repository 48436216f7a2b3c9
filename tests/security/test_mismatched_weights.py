"""
Weights that do not match the model their config builds (a tensor left out, as a sender who
edited one file but not the other would send): a `ConfigurationError` naming the weights file and
the tensor, from a model directory (`model.safetensors`) and a biLM archive (`weights.th`). The
models are copies of tests/fixtures/legacy_models/.
"""

import io
import shutil
import tarfile

import pytest
import torch

from allennlp.common.checks import ConfigurationError

from tests import FIXTURES_ROOT
from tests.helpers import regenerate_checksums, without_elmo_c_variables

LEGACY = FIXTURES_ROOT / "legacy_models"


@pytest.fixture(autouse=True)
def no_variables(monkeypatch):
    without_elmo_c_variables(monkeypatch)


def _dropped(state: dict) -> str:
    """The name of a bias `state` holds, removed from it."""
    name = next(name for name in state if name.endswith("bias"))
    del state[name]
    return name


def test_a_model_directory_missing_a_tensor_names_model_safetensors(tmp_path):
    import safetensors.torch

    from allennlp_elmo_c.archive import load_elmo_c_archive

    directory = tmp_path / "package"
    shutil.copytree(LEGACY / "package", directory)
    lock = directory / "vocabulary" / ".lock"
    if lock.exists():
        lock.unlink()
    state = safetensors.torch.load_file(str(directory / "model.safetensors"))
    name = _dropped(state)
    safetensors.torch.save_file(state, str(directory / "model.safetensors"))
    regenerate_checksums(directory)
    with pytest.raises(ConfigurationError) as error:
        load_elmo_c_archive(str(directory))
    message = str(error.value)
    assert "model.safetensors does not match" in message and str(directory) in message
    assert name.split(".", 1)[-1] in message


def test_a_bilm_archive_missing_a_tensor_names_weights_th(tmp_path):
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    archive = tmp_path / "bilm" / "model.tar.gz"
    archive.parent.mkdir()
    shutil.copyfile(LEGACY / "package" / "legacy.bin", archive.parent / "legacy.bin")
    with tarfile.open(LEGACY / "bilm" / "model.tar.gz") as original, tarfile.open(archive, "w:gz") as copy:
        for member in original:
            data = original.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if member.name == "weights.th":
                state = torch.load(io.BytesIO(data), weights_only=True)  # type: ignore[arg-type]
                name = _dropped(state)
                buffer = io.BytesIO()
                torch.save(state, buffer)
                data = buffer.getvalue()
                member.size = len(data)
            copy.addfile(member, io.BytesIO(data) if data is not None else None)
    with pytest.raises(ConfigurationError) as error:
        PretrainedBiLM.from_archive(str(archive))
    message = str(error.value)
    assert "weights.th does not match" in message and str(archive) in message
    assert name in message

