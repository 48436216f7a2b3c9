import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder, TextFieldEmbedder

from allennlp_elmo_c.modules.text_field_embedders import SubsetTextFieldEmbedder
from allennlp_elmo_c.modules.token_embedders.random_vectors import RandomVectorsEmbedder

FIELD = {
    "a": {"word_hashes": torch.tensor([[11, 12, 0]]), "token_mask": torch.tensor([[1, 1, 0]])},
    "b": {"word_hashes": torch.tensor([[21, 22, 0]])},
    "other": {"tokens": torch.tensor([[1, 2, 0]])},
}


def test_embeds_only_its_keys_like_basic():
    embedders = {"b": RandomVectorsEmbedder(3, seed=1), "a": RandomVectorsEmbedder(2)}
    subset = TextFieldEmbedder.from_params(
        Params(
            {
                "type": "subset",
                "token_embedders": {
                    "a": {"type": "random_vectors", "embedding_dim": 2},
                    "b": {"type": "random_vectors", "embedding_dim": 3, "seed": 1},
                },
            }
        ),
        vocab=Vocabulary(),
    )
    assert isinstance(subset, SubsetTextFieldEmbedder) and subset.get_output_dim() == 5
    output = subset(FIELD)
    expected = BasicTextFieldEmbedder(embedders)({k: FIELD[k] for k in ("a", "b")})
    assert output.shape == (1, 3, 5)
    torch.testing.assert_close(output, expected, rtol=0, atol=0)
    with pytest.raises(ConfigurationError, match="Mismatched token keys"):
        BasicTextFieldEmbedder(embedders)(FIELD)  # what `subset` is for


def test_a_missing_key_is_an_error():
    subset = SubsetTextFieldEmbedder({"a": RandomVectorsEmbedder(2), "c": RandomVectorsEmbedder(2)})
    with pytest.raises(ConfigurationError, match=r"no indexer output for \['c'\]"):
        subset(FIELD)


def test_needs_an_embedder():
    with pytest.raises(ConfigurationError, match="empty"):
        SubsetTextFieldEmbedder({})
