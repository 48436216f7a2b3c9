"""
Whole ELMo-C training steps (the fastText input, the encoder, the `continuous` head and the
pretraining configs' Adam) with each loss of the head, on the same batch, timed in turn: what a
loss costs inside a step, where `output_heads.py` times the heads alone.

    python -m experiments.speed.loss_step_speed --device cuda --size paper --batch-size 128
    python -m experiments.speed.loss_step_speed --size demo --batch-size 64 --threads 1

The input is `run.py`'s synthetic one (a random frozen table in cc.en.300's shape, each
position's subword rows drawn at random), so every position is a distinct word: the in-batch
softmax's worst case. Prints each loss's median seconds per step, tokens/s and its time against
the cosine's, with the range of that ratio over the repeats.
"""

import argparse
import statistics
from typing import List, Optional

import torch

from allennlp_elmo_c.modules.output_heads.losses import continuous_loss_names

from experiments.speed.run_models import (
    ENCODER_SIZES,
    TIMESTEPS,
    _RandomFastTextMatrix,
    adam,
    elmo_c_batch,
    elmo_c_model,
    model_step,
    sample_words,
)
from experiments.common.timing import device_name, times_in_turn

# The losses measured by default (`--losses` takes any registered `ContinuousLoss`).
LOSSES = ("cosine", "vmf", "in_batch_softmax")


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", choices=sorted(ENCODER_SIZES), default="demo")
    parser.add_argument("--batch-size", type=int, default=64, help="windows of 20 tokens")
    parser.add_argument("--rows", type=int, default=4_000_000, help="the fastText table's rows")
    parser.add_argument("--losses", nargs="+", choices=continuous_loss_names(), default=list(LOSSES))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    generator = torch.Generator().manual_seed(0)
    words = sample_words(args.batch_size, TIMESTEPS, generator)
    batch = elmo_c_batch(words, args.rows, device, generator)
    table = _RandomFastTextMatrix(args.rows, ENCODER_SIZES[args.size][0]).matrix_on(device)
    steps = {}
    for loss in args.losses:
        torch.manual_seed(0)
        model = elmo_c_model(args.size, args.rows, loss, table).to(device)
        # Each row is labelled by the loss its model was built with.
        steps[model._heads["forward_lm"].loss_name] = model_step(model, adam(model), batch)
    times, _ = times_in_turn(steps, args.steps, args.warmup, device)
    tokens = args.batch_size * TIMESTEPS
    base = next(iter(times))
    print(f"{device_name(device, args.threads)}, {args.size} encoder, batch {args.batch_size} x "
          f"{TIMESTEPS}, median of {args.steps} steps after {args.warmup}")  # fmt: skip
    print(f"| loss | s / step | tokens / s | time vs {base} (range over repeats) |")
    print("|---|---|---|---|")
    for loss, values in times.items():
        median = statistics.median(values)
        ratios = [theirs / ours for ours, theirs in zip(times[base], values)]
        print(f"| {loss} | {median:.4f} | {tokens / median:,.0f} | "
              f"{median / statistics.median(times[base]):.2f}x "
              f"({min(ratios):.2f}-{max(ratios):.2f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
