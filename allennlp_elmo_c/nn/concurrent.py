"""
Independent computations on one input, forward and backward pass, each on its own thread with
an equal share of torch's intra-op threads, as one autograd node: the autograd engine runs a
graph's backward on one thread, so each computation's own graph is built inside the node and
differentiated on its thread. Torch's operators and the LSTM's C kernels release the GIL.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Dict, List, Sequence, Tuple

import torch

Computation = Callable[[torch.Tensor], List[torch.Tensor]]
_EXECUTORS: Dict[int, ThreadPoolExecutor] = {}  # by process id: a forked child makes its own
_LOCK = threading.Lock()


def threads_each(count: int) -> int:
    """Torch's intra-op threads for each of `count` computations run at once (0: run them one
    after another, on fewer than two threads each computation's, or on a non-CPU)."""
    threads = torch.get_num_threads()
    return threads // count if threads >= count else 0


def _run_all(calls: Sequence[Callable[[], object]], threads: int) -> List[object]:
    # The first call on this thread, the others on the pool's; `threads` intra-op threads each.
    with _LOCK:
        executor = _EXECUTORS.get(os.getpid())
        if executor is None:
            executor = _EXECUTORS[os.getpid()] = ThreadPoolExecutor(len(calls) - 1)
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    saved = torch.get_num_threads()

    def call(function: Callable[[], object]) -> object:
        torch.get_num_threads()  # torch sets a new thread's count on its first use: before ours
        torch.set_num_threads(threads)
        with torch.set_grad_enabled(grad), torch.inference_mode(inference):
            return function()

    futures = [executor.submit(call, function) for function in calls[1:]]
    try:
        first = call(calls[0])
    finally:
        wait(futures)
        torch.set_num_threads(saved)
    return [first] + [future.result() for future in futures]


class _Concurrently(torch.autograd.Function):
    @staticmethod
    def forward(ctx, computations, groups, threads, sizes, inputs, *parameters):  # type: ignore
        groups = [parameters[sum(groups[:i]) : sum(groups[: i + 1])] for i in range(len(groups))]

        def build(computation: Computation, own: Tuple[torch.Tensor, ...]):
            def run():
                leaf = inputs.detach().requires_grad_(inputs.requires_grad)
                return leaf, computation(leaf), own

            return run

        with torch.enable_grad():
            ctx.graphs = _run_all([build(*pair) for pair in zip(computations, groups)], threads)
        ctx.threads = threads
        sizes.extend(len(outputs) for _, outputs, _ in ctx.graphs)
        return tuple(output.detach() for _, outputs, _ in ctx.graphs for output in outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):  # type: ignore[override]
        graphs, ctx.graphs, start = ctx.graphs, None, 0
        calls = []
        for leaf, outputs, own in graphs:
            grads, start = grad_outputs[start : start + len(outputs)], start + len(outputs)
            wanted = [t for t in (leaf, *own) if t.requires_grad]
            calls.append(lambda o=outputs, g=grads, w=wanted: torch.autograd.grad(
                o, w, g, allow_unused=True) if w else ())  # fmt: skip
        results = _run_all(calls, ctx.threads)
        grad_inputs, grad_parameters = None, []
        for (leaf, _, own), grads in zip(graphs, results):
            grads = iter(grads)
            grad = next(grads) if leaf.requires_grad else None
            if grad is not None:
                grad_inputs = grad if grad_inputs is None else grad_inputs + grad
            grad_parameters += [next(grads) if t.requires_grad else None for t in own]
        return (None, None, None, None, grad_inputs, *grad_parameters)


def concurrently(
    computations: Sequence[Computation],
    inputs: torch.Tensor,
    parameters: Sequence[Sequence[torch.Tensor]],
    threads: int,
) -> List[List[torch.Tensor]]:
    """
    `[computation(inputs) for computation in computations]`, computed at once on as many
    threads, `threads` intra-op threads each, forward and backward.

    # Parameters

    computations : `Sequence[Callable[[torch.Tensor], List[torch.Tensor]]]`
        Each takes `inputs` and returns its outputs; it reads no tensor that needs a gradient
        but `inputs` and its own `parameters`, and draws no random numbers (results would
        depend on the threads' order).
    parameters : `Sequence[Sequence[torch.Tensor]]`
        Each computation's parameters (receiving gradients through this node).
    """
    counts = [len(own) for own in parameters]
    flat = [parameter for own in parameters for parameter in own]
    if not torch.is_grad_enabled() or not any(t.requires_grad for t in [inputs, *flat]):
        calls = [lambda c=computation: c(inputs) for computation in computations]
        return _run_all(calls, threads)  # type: ignore[return-value]
    sizes: List[int] = []
    outputs = iter(_Concurrently.apply(computations, counts, threads, sizes, inputs, *flat))
    return [[next(outputs) for _ in range(size)] for size in sizes]
