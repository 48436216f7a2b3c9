"""`experiments/speed/encoder_backends.py` and `encoder_report.py`, one tiny run (plumbing only, no
timing assertions): the rows asked for are timed and recorded, the products row counts the same
tokens as the training-step rows, and the report renders them."""
import json
import subprocess
import sys

from tests import PROJECT_ROOT


def test_rows_recorded_and_reported(tmp_path):
    record_path = tmp_path / "cpu.jsonl"
    command = [sys.executable, "-m", "experiments.speed.encoder_backends", "--threads", "1",
               "--batch-size", "8", "--timesteps", "6", "--steps", "1", "--warmup", "0",
               "--rows", "fused,fused_torch_ops,fused_torch_mm,products", "--update", "none",
               "--json", str(record_path)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr
    assert "forward + backward;" in result.stdout
    (record,) = [json.loads(line) for line in record_path.read_text().splitlines()]
    assert record["update"] == "none" and record["threads"] == 1
    speeds = record["tokens_per_second"]
    assert set(speeds) == {"fused", "fused_torch_ops", "fused_torch_mm", "products"}
    assert all(speed > 0 for speed in speeds.values())
    report = subprocess.run([sys.executable, "-m", "experiments.speed.encoder_report", str(tmp_path)],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    (row,) = [line for line in report.splitlines() if line.startswith("| demo, 8 x 6 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    # reference, allennlp, outside and floor were not asked for; no ratio needs them but fused /
    # products.
    assert cells[2] == "-" and all(cell != "-" for cell in cells[3:6] + [cells[9]])
    assert cells[6:9] == ["-", "-", "-"]
    assert cells[-1].endswith("x") and cells[-3] == "-"
    assert "one step = forward + backward;" in report
