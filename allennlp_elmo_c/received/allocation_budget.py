"""
A received model is built within a memory budget derived from the bytes its used weights hold
(`budget_of`): a `TorchDispatchMode` counts every operation's output before it runs and refuses
the one that would pass the budget, so a config declaring huge sizes is refused before the memory
is allocated. `dry` builds on `meta`, counting the same.
"""
import contextlib
import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits


def budget_of(held: int) -> int:
    """The budget for building a model whose (used) weights hold `held` bytes."""
    return limits.BUDGET_FACTOR * held + limits.BUDGET_SLACK


class _OverBudget(MemoryError):
    """Not a `ConfigurationError`, which `from_params` catches to try a `Union`'s next type."""


class _Budget(TorchDispatchMode):
    def __init__(self, limit: int, dry: bool = False) -> None:
        super().__init__()
        self.limit, self.used, self.dry = limit, 0, dry

    def add(self, size: int, *what: str) -> None:
        if self.used + size > self.limit:
            raise _OverBudget(size, *what)
        self.used += size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.dry and not _aliases_a_real_tensor(func, args):
            args, kwargs = _on_meta(func, args, kwargs)
        predicted = _predicted_bytes(func, args, kwargs, count_meta=self.dry)
        if predicted is not None:
            self.add(predicted)
        result = func(*args, **kwargs)
        if predicted is None:
            self.add(sum(_fresh_bytes(func, result, count_meta=self.dry)))
        return result


def _is_view(func) -> bool:
    """Whether `func` is a view or an in-place operation (it creates no memory)."""
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None for r in returns)


def _aliases_a_real_tensor(func, args) -> bool:
    """Whether `func` views or changes in place a real tensor (a dry run leaves it real)."""
    first = next((value for value in args if isinstance(value, torch.Tensor)), None)
    return _is_view(func) and first is not None and not first.is_meta


def _on_meta(func, args, kwargs) -> Tuple[Any, Dict[str, Any]]:
    """`func`'s arguments with every tensor on the `meta` device (a factory's `device` too)."""
    def meta(value: Any) -> Any:
        return value.to("meta") if isinstance(value, torch.Tensor) and not value.is_meta else value

    args = tree_map(meta, args)
    kwargs = {key: None if key == "generator" else meta(value) for key, value in kwargs.items()}
    if "device" in (argument.name for argument in func._schema.arguments):
        kwargs["device"] = torch.device("meta")
        kwargs.pop("pin_memory", None)
    return args, kwargs


def _predicted_bytes(func, args, kwargs, count_meta: bool) -> Optional[int]:
    """The bytes `func` will create: from its `size`, else by running it on `meta` (0 for views,
    in-place and uncounted `meta` outputs; None where its size depends on values)."""
    if _is_view(func):
        return 0
    bound = dict(zip((argument.name for argument in func._schema.arguments), args), **kwargs)
    device = bound.get("device")
    tensors = [v for v in tree_flatten((args, kwargs))[0] if isinstance(v, torch.Tensor)]
    if not count_meta and ((device is not None and torch.device(device).type == "meta") or (
        tensors and all(t.is_meta for t in tensors)
    )):
        return 0
    size, source = bound.get("size"), bound.get("self")
    if isinstance(size, (list, tuple)) and all(isinstance(n, int) for n in size):
        dtype = bound.get("dtype") or getattr(source, "dtype", None) or torch.get_default_dtype()
        return math.prod(size) * dtype.itemsize
    try:
        meta_args, meta_kwargs = _on_meta(func, args, kwargs)
        result = func(*meta_args, **meta_kwargs)
    except Exception:  # noqa: BLE001 (no meta kernel, or a size that depends on values)
        return None
    return sum(_fresh_bytes(func, result, count_meta=True))


def _fresh_bytes(func, result, count_meta: bool = False) -> Iterator[int]:
    """The bytes of the tensors an operation returned that are new (not a view or an input)."""
    returns = func._schema.returns
    for index, tensor in enumerate(result if isinstance(result, (tuple, list)) else [result]):
        if not isinstance(tensor, torch.Tensor) or (tensor.is_meta and not count_meta):
            continue
        if index >= len(returns) or returns[index].alias_info is None:
            yield tensor.numel() * tensor.element_size()


_ENFORCED: List[_Budget] = []  # the budgets being enforced, the innermost last


def spend(size: int, what: str) -> None:
    """Counts `size` bytes about to be allocated outside torch (`what`) against the budget being
    enforced, if any."""
    if _ENFORCED:
        _ENFORCED[-1].add(size, what)


def allow(size: int) -> None:
    """Raises the budget being enforced, if any, by `size` bytes: for a tensor the model's own
    files size and its weights do not hold (a frozen fastText output embedding)."""
    if _ENFORCED:
        _ENFORCED[-1].limit += size


@contextlib.contextmanager
def allocation_budget(
    limit: int, where: str, sizes: Optional[List[Tuple[str, int]]] = None, dry: bool = False
) -> Iterator[_Budget]:
    """While inside, tensors past `limit` bytes in all are refused: a `ConfigurationError` naming
    `where` and the config's largest `sizes` (`(key path, value)`). With `dry`, every tensor is
    made on `meta` and counted."""
    budget = _Budget(limit, dry)
    _ENFORCED.append(budget)
    try:
        with budget:
            yield budget
    except _OverBudget as error:
        start = (f"{where}: building the model would allocate more than {budget.limit:,} bytes "
                 f"({budget.used:,} so far, then {error.args[0]:,} more")  # fmt: skip
        if len(error.args) > 1:  # counted by `spend`
            raise ConfigurationError(
                f"{start} for {error.args[1]}), far more than its weights hold. Refused before "
                "allocating."
            ) from None
        found = sorted(sizes or [], key=lambda item: -item[1])[:3]
        largest = ", ".join(f"{key} = {value}" for key, value in found)
        raise ConfigurationError(
            f"{start}), far more than its weights hold; its config declares sizes its weights do "
            f"not have{f' (largest: {largest})' if largest else ''}. Refused before allocating."
        ) from None
    finally:
        _ENFORCED.remove(budget)
