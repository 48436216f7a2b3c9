import contextlib
import logging
import struct
import sys

import fasttext
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.fasttext import fasttext_bin
from allennlp_elmo_c.fasttext.fasttext_bin import (
    FastTextBin,
    _fnv1a,
    native_subwords,
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


@contextlib.contextmanager
def python_only():
    """`FastTextBin.subword_ids_and_cuts` in pure Python even where the C extension is built."""
    fasttext_bin.USE_NATIVE = False
    try:
        yield
    finally:
        fasttext_bin.USE_NATIVE = True


@pytest.fixture
def python_path(monkeypatch):
    monkeypatch.setattr(fasttext_bin, "USE_NATIVE", False)


# --- the pure-Python subword ids against fastText (the C extension's below) --------------------

TRICKY = [
    "", "<", ">", "<>", "a<b>c", "<<>>", "</s>", "</s>x", "x</s>", "<s>", "😀", "😀😀x",
    "👨\u200d👩\u200d👧", "e\u0301", "日本語のテキスト", "Ωμέγα", "ß", "\u00a0", "a b", "\t",
    "x" * 10_000, "日" * 300, "é" * 70, "ab" * 40 + "😀", "123", "don't", "U.S.",
]  # fmt: skip


def test_tricky_words_batched_match_the_library(reference, python_path):
    model = FastTextBin(TINY)
    words = TRICKY + model.words[:50]
    for word, ids in zip(words, model.subword_ids_batch(words)):
        assert ids == reference.get_subwords(word)[1].tolist(), repr(word)
    for word in TRICKY:
        np.testing.assert_allclose(
            model.word_vector(word), reference.get_word_vector(word), atol=1e-6
        )


@pytest.mark.parametrize("limit", [0, 1, 2, 7, 60])
def test_batch_limit_is_a_prefix(reference, limit, python_path):
    model = FastTextBin(TINY)
    words = TRICKY + ["</s>"] * 2
    for word, ids in zip(words, model.subword_ids_batch(words, limit=limit)):
        assert ids == reference.get_subwords(word)[1].tolist()[:limit], repr(word)


# Code points of every UTF-8 length, surrogates excluded (fastText reads UTF-8 bytes).
unicode_words = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30
)


@settings(max_examples=40, deadline=None)
@given(st.lists(unicode_words, min_size=1, max_size=6))
def test_any_unicode_batch_matches_the_library(words):
    reference = fasttext.load_model(str(TINY))
    model = FastTextBin.load(TINY)
    for implementation in (python_only, contextlib.nullcontext):  # Python, and C if it is built
        with implementation():
            for word, ids in zip(words, model.subword_ids_batch(words)):
                assert ids == reference.get_subwords(word)[1].tolist()


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
def test_subword_ids_and_cuts_equal_the_reference_for_any_words_and_settings(
    words, known, minn, maxn, bucket, limit, with_eos
):
    # Any str (lone surrogates too), some of them in the dictionary, "</s>" in it or not (no
    # n-grams either way, as in fastText), any n-gram settings (maxn < minn, maxn <= 0 or
    # bucket 0: none), the cuts included; the C extension too if it is built.
    vocabulary = dict.fromkeys(known + words[:2] + (["</s>"] if with_eos else []))
    model = settings_model({w: i for i, w in enumerate(vocabulary)}, minn, maxn, bucket, 3)
    words = words + ["</s>"]
    for implementation in (python_only, contextlib.nullcontext):  # Python, and C if it is built
        with implementation():
            check_against_reference(model, words, limit, model.subword_ids_and_cuts(words, limit))


# --- the C extension (`_subwords.c`) against the pure-Python reference and fastText -----------

requires_native = pytest.mark.skipif(
    native_subwords() is None,
    reason="the C extension allennlp_elmo_c.fasttext._subwords is not built "
    "(python setup.py build_ext --inplace)",
)
# Beyond TRICKY: lone surrogates (which fastText's binding cannot take), whitespace only, tokens
# far longer than any limit.
NATIVE_TRICKY = TRICKY + [
    "\ud800", "a\udcffb", "\udfff" * 3, " ", "  \t\n", "\u3000", "x" * 200_000,
    "日本" * 20_000, "😀" * 5_000 + "a",
]  # fmt: skip


@requires_native
@pytest.mark.parametrize("limit", [None, 0, 1, 2, 7, 60, 256])
def test_native_equals_the_reference_and_library_on_tricky_words(reference, limit):
    model = FastTextBin.load(TINY)
    words = NATIVE_TRICKY + model.words[:50] + ["</s>"] * 2
    if limit is None:  # all n-grams of a 200k-character token: slow in Python
        words = [word for word in words if len(word) < 1_000]
    check_against_reference(model, words, limit, model.subword_ids_and_cuts(words, limit), reference)


@requires_native
def test_native_without_limit_hashes_every_ngram_of_a_long_token():
    model = FastTextBin.load(TINY)
    words = ["é" * 3_000 + "x", "x" * 20_000]
    native = model.subword_ids_and_cuts(words, None)
    check_against_reference(model, words, None, native)
    # Every n-gram of 3 to 6 (minn, maxn) of the 20,002 characters of "<x...x>".
    assert len(native[0][1]) == sum(20_002 - n + 1 for n in range(3, 7))


