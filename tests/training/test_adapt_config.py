"""training_config/elmo_c_adapt.jsonnet: continued pretraining of an ELMo-C archive on new text
(AllenNLP's `from_archive` model, the source's reader via our `from_archive` reader)."""

import json
import math
import random
import re
import shutil
import tarfile

import h5py
import numpy
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Vocabulary
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
from allennlp.training.util import evaluate

from allennlp_elmo_c.archive import read_archive_config
from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from allennlp_elmo_c.training.adapted_config import standalone_config
from tests import PROJECT_ROOT
from tests.helpers import LM_DATA, train_config

ADAPT_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_adapt.jsonnet"
# The fixture corpus makes few windows: 2 a batch gives a handful of updates on CPU.
AT_FIXTURE_SIZE = {
    "trainer.cuda_device": -1,
    "data_loader.batch_size": 2,
    "validation_data_loader.batch_size": 4,
}


@pytest.fixture
def in_project_root(monkeypatch):
    # The fixture archive records its fastText and candidate files relative to the repository.
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)


def set_adapt_environment(monkeypatch, source, train, validation, steps=10):
    monkeypatch.setenv("ELMO_C_SOURCE_ARCHIVE", str(source))
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(train))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(validation))
    monkeypatch.setenv("ELMO_C_ADAPT_STEPS", str(steps))


def invented_corpus(path, lines, seed):
    """Sentences of made-up words (syllables the fixture corpus does not use)."""
    rng = random.Random(seed)
    syllables = ["qua", "zix", "vob", "plo", "grem", "thu", "yek", "fran"]
    words = ["".join(rng.choices(syllables, k=rng.randint(2, 3))) for _ in range(60)]
    text = "\n".join(" ".join(rng.choices(words, k=rng.randint(6, 14))) for _ in range(lines))
    path.write_text(text + "\n", encoding="utf-8")
    return path


def validation_loss(reader, model, path):
    loader = MultiProcessDataLoader(reader, str(path), batch_size=4)
    loader.index_with(model.vocab)
    return evaluate(model, loader, cuda_device=-1)["loss"]


def test_adapted_model_starts_at_the_source_loss(in_project_root, monkeypatch, elmo_c_archive):
    validation = LM_DATA / "dev.txt"
    set_adapt_environment(monkeypatch, elmo_c_archive, LM_DATA / "sentences.txt", validation)
    source = load_archive(str(elmo_c_archive))
    expected = validation_loss(source.dataset_reader, source.model, validation)

    # What `allennlp train` builds from the config, before any update.
    params = Params.from_file(str(ADAPT_CONFIG))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    model = Model.from_params(vocab=Vocabulary.empty(), params=params.pop("model"))
    assert reader.max_sequence_length == source.dataset_reader.max_sequence_length == 12
    assert math.isfinite(expected) and expected > 0
    assert validation_loss(reader, model, validation) == pytest.approx(expected, abs=1e-6)


def test_adaptation_on_unseen_words_gives_an_ordinary_archive(
    in_project_root, monkeypatch, elmo_c_archive, tmp_path
):
    source = tmp_path / "source.tar.gz"  # a copy, deleted once the adapted archive is written
    shutil.copy(elmo_c_archive, source)
    train = invented_corpus(tmp_path / "train.txt", 40, seed=1)
    validation = invented_corpus(tmp_path / "dev.txt", 8, seed=2)
    set_adapt_environment(monkeypatch, source, train, validation)
    metrics = train_config(ADAPT_CONFIG, tmp_path / "run", json.dumps(AT_FIXTURE_SIZE))
    assert math.isfinite(metrics["training_loss"]) and math.isfinite(metrics["validation_loss"])

    adapted = tmp_path / "run" / "model.tar.gz"
    source_config = read_archive_config(str(source))
    config = read_archive_config(str(adapted))  # an elmo_c model, not from_archive
    assert config["model"] == source_config["model"]
    assert config["dataset_reader"] == source_config["dataset_reader"]
    assert config["train_data_path"] == str(train)
    before = load_archive(str(source)).model.state_dict()
    source.unlink()  # the adapted archive needs nothing of its source

    after = load_archive(str(adapted)).model.state_dict()
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[name], after[name]) for name in before)

    embedder = ElmoCTokenEmbedder(str(adapted)).eval()
    assert embedder.get_output_dim() == 16
    predictor = Predictor.from_archive(load_archive(str(adapted)), "elmo_c_next_word")
    words = validation.read_text().split("\n")[0].split()
    result = predictor.predict_json({"sentence": " ".join(words)})
    assert result["tokens"] == words
    output = embed_file(adapted, validation, tmp_path / "embedded.hdf5", output_mode="top")
    with h5py.File(output, "r") as hdf5:
        assert hdf5["0"].shape == (len(words), 16)
        assert numpy.isfinite(hdf5["0"][...]).all()


@pytest.mark.parametrize("kind", ["corrupt", "missing", "not elmo_c"])
def test_a_bad_source_archive_is_named(in_project_root, monkeypatch, tmp_path, kind):
    source = tmp_path / "source.tar.gz"
    if kind == "corrupt":
        source.write_bytes(b"not a tar.gz archive")
    elif kind == "not elmo_c":
        with tarfile.open(source, "w:gz") as archive:
            (tmp_path / "config.json").write_text(
                json.dumps({"model": {"type": "basic_classifier"}})
            )
            archive.add(tmp_path / "config.json", arcname="config.json")
    set_adapt_environment(monkeypatch, source, LM_DATA / "sentences.txt", LM_DATA / "dev.txt")
    with pytest.raises(ConfigurationError, match=re.escape(str(source))):
        train_config(ADAPT_CONFIG, tmp_path / "run", json.dumps(AT_FIXTURE_SIZE))


def test_standalone_config_leaves_ordinary_configs_alone():
    config = {"model": {"type": "elmo_c"}, "dataset_reader": {"type": "lm_corpus"}}
    assert standalone_config(config) is config
