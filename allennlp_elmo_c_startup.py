"""
What allennlp-elmo-c does as Python starts, before anything imports torch: let OpenMP's threads
wait passively (`wait_passively`), and keep allennlp-models' NarrativeQA tool from downloading
NLTK data, and from printing that download's failure, when AllenNLP's `allennlp` command imports
it.

torch's CPU operators run on OpenMP (GNU OpenMP, `libgomp`, in torch's Linux wheels), whose
threads spin at the end of each parallel region before they sleep, and a training step has
hundreds of small regions. When another process shares the cores, a spinning thread holds a
core that the thread it waits for needs: two threads then take several times as long per step
as one (`experiments/speed/shared_cores.py` measures it). With
`OMP_WAIT_POLICY=PASSIVE` they sleep at once. OpenMP reads the variable when its library loads,
that is when torch is imported, and never again; so `wait_passively` sets it (unless it is set:
a user's own value wins) only while no OpenMP runtime is loaded in the process, and otherwise
does nothing.

`allennlp <command>` imports every module of allennlp-models before it loads any plugin
(`--include-package` comes after). One of them, `allennlp_models.rc.tools.narrativeqa`, calls
`nltk.download("punkt")` and `nltk.download("wordnet")` when it is imported and punkt is not
installed: offline that prints eight `[nltk_data] Error loading ...` lines before anything else,
online it writes into `~/nltk_data`. It also imports `rouge`, whose `import pkg_resources` prints
setuptools' deprecation warning. None of this is ours and nothing here downloads at run time, so
while that one module is being imported, and only then, `nltk.download` returns False (NLTK's
own value for a download that did not happen; logged at DEBUG) and that one warning of
`rouge.rouge` is ignored. `nltk.download` called by anything else, your code included, is NLTK's
own; the NarrativeQA tool itself still works once its data is installed
(`python -m nltk.downloader punkt_tab wordnet`).

`allennlp_elmo_c_startup.pth`, installed into site-packages with the package, is read at every
interpreter start: when the program is the `allennlp` command, and only then, it imports this
module and calls `install` (other programs pay one comparison). Importing `allennlp_elmo_c` calls
`wait_passively` before it imports torch (for `python -m allennlp_elmo_c`, and for Python code that
imports the plugin before torch), and `install` (for Python code that imports allennlp-models
after the plugin). This module imports only the standard library.
"""

import importlib.abc
import importlib.machinery
import logging
import os
import sys
import warnings
from typing import Any, Optional, Sequence

NARRATIVEQA = "allennlp_models.rc.tools.narrativeqa"

# `warnings.filterwarnings` arguments of the one warning ignored while NARRATIVEQA is imported.
PKG_RESOURCES_WARNING = {
    "message": r"pkg_resources is deprecated as an API",
    "category": UserWarning,
    "module": r"rouge\.rouge",
}

# What the OpenMP runtimes' shared libraries are called: GNU's (torch's Linux wheels), LLVM's
# (torch's macOS wheels) and Intel's.
OPENMP_LIBRARIES = ("libgomp", "libomp", "libiomp")
WAIT_POLICY = "OMP_WAIT_POLICY"

logger = logging.getLogger("allennlp_elmo_c.startup")


def openmp_loaded() -> bool:
    """Whether an OpenMP runtime is loaded in this process: torch is imported, or a library of
    `OPENMP_LIBRARIES` is mapped (Linux's `/proc/self/maps`; elsewhere torch alone tells)."""
    if "torch" in sys.modules:
        return True
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any(name in line for line in maps for name in OPENMP_LIBRARIES)
    except OSError:
        return False


def wait_passively() -> None:
    """Sets `OMP_WAIT_POLICY=PASSIVE` unless the variable is set, while no OpenMP runtime is
    loaded (the runtime reads it as it loads); once one is loaded, does nothing."""
    if WAIT_POLICY not in os.environ and not openmp_loaded():
        os.environ[WAIT_POLICY] = "PASSIVE"


def skipped_download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
    """What `nltk.download` is while NARRATIVEQA is imported."""
    logger.debug("nltk.download(%r) from %s skipped: nothing is downloaded at run time",
                 info_or_id, NARRATIVEQA)  # fmt: skip
    return False


class _QuietLoader(importlib.abc.Loader):
    """Runs the real loader of NARRATIVEQA with `nltk.download` skipped and the warning ignored."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ...: the real loader's
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        try:
            import nltk
        except ImportError:  # the module's own `import nltk` raises the error
            nltk = None
        download = getattr(nltk, "download", None)
        if nltk is not None:
            nltk.download = skipped_download
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", **PKG_RESOURCES_WARNING)
                self.loader.exec_module(module)
        finally:
            if nltk is not None:
                nltk.download = download


class QuietNarrativeQAFinder(importlib.abc.MetaPathFinder):
    """Finds NARRATIVEQA where Python's path finder would, and loads it with `_QuietLoader`."""

    def find_spec(self, name: str, path: Optional[Sequence[str]] = None, target: Any = None):
        if name != NARRATIVEQA:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None  # the next finders on sys.meta_path find it, or report it missing
        spec.loader = _QuietLoader(spec.loader)
        return spec


def install() -> None:
    """What the `allennlp` command does at start: `wait_passively`, then puts
    `QuietNarrativeQAFinder` first on `sys.meta_path`, once (nothing to do when NARRATIVEQA is
    already imported)."""
    wait_passively()
    if NARRATIVEQA in sys.modules:
        return
    if any(type(finder).__name__ == QuietNarrativeQAFinder.__name__ for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, QuietNarrativeQAFinder())

