"""`experiments/speed/run.py --e2e-precisions`: ELMo-C in float32 and bfloat16 side by side with
the float32 peer, at smoke size (plumbing only, no timing assertions)."""
import json

from experiments.speed import run
from tests.helpers import needs_fast_bfloat16


@needs_fast_bfloat16
def test_each_precision_gets_a_row_and_every_row_its_ratio_to_each(tmp_path):
    out, report = tmp_path / "results.json", tmp_path / "RESULTS.md"
    run.main(["--smoke", "--device", "cpu", "--sections", "end_to_end", "--threads", "1",
              "--e2e-precisions", "float32", "bfloat16", "--profile-ops", "0",
              "--out", str(out), "--markdown", str(report)])  # fmt: skip
    rows = json.loads(out.read_text())["sections"]["end_to_end"]
    by_model = {row["model"]: row for row in rows}
    assert by_model["ELMo-C"]["precision"] == "float32"
    assert by_model["ELMo-C (bfloat16)"]["precision"] == "bfloat16"
    assert all(row["precision"] == "float32" for name, row in by_model.items() if "peer" in name)
    for row in rows:  # each row against float32 and bfloat16 ELMo-C, timed in the same repeats
        assert row["elmo_c_speedup"] > 0 and row["bfloat16_speedup"] > 0
        low, high = row["bfloat16_speedup_range"]
        assert low <= high
    assert by_model["ELMo-C (bfloat16)"]["bfloat16_speedup"] == 1.0
    assert "| ELMo-C (bfloat16) / this |" in report.read_text()
