import inspect
from typing import Any, Dict, List, Optional

import torch

from allennlp.common import Registrable
from allennlp.common.checks import ConfigurationError


class ContinuousLoss(Registrable):
    """
    A loss of the continuous output head between its predicted vectors and the target word
    vectors at the batch's real positions: `(N, d) x (N, d) -> (N,)`, finite (value and gradient)
    for zero vectors and large norms. A subclass, registered with
    `@ContinuousLoss.register("name")`, holds its settings and calls its function in
    `allennlp_elmo_c/nn/`; `head_keys` maps the continuous head's keys to its arguments.
    """

    default_implementation = "cosine"
    # The continuous head's key -> this loss's constructor argument it sets.
    head_keys: Dict[str, str] = {}

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


def continuous_loss_names() -> List[str]:
    """The registered names of `ContinuousLoss`, sorted."""
    return sorted(ContinuousLoss.list_available())


def build_continuous_loss(name: str, head_values: Dict[str, Optional[Any]]) -> ContinuousLoss:
    """
    The loss registered as `name`, built with the continuous head's loss keys (`head_values`,
    key -> value, None where the config leaves it out). A key of another loss is refused unless
    it holds that loss's default.
    """
    names = continuous_loss_names()
    if name not in names:
        raise ConfigurationError(f"continuous head: loss must be one of {names}, got {name!r}")
    chosen = ContinuousLoss.by_name(name)
    kwargs = {}
    for key, value in head_values.items():
        if value is None:
            continue
        if key in chosen.head_keys:
            kwargs[chosen.head_keys[key]] = value
            continue
        owner = next(n for n in names if key in ContinuousLoss.by_name(n).head_keys)
        owner_class = ContinuousLoss.by_name(owner)
        argument = inspect.signature(owner_class).parameters[owner_class.head_keys[key]]
        if value != argument.default:
            raise ConfigurationError(
                f"continuous head: {key} only applies to loss {owner!r}; "
                f"remove it or set loss: {owner!r}"
            )
    return chosen(**kwargs)
