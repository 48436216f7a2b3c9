"""
The paper's embedding ablations (Table 3): ELMo-C-Rnd (random N(0, 1) target vectors), ELMo's
char-CNN as the input (elmo_c_cnn) or as the target (elmo_c_cnn_out). Tiny fixture models train,
save and load; each training_config/ file trains one epoch at a tiny size; at the paper's size
they have the expected number of trainable parameters.
"""

import json
import math

import pytest
import torch

from allennlp.common import Params
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from allennlp_elmo_c.modules.token_embedders.elmo_char_cnn import ElmoCharCnnEmbedder
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder
from allennlp_elmo_c.modules.token_embedders.random_vectors import RandomVectorsEmbedder
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import (
    EXPECTED_PARAMETERS,
    fasttext_ids,
    skip_orthogonal_init,
    train_config,
    train_small_fasttext,
    write_elmo_files,
)

CONFIGS = {
    name: FIXTURES_ROOT / "configs" / f"elmo_c_{name}_tiny.jsonnet"
    for name in ("rnd", "cnn", "cnn_out")
}
DATA = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"
TINY_FASTTEXT = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")
ELMO = FIXTURES_ROOT / "elmo"
# The original ELMo's char-CNN (elmo_2x4096_512_2048cnn_2xhighway_options.json).
ELMO_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


def _tokens_of(instance):
    return [token.text for token in instance["tokens"].tokens]


class TestAblationModels(ModelTestCase):
    @pytest.mark.parametrize("name", sorted(CONFIGS))
    def test_train_save_and_load(self, name):
        self.set_up_model(CONFIGS[name], DATA)
        self.ensure_model_can_train_save_and_load(
            CONFIGS[name], overrides='{"trainer.num_epochs": 1}'
        )

    @pytest.mark.parametrize("name", sorted(CONFIGS))
    def test_each_embedder_reads_its_own_indexer(self, name):
        self.set_up_model(CONFIGS[name], DATA)
        model = self.model
        model.eval()
        tensors = self.dataset.as_tensor_dict()["tokens"]
        output = model(tokens=tensors)
        assert torch.isfinite(output["loss"])
        inputs = list(model._text_field_embedder._token_embedders.values())
        targets = list(model._target_embedder._token_embedders.values())
        assert len(inputs) == len(targets) == 1  # what nearest_neighbour_words and downstream need
        expected_types = {
            "rnd": (FastTextEmbedder, RandomVectorsEmbedder),
            "cnn": (ElmoCharCnnEmbedder, FastTextEmbedder),
            "cnn_out": (FastTextEmbedder, ElmoCharCnnEmbedder),
        }[name]
        assert (type(inputs[0]), type(targets[0])) == expected_types
        target_vectors = model._target_embedder(tensors)
        mask = output["mask"]
        # Boundary tokens are embedded like words (the reader's windows hold them where
        # sentences start and end).
        all_words = [word for instance in self.instances for word in _tokens_of(instance)]
        assert "<S>" in all_words and "</S>" in all_words
        for row, instance in enumerate(self.instances):
            words = _tokens_of(instance)
            length = int(mask[row].sum())
            assert length == len(words)
            torch.testing.assert_close(
                output["noncontextual_token_embeddings"][row, :length],
                inputs[0].embed_strings(words),
            )
            torch.testing.assert_close(
                target_vectors[row, :length], targets[0].embed_strings(words)
            )
            assert (target_vectors[row, length:] == 0).all()
        # Validation-time nearest-neighbour accuracy works over the target embedder.
        assert 0.0 <= model.get_metrics(reset=True)["forward_nn_accuracy"] <= 1.0

    def test_frozen_cnn_gets_no_gradient(self):
        self.set_up_model(CONFIGS["cnn"], DATA)
        cnn = [p for n, p in self.model.named_parameters() if "_encoder" in n]
        assert cnn and not any(p.requires_grad for p in cnn)
        self.model.train()
        self.model(**self.dataset.as_tensor_dict())["loss"].backward()
        assert all(p.grad is None for p in cnn)


def test_rnd_archive_works_downstream(tmp_path, monkeypatch):
    # The `subset` input embedder keeps one token embedder, so elmo_c_token_embedder accepts an
    # ELMo-C-Rnd archive (fastText input) like any ELMo-C archive.
    monkeypatch.chdir(PROJECT_ROOT)
    train_config(CONFIGS["rnd"], tmp_path / "run", overrides='{"trainer.num_epochs": 1}')
    embedder = ElmoCTokenEmbedder(str(tmp_path / "run" / "model.tar.gz"), dropout=0.0)
    tensors = fasttext_ids([["The", "storm", "closed", "schools"], ["Fans", "celebrated"]])
    output = embedder(**tensors)
    assert output.shape == (2, 4, 16) and torch.isfinite(output).all()


# --- the training_config/ files, at a tiny size ------------------------------------------------

