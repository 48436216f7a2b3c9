"""`experiments/speed/shared_cores.py` at smoke size (plumbing only, no timing assertions): each
configuration runs in its own process under the wait policy it names, beside a busy loop that is
gone afterwards, and the report is rendered from the JSON alone."""
from pathlib import Path

import pytest

from experiments.speed import shared_cores


def busy_loops_running():
    """Processes running the script's busy loop, by their command line."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if shared_cores.BUSY_LOOP.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            pass
    return found


def test_each_policy_reaches_openmp_and_the_report_renders_from_the_json(tmp_path):
    json_path, report = tmp_path / "shared_cores.json", tmp_path / "RESULTS.md"
    report.write_text("# Results\n\nkept\n")
    result = shared_cores.main([
        "--sizes", "small", "--threads", "1", "2", "free", "--policies", "default", "PASSIVE",
        "--steps", "1", "--warmup", "0", "--batch-size", "4", "--timesteps", "3",
        "--json", str(json_path), "--report", str(report)])  # fmt: skip
    rows = {(row["threads"], row["policy"]): row for row in result["rows"]}
    assert set(rows) == {(threads, policy) for threads in (1, 2, "free")
                         for policy in ("default", "PASSIVE")}  # fmt: skip
    assert all(row["load"] == "busy" and len(row["seconds"]) == 1 for row in rows.values())
    assert rows[(2, "PASSIVE")]["spin_count"] == 0 and rows[(2, "default")]["spin_count"] > 0
    assert rows[(2, "default")]["torch_threads"] == 2 and rows[(1, "PASSIVE")]["torch_threads"] == 1
    # The busy loop holds one of the two CPUs: the free-CPU rule leaves one thread.
    assert rows[("free", "PASSIVE")]["torch_threads"] == 1
    assert busy_loops_running() == []
    written = report.read_text()
    assert written.startswith("# Results\n\nkept\n") and shared_cores.BEGIN in written
    assert "| small, 4 x 3 | busy | 2 | " in written and "x) |" in written
    assert "| small, 4 x 3 | busy | free (1) | " in written
    rerendered = tmp_path / "again.md"
    shared_cores.main(["--render", "--json", str(json_path), "--report", str(rerendered)])
    assert rerendered.read_text() in written


def test_a_policy_openmp_did_not_read_is_refused():
    shared_cores.check_spin_count("PASSIVE", 0)
    shared_cores.check_spin_count("default", 300_000)
    with pytest.raises(RuntimeError, match="did not reach OpenMP"):
        shared_cores.check_spin_count("PASSIVE", 300_000)
    with pytest.raises(RuntimeError, match="did not reach OpenMP"):
        shared_cores.check_spin_count("default", 0)
