"""
`run.py`'s section 2, `output_layers` (the paper's Table 4): each output head alone over random
encoder outputs at several vocabulary sizes, at batch 1 and at the largest batch (doubling) within
the memory budget.
"""

import time
from typing import Dict, List, Optional, Tuple

import torch

from experiments.speed.output_heads import NAMESPACE, TARGET_DIM, build, head_configs
from experiments.speed.run_models import HEAD_LABELS, HEAD_TIMESTEPS, Profile, word_vocabulary, zipf_ids
from experiments.common.timing import PeakMemory, release_memory, time_in_turn, trainable_parameters

from allennlp.data import Vocabulary

def head_kinds(num_words: int, samples: int) -> Dict[str, Tuple[str, dict]]:
    """`output_heads.head_configs` without the FIXED variant, keyed by registered type."""
    configs = head_configs(num_words, samples)
    return {kind: (kind, options) for kind, options in configs.values()
            if not options.get("freeze_output_embedding")}  # fmt: skip


def static_bytes(kind: str, options: dict, dim: int, vocab: Vocabulary) -> Optional[int]:
    """Weights + gradients + Adam's two moments of a head, counted on the meta device."""
    try:
        with torch.device("meta"):
            head = build(kind, options, dim, vocab, "meta")
        return 4 * 4 * trainable_parameters(head)
    except Exception:  # a head whose constructor needs real tensors: measured instead
        return None


def head_inputs(batch: int, dim: int, num_words: int, device, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    shape = (batch, HEAD_TIMESTEPS)
    hidden = torch.randn(*shape, dim, generator=generator).to(device).requires_grad_(True)
    mask = torch.ones(shape, dtype=torch.bool, device=device)
    vectors = torch.randn(*shape, TARGET_DIM, generator=generator).to(device)
    ids = zipf_ids(num_words, shape, generator).to(device)
    return hidden, mask, vectors, ids


def head_step(head, optimizer, batch: int, dim: int, num_words: int, device):
    hidden, mask, vectors, ids = head_inputs(batch, dim, num_words, device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        hidden.grad = None
        head(hidden, mask, target_embeddings=vectors, target_ids=ids)["loss"].backward()
        optimizer.step()

    return step


def is_out_of_memory(error: Exception) -> bool:
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in str(error)


def output_layers(profile: Profile, device, meter: PeakMemory, budget: int, log) -> List[dict]:
    results = []
    dim = profile.head_dim
    for num_words in profile.head_vocabs:
        log(f"output_layers V={num_words:,}: building the vocabulary")
        vocab = word_vocabulary(num_words, NAMESPACE)
        for kind, (_, options) in head_kinds(num_words, profile.samples).items():
            record = {"head": HEAD_LABELS[kind], "type": kind, "options": options,
                      "vocab_size": num_words, "dim": dim, "timesteps": HEAD_TIMESTEPS}  # fmt: skip
            results.append(record)
            static = static_bytes(kind, options, dim, vocab)
            record["static_bytes_estimate"] = static
            if static is not None and static > budget:
                record["fits"] = False
                log(f"  {kind}: weights + Adam {static / 2**30:.1f} GiB > budget: does not fit")
                continue
            try:
                log(f"  {kind}: building, batch 1")
                meter.mark()
                head = build(kind, options, dim, vocab, device)
                optimizer = torch.optim.Adam(head.parameters(), lr=1e-4, eps=1e-6)
                record["trainable_parameters"] = trainable_parameters(head)
                fitted = search_batch(head, optimizer, num_words, dim, device, meter, budget,
                                      profile, log)  # fmt: skip
                record.update(fitted)
            except RuntimeError as error:
                if not is_out_of_memory(error):
                    raise
                record["fits"] = False
                log(f"  {kind}: out of memory at batch 1: does not fit")
            head = optimizer = None
            release_memory()
        base = {r["vocab_size"]: r for r in results if r["type"] == "continuous"}[num_words]
        for record in results:
            if record["vocab_size"] == num_words and record.get("fits"):
                for key in ("batch1", "largest"):
                    record[key]["vs_continuous"] = (
                        record[key]["seconds_per_million_tokens"]
                        / base[key]["seconds_per_million_tokens"]
                    ) if base.get("fits") else None  # fmt: skip
    return results


def search_batch(head, optimizer, num_words, dim, device, meter, budget, profile, log):
    """Batch 1, then doubling while the predicted and the measured peak stay within `budget`;
    times batch 1 and the largest batch that fitted."""

    def probe(batch: int):
        step = head_step(head, optimizer, batch, dim, num_words, device)
        for _ in range(profile.head_warmup):
            step()
        start = time.perf_counter()
        peak = meter.measure(step)
        return step, peak, time.perf_counter() - start

    def timed(batch: int, step, peak: int, probe_seconds: float) -> dict:
        # Cheap steps are repeated more (up to about a second, at most 50): a few milliseconds'
        # median would be noise.
        steps = max(profile.head_steps, min(50, int(1.0 / max(probe_seconds, 1e-4))))
        seconds, _ = time_in_turn({"head": step}, steps, 0, device)
        tokens = batch * HEAD_TIMESTEPS
        return {"batch": batch, "tokens_per_step": tokens, "seconds_per_step": seconds["head"],
                "timed_steps": steps,
                "seconds_per_million_tokens": seconds["head"] / tokens * 1e6,
                "peak_memory_gib": peak / 2**30}  # fmt: skip

    step, peak, probe_seconds = probe(1)
    first = timed(1, step, peak, probe_seconds)
    if peak > budget:
        return {"fits": False, "batch1_over_budget": first}
    # (batch, peak) measured. From two measurements on, the next probe's memory is predicted
    # linear in the batch (weights, gradients and optimizer state, plus activations per window)
    # and not run if it would exceed the budget: on CPU running out of memory kills the process.
    points = [(1, peak)]
    best = (1, step, peak, probe_seconds)
    batch = 1
    while batch * 2 <= profile.max_batch:
        batch *= 2
        if len(points) >= 2:
            (b0, p0), (b1, p1) = points[-2:]
            if p1 + (p1 - p0) / (b1 - b0) * (batch - b1) > budget:
                break
        try:
            step, peak, probe_seconds = probe(batch)
        except RuntimeError as error:
            if not is_out_of_memory(error):
                raise
            break
        if peak > budget:
            break
        points.append((batch, peak))
        best = (batch, step, peak, probe_seconds)
    largest = first if best[0] == 1 else timed(*best)
    log(f"    largest batch {largest['batch']}: "
        f"{largest['seconds_per_million_tokens']:.2f} s / 1M tokens")  # fmt: skip
    return {"fits": True, "batch1": first, "largest": largest,
            "largest_is_cap": largest["batch"] * 2 > profile.max_batch}
