"""`experiments/speed/product_rates.py`, one round (plumbing only, no timing assertions): every shape is
measured both ways, and the two products agree to float32 rounding."""
import subprocess
import sys

from tests import PROJECT_ROOT


def test_every_shape_measured_both_ways():
    command = [sys.executable, "-m", "experiments.speed.product_rates",
               "--threads", "1", "--rounds", "1"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("paper", "demo"))]
    assert len(rows) == 6
    for row in rows:
        *_, mm, onednn, ratio, difference = row.split()
        assert float(mm) > 0 and float(onednn) > 0 and ratio.endswith("x")
        assert float(difference) < 1e-5
