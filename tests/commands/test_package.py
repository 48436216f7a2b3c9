"""
`package` and the model directory: one path that every consumer takes, used here only after the
training run (and the fastText file it read) is deleted and the directory copied elsewhere, with
no `ELMO_C_*` variable set; and the fastText fingerprint check that refuses other vectors.
"""
import io
import json
import os
import stat
import shutil
import tarfile
from pathlib import Path

import h5py
import numpy
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids
from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
from allennlp_elmo_c.commands.describe import describe_archive
from allennlp_elmo_c.commands.package import package_model
from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.received.model_directory import CHECKSUMS_FILE, WEIGHTS_FILE, verify_checksums
from tests.helpers import (
    DEMO_AT_FIXTURE_SIZE,
    DEMO_CONFIG,
    FIXTURES_ROOT,
    MODEL_SENTENCES as SENTENCES,
    PROJECT_ROOT,
    embedder_vectors,
    make_demo_data_dir,
    train_config,
    train_small_fasttext,
    without_elmo_c_variables,
)


def test_the_directory_holds_everything(model_directory):
    directory, _ = model_directory
    names = sorted(p.name for p in directory.iterdir())
    assert names == sorted(["README.md", "config.json", "model.safetensors", "vocabulary",
                            "vectors.bin", CHECKSUMS_FILE])  # fmt: skip
    config = json.loads((directory / "config.json").read_text())
    assert config["model_type"] == "elmo_c" and config["hidden_size"] == 16
    assert config["num_hidden_layers"] == 3
    # The biLM config names its files relative to the directory, and records the fingerprint.
    reader = config["bilm"]["dataset_reader"]["token_indexers"]["tokens"]
    assert reader["model_path"] == "vectors.bin"
    assert reader["fingerprint"] == config["fasttext"]["fingerprint"]
    assert "vectors.bin" in verify_checksums(directory)
    card = (directory / "README.md").read_text()
    assert "training time" in card and "fingerprint" in card and "hardware" in card
    assert "- precision: float32\n" in card  # the fixture biLM's (no precision set: float32)


def test_python_api_from_the_directory(model_directory, monkeypatch):
    directory, reference = model_directory
    without_elmo_c_variables(monkeypatch)
    elmo = ElmoC(str(directory), num_output_representations=1, dropout=0.0).eval()
    with torch.no_grad():
        vectors = elmo(batch_to_ids(SENTENCES, elmo))["elmo_representations"][0]
    assert (vectors - embedder_vectors(str(directory))).abs().max().item() <= 1e-6
    # The packaged weights are the trained ones: the same vectors as the archive gave.
    assert (vectors - reference).abs().max().item() <= 1e-6


def test_embedder_and_command_from_the_directory(model_directory, monkeypatch, tmp_path):
    directory, _ = model_directory
    without_elmo_c_variables(monkeypatch)
    text = tmp_path / "input.txt"
    text.write_text("\n".join(" ".join(s) for s in SENTENCES) + "\n", encoding="utf-8")
    output = tmp_path / "out.hdf5"
    from allennlp.commands import main

    monkeypatch.setattr("sys.argv", ["allennlp", "elmo-c-embed", str(directory), str(text), str(output)])
    main()
    # The command's batches (the file's sentences together), through the Python API.
    embedded = ElmoCEmbedder(str(directory)).embed_batch(SENTENCES)
    with h5py.File(output, "r") as vectors:
        for index, sentence in enumerate(SENTENCES):
            numpy.testing.assert_allclose(embedded[index], vectors[str(index)][()], atol=1e-6)


def test_allennlp_tools_take_the_directory(model_directory, monkeypatch):
    directory, _ = model_directory
    without_elmo_c_variables(monkeypatch)
    archive = load_archive(str(directory))  # what allennlp evaluate / predict call
    assert archive.model.contextualizer.get_output_dim() == 16
    info = describe_archive(str(directory))
    assert info["output_dim"] == 16
    indexer = FastTextSubwordsIndexer(archive_file=str(directory))
    assert Path(indexer.model_path) == directory / "vectors.bin"


def test_a_changed_file_is_refused(model_directory, tmp_path):
    directory, _ = model_directory
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    weights = (copy / WEIGHTS_FILE).read_bytes()
    (copy / WEIGHTS_FILE).write_bytes(weights[:-8] + bytes(8))
    with pytest.raises(ConfigurationError, match="model.safetensors does not match its checksum"):
        ElmoC(str(copy), 1)


