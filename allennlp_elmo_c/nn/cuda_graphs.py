"""
Replaying a captured CUDA graph for a loop of small kernels (the recurrence of
`allennlp_elmo_c.nn.lstmp` on a GPU).

A per-timestep loop launches a dozen small kernels per step; on a GPU the launches, not the
arithmetic, then set the pace. `replay` captures `function` once per key (shapes, dtypes and
whatever else changes the kernels it launches) into a `torch.cuda.CUDAGraph` over static copies
of its tensor arguments, and afterwards copies the new arguments into those and replays the
graph: the same kernels on the same values, launched as one.

The tensors returned are the graph's own static outputs: the next replay of the same key
overwrites them, so a caller clones what it keeps. Set `ELMO_C_CUDA_GRAPHS=0` to run the loop
eagerly instead (for debugging; the results are the same).
"""

import logging
import os
from collections import OrderedDict
from typing import Callable, Hashable, Optional, Sequence, Tuple

import torch

logger = logging.getLogger(__name__)

Tensors = Tuple[Optional[torch.Tensor], ...]

# Most graphs one process keeps (each holds its own memory pool); the oldest go first.
MAX_GRAPHS = 16

_graphs: "OrderedDict[Hashable, Tuple[torch.cuda.CUDAGraph, Tensors, Tensors]]" = OrderedDict()


def enabled(device: torch.device) -> bool:
    """Whether loops on `device` are replayed from captured graphs."""
    return (
        device.type == "cuda"
        and os.environ.get("ELMO_C_CUDA_GRAPHS", "1") != "0"
        and not torch.cuda.is_current_stream_capturing()  # inside a caller's own capture
    )


def _signature(tensors: Sequence[Optional[torch.Tensor]]) -> Tuple[Hashable, ...]:
    return tuple(
        None if t is None else (tuple(t.shape), t.dtype, t.device.index) for t in tensors
    )


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
        static = tuple(None if t is None else t.clone() for t in tensors)
        # Warm-up outside the capture (cuBLAS workspaces, lazy initialisation).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            function(*static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
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
