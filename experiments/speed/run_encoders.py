"""
`run.py`'s section 3, `encoders` (the paper's Table 5): LSTMs of 1 and 2 layers, the ELMo encoder
(`elmo_lstm`) and a Transformer, each with the continuous and the adaptive head: tokens/s.
"""

from typing import Callable, Dict, List

import torch

from experiments.speed.output_heads import NAMESPACE, TARGET_DIM, build
from experiments.speed.run_models import (
    ENCODER_SIZES,
    HEAD_LABELS,
    TIMESTEPS,
    Profile,
    adam,
    measured,
    word_vocabulary,
    zipf_ids,
)
from experiments.speed.run_output_layers import head_kinds
from experiments.common.timing import PeakMemory, time_in_turn, trainable_parameters

class TransformerBiLM(torch.nn.Module):
    """Two `torch.nn.TransformerEncoder` stacks (pre-norm, learned positions): one reads left to
    right under a causal mask, the other the reversed sequence under the same mask; their
    outputs are concatenated (forward || backward) as the LSTMs' are."""

    def __init__(self, input_size: int, dim: int, layers: int, max_length: int = 512) -> None:
        super().__init__()
        self.input_projection = torch.nn.Linear(input_size, dim)
        self.positions = torch.nn.Embedding(max_length, dim)
        heads = 8 if dim % 8 == 0 and dim >= 64 else 2

        def stack():
            layer = torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, 0.1, batch_first=True,
                                                     norm_first=True)  # fmt: skip
            return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

        self.directions = torch.nn.ModuleList([stack(), stack()])

    def forward(self, inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        timesteps = inputs.size(1)
        causal = torch.nn.Transformer.generate_square_subsequent_mask(timesteps, device=inputs.device)
        x = self.input_projection(inputs) + self.positions.weight[:timesteps]
        forward = self.directions[0](x, mask=causal, is_causal=True)
        backward = self.directions[1](x.flip(1), mask=causal, is_causal=True).flip(1)
        return torch.cat([forward, backward], dim=-1)


def encoder_specs(size: str, transformer_layers: int) -> Dict[str, Callable[[], torch.nn.Module]]:
    from allennlp_elmo_c.modules.seq2seq_encoders.elmo_lstm import ElmoLstmEncoder

    input_size, projection, cell, layers = ENCODER_SIZES[size]
    plain = {"recurrence_norm": "outside", "cell_clip": None, "projection_clip": None}
    return {
        f"LSTM 1 layer, cell {cell // 2}, projection {projection}":
            lambda: ElmoLstmEncoder(input_size, projection, cell // 2, 1, **plain),
        f"LSTM {layers} layers, cell {cell}, projection {projection}":
            lambda: ElmoLstmEncoder(input_size, projection, cell, layers, **plain),
        f"ELMo encoder (elmo_lstm, {size})":
            lambda: ElmoLstmEncoder(input_size, projection, cell, layers),
        f"Transformer {transformer_layers} layers per direction, d {projection}":
            lambda: TransformerBiLM(input_size, projection, transformer_layers),
    }  # fmt: skip


def encoders(profile: Profile, device, meter: PeakMemory, log) -> List[dict]:
    size = profile.encoder_size
    input_size, projection, _, layers = ENCODER_SIZES[size]
    num_words = profile.encoder_vocab
    log(f"encoders: building the {num_words:,}-word vocabulary")
    vocab = word_vocabulary(num_words, NAMESPACE)
    heads = head_kinds(num_words, profile.samples)
    generator = torch.Generator().manual_seed(0)
    batch = profile.encoder_batch
    inputs = torch.randn(batch, TIMESTEPS, input_size, generator=generator).to(device)
    mask = torch.ones(batch, TIMESTEPS, dtype=torch.bool, device=device)
    ids = zipf_ids(num_words, (batch, TIMESTEPS), generator).to(device)
    vectors = torch.randn(batch, TIMESTEPS, TARGET_DIM, generator=generator).to(device)
    rows = {}
    for name, make in encoder_specs(size, profile.transformer_layers.get(size, layers)).items():
        for kind in ("continuous", "adaptive_softmax"):

            def construct(make=make, kind=kind):
                _, options = heads[kind]
                model = torch.nn.ModuleDict({
                    "encoder": make(),
                    "forward_head": build(kind, options, projection, vocab, device),
                    "backward_head": build(kind, options, projection, vocab, device),
                }).to(device).train()  # fmt: skip
                optimizer = adam(model)

                def step():
                    optimizer.zero_grad(set_to_none=True)
                    forward, backward = model["encoder"](inputs, mask).chunk(2, dim=-1)
                    pair = mask[:, 1:]
                    loss = model["forward_head"](forward[:, :-1], pair,
                                                 target_embeddings=vectors[:, 1:],
                                                 target_ids=ids[:, 1:])["loss"]  # fmt: skip
                    loss = loss + model["backward_head"](backward[:, 1:], pair,
                                                         target_embeddings=vectors[:, :-1],
                                                         target_ids=ids[:, :-1])["loss"]  # fmt: skip
                    loss.backward()
                    optimizer.step()

                return model, step, batch * TIMESTEPS

            log(f"encoders: building {name} + {kind}")
            row = measured(construct, meter, profile.encoder_warmup)
            row.extra = {"encoder": name, "head": HEAD_LABELS[kind],
                         "encoder_parameters": trainable_parameters(row.module["encoder"])}  # fmt: skip
            rows[(name, kind)] = row
    log(f"encoders: timing {len(rows)} rows in turn")
    seconds, _ = time_in_turn({f"{n}|{k}": r.step for (n, k), r in rows.items()},
                              profile.encoder_steps, profile.encoder_warmup, device)  # fmt: skip
    results = []
    for (name, kind), row in rows.items():
        results.append({**row.extra, "size": size, "vocab_size": num_words, "batch": batch,
                        "tokens_per_s": row.tokens / seconds[f"{name}|{kind}"],
                        "peak_memory_gib": row.peak_bytes / 2**30,
                        "trainable_parameters": row.parameters})  # fmt: skip
    return results
