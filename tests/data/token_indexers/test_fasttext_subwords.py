import fasttext
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import TokenIndexer

from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.fasttext import fasttext_bin
from allennlp_elmo_c.fasttext.fasttext_bin import native_subwords
from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder
from tests import FIXTURES_ROOT

TINY = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")


@pytest.fixture(scope="module")
def reference():
    return fasttext.load_model(TINY)


def tensors_for(sentences, indexer):
    return index_sentences(sentences, indexer)


def test_from_config_and_ids_match_the_library(reference):
    indexer = TokenIndexer.from_params(Params({"type": "fasttext_subwords", "model_path": TINY}))
    tokens = [Token(t) for t in ["schools", "unseenword", "", "café"]]
    indexed = indexer.tokens_to_indices(tokens, Vocabulary())
    assert indexed["subword_ids"] == [reference.get_subwords(t.text)[1].tolist() for t in tokens]
    assert indexed["subword_counts"] == [len(ids) for ids in indexed["subword_ids"]]
    assert indexed["subword_counts"][2] == 0  # "" has no subwords (and a zero vector)


def test_long_tokens_are_truncated_and_logged(caplog):
    indexer = FastTextSubwordsIndexer(TINY, max_subwords_per_token=10)
    ids = indexer.tokens_to_indices([Token("y" * 10_000)], Vocabulary())["subword_ids"][0]
    assert len(ids) == 10 and indexer.num_truncated == 1
    assert "truncated" in caplog.text
    with pytest.raises(ConfigurationError):
        FastTextSubwordsIndexer(TINY, max_subwords_per_token=0)


def test_embedder_equals_get_word_vector(reference):
    indexer = FastTextSubwordsIndexer(TINY)
    embedder = FastTextEmbedder(TINY)
    sentences = [["schools", "unseenword", "Zürich", "😀"], ["", "</s>", "x" * 60], ["The"]]
    vectors = embedder(**tensors_for(sentences, indexer))
    assert vectors.shape == (3, 4, 16) and vectors.dtype == torch.float32
    for row, sentence in enumerate(sentences):
        for column, word in enumerate(sentence):
            expected = reference.get_word_vector(word)
            np.testing.assert_allclose(vectors[row, column].numpy(), expected, atol=1e-5)
    assert torch.all(vectors[1, 3] == 0) and torch.all(vectors[2, 1:] == 0)  # padding


def test_embedder_is_frozen_and_not_in_state_dict():
    embedder = FastTextEmbedder(TINY)
    assert list(embedder.parameters()) == [] and embedder.state_dict() == {}
    assert embedder.get_output_dim() == 16
    np.testing.assert_allclose(
        embedder.embed_strings(["schools", ""]).numpy()[0],
        fasttext.load_model(TINY).get_word_vector("schools"),
        atol=1e-6,
    )


def test_dimension_mismatch_is_a_clear_error():
    with pytest.raises(ConfigurationError, match="dimension 16.*300"):
        FastTextEmbedder(TINY, expected_dim=300)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=6))
def test_any_unicode_string_gets_the_library_vector(words):
    reference = fasttext.load_model(TINY)
    indexer = FastTextSubwordsIndexer(TINY)
    embedder = FastTextEmbedder(TINY)
    # fastText treats its input as bytes; strings with lone surrogates cannot be encoded.
    words = [w for w in words if w.encode("utf-8", errors="ignore").decode("utf-8") == w] or ["x"]
    vectors = embedder(**tensors_for([words], indexer))[0]
    assert torch.isfinite(vectors).all()
    for word, vector in zip(words, vectors):
        np.testing.assert_allclose(vector.numpy(), reference.get_word_vector(word), atol=1e-5)


def test_text_field_mask_with_one_or_two_of_our_indexers_and_empty_tokens():
    from allennlp.nn.util import get_text_field_mask

    sentences = [["schools", "", "closed"], ["a"]]
    expected = [[True, True, True], [True, False, False]]
    fields = {
        "one": {"ft": FastTextSubwordsIndexer(TINY)},
        "two": {"ft": FastTextSubwordsIndexer(TINY), "elmo_c": FastTextSubwordsIndexer(TINY)},
    }
    for indexers in fields.values():
        instances = [Instance({"t": TextField([Token(w) for w in s], indexers)}) for s in sentences]
        batch = Batch(instances)
        batch.index_instances(Vocabulary())
        # "" has no subwords (count 0) but is a real token.
        assert get_text_field_mask(batch.as_tensor_dict()["t"]).tolist() == expected


