import numpy as np
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import Embedding

from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.softmax import SoftmaxOutputHead
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder
from tests import FIXTURES_ROOT
from tests.helpers import INPUT, NAMESPACE, WORDS, batch, embedder, reference_nll, vocabulary

TINY_BIN = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")


def head(vocab=None, seed=0, **kwargs) -> SoftmaxOutputHead:
    torch.manual_seed(seed)
    return SoftmaxOutputHead(INPUT, 16, vocab or vocabulary(), vocab_namespace=NAMESPACE, **kwargs)


def test_loss_is_the_masked_negative_log_likelihood_of_a_full_softmax():
    softmax = head()
    with torch.no_grad():
        softmax.output_bias.normal_()
    hidden, targets, mask = batch(softmax.num_words)
    result = softmax(hidden, mask, target_ids=targets)
    weight = softmax.output_embedding.detach().numpy().astype(np.float64)
    bias = softmax.output_bias.detach().numpy().astype(np.float64)
    states = hidden[mask].numpy().astype(np.float64)
    expected = reference_nll(states @ weight.T + bias, targets[mask].numpy())
    assert result["loss"].item() == pytest.approx(expected, rel=1e-5)
    assert result["count"].item() == int(mask.sum())
    assert softmax.logits(hidden[mask]).shape == (int(mask.sum()), len(WORDS) + 2)
    # Padded positions (their states, their target ids) do not count.
    hidden[~mask] = 1e4
    targets[~mask] = 0
    assert softmax(hidden, mask, target_ids=targets)["loss"].item() == pytest.approx(expected, 1e-5)


def test_built_by_name_with_the_model_extras_and_reports_perplexity():
    vocab = vocabulary()
    built = OutputHead.from_params(
        Params({"type": "softmax", "vocab_namespace": NAMESPACE}),
        input_dim=INPUT,
        target_dim=16,
        vocab=vocab,
        text_field_embedder=embedder(),
    )
    assert isinstance(built, SoftmaxOutputHead)
    assert built.needs_target_ids and built.reports_perplexity
    assert built.output_embedding.shape == (len(WORDS) + 2, INPUT) and built.projection is None
    assert built.output_bias.shape == (len(WORDS) + 2,)


def test_tied_output_embedding_is_the_input_embedding_and_trains_with_it():
    text_field_embedder = embedder()
    input_weight = text_field_embedder._token_embedders["tokens"].weight
    softmax = head(text_field_embedder=text_field_embedder, tie_input_embedding=True)
    assert softmax.output_embedding is input_weight
    assert softmax.output_embedding.data_ptr() == input_weight.data_ptr()
    # One parameter, not two: an optimizer over both modules sees it once.
    both = torch.nn.ModuleList([text_field_embedder, softmax])
    assert sum(p is input_weight for p in both.parameters()) == 1
    hidden, targets, mask = batch(softmax.num_words)
    softmax(hidden, mask, target_ids=targets)["loss"].backward()
    assert input_weight.grad is not None and input_weight.grad.abs().sum() > 0
    before = input_weight.detach().clone()
    torch.optim.SGD(both.parameters(), lr=0.1).step()
    assert not torch.equal(input_weight.detach(), before)
    assert torch.equal(softmax.output_embedding.detach(), input_weight.detach())


@pytest.mark.parametrize(
    "make_embedder, message",
    [
        (lambda: embedder(dim=INPUT + 1), "must be"),
        (lambda: embedder(num_embeddings=len(WORDS) + 5), "must be"),
        (lambda: None, "exactly one token embedder"),
        (
            lambda: BasicTextFieldEmbedder(
                {"a": Embedding(INPUT, num_embeddings=10), "b": Embedding(INPUT, num_embeddings=10)}
            ),
            "exactly one token embedder",
        ),
        (
            lambda: BasicTextFieldEmbedder({"tokens": FastTextEmbedder(TINY_BIN)}),
            "no weight matrix",
        ),
    ],
)
def test_tying_to_an_unsuitable_input_embedder_is_a_configuration_error(make_embedder, message):
    with pytest.raises(ConfigurationError, match=message):
        head(text_field_embedder=make_embedder(), tie_input_embedding=True)


@pytest.mark.parametrize(
    "options", [{"freeze_output_embedding": True}, {"output_embedding_fasttext": TINY_BIN}]
)
def test_tying_excludes_freezing_and_fasttext_initialisation(options):
    with pytest.raises(ConfigurationError, match="tied output embedding"):
        head(text_field_embedder=embedder(), tie_input_embedding=True, **options)


