"""
Reading a checkpoint's training state (`training_state_e*_b*.th`, which `allennlp train
--recover` resumes from) without running code, its counters checked: a run directory may come
from someone else.

AllenNLP writes the training state with `torch.save` (a pickle). Its trainer, learning rate and
momentum schedulers, metric tracker, moving average and this plugin's callbacks (`rng_state`,
`training_time_budgets`, ...) store tensors, numbers, strings, lists, tuples, dicts and `None`,
which torch's `weights_only=True` unpickler accepts, plus one kind it refuses by default: numpy
scalars, where a metric is computed in numpy (e.g. the coreference F1) and lands in the metric
tracker's `best_so_far` or in `reduce_on_plateau`'s `best`. Those are allowed by
`TRAINING_STATE_GLOBALS` and nothing else: a pickle naming any other Python global (a class with
a `__reduce__` that runs code, a function) is refused before anything in it is called.
"""

import os
from typing import Any, List, Union

import numpy as np

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.shown_text import printable
from allennlp_elmo_c.received.weights_only import load_weights_only

# The largest counter (epochs, batches, tokens) a training state may hold.
MAX_COUNT = 1 << 53

# What a numpy scalar pickles as: `numpy._core.multiarray.scalar(dtype, bytes)`, the dtype
# rebuilt by `numpy.dtype(...)` and its state set on an instance of the dtype's class.
_NUMERIC_TYPE_CODES = "?bhilqBHILQefd"
TRAINING_STATE_GLOBALS: List[Any] = [
    np._core.multiarray.scalar,
    np.dtype,
    *sorted({type(np.dtype(code)) for code in _NUMERIC_TYPE_CODES}, key=lambda t: t.__name__),
]


def load_training_state(path: Union[str, os.PathLike]) -> Any:
    """
    The training state in `path`, loaded onto the CPU with `torch.load(weights_only=True)` and
    `TRAINING_STATE_GLOBALS` (the trainer moves it to the device).

    A pickle holding anything else raises a `ConfigurationError` naming the file and the global
    it names, and so does a state whose counters are not `checked_count`s. A callback of one's
    own run that stores other objects can allow their types with
    `torch.serialization.add_safe_globals` in the package it is `--include-package`d from.
    """
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
