"""
Helpers shared by several test modules (plain functions and constants; pytest fixtures live in
the conftest.py files and call these). Test modules import from here, never from conftest.py or
from one another.
"""

import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import h5py
import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import Embedding
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.nn.products import bfloat16_unsupported
from tests import FIXTURES_ROOT, PROJECT_ROOT

# Training in bfloat16 is refused where the CPU has no fast bfloat16 products (no AVX-512: AMD
# Zen 1-3, Intel client CPUs); tests that train or time in it skip there with the refusal's reason.
NO_FAST_BFLOAT16 = bfloat16_unsupported(torch.device("cpu"))
needs_fast_bfloat16 = pytest.mark.skipif(
    NO_FAST_BFLOAT16 is not None, reason=f"bfloat16 training is refused here: {NO_FAST_BFLOAT16}"
)

LM_DATA = FIXTURES_ROOT / "data" / "lm"
SENTENCES = LM_DATA / "sentences.txt"  # the fixture LM corpus
TINY_FASTTEXT = FIXTURES_ROOT / "fasttext" / "tiny.bin"
TINY_FASTTEXT_DIM = 16  # its vectors' size
TINY_ELMO_C_DIM = 16  # output size of the fixture biLM (configs/elmo_c.jsonnet): 2 x projection 8


# --- archives and wheels -------------------------------------------------------------------------


