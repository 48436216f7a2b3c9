import io
import json
import shutil
import subprocess
import sys
import tarfile

import pytest

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from allennlp_elmo_c.commands.describe import describe_archive, format_description
from tests import PROJECT_ROOT
from tests.helpers import TINY_ELMO_C_DIM, TINY_FASTTEXT, moved_archive

# The fixture config (tests/fixtures/configs/elmo_c.jsonnet): projection 8, cell 12, 2 layers.
# Training records the fastText path absolute (the elmo_c_run callback).
RECORDED_FASTTEXT = str(PROJECT_ROOT / "tests/fixtures/fasttext/tiny.bin")


@pytest.fixture
def at_project_root(monkeypatch):
    """The fixture archive records its fastText path relative to the project root."""
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)


def test_fields_match_the_fixture_config(elmo_c_archive, at_project_root):
    info = describe_archive(str(elmo_c_archive))
    assert info["model_type"] == "elmo_c"
    assert info["output_head"]["type"] == "continuous" and info["output_head"]["loss"] == "cosine"
    assert info["input_embedder"] == "fasttext" and not info["subword_bilm"]
    assert info["output_dim"] == TINY_ELMO_C_DIM == 2 * info["projection_size"] == 16
    assert info["num_layers"] == 3 and info["lstm_layers"] == 2 and info["cell_size"] == 12
    assert info["fasttext"] == {
        "recorded": RECORDED_FASTTEXT,
        "resolved": RECORDED_FASTTEXT,
        "resolves": True,
        "text": f"{RECORDED_FASTTEXT} (recorded); resolves now to {RECORDED_FASTTEXT} "
        "(the recorded path)",
    }
    # As experiments/quality/table2.py counts them: the loaded model's parameters that require grad.
    model = load_archive(str(elmo_c_archive)).model
    assert info["trainable_parameters"] == sum(
        p.numel() for p in model.parameters() if p.requires_grad
    )
    assert "without building the model" in info["parameters_counted_from"]
    metrics = json.loads((elmo_c_archive.parent / "metrics.json").read_text())
    assert info["training"]["training_duration"] == metrics["training_duration"]
    assert info["training"]["epochs"] == 1
    assert info["training"]["tokens_seen"] is None  # the fixture sets no batches_per_epoch


def test_text_output_and_paste_lines(elmo_c_archive, at_project_root):
    info = describe_archive(str(elmo_c_archive))
    text = format_description(info)
    lines = text.splitlines()
    assert f"ELMO_C_DIM={TINY_ELMO_C_DIM}" in lines
    assert "  representation size:  16 (2 x projection_size 8)" in lines
    assert "  layers:               3 (input projection + 2 LSTM layers, forward || backward)" in lines
    assert "  cell size:            12" in lines
    assert "  trained in:           float32" in lines  # (the fixture sets no precision)
    assert "continuous (cosine loss" in text
    assert f"resolves now to {RECORDED_FASTTEXT} (the recorded path)" in text
    assert f"{info['trainable_parameters']:,}" in text
    assert info["training"]["training_duration"] in text
    indexers = json.loads(next(line for line in lines if line.startswith("token_indexers: "))[16:])
    embedders = json.loads(next(line for line in lines if line.startswith("token_embedders: "))[17:])
    assert indexers == {"elmo": {"type": "fasttext_subwords", "archive_file": str(elmo_c_archive)}}
    assert embedders["elmo"]["type"] == "elmo_c_token_embedder"
    assert embedders["elmo"]["archive_file"] == str(elmo_c_archive)
    assert embedders["elmo"]["expected_output_dim"] == 16


def test_json_mode_on_the_command_line(elmo_c_archive):
    command = [sys.executable, "-m", "allennlp_elmo_c", "describe", str(elmo_c_archive), "--json"]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    info = json.loads(result.stdout)
    assert info["elmo_c_dim"] == info["output_dim"] == 16 and info["num_layers"] == 3
    assert info["fasttext"]["recorded"] == RECORDED_FASTTEXT
    assert info["config_snippet"]["token_embedders"]["elmo"]["archive_file"] == str(elmo_c_archive)
    plain = subprocess.run(command[:-1], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "ELMO_C_DIM=16" in plain.stdout.splitlines()


def test_fasttext_resolution_and_no_metrics(elmo_c_archive, tmp_path, monkeypatch):
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)
    monkeypatch.chdir(tmp_path)  # the recorded relative path no longer exists
    # An archive from before #18, recording its fastText file relative to the project.
    moved = moved_archive(elmo_c_archive, tmp_path / "moved", relative=True)
    info = describe_archive(str(moved))
    assert info["fasttext"]["resolves"] is False and info["fasttext"]["resolved"] is None
    assert info["training"] is None
    text = format_description(info)
    assert "NOT FOUND" in text and "no metrics.json" in text
    shutil.copy(TINY_FASTTEXT, moved.parent / "tiny.bin")
    info = describe_archive(str(moved))
    assert info["fasttext"]["resolved"] == str(moved.parent / "tiny.bin")
    assert "beside the archive" in info["fasttext"]["text"]
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(TINY_FASTTEXT))
    assert "$ELMO_C_FASTTEXT" in describe_archive(str(moved))["fasttext"]["text"]


