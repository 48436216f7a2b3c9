"""
Training-step throughput of the `elmo_lstm` encoder's two backends, measured in the same run:
`reference` (a per-timestep loop through autograd) vs `fused` (`allennlp_elmo_c.nn.lstmp`, one
autograd node per layer with a hand-written backward). Both compute the paper's cell (LayerNorm
and clipping inside the recurrence; `tests/modules/seq2seq_encoders/test_backend_agreement.py`).
One step = forward + backward of the encoder plus a continuous head and cosine loss for both
directions, on random inputs shaped like a demo batch (windows of 21 tokens with
the boundary tokens), then an Adam update (`--update none`: forward + backward only, the measure
of the encoder itself; at the paper's size torch's CPU Adam over the 76M encoder parameters is
17% of a fused step, the same time in every row). All rows are timed in turn, step by step, so
that load on the machine affects them alike.

    python -m experiments.speed.encoder_backends                       # demo size, CPU, 2 threads
    python -m experiments.speed.encoder_backends --size paper --device cuda --batch-size 128

Prints tokens/second for each backend and the fused/reference ratio, and, timed in the same run:
AllenNLP's own ELMo encoder (`allennlp.modules.elmo_lstm.ElmoLstm`, a per-step
`LstmCellWithProjection`, same sizes, without our input projection and LayerNorms); the
`recurrence_norm: "outside"` variant (a different model: a plain LSTM with projection, LayerNorm
after each layer) with the fused backend; and, on CPU, that variant with torch's `torch.lstm` in
place of `allennlp_elmo_c.nn.lstmp` (torch's CPU path for projections is a generic fallback:
oneDNN has none), which shows what the hand-written kernel saves. The `floor` row is `torch.nn.LSTM(proj_size=...)`
(two uni-directional stacks of the same sizes, full-length rows, no LayerNorm, clips or
dropout): the same matrix products with nothing else, torch's own fastest path (oneDNN or the
generic fallback on CPU, cuDNN on a GPU), a practical floor for any implementation of the cell.

On a GPU the fused kernel replays its loops from captured CUDA graphs (`allennlp_elmo_c.nn.
cuda_graphs`), each step's pointwise work in fused Triton kernels (`allennlp_elmo_c.nn.
lstmp_triton`, float32); the `fused_eager` row runs the same loops without graphs, the
`fused_torch_ops` row with graphs but torch ops in place of the Triton kernels
(`ELMO_C_TRITON=0`). On CPU the fused encoder's matrix products run through the library
`allennlp_elmo_c.nn.products` picks for the machine; the `fused_torch_mm` row runs them through
`torch.mm` (MKL; `ELMO_C_ONEDNN=0`), the `fused_onednn` row through oneDNN (`ELMO_C_ONEDNN=1`).
`--precision tf32`
lets float32 matrix products use TF32; `--precision bf16` runs each step under autocast
(the recurrence itself stays float32, see `lstm_with_projection`). `--json` appends the row
values to a file.
"""

import argparse
import contextlib
import json
import os
from functools import partial

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

import allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer as layer_module
from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead
from allennlp_elmo_c.nn.products import Products
from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder
from allennlp_elmo_c.common.threads import set_torch_threads
from experiments.common.timing import device_name, time_in_turn

SIZES = {
    # name: (input size, projection, cell, layers)
    "demo": (100, 128, 256, 2),  # training_config/elmo_c_demo.jsonnet
    "small": (128, 128, 256, 2),  # the demo's cell with 128-d inputs
    "middle": (300, 256, 1024, 2),  # between small and paper, on 300-d fastText vectors
    "paper": (300, 512, 4096, 2),
}


def torch_lstm_fallback(inputs, lengths, hidden, cell, w_ih, w_hh, bias, w_hr, **plain):
    # Only the plain LSTMP (recurrence_norm "outside": no norm, clips or recurrent dropout).
    assert all(value is None for key, value in plain.items() if key != "norm_eps"), plain
    packed = pack_padded_sequence(
        inputs, lengths.clamp(min=1), batch_first=True, enforce_sorted=False
    )
    order = packed.sorted_indices
    weights = [w_ih, w_hh, bias, torch.zeros_like(bias), w_hr]
    state = (hidden[order].unsqueeze(0), cell[order].unsqueeze(0))
    output, h, c = torch.lstm(
        packed.data, packed.batch_sizes, state, weights, True, 1, 0.0, True, False
    )
    output = PackedSequence(output, packed.batch_sizes, order, packed.unsorted_indices)
    output, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
    return output, h[0][packed.unsorted_indices], c[0][packed.unsorted_indices]


