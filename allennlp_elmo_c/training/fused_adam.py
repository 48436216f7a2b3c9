from typing import Any, Dict, List, Tuple

import torch

from allennlp.training.optimizers import Optimizer, make_parameter_groups


@Optimizer.register("fused_adam")
class FusedAdamOptimizer(Optimizer, torch.optim.Adam):
    """AllenNLP's `adam` (its arguments and update, to float32 rounding) through torch's fused
    implementation: one kernel for all parameters of a dtype and device."""

    def __init__(
        self,
        model_parameters: List[Tuple[str, torch.nn.Parameter]],
        parameter_groups: List[Tuple[List[str], Dict[str, Any]]] = None,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-08,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(
            params=make_parameter_groups(model_parameters, parameter_groups),
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            fused=True,
        )
