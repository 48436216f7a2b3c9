"""
The one thing allennlp-elmo-c does as Python starts: keep allennlp-models' NarrativeQA tool from
downloading NLTK data, and from printing that download's failure, when AllenNLP's `allennlp`
command imports it.

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
`install` too (for `python -m allennlp_elmo_c` and for Python code that imports allennlp-models
after the plugin). This module imports only the standard library.
"""

import importlib.abc
import importlib.machinery
import logging
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

logger = logging.getLogger("allennlp_elmo_c.startup")


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
    """Puts `QuietNarrativeQAFinder` first on `sys.meta_path`, once; nothing to do when the
    module is already imported."""
    if NARRATIVEQA in sys.modules:
        return
    if any(type(finder).__name__ == QuietNarrativeQAFinder.__name__ for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, QuietNarrativeQAFinder())

