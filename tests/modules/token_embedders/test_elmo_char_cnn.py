import json
from pathlib import Path
from typing import List, Tuple

import h5py
import numpy as np
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import ELMoTokenCharactersIndexer, TokenIndexer
from allennlp.data.token_indexers.elmo_indexer import ELMoCharacterMapper
from allennlp.modules.elmo import _ElmoCharacterEncoder
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn.util import remove_sentence_boundaries

from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.elmo_char_cnn import ElmoCharCnnEmbedder
from tests import FIXTURES_ROOT
from tests.helpers import write_elmo_files

ELMO_FIXTURES = FIXTURES_ROOT / "elmo"
BOUNDARIES = {"<S>": 256, "</S>": 257}
WORDS = ["<S>", "The", "cat", "", "😀", "日本語", "x" * 80, "a\x00b", "</S>"]
TINY_FILTERS = [[1, 3], [2, 4], [3, 5]]


def numpy_char_cnn(options_file: str, weight_file: str, character_ids: np.ndarray) -> np.ndarray:
    """ELMo's character CNN as bilm-tf computes it (its equations, TensorFlow weight layout), in
    float64: `(tokens, 50)` character ids + 1 -> `(tokens, projection_dim)`."""
    cnn = json.loads(Path(options_file).read_text())["char_cnn"]
    activation = np.tanh if cnn["activation"] == "tanh" else (lambda x: np.maximum(x, 0))
    with h5py.File(weight_file, "r") as weights:
        w = {name: weights[name][...].astype(np.float64) for name in _names(weights)}
    table = np.vstack([np.zeros((1, w["char_embed"].shape[1])), w["char_embed"]])
    characters = table[character_ids]  # (tokens, 50, char_dim)
    pooled = []
    for i, (width, _) in enumerate(cnn["filters"]):
        kernel = w[f"CNN/W_cnn_{i}"][0]  # (width, char_dim, filters)
        positions = characters.shape[1] - width + 1
        convolved = np.stack(
            [
                np.einsum("nkd,kdf->nf", characters[:, t : t + width], kernel)
                for t in range(positions)
            ],
            axis=1,
        )
        pooled.append(activation((convolved + w[f"CNN/b_cnn_{i}"]).max(axis=1)))
    hidden = np.concatenate(pooled, axis=-1)
    for k in range(cnn["n_highway"]):
        gate = hidden @ w[f"CNN_high_{k}/W_carry"] + w[f"CNN_high_{k}/b_carry"]
        gate = 1.0 / (1.0 + np.exp(-gate))
        transform = np.maximum(
            hidden @ w[f"CNN_high_{k}/W_transform"] + w[f"CNN_high_{k}/b_transform"], 0
        )
        hidden = gate * transform + (1.0 - gate) * hidden
    return hidden @ w["CNN_proj/W_proj"] + w["CNN_proj/b_proj"]


def _names(group) -> List[str]:
    names = []
    group.visititems(
        lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None
    )
    return names


def indexed(sentences, tokens_to_add=BOUNDARIES) -> torch.Tensor:
    indexer = ELMoTokenCharactersIndexer(tokens_to_add=tokens_to_add)
    return index_sentences(sentences, indexer)["elmo_tokens"]


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    return write_elmo_files(tmp_path_factory.mktemp("elmo"), TINY_FILTERS, 2, 4, 6)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_matches_a_numpy_reimplementation(tmp_path, activation):
    options_file, weight_file = write_elmo_files(tmp_path, TINY_FILTERS, 2, 4, 6, activation)
    embedder = ElmoCharCnnEmbedder(options_file, weight_file)
    assert embedder.get_output_dim() == 6
    ids = indexed([WORDS, ["The", "end"]])
    output = embedder(ids)
    assert output.shape == (2, len(WORDS), 6)
    expected = numpy_char_cnn(options_file, weight_file, ids[0].numpy())
    np.testing.assert_allclose(output[0].detach().numpy(), expected, atol=1e-5, rtol=1e-5)
    second = numpy_char_cnn(options_file, weight_file, ids[1, :2].numpy())
    np.testing.assert_allclose(output[1, :2].detach().numpy(), second, atol=1e-5, rtol=1e-5)
    assert (output[1, 2:] == 0).all()  # padding positions


