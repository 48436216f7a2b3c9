import logging
from typing import Any, Dict

import torch

from allennlp.common.util import is_distributed
from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)


@TrainerCallback.register("rng_state")
class RngStateCallback(TrainerCallback):
    """
    Saves torch's random number generator states (CPU and every CUDA device) with each training
    checkpoint and restores them on `allennlp train --recover`, so that a run resumed from a
    mid-epoch checkpoint draws the same dropout masks as the uninterrupted run and ends with the
    same weights (on CPU: bit for bit). Without it the resumed batches use the generator state
    of a freshly seeded process.

    Data order needs nothing: AllenNLP re-seeds Python's `random` at start-up, replays the
    interrupted epoch's shuffle and skips the batches already done.

    In distributed training only the primary process writes the training state, and by then
    each rank's generator has drawn for its own batches (same seed, different shapes), so rank
    0's state is not the others': the states are restored in single-process runs only, and a
    resumed distributed run is statistically, not bitwise, the same.

    Registered as a `TrainerCallback` with name "rng_state".
    """

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
        torch.set_rng_state(state_dict["torch"])
        if "cuda" in state_dict and torch.cuda.is_available():
            states = state_dict["cuda"]
            if len(states) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(states)
            else:
                logger.warning(
                    "rng_state: the checkpoint has %d CUDA generator states, this machine %d "
                    "devices; CUDA states not restored",
                    len(states),
                    torch.cuda.device_count(),
                )
        logger.info("rng_state: random generator states restored from the checkpoint")
