import io
import math

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from allennlp_elmo_c.training.rnmt_plus import RnmtPlusLearningRateScheduler

BASE = 1e-3
P, S, E = 100, 1000, 3000


def make_optimizer(*learning_rates: float) -> torch.optim.Optimizer:
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in learning_rates]
    return torch.optim.SGD(groups, lr=learning_rates[0])


def make_scheduler(optimizer=None, **config) -> RnmtPlusLearningRateScheduler:
    params = {"type": "rnmt_plus", "warmup_steps": P, "decay_start": S, "decay_end": E}
    params.update(config)
    # What AllenNLP's trainer hands over (not config keys).
    extras = {key: params.pop(key) for key in ("num_epochs", "num_steps_per_epoch") if key in params}
    return LearningRateScheduler.from_params(
        optimizer=optimizer or make_optimizer(BASE), params=Params(params), **extras
    )


def lr_at(scheduler, step: int) -> float:
    scheduler.step_batch(step)
    return scheduler.optimizer.param_groups[0]["lr"]


def reference_rnmt_plus(t: float, n: float, p: int, s: int, e: int) -> float:
    """The formula of the RNMT+ paper, verbatim (as a multiple of the base learning rate)."""
    return min(1 + t * (n - 1) / (n * p), n, n * (2 * n) ** ((s - n * t) / (e - s)))


def reference_elmo_c(t: float, n: float, p: int, s: int, e: int) -> float:
    """ELMo-C's `NoamOpt_ADAM.rate` before `e`, verbatim (its code holds `base / 2` after)."""
    return min(1 + t * (n - 1) / p, n, n * (2 * n) ** ((s - t) / (e - s)))


# Hand computation for n = 6 (batch 768): warm-up 1 -> 6 over 100 steps, hold 6 until 1000, then
# 6 * (1/12) ** ((t - 1000) / 2000), i.e. 0.5 at 3000.
def decay_768(t):
    return 6 * math.exp(-math.log(12) * (t - S) / (E - S))


