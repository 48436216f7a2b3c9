"""
The tensors of a received model's weights, known before any is loaded: names, dtypes, shapes and
the bytes each really holds (its 4 KiB pages that are not all zeros: a sparse or all-zero tensor,
or a header's claims, hold nothing). A `.safetensors` header is bounded (`received.limits`)
before it is parsed and must fill the file exactly; a torch file (`weights.th`) is loaded
weights-only and memory-mapped.
"""
import math
import struct
from pathlib import Path
from typing import Dict, Iterable, NamedTuple, Optional, Tuple, Union

import numpy as np
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.received_json import parse_received_json
from allennlp_elmo_c.received.shown_text import printable

# A page: the unit of a file's content that counts as held (one non-zero byte makes it held).
PAGE_BYTES = 4096
_CHUNK_PAGES = 1024

SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}  # fmt: skip

PathOrStr = Union[str, Path]


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
    """`{name: (dtype, shape, begin, end)}` of a `.safetensors` file, its header checked."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as stream:
        prefix = stream.read(8)
        if len(prefix) < 8:
            raise ConfigurationError(
                f"{where}: not a safetensors file (shorter than its header's length)"
            )
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
    data_start = 8 + length
    tensors = {}
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shown = name if len(name) <= 80 else f"{name[:80]}..."
        try:
            dtype = SAFETENSORS_DTYPES[entry["dtype"]]
            shape = tuple(entry["shape"])
            begin, end = entry["data_offsets"]
            valid = all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0
                for n in (*shape, begin, end)
            )
        except (KeyError, TypeError, ValueError):
            valid = False
        if not valid or end - begin != math.prod(shape) * dtype.itemsize or data_start + end > size:
            raise ConfigurationError(
                f"{where}: the safetensors entry {shown!r} is not a tensor of a known dtype whose "
                "shape fills its bytes in the file"
            )
        tensors[name] = (dtype, shape, data_start + begin, data_start + end)
        spans.append((begin, end))
    spans.sort()
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
    """The tensors of a weights file by name, with the bytes each holds."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            header = safetensors_header(path, where)
            data = np.memmap(path, dtype=np.uint8, mode="r")
            return {
                name: Tensor(dtype, shape, _held(data[begin:end]))
                for name, (dtype, shape, begin, end) in header.items()
            }
        from allennlp_elmo_c.received.weights_only import load_weights_only

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


def held_total(table: Dict[str, Tensor], names: Optional[Iterable[str]] = None) -> int:
    chosen = table.values() if names is None else (table[name] for name in names if name in table)
    return sum(min(tensor.held, tensor.bytes) for tensor in chosen)

