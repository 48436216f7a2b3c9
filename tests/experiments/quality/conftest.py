import os
import shutil
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
from filelock import FileLock

from tests.experiments.quality.pipeline_fixtures import (
    ALL_SYSTEMS,
    EARLIER,
    inputs_in,
    per_minute_argv,
    write_inputs,
)
from tests.helpers import plugin_commands_in_process


@pytest.fixture
def in_process():
    """The pipeline scripts' `python -m allennlp_elmo_c` commands (training, evaluation) run in
    the test's process (`tests.helpers.run_plugin_command`): their plumbing is what these tests
    check. `test_an_interrupted_training_resumes_from_its_checkpoint` (test_quality.py) runs
    them as real subprocesses."""
    with plugin_commands_in_process():
        yield


@pytest.fixture
def inputs(tmp_path):
    """The pipelines' fixture data in the test's own directory (`write_inputs`)."""
    return write_inputs(tmp_path)


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """A directory `name` that `make` fills once for the whole session: under pytest-xdist, the
    first worker to ask makes it in the session's base directory (shared by the workers) while
    the others wait for it, and all use it; without xdist, an ordinary temporary directory."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        directory = tmp_path_factory.mktemp(name)
        make(directory)
        return directory
    root = tmp_path_factory.getbasetemp().parent  # the session's, above each worker's own
    directory, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)  # a worker's attempt that failed
            directory.mkdir()
            make(directory)
            done.touch()
    return directory


@pytest.fixture(scope="session")
def shared_inputs(tmp_path_factory):
    """The same data in one directory for the session (`made_once`): the shared run of
    pretrained systems reads it, and so must a test that goes on from that run (its cached steps
    name these paths)."""
    return inputs_in(made_once(tmp_path_factory, "quality_inputs", write_inputs))


class PretrainedSystems(NamedTuple):
    root: Path  # the run's report (QUALITY.md) and plot
    out: Path  # its steps and runs
    argv: list  # the per_minute.py arguments it ran with (`per_minute_argv`)


@pytest.fixture(scope="session")
def pretrained_systems(tmp_path_factory, shared_inputs) -> PretrainedSystems:
    """
    One run of `experiments/quality/per_minute.py` at fixture size for the session, shared by the
    pipeline tests (read only: a test that goes on from it works on a copy, `copy_run`): every
    system of per_minute.py pretrained to the two budgets (`--only pretrain`), then the script's
    own run (its three default systems evaluated, POS downstream for each snapshot and for
    fastText alone, the report); its `python -m allennlp_elmo_c` commands in process (`in_process`).
    Made once for the session, whichever xdist worker first needs it (`made_once`).
    """
    from experiments.quality import per_minute

    def run(root: Path) -> None:
        (root / "QUALITY.md").write_text(EARLIER)
        argv = per_minute_argv(root, root / "out", shared_inputs)
        with plugin_commands_in_process():
            per_minute.main(argv + ["--systems", ",".join(ALL_SYSTEMS), "--only", "pretrain"])
            per_minute.main(argv)

    root = made_once(tmp_path_factory, "pretrained_systems", run)
    return PretrainedSystems(root, root / "out", per_minute_argv(root, root / "out", shared_inputs))
