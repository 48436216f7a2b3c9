"""
The closed-vocabulary baselines: every head trains, saves and loads in the `elmo_c` model
(tiny fixture configs); `training_config/elmo_{a,sampled,fixed}.jsonnet` differ from
`elmo_c.jsonnet` only in the output layer, train one epoch on the fixture corpus at tiny sizes,
and have the expected number of trainable parameters at the paper's size.
"""

import json
from collections import Counter
import math

import pytest
import torch

from allennlp.common import Params
from allennlp.common.testing import ModelTestCase
from allennlp.data import Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.modules.output_heads.sampled_softmax import SampledSoftmaxOutputHead
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import (
    ENCODER_PARAMETERS,
    PAPER_VOCABULARY,
    TINY_SIZES,
    skip_orthogonal_init,
    train_config,
    trainable,
    without_output_layer,
)

TINY_CONFIGS = {name: FIXTURES_ROOT / "configs" / f"elmo_{name}_tiny.jsonnet" for name in
                ("softmax", "sampled", "fixed", "a")}  # fmt: skip
SENTENCES = FIXTURES_ROOT / "data" / "lm" / "sentences.txt"
TINY_BIN = FIXTURES_ROOT / "fasttext" / "tiny.bin"
PAPER_CONFIGS = {name: PROJECT_ROOT / "training_config" / f"elmo_{name}.jsonnet" for name in
                 ("a", "sampled", "fixed")}  # fmt: skip


def adaptive_parameters(num_words: int, cutoffs, dim: int = 512, div: float = 4.0) -> int:
    """AdaptiveLogSoftmaxWithLoss without head bias: head (shortlist + clusters) x dim, then per
    tail cluster i a dim x dim/div^(i+1) projection and a dim/div^(i+1) x cluster-size output."""
    total = dim * (cutoffs[0] + len(cutoffs))
    for i, (start, end) in enumerate(zip(cutoffs, cutoffs[1:] + [num_words])):
        hidden = int(dim // div ** (i + 1))
        total += dim * hidden + hidden * (end - start)
    return total


class TestVocabularyHeadsInTheModel(ModelTestCase):
    @pytest.mark.parametrize("name", sorted(TINY_CONFIGS))
    def test_train_save_and_load(self, name):
        self.set_up_model(TINY_CONFIGS[name], SENTENCES)
        model, _ = self.ensure_model_can_train_save_and_load(
            TINY_CONFIGS[name], overrides=json.dumps({"trainer.num_epochs": 1})
        )
        # Validation perplexity is exp(mean negative log-likelihood) of the full distribution.
        model.get_metrics(reset=True)
        model.eval()
        self.model = model
        output = model(**self.dataset.as_tensor_dict())
        metrics = model.get_metrics(reset=True)
        for direction in ("forward", "backward"):
            assert metrics[f"{direction}_perplexity"] == pytest.approx(
                math.exp(metrics[f"{direction}_loss"]), rel=1e-6
            )
            assert metrics[f"{direction}_loss"] == pytest.approx(
                output[f"{direction}_loss"].item(), rel=1e-5
            )
            assert 1 < metrics[f"{direction}_perplexity"] < math.inf

    def test_fixed_head_keeps_the_fasttext_output_embedding_frozen(self):
        self.set_up_model(TINY_CONFIGS["fixed"], SENTENCES)
        heads = [self.model._heads[f"{d}_lm"] for d in ("forward", "backward")]
        assert all(isinstance(head, SampledSoftmaxOutputHead) for head in heads)
        assert all(not head.output_embedding.requires_grad for head in heads)
        assert heads[0].num_samples == 20 and heads[0].output_embedding.shape[1] == 16
        assert heads[0].output_embedding is not heads[1].output_embedding  # one per direction
        # Not in the weights (it is rebuilt from the .bin): the reloaded model has it all the same.
        assert "_heads.forward_lm.output_embedding" not in self.model.state_dict()
        _, loaded = self.ensure_model_can_train_save_and_load(
            TINY_CONFIGS["fixed"], overrides=json.dumps({"trainer.num_epochs": 1})
        )
        from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin

        table = loaded._heads["forward_lm"].output_embedding
        fasttext = FastTextBin.load(str(TINY_BIN))
        for word, index in loaded.vocab.get_token_to_index_vocabulary("lm_targets").items():
            if index > 1:  # not padding / OOV
                expected = torch.from_numpy(fasttext.word_vector(word))
                torch.testing.assert_close(table[index], expected)


@pytest.mark.parametrize("name", sorted(PAPER_CONFIGS))
def test_paper_config_is_elmo_c_with_another_output_layer(name, paper_environment):
    config = Params.from_file(str(PAPER_CONFIGS[name])).as_dict()
    elmo_c = Params.from_file(str(PROJECT_ROOT / "training_config" / "elmo_c.jsonnet")).as_dict()
    assert config["model"]["target_ids_key"] == "targets"
    assert config["dataset_reader"]["token_indexers"]["targets"]["namespace"] == "lm_targets"
    assert config["model"]["output_head"]["vocab_namespace"] == "lm_targets"
    assert config["vocabulary"]["min_count"] == {"lm_targets": 3}
    assert without_output_layer(config) == without_output_layer(elmo_c)


HEAD_SIZES = {"a": {"model.output_head.cutoffs": [20, 60], "model.output_head.div_value": 2.0}}


@pytest.mark.parametrize("name", sorted(PAPER_CONFIGS))
def test_paper_config_trains_one_epoch_at_a_tiny_size(name, paper_environment, tmp_path):
    overrides = {**TINY_SIZES, **HEAD_SIZES.get(name, {})}
    metrics = train_config(PAPER_CONFIGS[name], tmp_path / "run", json.dumps(overrides))
    for direction in ("forward", "backward"):
        assert math.isfinite(metrics[f"validation_{direction}_perplexity"])
    assert (tmp_path / "run" / "model.tar.gz").is_file()
    # The saved vocabulary (OOV first, padding implicit) is sorted by decreasing count.
    words = (tmp_path / "run" / "vocabulary" / "lm_targets.txt").read_text().split()
    lines = SENTENCES.read_text().splitlines()
    counts = Counter(word for line in lines for word in line.split())
    counts["<S>"] = counts["</S>"] = len([line for line in lines if line.strip()])
    assert words[0] == "@@UNKNOWN@@" and sorted(words[1:]) == sorted(counts)
    assert [counts[word] for word in words[1:]] == sorted(counts.values(), reverse=True)


def paper_model(name: str, num_words: int, fasttext_300d, monkeypatch, device: str) -> Model:
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(fasttext_300d))
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(SENTENCES))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(SENTENCES))
    skip_orthogonal_init(monkeypatch)
    params = Params.from_file(str(PAPER_CONFIGS[name]))
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(num_words)], "lm_targets")
    # On the meta device parameters have shapes but no storage: an 800K-word softmax costs
    # nothing to count.
    with torch.device(device):
        return Model.from_params(vocab=vocab, params=params.pop("model"))


