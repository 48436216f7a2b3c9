import json

import pytest
import torch

from allennlp.common import Params
from allennlp.common.testing import ModelTestCase
from allennlp.models import Model
from allennlp.models.archival import load_archive

from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel
from tests import FIXTURES_ROOT
from tests.helpers import needs_fast_bfloat16, overfit

CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"
DATA = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"


class TestElmoC(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIG, DATA)

    @pytest.mark.parametrize("backend", ["fused", "reference"])
    @pytest.mark.parametrize("loss", ["cosine", "l2", "vmf"])
    def test_train_save_and_load(self, backend, loss):
        overrides = {"model.contextualizer.backend": backend, "model.output_head.loss": loss}
        overrides["trainer.num_epochs"] = 1
        self.ensure_model_can_train_save_and_load(CONFIG, overrides=json.dumps(overrides))

    def test_shared_output_head_trains_saves_and_loads(self):
        overrides = json.dumps({"model.share_output_head": True, "trainer.num_epochs": 1})
        model, loaded = self.ensure_model_can_train_save_and_load(CONFIG, overrides=overrides)
        for lm in (model, loaded):
            assert lm._heads["forward_lm"] is lm._heads["backward_lm"]

    @pytest.mark.parametrize("backend", ["fused", "reference"])
    def test_batch_predictions_are_consistent(self, backend):
        # As ModelTestCase.ensure_batch_predictions_are_consistent, with a float32-sized tolerance
        # (1e-6 absolute is one ulp at 1.5: batched matmuls may differ by that much).
        from allennlp.data import Batch

        self.model._contextualizer.backend = backend
        self.model.eval()
        batch = self.model(**Batch(self.instances).as_tensor_dict())
        for index, instance in enumerate(self.instances):
            single = self.model(**Batch([instance]).as_tensor_dict())
            length = int(single["mask"].sum())
            for key in ("lm_embeddings", "noncontextual_token_embeddings"):
                torch.testing.assert_close(
                    single[key][0, :length], batch[key][index, :length], atol=1e-5, rtol=1e-5
                )

    def test_metrics_and_output_shapes(self):
        self.model.eval()
        output = self.model(**self.dataset.as_tensor_dict())
        batch_size, timesteps = output["mask"].shape
        assert output["lm_embeddings"].shape == (batch_size, timesteps, 16)
        assert output["noncontextual_token_embeddings"].shape == (batch_size, timesteps, 16)
        assert torch.isfinite(output["loss"])
        metrics = self.model.get_metrics(reset=True)
        for name in ("forward_loss", "backward_loss", "forward_cosine", "backward_nn_accuracy"):
            assert name in metrics
        assert 0.0 <= metrics["forward_nn_accuracy"] <= 1.0
        assert self.model.get_metrics() == {}

    def test_fasttext_matrix_is_not_trainable_nor_archived(self):
        names = [name for name, _ in self.model.named_parameters()]
        assert not any("fasttext" in name or "_matrix" in name for name in names)
        assert all(tensor.numel() < 10_000 for tensor in self.model.state_dict().values())

    def test_downstream_interface(self):
        overrides = Params.from_file(CONFIG, '{"model.contextualizer.return_all_layers": true}')
        model = Model.from_params(vocab=self.vocab, params=overrides["model"])
        assert model.num_layers() == 3
        model.delete_softmax()
        output = model(**self.dataset.as_tensor_dict())
        assert "loss" not in output
        assert len(output["lm_embeddings"]) == 3
        assert all(layer.shape[-1] == 16 for layer in output["lm_embeddings"])

    def test_separate_target_embedder(self):
        target = {
            "token_embedders": {
                "tokens": {
                    "type": "fasttext",
                    "model_path": str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
                }
            }
        }
        params = Params.from_file(CONFIG, json.dumps({"model.target_embedder": target}))
        model = Model.from_params(vocab=self.vocab, params=params["model"])
        assert model._target_embedder is not None
        output = model(**self.dataset.as_tensor_dict())
        assert torch.isfinite(output["loss"])
        # Same vectors as the inputs here, so the same loss as the default model with equal weights.
        self.model.load_state_dict(model.state_dict())
        model.eval(), self.model.eval()
        torch.testing.assert_close(
            model(**self.dataset.as_tensor_dict())["loss"],
            self.model(**self.dataset.as_tensor_dict())["loss"],
        )

    def test_loss_decreases_on_a_fixed_batch(self):
        first, last = overfit(self.model, self.dataset.as_tensor_dict())
        assert last < 0.8 * first

    def test_archive_loads_with_overridden_fasttext_path(self, tmp_path):
        import shutil

        self.ensure_model_can_train_save_and_load(CONFIG)
        moved = tmp_path / "elsewhere.bin"
        shutil.copy(FIXTURES_ROOT / "fasttext" / "tiny.bin", moved)
        overrides = {
            "model.text_field_embedder.token_embedders.tokens.model_path": str(moved),
            "dataset_reader.token_indexers.tokens.model_path": str(moved),
        }
        archive = load_archive(
            self.TEST_DIR / "save_and_load_test" / "model.tar.gz", overrides=overrides
        )
        assert isinstance(archive.model, ElmoCLanguageModel)
        embedder = archive.model._text_field_embedder._token_embedders["tokens"]
        assert embedder._fasttext.path == moved.resolve()


    @needs_fast_bfloat16
    def test_bfloat16_precision_runs_forward_under_autocast_and_encode_in_float32(self):
        """`precision: "bfloat16"`: `forward` (training and evaluation) runs under CPU
        bfloat16 autocast, so the encoder's products are bfloat16 (the loss moves by a
        bfloat16-sized amount from the float32 model's with the same weights); the loss,
        parameters and gradients stay float32; `encode` (the front doors) runs in float32."""
        overrides = {"model.precision": "bfloat16", "model.contextualizer.return_all_layers": True}
        params = Params.from_file(CONFIG, json.dumps(overrides))
        model = Model.from_params(vocab=self.vocab, params=params["model"])
        model.load_state_dict(self.model.state_dict())
        seen = []

        def record(module, args):
            seen.append(torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu")
                        else torch.float32)  # fmt: skip

        for lm in (model, self.model):
            lm._contextualizer.register_forward_pre_hook(record)
            lm.eval()
        tensors = self.dataset.as_tensor_dict()
        mixed, full = model(**tensors)["loss"], self.model(**tensors)["loss"]
        assert seen == [torch.bfloat16, torch.float32]
        assert mixed.dtype == torch.float32
        assert 1e-5 < abs(mixed.item() - full.item()) / abs(full.item()) < 0.05
        model.train()
        model(**tensors)["loss"].backward()
        assert seen[-1] == torch.bfloat16
        assert all(p.dtype == p.grad.dtype == torch.float32
                   for p in model.parameters() if p.requires_grad)  # fmt: skip
        from allennlp.nn.util import get_text_field_mask

        embeddings = model.text_field_embedder(tensors["tokens"])
        layers = model.encode(embeddings, get_text_field_mask(tensors["tokens"]))
        assert seen[-1] == torch.float32 and all(layer.dtype == torch.float32 for layer in layers)

    @needs_fast_bfloat16
    def test_bfloat16_precision_trains_saves_and_loads(self):
        """`allennlp train` with the setting (on CPU, where AllenNLP's use_amp refuses), the
        archive records it (`describe`, the model card), and the loaded biLM embeds in
        float32."""
        from allennlp_elmo_c import ElmoC, batch_to_ids
        from allennlp_elmo_c.commands.describe import describe_archive
        from allennlp_elmo_c.commands.package import package_model

        overrides = json.dumps({"model.precision": "bfloat16", "trainer.num_epochs": 1})
        model, loaded = self.ensure_model_can_train_save_and_load(CONFIG, overrides=overrides)
        assert model.precision == loaded.precision == "bfloat16"
        archive = str(self.TEST_DIR / "save_and_load_test" / "model.tar.gz")
        assert describe_archive(archive)["training_precision"] == "bfloat16"
        card = (package_model(archive, str(self.TEST_DIR / "packaged")) / "README.md").read_text()
        assert "- precision: bfloat16 mixed precision (" in card
        elmo = ElmoC(archive, 1, dropout=0.0).eval()
        vectors = elmo(batch_to_ids([["the", "council", "met"]], elmo))["elmo_representations"][0]
        assert vectors.dtype == torch.float32 and torch.isfinite(vectors).all()


