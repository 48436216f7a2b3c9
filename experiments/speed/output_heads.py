"""
Training cost of each output layer against the continuous one (ELMo-C), measured in the same run:
forward + backward of every registered head over the same hidden states, as the `elmo_c` model
calls it (`(batch, 20, d)` states of one direction, a mask, the target words' ids and their
300-d vectors), in training mode (so `sampled_softmax` samples). The encoder is left out: it is
the same for every head, so these are the costs that differ (the paper's Table 4 compares whole
training steps, where the encoder dilutes the ratios).

    python -m experiments.speed.output_heads                                      # CPU, 2 threads
    python -m experiments.speed.output_heads --device cuda --batch-size 128 --vocab-sizes 40000 800000

The in-batch softmax's cost grows with the batch's distinct target vectors instead of V: every
position here has its own random target, so each batch has as many words as positions, its worst
case (a batch of real text repeats its frequent words).

Prints, per vocabulary size, each head's median step time, its ratio to `continuous` (> 1:
slower than ELMo-C's output layer), its trainable parameters and, on CUDA, its peak memory. The
heads run in turn within each repetition, so load on the machine affects all of them alike.
"""

import argparse

import torch

from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.common.threads import set_torch_threads
from experiments.common.timing import device_name, time_in_turn, trainable_parameters

NAMESPACE = "lm_targets"
TARGET_DIM = 300


def head_configs(num_words: int, samples: int):
    """name -> (registered type, options): the paper's output layers, sized for `num_words`."""
    # elmo_a.jsonnet's cutoffs (60K / 100K / 640K of 800K words), scaled to the vocabulary.
    cutoffs = [int(num_words * share) for share in (0.075, 0.125, 0.8)]
    return {
        "continuous (ELMo-C)": ("continuous", {"loss": "cosine"}),
        "continuous, in-batch softmax": ("continuous", {"loss": "in_batch_softmax"}),
        "full softmax": ("softmax", {}),
        f"sampled softmax ({samples})": ("sampled_softmax", {"num_samples": samples}),
        f"FIXED (sampled, frozen {TARGET_DIM}-d)": (
            "sampled_softmax",
            {"num_samples": samples, "freeze_output_embedding": True},
        ),
        f"adaptive {cutoffs}": ("adaptive_softmax", {"cutoffs": cutoffs}),
        "slim K 8, M V/16": (
            "slim_softmax",
            # M counts all 8 sub-pools' sub-vectors: a multiple of 8.
            {"num_subvectors": 8, "pool_size": 8 * max(1, num_words // (16 * 8))},
        ),
    }


def build(kind: str, options: dict, dim: int, vocab: Vocabulary, device) -> OutputHead:
    cls = OutputHead.by_name(kind)
    kwargs = dict(input_dim=dim, target_dim=TARGET_DIM, **options)
    if kind != "continuous":
        kwargs.update(vocab=vocab, vocab_namespace=NAMESPACE)
    if kind == "sampled_softmax" and options.get("freeze_output_embedding"):
        # FIXED: a frozen table in fastText's size (random here: the cost is the same) and a
        # trainable projection into it.
        head = cls(**kwargs)
        table = torch.randn(head.num_words, TARGET_DIM) / TARGET_DIM**0.5
        del head.output_embedding
        head.register_buffer("output_embedding", table)
        head.projection = torch.nn.Linear(dim, TARGET_DIM)
        return head.to(device).train()
    return cls(**kwargs).to(device).train()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64, help="windows of 20 tokens")
    parser.add_argument("--dim", type=int, default=512, help="the encoder's projection size")
    parser.add_argument("--vocab-sizes", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    args.threads = set_torch_threads(args.threads)
    device = torch.device(args.device)
    generator = torch.Generator().manual_seed(0)
    shape = (args.batch_size, 20)
    hidden = torch.randn(*shape, args.dim, generator=generator).to(device).requires_grad_(True)
    mask = torch.ones(shape, dtype=torch.bool, device=device)
    mask[: args.batch_size // 4, 15:] = False  # a quarter of the windows are shorter
    targets = torch.randn(*shape, TARGET_DIM, generator=generator).to(device)
    print(f"{device_name(device, args.threads)}, batch {args.batch_size} x 20, d {args.dim}, "
          f"median of {args.steps} steps after {args.warmup}")  # fmt: skip
    print("| V | output layer | trainable params | s / step | vs continuous | peak GiB |")
    print("|---|---|---|---|---|---|")
    for num_words in args.vocab_sizes:
        vocab = Vocabulary()
        vocab.add_tokens_to_namespace([f"w{i}" for i in range(num_words - 2)], NAMESPACE)
        ids = torch.randint(2, num_words, shape, generator=generator).to(device)
        heads = {
            name: build(kind, options, args.dim, vocab, device)
            for name, (kind, options) in head_configs(num_words, args.samples).items()
        }

        def step(head):
            head.zero_grad(set_to_none=True)
            hidden.grad = None
            head(hidden, mask, target_embeddings=targets, target_ids=ids)["loss"].backward()

        work = {name: (lambda head=head: step(head)) for name, head in heads.items()}
        medians, peaks = time_in_turn(work, args.steps, args.warmup, device)
        base = medians["continuous (ELMo-C)"]
        for name, head in heads.items():
            peak = f"{peaks[name]:.2f}" if device.type == "cuda" else "-"
            print(f"| {num_words:,} | {name} | {trainable_parameters(head):,} | {medians[name]:.4f} | "
                  f"{medians[name] / base:.1f}x | {peak} |")  # fmt: skip
        del heads


if __name__ == "__main__":
    main()