def test_softmax_head(elmo_softmax_archive, at_project_root):
    info = describe_archive(str(elmo_softmax_archive))
    assert info["output_head"]["type"] == "softmax" and info["num_layers"] == 3
    model = load_archive(str(elmo_softmax_archive)).model
    assert info["trainable_parameters"] == sum(
        p.numel() for p in model.parameters() if p.requires_grad
    )


def test_corrupt_and_missing_archives(tmp_path):
    corrupt = tmp_path / "model.tar.gz"
    corrupt.write_bytes(b"not a tar file at all")
    with pytest.raises(ConfigurationError, match=f"{corrupt}.*not a readable"):
        describe_archive(str(corrupt))
    missing = tmp_path / "missing.tar.gz"
    with pytest.raises(ConfigurationError, match=f"{missing} does not exist"):
        describe_archive(str(missing))
    command = [sys.executable, "-m", "allennlp_elmo_c", "describe", str(corrupt)]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode != 0 and str(corrupt) in result.stderr


def test_in_batch_softmax_head_names_its_temperature():
    from allennlp_elmo_c.commands.describe import _output_head

    default = _output_head({"type": "continuous", "loss": "in_batch_softmax"})
    assert default["temperature"] == 0.05
    assert default["text"] == (
        "continuous (in-batch softmax loss, temperature 0.05, predicts fastText vectors)"
    )
    assert _output_head({"type": "continuous", "loss": "in_batch_softmax", "temperature": 0.1})[
        "text"
    ].startswith("continuous (in-batch softmax loss, temperature 0.1,")
    assert "temperature" not in _output_head({"type": "continuous", "loss": "vmf"})


@pytest.mark.parametrize("text", ['{"epoch": NaN}', '{"epoch": 0, "pad": "' + "x" * 200 + '"}', "[1]"])
def test_an_archive_metrics_json_is_read_as_received_json(text, tmp_path, monkeypatch):
    """The archive's metrics.json is refused, naming it, unless it is a small plain JSON object;
    the one beside the archive is ignored then, as when it is missing."""
    monkeypatch.setattr("allennlp_elmo_c.commands.describe.MAX_CONFIG_BYTES", 100)
    legacy = PROJECT_ROOT / "tests/fixtures/legacy_models/bilm/model.tar.gz"
    archive = tmp_path / "model.tar.gz"
    shutil.copyfile(legacy, tmp_path / "original.tar.gz")
    with tarfile.open(legacy) as original, tarfile.open(archive, "w:gz") as copy:
        for member in original:
            copy.addfile(member, original.extractfile(member) if member.isfile() else None)
        member = tarfile.TarInfo("metrics.json")
        member.size = len(text.encode())
        copy.addfile(member, io.BytesIO(text.encode()))
    with pytest.raises(ConfigurationError, match=f"{archive}: metrics.json"):
        describe_archive(str(archive))
    (tmp_path / "metrics.json").write_text(text)
    assert describe_archive(str(tmp_path / "original.tar.gz"))["training"] is None


def test_the_training_precision_is_read_from_the_config(elmo_c_archive, at_project_root, monkeypatch):
    """`model.precision` as trained (an archive of a run with `ELMO_C_PRECISION=bfloat16`
    records "bfloat16"; configs from before the setting say nothing: float32)."""
    from allennlp_elmo_c.commands import describe

    assert describe_archive(str(elmo_c_archive))["training_precision"] == "float32"
    read = describe.read_archive_config

    def bfloat16_config(archive_file):
        config = read(archive_file)
        config["model"]["precision"] = "bfloat16"
        return config

    monkeypatch.setattr(describe, "read_archive_config", bfloat16_config)
    info = describe_archive(str(elmo_c_archive))
    assert info["training_precision"] == "bfloat16"
    assert "  trained in:           bfloat16 mixed precision (" in format_description(info)
