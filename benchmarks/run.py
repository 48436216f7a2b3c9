"""
The paper's efficiency claims measured side by side in one run, on whatever this runs on:

1. `end_to_end`: whole training steps (forward, backward, optimizer step) of ELMo-C (`elmo_c`:
   fastText input, our `elmo_lstm`, continuous head with the cosine loss) against the peer built
   from code no one here wrote: allennlp-models' `language_model` (bidirectional, `num_samples`
   8192: AllenNLP's `SampledSoftmaxLoss` with sparse embeddings and `dense_sparse_adam`, as its
   own bidirectional LM config) over ELMo's character CNN, with the same contextualizer (our
   `elmo_lstm`, then AllenNLP's own `ElmoLstm`), same batch, 800K-word softmax. Tokens/s and
   peak memory, ELMo-C / peer.
2. `output_layers` (Table 4): continuous, adaptive, sampled, full and slim softmax heads over
   random encoder outputs at V = 40K, 800K, 2,000K: time per 1M tokens at batch 1 and at the
   largest batch within `--memory-budget-gb` (doubling), parameters, peak memory.
3. `encoders` (Table 5): LSTMs of 1 and 2 layers, the ELMo encoder (`elmo_lstm`) and a
   Transformer, each with the continuous and the adaptive head at V = 800K: tokens/s.
4. `data_pipeline`: reading + `fasttext_subwords` indexing + batching + the fastText lookup,
   tokens/s, as a share of an ELMo-C training step.

    python benchmarks/run.py --quick                    # < 10 min on 2 CPU cores
    python benchmarks/run.py --full --device cuda       # paper sizes
    python benchmarks/run.py --quick --sections output_layers encoders

Writes the raw numbers to `--out` (JSON), the tables into `--markdown` between markers (a rerun
replaces only that section) and the output-layer plot to `--plot`. Timings are medians over
repeated steps after warm-up; rows that are compared are timed in turn, step by step
(`timing.time_in_turn`), so load on the machine affects them alike.
"""

import argparse
import gc
import json
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoder_backends import SIZES  # noqa: E402
from output_heads import NAMESPACE, TARGET_DIM, build, head_configs  # noqa: E402
from timing import PeakMemory, machine_description, release_memory, synchronize  # noqa: E402
from timing import time_in_turn, trainable_parameters  # noqa: E402

from allennlp.common import Params  # noqa: E402
from allennlp.data import Vocabulary  # noqa: E402
from allennlp.models import Model  # noqa: E402
from allennlp.modules.token_embedders import TokenEmbedder  # noqa: E402

import allennlp_elmo_c  # noqa: E402,F401  (registers elmo_c, elmo_lstm, the heads)
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "tests" / "fixtures"
FASTTEXT_FIXTURE = FIXTURES / "fasttext" / "tiny.bin"
TEXT_FIXTURE = FIXTURES / "data" / "lm" / "sentences.txt"
BEGIN, END = "<!-- benchmarks/run.py: begin -->", "<!-- benchmarks/run.py: end -->"
ENCODER_SIZES = {**SIZES, "smoke": (16, 64, 64, 2)}  # (input, projection, cell, layers)
TIMESTEPS = 21  # a window of 20 tokens plus the shared boundary token, as `lm_corpus` makes
HEAD_TIMESTEPS = 20
# ELMo's character CNN (Peters et al. 2018; allennlp-models' bidirectional LM config).
ELMO_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
SECTIONS = ("end_to_end", "output_layers", "encoders", "data_pipeline")
HEADS = ("continuous", "adaptive_softmax", "sampled_softmax", "softmax", "slim_softmax")
HEAD_LABELS = {"continuous": "continuous (ELMo-C)", "adaptive_softmax": "adaptive",
               "sampled_softmax": "sampled", "softmax": "full softmax",
               "slim_softmax": "slim"}  # fmt: skip


@dataclass
class Profile:
    """How big and how long: `--smoke`, `--quick` or `--full`."""

    name: str
    end_to_end: List[Tuple[str, int, int, int]]  # (size, batch, steps, warm-up)
    peer_vocab: int
    fasttext_rows: int
    samples: int
    head_vocabs: List[int]
    head_dim: int
    head_steps: int
    head_warmup: int
    max_batch: int  # windows of 20 tokens; the doubling search stops there
    encoder_size: str
    encoder_batch: int
    encoder_steps: int
    encoder_warmup: int
    encoder_vocab: int
    pipeline_tokens: int
    transformer_layers: Dict[str, int] = field(default_factory=lambda: {"smoke": 1})
    char_filters: List[List[int]] = field(default_factory=lambda: ELMO_FILTERS)
    # Sizes with the second peer row (AllenNLP's ElmoLstm): each peer holds its 800K-word
    # softmax and the optimizer's state for it (4.9 GB at the paper's size).
    allennlp_lstm_sizes: List[str] = field(default_factory=lambda: ["smoke", "demo", "paper"])
    # Only the peer as its users run it (AllenNLP's ElmoLstm) where it is measured: two 800K-word
    # peers and cc.en.300's table at the paper's size do not fit in 24 GB together.
    allennlp_peer_only: bool = False


