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
