"""
`training_config/elmo_slim.jsonnet`: elmo_c.jsonnet with only the output layer replaced by a
`slim_softmax`; it trains one epoch at a tiny size on the fixture corpus, and at the paper's
size (800K-word vocabulary) it builds, runs and has 83.9M trainable parameters.
"""

import json
import math

import torch

from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.modules.output_heads.slim_softmax import SlimSoftmaxOutputHead
from tests import PROJECT_ROOT
from tests.helpers import (
    ENCODER_PARAMETERS,
    PAPER_VOCABULARY,
    SENTENCES,
    TINY_SIZES,
    skip_orthogonal_init,
    train_config,
    trainable,
    without_output_layer,
)

CONFIG = PROJECT_ROOT / "training_config" / "elmo_slim.jsonnet"
K, M = 8, 50_000


def test_config_is_elmo_c_with_a_slim_output_layer(paper_environment):
    config = Params.from_file(str(CONFIG)).as_dict()
    elmo_c = Params.from_file(str(PROJECT_ROOT / "training_config" / "elmo_c.jsonnet")).as_dict()
    head = config["model"]["output_head"]
    assert head["type"] == "slim_softmax" and head["vocab_namespace"] == "lm_targets"
    assert (head["num_subvectors"], head["pool_size"]) == (K, M)
    assert config["model"]["target_ids_key"] == "targets"
    assert config["vocabulary"]["min_count"] == {"lm_targets": 3}
    assert without_output_layer(config) == without_output_layer(elmo_c)


def test_trains_one_epoch_at_a_tiny_size(paper_environment, tmp_path):
    overrides = {
        **TINY_SIZES,
        "model.output_head.num_subvectors": 2,
        "model.output_head.pool_size": 32,  # 2 sub-pools of 16
        "model.output_head.positions_per_chunk": 32,
    }
    metrics = train_config(CONFIG, tmp_path / "run", json.dumps(overrides))
    for direction in ("forward", "backward"):
        assert math.isfinite(metrics[f"validation_{direction}_perplexity"])
        assert metrics[f"training_{direction}_perplexity"] > 1
    assert (tmp_path / "run" / "model.tar.gz").is_file()


def test_paper_size_builds_runs_and_counts(fasttext_300d, monkeypatch):
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(fasttext_300d))
    monkeypatch.setenv("ELMO_C_TRAIN_DATA", str(SENTENCES))
    monkeypatch.setenv("ELMO_C_VALIDATION_DATA", str(SENTENCES))
    skip_orthogonal_init(monkeypatch)
    params = Params.from_file(str(CONFIG))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(str(SENTENCES)))[:2]
    # The fixture's words first, then made-up ones up to the paper's 800K words.
    vocab = Vocabulary.from_instances(instances)
    words = vocab.get_vocab_size("lm_targets") - 2
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(PAPER_VOCABULARY - words)], "lm_targets")
    num_words = PAPER_VOCABULARY + 2  # + @@PADDING@@, @@UNKNOWN@@
    assert vocab.get_vocab_size("lm_targets") == num_words
    torch.manual_seed(0)
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    head = model._heads["forward_lm"]
    assert isinstance(head, SlimSoftmaxOutputHead) and head is not model._heads["backward_lm"]
    assert head.table.assignment.shape == (num_words, K)
    # M = 50,000 sub-vectors in all: K = 8 sub-pools of M / K = 6,250 sub-vectors of 64. A head
    # has M * 512 / K of them, as it had with one pool of M shared by all positions (the
    # sub-pools split the same M sub-vectors by position). The total was 83,876,356 before the
    # encoder's input projection got its bias (2 x 512 more, in ENCODER_PARAMETERS).
    assert head.table.pool.shape == (K, M // K, 512 // K)
    slim_head = M * 512 // K + num_words  # pool + biases
    assert slim_head == 4_000_002
    assert trainable(model) == ENCODER_PARAMETERS + 2 * slim_head == 83_877_380
    full_head = num_words * (512 + 1)  # a full 512 x 800K softmax with biases
    assert full_head == 410_401_026 and full_head / slim_head > 100
    batch = Batch(instances)
    batch.index_instances(vocab)
    model.eval()
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    assert torch.isfinite(output["loss"])
    # Untrained, the loss is near that of a uniform guess over the vocabulary (log V = 13.6 nats;
    # random logits of variance s^2 add about s^2 / 2).
    assert abs(output["forward_loss"].item() - math.log(num_words)) < 5.0
