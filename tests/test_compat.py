"""One test per fix in `allennlp_elmo_c.compat`, each also showing that AllenNLP fails without it."""

import sys
import warnings
import numpy as np
import pickle
import pytest
import torch

from allennlp.common import Params
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from allennlp_elmo_c import compat


def optimizer():
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=1.0)


def test_reduce_on_plateau_from_config_works_and_reduces():
    params = Params({"type": "reduce_on_plateau", "factor": 0.5, "patience": 0, "verbose": True})
    scheduler = LearningRateScheduler.from_params(optimizer=optimizer(), params=params)
    scheduler.step(1.0)
    scheduler.step(2.0)  # worse (mode "min"), patience 0: halve
    assert scheduler.get_values() == [0.5]
    restored = LearningRateScheduler.from_params(
        optimizer=optimizer(), params=Params({"type": "reduce_on_plateau"})
    )
    restored.load_state_dict(scheduler.state_dict())
    assert restored.lr_scheduler.best == 1.0
    # The unpatched AllenNLP constructor passes `verbose`, which torch no longer accepts.
    original = compat.ORIGINALS["reduce_on_plateau_init"]
    with pytest.raises(TypeError, match="verbose"):
        original(scheduler, optimizer())


def test_reduce_on_plateau_passes_every_option_to_torch():
    options = {"mode": "max", "factor": 0.25, "patience": 3, "threshold_mode": "abs",
               "threshold": 0.01, "cooldown": 2, "min_lr": 0.001, "eps": 1e-6}  # fmt: skip
    scheduler = LearningRateScheduler.from_params(
        optimizer=optimizer(), params=Params({"type": "reduce_on_plateau", **options})
    )
    torch_scheduler = scheduler.lr_scheduler
    assert {name: getattr(torch_scheduler, name) for name in options if name != "min_lr"} == {
        name: value for name, value in options.items() if name != "min_lr"
    }
    assert torch_scheduler.min_lrs == [0.001]


class _Trainer:
    """Just enough of a Trainer for `Checkpointer.save_checkpoint`."""

    def __init__(self, trainer_state):
        self.trainer_state = trainer_state

    def get_checkpoint_state(self):
        return TrainerCheckpoint({"weight": torch.ones(3)}, self.trainer_state)


def test_recover_loads_training_state_with_non_tensor_objects(tmp_path):
    state = {
        "epochs_completed": 1,
        "batches_in_epoch_completed": 0,
        "metric_tracker": {"best_so_far": np.float64(0.25), "epochs_with_no_improvement": 0},
        "learning_rate_scheduler": {"best": np.float32(1.5)},
    }
    checkpointer = Checkpointer(tmp_path)
    checkpointer.save_checkpoint(_Trainer(state))
    loaded = Checkpointer(tmp_path).load_checkpoint()
    assert torch.equal(loaded.model_state["weight"], torch.ones(3))
    assert loaded.trainer_state["metric_tracker"]["best_so_far"] == 0.25
    assert isinstance(loaded.trainer_state["learning_rate_scheduler"]["best"], np.float32)
    # The unpatched checkpointer uses torch.load's weights_only default and refuses the state.
    with pytest.raises(pickle.UnpicklingError, match="[Ww]eights only load failed"):
        compat.ORIGINALS["load_checkpoint"](Checkpointer(tmp_path))


def test_apply_is_idempotent():
    compat.apply()
    compat.apply()
    assert Checkpointer.load_checkpoint.__name__ == "_load_checkpoint"


