"""
A received model is built within a memory budget derived from its weights, so that a config
declaring huge sizes (a 2 KB `config.json` with `cell_size: 1e9`) is refused before the memory is
allocated, not after.

The sizes a config declares cannot all be compared with the weights before building: some
components compute their tensors' values while they are built (a fastText-initialised output
layer, the hashed pools of the slim layers), so they cannot be built on the `meta` device, and
AllenNLP's `Embedding` allocates with a legacy constructor that ignores a default device. Instead,
`allocation_budget` watches every tensor operation while the model is built (a
`TorchDispatchMode`): an operation that creates a tensor of a given size (`torch.empty`, `zeros`,
`randn`, `new_empty`, ... and every `nn.Parameter` made from them) is refused *before* it runs if
it would take the bytes created so far past the budget; the tensors other operations return are
counted after them. The budget is `BUDGET_FACTOR` times the bytes of the weights (the tensor sizes
of `model.safetensors`' header, read without loading a tensor; the size of `weights.th`) plus
`BUDGET_SLACK`: building a model creates each parameter once plus its initialisation's temporaries
(about 5 times the weights for an `elmo_lstm` with orthogonal initialisation).
"""

import contextlib
import math
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from allennlp.common.checks import ConfigurationError

BUDGET_FACTOR = 8
BUDGET_SLACK = 64 << 20

_DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}  # fmt: skip


def safetensors_bytes(path: Path) -> int:
    """The bytes of the tensors a `.safetensors` file holds, from its header (no tensor read)."""
    import safetensors

    with safetensors.safe_open(str(path), framework="pt") as weights:
        total = 0
        for name in weights.keys():
            tensor = weights.get_slice(name)
            total += math.prod(tensor.get_shape()) * _DTYPE_BYTES.get(tensor.get_dtype(), 8)
    return total


def weights_budget(path: Path) -> int:
    """The budget for building the model whose weights are `path` (`model.safetensors`, from its
    header; any other file, from its size)."""
    path = Path(path)
    stored = safetensors_bytes(path) if path.suffix == ".safetensors" else path.stat().st_size
    return BUDGET_FACTOR * stored + BUDGET_SLACK


class _OverBudget(MemoryError):
    """Raised inside the build (not a `ConfigurationError`, which AllenNLP's `from_params` catches
    to try the next type of a `Union`); `allocation_budget` turns it into one."""


class _Budget(TorchDispatchMode):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.used = 0

    def _add(self, size: int) -> None:
        if self.used + size > self.limit:
            raise _OverBudget(size)
        self.used += size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        requested = _requested_bytes(func, args, kwargs)
        if requested is not None:
            self._add(requested)
        result = func(*args, **kwargs)
        if requested is None:
            self._add(sum(_fresh_bytes(func, result)))
        return result


def _requested_bytes(func, args, kwargs) -> Optional[int]:
    """The bytes a tensor-creating operation (one with a `size`) will allocate; None for others
    and for the `meta` device."""
    schema = func._schema
    names = [argument.name for argument in schema.arguments]
    if "size" not in names:
        return None
    bound = dict(zip(names, args), **kwargs)
    size = bound.get("size")
    if not isinstance(size, (list, tuple)) or not all(isinstance(n, int) for n in size):
        return None
    source = bound.get("self")
    device = bound.get("device") or (source.device if isinstance(source, torch.Tensor) else None)
    if device is not None and torch.device(device).type == "meta":
        return 0
    dtype = bound.get("dtype") or (
        source.dtype if isinstance(source, torch.Tensor) else torch.get_default_dtype()
    )
    return math.prod(size) * dtype.itemsize


def _fresh_bytes(func, result) -> Iterator[int]:
    """The bytes of the tensors an operation returned that are new (not a view or an input)."""
    results = result if isinstance(result, (tuple, list)) else [result]
    returns = func._schema.returns
    for index, tensor in enumerate(results):
        if not isinstance(tensor, torch.Tensor) or tensor.is_meta:
            continue
        if index < len(returns) and returns[index].alias_info is not None:
            continue
        yield tensor.numel() * tensor.element_size()


# The budgets being enforced, the innermost last.
_ENFORCED: List[_Budget] = []


def allow(size: int) -> None:
    """
    Raises the limit of the budget being enforced, if any, by `size` bytes: for a tensor whose
    size the model's own files fix rather than its config, and which its weights do not hold (a
    frozen output embedding of fastText vectors: the archived vocabulary's words times the
    fingerprint-checked `.bin`'s dimension, rebuilt whenever the model is built).
    """
    if _ENFORCED:
        _ENFORCED[-1].limit += size


@contextlib.contextmanager
def allocation_budget(limit: int, where: str, config: Optional[Dict[str, Any]] = None) -> Iterator[None]:
    """
    While inside, tensors created past `limit` bytes in all (plus what `allow` adds) are refused:
    a `ConfigurationError` naming `where`, the budget, and the largest sizes `config` declares
    (the likely culprit).
    """
    budget = _Budget(limit)
    _ENFORCED.append(budget)
    try:
        with budget:
            yield
    except _OverBudget as error:
        sizes = ", ".join(f"{key} = {value}" for key, value in largest_sizes(config or {}))
        raise ConfigurationError(
            f"{where}: building the model would allocate more than {budget.limit:,} bytes ({budget.used:,} "
            f"so far, then {error.args[0]:,} more), far more than its weights hold; its config "
            f"declares sizes its weights do not have{f' (largest: {sizes})' if sizes else ''}. "
            "Refused before allocating."
        ) from None
    finally:
        _ENFORCED.remove(budget)


# Integers of a config that are no sizes.
_NOT_SIZES = frozenset({"fingerprint", "seed", "cache_size", "max_instances"})


def largest_sizes(config: Dict[str, Any], count: int = 3) -> List[Tuple[str, int]]:
    """The `count` largest sizes (integers) of a config's model and readers, by dotted key."""
    found: List[Tuple[str, int]] = []
    stack: List[Tuple[str, Any]] = [
        (key, config[key]) for key in ("model", "dataset_reader") if key in config
    ]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{path}.{key}", value) for key, value in node.items() if key not in _NOT_SIZES)
        elif isinstance(node, list):
            stack.extend((f"{path}.{index}", value) for index, value in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool):
            found.append((path, node))
    return sorted(found, key=lambda item: -item[1])[:count]