def profile_for(name: str, device: torch.device) -> Profile:
    gpu = device.type == "cuda"
    if name == "smoke":
        return Profile("smoke", [("smoke", 4, 1, 1)], 1_000, 1_000, 16, [1_000, 2_000, 4_000], 64,
                       1, 1, 2, "smoke", 4, 1, 1, 1_000, 400,
                       char_filters=[[1, 4], [2, 8]])  # fmt: skip
    paper_batch = 128 if gpu else 8
    if name == "quick":
        return Profile(
            "quick",
            [("demo", 256 if gpu else 32, 5 if gpu else 3, 1), ("paper", paper_batch, 5 if gpu else 2, 1)],
            800_000, 4_000_000 if gpu else 1_000_000, 8192, [40_000, 800_000, 2_000_000],
            ENCODER_SIZES["demo"][1], 3 if gpu else 2, 1, 1024 if gpu else 16,
            "demo", 256 if gpu else 32, 5 if gpu else 3, 1, 800_000, 20_000,
            allennlp_lstm_sizes=["demo", "paper"] if gpu else ["demo"],
        )  # fmt: skip
    return Profile(
        "full",
        [("demo", 256 if gpu else 64, 10, 3), ("paper", paper_batch, 10 if gpu else 3, 2)],
        800_000, 4_000_000, 8192, [40_000, 800_000, 2_000_000], ENCODER_SIZES["paper"][1],
        5 if gpu else 3, 2, 8192 if gpu else 512, "paper", paper_batch, 10 if gpu else 3,
        2 if gpu else 1, 800_000, 200_000,
    )  # fmt: skip


# ----------------------------------------------------------------------------- inputs


class _RandomFastTextMatrix:
    """Stands in for `FastTextBin`: a random `(rows, dim)` matrix, made on first use per device."""

    def __init__(self, rows: int, dim: int) -> None:
        self.num_rows, self.dim, self.fingerprint, self.path = rows, dim, 0, "synthetic"
        self.table: Optional[torch.Tensor] = None  # one device at a time: all a benchmark needs

    def matrix_on(self, device: torch.device) -> torch.Tensor:
        device = torch.device(device)
        if self.table is None or self.table.device.type != device.type:
            generator = torch.Generator(device).manual_seed(0)
            self.table = torch.randn(self.num_rows, self.dim, device=device,
                                     generator=generator).mul_(0.1)  # fmt: skip
        return self.table


@TokenEmbedder.register("synthetic_fasttext")
class SyntheticFastTextEmbedder(FastTextEmbedder):
    """The `fasttext` embedder (its forward: the mean of the subword rows) over a random frozen
    matrix in the shape of a real `.bin` (cc.en.300: 2M words + 2M buckets, 300-d)."""

    def __init__(self, embedding_dim: int, rows: int) -> None:
        TokenEmbedder.__init__(self)
        self._fasttext = _RandomFastTextMatrix(rows, embedding_dim)
        self._indexer_checked = True


def zipf_ids(num_words: int, shape, generator: torch.Generator, first: int = 2) -> torch.Tensor:
    """Word ids in [first, num_words) with Zipfian frequencies (id order = frequency order)."""
    ranks = torch.arange(1, num_words - first + 1, dtype=torch.float64)
    cumulative = torch.cumsum(1.0 / ranks, 0)
    uniform = torch.rand(shape, generator=generator, dtype=torch.float64) * cumulative[-1]
    ids = torch.searchsorted(cumulative, uniform).clamp(max=num_words - first - 1)
    return ids + first


def fixture_words() -> List[str]:
    return TEXT_FIXTURE.read_text().split()


def fasttext_subword_count(word: str, minn: int = 3, maxn: int = 6) -> int:
    """The word's row plus its character n-grams (with `<` `>`), as fastText counts them."""
    length = len(word) + 2
    return 1 + sum(max(0, length - n + 1) for n in range(minn, maxn + 1))


def sample_words(batch: int, timesteps: int, generator: torch.Generator) -> List[List[str]]:
    words = fixture_words()
    picks = torch.randint(len(words), (batch, timesteps), generator=generator).tolist()
    return [[words[i] for i in row] for row in picks]


