"""
AllenNLP's `Checkpointer.load_checkpoint` (`allennlp train --recover` with AllenNLP's own
checkpointer) loads the training state with `torch.load`'s default, which torch 2.6 made
`weights_only=True`; AllenNLP's training state holds numpy scalars (the metric tracker's best
value, a scheduler's), which that refuses, so `--recover` fails on the torch pinned in
`constraints.txt`. The patched loader reads the model state with `weights_only=True` and the
training state with numpy's numeric scalars allowed and nothing else
(`allennlp_elmo_c.training.training_state`). For every model (a torch-2 compatibility fix).
"""

from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint

from allennlp_elmo_c.received.received_weights import load_weights_only
from allennlp_elmo_c.training.training_state import load_training_state

# AllenNLP's function, kept so that its test can show the patch is still needed.
ORIGINAL = Checkpointer.load_checkpoint


def _load_checkpoint(self):
    latest_checkpoint = self.find_latest_checkpoint()
    if latest_checkpoint is None:
        return None
    model_path, training_state_path = latest_checkpoint
    model_state = load_weights_only(model_path, map_location=nn_util.device_mapping(-1))
    training_state = load_training_state(training_state_path)
    return TrainerCheckpoint(model_state, training_state)


def apply() -> None:
    """Replaces `Checkpointer.load_checkpoint` (once)."""
    if Checkpointer.load_checkpoint is _load_checkpoint:
        return
    _load_checkpoint.__doc__ = ORIGINAL.__doc__
    Checkpointer.load_checkpoint = _load_checkpoint  # type: ignore[method-assign]
