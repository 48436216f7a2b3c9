import json
import time

import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Instance, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import SingleIdTokenIndexer
from allennlp.data.tokenizers import Token
from allennlp.models import Model
from allennlp.nn.util import get_text_field_mask
from allennlp.training import GradientDescentTrainer

from allennlp_elmo_c.training.step_phases import RESULT_FILE, StepPhases

FORWARD_SLEEP, BACKWARD_SLEEP, OPTIMIZER_SLEEP = 0.03, 0.05, 0.02


class _SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(BACKWARD_SLEEP)
        return grad


class _Slow(torch.nn.Module):
    """Sleeps FORWARD_SLEEP in its forward and BACKWARD_SLEEP in its backward."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(FORWARD_SLEEP)
        return _SlowBackward.apply(self.linear(x))


class _Toy(Model):
    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        self.embed = torch.nn.Embedding(vocab.get_vocab_size("tokens"), 4)
        self.slow = _Slow()
        self.keep = torch.nn.Dropout(0.0)  # returns its input tensor itself
        self.heads = torch.nn.ModuleDict({"forward_lm": torch.nn.Linear(4, 1)})  # indexed, not called

    def forward(self, tokens):
        mask = get_text_field_mask(tokens)
        hidden = self.keep(self.slow(self.embed(tokens["tokens"]["tokens"])))
        return {"loss": (self.heads["forward_lm"](hidden).squeeze(-1) * mask).sum()}


class _SlowSGD(torch.optim.SGD):
    def step(self, closure=None):
        time.sleep(OPTIMIZER_SLEEP)
        return super().step(closure)


def _train(tmp_path, callback, **trainer_options):
    indexers = {"tokens": SingleIdTokenIndexer()}
    instances = [Instance({"tokens": TextField([Token(w) for w in "a b c d".split()[: n + 1]],
                                               indexers)})
                 for n in range(4)] * 2  # fmt: skip
    vocab = Vocabulary.from_instances(instances)
    loader = SimpleDataLoader(instances, batch_size=2, vocab=vocab)
    model = _Toy(vocab)
    trainer = GradientDescentTrainer(
        model, _SlowSGD(model.parameters(), lr=0.01), loader, num_epochs=2,
        serialization_dir=str(tmp_path), callbacks=[callback], **trainer_options,
    )  # fmt: skip
    trainer.train()


def test_each_phase_gets_the_time_spent_in_it(tmp_path):
    """Known sleeps in a submodule's forward, its backward and the optimizer step land in their
    phases (a module of a ModuleDict is a part of its own), and the phases add up to the
    steps."""
    _train(tmp_path, StepPhases(str(tmp_path), skip=2, batches=5))
    result = json.loads((tmp_path / RESULT_FILE).read_text())
    phases = result["mean_seconds"]
    assert result["batches"] == 5
    assert FORWARD_SLEEP <= phases["forward slow"] < FORWARD_SLEEP + 0.02
    assert BACKWARD_SLEEP <= phases["backward slow"] < BACKWARD_SLEEP + 0.02
    assert OPTIMIZER_SLEEP <= phases["after backward"] < OPTIMIZER_SLEEP + 0.02
    # The dropout of 0 passes the slow module's output on: its backward is still the slow one's.
    assert "backward keep" not in phases
    for name in ("forward embed", "forward heads.forward_lm", "backward heads.forward_lm",
                 "backward embed", "forward keep",
                 "data and trainer", "between forward and backward"):  # fmt: skip
        assert 0 <= phases[name] < 0.01, name
    assert sum(phases.values()) == pytest.approx(result["mean_step_seconds"], rel=1e-6)
    assert FORWARD_SLEEP + BACKWARD_SLEEP + OPTIMIZER_SLEEP <= result["median_step_seconds"]
    assert result["tokens_per_step"] > 0


def test_it_measures_once_and_then_leaves_the_model_alone(tmp_path):
    callback = StepPhases(str(tmp_path), skip=1, batches=2)
    _train(tmp_path, callback)  # 8 batches: 1 skipped, 2 measured, the rest not
    assert len(callback.steps) == 2
    assert callback._handles == []


def test_a_step_across_an_epoch_end_is_not_measured(tmp_path):
    """2 epochs of 4 batches: of batches 2-8, the first of the second epoch is left out."""
    callback = StepPhases(str(tmp_path), skip=1, batches=100)
    _train(tmp_path, callback)
    assert len(callback.steps) == 6
    # Training ended first: what was measured is written at its end.
    assert json.loads((tmp_path / RESULT_FILE).read_text())["batches"] == 6


def test_bad_counts_and_accumulated_steps_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="skip and batches"):
        StepPhases(str(tmp_path), skip=0)
    with pytest.raises(ConfigurationError, match="num_gradient_accumulation_steps"):
        _train(tmp_path, StepPhases(str(tmp_path)), num_gradient_accumulation_steps=2)