BATCH_768 = [
    (0, 1.0),
    (P // 2, 3.5),
    (P, 6.0),
    (500, 6.0),
    (S, 6.0),
    ((S + E) // 2, 6 / math.sqrt(12)),
    ((S + E) // 2, decay_768((S + E) // 2)),
    (E, 0.5),
    (2 * E, 0.5),  # held after e, as ELMo-C's code
]

# n = 0.25 (batch 32): warm-up 1 -> 0.25 (a decrease), then 0.25 for good: reaching
# final_factor = 0.5 would mean raising the learning rate.
BATCH_32 = [
    (0, 1.0),
    (P // 2, 0.625),
    (P, 0.25),
    (500, 0.25),
    (S, 0.25),
    ((S + E) // 2, 0.25),
    (E, 0.25),
    (2 * E, 0.25),
]


@pytest.mark.parametrize("step, factor", BATCH_768)
def test_exact_values_batch_768(step, factor):
    assert lr_at(make_scheduler(batch_scale=6.0), step) == pytest.approx(BASE * factor, rel=1e-12)


@pytest.mark.parametrize("step, factor", BATCH_32)
def test_exact_values_batch_32(step, factor):
    assert lr_at(make_scheduler(batch_scale=0.25), step) == pytest.approx(BASE * factor, rel=1e-12)


def test_small_batch_still_decays_when_the_target_is_below_the_peak():
    # n = 0.25 with final_factor 0.1: 0.25 at s, 0.1 at e and after.
    scheduler = make_scheduler(batch_scale=0.25, final_factor=0.1)
    assert lr_at(scheduler, S) == pytest.approx(BASE * 0.25)
    assert lr_at(scheduler, (S + E) // 2) == pytest.approx(BASE * 0.25 * math.sqrt(0.4))
    assert lr_at(scheduler, E) == pytest.approx(BASE * 0.1)
    assert lr_at(scheduler, 2 * E) == pytest.approx(BASE * 0.1)
    # n = 0.75 (batch 96) with the default final_factor: 0.75 -> 0.5.
    assert lr_at(make_scheduler(batch_scale=0.75), E) == pytest.approx(BASE * 0.5)


def test_reference_formulas_go_negative_for_small_batches():
    n = 32 / 128
    assert reference_rnmt_plus(P, n, P, S, E) == pytest.approx(-2.0)
    assert reference_elmo_c(2 * P, n, P, S, E) == pytest.approx(-0.5)
    scheduler = make_scheduler(batch_scale=0.25)
    for t in range(0, 2 * P + 1):
        assert lr_at(scheduler, t) >= BASE * 0.25
    # ... while for n >= 1 ELMo-C's code and ours agree up to e, and so does RNMT+'s formula
    # (with p' = n p, s' = s / n, e' = e / n).
    for batch_size in (128, 768):
        ours = make_scheduler(batch_scale=batch_size / 128)
        for t in range(0, E, 7):
            expected = reference_elmo_c(t, batch_size / 128, P, S, E)
            assert lr_at(ours, t) == pytest.approx(BASE * expected)
    s, e = 6000, 18000
    ours = make_scheduler(batch_scale=6.0, warmup_steps=6 * P, decay_start=s // 6, decay_end=e // 6)
    for t in range(0, e // 6 + 1, 7):  # RNMT+ keeps decaying after e' = e / 6; ours holds
        assert lr_at(ours, t) == pytest.approx(BASE * reference_rnmt_plus(t, 6, P, s, e))


@pytest.mark.parametrize("batch_size", [1, 8, 32, 64, 127, 128, 768, 4096])
@pytest.mark.parametrize("p, s, e", [(0, 0, 1), (0, 5, 6), (10, 100, 200), (100, 100, 101)])
def test_never_negative_finite_and_never_rising_after_the_warmup(batch_size, p, s, e):
    scheduler = make_scheduler(batch_scale=batch_size / 128, warmup_steps=p, decay_start=s,
                               decay_end=e)  # fmt: skip
    n = batch_size / 128
    rates = [lr_at(scheduler, t) for t in range(0, 5 * e + 1)]
    assert all(math.isfinite(lr) and lr >= 0 for lr in rates)
    assert all(min(BASE, BASE * n) * (1 - 1e-12) <= lr <= max(BASE, BASE * n) for lr in rates[:s])
    after_warmup = rates[p:]
    assert after_warmup[0] == pytest.approx(BASE * n)
    assert all(later <= earlier for earlier, later in zip(after_warmup, after_warmup[1:]))


def test_holds_after_decay_end_as_elmo_c_code():
    scheduler = make_scheduler(batch_scale=6.0)
    for t in (E, E + 1, 2 * E, 100 * E):
        assert lr_at(scheduler, t) == pytest.approx(BASE * 0.5)
    assert lr_at(scheduler, E - 1) > lr_at(scheduler, E)


def test_batch_size_per_worker_times_the_world_size():
    assert lr_at(make_scheduler(batch_scale=6), S) == pytest.approx(6 * BASE)
    assert make_scheduler(batch_size_per_worker=384).batch_scale == 3.0
    assert make_scheduler(batch_size=768).batch_scale == 6.0


def test_from_params_with_the_trainer_extras():
    # The trainer constructs schedulers with num_epochs and num_steps_per_epoch: ignored here.
    scheduler = LearningRateScheduler.from_params(
        optimizer=make_optimizer(BASE),
        params=Params(
            {
                "type": "rnmt_plus",
                "warmup_steps": 1,
                "decay_start": 2,
                "decay_end": 3,
                "batch_scale": 2.0,
            }
        ),
        num_epochs=3,
        num_steps_per_epoch=10,
    )
    assert isinstance(scheduler, RnmtPlusLearningRateScheduler)
    assert scheduler.batch_scale == 2.0


def test_every_param_group_receives_its_scaled_lr_and_sgd_uses_it():
    optimizer = make_optimizer(1e-3, 1e-2)
    scheduler = make_scheduler(optimizer, batch_scale=6.0)
    # At construction the groups hold the step-0 rate (the base) and remember their base.
    assert [g["lr"] for g in optimizer.param_groups] == [1e-3, 1e-2]
    scheduler.step_batch(P)
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx([6e-3, 6e-2])
    for group in optimizer.param_groups:
        group["params"][0].grad = torch.ones(2)
    optimizer.step()
    assert optimizer.param_groups[0]["params"][0].tolist() == pytest.approx([-6e-3, -6e-3])
    assert optimizer.param_groups[1]["params"][0].tolist() == pytest.approx([-6e-2, -6e-2])
    scheduler.step(0.5)  # the per-epoch call changes nothing
    assert scheduler.last_epoch == P and optimizer.param_groups[0]["lr"] == pytest.approx(6e-3)
    scheduler.step_batch()  # without a count: the next update
    assert scheduler.last_epoch == P + 1


@pytest.mark.parametrize(
    "config, message",
    [
        ({"batch_scale": 0.25, "warmup_steps": -1}, "0 <= warmup_steps <= decay_start"),
        ({"batch_scale": 0.25, "warmup_steps": S + 1}, "0 <= warmup_steps <= decay_start"),
        ({"batch_scale": 0.25, "decay_end": S}, "decay_start < decay_end"),
        ({}, "exactly one of 'batch_scale', 'batch_size' and 'batch_size_per_worker'"),
        ({"batch_size": 0}, "batch size >= 1"),
        ({"batch_scale": 0.0}, "batch_scale > 0"),
        ({"batch_scale": -1.0}, "batch_scale > 0"),
        ({"batch_scale": float("inf")}, "batch_scale > 0"),
        ({"batch_scale": 0.25, "final_factor": 0.0}, "final_factor > 0"),
        ({"batch_size_per_worker": 0}, "batch size >= 1"),
        ({"batch_scale": 0.25, "batch_size_per_worker": 32}, "exactly one of"),
        ({"batch_scale": 0.25, "decay_end": None}, "exactly one of 'decay_end' and "),
        ({"batch_scale": 0.25, "decay_start": None, "decay_start_fraction": 0.4},
         "need the run's length.*'lm_stream'"),
        ({"batch_scale": 0.25, "decay_start": None, "decay_start_fraction": -0.1,
          "num_epochs": 1, "num_steps_per_epoch": 10}, "decay_start_fraction >= 0"),  # fmt: skip
    ],
)
def test_bad_configs(config, message):
    with pytest.raises(ConfigurationError, match=message):
        make_scheduler(**config)


def test_state_dict_round_trip_resumes_the_same_sequence():
    uninterrupted = make_scheduler(batch_scale=6.0)
    expected = [lr_at(uninterrupted, t) for t in range(1, 4001)]

    first_optimizer = make_optimizer(BASE)
    first = make_scheduler(first_optimizer, batch_scale=6.0)
    head = [lr_at(first, t) for t in range(1, 1501)]
    buffer = io.BytesIO()
    torch.save({"optimizer": first_optimizer.state_dict(), "scheduler": first.state_dict()}, buffer)
    buffer.seek(0)
    # weights_only=True: the state holds nothing but plain Python values.
    saved = torch.load(buffer, weights_only=True)
    assert all(isinstance(value, (int, float, str, list)) for value in saved["scheduler"].values())

    # As `--recover` does: a fresh optimizer and scheduler, then both states loaded.
    second_optimizer = make_optimizer(BASE)
    second = make_scheduler(second_optimizer, batch_scale=6.0)
    second_optimizer.load_state_dict(saved["optimizer"])
    second.load_state_dict(saved["scheduler"])
    assert second.last_epoch == 1500 and second.base_values == [BASE]
    assert second_optimizer.param_groups[0]["lr"] == head[-1]
    tail = [lr_at(second, t) for t in range(1501, 4001)]
    assert head + tail == expected


def test_trainer_recover_continues_the_schedule(tmp_path):
    from allennlp.data import Instance, Vocabulary
    from allennlp.data.data_loaders import SimpleDataLoader
    from allennlp.data.fields import TensorField
    from allennlp.models import Model
    from allennlp.training import Checkpointer, GradientDescentTrainer, TrainerCallback

    class Regression(Model):
        def __init__(self) -> None:
            super().__init__(Vocabulary())
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x: torch.Tensor):  # type: ignore
            return {"loss": ((self.weight - x) ** 2).mean()}

    class RecordLr(TrainerCallback):
        def __init__(self, serialization_dir: str) -> None:
            super().__init__(serialization_dir)
            self.rates = []

        def on_batch(self, trainer, *args, is_training: bool = True, **kwargs) -> None:
            if is_training:
                self.rates.append(trainer.optimizer.param_groups[0]["lr"])

    def train(serialization_dir, num_epochs):
        model = Regression()
        optimizer = torch.optim.SGD(model.parameters(), lr=BASE)
        scheduler = make_scheduler(
            optimizer, batch_scale=6.0, warmup_steps=4, decay_start=8, decay_end=14
        )
        instances = [Instance({"x": TensorField(torch.tensor([float(i)]))}) for i in range(12)]
        loader = SimpleDataLoader(instances, batch_size=2, vocab=model.vocab)
        recorder = RecordLr(str(serialization_dir))
        GradientDescentTrainer(
            model,
            optimizer,
            loader,
            num_epochs=num_epochs,
            serialization_dir=str(serialization_dir),
            checkpointer=Checkpointer(str(serialization_dir)),
            learning_rate_scheduler=scheduler,
            callbacks=[recorder],
            enable_default_callbacks=False,
        ).train()
        return recorder.rates

    uninterrupted = train(tmp_path / "a", 3)
    assert len(uninterrupted) == 18
    # The trainer calls step_batch(t) before the t-th update: the first one uses lr(1).
    assert uninterrupted[0] == pytest.approx(BASE * (1 + 5 / 4))
    assert uninterrupted[13] == pytest.approx(BASE * 0.5)  # update 14 = decay_end
    assert train(tmp_path / "b", 2) == uninterrupted[:12]
    assert train(tmp_path / "b", 3) == uninterrupted[12:]  # resumed from the epoch-2 checkpoint


def test_fractions_of_the_run_follow_the_epochs_and_the_updates_an_epoch():
    fractions = {"decay_start": None, "decay_end": None, "decay_start_fraction": 0.4,
                 "decay_end_fraction": 2.0, "batch_scale": 2.0}  # fmt: skip
    one = make_scheduler(**fractions, num_epochs=1, num_steps_per_epoch=5_000)
    three = make_scheduler(**fractions, num_epochs=3, num_steps_per_epoch=5_000)
    assert (one.warmup_steps, one.decay_start, one.decay_end) == (P, 2_000, 10_000)
    assert (three.decay_start, three.decay_end) == (6_000, 30_000)


def test_an_update_number_given_wins_over_a_fraction():
    """A config's fraction and a user's override of `decay_start` / `decay_end`: the override
    is the schedule."""
    scheduler = make_scheduler(decay_start=700, decay_end=2_000, decay_start_fraction=0.4,
                               decay_end_fraction=1.0, batch_scale=0.25,
                               num_epochs=1, num_steps_per_epoch=100)  # fmt: skip
    assert (scheduler.decay_start, scheduler.decay_end) == (700, 2_000)


def test_a_warm_up_longer_than_the_decay_start_is_cut_to_it(caplog):
    scheduler = make_scheduler(decay_start=None, decay_end=None, decay_start_fraction=0.4,
                               decay_end_fraction=1.0, warmup_steps=10_000, batch_scale=2.0,
                               num_epochs=1, num_steps_per_epoch=1_000)  # fmt: skip
    assert (scheduler.warmup_steps, scheduler.decay_start, scheduler.decay_end) == (400, 400, 1_000)
    assert "the warm-up of 10000 is cut to the decay's start, 400" in caplog.text
