"""
Forward + backward time of the `slim_softmax` output head vs a full softmax, measured in the same
run: the summed cross-entropy of N random hidden states (d-dimensional, gradients flowing back
into them as into the encoder) against N random word ids, over a vocabulary of V words. The
full softmax is `Linear(d -> V)` + cross-entropy (a `softmax` head without options); the slim
head builds each of the V output vectors from K sub-vectors, the k-th from its own sub-pool, the
K sub-pools holding M = V / divisor sub-vectors together (rounded down to a multiple of K).

    python -m experiments.speed.slim_softmax                                      # CPU, 2 threads
    python -m experiments.speed.slim_softmax --device cuda --positions 2048 --vocab-sizes 50000 200000 800000

`--positions-per-chunk C` also times each slim head with its loss in chunks of C positions
(`positions_per_chunk`: less memory, one more forward pass of the logits).

Prints, per vocabulary size, the median step time of each head, the full / slim ratio (> 1:
slim is faster), trainable parameter counts and, on CUDA, peak memory. The heads are timed in
turn within each repetition, so load on the machine affects all of them alike.
"""

import argparse
import copy

import torch

from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.slim_softmax import SlimSoftmaxOutputHead
from allennlp_elmo_c.modules.output_heads.softmax import SoftmaxOutputHead
from experiments.common.timing import device_name, time_in_turn, trainable_parameters

NAMESPACE = "words"


def vocabulary(size: int) -> Vocabulary:
    vocab = Vocabulary()  # + @@PADDING@@ and @@UNKNOWN@@
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(size - 2)], NAMESPACE)
    return vocab


def time_heads(heads, dim, positions, device, steps, warmup):
    """Median forward + backward seconds of each head, and peak CUDA memory (GiB)."""
    generator = torch.Generator().manual_seed(0)
    num_words = next(iter(heads.values())).num_words
    hidden = torch.randn(positions, dim, generator=generator).to(device).requires_grad_(True)
    targets = torch.randint(0, num_words, (positions,), generator=generator).to(device)

    def step(head):
        head.zero_grad(set_to_none=True)
        hidden.grad = None
        head.loss(hidden, targets).backward()

    work = {name: (lambda head=head: step(head)) for name, head in heads.items()}
    return time_in_turn(work, steps, warmup, device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab-sizes", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--positions", type=int, default=512)
    parser.add_argument("--subvectors", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--pool-divisors", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--positions-per-chunk", type=int, default=None)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = device_name(device, args.threads)
    print(
        f"slim_softmax vs full softmax: d {args.dim}, N {args.positions} positions, "
        f"forward + backward, median of {args.steps} steps, {name}, torch {torch.__version__}"
    )
    for size in args.vocab_sizes:
        vocab = vocabulary(size)
        torch.manual_seed(0)
        # The reference: a full softmax, `softmax` with no options (a trainable (V, d) output
        # embedding and a bias).
        heads = {"full": SoftmaxOutputHead(args.dim, args.dim, vocab, vocab_namespace=NAMESPACE)}
        for k in args.subvectors:
            for divisor in args.pool_divisors:
                label = f"K {k}, M V/{divisor}"
                pool_size = k * max(1, size // (divisor * k))  # K sub-pools of M / K
                heads[label] = SlimSoftmaxOutputHead(
                    args.dim, args.dim, vocab, k, pool_size, NAMESPACE
                )
                if args.positions_per_chunk:
                    # The same weights, the loss in chunks recomputed in the backward pass.
                    chunked = copy.deepcopy(heads[label])
                    chunked.positions_per_chunk = args.positions_per_chunk
                    heads[f"{label}, chunks of {args.positions_per_chunk}"] = chunked
        heads = {label: head.to(device) for label, head in heads.items()}
        seconds, peaks = time_heads(
            heads, args.dim, args.positions, device, args.steps, args.warmup
        )
        full_parameters = trainable_parameters(heads["full"])
        print(f"V = {size:,}")
        for label, head in heads.items():
            line = (
                f"  {label:30s} {seconds[label]:8.3f} s  full/this {seconds['full'] / seconds[label]:5.2f}x"
                f"  params {trainable_parameters(head):13,d} ({full_parameters / trainable_parameters(head):6.1f}x fewer)"
            )
            if device.type == "cuda":
                line += f"  peak {peaks[label]:6.2f} GiB"
            print(line, flush=True)


if __name__ == "__main__":
    main()
