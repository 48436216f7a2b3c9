import logging
import math
from typing import Dict, List

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)

DIRECTIONS = ("forward_lm", "backward_lm")


def direction_groups(model: torch.nn.Module) -> Dict[str, List[torch.nn.Parameter]]:
    """The trainable parameters by language model: `forward_lm`, `backward_lm` (parameters named
    for one direction) and `shared` (the rest); empty groups are left out."""
    seen: Dict[int, set] = {}
    parameters: Dict[int, torch.nn.Parameter] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if not parameter.requires_grad:
            continue
        found = {d for d in DIRECTIONS if d in name.split(".")} or {"shared"}
        seen.setdefault(id(parameter), set()).update(found)
        parameters[id(parameter)] = parameter
    groups: Dict[str, List[torch.nn.Parameter]] = {}
    for key, names in seen.items():
        group = next(iter(names)) if len(names) == 1 else "shared"
        groups.setdefault(group, []).append(parameters[key])
    return groups


@TrainerCallback.register("grad_norm_per_direction")
class GradNormPerDirection(TrainerCallback):
    """
    Clips the gradient norm of each language model on its own to `max_norm`, as the paper's code
    does (the parameters both share, `direction_groups`, as a third group), in place of the
    trainer's `rescale_gradients`; a trainer `grad_norm` still applies afterwards to all. The
    logged gradient norm is the one over all parameters before clipping.
    """

    def __init__(self, serialization_dir: str, max_norm: float = 1.0) -> None:
        super().__init__(serialization_dir)
        if not (0 < max_norm < math.inf):
            raise ConfigurationError(
                f"grad_norm_per_direction: max_norm must be a finite number > 0, got {max_norm}"
            )
        self.max_norm = float(max_norm)

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        wrapped = getattr(trainer, "_ddp_wrapped_model", None)
        if wrapped is not None and wrapped.is_sharded:
            raise ConfigurationError(
                f"grad_norm_per_direction: {type(wrapped).__name__} shards the parameters, so "
                "a norm per direction cannot be taken locally; use torch DDP (the default "
                "ddp_accelerator) or the trainer's grad_norm instead"
            )
        groups = direction_groups(trainer.model)
        missing = [d for d in DIRECTIONS if d not in groups]
        if missing:
            raise ConfigurationError(
                f"grad_norm_per_direction: the model has no trainable parameters named {missing} "
                "(it clips the two LMs of an elmo_c model); use the trainer's grad_norm instead"
            )
        logger.info(
            "grad_norm_per_direction: clipping the gradient norm of each group to %s: %s",
            self.max_norm,
            ", ".join(f"{name} {sum(p.numel() for p in group):,} parameters"
                      for name, group in groups.items()),  # fmt: skip
        )
        trainer.rescale_gradients = lambda: self._rescale(trainer, groups)

    def _rescale(self, trainer, groups: Dict[str, List[torch.nn.Parameter]]) -> float:
        scaler = getattr(trainer, "_scaler", None)
        if scaler is not None:
            from torch.cuda.amp.grad_scaler import OptState

            stage = scaler._per_optimizer_states[id(trainer.optimizer)]["stage"]
            if stage is not OptState.UNSCALED:
                scaler.unscale_(trainer.optimizer)
        squares = []
        for group in groups.values():
            with_grads = [p for p in group if p.grad is not None]
            if with_grads:
                norm = torch.nn.utils.clip_grad_norm_(with_grads, self.max_norm)
                squares.append(norm.double() ** 2)
        total = math.sqrt(sum(squares).item()) if squares else 0.0
        grad_norm = trainer._grad_norm
        if grad_norm is not None and not isinstance(grad_norm, bool):
            everything = [p for p in trainer.model.parameters() if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(everything, grad_norm)
        return total
