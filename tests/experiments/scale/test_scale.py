"""`experiments/scale`: the memory table and the plan's accuracy at fixture size (plumbing, the
tables and their JSON; no timing or memory assertions)."""
import json

import pytest

from experiments.scale import at_size, memory, plan_accuracy
from tests.helpers import LM_DATA, SENTENCES, TINY_FASTTEXT

SIXTEEN = {"model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
           "model.contextualizer.input_size": 16}  # fmt: skip
COMMON = ["--fasttext", str(TINY_FASTTEXT), "--validation", str(LM_DATA / "dev.txt"),
          "--updates", "2", "--overrides", json.dumps(SIXTEEN)]  # fmt: skip


def test_memory_rows_for_each_loader_and_size(tmp_path):
    report = tmp_path / "SCALE.md"
    report.write_text(f"# Scale\n\n{memory.BEGIN}\nold\n{memory.END}\n\nkept\n")
    out = tmp_path / "memory.json"
    memory.main(["--source", str(SENTENCES), "--tokens", "300", "600", "--in-memory-tokens", "300",
                 "--work-dir", str(tmp_path / "work"), "--out", str(out), "--report", str(report),
                 *COMMON])  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert [(row["loader"], row["tokens"] >= size) for row, size in zip(rows, (300, 600, 300))] == [
        ("lm_stream", True), ("lm_stream", True), ("in memory", True)]
    assert all(row["peak_memory_bytes"] > 0 and row["seconds_per_update"] > 0 for row in rows)
    text = report.read_text()
    assert "old" not in text and text.endswith("kept\n") and "| in memory | " in text
    assert "repeated to size" in text


def test_plan_accuracy_compares_the_plan_with_the_run_it_plans(tmp_path):
    report, out = tmp_path / "SCALE.md", tmp_path / "accuracy.json"
    plan_accuracy.main(["--corpus", str(SENTENCES), "--work-dir", str(tmp_path / "work"),
                        "--out", str(out), "--report", str(report), "--conditions", "tests",
                        *COMMON])  # fmt: skip
    (row,) = json.loads(out.read_text())["rows"]
    assert row["updates"] == row["updates_trained"] == 1  # 15 windows in one batch of 64
    assert row["seconds"] > 0 and row["estimated_seconds"] > 0
    assert row["peak_memory_bytes"] > 0 and row["estimated_peak_memory_bytes"] > 0
    assert "| sentences.txt | 251 | 1 / 1 |" in report.read_text()


def test_at_size_prepares_plans_trains_kills_and_resumes(tmp_path):
    report, out = tmp_path / "SCALE.md", tmp_path / "at_size.json"
    at_size.main(["--source", str(SENTENCES), "--fasttext", str(TINY_FASTTEXT), "--copies", "12",
                  "--validation", str(LM_DATA / "dev.txt"),
                  "--updates", "4", "--plan-updates", "2", "--checkpoint-every", "2",
                  "--overrides", json.dumps({**SIXTEEN, "data_loader.batch_size": 2}),
                  "--work-dir", str(tmp_path / "work"), "--out", str(out), "--report", str(report),
                  "--conditions", "tests"])  # fmt: skip
    record = json.loads(out.read_text())
    # 12 copies of the fixture corpus (an epoch of 100 batches, so that neither run ends it),
    # each sentence led by its copy's token, none removed.
    # (spaCy tokenizes each copy alike: their counts are equal.)
    tokens = record["prepare_corpus"]["train_tokens"]
    assert tokens >= 12 * (251 + 25) and tokens % 12 == 0
    assert record["first"]["updates"] >= 4 and record["resumed"]["updates"] >= 4
    assert record["checkpoint"].startswith("model_state_e0_b")
    assert record["plan"]["updates"] > 8 and record["replayed_first_update_seconds"] > 0
    assert "| --recover without skip_trained_batches" in report.read_text()


def test_a_prepare_corpus_run_made_apart_is_read_from_gnu_time_and_its_manifest(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    splits = {"train": {"tokens": 1_000_000}, "validation": {"tokens": 10_000}}
    (corpus / "manifest.json").write_text(json.dumps({"stats": {"splits": splits}}))
    log = tmp_path / "prepare.log"
    log.write_text("prepare-corpus: 1.01M tokens\n"
                   '\tCommand being timed: "python -m allennlp_elmo_c prepare-corpus raw corpus"\n'
                   "\tUser time (seconds): 50.50\n\tSystem time (seconds): 0.50\n"
                   "\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.5\n"
                   "\tMaximum resident set size (kbytes): 2048\n\tExit status: 0\n")  # fmt: skip
    record = at_size.gnu_time_record(log, corpus)
    assert record["seconds"] == 3723.5 and record["cpu_seconds"] == 51.0
    assert record["peak_memory_bytes"] == 2048 * 1024 and record["train_tokens"] == 1_000_000
    assert record["command"] == "python -m allennlp_elmo_c prepare-corpus raw corpus"
    shown = at_size._prepared(record)
    assert shown.startswith("1,000,000 training tokens in 62.1 min") and "19,804 tokens a CPU" in shown
    log.write_text(log.read_text().replace("Exit status: 0", "Exit status: 1"))
    with pytest.raises(ValueError, match="exited with status 1"):
        at_size.gnu_time_record(log, corpus)
