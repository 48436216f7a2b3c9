"""
Numerics of the whole ELMo-C model (reader -> fastText -> biLM -> head -> loss): no NaN/inf in the
loss or any gradient for zero vectors, huge prediction norms, or fp16/bf16 autocast on CPU; and
training stops with a clear error when a loss does go non-finite.
"""

import json

import pytest
import torch

from allennlp.common import Params
from allennlp.data import Batch, Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.modules.output_heads.losses import continuous_loss_names
from tests import FIXTURES_ROOT
from tests.helpers import train_config

CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"
FASTTEXT = FIXTURES_ROOT / "fasttext" / "tiny.bin"
LOSSES = continuous_loss_names()


def build_model(loss: str, backend: str = "fused") -> Model:
    params = Params.from_file(
        str(CONFIG),
        json.dumps({"model.output_head.loss": loss, "model.contextualizer.backend": backend}),
    )
    params["model"].pop("nearest_neighbour_words")
    return Model.from_params(vocab=Vocabulary(), params=params["model"])


def batch(sentences):
    reader = LmCorpusReader(token_indexers={"tokens": FastTextSubwordsIndexer(str(FASTTEXT))})
    instances = [reader.text_to_instance(sentence) for sentence in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    data = Batch(instances)
    data.index_instances(Vocabulary())
    return data.as_tensor_dict()


# "" has no character n-gram of fastText's minimum length and is not in the vocabulary: its
# fastText vector is exactly zero, as input and as target.
SENTENCES = [
    ["the", "", "cat", "", ""],
    ["", ""],
    ["a", "dog", "barked", "at", "the", "mailman", "today"],
]


def assert_finite_loss_and_gradients(model, output):
    assert torch.isfinite(output["loss"]), output["loss"]
    output["loss"].backward()
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            assert parameter.grad is not None, name
            assert torch.isfinite(parameter.grad).all(), name


def test_empty_string_token_has_an_all_zero_fasttext_vector():
    tensors = batch(SENTENCES)
    model = build_model("cosine")
    embeddings = model._text_field_embedder(tensors["tokens"])
    assert torch.equal(embeddings[1, 1:3], torch.zeros_like(embeddings[1, 1:3]))


@pytest.mark.parametrize("backend", ["fused", "reference"])
@pytest.mark.parametrize("loss", LOSSES)
def test_zero_vectors_as_inputs_and_targets(loss, backend):
    torch.manual_seed(0)
    model = build_model(loss, backend)
    model.train()
    assert_finite_loss_and_gradients(model, model(**batch(SENTENCES)))


@pytest.mark.parametrize("loss", LOSSES)
def test_zero_predictions(loss):
    # With the head's projection zeroed every prediction has norm 0 (vMF: kappa = 0).
    torch.manual_seed(0)
    model = build_model(loss)
    with torch.no_grad():
        for head in model._heads.values():
            head.projection.weight.zero_()
            head.projection.bias.zero_()
    output = model(**batch(SENTENCES))
    assert_finite_loss_and_gradients(model, output)
    assert torch.equal(
        output["forward_predictions"], torch.zeros_like(output["forward_predictions"])
    )


@pytest.mark.parametrize("scale", [1e3, 1e6])
@pytest.mark.parametrize("loss", ["cosine", "vmf", "in_batch_softmax"])
def test_huge_prediction_norms(loss, scale):
    # vMF at kappa ~ 1e7, cosine and in_batch_softmax at norms ~1e8 (l2 is unbounded by design:
    # ||p - t||^2).
    torch.manual_seed(0)
    model = build_model(loss)
    with torch.no_grad():
        for head in model._heads.values():
            head.projection.weight.mul_(scale)
            head.projection.bias.fill_(scale)
    output = model(**batch(SENTENCES))
    norms = output["forward_predictions"].norm(dim=-1)
    assert norms.max() > scale
    assert_finite_loss_and_gradients(model, output)


def autocast_dtypes():
    dtypes = []
    for dtype in (torch.bfloat16, torch.float16):
        try:
            with torch.autocast("cpu", dtype=dtype):
                torch.nn.Linear(2, 2)(torch.ones(1, 2))
            dtypes.append(dtype)
        except (RuntimeError, AssertionError):  # this torch build has no CPU autocast for it
            pass
    return dtypes


@pytest.mark.parametrize("backend", ["fused", "reference"])
@pytest.mark.parametrize("dtype", autocast_dtypes())
@pytest.mark.parametrize("loss", LOSSES)
def test_cpu_autocast_is_finite_and_close_to_float32(loss, dtype, backend):
    torch.manual_seed(0)
    model = build_model(loss, backend)
    model.eval()  # no dropout: the two precisions see the same network
    tensors = batch(SENTENCES)
    reference = model(**tensors)["loss"].item()
    with torch.autocast("cpu", dtype=dtype):
        output = model(**tensors)
    assert output["loss"].dtype == torch.float32  # the losses run in float32
    assert_finite_loss_and_gradients(model, output)
    # bf16 keeps 8 bits of mantissa: a few percent on the loss of a random network.
    assert output["loss"].item() == pytest.approx(reference, rel=0.05, abs=0.02)


@pytest.mark.parametrize("dtype", autocast_dtypes())
def test_autocast_with_large_targets_does_not_overflow(dtype):
    # Squared norms of 16-d vectors with entries ~300 exceed float16's 65504.
    from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead

    head = ContinuousOutputHead(8, 16, loss="cosine")
    hidden = torch.randn(2, 3, 8) * 300
    targets = torch.randn(2, 3, 16) * 300
    mask = torch.ones(2, 3, dtype=torch.bool)
    with torch.autocast("cpu", dtype=dtype):
        result = head(hidden, mask, target_embeddings=targets)
    assert torch.isfinite(result["loss"])
    expected = head(hidden, mask, target_embeddings=targets)["loss"]
    assert result["loss"].item() == pytest.approx(expected.item(), rel=0.05)


def test_non_finite_loss_in_training_is_a_clear_error():
    model = build_model("cosine")
    with torch.no_grad():
        model._heads["backward_lm"].projection.bias.fill_(float("nan"))
    model.train()
    with pytest.raises(ValueError, match="backward LM loss is nan"):
        model(**batch(SENTENCES))
    model.eval()  # evaluation reports it instead (e.g. to inspect a broken checkpoint)
    assert torch.isnan(model(**batch(SENTENCES))["loss"])


def test_allennlp_train_stops_on_an_infinite_loss(tmp_path):
    # An l2 head whose predictions are ~1e19: ||p - t||^2 overflows float32 to inf at the first
    # batch. AllenNLP's trainer checks for NaN only; the model stops the run. (9e18: jsonnet
    # writes integral floats as integers, and torch's initializers take at most int64.)
    overrides = {
        "model.output_head.loss": "l2",
        "model.initializer": {
            "regexes": [
                [".*_heads.*projection.bias", {"type": "constant", "val": 9e18}],
                [".*_heads.*projection.weight", {"type": "constant", "val": 9e18}],
            ]
        },
    }
    with pytest.raises(ValueError, match="LM loss is inf"):
        train_config(CONFIG, tmp_path / "run", json.dumps(overrides))
    assert not (tmp_path / "run" / "model.tar.gz").exists()
