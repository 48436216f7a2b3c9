import sys

import fasttext
import numpy as np
import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from tests import PROJECT_ROOT
from tests.helpers import run_plugin_command

SMALL = dict(dim=16, bucket=20_000, epoch=2, min_count=1, threads=2, verbose=0)


def test_trains_a_loadable_bin_with_subwords(varied_corpus, tmp_path):
    output = train_fasttext(
        varied_corpus, tmp_path / "vectors" / "model.bin", minn=2, maxn=4, **SMALL
    )
    model = fasttext.load_model(str(output))
    assert model.get_dimension() == 16
    assert model.f.getArgs().bucket == 20_000 and model.f.getArgs().minn == 2
    known = model.words[5]
    unseen = "qqkalozzz"  # never in the corpus: composed from its character n-grams
    assert model.get_word_id(unseen) == -1
    for word in (known, unseen):
        vector = model.get_word_vector(word)
        assert vector.shape == (16,) and np.isfinite(vector).all() and np.abs(vector).sum() > 0
        # fastText's definition: the mean of the word's subword rows of the input matrix.
        rows = model.get_subwords(word)[1]
        np.testing.assert_allclose(vector, model.get_input_matrix()[rows].mean(0), atol=1e-6)
    assert not list(tmp_path.glob("vectors/*.partial"))


def test_up_to_date_model_is_not_retrained(varied_corpus, tmp_path):
    output = train_fasttext(varied_corpus, tmp_path / "m.bin", **SMALL)
    stamp = output.stat().st_mtime_ns
    assert train_fasttext(varied_corpus, tmp_path / "m.bin", **SMALL).stat().st_mtime_ns == stamp
    train_fasttext(varied_corpus, tmp_path / "m.bin", **{**SMALL, "dim": 8})  # settings changed
    assert fasttext.load_model(str(output)).get_dimension() == 8
    stamp = output.stat().st_mtime_ns
    train_fasttext(varied_corpus, tmp_path / "m.bin", force=True, **{**SMALL, "dim": 8})
    assert output.stat().st_mtime_ns != stamp


def test_divergence_is_a_clear_error(varied_corpus, tmp_path, caplog):
    with pytest.raises(ConfigurationError, match="NaN.*lower --lr"):
        train_fasttext(varied_corpus, tmp_path / "m.bin", **{**SMALL, "lr": 50.0})
    assert not (tmp_path / "m.bin").exists()
    assert "retrying" in caplog.text


def test_no_word_reaches_min_count(varied_corpus, tmp_path):
    with pytest.raises(ConfigurationError, match="Empty vocabulary.*--min-count"):
        train_fasttext(varied_corpus, tmp_path / "m.bin", **{**SMALL, "min_count": 10**9})


def test_invalid_bytes_and_odd_unicode_in_corpus(tmp_path):
    corpus = tmp_path / "odd.txt"
    lines = [
        b"caf\xc3\xa9 \xff\xfe broken \x00 bytes \xf0\x9f\x98\x80 emoji \xe6\x97\xa5\xe6\x9c\xac"
    ] * 50
    lines += [b"plain words here and there"] * 50
    corpus.write_bytes(b"\n".join(lines) + b"\n")
    model = fasttext.load_model(str(train_fasttext(corpus, tmp_path / "m.bin", **SMALL)))
    assert np.isfinite(model.get_word_vector("café")).all()


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"dim": 0}, "dim must be"),
        ({"minn": 5, "maxn": 3}, "minn <= maxn"),
        ({"lr": float("nan")}, "lr must"),
    ],
)
def test_bad_settings(varied_corpus, tmp_path, bad, message):
    with pytest.raises(ConfigurationError, match=message):
        train_fasttext(varied_corpus, tmp_path / "m.bin", **{**SMALL, **bad})


def test_cli_registered_with_allennlp(varied_corpus, tmp_path):
    command = [sys.executable, "-m", "allennlp_elmo_c", "train-fasttext", str(varied_corpus)]
    command += [str(tmp_path / "cli.bin"), "--dim", "8", "--bucket", "20000", "--min-count", "1"]
    command += ["--epoch", "1", "--quiet"]
    result = run_plugin_command(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert fasttext.load_model(str(tmp_path / "cli.bin")).get_dimension() == 8


def test_few_buckets_train_at_the_default_lr(varied_corpus, tmp_path):
    """1,000 buckets for this corpus's n-grams, one thread: fastText's uninitialised rows (a
    small matrix's leftover heap bytes) made this diverge at the first update, every try."""
    settings = {**SMALL, "bucket": 1_000, "epoch": 1, "threads": 1}
    model = fasttext.load_model(str(train_fasttext(varied_corpus, tmp_path / "m.bin", **settings)))
    assert np.isfinite(model.get_input_matrix()).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_every_input_row_starts_random_whatever_the_threads(varied_corpus, tmp_path, threads):
    """fastText draws its input matrix uniformly in [-1/dim, 1/dim] in ten blocks of rows, one
    per training thread: with fewer threads the other rows started at zero (9 in 10 with one
    thread). At a learning rate of 1e-9 the trained matrix is its initial one."""
    settings = {**SMALL, "threads": threads, "epoch": 1}
    output = train_fasttext(varied_corpus, tmp_path / f"init{threads}.bin", lr=1e-9, **settings)
    matrix = fasttext.load_model(str(output)).get_input_matrix()
    bound = 1.0 / 16
    assert np.abs(matrix).max() <= bound * (1 + 1e-3)
    # A row of 16 independent uniform draws has a norm near sqrt(16 / 3) / 16 = 0.14.
    norms = np.linalg.norm(matrix, axis=1)
    assert (norms > 0.02).mean() > 0.999, f"{(norms <= 0.02).mean():.1%} rows near zero"