@pytest.fixture(scope="module")
def resettled_models(tmp_path_factory):
    """Copies of the fixture with other `minn`/`maxn` (the header's args; same matrix): what
    the library and the C extension compute must follow them."""
    directory = tmp_path_factory.mktemp("settings")
    data = bytearray(TINY.read_bytes())
    paths = {}
    for minn, maxn in [(1, 1), (0, 2), (1, 3), (2, 4), (2, 9), (5, 5), (4, 3), (0, 0)]:
        struct.pack_into("<2i", data, 44, minn, maxn)  # after magic, version, 10 other args
        paths[minn, maxn] = directory / f"minn{minn}_maxn{maxn}.bin"
        paths[minn, maxn].write_bytes(bytes(data))
    return paths


@requires_native
@pytest.mark.parametrize("limit", [None, 3])
def test_native_follows_other_settings_like_the_library(resettled_models, limit):
    for (minn, maxn), path in resettled_models.items():
        model = FastTextBin(path)
        assert (model.minn, model.maxn) == (minn, maxn)
        words = [w for w in NATIVE_TRICKY if len(w) < 1_000] + model.words[:30] + ["</s>"]
        native = model.subword_ids_and_cuts(words, limit)
        check_against_reference(model, words, limit, native, fasttext.load_model(str(path)))


@requires_native
def test_native_shares_int_objects_and_rejects_non_strings():
    model = FastTextBin.load(TINY)
    (walking, talking), _ = model.subword_ids_and_cuts(["walking", "talking"])
    # "alk", "alki", ..., "ing>": one int object per id, whichever word it came from.
    shared = set(walking) & set(talking)
    assert len(shared) >= 10 and min(shared) > 256  # not Python's cached small ints
    objects = [{value: value for value in ids} for ids in (walking, talking)]
    assert all(objects[0][value] is objects[1][value] for value in shared)
    for implementation in (contextlib.nullcontext, python_only):
        with implementation(), pytest.raises(TypeError):
            model.subword_ids_and_cuts(["fine", None])


def test_missing_extension_falls_back_to_python_and_says_so(monkeypatch, caplog):
    import allennlp_elmo_c.fasttext as fasttext_package

    monkeypatch.delattr(fasttext_package, "_subwords", raising=False)
    monkeypatch.setitem(sys.modules, "allennlp_elmo_c.fasttext._subwords", None)  # not importable
    with caplog.at_level(logging.INFO, logger=fasttext_bin.__name__):
        assert native_subwords.__wrapped__() is None
    assert "not built" in caplog.text and "pure-Python" in caplog.text
    monkeypatch.setattr(fasttext_bin, "native_subwords", lambda: None)
    model = FastTextBin.load(TINY)
    assert model.subword_ids_batch(["schools", "café"]) == [
        reference_subword_ids(model, word) for word in ["schools", "café"]
    ]


@pytest.mark.skipif(native_subwords() is None, reason="the C extension is not built")
def test_the_native_tuples_and_an_indexer_cache_of_them_are_not_tracked_by_the_collector():
    """Tuples of ints hold no cycle: the C extension untracks them, so that a cache of many
    words costs the garbage collector nothing (a dict of untracked values stays untracked)."""
    import gc

    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer

    model = FastTextBin.load(TINY)
    computed, _ = model.subword_ids_and_cuts(["schools", "unseenword", "café", "</s>"])
    assert all(ids and not gc.is_tracked(ids) for ids in computed[:3])
    assert computed[0] == tuple(reference_subword_ids(model, "schools"))
    indexer = FastTextSubwordsIndexer(str(TINY))
    indexer.subword_ids_of(["schools", "unseenword", "schools", "new"])
    assert len(indexer._cache) == 3 and not gc.is_tracked(indexer._cache)
    assert indexer.subword_ids_of(["new", "schools"]) == [indexer._cache["new"], indexer._cache["schools"]]


@pytest.mark.skipif(native_subwords() is None, reason="the C extension is not built")
def test_the_native_table_takes_a_row_count_and_shares_only_ids_inside_it():
    native = native_subwords()
    with pytest.raises(ValueError, match="rows must be >= 0"):
        native.IntTable(-1)
    with pytest.raises(TypeError):
        native.IntTable()
    settings = (3, 3, 1 << 20, 1000, -1)  # minn, maxn, bucket, words: every n-gram id >= 1000
    table = native.IntTable(1000 + (1 << 20))
    ids, cut = native.subword_ids(["abcdef"], {}, table, *settings)
    assert cut == [] and len(ids[0]) == 6 and min(ids[0]) >= 1000  # "<ab" ... "ef>"
    assert len(table) == len(set(ids[0]))
    again, _ = native.subword_ids(["abcdef"], {}, table, *settings)
    assert again == ids and all(a is b for a, b in zip(again[0], ids[0]))  # the same int objects
    empty = native.IntTable(0)  # no row shared: the same ids, ints of their own
    alone, _ = native.subword_ids(["abcdef"], {}, empty, *settings)
    assert alone == ids and len(empty) == 0 and not any(a is b for a, b in zip(alone[0], ids[0]))
