"""
OpenMP's threads wait passively in every way in where the plugin comes before torch: the
`allennlp` command (the startup hook), `python -m allennlp_elmo_c`, and a script that imports
the plugin before torch; a user's own OMP_WAIT_POLICY wins, and once torch is loaded the plugin
changes nothing. What OpenMP read is what it prints itself as it loads (`OMP_DISPLAY_ENV=VERBOSE`:
GNU OpenMP's spin count at a barrier, 0 when waiting passively).
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import user_environment

SPIN_COUNT = re.compile(r"GOMP_SPINCOUNT = '(\d+)'")
PYTHON, ALLENNLP = sys.executable, str(Path(sys.executable).with_name("allennlp"))
PRINT_POLICY = "import os; print('policy', os.environ.get('OMP_WAIT_POLICY'))"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="GNU OpenMP: torch's Linux wheels")


def spin_counts(command, **variables):
    """The spin counts every OpenMP library `command` loaded read, and what it printed."""
    environment = {name: value for name, value in user_environment(**variables).items()
                   if name != "OMP_WAIT_POLICY" or "OMP_WAIT_POLICY" in variables}  # fmt: skip
    environment["OMP_DISPLAY_ENV"] = "VERBOSE"
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = {int(count) for count in SPIN_COUNT.findall(result.stderr)}
    assert counts, result.stderr[-3000:]
    return counts, result.stdout


@pytest.mark.parametrize("command", [
    [ALLENNLP, "--help"],
    [PYTHON, "-m", "allennlp_elmo_c", "--help"],
    [PYTHON, "-c", "import allennlp_elmo_c, torch; torch.ones(2).sum()"],
], ids=["allennlp", "python -m allennlp_elmo_c", "plugin before torch"])  # fmt: skip
def test_openmp_waits_passively_where_the_plugin_comes_first(command):
    counts, _ = spin_counts(command)
    assert counts == {0}


def test_the_users_own_policy_wins():
    counts, _ = spin_counts([ALLENNLP, "--help"], OMP_WAIT_POLICY="ACTIVE")
    assert counts and 0 not in counts


def test_after_torch_the_plugin_sets_nothing():
    counts, printed = spin_counts([PYTHON, "-c", "import torch, allennlp_elmo_c; " + PRINT_POLICY])
    assert 0 not in counts and "policy None" in printed


def test_other_programs_are_left_alone():
    counts, printed = spin_counts([PYTHON, "-c", "import torch; " + PRINT_POLICY])
    assert 0 not in counts and "policy None" in printed
