"""
Replaying a captured CUDA graph for a loop of small kernels (the recurrence of
`allennlp_elmo_c.nn.lstmp` on a GPU).

`replay` captures `function` once per key into a `torch.cuda.CUDAGraph` over static copies of
its tensor arguments, then copies new arguments in and replays it.

The tensors returned are the graph's own static outputs, overwritten by the next replay of the
key: a caller clones what it keeps. A shape is captured once seen `CAPTURE_AFTER` times, eager
until then; `ELMO_C_CUDA_GRAPHS=0` always runs eagerly.
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
# A shape is captured the CAPTURE_AFTER-th time it is seen; before that the loop runs eagerly.
# Pretraining windows have one shape, so it is captured at once; downstream batches bucketed by
# length bring a new shape every few batches, and capturing each (a warm-up, a synchronising
# capture, a memory pool kept) would cost more than it saves.
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
    # What else changes the kernels a capture records: the float32 matrix-product precision
    # (TF32 or not) and inference mode (whose static tensors could not be written outside it).
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
    `function(*tensors)`, run from a graph captured the first time this `key` and these tensor
    shapes are seen. `function` must be capturable (no host synchronisation, no randomness) and
    depend on nothing but its tensor arguments and what `key` fixes.
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
        # thread_local: other threads (a data loader's pin-memory thread, NCCL's watchdog) may
        # keep making CUDA calls while this thread captures.
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
