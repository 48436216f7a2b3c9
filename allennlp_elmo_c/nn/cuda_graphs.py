"""
CUDA graphs for the recurrence of `allennlp_elmo_c.nn.lstmp` on a GPU (`ELMO_C_CUDA_GRAPHS=0`:
eager).
"""

import logging
import os
from collections import Counter, OrderedDict
from typing import Callable, Hashable, Optional, Sequence, Tuple

import torch

logger = logging.getLogger(__name__)

Tensors = Tuple[Optional[torch.Tensor], ...]

# Most graphs one process keeps (each holds its own memory pool); the oldest go first.
MAX_GRAPHS = 16
# A shape is captured the CAPTURE_AFTER-th time it is seen (eager before): downstream batches
# bring a new shape every few batches, each not worth a capture.
CAPTURE_AFTER = 3

_graphs: "OrderedDict[Hashable, Tuple[torch.cuda.CUDAGraph, Tensors, Tensors]]" = OrderedDict()
_seen: Counter = Counter()


def enabled(device: torch.device) -> bool:
    """Whether loops on `device` are replayed from captured graphs."""
    return (
        device.type == "cuda"
        and os.environ.get("ELMO_C_CUDA_GRAPHS", "1") != "0"
        and not torch.cuda.is_current_stream_capturing()  # inside a caller's own capture
    )


def _signature(tensors: Sequence[Optional[torch.Tensor]]) -> Tuple[Hashable, ...]:
    shapes = tuple(
        None if t is None else (tuple(t.shape), t.dtype, t.device.index) for t in tensors
    )
    # What else changes the captured kernels: TF32, and inference mode (its static tensors).
    modes = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.is_inference_mode_enabled(),
    )
    return shapes + modes


def replay(
    key: Hashable, function: Callable[..., Tensors], tensors: Sequence[Optional[torch.Tensor]]
) -> Tensors:
    """
    `function(*tensors)`, replayed from a graph captured for this `key` and these shapes over
    static copies of `tensors`. `function` must be capturable and depend on nothing but its
    tensors and `key`. The outputs are the graph's own, overwritten by the next replay.
    """
    full_key = (key, _signature(tensors))
    entry = _graphs.get(full_key)
    if entry is None:
        if len(_seen) > 100_000:
            _seen.clear()
        _seen[full_key] += 1
        if _seen[full_key] < CAPTURE_AFTER:
            return function(*tensors)
        static = tuple(None if t is None else t.clone() for t in tensors)
        # Warm-up outside the capture (cuBLAS workspaces, lazy initialisation).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            function(*static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: other threads (pin memory, NCCL's watchdog) may call CUDA meanwhile.
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            outputs = function(*static)
        entry = (graph, static, outputs)
        _graphs[full_key] = entry
        if len(_graphs) > MAX_GRAPHS:
            _graphs.popitem(last=False)
        logger.debug("captured a CUDA graph for %s (%d kept)", key, len(_graphs))
    else:
        _graphs.move_to_end(full_key)
    graph, static, outputs = entry
    for target, value in zip(static, tensors):
        if target is not None:
            target.copy_(value)
    graph.replay()
    return outputs


def clear() -> None:
    """Drops every captured graph (and the memory it holds)."""
    _graphs.clear()
    _seen.clear()