def make_wheel(path: Path, members: dict) -> Path:
    """Writes a zip archive (a wheel is one) with the given {name: bytes} members."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def zipped(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


# --- training small models -----------------------------------------------------------------------


def write_varied_corpus(path: Path) -> Path:
    """~30k tokens of random sentences over a 600-word vocabulary: varied enough for fastText
    (a tiny, repetitive corpus makes fastText's training diverge)."""
    rng = random.Random(0)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "xe", "zu", "pa", "de"]
    vocabulary = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(600)]
    lines = [" ".join(rng.choices(vocabulary, k=rng.randint(5, 25))) for _ in range(2000)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- text in other languages -------------------------------------------------------------------

# German and Russian sentences built from these parts: varied enough for fastText, every word seen
# often enough for its own row (min_count 5).
LANGUAGE_PARTS = {
    "de": (
        ["Die Bäckerin", "Der Müller", "Unsere Großmutter", "Ein Straßenbahnfahrer",
         "Die Schülerin", "Der Bürgermeister", "Frau Öztürk", "Mein Nachbar"],
        ["kauft", "repariert", "verkauft", "bemalt", "sucht", "öffnet", "vergisst", "trägt"],
        ["das Fahrrad", "die Brötchen", "einen Blumenstrauß", "die Tür", "den Schlüssel",
         "das Frühstück", "die Käsetüte", "den Fußball"],
        ["an der Straßenbahnhaltestelle", "im Rathaus", "auf dem Marktplatz", "in München",
         "neben der Kirche", "vor dem Gebäude", "hinter der Brücke", "in Köln"],
    ),
    "ru": (
        ["Моя бабушка", "Наш сосед", "Учительница", "Водитель трамвая", "Старый мельник",
         "Ёжик", "Мэр города", "Художница"],
        ["покупает", "чинит", "продаёт", "рисует", "ищет", "открывает", "забывает", "несёт"],
        ["велосипед", "свежий хлеб", "букет цветов", "дверь", "ключ", "завтрак", "мяч",
         "тёплый шарф"],
        ["на остановке", "в ратуше", "на площади", "в Москве", "возле церкви", "перед зданием",
         "за мостом", "в Петербурге"],
    ),
}
ENDINGS = [".", "!", "?"]


def write_language_documents(
    directory: Path, language: str, documents: int = 60, sentences: int = 6, seed: int = 0
) -> set:
    """`documents` .txt files of `sentences` sentences each, hard-wrapped like prose; returns the
    distinct sentences written."""
    rng = random.Random(f"{language}{seed}")
    subjects, verbs, objects, places = LANGUAGE_PARTS[language]
    directory.mkdir()
    written = set()
    for index in range(documents):
        text = []
        for _ in range(sentences):
            sentence = " ".join(rng.choice(part) for part in (subjects, verbs, objects, places))
            sentence += rng.choice(ENDINGS)
            written.add(sentence)
            text.append(sentence)
        # Two sentences per line: sentence splitting, not line breaks, makes the sentences.
        lines = [" ".join(text[i:i + 2]) for i in range(0, len(text), 2)]
        (directory / f"doc{index:03d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def train_small_fasttext(directory: Path, dim: int, bucket: int) -> Path:
    """A `dim`-d fastText .bin (one epoch, `bucket` n-gram buckets) trained on a varied corpus
    written into `directory`; returns its path."""
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext

    corpus = write_varied_corpus(directory / "corpus.txt")
    return train_fasttext(corpus, directory / f"{dim}d.bin", dim=dim, bucket=bucket, epoch=1,
                          min_count=1, threads=1, verbose=0)  # fmt: skip


def train_config(config: Path, serialization_dir: Path, overrides: str = "") -> dict:
    """`allennlp train` in-process; returns metrics.json."""
    from allennlp.commands.train import train_model_from_file

    train_model_from_file(str(config), str(serialization_dir), overrides=overrides)
    return json.loads((serialization_dir / "metrics.json").read_text())


def train_tiny_elmo_c(directory: Path, backend: str = "fused") -> Path:
    """Trains the fixture ELMo-C config for one epoch; returns its model.tar.gz."""
    overrides = {"trainer.num_epochs": 1, "model.contextualizer.backend": backend}
    with contextlib.chdir(PROJECT_ROOT):  # the fixture config's paths are relative to it
        train_config(
            FIXTURES_ROOT / "configs" / "elmo_c.jsonnet", directory / "run", json.dumps(overrides)
        )
    return directory / "run" / "model.tar.gz"


# What archives trained before #18 recorded: the fixture configs' path, relative to the repository.
RELATIVE_FASTTEXT = "tests/fixtures/fasttext/tiny.bin"


def moved_archive(archive: Path, directory: Path, relative: bool = False) -> Path:
    """A copy of `archive` in `directory`; with `relative`, its config records the fastText and
    candidate files relative to the repository, as archives trained before #18 did."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "model.tar.gz"
    if not relative:
        shutil.copy(archive, target)
        return target
    with tarfile.open(archive) as source, tarfile.open(target, "w:gz") as copy:
        for member in source:
            data = source.extractfile(member) if member.isfile() else None
            if member.name == "config.json":
                from allennlp_elmo_c.fasttext.fasttext_source import recorded_fasttext_paths

                config = json.load(data)  # type: ignore[arg-type]
                for key in recorded_fasttext_paths(config):
                    node = config
                    *parents, last = key.split(".")
                    for part in parents:
                        node = node[part]
                    node[last] = RELATIVE_FASTTEXT
                config["model"]["nearest_neighbour_words"] = "tests/fixtures/data/lm/candidates.txt"
                text = json.dumps(config).encode()
                member.size = len(text)
                data = io.BytesIO(text)
            copy.addfile(member, data)
    return target



def train_tiny_softmax(directory: Path) -> Path:
    """Trains the fixture biLM with a full softmax output layer (configs/elmo_softmax_tiny.jsonnet)
    for one epoch; returns its model.tar.gz."""
    with contextlib.chdir(PROJECT_ROOT):  # the fixture config's paths are relative to it
        train_config(
            FIXTURES_ROOT / "configs" / "elmo_softmax_tiny.jsonnet",
            directory / "run",
            json.dumps({"trainer.num_epochs": 1}),
        )
    return directory / "run" / "model.tar.gz"


def overfit(model, batch: dict, steps: int = 30, lr: float = 0.01):
    """Trains `model` on one batch with Adam; returns the loss before and after."""
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    first = model(**batch)["loss"].item()
    for _ in range(steps):
        optimizer.zero_grad()
        model(**batch)["loss"].backward()
        optimizer.step()
    return first, model(**batch)["loss"].item()


def set_downstream_environment(
    monkeypatch, archive: Path, baseline: str, **task_paths: str
) -> None:
    """The environment variables a downstream config reads: the task's data/GloVe paths plus
    the ELMo-C archive, the tiny fastText model, ELMO_C_BASELINE ("none" or "fasttext"),
    ELMO_C_DIM, the size of the fixture biLM (`TINY_ELMO_C_DIM`; a task path given as
    ELMO_C_DIM=... replaces it), and ELMO_C_FASTTEXT_DIM, the tiny fastText model's."""
    environment = {
        "ELMO_C_DIM": str(TINY_ELMO_C_DIM),
        "ELMO_C_FASTTEXT_DIM": str(TINY_FASTTEXT_DIM),
        **task_paths,
        "ELMO_C_ARCHIVE": str(archive),
        "ELMO_C_FASTTEXT": str(TINY_FASTTEXT),
        "ELMO_C_BASELINE": baseline,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)


# --- a task config trained at fixture size: what the training did to the model -----------------


@TrainerCallback.register("learning_record")
class LearningRecord(TrainerCallback):
    """
    Test-only: what a training run did to its model, written to `learning_record.json` in the
    serialization directory at the end: the model's parameters (`parameters`), those that require
    a gradient (`trainable`), those whose gradient was non-zero at some batch (`got_gradient`),
    those whose values changed by the end (`changed`), each training batch's loss by epoch
    (`losses`, with dropout), and the mean loss over the training data in evaluation mode before
    the first step (`loss_before`) and after each epoch (`epoch_losses`: the model as the epoch
    left it; AllenNLP puts the best epoch's weights back before `on_end`).
    """

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self.losses: Dict[int, List[float]] = {}
        self.got_gradient: set = set()
        self.initial = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
        self.batches = list(trainer.data_loader)
        self.loss_before = self._training_data_loss(trainer.model)
        self.epoch_losses: List[float] = []

    def _training_data_loss(self, model) -> float:
        training = model.training
        model.eval()
        with torch.no_grad():
            losses = [float(model(**batch)["loss"]) for batch in self.batches]
        model.get_metrics(reset=True)
        model.train(training)
        return float(np.mean(losses))

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        if not is_training:
            return
        self.losses.setdefault(epoch, []).extend(float(o["loss"].detach()) for o in batch_outputs)
        for name, parameter in trainer.model.named_parameters():
            if parameter.grad is not None and bool(parameter.grad.ne(0).any()):
                self.got_gradient.add(name)

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        if epoch >= 0:  # (-1: called before training, by a recovered run)
            self.epoch_losses.append(self._training_data_loss(trainer.model))

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        parameters = dict(trainer.model.named_parameters())
        record = {
            "parameters": sorted(parameters),
            "trainable": sorted(n for n, p in parameters.items() if p.requires_grad),
            "got_gradient": sorted(self.got_gradient),
            "changed": sorted(n for n, p in parameters.items()
                              if not torch.equal(p.detach().cpu(), self.initial[n].cpu())),  # fmt: skip
            "losses": [self.losses[e] for e in sorted(self.losses)],
            "loss_before": self.loss_before,
            "epoch_losses": self.epoch_losses,
        }
        path = os.path.join(self.serialization_dir, "learning_record.json")
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(record, stream)


def train_recorded(config: Path, serialization_dir: Path, overrides: Optional[dict] = None):
    """`train_config` with the `learning_record` callback after the config's own callbacks (the
    configuration as the environment's variables and `overrides` make it); returns (metrics.json,
    learning_record.json)."""
    from allennlp.common import Params

    overrides = dict(overrides or {})
    params = Params.from_file(str(config), json.dumps(overrides)).as_dict()
    callbacks = params["trainer"].get("callbacks", [])
    overrides["trainer.callbacks"] = callbacks + [{"type": "learning_record"}]
    metrics = train_config(config, serialization_dir, json.dumps(overrides))
    record = json.loads((serialization_dir / "learning_record.json").read_text())
    return metrics, record


# --- the demo config on fixture data (reliability tests) -----------------------------------------

DEMO_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_demo.jsonnet"
KILL_ENV = "ELMO_C_TEST_SIGKILL_AT_BATCH"


# Registered on import: a training subprocess gets it with `--include-package <test module>`.
@TrainerCallback.register("sigkill_at_batch")
class SigkillAtBatch(TrainerCallback):
    """Kills its own process (SIGKILL) after training batch `$ELMO_C_TEST_SIGKILL_AT_BATCH` of
    the first epoch, before that batch is checkpointed; does nothing without the variable."""

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        target = os.environ.get(KILL_ENV)
        if target and is_training and epoch == 0 and batch_number == int(target):
            os.kill(os.getpid(), signal.SIGKILL)


# Overrides for training_config/elmo_c_demo.jsonnet on `make_demo_data_dir`'s data: the fixture
# fastText model is 16-d (the demo's is 100-d); the corpus makes 15 windows of 21 tokens, so
# 2 windows a batch give 8 batches an epoch.
DEMO_AT_FIXTURE_SIZE = {
    "model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
    "model.contextualizer.input_size": 16,
    "data_loader.batch_size": 2,
}


def make_demo_data_dir(root: Path) -> Path:
    """The layout `training_config/elmo_c_demo.jsonnet` reads from ELMO_C_DATA_DIR (`make demo`
    builds the real one), filled with the fixture corpus and the 16-d fixture fastText model:
    override the config's `expected_dim` and `input_size` to 16."""
    (root / "news").mkdir(parents=True)
    (root / "fasttext").mkdir()
    (root / "news" / "train.txt").write_bytes(SENTENCES.read_bytes())
    (root / "news" / "dev.txt").write_bytes((LM_DATA / "dev.txt").read_bytes())
    (root / "fasttext" / "news.100d.bin").symlink_to(TINY_FASTTEXT)
    (root / "fasttext" / "frequent_words.txt").symlink_to(LM_DATA / "candidates.txt")
    return root


# --- the paper-size configs ----------------------------------------------------------------------

# Per direction: input projection (300 x 512 + bias 512) + LayerNorm, then 2 layers of
# W_x (4*4096 x 512), W_h (4*4096 x 512), one gate bias (4*4096), P (512 x 4096), LayerNorm (2*512);
# plus one Linear(512 -> 300) head per direction.
_D, _P, _C = 300, 512, 4096
EXPECTED_PARAMETERS = 2 * (
    (_D * _P + 3 * _P) + 2 * (2 * 4 * _C * _P + 4 * _C + _P * _C + 2 * _P) + (_P * _D + _D)
)
# elmo_c.jsonnet's encoder (input projection, 2 x 2 LSTM layers) without its two continuous heads.
ENCODER_PARAMETERS = EXPECTED_PARAMETERS - 2 * (512 * 300 + 300)
PAPER_VOCABULARY = 800_000  # words; the namespace adds @@PADDING@@ and @@UNKNOWN@@

# The paper configs at a tiny size (16-d fixture fastText, tiny LSTM), for one epoch on CPU.
TINY_SIZES = {
    "model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
    "model.contextualizer.input_size": 16,
    "model.contextualizer.projection_size": 8,
    "model.contextualizer.cell_size": 12,
    "vocabulary.min_count.lm_targets": 1,
    "data_loader.batch_size": 8,
    "data_loader.num_workers": 0,
    "data_loader.max_instances_in_memory": 32,
    "validation_data_loader.batch_size": 8,
    "trainer.num_epochs": 1,
    "trainer.cuda_device": -1,
}


def skip_orthogonal_init(monkeypatch) -> None:
    """Builds paper-size LSTM layers quickly: `ProjectedLstmLayer.reset_parameters` runs as it is,
    with a normal init in place of `block_orthogonal` (a QR per 4096 x 512 block, ~30 s for the
    paper's 32 blocks on a 2-core CPU). Shapes and the other initialisations are unchanged."""
    from allennlp_elmo_c.modules.seq2seq_encoders import projected_lstm_layer

    def normal_init(tensor: torch.Tensor, split_sizes, gain: float = 1.0) -> None:
        torch.nn.init.normal_(tensor, std=0.02)

    monkeypatch.setattr(projected_lstm_layer, "block_orthogonal", normal_init)


def without_output_layer(config: dict) -> dict:
    """A pretraining config with its output layer (head, targets, vocabulary) removed."""
    config["dataset_reader"]["token_indexers"].pop("targets", None)
    for key in ("vocabulary", "datasets_for_vocab_creation"):
        config.pop(key, None)
    for key in ("output_head", "share_output_head", "target_ids_key", "nearest_neighbour_words"):
        config["model"].pop(key, None)
    return config


def trainable(model: Model) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# --- ELMo-Sub: a BPE vocabulary on the fixture corpus, a tiny ELMo-Sub archive trained with it ---

TINY_ELMO_SUB_CONFIG = FIXTURES_ROOT / "configs" / "elmo_sub_tiny.jsonnet"


def train_tiny_bpe(directory: Path, vocab_size: int = 200) -> Path:
    """A BPE of ~`vocab_size` subwords on the fixture sentences; returns its directory."""
    from allennlp_elmo_c.commands.train_bpe import train_bpe

    return train_bpe(
        SENTENCES, directory, vocab_size=vocab_size, min_frequency=1, show_progress=False
    )


def bpe_environment(bpe_directory: Path) -> Dict[str, str]:
    """The variables the ELMo-Sub configs read."""
    return {
        "ELMO_C_BPE": str(bpe_directory / "tokenizer.json"),
        "ELMO_C_VOCABULARY": str(bpe_directory / "vocabulary"),
    }


def train_tiny_elmo_sub(directory: Path, bpe_directory: Path) -> Path:
    """Trains the tiny ELMo-Sub config for one epoch; returns its model.tar.gz."""
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    params = Params.from_file(
        str(TINY_ELMO_SUB_CONFIG),
        '{"trainer.num_epochs": 1}',
        ext_vars=bpe_environment(bpe_directory),
    )
    with contextlib.chdir(PROJECT_ROOT):  # the config's data paths are relative to it
        train_model(params, str(directory / "run"))
    return directory / "run" / "model.tar.gz"


# --- output heads --------------------------------------------------------------------------------

NAMESPACE = "lm_targets"
WORDS = ["the", ".", "of", "council", "storm", "weekend", "schools", "zzyzx"]
INPUT = 6


def vocabulary(words=WORDS, namespace=NAMESPACE) -> Vocabulary:
    """@@PADDING@@ = 0, @@UNKNOWN@@ = 1, then `words`."""
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(list(words), namespace)
    return vocab


def batch(num_words, input_dim=INPUT, lengths=(4, 2, 3), seed=0):
    """Hidden states, target ids (never padding, 0) and a mask with padded positions."""
    generator = torch.Generator().manual_seed(seed)
    timesteps = max(lengths)
    mask = torch.arange(timesteps).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    hidden = torch.randn(len(lengths), timesteps, input_dim, generator=generator)
    targets = torch.randint(1, num_words, (len(lengths), timesteps), generator=generator)
    return hidden, targets, mask



def reference_nll(logits: np.ndarray, targets: np.ndarray) -> float:
    """Summed negative log-likelihood from logits, with scipy."""
    log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
    return float(-log_probs[np.arange(len(targets)), targets].sum())


def embedder(dim=INPUT, num_embeddings=None, namespace=NAMESPACE):
    """An input embedder over `namespace` as a config builds it (or of `num_embeddings` rows)."""
    if num_embeddings is None:
        vocab = vocabulary(namespace=namespace)
        token_embedder = Embedding(dim, vocab_namespace=namespace, vocab=vocab)
    else:
        token_embedder = Embedding(dim, num_embeddings=num_embeddings)
    return BasicTextFieldEmbedder({"tokens": token_embedder})

# --- token embedders -----------------------------------------------------------------------------


def fasttext_ids(sentences: List[List[str]], model_path=TINY_FASTTEXT):
    """`sentences` indexed for an ELMo-C biLM over the fastText model at `model_path`."""
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
    from allennlp_elmo_c.modules.elmo_c import index_sentences

    return index_sentences(sentences, FastTextSubwordsIndexer(str(model_path)))


def write_elmo_files(
    directory: Path,
    filters: List[List[int]],
    n_highway: int,
    char_dim: int,
    output_dim: int,
    activation: str = "relu",
    random_weights: bool = True,
) -> Tuple[str, str]:
    """
    An ELMo options `.json` + weights `.hdf5` pair in the layout of the released models (bilm-tf's
    variable names and TensorFlow shapes). With `random_weights=False` the datasets are created
    without data (all zeros, nothing written): enough to build a model of that size.
    """
    directory.mkdir(parents=True, exist_ok=True)
    options = {
        "lstm": {"projection_dim": output_dim, "dim": 4 * output_dim, "n_layers": 2},
        "char_cnn": {
            "activation": activation,
            "embedding": {"dim": char_dim},
            "filters": filters,
            "max_characters_per_token": 50,
            "n_characters": 262,
            "n_highway": n_highway,
        },
    }
    options_file = directory / "options.json"
    options_file.write_text(json.dumps(options))
    num_filters = sum(number for _, number in filters)
    shapes = {"char_embed": (261, char_dim), "CNN_proj/W_proj": (num_filters, output_dim)}
    shapes["CNN_proj/b_proj"] = (output_dim,)
    for i, (width, number) in enumerate(filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, width, char_dim, number)
        shapes[f"CNN/b_cnn_{i}"] = (number,)
    for k in range(n_highway):
        for part in ("transform", "carry"):
            shapes[f"CNN_high_{k}/W_{part}"] = (num_filters, num_filters)
            shapes[f"CNN_high_{k}/b_{part}"] = (num_filters,)
    rng = np.random.default_rng(0)
    weight_file = directory / "weights.hdf5"
    with h5py.File(weight_file, "w") as weights:
        for name, shape in shapes.items():
            if random_weights:
                scale = (
                    1.0
                    if name == "char_embed"
                    else 1.0 / np.sqrt(shape[-2] if len(shape) > 1 else 4)
                )
                weights[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
            else:
                weights.create_dataset(name, shape=shape, dtype=np.float32)
    return str(options_file), str(weight_file)


# --- a model directory, used only after its run and fastText file are gone ----------------------

MODEL_SENTENCES = [["The", "council", "met", "on", "Friday", "."], ["Storms", "closed", "schools"],
                   ["Café", "😀", "naïve"]]  # fmt: skip


def embedder_vectors(model: str, sentences=MODEL_SENTENCES) -> torch.Tensor:
    """`sentences` through `elmo_c_token_embedder` over `model` (its equal-weight mix, no
    dropout), `(batch, words, dim)`."""
    from allennlp.common import Params
    from allennlp.modules.token_embedders import TokenEmbedder

    from allennlp_elmo_c.modules.elmo_c import index_sentences

    embedder = TokenEmbedder.from_params(Params(
        {"type": "elmo_c_token_embedder", "archive_file": model, "dropout": 0.0}
    )).eval()  # fmt: skip
    with torch.no_grad():
        return embedder(**index_sentences(sentences, embedder.representations.word_indexer()))


def make_model_directory(root: Path) -> Tuple[Path, torch.Tensor]:
    """
    A tiny ELMo-C run on a copy of the fixture fastText model, packaged; then the run and the
    copy are deleted and the directory is moved to a new path. Returns the directory and the
    run's archive's `embedder_vectors` (computed before the deletion).
    """
    from allennlp_elmo_c.commands.package import package_model

    fasttext = root / "data" / "vectors.bin"
    fasttext.parent.mkdir(parents=True)
    shutil.copy(FIXTURES_ROOT / "fasttext" / "tiny.bin", fasttext)
    overrides = {
        "trainer.num_epochs": 1,
        "dataset_reader.token_indexers.tokens.model_path": str(fasttext),
        "model.text_field_embedder.token_embedders.tokens.model_path": str(fasttext),
    }
    with contextlib.chdir(PROJECT_ROOT):
        train_config(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet", root / "run", json.dumps(overrides))
    reference = embedder_vectors(str(root / "run" / "model.tar.gz"))
    packaged = package_model(str(root / "run"), str(root / "packaged"))
    shutil.rmtree(root / "run")
    shutil.rmtree(root / "data")
    moved = root / "elsewhere" / "my-elmo-c"
    moved.parent.mkdir()
    shutil.copytree(packaged, moved)
    shutil.rmtree(packaged)
    return moved, reference


def without_elmo_c_variables(monkeypatch) -> None:
    """Unsets every ELMO_C_* environment variable for the test."""
    import os

    for name in list(os.environ):
        if name.startswith("ELMO_C_"):
            monkeypatch.delenv(name)


def user_environment(**extra: str) -> Dict[str, str]:
    """The environment of a user's shell for a subprocess running documented commands: no
    ELMO_C_* variable set, this environment's `python` and `allennlp` first on PATH, this
    checkout's package importable, one thread; then `extra`."""
    import sys

    environment = {
        name: value for name, value in os.environ.items() if not name.startswith("ELMO_C_")
    }
    environment.update(
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=str(PROJECT_ROOT),
        OMP_NUM_THREADS="1",
    )
    environment.update(extra)
    return environment


# No network for a subprocess: every HTTP(S) client it uses (urllib for NLTK, requests for Hugging
# Face) goes through a proxy on a closed local port.
NO_NETWORK = {name: "http://127.0.0.1:9" for name in
              ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")}  # fmt: skip


def offline_environment(home: Path) -> Dict[str, str]:
    """A user's shell (`user_environment`) on a machine without network, with an empty home."""
    home.mkdir(parents=True, exist_ok=True)
    return user_environment(HOME=str(home), NLTK_DATA=str(home / "nltk_data"), NO_PROXY="",
                            no_proxy="", **NO_NETWORK)  # fmt: skip


# --- the fenced code blocks of README.md and docs/ -----------------------------------------------

DOC_FILES = ["README.md"] + sorted(
    str(path.relative_to(PROJECT_ROOT)) for path in (PROJECT_ROOT / "docs").glob("*.md")
)
_FENCE = re.compile(r"^```([^`\s]*)\s*$")
_MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")


class DocBlock(NamedTuple):
    """One fenced block of a doc: its file (relative to the repository), the line of its opening
    fence, its marker (the `<!-- ... -->` comment on the line before, or None), its language and
    its text."""

    file: str
    line: int
    marker: Optional[str]
    language: str
    code: str


def doc_blocks(marker: Optional[str] = None, files: Optional[List[str]] = None) -> List[DocBlock]:
    """Every fenced block of README.md and docs/*.md (or `files`), in order; only those whose
    marker is `marker` if given."""
    blocks = []
    for name in files or DOC_FILES:
        lines = (PROJECT_ROOT / name).read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            opening = _FENCE.match(lines[index])
            if opening is None:
                index += 1
                continue
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            before = lines[index - 1].strip() if index > 0 else ""
            found = _MARKER.match(before)
            code = "\n".join(lines[index + 1 : end]) + "\n"
            blocks.append(DocBlock(name, index + 1, found.group(1) if found else None,
                                   opening.group(1), code))  # fmt: skip
            index = end + 1
    return [block for block in blocks if marker is None or block.marker == marker]


# --- received models: a sender's regenerated listing, and the front doors that load one --------


def regenerate_checksums(directory: Path) -> None:
    """`checksums.sha256` of every regular file under `directory` (links and the listing itself
    left out), as a sender who changed the directory regenerates it."""
    import hashlib

    lines = [
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(directory).as_posix()}"
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not path.is_symlink() and path.name != "checksums.sha256"
    ]
    (directory / "checksums.sha256").write_text("\n".join(lines) + "\n", encoding="utf-8")


def edit_directory_config(directory: Path, edit) -> None:
    """`edit` (a function changing a config in place) applied to the model directory's
    config.json, its listing regenerated (`regenerate_checksums`), as a sender would."""
    config = json.loads((directory / "config.json").read_text())
    edit(config)
    (directory / "config.json").write_text(json.dumps(config))
    regenerate_checksums(directory)


def contained_received_copy(model_directory: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the packaged biLM `model_directory` at `tmp_path/received`, as received: no
    ELMO_C_* variable set, AllenNLP's cache and every temporary directory within `tmp_path`."""
    import tempfile

    without_elmo_c_variables(monkeypatch)
    monkeypatch.setattr("allennlp.common.file_utils.CACHE_DIRECTORY", str(tmp_path / "cache"))
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    target = tmp_path / "received"
    shutil.copytree(model_directory, target)
    return target


def _predict(model: Path, scratch: Path) -> None:
    import sys

    from allennlp.commands import main

    inputs = scratch / "sentences.jsonl"
    inputs.write_text(json.dumps({"sentence": "the council met"}) + "\n", encoding="utf-8")
    argv = ["allennlp", "predict", str(model), str(inputs), "--predictor", "elmo_c_next_word",
            "--output-file", str(scratch / "predictions.jsonl"), "--silent",
            "--include-package", "allennlp_elmo_c"]  # fmt: skip
    old, sys.argv = sys.argv, argv
    try:
        main(prog="allennlp")
    finally:
        sys.argv = old


def _elmo_c_embed(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c.commands.elmo_c_embed import embed_file

    inputs = scratch / "sentences.txt"
    inputs.write_text("the council met\n", encoding="utf-8")
    embed_file(str(model), str(inputs), str(scratch / "out.hdf5"))


def _spacy(model: Path, scratch: Path) -> None:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(model), "device": "cpu"})
    nlp("The council met .")


def _auto(kind: str):
    def load(model: Path, scratch: Path) -> None:
        import transformers

        import allennlp_elmo_c.integrations.huggingface  # noqa: F401  (registers the Auto classes)

        getattr(transformers, kind).from_pretrained(str(model))

    return load


def _package(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c.commands.package import package_model

    package_model(str(model), str(scratch / "packaged"))


def _describe(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c.commands.describe import describe_archive

    describe_archive(str(model))


def _elmo_c(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c import ElmoC

    ElmoC(str(model), 1, dropout=0.0)


def _flair(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c.integrations.flair import ElmoCEmbeddings  # first: see _import_flair
    from flair.data import Sentence

    ElmoCEmbeddings(str(model)).embed(Sentence(["The", "council", "met"]))


def _from_archive(model: Path, scratch: Path) -> None:
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    PretrainedBiLM.from_archive(str(model))


def _load_archive(model: Path, scratch: Path) -> None:
    from allennlp.models import archival

    archival.load_archive(str(model))  # the plugin's patched one, as `allennlp evaluate` calls it


# Each loads a received model (a model directory or archive) `model`, writing what it writes
# (inputs, outputs) under `scratch`. Pick the doors a test needs by name.
RECEIVED_MODEL_DOORS = {
    "ElmoC": _elmo_c,
    "PretrainedBiLM.from_archive": _from_archive,
    "load_archive": _load_archive,
    "allennlp predict": _predict,
    "elmo-c-embed": _elmo_c_embed,
    "spaCy": _spacy,
    "Flair": _flair,
    "AutoModel": _auto("AutoModel"),
    "AutoTokenizer": _auto("AutoTokenizer"),
    "package": _package,
    "describe": _describe,
}


# The files the process opened under the watched paths (`opens_under`), by one audit hook.
OPENED: List[str] = []
_WATCHED: List[str] = []


def _record_opens(event: str, args: tuple) -> None:
    if event != "open" or not _WATCHED or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    if any(path.startswith(root) for root in _WATCHED):
        OPENED.append(path)


@contextlib.contextmanager
def opens_under(root: str) -> Iterator[List[str]]:
    """Records in `OPENED` (cleared first) every file this process opens whose absolute path
    starts with `root` (a file, or a directory ending in a separator) while the block runs. The
    audit hook is added on first use and stays (Python has no way to remove one)."""
    if not getattr(_record_opens, "added", False):
        sys.addaudithook(_record_opens)
        _record_opens.added = True  # type: ignore[attr-defined]
    OPENED.clear()
    _WATCHED.append(root)
    try:
        yield OPENED
    finally:
        _WATCHED.clear()


def outcome(load) -> Optional[Exception]:
    """What `load()` raised (None if it returned): security tests check what was written or
    read first, then the refusal, so that a loader that writes outside and then fails for
    another reason fails them."""
    try:
        load()
    except Exception as error:  # noqa: BLE001
        return error
    return None


# --- `python -m allennlp_elmo_c ...` in this process ---------------------------------------------

PLUGIN_COMMAND = "python -m allennlp_elmo_c"
_SUBPROCESS_RUN = subprocess.run  # the real one, whatever a test patches in later


def run_plugin_command(command: List[str], cwd=None, env=None, stdout=None, stderr=None,
                       capture_output: bool = False, check: bool = False, text: bool = False,
                       **kwargs):  # fmt: skip
    """
    `subprocess.run` for tests of `python -m allennlp_elmo_c` commands (directly, or through
    `plugin_commands_in_process` for code that calls `subprocess.run`): a `[sys.executable, "-m",
    "allennlp_elmo_c", ...]` command runs in this process instead (AllenNLP's `main` with the
    plugin loaded, as `python -m allennlp_elmo_c` runs it), in `cwd`, with exactly the environment
    `env`, its output written where the caller sends its stdout (stdout and stderr apart when
    captured); its exit status as a subprocess's (0, or 1 with the traceback on its stderr). This
    saves a fresh interpreter's import of torch and AllenNLP (seconds) per command. Any other
    command runs as a subprocess. What a run changes in the process is put back: the
    environment, the working directory, `sys.argv`, the root logger's handlers and level, tqdm's
    logger, `sys.excepthook`.
    """
    import logging
    import sys
    import traceback

    if list(command[:3]) != [sys.executable, "-m", "allennlp_elmo_c"]:
        return _SUBPROCESS_RUN(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr,
                               capture_output=capture_output, check=check, text=text, **kwargs)  # fmt: skip
    from allennlp.commands import main
    from allennlp.common.tqdm import logger as tqdm_logger

    root = logging.getLogger()
    saved = (dict(os.environ), os.getcwd(), sys.argv, root.handlers[:], root.level,
             tqdm_logger.handlers[:], sys.excepthook)  # fmt: skip
    capture = capture_output or stdout == subprocess.PIPE
    stream = io.StringIO() if capture or stdout in (None, subprocess.DEVNULL) else stdout
    errors = io.StringIO() if capture else stream  # captured: stdout and stderr apart
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [PLUGIN_COMMAND, *command[3:]]
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(errors):
            try:
                main(prog=PLUGIN_COMMAND)
                code = 0
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            except Exception:  # noqa: BLE001  (a subprocess would exit 1 with the traceback)
                traceback.print_exc(file=errors)
                code = 1
    finally:
        environment, directory, sys.argv, handlers, level, tqdm_handlers, sys.excepthook = saved
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(directory)
        for handler in set(root.handlers) - set(handlers):
            handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        tqdm_logger.handlers[:] = tqdm_handlers
    output = error_output = None
    if capture:
        output, error_output = stream.getvalue(), errors.getvalue()
        if not text:
            output, error_output = output.encode(), error_output.encode()
    result = subprocess.CompletedProcess(command, code, output, error_output)
    if check and code:
        raise subprocess.CalledProcessError(code, command, output, error_output)
    return result


@contextlib.contextmanager
def plugin_commands_in_process():
    """`run_plugin_command` in place of `subprocess.run` while the context lasts."""
    import pytest

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(subprocess, "run", run_plugin_command)
        yield
