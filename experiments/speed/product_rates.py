"""
GFLOP/s of the LSTM backward's matrix products on CPU: `torch.mm` (MKL) against
`allennlp_elmo_c.nn.products.Products` (oneDNN), at the shapes the fused
encoder runs at the paper's size (batch 16 x 21, cell 4096, projection 512) and the demo's
(batch 64 x 21, cell 256, projection 128), timed in turn in one run; also the largest
difference between the two, relative to the product's scale.

    python -m experiments.speed.product_rates [--threads 1]
"""

import argparse
import os
import time

import torch

from allennlp_elmo_c.nn.products import Products

# name: (rows, inner, out, inputs transposed): `inputs @ weight` with inputs (rows, inner).
SHAPES = {
    "paper, per step dL/dgates @ W_hh": (16, 16384, 512, False),
    "paper, per step dL/dp @ W_hr": (16, 512, 4096, False),
    "paper, dL/dx over all steps": (336, 16384, 512, False),
    "paper, dL/dW_hh over all steps": (16384, 336, 512, True),
    "demo, per step dL/dgates @ W_hh": (64, 1024, 128, False),
    "demo, dL/dW_hh over all steps": (1024, 1344, 128, True),
}


def seconds(run, repeats):
    run()
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.pop("ELMO_C_ONEDNN", None)
    with torch.no_grad():
        onednn = Products(torch.zeros(1))
        os.environ["ELMO_C_ONEDNN"] = "0"
        mm = Products(torch.zeros(1))
        del os.environ["ELMO_C_ONEDNN"]
        print(f"CPU, {args.threads} threads, torch {torch.__version__}; oneDNN used: "
              f"{onednn.onednn}; best of {args.rounds} rounds, in turn")  # fmt: skip
        print(f"{'product':34} {'rows x inner x out':>20} {'torch.mm':>10} {'oneDNN':>10}"
              f" {'ratio':>6} {'max diff':>9}")
        for name, (rows, inner, out, transposed) in SHAPES.items():
            inputs = torch.randn(inner, rows).t() if transposed else torch.randn(rows, inner)
            weight = torch.randn(inner, out).t()
            prepared = {"mm": mm.weight(weight), "onednn": onednn.weight(weight)}
            flops = 2 * rows * inner * out
            repeats = max(1, int(2e9 / flops))
            best = {"mm": float("inf"), "onednn": float("inf")}
            for _ in range(args.rounds):
                for key, products in (("mm", mm), ("onednn", onednn)):
                    time_taken = seconds(
                        lambda: products.linear(inputs, prepared[key]), repeats
                    )
                    best[key] = min(best[key], time_taken)
            ours, theirs = onednn.linear(inputs, prepared["onednn"]), mm.linear(inputs, weight)
            difference = (ours - theirs).abs().max().item() / theirs.abs().max().item()
            rates = {key: flops / value / 1e9 for key, value in best.items()}
            print(f"{name:34} {f'{rows} x {inner} x {out}':>20} {rates['mm']:10.1f}"
                  f" {rates['onednn']:10.1f} {rates['onednn'] / rates['mm']:5.2f}x"
                  f" {difference:9.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
