"""
ELMo-Sub (BPE subwords in, a full softmax over the subwords out, output embedding tied to the
input embedding): the tiny fixture config trains, saves and loads; its loss is the tied softmax's
negative log-likelihood; training_config/elmo_sub.jsonnet trains at a tiny size and has the
paper's size.
"""

import json

import pytest
import torch

from allennlp.common import Params
from allennlp.common.testing import ModelTestCase
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from tests import PROJECT_ROOT
from tests.helpers import (
    SENTENCES,
    TINY_ELMO_SUB_CONFIG,
    bpe_environment,
    skip_orthogonal_init,
    train_config,
)

PAPER_CONFIG = PROJECT_ROOT / "training_config" / "elmo_sub.jsonnet"


def paper_size_parameters(vocab_size: int) -> int:
    """Per direction: the input's LayerNorm (no input Linear: the 512-d subword embedding has
    the projection's size, as in the paper's code), 2 layers of W_x, W_h
    (4*4096 x 512 each), gate bias (4*4096), P (512 x 4096), LayerNorm (2*512), and the softmax
    bias (vocab_size); plus one vocab_size x 512 subword embedding shared by the input and
    both heads."""
    p, c = 512, 4096
    direction = 2 * p + 2 * (2 * 4 * c * p + 4 * c + p * c + 2 * p) + vocab_size
    return 2 * direction + vocab_size * p


@pytest.fixture
def environment(bpe, monkeypatch):
    for name, value in bpe_environment(bpe).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(SENTENCES))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(SENTENCES))
    return bpe


def tied(model) -> bool:
    weight = model._text_field_embedder._token_embedders["tokens"].weight
    return all(head.output_embedding is weight for head in model._heads.values())


@pytest.mark.usefixtures("environment")
class TestElmoSub(ModelTestCase):
    def test_train_save_and_load_with_tied_embedding(self):
        self.set_up_model(TINY_ELMO_SUB_CONFIG, SENTENCES)
        assert tied(self.model)
        assert self.model.vocab.get_vocab_size("subwords") == 201
        _, loaded = self.ensure_model_can_train_save_and_load(
            TINY_ELMO_SUB_CONFIG, overrides=json.dumps({"trainer.num_epochs": 1})
        )
        assert tied(loaded)
        metrics = loaded.get_metrics()
        assert {"forward_perplexity", "backward_perplexity"} <= set(metrics)
        archive = load_archive(self.TEST_DIR / "save_and_load_test" / "model.tar.gz")
        assert tied(archive.model)

    def test_loss_is_the_tied_softmax_nll(self):
        """Recomputed from the model's own parts: logits = h E^T + b with E the input embedding,
        the forward LM predicting subword t + 1 and the backward LM subword t - 1."""
        self.set_up_model(TINY_ELMO_SUB_CONFIG, SENTENCES)
        model = self.model.eval()
        tensors = self.dataset.as_tensor_dict()
        output = model(**tensors)
        ids = tensors["tokens"]["tokens"]["tokens"]
        mask = ids != 0
        embedding = model._text_field_embedder._token_embedders["tokens"].weight
        forward, backward = output["lm_embeddings"].chunk(2, dim=-1)
        pair = mask[:, 1:]
        expected = {}
        for direction, hidden, targets in (
            ("forward", forward[:, :-1], ids[:, 1:]),
            ("backward", backward[:, 1:], ids[:, :-1]),
        ):
            bias = model._heads[f"{direction}_lm"].output_bias
            logits = hidden[pair] @ embedding.t() + bias
            expected[direction] = torch.nn.functional.cross_entropy(logits, targets[pair])
            torch.testing.assert_close(output[f"{direction}_loss"], expected[direction])
        torch.testing.assert_close(output["loss"], (expected["forward"] + expected["backward"]) / 2)


def test_paper_config_trains_one_epoch_at_a_tiny_size(environment, tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    overrides = {
        "model.text_field_embedder.token_embedders.tokens.embedding_dim": 8,
        "model.contextualizer.input_size": 8,
        "model.contextualizer.projection_size": 8,
        "model.contextualizer.cell_size": 16,
        "data_loader.batch_size": 8,
        "data_loader.max_instances_in_memory": 80,
        "data_loader.num_workers": 0,
        "validation_data_loader.batch_size": 8,
        "trainer.num_epochs": 1,
        "trainer.cuda_device": -1,
        "trainer.checkpointer": {"type": "atomic", "keep_most_recent_by_count": 1},
    }
    metrics = train_config(PAPER_CONFIG, tmp_path / "run", json.dumps(overrides))
    assert metrics["epoch"] == 0
    # An untrained model over ~200 subwords starts at a perplexity of ~200.
    assert 20 < metrics["training_forward_perplexity"] < 400
    archive = load_archive(tmp_path / "run" / "model.tar.gz")
    assert tied(archive.model)


def test_paper_size(environment, monkeypatch):
    skip_orthogonal_init(monkeypatch)
    params = Params.from_file(str(PAPER_CONFIG))
    vocabulary = Vocabulary.from_files(params["vocabulary"]["directory"])
    model = Model.from_params(vocab=vocabulary, params=params.pop("model"))
    assert tied(model)
    vocab_size = vocabulary.get_vocab_size("subwords")
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == paper_size_parameters(vocab_size)
    assert paper_size_parameters(0) == 75_569_152
    # With the assumed 30,000-subword BPE (+ padding): 91.0M, against the paper's 92M (its BPE
    # vocabulary size is not stated; 32K subwords would give 92.0M).
    assert paper_size_parameters(30_001) == 90_989_666
    assert abs(paper_size_parameters(32_001) - 92e6) < 0.001 * 92e6
