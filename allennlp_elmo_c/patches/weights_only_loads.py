"""
AllenNLP's own loads of saved states pass `weights_only=True` explicitly, so that a received
file runs no code whatever the environment says. AllenNLP relies on `torch.load`'s default,
which torch 2.6 made `weights_only=True` and the environment variable
`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` turns back into a full pickle load. For every model.

- `Checkpointer.load_checkpoint` (`allennlp train --recover` with AllenNLP's own checkpointer):
  AllenNLP's training state may hold numpy scalars, which `weights_only=True` refuses by default,
  so `--recover` fails on torch 2.6+. The model state loads with `weights_only=True`, the training
  state with numpy's numeric scalars allowed and nothing else
  (`allennlp_elmo_c.training.training_state`).
- `nn.util.read_state_dict` (what `load_archive` reads every archive's `weights.th` with): the
  file is first loaded with `weights_only=True` (memory-mapped, its tensors not read), then
  AllenNLP's function runs as it is.
- `GradientDescentTrainer._load_model_state` (the trainer's reload of `best.th` at the end of a
  run): with `weights_only=True`.
"""

import torch

from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer, TrainerCheckpoint
from allennlp.training.gradient_descent_trainer import GradientDescentTrainer

from allennlp_elmo_c.received.weights_only import load_weights_only
from allennlp_elmo_c.training.training_state import load_training_state

# AllenNLP's functions, kept so that their tests can show the patch is still needed.
ORIGINALS = {
    "load_checkpoint": Checkpointer.load_checkpoint,
    "read_state_dict": nn_util.read_state_dict,
    "load_model_state": GradientDescentTrainer._load_model_state,
}


def _load_checkpoint(self):
    latest_checkpoint = self.find_latest_checkpoint()
    if latest_checkpoint is None:
        return None
    model_path, training_state_path = latest_checkpoint
    model_state = load_weights_only(model_path, map_location=nn_util.device_mapping(-1))
    training_state = load_training_state(training_state_path)
    return TrainerCheckpoint(model_state, training_state)


def _read_state_dict(path, *args, **kwargs):
    try:
        load_weights_only(path, map_location="cpu", mmap=True)
    except RuntimeError as error:  # a file in torch's legacy format cannot be memory-mapped
        if "mmap" not in str(error):
            raise
        load_weights_only(path, map_location="cpu")
    return ORIGINALS["read_state_dict"](path, *args, **kwargs)


def _load_model_state(self, path: str) -> None:
    state = load_weights_only(path, map_location=torch.device("cpu"))
    model = self._ddp_wrapped_model if self._ddp_wrapped_model is not None else self._pytorch_model
    model.load_state_dict(state)


def apply() -> None:
    """Replaces the three loaders (once)."""
    if Checkpointer.load_checkpoint is _load_checkpoint:
        return
    _load_checkpoint.__doc__ = ORIGINALS["load_checkpoint"].__doc__
    _read_state_dict.__doc__ = ORIGINALS["read_state_dict"].__doc__
    Checkpointer.load_checkpoint = _load_checkpoint  # type: ignore[method-assign]
    nn_util.read_state_dict = _read_state_dict
    GradientDescentTrainer._load_model_state = _load_model_state  # type: ignore[method-assign]