def test_frozen_output_embedding_is_unchanged_by_training_while_the_bias_trains():
    softmax = head(freeze_output_embedding=True)
    assert not softmax.output_embedding.requires_grad
    embedding_before = softmax.output_embedding.detach().clone()
    bias_before = softmax.output_bias.detach().clone()
    optimizer = torch.optim.Adam([p for p in softmax.parameters() if p.requires_grad], lr=0.1)
    hidden, targets, mask = batch(softmax.num_words)
    softmax(hidden, mask, target_ids=targets)["loss"].backward()
    optimizer.step()
    assert softmax.output_embedding.grad is None
    assert torch.equal(softmax.output_embedding.detach(), embedding_before)
    assert not torch.equal(softmax.output_bias.detach(), bias_before)


def test_fasttext_initialisation_uses_each_words_fasttext_vector():
    vocab = vocabulary()
    softmax = head(vocab, output_embedding_fasttext=TINY_BIN)
    fasttext = FastTextBin.load(TINY_BIN)
    rows = softmax.output_embedding.detach()
    assert rows.shape == (len(WORDS) + 2, fasttext.dim)
    for word in WORDS:  # in- and out-of-fastText-vocabulary words alike ("zzyzx")
        expected = torch.from_numpy(fasttext.word_vector(word))
        torch.testing.assert_close(rows[vocab.get_token_index(word, NAMESPACE)], expected)
    assert torch.count_nonzero(rows[0]) == 0  # padding: never a target
    torch.testing.assert_close(rows[1], rows[2:].mean(0))  # OOV: the average word
    assert softmax.output_embedding.requires_grad  # initialised, not frozen
    # The hidden states (6-d) are projected into the 16-d fastText space.
    assert softmax.projection.in_features == INPUT and softmax.projection.out_features == 16
    hidden, targets, mask = batch(softmax.num_words)
    projected = softmax.projection(hidden[mask]).detach().numpy().astype(np.float64)
    logits = projected @ rows.numpy().T.astype(np.float64)  # bias is zero at initialisation
    expected = reference_nll(logits, targets[mask].numpy())
    assert softmax(hidden, mask, target_ids=targets)["loss"].item() == pytest.approx(expected, 1e-5)


def test_fasttext_of_the_input_size_needs_no_projection():
    softmax = SoftmaxOutputHead(
        16, 16, vocabulary(), vocab_namespace=NAMESPACE, output_embedding_fasttext=TINY_BIN
    )
    assert softmax.projection is None


def test_missing_target_ids_and_empty_namespace_are_errors():
    softmax = head()
    hidden, targets, mask = batch(softmax.num_words)
    with pytest.raises(ConfigurationError, match="target_ids_key"):
        softmax(hidden, mask)
    empty = Vocabulary(non_padded_namespaces=[NAMESPACE])
    with pytest.raises(ConfigurationError, match="empty"):
        SoftmaxOutputHead(INPUT, 16, empty, vocab_namespace=NAMESPACE)


def test_model_without_target_ids_key_is_a_configuration_error():
    params = Params.from_file(str(FIXTURES_ROOT / "configs" / "elmo_softmax_tiny.jsonnet"))
    model_params = params.pop("model")
    model_params.pop("target_ids_key")
    with pytest.raises(ConfigurationError, match="target_ids_key"):
        Model.from_params(vocab=vocabulary(), params=model_params)


def test_autocast_loss_is_float32_and_close_to_full_precision():
    softmax = head()
    hidden, targets, mask = batch(softmax.num_words)
    full = softmax(hidden, mask, target_ids=targets)["loss"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = softmax(hidden, mask, target_ids=targets)["loss"]
    assert low.dtype == torch.float32
    assert low.item() == pytest.approx(full.item(), rel=2e-2)


def test_validation_loss_is_scored_in_chunks_with_the_same_value(monkeypatch):
    from allennlp_elmo_c.modules.output_heads import vocabulary_head

    model = head()
    hidden = torch.randn(37, INPUT)
    targets = torch.randint(0, model.num_words, (37,))
    with torch.no_grad():
        whole = model.loss(hidden, targets)
        calls = []
        original = model.full_loss
        monkeypatch.setattr(model, "full_loss", lambda h, y: calls.append(len(h)) or original(h, y))
        monkeypatch.setattr(vocabulary_head, "EVAL_LOGITS_PER_CHUNK", 10 * model.num_words)
        chunked = model.loss(hidden, targets)
    assert calls == [10, 10, 10, 7]
    torch.testing.assert_close(chunked, whole)
    reference = torch.nn.functional.cross_entropy(model.logits(hidden), targets, reduction="sum")
    torch.testing.assert_close(chunked, reference.detach())
