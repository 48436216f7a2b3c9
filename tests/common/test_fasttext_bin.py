import fasttext
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.fasttext_bin import (
    FastTextBin,
    _batch_ngram_hashes,
    _fnv1a,
    _ngram_hashes,
    reference_subword_ids,
)
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


# --- the vectorized hashing (`subword_ids_batch`) ----------------------------------------------

TRICKY = [
    "", "<", ">", "<>", "a<b>c", "<<>>", "</s>", "</s>x", "x</s>", "<s>", "😀", "😀😀x",
    "👨\u200d👩\u200d👧", "e\u0301", "日本語のテキスト", "Ωμέγα", "ß", "\u00a0", "a b", "\t",
    "x" * 10_000, "日" * 300, "é" * 70, "ab" * 40 + "😀", "123", "don't", "U.S.",
]  # fmt: skip


def test_tricky_words_batched_match_the_library(reference):
    model = FastTextBin(TINY)
    words = TRICKY + model.words[:50]
    for word, ids in zip(words, model.subword_ids_batch(words)):
        assert ids == reference.get_subwords(word)[1].tolist(), repr(word)
    for word in TRICKY:
        np.testing.assert_allclose(
            model.word_vector(word), reference.get_word_vector(word), atol=1e-6
        )


@pytest.mark.parametrize("limit", [0, 1, 2, 7, 60])
def test_batch_limit_is_a_prefix(reference, limit):
    model = FastTextBin(TINY)
    words = TRICKY + ["</s>"] * 2
    for word, ids in zip(words, model.subword_ids_batch(words, limit=limit)):
        assert ids == reference.get_subwords(word)[1].tolist()[:limit], repr(word)


# Code points of every UTF-8 length, surrogates excluded (fastText reads UTF-8 bytes).
unicode_words = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=40), st.sampled_from([None, 1, 5, 30]))
def test_batch_equals_the_word_by_word_reference(words, limit):
    # Any str, lone surrogates included (both encode them with `surrogatepass`).
    model = FastTextBin.load(TINY)
    expected = [reference_subword_ids(model, word, limit) for word in words]
    assert model.subword_ids_batch(words, limit=limit) == expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(unicode_words, min_size=1, max_size=20),
    st.integers(1, 4),
    st.integers(0, 6),
    st.sampled_from([1, 7, 2_000_000]),
)
def test_batch_hashes_equal_one_by_one_for_any_settings(words, minn, extra, bucket):
    # Other n-gram settings than the fixture's (minn 1 has the `<`/`>` 1-gram exclusions).
    maxn = minn + extra - 1  # includes maxn < minn (no n-grams)
    if maxn < 1:
        maxn = 1
    flat, counts = _batch_ngram_hashes(words, minn, maxn, bucket)
    ends = np.cumsum(counts)
    for word, begin, end in zip(words, ends - counts, ends):
        encoded = ("<" + word + ">").encode("utf-8")
        assert flat[begin:end].tolist() == _ngram_hashes(encoded, minn, maxn, bucket)


@settings(max_examples=40, deadline=None)
@given(st.lists(unicode_words, min_size=1, max_size=6))
def test_any_unicode_batch_matches_the_library(words):
    reference = fasttext.load_model(str(TINY))
    model = FastTextBin.load(TINY)
    for word, ids in zip(words, model.subword_ids_batch(words)):
        assert ids == reference.get_subwords(word)[1].tolist()


def test_large_batches_are_hashed_in_chunks(monkeypatch):
    import allennlp_elmo_c.common.fasttext_bin as fasttext_bin

    model = FastTextBin.load(TINY)
    words = TRICKY * 3
    expected = [reference_subword_ids(model, word, 30) for word in words]
    monkeypatch.setattr(fasttext_bin, "_HASH_CHUNK", 4)
    ids, cut = model.subword_ids_and_cuts(words, limit=30)
    assert [list(row) for row in ids] == expected
    assert cut == [i for i, word in enumerate(words) if len(reference_subword_ids(model, word)) > 30]


def settings_model(word_ids, minn, maxn, bucket, extra_words) -> FastTextBin:
    """A `FastTextBin` with only what the subword ids need (no file)."""
    model = object.__new__(FastTextBin)
    model.word_ids = word_ids
    model.minn, model.maxn, model.bucket = minn, maxn, bucket
    model.num_words = len(word_ids) + extra_words
    model.num_rows = model.num_words + max(bucket, 0)
    return model


def check_against_reference(model, words, limit, computed, library=None):
    """`computed` (ids, cuts) equals the pure-Python reference and, if given, the library."""
    ids, cut = computed
    expected = [reference_subword_ids(model, word, None if limit is None else limit + 1)
                for word in words]  # fmt: skip
    if limit is not None:
        assert cut == [i for i, row in enumerate(expected) if len(row) > limit]
        expected = [row[:limit] for row in expected]
    else:
        assert cut == []
    assert [list(row) for row in ids] == expected
    assert all(type(row) is tuple for row in ids)
    for word, row in zip(words, ids):
        if library is not None and encodable(word):
            full = library.get_subwords(word)[1].tolist()
            assert list(row) == (full if limit is None else full[:limit]), repr(word)


def encodable(word: str) -> bool:
    """Whether fastText's binding can take `word` (no lone surrogates)."""
    return word.encode("utf-8", errors="ignore").decode("utf-8") == word


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(max_size=30), min_size=1, max_size=25),
    st.lists(st.text(max_size=5), max_size=5),
    st.integers(-1, 4),
    st.integers(-1, 7),
    st.sampled_from([0, 1, 7, 2_000_000]),
    st.sampled_from([None, 0, 1, 5, 30]),
    st.booleans(),
)
def test_batch_equals_the_reference_for_any_words_and_settings(
    words, known, minn, maxn, bucket, limit, with_eos
):
    # Any str (lone surrogates too), some of them in the dictionary, "</s>" in it or not (no
    # n-grams either way, as in fastText), any n-gram settings (maxn < minn, maxn <= 0 or
    # bucket 0: none), the cuts included.
    vocabulary = dict.fromkeys(known + words[:2] + (["</s>"] if with_eos else []))
    model = settings_model({w: i for i, w in enumerate(vocabulary)}, minn, maxn, bucket, 3)
    words = words + ["</s>"]
    check_against_reference(model, words, limit, model.subword_ids_and_cuts(words, limit))
