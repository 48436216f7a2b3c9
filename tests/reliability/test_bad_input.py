"""
Bad input at every place input enters: the pretraining corpus (through `allennlp train`), the
fastText `.bin`, the embed command's text file, and trained archives (downstream embedder and
embed command). Each case ends in a run that completes with counted and logged skips, or in a
`ConfigurationError` that names the file (and the line where there is one). The per-module tests
(tests/data, tests/common, tests/commands) cover the same inputs at the unit level.
"""

import json
import logging
import shutil

import h5py
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder
from tests import FIXTURES_ROOT
from tests.helpers import train_config, train_small_fasttext

CONFIG = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"
TINY = FIXTURES_ROOT / "fasttext" / "tiny.bin"
CLEAN = (FIXTURES_ROOT / "data" / "lm" / "sentences.txt").read_bytes()

LONG_LINE = " ".join(["abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvw"] * 20_000)  # 1M chars
HOSTILE_LINES = [
    b"\xef\xbb\xbfthe text starts with a byte order mark",
    b"",
    b"   \t  ",
    LONG_LINE.encode(),
    b"the\x00cat sat on\x00the mat",
    b"caf\xe9 au lait \xff\xfe is not utf-8",
    "Москва 東京 القاهرة नमस्ते 😀 👩‍👩‍👧 e\u0301 mixed scripts".encode(),
    ("z" * 20_000 + " after a 20k-character token").encode(),
    ("x" * 1_000_000).encode(),  # one 1M-character token
    b"windows line ending\r",
    b"\x00\x00\x00",
]
HOSTILE = b"\n".join(HOSTILE_LINES) + b"\n" + CLEAN


@pytest.fixture(scope="module")
def wrong_dimension_bin(tmp_path_factory):
    return train_small_fasttext(tmp_path_factory.mktemp("dim8"), dim=8, bucket=20_000)


