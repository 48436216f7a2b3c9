"""`experiments/speed/directions.py` at a tiny table (plumbing only, no timing assertions): each
row runs in its own pinned process and the ratios print."""
import os

from experiments.speed import directions


def test_each_row_runs_and_the_ratios_print(capsys):
    cpu = min(os.sched_getaffinity(0))
    directions.main(["--cpus", str(cpu), str(cpu), "--repeats", "1", "--steps", "1",
                     "--warmup", "0", "--fasttext-rows", "1000"])  # fmt: skip
    printed = capsys.readouterr().out
    assert all(f"| 1 | {row} |" in printed for row in directions.ROWS)
    assert "2 cores, at once: median" in printed