def elmo_c_batch(words, rows: int, device, generator) -> Dict[str, Dict[str, torch.Tensor]]:
    """`fasttext_subwords`-shaped input: realistic subword counts (cc.en.300's 3- to 6-grams of
    each word), random row ids (a word row from the first half, n-grams from the buckets)."""
    counts = torch.tensor([[fasttext_subword_count(w) for w in row] for row in words])
    width = int(counts.max())
    half = max(1, rows // 2)
    ids = torch.randint(half, rows, (*counts.shape, width), generator=generator)
    ids[:, :, 0] = torch.randint(0, half, counts.shape, generator=generator)
    tensors = {"subword_ids": ids, "token_mask": torch.ones(counts.shape, dtype=torch.bool),
               "subword_counts": counts}  # fmt: skip
    # `elmo_c`'s forward argument `tokens`: a text field with one indexer, `tokens`.
    return {"tokens": {"tokens": {key: value.to(device) for key, value in tensors.items()}}}


def peer_batch(words, num_words: int, device, generator) -> Dict[str, Dict[str, torch.Tensor]]:
    """`single_id` targets (Zipfian ids) and `elmo_token_characters` ids of the same words."""
    from allennlp.data.token_indexers.elmo_indexer import ELMoCharacterMapper

    mapper = ELMoCharacterMapper()
    characters = torch.tensor([[mapper.convert_word_to_char_ids(w) for w in row] for row in words])
    ids = zipf_ids(num_words, characters.shape[:2], generator)
    return {"source": {"tokens": {"tokens": ids.to(device)},
                       "token_characters": {"elmo_tokens": characters.to(device)}}}  # fmt: skip


def word_vocabulary(num_words: int, namespace: str) -> Vocabulary:
    """A vocabulary of `num_words` (with padding and OOV) in `namespace`: made-up words."""
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"w{i}" for i in range(num_words - 2)], namespace)
    return vocab


# ----------------------------------------------------------------------------- models


def lstm_params(size: str) -> dict:
    input_size, projection, cell, layers = ENCODER_SIZES[size]
    return {"type": "elmo_lstm", "input_size": input_size, "projection_size": projection,
            "cell_size": cell, "num_layers": layers}  # fmt: skip


def elmo_c_model(size: str, rows: int) -> Model:
    """`elmo_c` as `training_config/elmo_c.jsonnet` builds it, over a synthetic fastText."""
    input_size = ENCODER_SIZES[size][0]
    params = {
        "type": "elmo_c",
        "text_field_embedder": {"token_embedders": {"tokens": {
            "type": "synthetic_fasttext", "embedding_dim": input_size, "rows": rows}}},
        "contextualizer": lstm_params(size),
        "output_head": {"type": "continuous", "loss": "cosine"},
        "dropout": 0.0,
    }  # fmt: skip
    return Model.from_params(vocab=Vocabulary(), params=Params(params))


def peer_model(size: str, vocab: Vocabulary, samples: int, allennlp_lstm: bool,
               filters: List[List[int]] = ELMO_FILTERS) -> Model:  # fmt: skip
    """allennlp-models' `language_model` over ELMo's character CNN."""
    import allennlp_models.lm  # noqa: F401  (registers language_model)

    input_size, projection, cell, layers = ENCODER_SIZES[size]
    if allennlp_lstm:  # as ELMo: the CNN projects to the LSTM's size, no input projection
        contextualizer = {"type": "allennlp_elmo_lstm", "input_size": projection,
                          "projection_size": projection, "cell_size": cell,
                          "num_layers": layers}  # fmt: skip
        cnn_output = projection
    else:
        contextualizer, cnn_output = lstm_params(size), input_size
    params = {
        "type": "language_model",
        "bidirectional": True,
        "num_samples": samples,
        "sparse_embeddings": True,
        "dropout": 0.1,
        "text_field_embedder": {"token_embedders": {
            "tokens": {"type": "empty"},
            "token_characters": {
                "type": "character_encoding",
                "embedding": {"num_embeddings": 262, "embedding_dim": 16},
                "encoder": {"type": "cnn-highway", "activation": "relu", "embedding_dim": 16,
                            "filters": filters, "num_highway": 2,
                            "projection_dim": cnn_output, "projection_location": "after_highway",
                            "do_layer_norm": True},
            },
        }},
        "contextualizer": contextualizer,
    }  # fmt: skip
    return Model.from_params(vocab=vocab, params=Params(params))


def adam(model: torch.nn.Module):
    """The pretraining configs' optimizer: `fused_adam` (AllenNLP's `adam` update, fused)."""
    from allennlp_elmo_c.training.fused_adam import FusedAdamOptimizer

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return FusedAdamOptimizer(named, lr=1e-4, eps=1e-6)


def dense_sparse_adam(model: torch.nn.Module):
    from allennlp.training.optimizers import DenseSparseAdam

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return DenseSparseAdam(named, lr=1e-3)


def model_step(model: torch.nn.Module, optimizer, batch) -> Callable[[], None]:
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(**batch)["loss"].backward()
        optimizer.step()

    return step


@dataclass
class Row:
    """One measured configuration: its step, tokens per step and what it holds."""

    step: Callable[[], None]
    tokens: int
    module: torch.nn.Module
    parameters: int
    peak_bytes: Optional[int] = None
    extra: dict = field(default_factory=dict)


