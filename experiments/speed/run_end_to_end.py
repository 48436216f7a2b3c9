"""
`run.py`'s section 1, `end_to_end`: whole training steps (forward, backward, optimizer step) of
ELMo-C against allennlp-models' `language_model` over ELMo's character CNN, on the same batch,
timed in turn; tokens/s, peak memory and, with `--profile-ops`, where a step's time goes.
"""

import statistics
from typing import Callable, List, Sequence

import torch

from experiments.speed.run_models import (
    ENCODER_SIZES,
    TIMESTEPS,
    Profile,
    _RandomFastTextMatrix,
    adam,
    dense_sparse_adam,
    elmo_c_batch,
    elmo_c_model,
    measured,
    model_step,
    peer_batch,
    peer_model,
    sample_words,
    word_vocabulary,
)
from experiments.common.timing import PeakMemory, release_memory, synchronize, times_in_turn

from allennlp.data import Vocabulary

def top_operators(step: Callable[[], None], device, count: int) -> List[dict]:
    """One more step under `torch.profiler`: the `count` operators with the most self time (on
    the GPU on CUDA, else on the CPU) and their share of the step's total self time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as profiler:
        step()
        synchronize(device)
    events = profiler.key_averages()

    def self_time(event) -> float:  # microseconds
        if device.type == "cuda":
            return getattr(event, "self_device_time_total", None) or getattr(
                event, "self_cuda_time_total", 0.0)  # fmt: skip
        return event.self_cpu_time_total

    total = sum(self_time(event) for event in events) or 1.0
    ranked = sorted(events, key=self_time, reverse=True)[:count]
    return [{"operator": event.key, "self_ms": self_time(event) / 1000,
             "share": self_time(event) / total} for event in ranked]  # fmt: skip



PRECISIONS = ("float32", "tf32", "bfloat16")
ELMO_C = "ELMo-C"


def elmo_c_row(precision: str) -> str:
    """The row name of ELMo-C in `precision`: float32 is the base row, "ELMo-C"."""
    return ELMO_C if precision == "float32" else f"{ELMO_C} ({precision})"


def end_to_end(profile: Profile, device, meter: PeakMemory, log, operators: int = 0,
               threads: Sequence[int] = (), precisions: Sequence[str] = ("float32",)) -> List[dict]:  # fmt: skip
    """Every row of `profile.end_to_end`, at each of `threads` CPU threads (the current number
    when empty), rows tagged with it; ELMo-C in each of `precisions` ("float32", "tf32": float32
    with TF32 products on a GPU, "bfloat16": `model.precision: bfloat16`), the peer in float32
    (under CPU bfloat16 autocast its character encoder's LayerNorm raises, in AllenNLP's
    `tiny_value_of_dtype`)."""
    results = []
    log(f"building a {profile.peer_vocab:,}-word vocabulary for the peer's softmax")
    vocab = word_vocabulary(profile.peer_vocab, "tokens")
    for count in threads or [torch.get_num_threads()]:
        if device.type == "cpu":
            torch.set_num_threads(count)
        for row in _end_to_end_rows(profile, device, meter, log, operators, vocab, precisions):
            results.append(dict(row, threads=count if device.type == "cpu" else None))
    return results


def _end_to_end_rows(profile: Profile, device, meter: PeakMemory, log, operators: int,
                     vocab: Vocabulary, precisions: Sequence[str]) -> List[dict]:  # fmt: skip
    results = []
    generator = torch.Generator().manual_seed(0)
    for size, batch_size, steps, warmup in profile.end_to_end:
        words = sample_words(batch_size, TIMESTEPS, generator)
        tokens = batch_size * TIMESTEPS
        input_size = ENCODER_SIZES[size][0]
        # The frozen table is made before the memory mark: it is reported apart.
        table = _RandomFastTextMatrix(profile.fasttext_rows, input_size).matrix_on(device)

        def elmo_c(precision: str):
            def build():
                model = elmo_c_model(size, profile.fasttext_rows, table=table,
                                     precision="bfloat16" if precision == "bfloat16" else "float32").to(device)  # fmt: skip
                batch = elmo_c_batch(words, profile.fasttext_rows, device, generator)
                return model, model_step(model, adam(model), batch, tf32=precision == "tf32"), tokens

            return build

        def peer(allennlp_lstm):
            def build():
                model = peer_model(size, vocab, profile.samples, allennlp_lstm,
                                   profile.char_filters).to(device)  # fmt: skip
                batch = peer_batch(words, profile.peer_vocab, device, generator)
                return model, model_step(model, dense_sparse_adam(model), batch), tokens

            return build

        builders = {elmo_c_row(precision): elmo_c(precision) for precision in ("float32", *precisions)}
        if not profile.allennlp_peer_only or size not in profile.allennlp_lstm_sizes:
            builders["peer: char CNN + elmo_lstm + sampled"] = peer(False)
        if size in profile.allennlp_lstm_sizes:
            builders["peer: char CNN + AllenNLP ElmoLstm + sampled"] = peer(True)
        rows = {}
        for name, builder in builders.items():
            log(f"end_to_end {size}: building and warming up {name}")
            rows[name] = measured(builder, meter, warmup)
        log(f"end_to_end {size}: timing {len(rows)} rows in turn, {steps} steps after {warmup}")
        times, _ = times_in_turn({n: r.step for n, r in rows.items()}, steps, warmup, device)
        seconds = {name: statistics.median(values) for name, values in times.items()}
        base = rows[ELMO_C]
        for name, row in rows.items():
            speed = row.tokens / seconds[name]
            elmo_c_precision = next((p for p in PRECISIONS if name == elmo_c_row(p)), None)
            results.append({
                "size": size, "lstm": dict(zip(("input", "projection", "cell", "layers"),
                                               ENCODER_SIZES[size])),
                "model": name, "precision": elmo_c_precision or "float32",
                "batch": batch_size, "timesteps": TIMESTEPS,
                "tokens_per_s": speed, "seconds_per_step": seconds[name],
                "peak_memory_gib": row.peak_bytes / 2**30,
                "trainable_parameters": row.parameters,
                "softmax_words": None if elmo_c_precision else profile.peer_vocab,
                "frozen_fasttext_gib": table.numel() * 4 / 2**30 if elmo_c_precision else 0.0,
                "fasttext_input_dim": input_size if elmo_c_precision else None,
            })  # fmt: skip
            results[-1]["elmo_c_speedup"] = (base.tokens / seconds[ELMO_C]) / speed
            # Each repeat's ratio: this row's step against the ELMo-C step timed just before it.
            repeats = [theirs / ours for ours, theirs in zip(times[ELMO_C], times[name])]
            results[-1]["elmo_c_speedup_range"] = [min(repeats), max(repeats)]
            results[-1]["repeats"] = len(repeats)
            for precision in precisions:  # each other ELMo-C precision against this row
                if precision != "float32":
                    theirs = times[elmo_c_row(precision)]
                    ratios = [mine / other for mine, other in zip(times[name], theirs)]
                    results[-1][f"{precision}_speedup"] = seconds[name] / statistics.median(theirs)
                    results[-1][f"{precision}_speedup_range"] = [min(ratios), max(ratios)]
            results[-1]["elmo_c_memory_ratio"] = base.peak_bytes / max(row.peak_bytes, 1)
            if operators:
                results[-1]["top_operators"] = top_operators(row.step, device, operators)
        rows = table = None
        release_memory()
    return results
