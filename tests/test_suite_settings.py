"""The suite's own settings (pytest.ini) do what they are there for."""

from tests import PROJECT_ROOT

FILTER = "error::pytest.PytestUnhandledThreadExceptionWarning"

ASSERTS_IN_A_THREAD = """
import threading

def test_asserts_in_a_worker_thread():
    def work():
        assert 1 + 1 == 3, "wrong in the worker"

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
"""


def test_an_exception_in_a_thread_fails_the_test(pytester):
    """pytest alone reports an exception in a thread as a warning, and the test passes; with the
    suite's pytest.ini it fails. (In a subprocess: pytest itself, without torch; in process, this
    session's own warning filters would leak into the inner run.)"""
    ini = (PROJECT_ROOT / "pytest.ini").read_text()
    assert FILTER in ini
    pytester.makepyfile(test_thread=ASSERTS_IN_A_THREAD)
    pytester.makeini(ini)
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    failed.assert_outcomes(failed=1)
    assert "wrong in the worker" in failed.stdout.str()
    # The control: the same test without that line passes, with a warning.
    pytester.makeini(ini.replace(FILTER, ""))
    passed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    passed.assert_outcomes(passed=1)
    assert "PytestUnhandledThreadExceptionWarning" in passed.stdout.str()


def test_a_plugin_command_run_in_process_exits_as_its_subprocess_would(tmp_path):
    """`tests.helpers.run_plugin_command` (the quality pipelines' tests run their
    `python -m allennlp_elmo_c` commands with it): a failing command's status is 1 and its
    traceback goes where its output goes; `--help` exits 0 with the usage; the environment and
    the working directory are put back."""
    import os
    import sys

    from tests.helpers import run_plugin_command

    plugin = [sys.executable, "-m", "allennlp_elmo_c"]
    directory, environment = os.getcwd(), dict(os.environ)
    log = tmp_path / "run.log"
    with open(log, "w") as stream:
        failed = run_plugin_command(
            [*plugin, "train", str(tmp_path / "missing.jsonnet"), "-s", str(tmp_path / "run")],
            cwd=tmp_path, env=dict(os.environ, ELMO_C_TEST_ONLY="1"), stdout=stream,
            stderr=stream,
        )  # fmt: skip
    assert failed.returncode == 1 and "missing.jsonnet" in log.read_text()
    assert os.getcwd() == directory and dict(os.environ) == environment
    usage = run_plugin_command([*plugin, "describe", "--help"], capture_output=True, text=True)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m allennlp_elmo_c describe")
