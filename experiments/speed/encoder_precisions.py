"""
The `elmo_lstm` encoder (default backend) at the paper's size in float32, TF32 (GPU) and under
bfloat16 autocast (`allennlp_elmo_c.nn.lstmp`'s mixed precision), forward + backward of 20
steps, the precisions timed in turn, repeat after repeat:

    taskset -c 1 python -m experiments.speed.encoder_precisions --batches 16 64 --profile
    python -m experiments.speed.encoder_precisions --device cuda --batches 128 768 --precisions fp32 tf32 bf16

On CPU it runs one thread and, by default, times the thread's CPU time (`--clock cpu`): on a
shared machine the wall time also counts the waits for the core. `--profile` splits each pass
into its matrix products, the pointwise kernels and the weight casts (CPU only). `--json`
appends the medians to a file.
"""

import argparse
import collections
import contextlib
import json
import statistics
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder
from allennlp_elmo_c.nn import lstmp, products
from experiments.common.timing import device_name
from experiments.speed.encoder_backends import SIZES

TIMESTEPS = 20
PHASES: Dict[str, float] = collections.Counter()


def timed(name: str, function: Callable) -> Callable:
    """`function`, its calls' CPU time added to `PHASES[name]`."""

    def wrapper(*args, **kwargs):
        start = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            PHASES[name] += time.thread_time() - start

    return wrapper


@contextlib.contextmanager
def profiled() -> Iterator[None]:
    """Times the CPU path's parts while it lasts: each pointwise kernel, each kind of matrix
    product (a step's rows, or every step's at once) and the weights' casts."""
    kernels = lstmp.pointwise_kernels(torch.zeros(1), "backward")  # the C kernels where built
    originals = [(kernels, name, getattr(kernels, name)) for name in (
        "cell_forward", "projection_forward", "projection_backward", "gate_backward",
        "carry_backward")]  # fmt: skip
    originals += [(products.Products, name, getattr(products.Products, name))
                  for name in ("accumulate", "affine", "weight", "linear")]  # fmt: skip
    for owner, name, function in originals[:5]:
        setattr(owner, name, timed(f"pointwise {name}", function))
    products.Products.accumulate = timed("product: a step's W_hh", products.Products.accumulate)
    products.Products.affine = timed("product: W_ih over every step", products.Products.affine)
    products.Products.weight = timed("weight casts", products.Products.weight)
    linear = products.Products.linear

    def linear_by_kind(self, inputs, weight, out=None):
        kind = "a step's rows" if inputs.size(0) <= 64 else "every step at once"
        return timed(f"product: {kind}", linear)(self, inputs, weight, out)

    products.Products.linear = linear_by_kind
    try:
        yield
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_pass(encoder, inputs, mask, weights, precision: str, clock: Callable[[], float]) -> Tuple[float, float]:
    """Forward and backward seconds of one pass in `precision` ("fp32", "tf32", "bf16")."""
    device = inputs.device
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        synchronize(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            start = clock()
            loss = (encoder(inputs, mask) * weights).sum()
            synchronize(device)
            middle = clock()
        loss.backward()
        synchronize(device)
        end = clock()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    for parameter in encoder.parameters():
        parameter.grad = None
    return middle - start, end - middle


def measure(batch: int, precisions: Sequence[str], repeats: int, device: torch.device,
            clock: Callable[[], float], encoder) -> Dict[str, dict]:  # fmt: skip
    """Every precision's forward and backward seconds over `repeats` repeats, timed in turn
    after a warm-up (oneDNN's kernels, the buffer pool, CUDA graph capture), and its profile."""
    inputs = torch.randn(batch, TIMESTEPS, encoder.input_size, device=device)
    mask = torch.ones(batch, TIMESTEPS, dtype=torch.bool, device=device)
    weights = torch.randn(batch, TIMESTEPS, encoder.get_output_dim(), device=device)
    for precision in precisions:
        for _ in range(4 if device.type == "cuda" else 1):
            one_pass(encoder, inputs, mask, weights, precision, clock)
    found = {p: {"passes": [], "profile": collections.Counter()} for p in precisions}
    for _ in range(repeats):
        for precision in precisions:
            PHASES.clear()
            forward, backward = one_pass(encoder, inputs, mask, weights, precision, clock)
            found[precision]["passes"].append([forward, backward])
            for name, seconds in PHASES.items():
                found[precision]["profile"][name] += seconds / repeats
    for result in found.values():
        result["median_seconds"] = statistics.median(f + b for f, b in result["passes"])
        result["tokens_per_second"] = batch * TIMESTEPS / result["median_seconds"]
    return found


def main(argv: Optional[List[str]] = None) -> Dict[int, Dict[str, dict]]:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", choices=sorted(SIZES), default="paper")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "tf32", "bf16"], default=["fp32", "bf16"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=["cpu", "wall"], default=None,
                        help="default: the thread's CPU time on CPU, wall time on a GPU")
    parser.add_argument("--profile", action="store_true", help="CPU: time the pass's parts")
    parser.add_argument("--json", default=None, help="append the results to this JSON-lines file")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    clock = time.thread_time if (args.clock or ("cpu" if device.type == "cpu" else "wall")) == "cpu" else time.perf_counter
    torch.manual_seed(0)
    input_size, projection, cell, layers = SIZES[args.size]
    encoder = ElmoLstmEncoder(input_size, projection, cell, layers).train().to(device)
    results = {}
    for batch in args.batches:
        with profiled() if args.profile and device.type == "cpu" else contextlib.nullcontext():
            found = results[batch] = measure(batch, args.precisions, args.repeats, device, clock, encoder)
        print(f"{device_name(device, 1)}, {args.size} encoder, batch {batch} x {TIMESTEPS}, "
              f"forward + backward, median of {args.repeats} in turn")  # fmt: skip
        base = found[args.precisions[0]]["median_seconds"]
        for precision, result in found.items():
            forward = statistics.median(f for f, _ in result["passes"])
            backward = statistics.median(b for _, b in result["passes"])
            print(f"  {precision}: {result['median_seconds']:.3f} s (forward {forward:.3f}, backward "
                  f"{backward:.3f}), {result['tokens_per_second']:,.0f} tokens/s, "
                  f"{base / result['median_seconds']:.2f}x {args.precisions[0]}")  # fmt: skip
            for name, seconds in sorted(result["profile"].items()):
                print(f"      {name:40s} {seconds:.3f} s")
        if args.json:
            record = {"device": device_name(device, 1), "size": args.size, "batch": batch,
                      "clock": "cpu" if clock is time.thread_time else "wall",
                      **{p: {k: r[k] for k in ("median_seconds", "tokens_per_second", "profile")}
                         for p, r in found.items()}}  # fmt: skip
            with open(args.json, "a") as lines:
                lines.write(json.dumps(record) + "\n")
    return results


if __name__ == "__main__":
    main()