def test_matches_allennlp_encoder_without_its_added_boundaries(tiny_pair):
    embedder = ElmoCharCnnEmbedder(*tiny_pair)
    encoder = _ElmoCharacterEncoder(*tiny_pair)
    sentences = [["The", "cat", "sat", "."], ["A", "dog"]]
    plain = indexed(sentences)
    theirs = encoder(plain)
    stripped, mask = remove_sentence_boundaries(theirs["token_embedding"], theirs["mask"])
    ours = embedder(plain)
    torch.testing.assert_close(ours, stripped * mask.unsqueeze(-1))
    # Our reader's own <S> / </S> tokens get exactly the boundary vectors the encoder adds.
    with_boundaries = embedder(indexed([["<S>", *s, "</S>"] for s in sentences]))
    for row, sentence in enumerate(sentences):
        length = len(sentence)
        torch.testing.assert_close(with_boundaries[row, 0], theirs["token_embedding"][row, 0])
        torch.testing.assert_close(
            with_boundaries[row, length + 1], theirs["token_embedding"][row, length + 1]
        )
        torch.testing.assert_close(with_boundaries[row, 1 : length + 1], ours[row, :length])


def test_boundary_tokens_get_elmos_boundary_character_ids():
    # tokens_to_add {"<S>": 256, "</S>": 257} spells out what ELMoCharacterMapper does anyway.
    bos = [c + 1 for c in ELMoCharacterMapper.beginning_of_sentence_characters]
    eos = [c + 1 for c in ELMoCharacterMapper.end_of_sentence_characters]
    assert bos[:3] == [259, 257, 260] and eos[:3] == [259, 258, 260]
    for tokens_to_add in (BOUNDARIES, None):
        ids = indexed([["<S>", "x", "</S>"]], tokens_to_add)[0]
        assert ids[0].tolist() == bos and ids[2].tolist() == eos


def test_bundled_allennlp_fixture_matches_its_reference_outputs():
    embedder = ElmoCharCnnEmbedder(
        str(ELMO_FIXTURES / "options.json"), str(ELMO_FIXTURES / "lm_weights.hdf5")
    )
    words = (ELMO_FIXTURES / "vocab_test.txt").read_text(encoding="utf-8").strip().split("\n")
    with h5py.File(ELMO_FIXTURES / "elmo_token_embeddings.hdf5", "r") as reference:
        expected = reference["embedding"][...]
    assert len(words) == expected.shape[0] == 458 and "<S>" in words and "</S>" in words
    with torch.no_grad():
        actual = embedder.embed_strings(words).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=0)


def test_embed_strings_and_repeated_tokens(tiny_pair):
    embedder = ElmoCharCnnEmbedder(*tiny_pair)
    batch = embedder(indexed([["a", "b", "a"], ["b", "a"]]))
    single = embedder.embed_strings(["a", "b"])
    assert single.shape == (2, 6)
    for row, column, word in [(0, 0, 0), (0, 1, 1), (0, 2, 0), (1, 0, 1), (1, 1, 0)]:
        torch.testing.assert_close(batch[row, column], single[word])
    assert (batch[1, 2] == 0).all()


