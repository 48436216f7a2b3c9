import fasttext
import numpy as np
import pytest

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.fasttext_bin import FastTextBin, _fnv1a
from tests import FIXTURES_ROOT

TINY = FIXTURES_ROOT / "fasttext" / "tiny.bin"
WORDS = [
    "schools",
    "The",
    ".",
    "</s>",
    "",
    "unseenword",
    "café",
    "Zürich",
    "日本語",
    "😀",
    "a",
    "x" * 500,
]


@pytest.fixture(scope="module")
def reference():
    return fasttext.load_model(str(TINY))


def test_header_and_matrix_match_the_library(reference):
    model = FastTextBin(TINY)
    args = reference.f.getArgs()
    assert (model.dim, model.minn, model.maxn, model.bucket) == (
        args.dim,
        args.minn,
        args.maxn,
        args.bucket,
    )
    assert model.words == reference.get_words(on_unicode_error="replace")
    np.testing.assert_array_equal(np.asarray(model.input_matrix), reference.get_input_matrix())


@pytest.mark.parametrize("word", WORDS)
def test_subwords_and_vectors_match_the_library(reference, word):
    model = FastTextBin(TINY)
    assert model.subword_ids(word) == reference.get_subwords(word)[1].tolist()
    np.testing.assert_allclose(model.word_vector(word), reference.get_word_vector(word), atol=1e-6)


def test_fnv1a_sign_extends_bytes_like_fasttext():
    assert _fnv1a(b"a") == 0xE40C292C  # the FNV-1a test vector for "a"
    assert _fnv1a("é".encode()) != _fnv1a(b"\x00\xa9")


def test_load_is_cached_and_picklable(tmp_path):
    import pickle

    assert FastTextBin.load(str(TINY)) is FastTextBin.load(str(TINY))
    clone = pickle.loads(pickle.dumps(FastTextBin.load(str(TINY))))
    assert clone.words == FastTextBin.load(str(TINY)).words


def test_missing_file(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        FastTextBin(tmp_path / "nope.bin")


@pytest.mark.parametrize("keep", [0, 3, 60, 2000])
def test_truncated_file(tmp_path, keep):
    path = tmp_path / "cut.bin"
    path.write_bytes(TINY.read_bytes()[:keep] if keep < 2000 else TINY.read_bytes()[:-100])
    with pytest.raises(ConfigurationError, match="truncated|not a valid"):
        FastTextBin(path)


def test_not_a_fasttext_file(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_text("3 2\nthe 0.1 0.2\n")
    with pytest.raises(ConfigurationError, match="bad magic"):
        FastTextBin(path)


def test_wrong_version(tmp_path):
    data = bytearray(TINY.read_bytes())
    data[4] = 11
    path = tmp_path / "old.bin"
    path.write_bytes(bytes(data))
    with pytest.raises(ConfigurationError, match="version 11"):
        FastTextBin(path)
