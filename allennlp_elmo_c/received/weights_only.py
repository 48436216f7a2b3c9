"""
`torch.load` of a file that may come from someone else with `weights_only=True` passed explicitly
(`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` turns torch's default off), refused in one line naming the
file and what it holds.
"""
import os
import pickle
import re
from typing import Any, Iterable, Union

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.shown_text import printable

_GLOBAL_IN_MESSAGE = re.compile(
    r"GLOBAL (\S+)|unrecognized function (.+?)(?: which|$)|but got (<class [^>]*>|\S+)", re.M
)


def load_weights_only(
    path: Union[str, os.PathLike],
    allowed_globals: Iterable[Any] = (),
    holds: str = "tensors",
    advice: str = "",
    **load_options: Any,
) -> Any:
    """
    `torch.load(path, weights_only=True, **load_options)`, with `allowed_globals` allowed too
    (`torch.serialization.safe_globals`) for this load.

    A pickle naming any other Python global raises a `ConfigurationError` naming the file and
    the global, saying the file should hold `holds`, followed by `advice`; nothing in the
    pickle is called. A file that is no pickle at all (damaged, or of another kind) raises a
    `ConfigurationError` too; other damage raises torch's own error.
    """
    present = set(map(id, torch.serialization.get_safe_globals()))
    # Only the ones not already allowed: leaving the context removes what it added.
    added = [item for item in allowed_globals if id(item) not in present]
    try:
        with torch.serialization.safe_globals(added):
            return torch.load(path, weights_only=True, **load_options)
    except pickle.UnpicklingError as error:
        found = _GLOBAL_IN_MESSAGE.search(str(error))
        if found is None:
            first = str(error).strip().split(". ")[0]  # torch's advice that follows is not ours
            raise ConfigurationError(
                f"{path}: does not load ({os.path.getsize(path)} bytes): not a torch file of "
                f"{holds} ({printable(first, 160)}); "
                f"{advice or 'replace it with the file as it was saved'}"
            ) from None
        named = next(group for group in found.groups() if group)
        raise ConfigurationError(
            f"{path}: refused: it holds the Python global {named}, where only {holds} belong "
            f"(loading it could run code){'. ' + advice if advice else ''}"
        ) from error