def test_frozen_by_default_and_fine_tunable(tiny_pair):
    frozen = TokenEmbedder.from_params(
        Params({"type": "elmo_char_cnn", "options_file": tiny_pair[0], "weight_file": tiny_pair[1]})
    )
    assert isinstance(frozen, ElmoCharCnnEmbedder)
    assert not any(p.requires_grad for p in frozen.parameters())
    assert frozen(indexed([["a"]])).grad_fn is None

    # Gradients through the de-duplicated batch equal those of AllenNLP's plain encoder.
    tuned = ElmoCharCnnEmbedder(*tiny_pair, requires_grad=True)
    encoder = _ElmoCharacterEncoder(*tiny_pair, requires_grad=True)
    assert all(p.requires_grad for p in tuned.parameters())
    ids = indexed([["a", "b", "a", "c"], ["b", "a"]])
    weights = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(0))
    (tuned(ids) * weights).sum().backward()
    theirs = encoder(ids)
    stripped, _ = remove_sentence_boundaries(theirs["token_embedding"], theirs["mask"])
    (stripped * weights).sum().backward()
    ours = dict(tuned.named_parameters())
    for name, parameter in encoder.named_parameters():
        torch.testing.assert_close(
            ours[f"_encoder.{name}"].grad, parameter.grad, atol=1e-5, rtol=1e-4
        )


def _corrupt(directory: Path, what: str) -> Tuple[str, str]:
    options_file, weight_file = write_elmo_files(directory, TINY_FILTERS, 1, 4, 6)
    if what == "no options":
        options_file = str(directory / "missing.json")
    elif what == "no weights":
        weight_file = str(directory / "missing.hdf5")
    elif what == "options not json":
        Path(options_file).write_text("{not json")
    elif what == "options without char_cnn":
        Path(options_file).write_text(json.dumps({"lstm": {"projection_dim": 6}}))
    elif what == "unknown activation":
        options = json.loads(Path(options_file).read_text())
        options["char_cnn"]["activation"] = "gelu"
        Path(options_file).write_text(json.dumps(options))
    elif what == "weights not hdf5":
        Path(weight_file).write_bytes(b"not an hdf5 file" * 10)
    elif what == "weights lack a layer":
        with h5py.File(weight_file, "a") as weights:
            del weights["CNN_high_0/W_carry"]
    elif what == "weights of another shape":
        with h5py.File(weight_file, "a") as weights:
            del weights["CNN/W_cnn_1"]
            weights["CNN/W_cnn_1"] = np.zeros((1, 2, 4, 7), dtype=np.float32)
    elif what == "highway of another shape":
        with h5py.File(weight_file, "a") as weights:
            del weights["CNN_high_0/W_carry"]
            weights["CNN_high_0/W_carry"] = np.zeros((5, 5), dtype=np.float32)
    return options_file, weight_file


@pytest.mark.parametrize(
    "what, named",
    [
        ("no options", "options"),
        ("no weights", "weights"),
        ("options not json", "options"),
        ("options without char_cnn", "options"),
        ("unknown activation", "options"),
        ("weights not hdf5", "weights"),
        ("weights lack a layer", "weights"),
        ("weights of another shape", "weights"),
        ("highway of another shape", "weights"),
    ],
)
def test_missing_or_corrupt_files_are_configuration_errors(tmp_path, what, named):
    options_file, weight_file = _corrupt(tmp_path, what)
    with pytest.raises(ConfigurationError) as error:
        ElmoCharCnnEmbedder(options_file, weight_file)
    assert (options_file if named == "options" else weight_file) in str(error.value)


def test_wrong_input_width(tiny_pair):
    with pytest.raises(ConfigurationError, match="characters per token"):
        ElmoCharCnnEmbedder(*tiny_pair)(torch.ones(1, 2, 30, dtype=torch.long))


def test_indexer_from_config_gives_the_same_ids():
    params = Params({"type": "elmo_characters", "tokens_to_add": dict(BOUNDARIES)})
    indexer = TokenIndexer.from_params(params)
    tokens = [Token(t) for t in WORDS]
    ids = indexer.tokens_to_indices(tokens, Vocabulary())["elmo_tokens"]
    assert ids == [ELMoCharacterMapper().convert_word_to_char_ids(t) for t in WORDS]
