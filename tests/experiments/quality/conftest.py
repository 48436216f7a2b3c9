from pathlib import Path
from typing import NamedTuple

import pytest

from tests.experiments.quality.pipeline_fixtures import (
    ALL_SYSTEMS,
    EARLIER,
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


@pytest.fixture(scope="session")
def shared_inputs(tmp_path_factory):
    """The same data in one directory for the session: the shared run of pretrained systems
    reads it, and so must a test that goes on from that run (its cached steps name these
    paths)."""
    return write_inputs(tmp_path_factory.mktemp("quality_inputs"))


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
    Tests using it go to one xdist worker (`xdist_group("pretrained_systems")`), which runs it
    once.
    """
    from experiments.quality import per_minute

    root = tmp_path_factory.mktemp("pretrained_systems")
    out = root / "out"
    argv = per_minute_argv(root, out, shared_inputs)
    (root / "QUALITY.md").write_text(EARLIER)
    with plugin_commands_in_process():
        per_minute.main(argv + ["--systems", ",".join(ALL_SYSTEMS), "--only", "pretrain"])
        per_minute.main(argv)
    return PretrainedSystems(root, out, argv)
