"""
Training-step throughput of the `elmo_lstm` encoder's two backends, measured in the same run:
`reference` (a per-timestep loop through autograd) vs `fused` (`allennlp_elmo_c.nn.lstmp`, one
autograd node per layer with a hand-written backward). Both compute the paper's cell (LayerNorm and
clipping inside the recurrence; `tests/modules/seq2seq_encoders/test_backend_agreement.py`). One step = forward + backward of the encoder plus a continuous head and cosine
loss for both directions, on random inputs shaped like a demo batch (windows of 20 tokens plus
the two boundary tokens), then an Adam update.

    python benchmarks/encoder_backends.py                       # demo size, CPU, 2 threads
    python benchmarks/encoder_backends.py --size paper --device cuda --batch-size 128

Prints tokens/second for each backend and the fused/reference ratio, and, timed in the same run:
AllenNLP's own ELMo encoder (`allennlp.modules.elmo_lstm.ElmoLstm`, a per-step
`LstmCellWithProjection`, same sizes, without our input projection and LayerNorms); the
`recurrence_norm: "outside"` variant (a different model: a plain LSTM with projection, LayerNorm
after each layer) with the fused backend; and, on CPU, that variant with torch's `torch.lstm` in
place of `allennlp_elmo_c.nn.lstmp` (torch's CPU path for projections is a generic fallback:
oneDNN has none), which shows what the hand-written kernel saves.
"""

import argparse
import statistics
import time

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

import allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer as layer_module
from allennlp_elmo_c.modules.output_heads.continuous import ContinuousOutputHead
from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder
from timing import device_name

SIZES = {
    # name: (input size, projection, cell, layers)
    "demo": (100, 128, 256, 2),  # training_config/elmo_c_demo.jsonnet
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


class AllenNlpElmoLstm(torch.nn.Module):
    """AllenNLP's ELMo biLSTM behind our encoder's interface (forward || backward top layer)."""

    def __init__(self, input_size, projection, cell, layers):
        super().__init__()
        from allennlp.modules.elmo_lstm import ElmoLstm

        self.lstm = ElmoLstm(input_size, projection, cell, layers, requires_grad=True,
                             recurrent_dropout_probability=0.1, memory_cell_clip_value=3.0,
                             state_projection_clip_value=3.0)  # fmt: skip

    def forward(self, inputs, mask):
        self.lstm.reset_states()
        return self.lstm(inputs, mask)[-1]


def time_backend(backend, size, batch_size, timesteps, device, steps, warmup, norm="inside"):
    input_size, projection, cell, layers = SIZES[size]
    torch.manual_seed(0)
    if backend == "allennlp":
        encoder = AllenNlpElmoLstm(input_size, projection, cell, layers).to(device)
    else:
        clips = {} if norm == "inside" else {"cell_clip": None, "projection_clip": None}
        encoder = ElmoLstmEncoder(
            input_size, projection, cell, layers, backend=backend, recurrence_norm=norm, **clips
        ).to(device)
    heads = [ContinuousOutputHead(projection, input_size).to(device) for _ in range(2)]
    parameters = list(encoder.parameters()) + [p for head in heads for p in head.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=1e-4)
    inputs = torch.randn(batch_size, timesteps, input_size, device=device)
    mask = torch.ones(batch_size, timesteps, dtype=torch.bool, device=device)
    mask[: batch_size // 4, timesteps - 5 :] = False  # some shorter sentences
    pair_mask = mask[:, 1:]

    def step():
        optimizer.zero_grad()
        forward, backward = encoder(inputs, mask).chunk(2, dim=-1)
        loss = heads[0](forward[:, :-1], pair_mask, inputs[:, 1:])["loss"]
        loss = loss + heads[1](backward[:, 1:], pair_mask, inputs[:, :-1])["loss"]
        loss.backward()
        optimizer.step()

    times = []
    for index in range(warmup + steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if index >= warmup:
            times.append(time.perf_counter() - start)
    tokens = int(mask.sum())
    return tokens / statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="demo")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=22)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    name = device_name(device, args.threads)
    print(
        f"elmo_lstm {args.size} size {SIZES[args.size]}, batch {args.batch_size} x {args.timesteps}, {name}"
    )
    results = {}
    for backend in ("reference", "fused"):
        results[backend] = time_backend(
            backend, args.size, args.batch_size, args.timesteps, device, args.steps, args.warmup
        )
        print(f"  {backend:9s} {results[backend]:12,.0f} tokens/s")
    print(f"  fused / reference: {results['fused'] / results['reference']:.2f}x")
    allennlp = time_backend(
        "allennlp", args.size, args.batch_size, args.timesteps, device, args.steps, args.warmup
    )
    print(
        f"  AllenNLP ElmoLstm (per-step cell) {allennlp:12,.0f} tokens/s: fused / it "
        f"{results['fused'] / allennlp:.2f}x, reference / it {results['reference'] / allennlp:.2f}x"
    )
    timing = (args.size, args.batch_size, args.timesteps, device, args.steps, args.warmup)
    outside = time_backend("fused", *timing, norm="outside")
    print(
        f"  variant recurrence_norm 'outside', fused {outside:12,.0f} tokens/s "
        f"({outside / results['fused']:.2f}x fused inside)"
    )
    if device.type == "cpu":
        ours = layer_module.lstm_with_projection
        layer_module.lstm_with_projection = torch_lstm_fallback
        try:
            fallback = time_backend("fused", *timing, norm="outside")
        finally:
            layer_module.lstm_with_projection = ours
        print(
            f"  variant 'outside' with torch.lstm's CPU fallback {fallback:12,.0f} tokens/s "
            f"({fallback / outside:.2f}x our kernel)"
        )


if __name__ == "__main__":
    main()
