import logging
from typing import Any, Dict

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.nn.util import get_text_field_mask
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.training.training_state import checked_count

logger = logging.getLogger(__name__)


def predicted_tokens(batch: Dict[str, Any]) -> int:
    """The positions each direction predicts in a batch: every sequence's tokens but one."""
    for value in batch.values():
        if isinstance(value, dict):  # a text field's tensors
            mask = get_text_field_mask(value)  # (batch, timesteps)
            return int((mask.sum(1) - 1).clamp(min=0).sum())
    raise ConfigurationError("the batch has no text field to count tokens in")


@TrainerCallback.register("tokens_seen")
class TokensSeen(TrainerCallback):
    """The `predicted_tokens` of every training batch so far (over all workers, kept with the
    checkpoints), in the run's metrics as `tokens_seen` after every epoch (for `describe`)."""

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self.tokens = 0

    def state_dict(self) -> Dict[str, Any]:
        return {"tokens": self.tokens}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if state_dict:
            self.tokens = checked_count(state_dict.get("tokens"), "tokens", "tokens_seen: the "
                                        "checkpoint's")  # fmt: skip

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        if is_training:
            self.tokens += sum(predicted_tokens(batch) for batch in batch_inputs)

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        total = self.tokens
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            device = next(trainer.model.parameters()).device
            count = torch.tensor([self.tokens], dtype=torch.long, device=device)
            torch.distributed.all_reduce(count)
            total = int(count.item())
        metrics["tokens_seen"] = total
