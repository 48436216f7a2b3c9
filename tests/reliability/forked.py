"""
`python -m <module> <arguments>` (`allennlp_elmo_c`: `allennlp train ...` with the plugin) in a
process of its own, forked from a server that imported torch, AllenNLP, allennlp-models and the
plugin once (multiprocessing's `forkserver`), instead of a new interpreter that pays those imports
again (about 10 CPU seconds a process). The child is still a process of its own: its exit status
(a SIGKILL included), its environment and working directory, its stdout and stderr, its own
session if asked. The server is a clean process (it never ran a test): the child inherits no
test's state.
"""

import atexit
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

# Imported once by the server, in the order `python -m allennlp_elmo_c` imports them (the plugin
# before torch, as a fresh interpreter would).
PRELOAD = ["allennlp_elmo_c", "allennlp.commands", "allennlp_models"]
_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _main(module: str, arguments: List[str], environment: Dict[str, str], cwd: str,
          stdout: str, stderr: Optional[str], new_session: bool) -> None:  # fmt: skip
    """In the child: `python -m module arguments` with this environment, directory and output
    (`stderr` None: into stdout's file), in a session of its own with `new_session`."""
    if new_session:
        os.setsid()
    with open(stdout, "ab") as file:
        os.dup2(file.fileno(), 1)
    if stderr is None:
        os.dup2(1, 2)
    else:
        with open(stderr, "ab") as file:
            os.dup2(file.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    # What a fresh interpreter's OpenMP reads from $OMP_NUM_THREADS (the server read it once).
    import torch

    torch.set_num_threads(int(environment.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0))))
    sys.argv = [module, *arguments]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        atexit._run_exitfuncs()  # as an interpreter's exit does (multiprocessing's `os._exit` not)
        sys.stdout.flush()
        sys.stderr.flush()


def start(arguments: List[str], environment: Dict[str, str], cwd, stdout, stderr=None,
          module: str = "allennlp_elmo_c", new_session: bool = False):  # fmt: skip
    """Starts `python -m module arguments`, its output appended to the files `stdout` and
    `stderr` (None: both into `stdout`); returns the `multiprocessing` process (`pid`,
    `join(timeout)`, `exitcode`: -signal when killed by one)."""
    child = _context.Process(target=_main, args=(module, arguments, environment, str(cwd),
                                                 str(stdout), stderr and str(stderr), new_session))  # fmt: skip
    child.start()
    return child


def run(arguments: List[str], environment: Dict[str, str], cwd, module: str = "allennlp_elmo_c",
        timeout: float = 600) -> subprocess.CompletedProcess:  # fmt: skip
    """As `subprocess.run([python, "-m", module, *arguments], capture_output=True, text=True)`:
    the exit status (-signal when killed by one), stdout and stderr; kills the child and raises
    `subprocess.TimeoutExpired` past `timeout` seconds."""
    with tempfile.TemporaryDirectory() as directory:
        out, err = os.path.join(directory, "stdout"), os.path.join(directory, "stderr")
        child = start(arguments, environment, cwd, out, err, module)
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired([module, *arguments], timeout)
        texts = [open(path, encoding="utf-8", errors="replace").read() for path in (out, err)]
    return subprocess.CompletedProcess([module, *arguments], child.exitcode, *texts)
