import os
from typing import Any, List, Union

import numpy as np

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.limits import printable
from allennlp_elmo_c.received.received_weights import load_weights_only

# The largest counter (epochs, batches, tokens) a training state may hold.
MAX_COUNT = 1 << 53

# What a numpy scalar (a metric tracker's) pickles as.
_NUMERIC_TYPE_CODES = "?bhilqBHILQefd"
TRAINING_STATE_GLOBALS: List[Any] = [
    np._core.multiarray.scalar,
    np.dtype,
    *sorted({type(np.dtype(code)) for code in _NUMERIC_TYPE_CODES}, key=lambda t: t.__name__),
]


def load_training_state(path: Union[str, os.PathLike]) -> Any:
    """The training state in `path` (`training_state_e*_b*.th`), loaded `weights_only` onto the
    CPU with numpy scalars allowed and its counters checked."""
    state = load_weights_only(
        path,
        TRAINING_STATE_GLOBALS,
        holds="tensors, numbers, strings and numpy scalars",
        advice="If this run is your own and a callback of yours saves other objects, allow "
        "their types with torch.serialization.add_safe_globals in your --include-package module",
        map_location="cpu",
    )
    if not isinstance(state, dict):
        raise ConfigurationError(f"{path}: holds a {type(state).__name__}, not a training state")
    for key in ("epochs_completed", "batches_in_epoch_completed"):
        checked_count(state.get(key), key, str(path))
    return state


def checked_count(value: Any, name: str, where: str) -> int:
    """`value` if it is an integer from 0 to `MAX_COUNT`; else a one-line `ConfigurationError`
    naming `where` and the counter `name`."""
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise ConfigurationError(
            f"{where}: {name} is {printable(repr(value), 40)}, not a count from 0 to {MAX_COUNT}; "
            "this is not the state a run saved: resume from another checkpoint or start afresh"
        )
    return value
