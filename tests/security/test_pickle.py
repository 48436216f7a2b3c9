"""
No code runs from a pickle: `allennlp train --recover` on a run directory received from someone
else, and every `torch.load` in the package.

The attack: a `training_state_*.th` loaded with `weights_only=False` runs any Python a crafted
one names, and so does a weights file loaded on torch's default (`weights_only=True` since torch
2.6) where `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` is set. `--recover` (the atomic checkpointer, and
`patches.weights_only_loads` of AllenNLP's checkpointer) and every load of model weights pass
`weights_only=True` explicitly.
"""

import ast
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.training.checkpointer import Checkpointer

import experiments.quality.time_budgets  # noqa: F401  (registers training_time_budgets)
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.security.received_models import ELMO_C_COMPONENTS

CONFIG = FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"
SOURCES = [PROJECT_ROOT / "allennlp_elmo_c", PROJECT_ROOT / "experiments"]


class _WritesMarker:
    """Unpickling it creates `path` (a stand-in for any code a received pickle could run)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (exec, (f"open({str(self.path)!r}, 'w').close()",))


def params(**overrides) -> Params:
    overrides = {
        "trainer.callbacks": [
            {"type": "rng_state"},
            {"type": "training_time_budgets", "minutes": [60]},
        ],
        "trainer.checkpointer": {"type": "atomic"},
        **ELMO_C_COMPONENTS,
        **overrides,
    }
    return Params.from_file(str(CONFIG), json.dumps(overrides))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A real `allennlp train` run of 2 epochs (with the plugin's callbacks), checkpoints kept."""
    run = tmp_path_factory.mktemp("run") / "run"
    train_model(params(**{"trainer.num_epochs": 2}), run)
    return run


def crashed_copy(finished_run: Path, destination: Path) -> Path:
    """The run as if it had crashed after epoch 1 of 2: the later files removed."""
    shutil.copytree(finished_run, destination)
    for name in ("model_state_e2_b0.th", "training_state_e2_b0.th", "model.tar.gz", "metrics.json"):
        (destination / name).unlink()
    return destination


def test_a_real_run_recovers_with_numpy_scalars_in_its_state(finished_run, tmp_path):
    """The types a training state holds load with weights_only=True (numpy scalars: a metric
    computed in numpy, as the coreference F1, lands in the metric tracker)."""
    run = crashed_copy(finished_run, tmp_path / "run")
    path = run / "training_state_e1_b0.th"
    state = torch.load(path, weights_only=True)
    state["metric_tracker"]["best_so_far"] = np.float64(0.5)
    state["metric_tracker"]["best_epoch_metrics"]["validation_accuracy"] = np.float64(0.5)
    state["learning_rate_scheduler"]["best"] = np.float32(0.5)
    torch.save(state, path)
    train_model(params(**{"trainer.num_epochs": 2}), run, recover=True)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["epoch"] == 1 and (run / "model.tar.gz").is_file()


@pytest.mark.parametrize("name", ["training_state_e1_b0.th", "model_state_e1_b0.th"])
def test_recover_refuses_a_crafted_checkpoint_and_runs_nothing(finished_run, tmp_path, name):
    """A training or model state that pickles a call writing a marker: `--recover` refuses it,
    naming the file (and, for the training state, the global it holds); no marker is written."""
    run = crashed_copy(finished_run, tmp_path / "run")
    marker = tmp_path / "marker"
    state = torch.load(run / name, weights_only=True)
    state["note"] = _WritesMarker(marker)
    torch.save(state, run / name)
    with pytest.raises(ConfigurationError) as refusal:
        train_model(params(**{"trainer.num_epochs": 2}), run, recover=True)
    assert not marker.exists()
    assert str(run / name) in str(refusal.value)
    if name.startswith("training_state"):
        assert "refused" in str(refusal.value) and "global exec," in str(refusal.value)


def test_recover_falls_back_from_a_crafted_newest_checkpoint(finished_run, tmp_path):
    """A crafted newest training state is skipped (and set aside) like a damaged one; nothing
    in it runs."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    (run / "model.tar.gz").unlink()
    marker = tmp_path / "marker"
    state = torch.load(run / "training_state_e2_b0.th", weights_only=True)
    state["note"] = _WritesMarker(marker)
    torch.save(state, run / "training_state_e2_b0.th")
    train_model(params(**{"trainer.num_epochs": 2}), run, recover=True)
    assert not marker.exists()
    assert (run / "training_state_e2_b0.th.unusable").is_file()
    assert "refused: it holds the Python global exec" in (run / "out.log").read_text()


def test_allennlp_checkpointer_patch_refuses_a_crafted_training_state(tmp_path):
    """`patches.weights_only_loads`' patch of AllenNLP's own `Checkpointer.load_checkpoint` (a
    config naming no checkpointer, or another one than `atomic`) refuses a crafted training
    state; nothing in it runs."""
    marker = tmp_path / "marker"
    torch.save({"weight": torch.ones(2)}, tmp_path / "model_state_e1_b0.th")
    torch.save(
        {"epochs_completed": 1, "batches_in_epoch_completed": 0, "x": _WritesMarker(marker)},
        tmp_path / "training_state_e1_b0.th",
    )
    with pytest.raises(ConfigurationError, match="refused: it holds the Python global exec"):
        Checkpointer(tmp_path).load_checkpoint()
    assert not marker.exists()


def test_a_best_model_path_outside_the_run_is_not_read(finished_run, tmp_path):
    """The training state's `best_model_filename` (read by AllenNLP at the end of training)
    is this run's own best.th, whatever path a received state names."""
    run = crashed_copy(finished_run, tmp_path / "run")
    path = run / "training_state_e1_b0.th"
    state = torch.load(path, weights_only=True)
    state["best_model_filename"] = str(tmp_path / "elsewhere" / "best.th")
    torch.save(state, path)
    checkpoint = Checkpointer.by_name("atomic")(str(run)).load_checkpoint()
    assert checkpoint.trainer_state["best_model_filename"] == str(run / "best.th")
    state["best_model_filename"] = "/etc/passwd"
    torch.save(state, path)
    with pytest.raises(ConfigurationError, match="names '/etc/passwd' as the best model"):
        Checkpointer.by_name("atomic")(str(run)).load_checkpoint()


