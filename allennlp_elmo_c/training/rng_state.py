import logging
from typing import Any, Dict

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)


@TrainerCallback.register("rng_state")
class RngStateCallback(TrainerCallback):
    """Saves torch's random generator states with each checkpoint and restores them on
    `--recover` (single-process runs): a resumed run draws the uninterrupted one's dropout."""

    def state_dict(self) -> Dict[str, Any]:
        state: Dict[str, Any] = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if not state_dict:
            return  # a checkpoint written without this callback
        if is_distributed():
            logger.info("rng_state: distributed run, random generator states not restored")
            return
        torch.set_rng_state(_checked(state_dict.get("torch"), torch.get_rng_state(), "CPU"))
        if "cuda" in state_dict and torch.cuda.is_available():
            states = state_dict["cuda"]
            if isinstance(states, (list, tuple)) and len(states) == torch.cuda.device_count():
                like = torch.cuda.get_rng_state()
                torch.cuda.set_rng_state_all([_checked(s, like, "CUDA") for s in states])
            else:
                logger.warning("rng_state: the checkpoint's CUDA generator states do not match "
                               "this machine's devices; not restored")  # fmt: skip
        logger.info("rng_state: random generator states restored from the checkpoint")


def _checked(state: Any, like: torch.Tensor, device: str) -> torch.Tensor:
    if isinstance(state, torch.Tensor) and state.dtype == like.dtype and state.shape == like.shape:
        return state
    shown = f"a {state.dtype} tensor of shape {tuple(state.shape)}" if isinstance(
        state, torch.Tensor) else f"a {type(state).__name__}"  # fmt: skip
    raise ConfigurationError(
        f"rng_state: the checkpoint's {device} generator state is {shown}, not the "
        f"{like.dtype} tensor of shape {tuple(like.shape)} torch saves; resume from another "
        "checkpoint or start afresh"
    )