def test_precision_is_checked():
    from allennlp.common.checks import ConfigurationError
    from allennlp.data import Vocabulary

    params = Params.from_file(str(CONFIG), json.dumps({"model.precision": "float16"}))
    with pytest.raises(ConfigurationError, match="precision must be one of .* ELMO_C_PRECISION"):
        Model.from_params(vocab=Vocabulary(), params=params["model"])


def test_bfloat16_on_a_device_without_it_refuses_training_and_evaluates_in_float32(monkeypatch):
    from allennlp.common.checks import ConfigurationError
    from allennlp.data import Vocabulary

    from allennlp_elmo_c.models import elmo_c
    from tests.helpers import fasttext_ids

    params = Params.from_file(str(CONFIG), json.dumps({"model.precision": "bfloat16"}))
    model = Model.from_params(vocab=Vocabulary(), params=params["model"])
    monkeypatch.setattr(elmo_c, "bfloat16_unsupported", lambda device: "this CPU lacks it")
    tokens = {"tokens": fasttext_ids([["<S>", "the", "council", "met", "</S>"]])}
    model.train()
    with pytest.raises(ConfigurationError, match="this CPU lacks it; set ELMO_C_PRECISION=float32"):
        model(tokens)
    model.eval()
    seen = []
    model._contextualizer.register_forward_pre_hook(
        lambda module, args: seen.append(torch.is_autocast_enabled("cpu"))
    )
    assert torch.isfinite(model(tokens)["loss"]) and seen == [False]