UNPICKLERS = ("pickle", "cPickle", "_pickle", "dill", "joblib", "marshal", "yaml")


def unsafe_calls(path: Path) -> List[str]:
    """`line: what` for each call in `path` that could run code from a file it reads."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
        if name == "torch.load" and keywords.get("weights_only") != "True":
            found.append(f"{node.lineno}: torch.load without weights_only=True")
        module, _, function = name.rpartition(".")
        if module in UNPICKLERS and function in ("load", "loads", "Unpickler", "unsafe_load"):
            found.append(f"{node.lineno}: {name}")
        if name in ("eval", "exec", "builtins.eval", "builtins.exec", "shelve.open"):
            found.append(f"{node.lineno}: {name}")
        for keyword in ("allow_pickle", "trust_remote_code"):
            if keywords.get(keyword) not in (None, "False"):
                found.append(f"{node.lineno}: {keyword}")
    return found


def test_every_torch_load_is_weights_only_and_nothing_unpickles():
    """Every `torch.load` in the package and the benchmarks passes `weights_only=True`; no
    pickle/marshal/shelve/YAML load, numpy `allow_pickle`, `eval` or `exec`, and no
    `trust_remote_code`; the compatibility patches' `torch.load`s included."""
    problems = [
        f"{path.relative_to(PROJECT_ROOT)}:{problem}"
        for root in SOURCES
        for path in sorted(root.rglob("*.py"))
        for problem in unsafe_calls(path)
    ]
    assert problems == []


def test_the_scan_finds_each_kind_of_call(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text(
        "torch.load(p)\ntorch.load(p, weights_only=False)\npickle.loads(b)\n"
        "numpy.load(p, allow_pickle=True)\neval('1')\nyaml.load(s)\n"
        "AutoTokenizer.from_pretrained(d, trust_remote_code=True)\n"
        "torch.load(p, weights_only=True)\nyaml.safe_load(s)\nmodel.eval()\n"
    )
    assert unsafe_calls(source) == [
        "1: torch.load without weights_only=True", "2: torch.load without weights_only=True",
        "3: pickle.loads", "4: allow_pickle", "5: eval", "6: yaml.load", "7: trust_remote_code",
    ]  # fmt: skip


def archive_with_weights(source: Path, target: Path, weights: Dict[str, Any]) -> Path:
    """A copy of the biLM archive `source` whose `weights.th` holds `weights`."""
    buffer = io.BytesIO()
    torch.save(weights, buffer)
    with tarfile.open(source) as original, tarfile.open(target, "w:gz") as copy:
        for member in original:
            data = original.extractfile(member) if member.isfile() else None
            if member.name == "weights.th":
                member.size, data = len(buffer.getvalue()), io.BytesIO(buffer.getvalue())
            copy.addfile(member, data)
    return target


def test_a_crafted_archive_weights_file_runs_nothing_at_any_front_door(
    elmo_c_archive, tmp_path, monkeypatch, capsys
):
    """A received biLM archive whose `weights.th` pickles code, loaded with the environment
    variable `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` (torch's switch for loads that do not pass
    `weights_only`): AllenNLP's own `load_archive`, relying on torch's default, would run the
    pickle (and refuse without a ConfigurationError where it does not). Every front door refuses
    it, naming the global it holds, and nothing in it runs."""
    from tests.security.received_models import front_doors, refusal

    marker = tmp_path / "marker"
    weights = torch.load(elmo_c_archive.parent / "best.th", weights_only=True)
    weights["note"] = _WritesMarker(marker)
    crafted = archive_with_weights(elmo_c_archive, tmp_path / "model.tar.gz", weights)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    outcomes = {}
    for name, door in front_doors(crafted, tmp_path / "work", monkeypatch, directory=False).items():
        outcomes[name] = refusal(door, capsys)
        assert not marker.exists(), f"{name} ran the pickle ({outcomes[name]})"
    for name, outcome in outcomes.items():
        assert "weights.th: refused: it holds the Python global exec" in outcome, (name, outcome)
