"""
AllenNLP's `Checkpointer.load_checkpoint` (`--recover`) loads the training state with
`torch.load`'s default, `weights_only=True` since torch 2.6, which refuses the numpy scalars the
state holds. The patched loader allows numpy's numeric scalars and nothing else. A torch-2 fix,
every model.
"""

from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint

from allennlp_elmo_c.received.received_weights import load_weights_only
from allennlp_elmo_c.training.training_state import load_training_state

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
