"""
Slim embeddings in the `elmo_c` model: a `slim_softmax` output layer over word ids with the
fastText input (tests/fixtures/configs/elmo_slim_tiny.jsonnet), and a trainable `slim_embedding`
input with a `slim_softmax` output (elmo_slim_input_tiny.jsonnet): both train, save and reload
with the same assignment and the same outputs.
"""

import math

import torch

from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch
from allennlp.models.archival import load_archive

from allennlp_elmo_c.modules.output_heads.slim_softmax import SlimSoftmaxOutputHead
from allennlp_elmo_c.modules.token_embedders.slim_embedding import SlimEmbedding
from tests.helpers import overfit
from tests import FIXTURES_ROOT

OUTPUT_CONFIG = FIXTURES_ROOT / "configs" / "elmo_slim_tiny.jsonnet"
INPUT_CONFIG = FIXTURES_ROOT / "configs" / "elmo_slim_input_tiny.jsonnet"
DATA = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"


def assignments(model):
    return {
        name: buffer.clone()
        for name, buffer in model.named_buffers()
        if name.endswith("assignment")
    }


class TestSlimSoftmaxHead(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(OUTPUT_CONFIG, DATA)

    def test_train_save_and_load_keeps_the_assignment(self):
        model, loaded = self.ensure_model_can_train_save_and_load(OUTPUT_CONFIG)
        heads = [model._heads[f"{d}_lm"] for d in ("forward", "backward")]
        assert all(isinstance(head, SlimSoftmaxOutputHead) for head in heads)
        saved = assignments(model)
        assert len(saved) == 2
        # The archive's buffer is what is loaded: a different seed in the config changes nothing.
        archive = load_archive(
            self.TEST_DIR / "save_and_load_test" / "model.tar.gz",
            overrides={"model.output_head.seed": 99},
        )
        reloaded = assignments(archive.model)
        assert saved.keys() == reloaded.keys()
        assert all(torch.equal(saved[name], reloaded[name]) for name in saved)
        fresh = SlimSoftmaxOutputHead(8, 16, model.vocab, 2, 32, "lm_targets", seed=99)
        assert not torch.equal(fresh.table.assignment, saved["_heads.forward_lm.table.assignment"])
        # ... and it computes the same losses as the trained model.
        dataset = Batch(self.instances)
        dataset.index_instances(model.vocab)
        batch = dataset.as_tensor_dict()
        model.eval(), archive.model.eval()
        for key in ("forward_loss", "backward_loss"):
            torch.testing.assert_close(model(**batch)[key], archive.model(**batch)[key])

    def test_loss_is_the_cross_entropy_and_perplexity_is_reported(self):
        self.model.eval()
        batch = self.dataset.as_tensor_dict()
        output = self.model(**batch)
        metrics = self.model.get_metrics(reset=True)
        # The forward LM's loss from the naive logits (full word matrix) of the same states.
        head = self.model._heads["forward_lm"]
        tokens = batch["tokens"]
        ids = tokens["targets"]["tokens"]
        inputs = {"tokens": tokens["tokens"]}
        mask = ids != 0
        contextual = self.model._contextualizer(self.model._text_field_embedder(inputs), mask)
        states = contextual[..., :8][:, :-1][mask[:, 1:]]
        # Word w's vector: [S_1[a(w, 1)]; S_2[a(w, 2)]], each from its own sub-pool.
        assignment = head.table.assignment.long()
        words = torch.cat([head.table.pool[k][assignment[:, k]] for k in range(2)], dim=1)
        expected = torch.nn.functional.cross_entropy(
            states @ words.t() + head.bias, ids[:, 1:][mask[:, 1:]]
        )
        torch.testing.assert_close(output["forward_loss"], expected, atol=1e-5, rtol=1e-5)
        assert math.isclose(
            metrics["forward_perplexity"], math.exp(metrics["forward_loss"]), rel_tol=1e-6
        )
        assert "forward_cosine" not in metrics


class TestSlimInputEmbedding(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(INPUT_CONFIG, DATA)

    def test_train_save_and_load(self):
        model, loaded = self.ensure_model_can_train_save_and_load(INPUT_CONFIG)
        embedder = loaded._text_field_embedder._token_embedders["tokens"]
        assert isinstance(embedder, SlimEmbedding)
        saved = assignments(model)
        assert len(saved) == 3  # input embedder + two heads
        reloaded = assignments(loaded)
        assert all(torch.equal(saved[name], reloaded[name]) for name in saved)
        # The boundary tokens are in the vocabulary: embed_strings gives their trained vectors.
        ids = [loaded.vocab.get_token_index(token) for token in ("<S>", "</S>")]
        assert min(ids) >= 2  # neither padding nor unknown
        torch.testing.assert_close(
            embedder.embed_strings(["<S>", "</S>"]), embedder(torch.tensor(ids))
        )

    def test_input_embedding_trains(self):
        embedder = self.model._text_field_embedder._token_embedders["tokens"]
        before = embedder.table.pool.detach().clone()
        first, last = overfit(self.model, self.dataset.as_tensor_dict())
        assert last < 0.8 * first
        assert not torch.allclose(embedder.table.pool, before)