def measured(build: Callable[[], Tuple[torch.nn.Module, Callable[[], None], int]],
             meter: PeakMemory, warmup: int = 1) -> Row:  # fmt: skip
    """Builds a row after a memory mark, warms it up (so the optimizer's state exists) and
    measures one more step's peak memory above the mark: the row's weights, gradients,
    optimizer state and activations."""
    meter.mark()
    module, step, tokens = build()
    for _ in range(max(1, warmup)):
        step()
    peak = meter.measure(step)
    return Row(step, tokens, module, trainable_parameters(module), peak)


# ----------------------------------------------------------------------------- 1. end to end


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



def end_to_end(profile: Profile, device, meter: PeakMemory, log, operators: int = 0,
               threads: Sequence[int] = ()) -> List[dict]:  # fmt: skip
    """Every row of `profile.end_to_end`, at each of `threads` CPU threads (the current number
    when empty), rows tagged with it."""
    results = []
    log(f"building a {profile.peer_vocab:,}-word vocabulary for the peer's softmax")
    vocab = word_vocabulary(profile.peer_vocab, "tokens")
    for count in threads or [torch.get_num_threads()]:
        if device.type == "cpu":
            torch.set_num_threads(count)
        for row in _end_to_end_rows(profile, device, meter, log, operators, vocab):
            results.append(dict(row, threads=count if device.type == "cpu" else None))
    return results


def _end_to_end_rows(profile: Profile, device, meter: PeakMemory, log, operators: int,
                     vocab: Vocabulary) -> List[dict]:  # fmt: skip
    results = []
    generator = torch.Generator().manual_seed(0)
    for size, batch_size, steps, warmup in profile.end_to_end:
        words = sample_words(batch_size, TIMESTEPS, generator)
        tokens = batch_size * TIMESTEPS
        input_size = ENCODER_SIZES[size][0]
        # The frozen table is made before the memory mark: it is reported apart.
        table = _RandomFastTextMatrix(profile.fasttext_rows, input_size).matrix_on(device)

        def elmo_c():
            model = elmo_c_model(size, profile.fasttext_rows)
            model._text_field_embedder.token_embedder_tokens._fasttext.table = table
            model.to(device)
            batch = elmo_c_batch(words, profile.fasttext_rows, device, generator)
            return model, model_step(model, adam(model), batch), tokens

        def peer(allennlp_lstm):
            def build():
                model = peer_model(size, vocab, profile.samples, allennlp_lstm,
                                   profile.char_filters).to(device)  # fmt: skip
                batch = peer_batch(words, profile.peer_vocab, device, generator)
                return model, model_step(model, dense_sparse_adam(model), batch), tokens

            return build

        builders = {"ELMo-C": elmo_c}
        if not profile.allennlp_peer_only or size not in profile.allennlp_lstm_sizes:
            builders["peer: char CNN + elmo_lstm + sampled"] = peer(False)
        if size in profile.allennlp_lstm_sizes:
            builders["peer: char CNN + AllenNLP ElmoLstm + sampled"] = peer(True)
        rows = {}
        for name, builder in builders.items():
            log(f"end_to_end {size}: building and warming up {name}")
            rows[name] = measured(builder, meter, warmup)
        log(f"end_to_end {size}: timing {len(rows)} rows in turn, {steps} steps after {warmup}")
        seconds, _ = time_in_turn({n: r.step for n, r in rows.items()}, steps, warmup, device)
        base = rows["ELMo-C"]
        for name, row in rows.items():
            speed = row.tokens / seconds[name]
            results.append({
                "size": size, "lstm": dict(zip(("input", "projection", "cell", "layers"),
                                               ENCODER_SIZES[size])),
                "model": name, "batch": batch_size, "timesteps": TIMESTEPS,
                "tokens_per_s": speed, "seconds_per_step": seconds[name],
                "peak_memory_gib": row.peak_bytes / 2**30,
                "trainable_parameters": row.parameters,
                "softmax_words": None if name == "ELMo-C" else profile.peer_vocab,
                "frozen_fasttext_gib": table.numel() * 4 / 2**30 if name == "ELMo-C" else 0.0,
                "fasttext_input_dim": input_size if name == "ELMo-C" else None,
            })  # fmt: skip
            results[-1]["elmo_c_speedup"] = (base.tokens / seconds["ELMo-C"]) / speed
            results[-1]["elmo_c_memory_ratio"] = base.peak_bytes / max(row.peak_bytes, 1)
            if operators:
                results[-1]["top_operators"] = top_operators(row.step, device, operators)
        rows = table = None
        release_memory()
    return results


# ----------------------------------------------------------------------------- 2. output layers


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


# ----------------------------------------------------------------------------- 3. encoders


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


# ----------------------------------------------------------------------------- 4. data pipeline