def AllenNlpElmoLstm(input_size, projection, cell, layers):
    """AllenNLP's ELMo biLSTM behind our encoder's interface (forward || backward top layer)."""
    from allennlp_elmo_c.modules.seq2seq_encoders.allennlp_elmo_lstm import (
        AllenNlpElmoLstmEncoder,
    )

    return AllenNlpElmoLstmEncoder(input_size, projection, cell, layers)


class TorchLstmFloor(torch.nn.Module):
    """Two `torch.nn.LSTM(proj_size=...)` stacks, one per direction (forward || backward)."""

    def __init__(self, input_size, projection, cell, layers):
        super().__init__()
        self.directions = torch.nn.ModuleList(
            torch.nn.LSTM(input_size, cell, layers, batch_first=True, proj_size=projection)
            for _ in range(2)
        )

    def forward(self, inputs, mask):
        forward = self.directions[0](inputs)[0]
        backward = self.directions[1](inputs.flip(1))[0].flip(1)
        return torch.cat([forward, backward], dim=-1)


def batch_mask(batch_size, timesteps, device):
    mask = torch.ones(batch_size, timesteps, dtype=torch.bool, device=device)
    mask[: batch_size // 4, timesteps - 5 :] = False  # some shorter sentences
    return mask


def training_step(
    backend, size, batch_size, timesteps, device, norm="inside", precision="fp32", update=True
):
    """One training step of `backend` (a callable) and the number of tokens it trains on;
    without `update`, forward and backward only."""
    input_size, projection, cell, layers = SIZES[size]
    torch.manual_seed(0)
    if backend == "allennlp":
        encoder = AllenNlpElmoLstm(input_size, projection, cell, layers).to(device)
    elif backend == "floor":
        encoder = TorchLstmFloor(input_size, projection, cell, layers).to(device)
    else:
        clips = {} if norm == "inside" else {"cell_clip": None, "projection_clip": None}
        encoder = ElmoLstmEncoder(
            input_size, projection, cell, layers, backend=backend, recurrence_norm=norm, **clips
        ).to(device)
    heads = [ContinuousOutputHead(projection, input_size).to(device) for _ in range(2)]
    parameters = list(encoder.parameters()) + [p for head in heads for p in head.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=1e-4)
    inputs = torch.randn(batch_size, timesteps, input_size, device=device)
    mask = batch_mask(batch_size, timesteps, device)
    pair_mask = mask[:, 1:]

    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if precision == "bf16"
        else contextlib.nullcontext()
    )

    def step():
        optimizer.zero_grad()
        with autocast:
            forward, backward = encoder(inputs, mask).chunk(2, dim=-1)
            loss = heads[0](forward[:, :-1], pair_mask, inputs[:, 1:])["loss"]
            loss = loss + heads[1](backward[:, 1:], pair_mask, inputs[:, :-1])["loss"]
        loss.backward()
        if update:
            optimizer.step()

    return step, int(mask.sum())


def products_step(size, batch_size, timesteps, device):
    """
    The matrix products of the fused encoder's forward + backward alone, with the shapes it runs
    (each layer and direction: the input product over all timesteps, per step W_hh's and W_hr's
    forward and backward products, the input and weight gradients over all timesteps), on
    random values, nothing else: the cost no implementation of the cell avoids. As the fused
    encoder runs them: the forward's through `torch.mm`, the backward's through
    `Products` (oneDNN on CPU unless `ELMO_C_ONEDNN=0`).
    """
    _, projection, cell, layers = SIZES[size]
    rows = batch_size * timesteps
    tensor = partial(torch.randn, device=device)
    w_ih, w_hh = tensor(4 * cell, projection), tensor(4 * cell, projection)
    w_hr, bias = tensor(projection, cell), tensor(4 * cell)
    inputs, grad_gates = tensor(rows, projection), tensor(rows, 4 * cell)
    memory, grad_projected = tensor(rows, cell), tensor(rows, projection)
    hidden, step_memory = tensor(batch_size, projection), tensor(batch_size, cell)
    step_grad_gates, step_grad_projected = tensor(batch_size, 4 * cell), tensor(batch_size, projection)

    def layer():
        gates = torch.addmm(bias, inputs, w_ih.t()).view(timesteps, batch_size, -1)
        for t in range(timesteps):
            gates[t].addmm_(hidden, w_hh.t())
            torch.mm(step_memory, w_hr.t())
        with torch.no_grad():  # as in a backward pass
            products = Products(inputs)
            w_hr_t, w_hh_t = products.weight(w_hr.t()), products.weight(w_hh.t())
            for t in range(timesteps):
                products.linear(step_grad_projected, w_hr_t)
                products.linear(step_grad_gates, w_hh_t)
            products.linear(grad_gates, w_ih.t())
            products.linear(grad_gates.t(), inputs.t())
            products.linear(grad_gates.t(), inputs.t())
            products.linear(grad_projected.t(), memory.t())

    def step():
        for _ in range(2 * layers):
            layer()

    return step


