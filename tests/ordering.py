"""
A pytest plugin that runs the test modules longest first, from their recorded durations.

`make test` hands whole modules to its workers (`--dist loadscope --no-loadscope-reorder`) in
collection order; with the longest first, no worker is left alone with a long module at the end.
Each module's duration is the sum of its tests' setup, call and teardown seconds. A run records
what it measured in pytest's cache (`.pytest_cache`, for the next run here); `--record-durations`
also writes the committed `tests/durations.json`, which orders a fresh clone (CI). A module in
neither, a new one, runs after the recorded ones; a recorded module that no longer exists is
ignored. The order changes no result: within a module, tests keep pytest's order.
"""

import json
from collections import defaultdict
from pathlib import Path
from typing import Dict

import pytest

CACHE_KEY = "allennlp_elmo_c/module_seconds"
RECORDED = Path(__file__).resolve().parent / "durations.json"


def pytest_addoption(parser) -> None:
    parser.addoption("--record-durations", action="store_true",
                     help="write the modules' durations of this run into tests/durations.json")
    parser.addini("module_durations", "the committed durations file", default=str(RECORDED))


def recorded_seconds(config) -> Dict[str, float]:
    """The committed durations, updated by the ones this checkout's last run cached."""
    seconds: Dict[str, float] = {}
    path = Path(config.getini("module_durations"))
    if path.is_file():
        seconds.update(json.loads(path.read_text(encoding="utf-8")))
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    if cache is not None:
        seconds.update(cache.get(CACHE_KEY, {}))
    return seconds


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (by fixture), kept in each module
def pytest_collection_modifyitems(config, items) -> None:
    seconds = recorded_seconds(config)

    def longest_first(item) -> float:
        return -seconds.get(item.nodeid.split("::")[0], -1.0)  # unrecorded: after the rest

    items.sort(key=longest_first)


class DurationRecorder:
    """Adds up the seconds of each module's reports (in the controller under xdist, where every
    worker's reports arrive) and keeps them when the session ends."""

    def __init__(self, config) -> None:
        self.config = config
        self.seconds: Dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid.split("::")[0]] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        if not self.seconds:
            return
        measured = {module: round(value, 2) for module, value in sorted(self.seconds.items())}
        cache = getattr(self.config, "cache", None)
        if cache is not None:
            cache.set(CACHE_KEY, {**cache.get(CACHE_KEY, {}), **measured})
        if self.config.getoption("record_durations"):
            path = Path(self.config.getini("module_durations"))
            path.write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # not in an xdist worker: the controller, or -n 0
        config.pluginmanager.register(DurationRecorder(config), "module-durations")