TINY_SIZES = {
    "model.contextualizer.input_size": 16,
    "model.contextualizer.projection_size": 8,
    "model.contextualizer.cell_size": 12,
    "data_loader.batch_size": 8,
    "data_loader.num_workers": 0,
    "data_loader.max_instances_in_memory": 80,
    "validation_data_loader.batch_size": 8,
    "trainer.num_epochs": 1,
    "trainer.cuda_device": -1,
    "trainer.learning_rate_scheduler.batch_size_per_worker": 8,
}
FASTTEXT_DIM = {
    "rnd": "model.text_field_embedder.token_embedders.tokens.expected_dim",
    "cnn": "model.target_embedder.token_embedders.tokens.expected_dim",
    "cnn_out": "model.text_field_embedder.token_embedders.tokens.expected_dim",
}


def _set_environment(monkeypatch, fasttext: str, options: str, weights: str) -> None:
    environment = {
        "ELMO_C_FASTTEXT": fasttext,
        "ELMO_C_TRAIN_DATA": str(DATA),
        "ELMO_C_VALIDATION_DATA": str(FIXTURES_ROOT / "data" / "lm" / "dev.txt"),
        "ELMO_C_ELMO_OPTIONS": options,
        "ELMO_C_ELMO_WEIGHTS": weights,
    }
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)


@pytest.mark.parametrize("name", ["rnd", "cnn", "cnn_out"])
def test_training_config_trains_one_epoch(name, tmp_path, monkeypatch):
    _set_environment(
        monkeypatch, TINY_FASTTEXT, str(ELMO / "options.json"), str(ELMO / "lm_weights.hdf5")
    )
    overrides = {**TINY_SIZES, FASTTEXT_DIM[name]: 16}
    config = PROJECT_ROOT / "training_config" / f"elmo_c_{name}.jsonnet"
    metrics = train_config(config, tmp_path / "run", overrides=json.dumps(overrides))
    assert math.isfinite(metrics["training_loss"]) and math.isfinite(metrics["validation_loss"])
    assert metrics["epoch"] == 0 and (tmp_path / "run" / "model.tar.gz").is_file()


# --- the paper's size --------------------------------------------------------------------------

# Changes from ELMo-C (EXPECTED_PARAMETERS, 300-d fastText in and out), per direction:
# elmo_c_cnn: 512-d CNN vectors in, already the projection's size: no input Linear (LayerNorm
# alone, as the paper's code);
# elmo_c_cnn_out: the head predicts 512-d CNN vectors instead of 300-d fastText vectors.
_D, _E, _P = 300, 512, 512
EXPECTED = {
    "rnd": EXPECTED_PARAMETERS,
    "cnn": EXPECTED_PARAMETERS - 2 * (_D * _P + _P),
    "cnn_out": EXPECTED_PARAMETERS + 2 * (_P * (_E - _D) + (_E - _D)),
}
# ELMo's CNN: character embeddings (261 + padding) x 16, convolutions, 2 highway layers of 2048
# (transform and carry), projection 2048 -> 512: all frozen.
_N = sum(number for _, number in ELMO_FILTERS)
ELMO_CNN_PARAMETERS = (
    262 * 16
    + sum(16 * width * number + number for width, number in ELMO_FILTERS)
    + 2 * (_N * 2 * _N + 2 * _N)
    + (_N * _E + _E)
)


@pytest.fixture(scope="module")
def paper_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("paper_size")
    fasttext = train_small_fasttext(directory, dim=300, bucket=1000)
    options, weights = write_elmo_files(
        directory / "elmo", ELMO_FILTERS, 2, 16, 512, random_weights=False
    )
    return str(fasttext), options, weights


def test_expected_numbers():
    assert EXPECTED == {"rnd": 76_185_176, "cnn": 75_876_952, "cnn_out": 76_402_688}
    assert ELMO_CNN_PARAMETERS == 18_037_856


@pytest.mark.parametrize("name", ["rnd", "cnn", "cnn_out"])
def test_paper_size_parameter_counts(name, paper_files, monkeypatch):
    _set_environment(monkeypatch, *paper_files)
    skip_orthogonal_init(monkeypatch)
    params = Params.from_file(str(PROJECT_ROOT / "training_config" / f"elmo_c_{name}.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    model = Model.from_params(vocab=Vocabulary(), params=params.pop("model"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    assert trainable == EXPECTED[name], f"{trainable:,}"
    assert frozen == (0 if name == "rnd" else ELMO_CNN_PARAMETERS), f"{frozen:,}"
    # The reader's indexers feed the model (shapes only: the ELMo weights here are zeros).
    instances = list(reader.read(str(DATA)))[:2]
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    model.eval()
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    assert output["lm_embeddings"].shape[-1] == 1024
    assert output["forward_predictions"].shape[-1] == (512 if name == "cnn_out" else 300)