def test_target_ids_key_must_name_a_single_id_indexer():
    from allennlp.common.checks import ConfigurationError
    from allennlp.data import Batch, Vocabulary

    params = Params.from_file(str(CONFIG), json.dumps({"model.target_ids_key": "tokens"}))
    model = Model.from_params(vocab=Vocabulary(), params=params["model"])
    from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer

    reader = LmCorpusReader(
        token_indexers={"tokens": FastTextSubwordsIndexer("tests/fixtures/fasttext/tiny.bin")}
    )
    instance = reader.text_to_instance("a b c")
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(Vocabulary())
    with pytest.raises(ConfigurationError, match="must name a single_id indexer"):
        model(**batch.as_tensor_dict())


def test_a_missing_candidate_list_is_only_needed_for_training(elmo_c_archive, tmp_path, caplog):
    # A candidate list relative to the project (as archives recorded it before #18; loading an
    # archive drops its own list, so it is given as an override here): from another directory
    # the file is missing, and the model still loads and runs.
    import contextlib

    from allennlp.common.checks import ConfigurationError

    from tests.helpers import fasttext_ids, moved_archive

    elmo_c_archive = moved_archive(elmo_c_archive, tmp_path / "old", relative=True)

    tiny = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")
    overrides = {
        "model.text_field_embedder.token_embedders.tokens.model_path": tiny,
        "dataset_reader.token_indexers.tokens.model_path": tiny,
        "model.nearest_neighbour_words": "tests/fixtures/data/lm/candidates.txt",
    }
    with contextlib.chdir(tmp_path):
        model = load_archive(str(elmo_c_archive), overrides=overrides).model
    assert model.candidate_words is None
    assert "nearest_neighbour_words file" in caplog.text
    tokens = {"tokens": fasttext_ids([["<S>", "the", "council", "</S>"]])}
    model.eval()
    assert "loss" in model(tokens)
    model.train()
    with pytest.raises(ConfigurationError, match="nearest_neighbour_words file .* does not exist"):
        model(tokens)