def test_empty_batches_and_shared_matrix():
    import copy

    embedder = FastTextEmbedder(TINY)
    for ids_shape, counts_shape in [((2, 0), (2, 0)), ((0, 1), (0, 3))]:
        ids = torch.zeros(ids_shape, dtype=torch.long)
        counts = torch.zeros(counts_shape, dtype=torch.long)
        assert embedder(ids, counts).shape == (*counts_shape, 16)
    assert embedder.embed_strings([]).shape == (0, 16)
    # deepcopy and a second embedder share the one memory-mapped matrix, not copies of it.
    clone, other = copy.deepcopy(embedder), FastTextEmbedder(TINY)
    cpu = torch.device("cpu")
    pointers = {e._fasttext.matrix_on(cpu).data_ptr() for e in (embedder, clone, other)}
    assert len(pointers) == 1


def test_indexer_from_an_archive_reads_the_bilm_fasttext(elmo_c_archive):
    indexer = TokenIndexer.from_params(
        Params({"type": "fasttext_subwords", "archive_file": str(elmo_c_archive)})
    )
    reference = FastTextSubwordsIndexer(TINY)
    assert indexer.model_path == reference.model_path
    tokens = [Token(t) for t in ["schools", "unseenword"]]
    assert indexer.tokens_to_indices(tokens, Vocabulary()) == reference.tokens_to_indices(
        tokens, Vocabulary()
    )


def test_exactly_one_of_model_path_and_archive_file(elmo_c_archive):
    with pytest.raises(ConfigurationError, match="exactly one of model_path .* archive_file"):
        FastTextSubwordsIndexer()
    with pytest.raises(ConfigurationError, match="exactly one of model_path .* archive_file"):
        FastTextSubwordsIndexer(TINY, archive_file=str(elmo_c_archive))


def test_output_carries_the_model_fingerprint():
    tensors = tensors_for([["a", "b"], ["c"]], FastTextSubwordsIndexer(TINY))
    from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin

    fingerprint = FastTextBin.load(TINY).fingerprint
    assert tensors["fasttext_fingerprint"].tolist() == [[fingerprint], [fingerprint]]
    # The mask AllenNLP finds without a `mask` key is still the token mask.
    from allennlp.nn.util import get_text_field_mask

    assert get_text_field_mask({"x": tensors}).tolist() == [[True, True], [True, False]]


def test_indexer_from_a_missing_archive_takes_the_environment_variable(tmp_path, monkeypatch):
    missing = str(tmp_path / "gone.tar.gz")
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)
    with pytest.raises(ConfigurationError, match="gone.tar.gz does not exist.*ELMO_C_FASTTEXT"):
        FastTextSubwordsIndexer(archive_file=missing)
    monkeypatch.setenv("ELMO_C_FASTTEXT", TINY)
    assert FastTextSubwordsIndexer(archive_file=missing).model_path == FastTextSubwordsIndexer(
        TINY
    ).model_path


# --- batches ---------------------------------------------------------------------------------

RAGGED = [
    ["schools", "are", "closed", "", "x" * 300, "Zürich"],
    ["😀"],
    ["a<b>", "</s>", "日本語", "unseenword", "The", "the", "schools"],
    [""],
]


def batch_tensors(sentences, indexer):
    instances = [Instance({"t": TextField([Token(w) for w in s], {"ft": indexer})})
                 for s in sentences]  # fmt: skip
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["t"]["ft"]


def test_batched_vectors_equal_get_word_vector(reference):
    embedder = FastTextEmbedder(TINY)
    indexer = TokenIndexer.from_params(
        Params({"type": "fasttext_subwords", "model_path": TINY, "max_subwords_per_token": 40})
    )
    tensors = batch_tensors(RAGGED, indexer)
    assert tensors["subword_ids"].size(1) == tensors["subword_counts"].sum(1).max()
    vectors = embedder(**tensors)
    for row, sentence in enumerate(RAGGED):
        for column, word in enumerate(sentence):
            if len(word) < 30:  # not truncated
                np.testing.assert_allclose(
                    vectors[row, column].numpy(), reference.get_word_vector(word), atol=1e-5
                )
    assert not vectors[3].any() and not vectors[1, 1:].any()  # "" and padding: zeros


