"""
A received model's weights: loaded weights-only, and known before loading (names, dtypes, shapes
and the bytes each holds: its 4 KiB pages that are not all zeros, so a sparse file or a header's
claims hold nothing).
"""
import math
import os
import pickle
import re
import struct
from pathlib import Path
from typing import Any, Dict, Iterable, NamedTuple, Tuple, Union

import numpy as np
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.limits import printable
from allennlp_elmo_c.received.received_json import parse_received_json

PAGE_BYTES = 4096
_CHUNK_PAGES = 1024
SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}  # fmt: skip
_GLOBAL_IN_MESSAGE = re.compile(
    r"GLOBAL (\S+)|unrecognized function (.+?)(?: which|$)|but got (<class [^>]*>|\S+)", re.M
)
PathOrStr = Union[str, "os.PathLike[str]"]


def load_weights_only(
    path: PathOrStr,
    allowed_globals: Iterable[Any] = (),
    holds: str = "tensors",
    advice: str = "",
    **load_options: Any,
) -> Any:
    """`torch.load(path, weights_only=True, **load_options)` with `allowed_globals` allowed too.
    A pickle naming another Python global, or no pickle at all, is a one-line
    `ConfigurationError` naming the file, saying it should hold `holds`, then `advice`."""
    present = set(map(id, torch.serialization.get_safe_globals()))
    added = [item for item in allowed_globals if id(item) not in present]
    try:
        with torch.serialization.safe_globals(added):
            return torch.load(path, weights_only=True, **load_options)
    except pickle.UnpicklingError as error:
        found = _GLOBAL_IN_MESSAGE.search(str(error))
        if found is None:
            first = str(error).strip().split(". ")[0]  # torch's advice that follows is not ours
            raise ConfigurationError(
                f"{path}: does not load ({os.path.getsize(path)} bytes): not a torch file of "
                f"{holds} ({printable(first, 160)}); "
                f"{advice or 'replace it with the file as it was saved'}"
            ) from None
        named = next(group for group in found.groups() if group)
        raise ConfigurationError(
            f"{path}: refused: it holds the Python global {named}, where only {holds} belong "
            f"(loading it could run code){'. ' + advice if advice else ''}"
        ) from error


class Tensor(NamedTuple):
    dtype: torch.dtype
    shape: Tuple[int, ...]
    held: int

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def safetensors_header(
    path: PathOrStr, where: str
) -> Dict[str, Tuple[torch.dtype, Tuple[int, ...], int, int]]:
    """`{name: (dtype, shape, begin, end)}` of a `.safetensors` file, its header checked: bounded
    before it is parsed, each entry a tensor filling its bytes, no two overlapping."""
    size = Path(path).stat().st_size
    with open(path, "rb") as stream:
        prefix = stream.read(8)
        if len(prefix) < 8:
            raise ConfigurationError(f"{where}: not a safetensors file (shorter than 8 bytes)")
        (length,) = struct.unpack("<Q", prefix)
        readable = min(limits.MAX_SAFETENSORS_HEADER_BYTES, size - 8)
        if length > readable:
            raise ConfigurationError(
                f"{where}: its safetensors header declares {length} bytes, more than the "
                f"{readable} read (a model's header is a few KB); refused before parsing it"
            )
        text = stream.read(length)
    header = parse_received_json(text, f"{where} (its header)", limits.MAX_SAFETENSORS_HEADER_BYTES)
    if not isinstance(header, dict):
        raise ConfigurationError(f"{where}: its safetensors header is not a JSON object")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = SAFETENSORS_DTYPES[entry["dtype"]]
            shape = tuple(entry["shape"])
            begin, end = entry["data_offsets"]
            valid = all(type(n) is int and n >= 0 for n in (*shape, begin, end))
        except (KeyError, TypeError, ValueError):
            valid = False
        if not valid or end - begin != math.prod(shape) * dtype.itemsize or 8 + length + end > size:
            raise ConfigurationError(
                f"{where}: the safetensors entry {printable(name, 80)!r} is not a tensor of a "
                "known dtype whose shape fills its bytes in the file"
            )
        tensors[name] = (dtype, shape, 8 + length + begin, 8 + length + end)
    spans = sorted((begin, end) for _, _, begin, end in tensors.values())
    if any(end > next_begin for (_, end), (next_begin, _) in zip(spans, spans[1:])):
        raise ConfigurationError(f"{where}: safetensors entries overlap")
    return tensors


def _held(data: np.ndarray) -> int:
    """The bytes of `data` (uint8) in its non-zero pages, read a chunk at a time."""
    held = 0
    for start in range(0, len(data), PAGE_BYTES * _CHUNK_PAGES):
        chunk = data[start : start + PAGE_BYTES * _CHUNK_PAGES]
        whole = len(chunk) // PAGE_BYTES * PAGE_BYTES
        held += int(chunk[:whole].reshape(-1, PAGE_BYTES).any(axis=1).sum()) * PAGE_BYTES
        if whole < len(chunk) and chunk[whole:].any():
            held += len(chunk) - whole
    return held


def weights_table(path: PathOrStr, where: str) -> Dict[str, Tensor]:
    """The tensors of a weights file (`.safetensors`, else a torch file) by name."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            data = np.memmap(path, dtype=np.uint8, mode="r")
            return {
                name: Tensor(dtype, shape, _held(data[begin:end]))
                for name, (dtype, shape, begin, end) in safetensors_header(path, where).items()
            }
        try:
            state = load_weights_only(path, map_location="cpu", mmap=True)
        except RuntimeError as error:  # a file in torch's legacy format cannot be memory-mapped
            if "mmap" not in str(error):
                raise
            state = load_weights_only(path, map_location="cpu")
    except ConfigurationError:
        raise
    except Exception as error:  # noqa: BLE001 (an unpickler fed other bytes raises any error)
        raise ConfigurationError(
            f"{where}: unreadable weights ({type(error).__name__}: {printable(error, 300)})"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ConfigurationError(f"{where}: not a state dict of tensors")
    return {
        name: Tensor(tensor.dtype, tuple(tensor.shape),
                     _held(tensor.detach().contiguous().view(-1).view(torch.uint8).numpy()))
        for name, tensor in state.items()
    }


def held_total(table: Dict[str, Tensor]) -> int:
    return sum(min(tensor.held, tensor.bytes) for tensor in table.values())
