import json

import pytest
import safetensors.torch
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model

from allennlp_elmo_c.received.limits import BUDGET_FACTOR, BUDGET_SLACK
from allennlp_elmo_c.received.allocation_budget import allocation_budget, budget_of
from allennlp_elmo_c.received.received_weights import held_total, weights_table
from tests import FIXTURES_ROOT, PROJECT_ROOT


def test_a_creation_past_the_budget_is_refused_before_it_runs():
    sizes = [("model.contextualizer.cell_size", 1 << 30), ("model.a", 3)]
    with pytest.raises(ConfigurationError) as error:
        with allocation_budget(1 << 20, "received", sizes):
            torch.nn.Linear(4, 4)
            torch.empty(1 << 30, 8)  # 32 GiB: refused before it is asked of the allocator
    message = str(error.value)
    assert message.startswith("received: building the model would allocate more than 1,048,576 bytes")
    assert "(largest: model.contextualizer.cell_size = 1073741824, model.a = 3)" in message
    assert "Refused before allocating" in message


@pytest.mark.parametrize(
    "create",
    [
        lambda: torch.FloatTensor(1 << 12, 1 << 10),  # the legacy constructor (AllenNLP's Embedding)
        lambda: torch.zeros(8).new_empty(1 << 22),
        lambda: torch.randn(1 << 22),
        lambda: torch.zeros(1 << 11).unsqueeze(0) + torch.zeros(1 << 11).unsqueeze(1),  # counted after
    ],
)
def test_every_way_of_creating_a_tensor_counts(create):
    with pytest.raises(ConfigurationError):
        with allocation_budget(1 << 20, "received"):
            create()


def test_views_in_place_operations_and_the_meta_device_cost_nothing():
    with allocation_budget(1 << 20, "received"):
        weight = torch.empty(1 << 17)  # 512 KB
        for _ in range(10):
            weight.view(-1, 2).t()
            weight.normal_()
            weight[: 1 << 10].zero_()
        with torch.device("meta"):
            torch.nn.Linear(1 << 20, 1 << 20)


@pytest.mark.parametrize("name", ["model.safetensors", "weights.th"])
def test_the_budget_counts_what_the_weights_hold(name, tmp_path):
    """Only non-zero pages count: an all-zero tensor (or a sparse one, which reads as zeros)
    buys nothing."""
    state = {"a": torch.randn(3, 5), "b": torch.randn(7, dtype=torch.float64),
             "c": torch.zeros(2, dtype=torch.int8), "zeros": torch.zeros(1 << 16)}  # fmt: skip
    path = tmp_path / name
    if name.endswith(".safetensors"):
        safetensors.torch.save_file(state, str(path))
    else:
        torch.save(state, path)
    table = weights_table(path, name)
    assert {key: (tuple(t.shape), t.bytes) for key, t in table.items()} == {
        "a": ((3, 5), 60), "b": ((7,), 56), "c": ((2,), 2), "zeros": ((1 << 16,), 1 << 18)
    }
    assert table["zeros"].held == 0 and table["c"].held == 0
    assert held_total(table) == 60 + 56
    assert budget_of(held_total(table)) == BUDGET_FACTOR * 116 + BUDGET_SLACK


def test_a_legitimate_biLM_builds_well_within_the_budget_of_its_weights(monkeypatch):
    """The fixture biLM's config, built with the budget of its own weights: building allocates a
    few times the weights (each parameter, and its initialisation's temporaries)."""
    import _jsonnet

    monkeypatch.chdir(PROJECT_ROOT)  # the fixture config's paths are relative to it
    config = json.loads(_jsonnet.evaluate_file(str(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet")))
    config["model"].pop("nearest_neighbour_words")
    model = Model.from_params(vocab=Vocabulary(), params=Params(json.loads(json.dumps(config["model"]))))
    stored = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    with allocation_budget(BUDGET_FACTOR * stored, "received"):
        Model.from_params(vocab=Vocabulary(), params=Params(json.loads(json.dumps(config["model"]))))


def test_a_frozen_fasttext_output_embedding_is_allowed_what_its_vocabulary_and_bin_fix(monkeypatch):
    """FIXED's frozen output embedding is rebuilt from the vocabulary and the .bin, not stored in
    the weights: with 10,000 target words (as many as the .bin stores rows) it is sixteen times
    what the head's weights hold, and it builds within their budget because `allow` adds the
    rows' bytes; without `allow` it does not."""
    from allennlp_elmo_c.modules.output_heads import softmax
    from allennlp_elmo_c.received import allocation_budget as module

    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"word{i}" for i in range(10_000)], "lm_targets")

    def head():
        return softmax.SoftmaxOutputHead(16, 16, vocab, vocab_namespace="lm_targets",
                                         output_embedding_fasttext=str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
                                         freeze_output_embedding=True)  # fmt: skip

    stored = sum(t.numel() * t.element_size() for t in head().state_dict().values())
    frozen = head().output_embedding
    assert frozen.numel() * frozen.element_size() > 4 * stored
    with allocation_budget(BUDGET_FACTOR * stored, "received"):
        head()
    monkeypatch.setattr(softmax, "allow", lambda size: None)
    with pytest.raises(ConfigurationError, match="would allocate more than"):
        with allocation_budget(BUDGET_FACTOR * stored, "received"):
            head()
    assert module._ENFORCED == []
