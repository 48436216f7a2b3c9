"""`tests/ordering.py`: modules run longest first from their recorded durations, new modules
last, and a run records what it measured."""
import json

pytest_plugins = ["pytester"]


def write_modules(pytester):
    pytester.makepyfile(
        test_a="def test_one():\n    pass\n\ndef test_two():\n    pass\n",
        test_b="import time\n\ndef test_slow():\n    time.sleep(0.2)\n",
        test_c="def test_new():\n    pass\n",
    )


def order(result):
    return [line.split("::")[0].split()[-1] + "::" + line.split("::")[1].split()[0]
            for line in result.outlines if "::" in line and ("PASSED" in line)]


def test_recorded_modules_run_longest_first_and_unrecorded_ones_last(pytester):
    write_modules(pytester)
    durations = pytester.path / "durations.json"
    durations.write_text(json.dumps({"test_a.py": 1.0, "test_b.py": 10.0, "gone.py": 99.0}))
    pytester.makeini(f"[pytest]\nmodule_durations = {durations}\n")
    result = pytester.runpytest("-p", "tests.ordering", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert order(result) == ["test_b.py::test_slow", "test_a.py::test_one", "test_a.py::test_two",
                             "test_c.py::test_new"]  # fmt: skip


def test_a_run_records_each_modules_seconds_for_the_next(pytester):
    write_modules(pytester)
    durations = pytester.path / "durations.json"
    pytester.makeini(f"[pytest]\nmodule_durations = {durations}\n")
    pytester.runpytest("-p", "tests.ordering", "--record-durations").assert_outcomes(passed=4)
    recorded = json.loads(durations.read_text())
    assert set(recorded) == {"test_a.py", "test_b.py", "test_c.py"}
    assert recorded["test_b.py"] >= 0.2 > recorded["test_a.py"]
    # Without the file, the cache of the last run orders the next one.
    durations.unlink()
    result = pytester.runpytest("-p", "tests.ordering", "-v")
    assert order(result)[0] == "test_b.py::test_slow"