def test_mask_comes_first():
    from allennlp.nn.util import get_text_field_mask

    tensors = batch_tensors([["a", "b"], ["c"]], FastTextSubwordsIndexer(TINY))
    # The first 2-d output is the token mask (not the flat ids).
    assert list(tensors)[0] == "token_mask"
    assert get_text_field_mask({"x": tensors}).tolist() == [[True, True], [True, False]]


def test_flat_layout_shapes():
    tensors = tensors_for([["schools", "are", "closed"], ["a"]], FastTextSubwordsIndexer(TINY))
    counts = tensors["subword_counts"]
    assert counts.shape == (2, 3) and tensors["subword_ids"].shape == (2, counts.sum(1).max())
    assert tensors["token_mask"].tolist() == [[True, True, True], [True, False, False]]
    assert counts[1, 1:].tolist() == [0, 0]


def test_flat_padding_to_shorter_lengths_keeps_counts_consistent():
    indexer = FastTextSubwordsIndexer(TINY)
    indexed = indexer.tokens_to_indices([Token("schools"), Token("unseenword")], Vocabulary())
    first = indexed["subword_counts"][0]
    tensors = indexer.as_padded_tensor_dict(indexed, {"subword_ids": first + 2, "num_tokens": 3})
    assert tensors["subword_counts"].tolist() == [first, 2, 0]
    assert tensors["subword_ids"].tolist() == [i for ids in indexed["subword_ids"] for i in ids][
        : first + 2
    ]


def test_cache_misses_of_one_call_are_hashed_together_and_cached(reference):
    indexer = FastTextSubwordsIndexer(TINY, cache_size=3, max_subwords_per_token=40)
    words = ["schools", "unseenword", "schools", "y" * 100, "", "unseenword", "café"]
    indexed = indexer.tokens_to_indices([Token(w) for w in words], Vocabulary())
    assert indexed["subword_ids"] == [reference.get_subwords(w)[1].tolist()[:40] for w in words]
    assert indexer.num_truncated == 1  # "y" * 100, once
    assert len(indexer._cache) <= 3
    # Returned lists are fresh: changing one does not change the cache.
    indexed["subword_ids"][0].append(-1)
    again = indexer.tokens_to_indices([Token("schools")], Vocabulary())["subword_ids"][0]
    assert again == reference.get_subwords("schools")[1].tolist()


@pytest.mark.skipif(
    native_subwords() is None,
    reason="the C extension allennlp_elmo_c.fasttext._subwords is not built "
    "(python setup.py build_ext --inplace)",
)
def test_outputs_are_identical_with_and_without_the_extension(monkeypatch):
    sentences = RAGGED + [["\ud800", "y" * 500, "schools", "schools", "", "</s>", "日本"]] * 2
    outputs = {}
    for native in (True, False):
        monkeypatch.setattr(fasttext_bin, "USE_NATIVE", native)
        indexer = FastTextSubwordsIndexer(TINY, max_subwords_per_token=40, cache_size=8)
        indexed = [indexer.tokens_to_indices([Token(w) for w in s], Vocabulary())
                   for s in sentences]  # fmt: skip
        outputs[native] = (indexed, indexer.num_truncated, batch_tensors(sentences, indexer))
        # Lists the user may change: fresh ones, not the cached tuples.
        indexed[0]["subword_ids"][0].append(-1)
        assert indexer.tokens_to_indices([Token(RAGGED[0][0])], Vocabulary()) == {
            **indexed[0], "subword_ids": [indexed[0]["subword_ids"][0][:-1]],
            "token_mask": [True], "subword_counts": [indexed[0]["subword_counts"][0]],
        }  # fmt: skip
    (native_indexed, native_truncated, native_tensors), numpy_outputs = outputs[True], outputs[False]
    assert native_indexed == numpy_outputs[0] and native_truncated == numpy_outputs[1] > 0
    assert native_tensors.keys() == numpy_outputs[2].keys()
    assert all(torch.equal(native_tensors[k], numpy_outputs[2][k]) for k in native_tensors)