def test_package_refuses_to_overwrite(model_directory, tmp_path):
    directory, _ = model_directory
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="taken exists; choose a new directory"):
        package_model(str(directory), str(tmp_path / "taken"))
    (tmp_path / "taken" / "file").unlink()
    again = package_model(str(directory), str(tmp_path / "taken"))
    assert (again / WEIGHTS_FILE).is_file()


def test_every_packaged_file_has_the_mode_a_plain_open_gives(model_directory, tmp_path):
    """A colleague on a shared filesystem reads every file: safetensors' save_file wrote the
    weights with mode 0600 while the others had the umask's 0644."""
    directory, _ = model_directory
    umask = os.umask(0o022)
    try:
        packaged = package_model(str(directory), str(tmp_path / "shared"))
    finally:
        os.umask(umask)
    modes = {path.relative_to(packaged).as_posix(): stat.S_IMODE(path.stat().st_mode)
             for path in packaged.rglob("*") if path.is_file()}  # fmt: skip
    assert WEIGHTS_FILE in modes and set(modes.values()) == {0o644}, modes


# --- one fastText check, end to end ------------------------------------------------------------


@pytest.fixture(scope="module")
def other_fasttext(tmp_path_factory) -> Path:
    """Another 16-d fastText model: the same size as the fixture's, other vectors."""
    return train_small_fasttext(tmp_path_factory.mktemp("other_fasttext"), dim=16, bucket=10_000)


def test_training_records_the_fingerprint(elmo_c_archive):
    from allennlp_elmo_c.archive import read_archive_config
    from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin

    config = read_archive_config(str(elmo_c_archive))
    expected = FastTextBin.load(FIXTURES_ROOT / "fasttext" / "tiny.bin").fingerprint
    assert config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["fingerprint"] == expected
    assert config["dataset_reader"]["token_indexers"]["tokens"]["fingerprint"] == expected


def test_a_stale_environment_variable_is_refused(elmo_c_archive, other_fasttext, monkeypatch):
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(other_fasttext))
    with pytest.raises(ConfigurationError, match=r"(?s)vectors.*16d\.bin.*tiny\.bin|16d\.bin.*not the one"):
        ElmoC(str(elmo_c_archive), 1)


def test_another_bin_by_argument_is_refused(elmo_c_archive, other_fasttext):
    with pytest.raises(ConfigurationError, match="not the one this model was trained with"):
        TokenEmbedder.from_params(Params({"type": "elmo_c_token_embedder",
                                          "archive_file": str(elmo_c_archive),
                                          "fasttext_path": str(other_fasttext)}))  # fmt: skip
    with pytest.raises(ConfigurationError, match="tiny.bin"):
        PretrainedBiLM.from_archive(str(elmo_c_archive), fasttext_path=str(other_fasttext))


def test_another_bin_for_the_embed_command_is_refused(elmo_c_archive, other_fasttext, tmp_path,
                                                      monkeypatch, capsys):  # fmt: skip
    from allennlp.commands import main

    text = tmp_path / "input.txt"
    text.write_text("The council met .\n", encoding="utf-8")
    argv = ["allennlp", "elmo-c-embed", str(elmo_c_archive), str(text), str(tmp_path / "out.hdf5"),
            "--fasttext-path", str(other_fasttext)]  # fmt: skip
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as stopped:  # the command's one-line error
        main()
    assert stopped.value.code == 1
    assert "not the one this model was trained with" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", argv + ["--verbose"])  # the exception itself
    with pytest.raises(ConfigurationError, match="not the one this model was trained with"):
        main()


def test_a_directory_refuses_another_bin_and_ignores_the_variable(model_directory, other_fasttext,
                                                                  monkeypatch):  # fmt: skip
    directory, reference = model_directory
    with pytest.raises(ConfigurationError, match="not the one this model was trained with"):
        PretrainedBiLM.from_archive(str(directory), fasttext_path=str(other_fasttext))
    # The directory's own .bin is used whatever the environment says.
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(other_fasttext))
    elmo = ElmoC(str(directory), 1, dropout=0.0).eval()
    with torch.no_grad():
        vectors = elmo(batch_to_ids(SENTENCES, elmo))["elmo_representations"][0]
    assert (vectors - reference).abs().max().item() <= 1e-6