def test_encoder_parameters():
    assert ENCODER_PARAMETERS == 75_877_376


def test_elmo_a_at_the_paper_size(fasttext_300d, monkeypatch):
    model = paper_model("a", PAPER_VOCABULARY, fasttext_300d, monkeypatch, "meta")
    size = PAPER_VOCABULARY + 2
    expected = ENCODER_PARAMETERS + 2 * adaptive_parameters(size, [60000, 100000, 640000])
    assert trainable(model) == expected == 184_852_512
    assert abs(expected - 196e6) / 196e6 < 0.06  # the paper's ELMo-A: 196M


def test_elmo_sampled_at_the_paper_size(fasttext_300d, monkeypatch):
    model = paper_model("sampled", PAPER_VOCABULARY, fasttext_300d, monkeypatch, "meta")
    softmax = (PAPER_VOCABULARY + 2) * (512 + 1)  # output embedding and bias
    assert model._heads["forward_lm"].num_samples == 8192
    # One softmax shared by both directions, as ELMo's.
    assert model._heads["forward_lm"] is model._heads["backward_lm"]
    assert trainable(model) == ENCODER_PARAMETERS + softmax == 486_278_402


def test_elmo_fixed_trains_only_bias_and_projection(fasttext_300d, monkeypatch):
    # Built for real (its output embedding is read from the .bin) at a small vocabulary: the
    # trainable count depends on the vocabulary only through the biases.
    num_words = 2_000
    model = paper_model("fixed", num_words, fasttext_300d, monkeypatch, "cpu")
    # One head shared by both directions (elmo_sampled's): bias, projection into fastText space.
    head = (num_words + 2) + (512 * 300 + 300)
    assert trainable(model) == ENCODER_PARAMETERS + head
    assert not any(not p.requires_grad for p in model.parameters())
    # The frozen fastText table is a buffer rebuilt from the .bin, not saved with the weights.
    table = model._heads["forward_lm"].output_embedding
    assert table.shape == (num_words + 2, 300)
    assert not any(name.endswith("output_embedding") for name in model.state_dict())
    at_paper_size = ENCODER_PARAMETERS + (PAPER_VOCABULARY + 2) + (512 * 300 + 300)
    assert at_paper_size == 76_831_278
