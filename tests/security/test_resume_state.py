"""A received run's resume state is checked like any received value: its counters are integers
in range and its generator states the tensors torch saves, or `--recover` refuses in one line."""

import math

import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.checkpointer import Checkpointer

from allennlp_elmo_c.training.rng_state import RngStateCallback
from allennlp_elmo_c.training.skip_trained_batches import SkipTrainedBatches
from allennlp_elmo_c.training.tokens_seen import TokensSeen

BAD_COUNTS = [-1, math.nan, 1.5, 2.0, 2**70, True, "3", None]


def one_line(refusal) -> str:
    message = str(refusal.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("key", ["epochs_completed", "batches_in_epoch_completed"])
@pytest.mark.parametrize("value", BAD_COUNTS)
def test_recover_refuses_a_counter_out_of_range(tmp_path, key, value):
    """`--recover` through AllenNLP's checkpointer (the atomic one loads the same way)."""
    torch.save({"weight": torch.ones(2)}, tmp_path / "model_state_e1_b3.th")
    state = {"version": 1, "epochs_completed": 1, "batches_in_epoch_completed": 3, key: value}
    torch.save(state, tmp_path / "training_state_e1_b3.th")
    with pytest.raises(ConfigurationError, match=f"{key} is .*not a count") as refusal:
        Checkpointer(tmp_path).load_checkpoint()
    assert "training_state_e1_b3.th" in one_line(refusal)


class _Trainer:
    def __init__(self, epochs, batches):
        self._start_after_epochs_completed = epochs
        self._start_after_batches_in_epoch_completed = batches
        self.data_loader = self
        self.resumed = None

    def resume(self, epochs, batches):
        self.resumed = (epochs, batches)


@pytest.mark.parametrize("value", BAD_COUNTS[:5])
def test_skip_trained_batches_refuses_a_counter_out_of_range(value):
    with pytest.raises(ConfigurationError, match="batches_in_epoch_completed is"):
        SkipTrainedBatches("run").on_start(_Trainer(1, value))
    trainer = _Trainer(1, 3)
    SkipTrainedBatches("run").on_start(trainer)
    assert trainer.resumed == (1, 3)


@pytest.mark.parametrize("value", BAD_COUNTS[:5])
def test_tokens_seen_refuses_a_count_out_of_range(value):
    with pytest.raises(ConfigurationError, match="tokens_seen: .*tokens is"):
        TokensSeen("run").load_state_dict({"tokens": value})
    counter = TokensSeen("run")
    counter.load_state_dict({"tokens": 12})
    assert counter.tokens == 12


@pytest.mark.parametrize(
    "state", [torch.zeros(3, dtype=torch.uint8), torch.get_rng_state().float(), [1, 2], None]
)
def test_rng_state_refuses_a_state_torch_did_not_save(state):
    with pytest.raises(ConfigurationError, match="CPU generator state is") as refusal:
        RngStateCallback("run").load_state_dict({"torch": state})
    one_line(refusal)
    saved = RngStateCallback("run").state_dict()
    first = torch.rand(3)
    RngStateCallback("run").load_state_dict(saved)
    assert torch.equal(torch.rand(3), first)