def without_fingerprints(archive: Path, target: Path) -> Path:
    """A copy of `archive` with no fastText fingerprint in its config."""
    with tarfile.open(archive) as source, tarfile.open(target, "w:gz") as copy:
        for member in source:
            data = source.extractfile(member) if member.isfile() else None
            if member.name == "config.json":
                config = _strip(json.load(data))  # type: ignore[arg-type]
                text = json.dumps(config).encode()
                member.size = len(text)
                data = io.BytesIO(text)
            copy.addfile(member, data)
    return target


def _strip(node):
    if isinstance(node, dict):
        return {key: _strip(value) for key, value in node.items() if key != "fingerprint"}
    if isinstance(node, list):
        return [_strip(value) for value in node]
    return node


def test_an_archive_without_fingerprints_is_refused_in_one_line(elmo_c_archive, tmp_path):
    old = without_fingerprints(elmo_c_archive, tmp_path / "old.tar.gz")
    with pytest.raises(ConfigurationError, match="records no fastText fingerprint"):
        PretrainedBiLM.from_archive(str(old))


# --- a task model from a converted stock config, used after the biLM directory is gone ---------


def test_task_archive_works_after_the_model_directory_is_gone(model_directory, tmp_path, monkeypatch):
    import allennlp_models.tagging  # noqa: F401  (registers crf_tagger, conll2003)
    from allennlp.data.tokenizers import Token

    from allennlp_elmo_c.commands.convert_config import convert_config_file

    directory, _ = model_directory
    bilm = tmp_path / "bilm"
    shutil.copytree(directory, bilm)
    data = str(FIXTURES_ROOT / "data" / "conll2003.txt")
    converted = tmp_path / "ner.json"
    convert_config_file(str(FIXTURES_ROOT / "configs" / "stock" / "ner_elmo.jsonnet"), str(bilm),
                        str(converted), {"NER_TRAIN_DATA_PATH": data, "NER_TEST_DATA_PATH": data,
                                         "GLOVE_50D": str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt")})  # fmt: skip
    without_elmo_c_variables(monkeypatch)
    train_config(converted, tmp_path / "task", json.dumps({"trainer.num_epochs": 1, "data_loader.batch_size": 4}))
    task_archive = tmp_path / "elsewhere" / "ner.tar.gz"
    task_archive.parent.mkdir()
    shutil.move(tmp_path / "task" / "model.tar.gz", task_archive)
    with tarfile.open(task_archive) as archive:
        assert any(name.startswith("fasttext/") and name.endswith(".bin") for name in archive.getnames())
    # In the run directory the bundled .bin is a hard link to the biLM's: no second copy on disk.
    (bundled,) = (tmp_path / "task" / "fasttext").glob("*.bin")
    assert os.path.samefile(bundled, bilm / "vectors.bin")
    shutil.rmtree(bilm)
    shutil.rmtree(tmp_path / "task")
    archive = load_archive(str(task_archive))
    tokens = [Token(word) for word in "The council met in Paris .".split()]
    instance = archive.dataset_reader.text_to_instance(tokens)
    archive.dataset_reader.apply_token_indexers(instance)
    output = archive.model.forward_on_instance(instance)
    assert len(output["tags"]) == 6


def test_another_bin_for_the_converter_is_refused(elmo_c_archive, other_fasttext):
    from allennlp_elmo_c.commands.convert_config import convert_config
    from allennlp_elmo_c.commands.convert_config import load_stock_config

    data = str(FIXTURES_ROOT / "data" / "conll2003.txt")
    stock = load_stock_config(str(FIXTURES_ROOT / "configs" / "stock" / "ner_elmo.jsonnet"),
                              {"NER_TRAIN_DATA_PATH": data, "NER_TEST_DATA_PATH": data,
                               "GLOVE_50D": str(FIXTURES_ROOT / "data" / "glove_tiny.50d.txt")})  # fmt: skip
    with pytest.raises(ConfigurationError, match="not the one this model was trained with"):
        convert_config(stock, str(elmo_c_archive), fasttext_path=str(other_fasttext))
    # The biLM's own .bin, by another path, is accepted.
    copy = other_fasttext.parent / "copy-of-tiny.bin"
    shutil.copy(FIXTURES_ROOT / "fasttext" / "tiny.bin", copy)
    converted = convert_config(stock, str(elmo_c_archive), fasttext_path=str(copy)).config
    assert converted["dataset_reader"]["token_indexers"]["elmo"]["model_path"] == str(copy)


def test_an_indexer_over_another_bin_is_refused(elmo_c_archive, other_fasttext):
    """The indexer's .bin is checked against the embedder's on every batch (and each against the
    fingerprint recorded at training): a batch from the wrong indexer after good ones too."""
    from allennlp_elmo_c.modules.elmo_c import index_sentences

    embedder = TokenEmbedder.from_params(Params(
        {"type": "elmo_c_token_embedder", "archive_file": str(elmo_c_archive)}
    ))  # fmt: skip
    indexer = FastTextSubwordsIndexer(model_path=str(other_fasttext))
    with pytest.raises(ConfigurationError, match="another model|reads"):
        embedder(**index_sentences([["The", "council"]], indexer))
    own = FastTextSubwordsIndexer(archive_file=str(elmo_c_archive))
    for _ in range(2):
        embedder(**index_sentences([["The", "council"]], own))
    with pytest.raises(ConfigurationError, match="another model|reads"):
        embedder(**index_sentences([["The", "council"]], indexer))


def test_adaptation_and_evaluate_take_the_directory(model_directory, tmp_path, monkeypatch):
    """Continued pretraining (elmo_c_adapt.jsonnet, whose source is an ELMO_C_* variable) from a
    model directory, and `allennlp evaluate` on the directory itself."""
    import subprocess
    import sys

    directory, _ = model_directory
    source = tmp_path / "source"
    shutil.copytree(directory, source)
    lm = FIXTURES_ROOT / "data" / "lm"
    without_elmo_c_variables(monkeypatch)
    for name, value in (("ELMO_C_SOURCE_ARCHIVE", source), ("ELMO_C_TRAIN_DATA", lm / "sentences.txt"),
                        ("ELMO_C_VALIDATION_DATA", lm / "dev.txt"), ("ELMO_C_ADAPT_STEPS", 4)):  # fmt: skip
        monkeypatch.setenv(name, str(value))
    metrics = train_config(PROJECT_ROOT / "training_config" / "elmo_c_adapt.jsonnet", tmp_path / "adapted",
                           json.dumps({"trainer.cuda_device": -1, "data_loader.batch_size": 2}))  # fmt: skip
    assert metrics["validation_loss"] > 0
    assert describe_archive(str(tmp_path / "adapted" / "model.tar.gz"))["output_dim"] == 16
    result = subprocess.run([sys.executable, "-m", "allennlp_elmo_c", "evaluate", str(source), str(lm / "dev.txt"),
                             "--output-file", str(tmp_path / "metrics.json")],
                            cwd=PROJECT_ROOT, capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "metrics.json").read_text())["loss"] > 0


def test_the_card_states_the_runs_epochs_tokens_and_best_validation(tmp_path, monkeypatch):
    """The demo config at fixture size for two epochs, packaged: the card's epochs, tokens seen
    and best validation metrics are the run's own (metrics.json); the tokens are the corpus's
    stream (each sentence's words with `<S>` and `</S>`) less one, per epoch, as the paper's
    windows predict every token but the first once per direction."""
    data = make_demo_data_dir(tmp_path / "data")
    monkeypatch.setenv("ELMO_C_DATA_DIR", str(data))
    overrides = dict(DEMO_AT_FIXTURE_SIZE, **{"trainer.num_epochs": 2})
    train_config(DEMO_CONFIG, tmp_path / "run", json.dumps(overrides))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    lines = [line.split() for line in (data / "news" / "train.txt").read_text().splitlines()]
    stream = sum(len(words) + 2 for words in lines if words)
    assert metrics["epoch"] == 1 and metrics["tokens_seen"] == 2 * (stream - 1)

    card = (package_model(str(tmp_path / "run"), str(tmp_path / "packaged")) / "README.md").read_text()
    assert "- epochs: 2\n" in card
    assert f"- tokens seen: {2 * (stream - 1):,} (" in card
    best = (f"- best validation: epoch {metrics['best_epoch'] + 1}: "
            f"backward_cosine {metrics['best_validation_backward_cosine']:.4g}, ")  # fmt: skip
    assert best in card
    assert f"forward_cosine {metrics['best_validation_forward_cosine']:.4g}, " in card
    assert f"loss {metrics['best_validation_loss']:.4g}" in card