def bad_bins(tmp_path, wrong_dimension_bin):
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(TINY.read_bytes()[: TINY.stat().st_size // 2])
    text = tmp_path / "vectors.vec"
    text.write_text("2 3\nthe 0.1 0.2 0.3\ncat 0.1 0.2 0.3\n")
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    return {
        "missing": (tmp_path / "missing.bin", "does not exist|was not found; tried .*missing.bin"),
        "truncated": (truncated, "truncated"),
        "empty": (empty, "truncated|not a valid"),
        "text vectors": (text, "bad magic"),
        "wrong dimension": (wrong_dimension_bin, "dimension 8"),
    }


BAD_BIN_CASES = ["missing", "truncated", "empty", "text vectors", "wrong dimension"]


# ---------------------------------------------------------------------------------------------
# The pretraining corpus, through `allennlp train`
# ---------------------------------------------------------------------------------------------


def test_training_on_a_hostile_corpus_completes_and_logs_each_skip(tmp_path):
    corpus = tmp_path / "hostile.txt"
    corpus.write_bytes(HOSTILE)
    overrides = {"train_data_path": str(corpus), "trainer.num_epochs": 1}
    metrics = train_config(CONFIG, tmp_path / "run", json.dumps(overrides))
    for name in ("training_loss", "validation_loss", "training_forward_cosine"):
        assert np.isfinite(metrics[name]), name
    # AllenNLP routes the run's log to out.log in the serialization directory.
    warnings = (tmp_path / "run" / "out.log").read_text()
    assert f"{corpus}: 1 line(s) held bytes that are not UTF-8" in warnings
    assert f"{corpus}: 2 line(s) held NUL characters" in warnings
    assert "had more than 256 fastText subwords and were truncated" in warnings


@pytest.mark.parametrize("content", [b"", b"\n\n  \t\n", b"\xef\xbb\xbf\n\x00\n"])
def test_training_on_an_empty_corpus_is_a_clear_error(tmp_path, content):
    corpus = tmp_path / "empty.txt"
    corpus.write_bytes(content)
    overrides = json.dumps({"train_data_path": str(corpus)})
    with pytest.raises(ConfigurationError, match=f"{corpus} has no sentences"):
        train_config(CONFIG, tmp_path / "run", overrides)


def test_training_on_a_missing_corpus_is_a_clear_error(tmp_path):
    overrides = json.dumps({"validation_data_path": str(tmp_path / "dev.txt")})
    with pytest.raises(ConfigurationError, match=f"{tmp_path / 'dev.txt'} not found"):
        train_config(CONFIG, tmp_path / "run", overrides)


@pytest.mark.parametrize("case", BAD_BIN_CASES)
def test_training_with_a_bad_fasttext_bin_names_the_file(tmp_path, wrong_dimension_bin, case):
    path, message = bad_bins(tmp_path, wrong_dimension_bin)[case]
    overrides = {
        "dataset_reader.token_indexers.tokens.model_path": str(path),
        "model.text_field_embedder.token_embedders.tokens.model_path": str(path),
        "model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
    }
    with pytest.raises(ConfigurationError, match=message) as error:
        train_config(CONFIG, tmp_path / "run", json.dumps(overrides))
    assert str(path) in str(error.value)


# ---------------------------------------------------------------------------------------------
# The fastText indexer and embedder on arbitrary strings
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.text(st.characters(codec="utf-8"), max_size=30), min_size=1, max_size=5),
        min_size=1,
        max_size=4,
    )
)
def test_any_batch_of_unicode_sentences_embeds_like_word_vector(sentences):
    """Padded batches of arbitrary strings (empty, NUL, combining marks, emoji, any script):
    each real position equals fastText's mean-of-subwords vector (numpy), padding is zero."""
    indexer = FastTextSubwordsIndexer(str(TINY))
    embedder = FastTextEmbedder(str(TINY))
    model = FastTextBin.load(str(TINY))
    tensors = index_sentences(sentences, indexer)
    vectors = embedder(tensors["subword_ids"], tensors["subword_counts"])
    assert vectors.shape == (len(sentences), max(map(len, sentences)), 16)
    assert torch.isfinite(vectors).all()
    for row, sentence in enumerate(sentences):
        for column, word in enumerate(sentence):
            expected = model.word_vector(word)
            np.testing.assert_allclose(vectors[row, column].numpy(), expected, atol=1e-6)
        assert not vectors[row, len(sentence) :].any()


def test_huge_tokens_are_cut_at_the_subword_limit_quickly():
    model = FastTextBin.load(str(TINY))
    for word in ["abcdéf" * 300, "😀" * 50, "the"]:
        for limit in (0, 1, 7, 300):
            assert model.subword_ids(word, limit=limit) == model.subword_ids(word)[:limit]
    indexer = FastTextSubwordsIndexer(str(TINY), max_subwords_per_token=64)
    # A 1M-character token has ~4M n-grams; only the first 65 are hashed.
    assert len(indexer.subword_ids("q" * 1_000_000)) == 64
    assert indexer.num_truncated == 1


# ---------------------------------------------------------------------------------------------
# The embed command's text file
# ---------------------------------------------------------------------------------------------


