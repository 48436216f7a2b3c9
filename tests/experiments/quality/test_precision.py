"""`experiments/quality/precision.py`: float32 against bfloat16 pretraining, end to end at fixture
size (plumbing, the curve, the report and its JSON). Its verdicts are `report.downstream_difference`,
written out in test_where_elmo_c_wins.py."""
import json

from experiments import docs_numbers
from experiments.quality import precision
from tests import FIXTURES_ROOT
from tests.experiments.quality.pipeline_fixtures import TINY_SYSTEMS
from tests.helpers import needs_fast_bfloat16


@needs_fast_bfloat16
def test_both_precisions_pretrain_on_the_same_tokens_and_report(tmp_path, inputs, in_process,
                                                                monkeypatch):
    corpus, shared, brown, _ = inputs
    out, report, summary = tmp_path / "out", tmp_path / "QUALITY.md", tmp_path / "precision.json"
    report.write_text("# Quality\n\nEarlier tables.\n")
    argv = [
        "--data-dir", str(tmp_path / "data"), "--out", str(out), "--report", str(report),
        "--summary", str(summary), "--shared-data", str(shared), "--corpus-dir", str(corpus),
        "--brown-source", str(brown), "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
        "--fasttext-dim", "16", "--tasks", "pos", "--seeds", "2", "--pretrain-seeds", "2",
        "--tokens", "2560", "--points", "2", "--task-epochs", "1", "--threads", "1",
        "--pretrain-overrides", json.dumps(TINY_SYSTEMS),
    ]  # fmt: skip
    precision.main(argv)
    found = json.loads(summary.read_text())
    assert found["tasks"] == ["pos"] and found["task_seeds"] == 2
    for kind in precision.PRECISIONS:
        runs = found["pretraining"][kind]
        assert len(runs) == 2 and {run["tokens"] for run in runs} == {2560}
        for run in runs:  # a validation after each of the 2 epochs, at the tokens seen by then
            assert [point["tokens"] for point in run["curve"]] == [1280, 2560]
            assert all(0 < point["loss"] and -1 <= point["forward_cosine"] <= 1 for point in run["curve"])
        scores = found["downstream"]["pos"][kind]
        assert len(scores["test"]) == len(scores["dev"]) == 4  # 2 biLMs x 2 task seeds
    # Each biLM was trained in the precision it is filed under (its config says so).
    for kind in precision.PRECISIONS:
        config = json.loads((out / "runs" / f"pretrain-{kind}-seed1" / "config.json").read_text())
        assert config["model"]["precision"] == kind
    text = report.read_text()
    assert text.startswith("# Quality\n\nEarlier tables.\n")
    assert precision.BEGIN in text and "| 1,280 |" in text and "| 2,560 |" in text
    assert "| POS (Brown, held-out genres) acc., test |" in text
    assert "2 task seeds per biLM" in text
    # The docs' block renders from this summary: one row per measure, each with a verdict.
    monkeypatch.setattr(docs_numbers, "PRECISION_QUALITY", summary)
    table = docs_numbers.precision_quality_table().splitlines()
    assert len(table) == 2 + 3 + 1 and all(row.endswith(("ahead |", "behind |", "within |"))
                                           for row in table[2:])  # fmt: skip
    # A second run finds every step done and writes the same report.
    report.write_text("# Quality\n\nEarlier tables.\n")
    precision.main(argv)
    assert report.read_text() == text
