import numpy as np
import pytest
import torch
from scipy import stats

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import TokenEmbedder

from allennlp_elmo_c.data.token_indexers.word_hash import WordHashIndexer
from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.random_vectors import RandomVectorsEmbedder

ODD_TOKENS = ["", "\x00", "😀", "👩‍👩‍👧", "日本語", "\ud800", "x" * 10_000, "<S>", "</S>"]


def indexed(sentences):
    return {"hash": index_sentences(sentences, WordHashIndexer())}


def test_same_string_same_vector_across_objects_and_paths():
    first = TokenEmbedder.from_params(
        Params({"type": "random_vectors", "embedding_dim": 12, "seed": 5})
    )
    second = RandomVectorsEmbedder(12, seed=5)
    sentences = [["the", "cat", "the"], ["cat"]]
    via_field = BasicTextFieldEmbedder({"hash": first})(indexed(sentences))
    assert via_field.shape == (2, 3, 12)
    words = second.embed_strings(["the", "cat"])
    assert words.shape == (2, 12) and words.dtype == torch.float32
    assert torch.equal(via_field[0, 0], words[0]) and torch.equal(via_field[0, 2], words[0])
    assert torch.equal(via_field[0, 1], words[1]) and torch.equal(via_field[1, 0], words[1])
    assert torch.equal(first.embed_strings(["cat"]), second.embed_strings(["cat"]))


def test_different_strings_and_seeds_differ():
    embedder = RandomVectorsEmbedder(16)
    vectors = embedder.embed_strings(["the", "The", "the ", "cat"])
    for i in range(4):
        for j in range(i + 1, 4):
            assert (vectors[i] - vectors[j]).abs().max() > 0.1
    other_seed = RandomVectorsEmbedder(16, seed=1).embed_strings(["the"])
    assert (other_seed[0] - vectors[0]).abs().max() > 0.1


def test_vectors_are_standard_normal():
    # Deterministic (fixed strings and seed), so the loose thresholds below cannot flake.
    num_words, dim = 3000, 300
    words = [f"word{i}" for i in range(num_words)]
    values = RandomVectorsEmbedder(dim).embed_strings(words).double().numpy()
    assert abs(values.mean()) < 0.005 and abs(values.std() - 1.0) < 0.005
    assert stats.kstest(values.reshape(-1), "norm").pvalue > 1e-3
    per_dimension = np.array([stats.kstest(values[:, d], "norm").pvalue for d in range(dim)])
    # 300 tests: the smallest p-value of independent N(0, 1) columns is ~1/300.
    assert per_dimension.min() > 1e-5
    assert stats.kstest(per_dimension, "uniform").pvalue > 1e-3
    assert np.abs(values.mean(0)).max() < 5 / np.sqrt(num_words)
    assert np.abs(values.std(0) - 1).max() < 0.1
    # No correlation between dimensions, nor between the vectors of similar strings.
    correlation = np.corrcoef(values, rowvar=False)
    assert np.abs(correlation - np.eye(dim)).max() < 0.1
    assert abs(np.corrcoef(values[:-1].reshape(-1), values[1:].reshape(-1))[0, 1]) < 0.01


def test_odd_unicode_and_padding():
    embedder = RandomVectorsEmbedder(8)
    tensors = indexed([ODD_TOKENS, ["a"]])["hash"]
    output = embedder(**tensors)
    assert output.shape == (2, len(ODD_TOKENS), 8)
    assert torch.isfinite(output).all()
    torch.testing.assert_close(output[0], embedder.embed_strings(ODD_TOKENS), rtol=0, atol=0)
    assert (output[1, 1:] == 0).all() and (output[1, 0] != 0).all()
    # Distinct strings, distinct vectors.
    assert torch.cdist(output[0], output[0]).add(torch.eye(len(ODD_TOKENS))).min() > 0.1


def test_token_mask_zeroes_positions():
    embedder = RandomVectorsEmbedder(4)
    tensors = indexed([["a", "b"]])["hash"]
    mask = torch.tensor([[True, False]])
    output = embedder(tensors["word_hashes"], mask)
    assert (output[0, 1] == 0).all() and (output[0, 0] != 0).all()


def test_nothing_trainable_nor_stored():
    embedder = RandomVectorsEmbedder(300)
    assert list(embedder.parameters()) == [] and embedder.state_dict() == {}
    assert embedder.get_output_dim() == 300


def test_empty_input():
    assert RandomVectorsEmbedder(5).embed_strings([]).shape == (0, 5)


def test_bad_configs_and_inputs():
    with pytest.raises(ConfigurationError, match="embedding_dim"):
        RandomVectorsEmbedder(0)
    with pytest.raises(ConfigurationError, match="word_hash"):
        RandomVectorsEmbedder(4)(torch.ones(1, 2, dtype=torch.int32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_same_vectors_on_the_gpu():
    embedder = RandomVectorsEmbedder(300)
    words = [f"w{i}" for i in range(1000)] + ODD_TOKENS
    cpu = embedder.embed_strings(words)
    gpu = embedder.embed_strings(words, torch.device("cuda"))
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-6, rtol=0)