def with_torch_lstm(step):
    """`step` run with torch.lstm's CPU path in place of our kernel (plain LSTMP only)."""

    def run():
        ours = layer_module.lstm_with_projection
        layer_module.lstm_with_projection = torch_lstm_fallback
        try:
            step()
        finally:
            layer_module.lstm_with_projection = ours

    return run


def with_setting(step, *variables, setting="0"):
    """`step` with the environment `variables` set to `setting` ("0", the default: off) while it
    runs."""

    def run():
        saved = {variable: os.environ.get(variable) for variable in variables}
        os.environ.update({variable: setting for variable in variables})
        try:
            step()
        finally:
            for variable, value in saved.items():
                if value is None:
                    del os.environ[variable]
                else:
                    os.environ[variable] = value

    return run


def without_graphs(step):
    """`step` with the fused kernel's loops run eagerly instead of from CUDA graphs."""
    return with_setting(step, "ELMO_C_CUDA_GRAPHS")


def without_kernels(step):
    """`step` with each step's pointwise work in torch ops instead of the Triton (GPU) or C
    (CPU) kernels."""
    return with_setting(step, "ELMO_C_TRITON", "ELMO_C_CPU_KERNELS")


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="demo")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=21)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
    parser.add_argument("--update", choices=["adam", "none"], default="adam",
                        help="after forward + backward: an Adam update, or none")  # fmt: skip
    parser.add_argument("--rows", default="reference,fused,allennlp,outside,floor",
                        help="comma-separated rows (also: fused_torch_ops, fused_eager on a "
                        "GPU, outside_torch_lstm, fused_torch_mm and fused_onednn on CPU, "
                        "products: the "
                        "encoder's matrix products alone)")  # fmt: skip
    parser.add_argument("--json", help="append the results to this JSON-lines file")
    args = parser.parse_args()
    args.threads = set_torch_threads(args.threads)
    device = torch.device(args.device)
    if args.precision == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    name = device_name(device, args.threads)
    print(
        f"elmo_lstm {args.size} size {SIZES[args.size]}, batch {args.batch_size} x "
        f"{args.timesteps}, {name}, {args.precision}, forward + backward"
        f"{' + Adam' if args.update == 'adam' else ''}; every row timed in turn, median of "
        f"{args.steps} steps after {args.warmup}"
    )
    shape = (args.size, args.batch_size, args.timesteps, device)
    rows = {}
    for row in args.rows.split(","):
        backend = {"outside": "fused", "fused_eager": "fused", "fused_torch_ops": "fused",
                   "fused_torch_mm": "fused", "fused_onednn": "fused",
                   "outside_torch_lstm": "fused"}  # fmt: skip
        norm = "outside" if row.startswith("outside") else "inside"
        if row == "products":
            # Counted in the tokens of the training-step rows' batch.
            tokens = int(batch_mask(args.batch_size, args.timesteps, device).sum())
            rows[row] = (products_step(args.size, args.batch_size, args.timesteps, device), tokens)
            continue
        step, tokens = training_step(
            backend.get(row, row), *shape, norm=norm, precision=args.precision,
            update=args.update == "adam",
        )  # fmt: skip
        if row == "outside_torch_lstm":
            step = with_torch_lstm(step)
        elif row == "fused_eager":
            step = without_graphs(step)
        elif row == "fused_torch_ops":
            step = without_kernels(step)
        elif row == "fused_torch_mm":
            step = with_setting(step, "ELMO_C_ONEDNN")
        elif row == "fused_onednn":
            step = with_setting(step, "ELMO_C_ONEDNN", setting="1")
        rows[row] = (step, tokens)
    seconds, peaks = time_in_turn(
        {key: step for key, (step, _) in rows.items()}, args.steps, args.warmup, device
    )
    speed = {key: rows[key][1] / seconds[key] for key in rows}
    for row in rows:
        ratios = "  ".join(
            f"{row} / {other} {speed[row] / speed[other]:.2f}x"
            for other in ("reference", "floor", "products")
            if other in speed and other != row
        )
        memory = f"  peak {peaks[row]:.2f} GiB" if device.type == "cuda" else ""
        print(f"  {row:<20} {speed[row]:12,.0f} tokens/s{memory}  {ratios}")
    if args.json:
        with open(args.json, "a") as handle:
            record = {key: value for key, value in vars(args).items() if key != "json"}
            record.update(device=name, tokens_per_second=speed, peak_gib=peaks, torch=torch.__version__)
            handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