def data_pipeline(profile: Profile, device, training: Optional[dict], meter, log) -> dict:
    """Reading + indexing + batching + fastText lookup of the fixture corpus, with the fixture
    fastText model, against an ELMo-C demo training step's speed."""
    from allennlp.data import Batch

    from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer

    text = TEXT_FIXTURE.read_text()
    repeats = max(1, math.ceil(profile.pipeline_tokens / len(text.split())))
    embedder = FastTextEmbedder(str(FASTTEXT_FIXTURE)).to(device)
    vocab = Vocabulary()
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.txt"
        corpus.write_text(text * repeats)
        timings = {}
        indexer = FastTextSubwordsIndexer(str(FASTTEXT_FIXTURE))
        reader = LmCorpusReader(token_indexers={"tokens": indexer}, max_sequence_length=TIMESTEPS)
        start = time.perf_counter()
        instances = list(reader.read(str(corpus)))
        timings["read"] = time.perf_counter() - start
        tokens = sum(len(instance["tokens"].tokens) - 1 for instance in instances)
        start = time.perf_counter()
        for instance in instances:
            reader.apply_token_indexers(instance)
            instance.index_fields(vocab)
        batch_size = 64
        batches = [Batch(instances[i : i + batch_size]).as_tensor_dict()
                   for i in range(0, len(instances), batch_size)]  # fmt: skip
        timings["index_and_batch"] = time.perf_counter() - start
        start = time.perf_counter()
        with torch.no_grad():
            for tensors in batches:
                fields = {k: v.to(device) for k, v in tensors["tokens"]["tokens"].items()}
                embedder(**fields)
        synchronize(device)
        timings["fasttext_lookup"] = time.perf_counter() - start
    total = sum(timings.values())
    result = {"tokens": tokens, "fasttext_model": str(FASTTEXT_FIXTURE.relative_to(PROJECT)),
              "fasttext_dim": embedder.get_output_dim(),
              "seconds": timings, "tokens_per_s": {k: tokens / v for k, v in timings.items()},
              "pipeline_tokens_per_s": tokens / total}  # fmt: skip
    if training is None:
        log("data_pipeline: timing an ELMo-C demo training step to compare with")
        size, batch_size, steps, warmup = profile.end_to_end[0]
        generator = torch.Generator().manual_seed(0)
        words = sample_words(batch_size, TIMESTEPS, generator)
        model = elmo_c_model(size, profile.fasttext_rows).to(device)
        step = model_step(model, adam(model),
                          elmo_c_batch(words, profile.fasttext_rows, device, generator))
        seconds, _ = time_in_turn({"step": step}, steps, warmup, device)
        training = {"size": size, "tokens_per_s": batch_size * TIMESTEPS / seconds["step"]}
    per_token = 1 / result["pipeline_tokens_per_s"]
    training_per_token = 1 / training["tokens_per_s"]
    result["training_step"] = {"size": training["size"], "tokens_per_s": training["tokens_per_s"]}
    result["share_of_step"] = per_token / (per_token + training_per_token)
    return result


# ----------------------------------------------------------------------------- reports


