"""
A received model is built within a memory budget derived from the bytes its used weights hold
(`budget_of`, from `received.limits`): a `TorchDispatchMode` counts every operation's output
before it runs and refuses the one that would pass the budget, so that a config declaring huge
sizes is refused before the memory is allocated. `dry` builds on `meta`, counting the same.
"""
import contextlib
import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_tree import walk
from allennlp_elmo_c.received import limits


def budget_of(held: int) -> int:
    """The budget for building a model whose (used) weights hold `held` bytes."""
    return limits.BUDGET_FACTOR * held + limits.BUDGET_SLACK


class _OverBudget(MemoryError):
    """Not a `ConfigurationError`, which `from_params` catches to try a `Union`'s next type."""


class _Budget(TorchDispatchMode):
    """Counts and bounds the bytes operations create (with `dry`, on `meta`, counted anyway)."""

    def __init__(self, limit: int, dry: bool = False) -> None:
        super().__init__()
        self.limit = limit
        self.used = 0
        self.dry = dry

    def _add(self, size: int) -> None:
        if self.used + size > self.limit:
            raise _OverBudget(size)
        self.used += size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.dry and not _aliases_a_real_tensor(func, args):
            args, kwargs = _on_meta(func, args, kwargs)
        predicted = _predicted_bytes(func, args, kwargs, count_meta=self.dry)
        if predicted is not None:
            self._add(predicted)
        result = func(*args, **kwargs)
        if predicted is None:
            self._add(sum(_fresh_bytes(func, result, count_meta=self.dry)))
        return result


def _aliases_a_real_tensor(func, args) -> bool:
    """Whether `func` views or changes in place a real tensor (made outside the build: a dry run
    leaves it real)."""
    returns = func._schema.returns
    if not returns or any(r.alias_info is None for r in returns):
        return False
    first = next((value for value in args if isinstance(value, torch.Tensor)), None)
    return first is not None and not first.is_meta


def _on_meta(func, args, kwargs) -> Tuple[Any, Dict[str, Any]]:
    """`func`'s arguments with every tensor on the `meta` device (a factory's `device` too)."""
    args = tree_map(_meta, args)
    kwargs = {key: None if key == "generator" else _meta(value) for key, value in kwargs.items()}
    if "device" in (argument.name for argument in func._schema.arguments):
        kwargs["device"] = torch.device("meta")
        kwargs.pop("pin_memory", None)
    return args, kwargs


def _meta(value: Any) -> Any:
    return value.to("meta") if isinstance(value, torch.Tensor) and not value.is_meta else value


def _predicted_bytes(func, args, kwargs, count_meta: bool = False) -> Optional[int]:
    """The bytes `func` will create (0 for views, in-place and uncounted `meta` outputs; None
    where its size depends on values, counted after it runs)."""
    schema = func._schema
    returns = schema.returns
    if returns and all(r.alias_info is not None for r in returns):
        return 0  # a view or an in-place operation
    names = [argument.name for argument in schema.arguments]
    bound = dict(zip(names, args), **kwargs)
    size = bound.get("size")
    if isinstance(size, (list, tuple)) and all(isinstance(n, int) for n in size):
        source = bound.get("self")
        device = bound.get("device") or (
            source.device if isinstance(source, torch.Tensor) else None
        )
        if not count_meta and device is not None and torch.device(device).type == "meta":
            return 0
        dtype = bound.get("dtype") or (
            source.dtype if isinstance(source, torch.Tensor) else torch.get_default_dtype()
        )
        return math.prod(size) * dtype.itemsize
    tensors = [value for value in _leaves(args, kwargs) if isinstance(value, torch.Tensor)]
    if not count_meta and tensors and all(t.is_meta for t in tensors):
        return 0
    device = bound.get("device")
    if not count_meta and device is not None and torch.device(device).type == "meta":
        return 0
    try:
        meta_args, meta_kwargs = _on_meta(func, args, kwargs)
        result = func(*meta_args, **meta_kwargs)
    except Exception:  # noqa: BLE001 (no meta kernel, or a size that depends on values)
        return None
    return sum(_fresh_bytes(func, result, count_meta=True))


def _leaves(args, kwargs) -> Iterator[Any]:
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, (list, tuple)):
            yield from value
        else:
            yield value


def _fresh_bytes(func, result, count_meta: bool = False) -> Iterator[int]:
    """The bytes of the tensors an operation returned that are new (not a view or an input)."""
    results = result if isinstance(result, (tuple, list)) else [result]
    returns = func._schema.returns
    for index, tensor in enumerate(results):
        if not isinstance(tensor, torch.Tensor) or (tensor.is_meta and not count_meta):
            continue
        if index < len(returns) and returns[index].alias_info is not None:
            continue
        yield tensor.numel() * tensor.element_size()


# The budgets being enforced, the innermost last.
_ENFORCED: List[_Budget] = []


def spend(size: int, what: str) -> None:
    """Counts `size` bytes about to be allocated outside torch (`what`) against the budget
    being enforced, if any."""
    if _ENFORCED:
        budget = _ENFORCED[-1]
        if budget.used + size > budget.limit:
            raise _OverBudget(size, what)
        budget.used += size



def allow(size: int) -> None:
    """Raises the budget being enforced, if any, by `size` bytes: for a tensor the model's own
    files size and its weights do not hold (a frozen fastText output embedding)."""
    if _ENFORCED:
        _ENFORCED[-1].limit += size


@contextlib.contextmanager
def allocation_budget(
    limit: int,
    where: str,
    config: Optional[Dict[str, Any]] = None,
    dry: bool = False,
    sizes: Optional[List[Tuple[str, int]]] = None,
) -> Iterator["_Budget"]:
    """While inside, tensors past `limit` bytes in all are refused: a `ConfigurationError`
    naming `where` and the config's largest `sizes` (else found in `config`). With `dry`, every
    tensor is made on `meta` and counted. Yields the budget."""
    budget = _Budget(limit, dry)
    _ENFORCED.append(budget)
    try:
        with budget:
            yield budget
    except _OverBudget as error:
        if sizes is not None:
            found = sorted(sizes, key=lambda item: -item[1])[:3]
        else:
            found = largest_sizes(config or {})
        sizes_text = ", ".join(f"{key} = {value}" for key, value in found)
        if len(error.args) > 1:  # counted by `spend`
            raise ConfigurationError(
                f"{where}: building the model would allocate more than {budget.limit:,} bytes "
                f"({budget.used:,} so far, then {error.args[0]:,} more for {error.args[1]}), far "
                "more than its weights hold. Refused before allocating."
            ) from None
        largest = f" (largest: {sizes_text})" if sizes_text else ""
        raise ConfigurationError(
            f"{where}: building the model would allocate more than {budget.limit:,} bytes "
            f"({budget.used:,} so far, then {error.args[0]:,} more), far more than its weights "
            f"hold; its config declares sizes its weights do not have{largest}. "
            "Refused before allocating."
        ) from None
    finally:
        _ENFORCED.remove(budget)


# Integers of a config that are no sizes.
_NOT_SIZES = frozenset({"fingerprint", "seed", "cache_size", "max_instances"})


def largest_sizes(config: Dict[str, Any], count: int = 3) -> List[Tuple[str, int]]:
    """The `count` largest sizes (integers) of a config's model and readers, by dotted key."""
    found = [
        (path, value)
        for section in ("model", "dataset_reader") if section in config
        for path, key, value in walk(config[section], section)
        if isinstance(value, int) and not isinstance(value, bool) and key not in _NOT_SIZES
    ]  # fmt: skip
    return sorted(found, key=lambda item: -item[1])[:count]
