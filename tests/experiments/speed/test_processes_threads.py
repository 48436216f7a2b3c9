"""`experiments/speed/processes_threads.py` at fixture size (plumbing and the table; no timing
assertions): one process and two gloo processes train the same tokens."""
import json

from experiments.speed import processes_threads
from tests.helpers import LM_DATA, SENTENCES, TINY_FASTTEXT

SIXTEEN = {"model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
           "model.contextualizer.input_size": 16, "data_loader.batch_size": 2}  # fmt: skip


def test_each_layout_trains_the_same_tokens_and_the_table_renders_from_the_json(tmp_path):
    out, report = tmp_path / "processes_threads.json", tmp_path / "RESULTS.md"
    report.write_text("# Results\n\nkept\n")
    record = processes_threads.main([
        "--corpus", str(SENTENCES), "--validation", str(LM_DATA / "dev.txt"),
        "--fasttext", str(TINY_FASTTEXT), "--tokens", "400", "--layouts", "1x1", "2x1",
        "--overrides", json.dumps(SIXTEEN), "--work-dir", str(tmp_path / "work"),
        "--json", str(out), "--report", str(report)])  # fmt: skip
    one, two = record["rows"]
    assert (one["processes"], one["total_batch"], two["processes"], two["total_batch"]) == (1, 2, 2, 4)
    assert one["updates"] > two["updates"] > 0  # the same windows in half the updates, or about
    assert all(row["validation_loss"] > 0 and row["tokens_per_second"] > 0 for row in (one, two))
    assert json.loads(out.read_text()) == record
    text = report.read_text()
    assert text.startswith("# Results\n\nkept\n") and "| 2 x 1 | 4 | " in text and "(1.00x)" in text
    again = tmp_path / "again.md"
    processes_threads.main(["--render", "--json", str(out), "--report", str(again), "--corpus",
                            "-", "--validation", "-", "--fasttext", "-", "--work-dir", "-"])
    assert again.read_text() in text