def relative(path: str) -> str:
    """`path` relative to the project if it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT))
    except ValueError:
        return path


def fmt_int(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def fmt_words(value: int) -> str:
    return f"{value // 1000:,}K" if value >= 1000 else str(value)


def markdown(results: dict) -> str:
    machine = results["machine"]
    lines = [BEGIN, "", f"## All claims in one run: `benchmarks/run.py --{results['profile']['name']}`",
             "", f"{machine['date']}, {machine['device']}; CPU {machine['cpu']}, "
             f"{machine['cpu_cores']} cores, torch {machine['torch']} "
             f"({machine['torch_threads']} threads)"
             + (f", GPU {machine['gpu']} ({machine['gpu_memory_gib']} GiB, CUDA {machine['cuda']})"
                if "gpu" in machine else "")
             + f". Command: `{results['command']}`. Raw numbers: `{results['out']}`.", ""]  # fmt: skip
    sections = results["sections"]
    if "end_to_end" in sections:
        lines += ["### 1. End to end: ELMo-C vs allennlp-models' `language_model`", "",
                  "Whole training steps (forward, backward, optimizer step) on the same batch of "
                  f"windows of {TIMESTEPS} tokens. ELMo-C: `elmo_c` with a synthetic fastText "
                  "(random frozen matrix in cc.en.300's shape, realistic subword counts; the "
                  "table is left out of the memory column and given apart), `elmo_lstm`, "
                  "continuous head, `fused_adam` (the pretraining configs'). Peer: `language_model` (bidirectional, `num_samples` "
                  "8192, sparse softmax embeddings, `dense_sparse_adam`) over ELMo's character "
                  "CNN. Peak memory: above the memory before the row was built (weights, "
                  "gradients, optimizer state, activations; on CPU the resident set, sampled).",
                  "", "| LSTM | model | threads | batch | tok/s | ELMo-C / this | peak memory GiB | "
                  "ELMo-C memory / this | trainable params |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in sections["end_to_end"]:
            lstm = r["lstm"]
            note = (f" (+ {r['frozen_fasttext_gib']:.2f} GiB frozen fastText table)"
                    if r["model"] == "ELMo-C" else f" ({fmt_words(r['softmax_words'])} words)")
            lines.append(f"| {r['size']} ({lstm['cell']}/{lstm['projection']}) | {r['model']}"
                         f"{note} | {r.get('threads') or '-'} | {r['batch']} | {r['tokens_per_s']:,.0f} | "
                         f"{r['elmo_c_speedup']:.2f}x | {r['peak_memory_gib']:.2f} | "
                         f"{r['elmo_c_memory_ratio']:.2f}x | {r['trainable_parameters']:,} |")  # fmt: skip
        lines.append("")
        profiled = [r for r in sections["end_to_end"] if r.get("top_operators")]
        if profiled:
            lines += ["Where a step's time goes (`torch.profiler`, one step, operators' self "
                      "time as a share of the step's; " +
                      ("GPU time)" if "gpu" in machine else "CPU time)") + ":", ""]  # fmt: skip
            for r in profiled:
                ops = ", ".join(f"`{op['operator']}` {100 * op['share']:.0f}%"
                                for op in r["top_operators"])  # fmt: skip
                lines.append(f"- {r['size']}, {r['model']}: {ops}")
            lines.append("")
    if "output_layers" in sections:
        rows = sections["output_layers"]
        lines += ["### 2. Output layers (paper Table 4)", "",
                  f"Each head alone over random encoder outputs (d {rows[0]['dim']}, windows "
                  f"of {HEAD_TIMESTEPS}, Zipfian target ids): forward, backward and an Adam "
                  "step. Time per 1M tokens at batch 1 and at the largest batch (doubling) whose "
                  f"peak memory stays within {results['memory_budget_gib']:.1f} GiB (predicted "
                  "linear in the batch before each probe, then measured); ratio to the continuous "
                  "head at the same V, at batch 1 and at its own largest batch. Every head is "
                  "trained densely (Adam over all its parameters each step).", "",
                  "| V | head | trainable params | s / 1M tok, batch 1 | vs continuous | "
                  "largest batch | s / 1M tok there | vs continuous | peak GiB there |",
                  "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in rows:
            if not r.get("fits"):
                lines.append(f"| {fmt_words(r['vocab_size'])} | {r['head']} | "
                             f"{fmt_int(r.get('trainable_parameters'))} | does not fit | | | | | |")  # fmt: skip
                continue
            b1, big = r["batch1"], r["largest"]
            ratio = lambda x: "-" if x is None else f"{x:.1f}x"  # noqa: E731
            cap = " (cap)" if r.get("largest_is_cap") else ""
            lines.append(f"| {fmt_words(r['vocab_size'])} | {r['head']} | "
                         f"{r['trainable_parameters']:,} | {b1['seconds_per_million_tokens']:.2f} | "
                         f"{ratio(b1.get('vs_continuous'))} | {big['batch']}{cap} | "
                         f"{big['seconds_per_million_tokens']:.2f} | "
                         f"{ratio(big.get('vs_continuous'))} | {big['peak_memory_gib']:.2f} |")  # fmt: skip
        growth = continuous_growth(rows)
        if growth:
            lines += ["", f"Continuous head, time at {growth['to']} / {growth['from']}: "
                      f"{growth['batch1']:.2f}x at batch 1, {growth['largest']:.2f}x at the "
                      "largest batch."]  # fmt: skip
        lines += ["", "![time per 1M tokens vs vocabulary size](output_layer_scaling.png)", ""]
    if "encoders" in sections:
        rows = sections["encoders"]
        lines += ["### 3. Encoders (paper Table 5)", "",
                  f"Encoder + one head per direction at V = {fmt_words(rows[0]['vocab_size'])}, "
                  f"random inputs (no input layer), batch {rows[0]['batch']} x {TIMESTEPS}, Adam. "
                  "The LSTMs of 1 and 2 layers are `elmo_lstm`'s plain variant (LayerNorm "
                  "outside the recurrence, no clipping); the ELMo encoder is `elmo_lstm` as "
                  "configured for training; the Transformer is two `torch.nn.TransformerEncoder` "
                  "stacks, one per direction, each under a causal mask.", "",
                  "| encoder | encoder params | head | tok/s | continuous / adaptive | peak GiB |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        speeds = {(r["encoder"], r["head"]): r["tokens_per_s"] for r in rows}
        for r in rows:
            pair = speeds[(r["encoder"], HEAD_LABELS["continuous"])] / \
                speeds[(r["encoder"], HEAD_LABELS["adaptive_softmax"])]
            pair = f"{pair:.2f}x" if r["head"] == HEAD_LABELS["continuous"] else ""
            lines.append(f"| {r['encoder']} | {r['encoder_parameters']:,} | {r['head']} | "
                         f"{r['tokens_per_s']:,.0f} | {pair} | {r['peak_memory_gib']:.2f} |")  # fmt: skip
        lines.append("")
    if "data_pipeline" in sections:
        p = sections["data_pipeline"]
        speeds = p["tokens_per_s"]
        lines += ["### 4. Data pipeline", "",
                  f"`lm_corpus` reading, `fasttext_subwords` indexing + batching (64 windows) and "
                  f"the `fasttext` lookup of {p['tokens']:,} tokens of the fixture corpus with "
                  f"`{p['fasttext_model']}` ({p['fasttext_dim']}-d), single process.", "",
                  "| stage | tok/s |", "|---|---|"]  # fmt: skip
        for stage, speed in speeds.items():
            lines.append(f"| {stage} | {speed:,.0f} |")
        lines += [f"| all | {p['pipeline_tokens_per_s']:,.0f} |", "",
                  f"Against an ELMo-C {p['training_step']['size']} training step "
                  f"({p['training_step']['tokens_per_s']:,.0f} tok/s) the pipeline is "
                  f"{100 * p['share_of_step']:.1f}% of the time per token (done in the same "
                  "process, without data-loader workers).", ""]  # fmt: skip
    lines.append(END)
    return "\n".join(lines) + "\n"


def continuous_growth(rows: List[dict]) -> Optional[dict]:
    continuous = sorted((r for r in rows if r["type"] == "continuous" and r.get("fits")),
                        key=lambda r: r["vocab_size"])  # fmt: skip
    if len(continuous) < 2:
        return None
    low, high = continuous[0], continuous[-1]
    return {"from": fmt_words(low["vocab_size"]), "to": fmt_words(high["vocab_size"]),
            **{key: high[key]["seconds_per_million_tokens"] / low[key]["seconds_per_million_tokens"]
               for key in ("batch1", "largest")}}  # fmt: skip


def write_markdown(path: Path, section: str) -> None:
    text = path.read_text() if path.is_file() else "# Benchmark results\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section.rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def plot(rows: List[dict], path: Path, machine: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for axis, key, title in ((axes[0], "batch1", "batch 1 (20 tokens)"),
                             (axes[1], "largest", "largest batch within the memory budget (bN: batch)")):  # fmt: skip
        for kind in HEADS:
            points = sorted((r["vocab_size"], r[key]["seconds_per_million_tokens"])
                            for r in rows if r["type"] == kind and r.get("fits"))  # fmt: skip
            if points:
                line, = axis.plot(*zip(*points), marker="o", label=HEAD_LABELS[kind])
            if points and key == "largest":
                for r in rows:
                    if r["type"] == kind and r.get("fits"):
                        axis.annotate(f"b{r[key]['batch']}", (r["vocab_size"],
                                      r[key]["seconds_per_million_tokens"]), fontsize=7,
                                      color=line.get_color(), xytext=(4, -8),
                                      textcoords="offset points")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("vocabulary size")
        axis.set_ylabel("seconds per 1M tokens")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(f"Output layer training cost, {machine['device']}, torch {machine['torch']}",
                    fontsize=10)  # fmt: skip
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def summary(results: dict) -> List[str]:
    lines = ["", "Summary:"]
    sections = results["sections"]
    for r in sections.get("end_to_end", []):
        lines.append(f"  end_to_end {r['size']:6s} {r['model']:46s} {r['tokens_per_s']:10,.0f} tok/s  "
                     f"ELMo-C/this {r['elmo_c_speedup']:5.2f}x  peak {r['peak_memory_gib']:6.2f} GiB")  # fmt: skip
    for r in sections.get("output_layers", []):
        if r.get("fits"):
            lines.append(f"  output_layers V {fmt_words(r['vocab_size']):>6s} {r['head']:20s} "
                         f"{r['batch1']['seconds_per_million_tokens']:9.2f} s/1M tok (batch 1) "
                         f"{r['largest']['seconds_per_million_tokens']:9.2f} (batch {r['largest']['batch']})")  # fmt: skip
        else:
            lines.append(f"  output_layers V {fmt_words(r['vocab_size']):>6s} {r['head']:20s} does not fit")
    for r in sections.get("encoders", []):
        lines.append(f"  encoders {r['encoder'][:44]:44s} {r['head']:20s} {r['tokens_per_s']:10,.0f} tok/s")
    if "data_pipeline" in sections:
        p = sections["data_pipeline"]
        lines.append(f"  data_pipeline {p['pipeline_tokens_per_s']:,.0f} tok/s, "
                     f"{100 * p['share_of_step']:.1f}% of an ELMo-C step")  # fmt: skip
    return lines


def main(argv: Optional[List[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="profile", const="quick")
    mode.add_argument("--full", action="store_const", dest="profile", const="full")
    mode.add_argument("--smoke", action="store_const", dest="profile", const="smoke",
                      help="tiny sizes, one step: checks the plumbing, measures nothing")
    parser.add_argument("--device", choices=["cpu", "cuda"],
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="CPU threads (CPU only); end_to_end runs each count given, the other "
                        "sections the first")  # fmt: skip
    parser.add_argument("--e2e-allennlp-peer-only", action="store_true",
                        help="end_to_end: leave out the peer over our elmo_lstm where the peer over "
                        "AllenNLP's ElmoLstm runs (memory)")  # fmt: skip
    parser.add_argument("--e2e-batches", type=int, nargs="+", default=None,
                        help="end_to_end: these batch sizes for each size, instead of the profile's")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--memory-budget-gb", type=float, default=None,
                        help="for the output layers' largest batch (default: 6 on CPU, "
                             "70%% of the GPU's memory)")  # fmt: skip
    parser.add_argument("--e2e-sizes", nargs="+", choices=sorted(ENCODER_SIZES), default=None,
                        help="end_to_end: only these LSTM sizes (default: the profile's)")
    parser.add_argument("--e2e-steps", type=int, default=None,
                        help="end_to_end: timed steps per row (default: the profile's)")
    parser.add_argument("--profile-ops", type=int, default=6,
                        help="end_to_end: profile one more step of each row and keep its N "
                             "costliest operators (0: no profiling)")  # fmt: skip
    parser.add_argument("--out", default=str(PROJECT / "benchmarks" / "results.json"))
    parser.add_argument("--markdown", default=str(PROJECT / "benchmarks" / "RESULTS.md"))
    parser.add_argument("--plot", default=str(PROJECT / "benchmarks" / "output_layer_scaling.png"))
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    threads = args.threads[0] if args.threads else torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(threads)
    profile = profile_for(args.profile or "quick", device)
    profile.allennlp_peer_only = args.e2e_allennlp_peer_only
    profile.end_to_end = [
        (size, batch, args.e2e_steps or steps, warmup)
        for size, default_batch, steps, warmup in profile.end_to_end
        for batch in (args.e2e_batches or [default_batch])
        if args.e2e_sizes is None or size in args.e2e_sizes
    ]
    if args.memory_budget_gb is not None:
        budget = int(args.memory_budget_gb * 2**30)
    elif device.type == "cuda":
        budget = int(0.7 * torch.cuda.get_device_properties(device).total_memory)
    else:
        budget = 6 * 2**30
    torch.manual_seed(0)
    # The modules' objects live to the end: out of the collector's way, each memory mark's
    # `gc.collect()` then scans only what the benchmark made (seconds less per mark).
    gc.collect()
    gc.freeze()
    meter = PeakMemory(device)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True)

    command = "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results = {"command": command.strip(), "out": relative(args.out), "profile": asdict(profile),
               "machine": machine_description(device, threads),
               "memory_budget_gib": budget / 2**30, "sections": {}}  # fmt: skip
    sections = results["sections"]
    log(f"{results['machine']['device']}, profile {profile.name}, sections {args.sections}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)

    def finished(name: str) -> None:
        # Each section's numbers are printed and saved as soon as it ends: a run stopped later
        # (a time limit, a crash in another section) keeps them. "complete" says whether all ran.
        print("\n".join(summary({"sections": {name: sections[name]}})[1:]), flush=True)
        results["seconds"] = time.perf_counter() - started
        Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")

    results["complete"] = False
    if "end_to_end" in args.sections:
        sections["end_to_end"] = end_to_end(profile, device, meter, log, args.profile_ops,
                                            args.threads or ())  # fmt: skip
        finished("end_to_end")
    if "output_layers" in args.sections:
        sections["output_layers"] = output_layers(profile, device, meter, budget, log)
        finished("output_layers")
    if "encoders" in args.sections:
        sections["encoders"] = encoders(profile, device, meter, log)
        finished("encoders")
    if "data_pipeline" in args.sections:
        elmo_c_rows = [r for r in sections.get("end_to_end", []) if r["model"] == "ELMo-C"]
        sections["data_pipeline"] = data_pipeline(profile, device,
                                                  elmo_c_rows[0] if elmo_c_rows else None,
                                                  meter, log)  # fmt: skip
        finished("data_pipeline")
    results["complete"] = True
    results["seconds"] = time.perf_counter() - started
    Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")
    write_markdown(Path(args.markdown), markdown(results))
    if "output_layers" in sections:
        plot(sections["output_layers"], Path(args.plot), results["machine"])
    gc.unfreeze()  # collected normally at exit (extension types complain otherwise)
    print("\n".join(summary(results)))
    log(f"wrote {args.out}, {args.markdown}" + (f", {args.plot}" if "output_layers" in sections else ""))
    return results


if __name__ == "__main__":
    main()