def test_allennlp_train_then_recover(tmp_path):
    """A run "crashes" after epoch 1 of 2 (later files removed); --recover resumes and finishes."""
    import json

    from allennlp.commands.train import train_model
    from tests import FIXTURES_ROOT

    params = lambda: Params.from_file(  # noqa: E731
        str(FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"), '{"trainer.num_epochs": 2}'
    )
    train_model(params(), tmp_path)
    assert (tmp_path / "training_state_e1_b0.th").is_file()
    first_epoch_stamp = (tmp_path / "metrics_epoch_0.json").stat().st_mtime_ns
    for name in ("model_state_e2_b0.th", "training_state_e2_b0.th", "model.tar.gz", "metrics.json"):
        (tmp_path / name).unlink()
    train_model(params(), tmp_path, recover=True)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["epoch"] == 1
    # Epoch 1 was not run again: its metrics file is untouched.
    assert (tmp_path / "metrics_epoch_0.json").stat().st_mtime_ns == first_epoch_stamp
    assert (tmp_path / "model.tar.gz").is_file()


def test_the_narrativeqa_import_downloads_nothing_and_nltk_download_stays_nltks(tmp_path):
    """allennlp-models' NarrativeQA tool, imported after the plugin (what `python -m
    allennlp_elmo_c` and Python code do), neither tries the network nor prints; `nltk.download`
    is NLTK's own before and after. Without the plugin the same import prints NLTK's errors
    (or finds punkt installed on this machine)."""
    import subprocess
    import sys

    from tests.helpers import offline_environment

    script = """
import logging, nltk, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(name)s: %(message)s")
download = nltk.download
try:
    nltk.data.find("tokenizers/punkt")
    print("punkt installed")
except LookupError:
    pass
if sys.argv[1] == "plugin":
    import allennlp_elmo_c
import allennlp_models.rc.tools.narrativeqa
print("nltk.download is NLTK's:", nltk.download is download)
"""
    environment = offline_environment(tmp_path / "home")

    def run(mode):
        return subprocess.run([sys.executable, "-c", script, mode], env=environment,
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    quiet, loud = run("plugin"), run("alone")
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr[-2000:] + loud.stderr[-2000:]
    assert quiet.stderr == "", quiet.stderr
    assert "nltk.download is NLTK's: True" in quiet.stdout
    if "punkt installed" not in quiet.stdout:
        for name in ("punkt", "wordnet"):
            assert (f"allennlp_elmo_c.startup: nltk.download('{name}') from "
                    "allennlp_models.rc.tools.narrativeqa skipped") in quiet.stdout  # fmt: skip
        assert "[nltk_data] Error loading punkt" in loud.stderr
    assert not (tmp_path / "home" / "nltk_data").exists()


def test_the_finder_wraps_only_the_narrativeqa_import():
    import importlib.machinery

    import allennlp_elmo_c_startup as startup

    finder = startup.QuietNarrativeQAFinder()
    assert finder.find_spec("allennlp_models.rc.tools.squad", None) is None
    assert finder.find_spec("nltk", None) is None
    import allennlp_models.rc.tools as tools

    spec = finder.find_spec(startup.NARRATIVEQA, tools.__path__)
    assert isinstance(spec.loader, startup._QuietLoader)
    assert isinstance(spec.loader.loader, importlib.machinery.SourceFileLoader)
    assert spec.loader.get_filename(startup.NARRATIVEQA).endswith("narrativeqa.py")
    before = list(sys.meta_path)
    startup.install()
    startup.install()
    assert sum(type(f).__name__ == "QuietNarrativeQAFinder" for f in sys.meta_path) <= 1
    sys.meta_path[:] = before


def test_the_unactionable_warning_and_nothing_else_is_filtered():
    def shown(message, category, module):
        with warnings.catch_warnings(record=True) as caught:
            warnings.resetwarnings()  # compat's filters alone (not the test runner's), then all
            for unactionable in compat.UNACTIONABLE_WARNINGS:
                warnings.filterwarnings("ignore", **unactionable)
            warnings.simplefilter("always", append=True)
            warnings.warn_explicit(message, category, "x.py", 1, module=module)
        return len(caught)

    trainer = "allennlp.training.gradient_descent_trainer"
    autocast = "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast`"
    assert shown(autocast, FutureWarning, trainer) == 0
    assert shown(autocast, FutureWarning, "somewhere.else") == 1
    assert shown("another deprecation", FutureWarning, trainer) == 1
    pkg = "pkg_resources is deprecated as an API. See https://setuptools.pypa.io"
    assert shown(pkg, UserWarning, "rouge.rouge") == 1  # ignored only inside the NarrativeQA import


class _WritesMarker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (exec, (f"open({str(self.path)!r}, 'w').close()",))


def test_allennlp_weight_loads_are_weights_only_whatever_the_environment(tmp_path, monkeypatch):
    """`read_state_dict` (every archive's weights.th) and the trainer's reload of best.th refuse
    a pickle that runs code even with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, which makes AllenNLP's
    own calls (no weights_only) run it."""
    from allennlp.common.checks import ConfigurationError
    from allennlp.nn import util as nn_util
    from allennlp.training.gradient_descent_trainer import GradientDescentTrainer

    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker, path = tmp_path / "marker", tmp_path / "weights.th"
    torch.save({"weight": torch.ones(2), "x": _WritesMarker(marker)}, path)
    with pytest.raises(ConfigurationError, match="weights.th: refused"):
        nn_util.read_state_dict(path)
    trainer = GradientDescentTrainer.__new__(GradientDescentTrainer)
    trainer._ddp_wrapped_model, trainer.model = None, torch.nn.Linear(2, 1)
    with pytest.raises(ConfigurationError, match="weights.th: refused"):
        trainer._load_model_state(str(path))
    assert not marker.exists()
    torch.save(trainer.model.state_dict(), tmp_path / "best.th")
    trainer._load_model_state(str(tmp_path / "best.th"))
    assert set(nn_util.read_state_dict(tmp_path / "best.th")) == {"weight", "bias"}
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        compat.ORIGINALS["read_state_dict"](path)
    assert marker.exists()  # AllenNLP's own function ran the pickle


def test_recover_reads_the_run_config_as_plain_json(tmp_path, monkeypatch):
    from allennlp.common.checks import ConfigurationError
    from allennlp.training import util as training_util

    monkeypatch.setenv("COMPAT_TEST_VALUE", "from the environment")
    (tmp_path / "config.json").write_text('{"a": std.extVar("COMPAT_TEST_VALUE")}')
    params = Params({"a": "from the environment"})
    with pytest.raises(ConfigurationError, match="not plain JSON"):
        training_util.create_serialization_dir(params, str(tmp_path), True, False)
    # AllenNLP's own function evaluates it as jsonnet, the variable included (and so matches).
    compat.ORIGINALS["create_serialization_dir"](params, str(tmp_path), True, False)
    (tmp_path / "config.json").write_text('{"a": "from the environment"}')
    training_util.create_serialization_dir(params, str(tmp_path), True, False)
