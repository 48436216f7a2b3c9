"""
What the sections of `run.py` build and measure: the profiles (`--smoke`, `--quick`, `--full`:
sizes, batches, step counts), the synthetic inputs (a random frozen fastText table in a real
`.bin`'s shape, fixture words, Zipfian ids), ELMo-C and its peer (allennlp-models'
`language_model` over ELMo's character CNN), their optimizers, and `measured`, which builds a row
and measures its peak memory.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch

from experiments.speed.encoder_backends import SIZES
from experiments.common.timing import PeakMemory, trainable_parameters

from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.modules.token_embedders import TokenEmbedder

import allennlp_elmo_c  # noqa: F401  (registers elmo_c, elmo_lstm, the heads)
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT / "tests" / "fixtures"
FASTTEXT_FIXTURE = FIXTURES / "fasttext" / "tiny.bin"
TEXT_FIXTURE = FIXTURES / "data" / "lm" / "sentences.txt"
ENCODER_SIZES = {**SIZES, "smoke": (16, 64, 64, 2)}  # (input, projection, cell, layers)
TIMESTEPS = 21  # a window of 20 tokens plus the shared boundary token, as `lm_corpus` makes
HEAD_TIMESTEPS = 20
# ELMo's character CNN (Peters et al. 2018; allennlp-models' bidirectional LM config).
ELMO_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
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
    # The indexer's layout: each sentence's tokens' ids one after the other, each token's first
    # id its word row.
    half = max(1, rows // 2)
    ids = torch.randint(half, rows, (counts.size(0), int(counts.sum(1).max())), generator=generator)
    starts = torch.cumsum(counts, 1) - counts
    ids.scatter_(1, starts, torch.randint(0, half, counts.shape, generator=generator))
    # The token mask first: AllenNLP's `get_text_field_mask` takes the first 2-d tensor.
    tensors = {"token_mask": torch.ones(counts.shape, dtype=torch.bool), "subword_ids": ids,
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


def elmo_c_model(size: str, rows: int, loss: str = "cosine",
                 table: Optional[torch.Tensor] = None, precision: str = "float32") -> Model:  # fmt: skip
    """`elmo_c` as `training_config/elmo_c.jsonnet` builds it, over a synthetic fastText, with
    `loss` as its `continuous` head's loss and `precision` as its `model.precision` ("float32" or
    "bfloat16"). `table`, a `(rows, input size)` matrix, is the frozen fastText matrix to use
    (several models can share one; by default each makes its own on first use)."""
    input_size = ENCODER_SIZES[size][0]
    params = {
        "type": "elmo_c",
        "text_field_embedder": {"token_embedders": {"tokens": {
            "type": "synthetic_fasttext", "embedding_dim": input_size, "rows": rows}}},
        "contextualizer": lstm_params(size),
        "output_head": {"type": "continuous", "loss": loss},
        "dropout": 0.0,
        "precision": precision,
    }  # fmt: skip
    model = Model.from_params(vocab=Vocabulary(), params=Params(params))
    if table is not None:
        model._text_field_embedder.token_embedder_tokens._fasttext.table = table
    return model


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


def model_step(model: torch.nn.Module, optimizer, batch, tf32: bool = False) -> Callable[[], None]:
    """One training step of `model` on `batch`; with `tf32`, its float32 matrix products on a GPU
    may use TF32 (the setting is restored after each step)."""
    model.train()

    def step() -> None:
        before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        try:
            optimizer.zero_grad(set_to_none=True)
            model(**batch)["loss"].backward()
            optimizer.step()
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before

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
