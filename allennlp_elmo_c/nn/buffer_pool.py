"""
CPU buffers for `allennlp_elmo_c.nn.lstmp`'s loops, handed out again once no tensor but the
pool's refers to their memory. The pool holds at most twice the most memory its buffers had in
use at once, evicting the idle ones used least recently. Only normal CPU tensors are pooled.
"""
import sys
import threading
from collections import OrderedDict
from typing import Dict, Optional, Tuple

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

_use_count = torch._C._storage_Use_Count


def _holders(buffer: torch.Tensor) -> int:
    # Tensors and storage objects referring to the buffer's memory (the storage object asked
    # for adds one, and 3 Python references when nothing else holds it).
    storage = buffer.untyped_storage()
    return _use_count(storage._cdata) - 1 + sys.getrefcount(storage) - 3


def _rounded(numel: int) -> int:
    # Up to three significant bits (at most 12.5% more): nearby lengths share buffers.
    if numel <= 8:
        return max(numel, 1)
    step = 1 << (numel.bit_length() - 3)
    return -(-numel // step) * step


class BufferPool:
    """`empty(shape, like)`: an uninitialised tensor like `like` (or of `dtype`), pooled on
    CPU."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # dtype -> flat buffers, least recently used first; the most elements held at once.
        self._buffers: Dict[torch.dtype, "OrderedDict[int, torch.Tensor]"] = {}
        self._peak_busy: Dict[torch.dtype, int] = {}

    def empty(
        self, shape: Tuple[int, ...], like: torch.Tensor, dtype: Optional[torch.dtype] = None
    ) -> torch.Tensor:
        dtype = like.dtype if dtype is None else dtype
        if (
            like.device.type != "cpu"
            or type(like) not in (torch.Tensor, torch.nn.Parameter)  # fake or subclass tensors
            or _get_current_dispatch_mode() is not None  # tracing (FakeTensorMode, make_fx)
        ):
            return like.new_empty(shape, dtype=dtype)
        numel = 1
        for size in shape:
            numel *= size
        with self._lock:
            buffers = self._buffers.setdefault(dtype, OrderedDict())
            best = None
            for key, buffer in buffers.items():
                # The smallest free one that fits, within twice the size asked for.
                if numel <= buffer.numel() <= 2 * max(numel, 4096) and _holders(buffer) == 1:
                    if best is None or buffer.numel() < buffers[best].numel():
                        best = key
            if best is None:
                # (Not an inference tensor: those cannot be written outside inference mode.)
                with torch.inference_mode(False):
                    buffer = torch.empty(_rounded(numel), dtype=dtype, device="cpu")
                best = id(buffer)
                buffers[best] = buffer
                self._evict(dtype, keep=best)
            buffers.move_to_end(best)
            return buffers[best][:numel].view(shape)

    def _evict(self, dtype: torch.dtype, keep: int) -> None:
        # `keep`: the buffer about to be handed out.
        buffers = self._buffers[dtype]
        idle = [k for k, buffer in buffers.items() if k != keep and _holders(buffer) == 1]
        total = sum(buffer.numel() for buffer in buffers.values())
        busy = total - sum(buffers[k].numel() for k in idle)
        self._peak_busy[dtype] = peak = max(self._peak_busy.get(dtype, 0), busy)
        for key in idle:
            if total <= 2 * peak:
                break
            total -= buffers.pop(key).numel()


POOL = BufferPool()
