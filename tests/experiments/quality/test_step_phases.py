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
from allennlp.training.callbacks.callback import TrainerCallback

from experiments.quality.step_phases import RESULT_FILE, StepPhases

from experiments.quality import step_phases

FORWARD_SLEEP, BACKWARD_SLEEP, OPTIMIZER_SLEEP = 0.03, 0.05, 0.02
STEP = FORWARD_SLEEP + BACKWARD_SLEEP + OPTIMIZER_SLEEP  # all the time a toy step takes
_sleep = time.sleep  # the toy's sleeps; the `clock` fixture's fake clock replaces it


class FakeClock:
    """A clock that moves only when the toy sleeps: `step_phases` reads it, so every phase is
    exactly the sleeps that happened in it, whatever else the machine is doing."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["fake", "real"])
def clock(request, monkeypatch):
    """"fake": `step_phases` and the toy share a `FakeClock` (exact phases); "real": real sleeps
    on the real clock, where only lower bounds hold (a busy machine adds time anywhere)."""
    if request.param == "fake":
        fake = FakeClock()
        monkeypatch.setattr(step_phases, "time", fake)  # the module's `time.perf_counter()`
        monkeypatch.setattr(f"{__name__}._sleep", fake.sleep)
    return request.param


def assert_seconds(found: float, expected: float, clock: str, name: str = "") -> None:
    """`found` is `expected` seconds (fake clock), or at least that (real clock: no upper
    bound, the machine may be busy)."""
    if clock == "fake":
        assert found == pytest.approx(expected, abs=1e-9), name
    else:
        assert found >= expected, name


class _SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        _sleep(BACKWARD_SLEEP)
        return grad


class _Slow(torch.nn.Module):
    """Sleeps FORWARD_SLEEP in its forward and BACKWARD_SLEEP in its backward."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        _sleep(FORWARD_SLEEP)
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
        _sleep(OPTIMIZER_SLEEP)
        return super().step(closure)


def _train(tmp_path, callback, others=(), model_class=None, **trainer_options):
    """Trains the toy model 2 epochs of 4 batches with `others` callbacks before `callback`;
    returns the model."""
    indexers = {"tokens": SingleIdTokenIndexer()}
    instances = [Instance({"tokens": TextField([Token(w) for w in "a b c d".split()[: n + 1]],
                                               indexers)})
                 for n in range(4)] * 2  # fmt: skip
    vocab = Vocabulary.from_instances(instances)
    loader = SimpleDataLoader(instances, batch_size=2, vocab=vocab)
    model = (model_class or _Toy)(vocab)
    trainer = GradientDescentTrainer(
        model, _SlowSGD(model.parameters(), lr=0.01), loader, num_epochs=2,
        serialization_dir=str(tmp_path), callbacks=[*others, callback], **trainer_options,
    )  # fmt: skip
    trainer.train()
    return model


def _hooked(model) -> bool:
    return any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


class _ExtraForward(TrainerCallback):
    """Runs the model once more (no gradient) after every other training batch, as a callback
    computing a metric might."""

    def on_batch(self, trainer, batch_inputs, *args, is_training=True, **kwargs):
        if is_training and trainer._total_batches_completed % 2 == 0:
            with torch.no_grad():
                trainer.model(**batch_inputs[0])


def test_each_phase_gets_the_time_spent_in_it(tmp_path, clock):
    """Known sleeps in a submodule's forward, its backward and the optimizer step land in their
    phases (a module of a ModuleDict is a part of its own), nothing else takes time, and the
    phases add up to the step: on the fake clock exactly, on the real one at least."""
    _train(tmp_path, StepPhases(str(tmp_path), skip=2, batches=5))
    result = json.loads((tmp_path / RESULT_FILE).read_text())
    phases = result["mean_seconds"]
    assert result["batches"] == 5
    assert_seconds(phases["forward slow"], FORWARD_SLEEP, clock, "forward slow")
    assert_seconds(phases["backward slow"], BACKWARD_SLEEP, clock, "backward slow")
    assert_seconds(phases["after backward"], OPTIMIZER_SLEEP, clock, "after backward")
    # The dropout of 0 passes the slow module's output on: its backward is still the slow one's.
    assert "backward keep" not in phases
    assert set(phases) == {
        "forward slow", "backward slow", "after backward", "forward embed", "forward keep",
        "forward heads.forward_lm", "backward heads.forward_lm", "backward embed",
        "data and trainer", "between forward and backward", "forward, model's own code",
        "backward, before the submodules",
    }  # fmt: skip
    for name in set(phases) - {"forward slow", "backward slow", "after backward"}:
        assert_seconds(phases[name], 0.0, clock, name)
    assert sum(phases.values()) == pytest.approx(result["mean_step_seconds"], rel=1e-6)
    assert_seconds(result["mean_step_seconds"], STEP, clock, "mean step")
    assert_seconds(result["median_step_seconds"], STEP, clock, "median step")
    assert result["tokens_per_step"] > 0


def test_it_measures_once_and_then_leaves_the_model_alone(tmp_path):
    callback = StepPhases(str(tmp_path), skip=1, batches=2)
    model = _train(tmp_path, callback)  # 8 batches: 1 skipped, 2 measured, the rest not
    assert len(callback.steps) == 2
    assert not _hooked(model) and callback._watched == {}


def test_a_step_with_another_forward_is_left_out(tmp_path, clock):
    """A callback's extra forward in a step would be timed as data or optimizer: such steps are
    counted as unmeasured, the others keep their phases (the extra forward's sleep is in none of
    them)."""
    callback = StepPhases(str(tmp_path), skip=1, batches=100)
    _train(tmp_path, callback, others=[_ExtraForward(str(tmp_path))])
    result = json.loads((tmp_path / RESULT_FILE).read_text())
    # Batches 2-8 but 5 (an epoch's first) are candidates; 2, 4, 6 and 8 had two forwards.
    assert result["unmeasured"] == 4 and result["batches"] == 2
    phases = result["mean_seconds"]
    assert_seconds(phases["forward slow"], FORWARD_SLEEP, clock, "forward slow")
    assert_seconds(phases["backward slow"], BACKWARD_SLEEP, clock, "backward slow")
    assert_seconds(phases["after backward"], OPTIMIZER_SLEEP, clock, "after backward")
    assert_seconds(phases["data and trainer"], 0.0, clock, "data and trainer")
    assert_seconds(result["mean_step_seconds"], STEP, clock, "mean step")


def test_nothing_is_written_for_a_short_or_failed_run_and_no_hook_stays(tmp_path):
    callback = StepPhases(str(tmp_path), skip=100, batches=5)
    model = _train(tmp_path, callback)
    assert not (tmp_path / RESULT_FILE).exists() and not _hooked(model)

    class Failing(_Toy):
        calls = 0

        def forward(self, tokens):
            Failing.calls += 1
            if Failing.calls == 5:
                raise RuntimeError("out of memory")
            return super().forward(tokens)

    failed = StepPhases(str(tmp_path / "failed"), skip=1, batches=5)
    with pytest.raises(RuntimeError, match="out of memory"):
        _train(tmp_path / "failed", failed, model_class=Failing)
    assert len(failed.steps) == 3 and failed._handles == []
    assert not (tmp_path / "failed" / RESULT_FILE).exists()


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
