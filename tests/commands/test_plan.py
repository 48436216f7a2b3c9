"""`plan`: the corpus's size, the run's length and a short real run's measurements,
extrapolated, before a pretraining run starts."""
import json

import pytest
import torch

from allennlp.commands import main as allennlp_main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DataLoader, DatasetReader

from allennlp_elmo_c.commands import plan as plan_module
from allennlp_elmo_c.commands.plan import plan, render
from tests import PROJECT_ROOT
from tests.helpers import DEMO_AT_FIXTURE_SIZE, LM_DATA, SENTENCES, TINY_FASTTEXT

SMALL = str(PROJECT_ROOT / "training_config" / "elmo_c_small.jsonnet")
AT_FIXTURE_SIZE = json.dumps(DEMO_AT_FIXTURE_SIZE)  # 16-d fastText, 2 windows a batch
EXT_VARS = {"ELMO_C_FASTTEXT": str(TINY_FASTTEXT), "ELMO_C_VALIDATION_DATA": str(LM_DATA / "dev.txt")}
KEYS = {"tokens", "updates", "seconds_per_update", "estimated_seconds", "peak_memory_bytes"}


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """The plan of the small config on the fixture corpus, asked in bfloat16 on a machine made
    to refuse it, so that the fallback is seen everywhere."""
    patch = pytest.MonkeyPatch()
    patch.setattr(plan_module, "bfloat16_unsupported", lambda device: "no AVX-512 here")
    overrides = json.dumps({**DEMO_AT_FIXTURE_SIZE, "model.precision": "bfloat16"})
    try:
        yield plan(str(SENTENCES), SMALL, overrides, updates=3, ext_vars=EXT_VARS,
                   work_dir=str(tmp_path_factory.mktemp("plan")))  # fmt: skip
    finally:
        patch.undo()


def test_the_run_is_sized_from_the_corpus(planned):
    words = [len(line.split()) for line in SENTENCES.read_text().splitlines() if line.split()]
    assert planned["tokens"] == sum(words) and planned["sentences"] == len(words)
    reader = DatasetReader.from_params(Params({"type": "lm_corpus", "max_sequence_length": 21}))
    assert planned["windows"] == sum(1 for _ in reader.read(str(SENTENCES))) == 15
    loader = DataLoader.from_params(Params({"type": "lm_stream", "batch_size": 2}), reader=reader,
                                    data_path=str(SENTENCES))  # fmt: skip
    assert planned["updates_per_epoch"] == len(loader) == 8 and planned["epochs"] == 1
    assert planned["updates"] == 8


def test_a_short_run_is_measured_and_extrapolated(planned):
    assert KEYS <= set(planned)
    assert planned["measured_updates"] == 3 and planned["seconds_per_update"] > 0
    assert planned["estimated_seconds_per_epoch"] == pytest.approx(
        8 * planned["seconds_per_update"] + planned["validation_seconds_per_epoch"]
    )
    assert planned["estimated_seconds"] == pytest.approx(
        planned["seconds_to_first_update"] + planned["estimated_seconds_per_epoch"]
    )
    assert planned["validation_batches"] == 1 and planned["validation_seconds_per_epoch"] >= 0
    assert 200 * 2**20 < planned["peak_memory_bytes"] < 8 * 2**30  # a real process's peak
    assert planned["peak_gpu_memory_bytes"] == 0 and planned["device"] == "cpu"
    # The small config keeps 2 checkpoints; a third is written before the oldest goes.
    assert planned["checkpoint_bytes"] > planned["archive_bytes"] > 0
    assert planned["disk_bytes"] == 3 * planned["checkpoint_bytes"] + 2 * planned["archive_bytes"]


def test_bfloat16_refused_here_is_measured_in_float32_and_said(planned):
    assert planned["precision"] == "bfloat16" and planned["measured_precision"] == "float32"
    (note,) = [note for note in planned["notes"] if "bfloat16" in note]
    assert "bfloat16 is refused here (no AVX-512 here)" in note and "stops at its first" in note
    text = render(planned)
    assert "8 updates an epoch of 2 windows x 1 epoch(s) = 8 updates" in text
    assert "(median of 3, float32)" in text and "  note        bfloat16 is refused" in text


def test_a_loader_that_does_not_know_its_length_is_refused_before_training(tmp_path):
    sizes = {key: value for key, value in DEMO_AT_FIXTURE_SIZE.items() if "data_loader" not in key}
    overrides = json.dumps({**sizes, "data_loader": {"type": "multiprocess", "batch_size": 2,
                                                     "max_instances_in_memory": 4}})  # fmt: skip
    with pytest.raises(ConfigurationError, match="use data_loader.type 'lm_stream'"):
        plan(str(SENTENCES), SMALL, overrides, ext_vars=EXT_VARS, work_dir=str(tmp_path))


def test_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr(plan_module, "plan", lambda *args: {"called": list(args)})
    monkeypatch.setattr("sys.argv", ["allennlp", "plan", "corpus.txt", "--config", SMALL,
                                     "-o", "{}", "--updates", "4", "--json"])  # fmt: skip
    allennlp_main(prog="allennlp")
    assert json.loads(capsys.readouterr().out) == {"called": ["corpus.txt", SMALL, "{}", 4]}


def test_on_several_cpus_the_plan_advises_a_process_a_cpu_and_says_what_it_does_to_the_run():
    from allennlp_elmo_c.commands.plan import processes_advice

    sizes = {"processes": 1, "batch_size": 64}
    advice = processes_advice(sizes, torch.device("cpu"), 2)
    assert """-o '{"distributed": {"cuda_devices": [-1, -1]}}'""" in advice
    assert "the total batch becomes 2 x 64 windows and an epoch 2 times fewer updates" in advice
    assert processes_advice(sizes, torch.device("cpu"), 1) is None
    assert processes_advice(sizes, torch.device("cuda", 0), 4) is None
    assert processes_advice({**sizes, "processes": 2}, torch.device("cpu"), 2) is None



def test_the_help_says_the_config_runs_as_code(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["allennlp", "plan", "--help"])
    with pytest.raises(SystemExit):
        allennlp_main(prog="allennlp")
    text = " ".join(capsys.readouterr().out.split())
    assert "code runs as in allennlp train: plan only configs you trust" in text