def test_embed_command_on_a_hostile_file(elmo_c_archive, tmp_path, caplog):
    source = tmp_path / "hostile.txt"
    source.write_bytes(HOSTILE)
    with pytest.raises(ConfigurationError, match=f"{source} has 1 line.*19999 tokens \\(line 4\\)"):
        embed_file(elmo_c_archive, source, tmp_path / "out.hdf5", max_sentence_length=20_000 - 1)
    assert not (tmp_path / "out.hdf5").exists() and not (tmp_path / "out.hdf5.partial").exists()
    with caplog.at_level(logging.WARNING):
        output = embed_file(
            elmo_c_archive, source, tmp_path / "out.hdf5", "top", 4, max_sentence_length=20_000
        )
    warnings = " | ".join(record.getMessage() for record in caplog.records)
    assert "1 line(s) with bytes that are not UTF-8 (read as U+FFFD), e.g. line 6" in warnings
    assert "2 line(s) with NUL characters (read as spaces), e.g. line 5" in warnings
    lines = HOSTILE.decode("utf-8", errors="replace").replace("\x00", " ").split("\n")[:-1]
    lines[0] = lines[0].lstrip("\ufeff")
    empty = sum(not line.split() for line in lines)
    assert empty >= 3 and f"{empty} empty line(s) written as 0-token entries" in warnings
    with h5py.File(output, "r") as out:
        assert len(out) == len(lines) + 1  # + sentence_to_index
        for index, line in enumerate(lines):
            vectors = out[str(index)][()]
            assert vectors.shape == (len(line.split()), 16), index
            assert np.isfinite(vectors).all()


# ---------------------------------------------------------------------------------------------
# Trained archives and their fastText file, downstream and in the embed command
# ---------------------------------------------------------------------------------------------


def bad_archives(tmp_path, elmo_c_archive):
    from allennlp.commands.train import train_model_from_file

    random_bytes = tmp_path / "random.tar.gz"
    random_bytes.write_bytes(np.random.default_rng(0).bytes(4096))
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(elmo_c_archive.read_bytes()[: elmo_c_archive.stat().st_size // 2])
    empty = tmp_path / "empty.tar.gz"
    empty.write_bytes(b"")
    classifier = tmp_path / "classifier"
    train_model_from_file(str(FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"), classifier)
    return {
        "missing": (tmp_path / "missing.tar.gz", "does not exist"),
        "random bytes": (random_bytes, "not a readable model.tar.gz"),
        "truncated": (truncated, "not a readable model.tar.gz"),
        "empty": (empty, "not a readable model.tar.gz"),
        "another model": (classifier / "model.tar.gz", "not an elmo_c model"),
    }


def test_bad_archives_name_the_file(elmo_c_archive, tmp_path):
    source = tmp_path / "text.txt"
    source.write_text("a b c\n")
    for case, (path, message) in bad_archives(tmp_path, elmo_c_archive).items():
        with pytest.raises(ConfigurationError, match=message) as error:
            ElmoCTokenEmbedder(str(path))
        assert str(path) in str(error.value), case
        with pytest.raises(ConfigurationError, match=message):
            embed_file(path, source, tmp_path / f"{case}.hdf5")


@pytest.mark.parametrize("case", BAD_BIN_CASES)
def test_bad_fasttext_bin_for_a_trained_archive(
    elmo_c_archive, tmp_path, wrong_dimension_bin, case
):
    path, message = bad_bins(tmp_path, wrong_dimension_bin)[case]
    if case == "wrong dimension":
        # Another model: refused by its fingerprint before its size is looked at.
        message = "not the one this model was trained with"
    with pytest.raises(ConfigurationError, match=message) as error:
        ElmoCTokenEmbedder(str(elmo_c_archive), fasttext_path=str(path))
    assert str(path) in str(error.value)
    source = tmp_path / "text.txt"
    source.write_text("a b c\n")
    with pytest.raises(ConfigurationError, match=message):
        embed_file(elmo_c_archive, source, tmp_path / "out.hdf5", fasttext_path=str(path))


def test_archive_whose_fasttext_file_moved(elmo_c_archive, tmp_path):
    # The archive records the .bin's path; if it is gone the error says how to point elsewhere.
    from allennlp_elmo_c.modules.elmo_c import ElmoC, PretrainedBiLM

    moved = tmp_path / "moved.bin"
    shutil.copy(TINY, moved)
    archive = tmp_path / "model.tar.gz"
    shutil.copy(elmo_c_archive, archive)
    representations = ElmoC(None, 1, module=PretrainedBiLM.from_archive(str(archive), str(moved)))
    assert representations.bilm.fasttext_path == str(moved)
