"""
Bad input through the ways in users meet first: the Python API (`batch_to_ids` + `ElmoC`,
`ElmoCEmbedder`), the Hugging Face model, the spaCy component and the next-word predictor. Each
case is a clear `ConfigurationError` (or `ValueError`, Hugging Face's convention) or a logged,
finite, correctly shaped result: never a crash deep inside torch, never silently wrong vectors.
"""
import logging

import numpy
import pytest
import spacy
import torch
from transformers import AutoModel, AutoTokenizer

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from allennlp_elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids
import allennlp_elmo_c.integrations.huggingface  # noqa: F401  (registers the Auto classes)
from tests import PROJECT_ROOT

HUGE = "x" * 100_000
ODD = {
    "empty sentence": [],
    "NUL inside a word": ["a\x00b", "c"],
    "a 100,000-character word": [HUGE],
    "emoji, combining and bidi marks": ["😀", "e\u0301", "\u202eabc"],
    "whitespace words": [" ", "\t"],
    "a 5,000-word sentence": ["w"] * 5_000,
}


@pytest.fixture(scope="module")
def doors(model_directory):
    directory, _ = model_directory
    elmo = ElmoC(str(directory), 1, dropout=0.0).eval()
    embedder = ElmoCEmbedder(str(directory))
    model, tokenizer = AutoModel.from_pretrained(str(directory)), AutoTokenizer.from_pretrained(str(directory))
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(directory)})

    def through_elmo(words):
        return elmo(batch_to_ids([words, ["ok"]], elmo))["elmo_representations"][0][0, : len(words)]

    def through_huggingface(words):
        return model(**tokenizer([words, ["ok"]], is_split_into_words=True)).last_hidden_state[0, : len(words)]

    def through_spacy(words):
        # spaCy's own tokens of the text (whitespace becomes a token of its own, as spaCy does).
        return nlp(" ".join(words)).tensor

    return {
        "ElmoC": through_elmo,
        "ElmoCEmbedder": lambda words: embedder.embed_batch([words, ["ok"]])[0][-1],
        "huggingface": through_huggingface,
        "spacy": through_spacy,
    }, nlp


@pytest.mark.parametrize("case", sorted(ODD))
@pytest.mark.parametrize("door", ["ElmoC", "ElmoCEmbedder", "huggingface", "spacy"])
def test_odd_text_gives_finite_vectors_of_the_right_shape(doors, door, case, caplog):
    doors, nlp = doors
    words = ODD[case]
    with torch.no_grad(), caplog.at_level(logging.WARNING):
        vectors = doors[door](words)
    vectors = vectors.numpy() if isinstance(vectors, torch.Tensor) else vectors
    expected = len(words) if door != "spacy" else len(nlp.make_doc(" ".join(words)))
    assert vectors.shape == (expected, 16)
    assert numpy.isfinite(vectors).all()
    if case == "a 100,000-character word":
        assert "truncated" in caplog.text  # (logged once per process: the first door that met it)


def test_odd_words_are_logged(doors, caplog, monkeypatch):
    from allennlp_elmo_c.common import text

    monkeypatch.setitem(text._ODD_WORDS, "count", 0)  # the log is throttled process-wide
    with caplog.at_level(logging.WARNING):
        doors[0]["ElmoC"](["fine", " ", "a\x00b"])
    assert "empty, whitespace or held control characters" in caplog.text


@pytest.mark.parametrize("bad, message", [
    ("The council met .", "tokenized sentences"),
    ([["The", 3]], "word 1 is a int"),
    ([None], "sentence 0 is a NoneType"),
    ([], "empty batch"),
])  # fmt: skip
def test_bad_batches_are_clear_errors(doors, model_directory, bad, message):
    directory, _ = model_directory
    elmo = ElmoC(str(directory), 1)
    with pytest.raises(ConfigurationError, match=message):
        batch_to_ids(bad, elmo)
    if bad:  # ElmoCEmbedder embeds an empty batch as nothing
        with pytest.raises(ConfigurationError, match=message):
            ElmoCEmbedder(str(directory)).embed_batch(bad)


@pytest.fixture(scope="module")
def predictor(elmo_c_archive):
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(PROJECT_ROOT)  # the fixture archive's candidate list is relative to it
        return Predictor.from_archive(load_archive(str(elmo_c_archive)), "elmo_c_next_word")


@pytest.mark.parametrize("sentence, tokens", [
    ("", 0), ("   ", 0), ("a\x00b c", 3), (HUGE, 1), (" ".join(["w"] * 5_000), 5_000), ("😀 e\u0301", 2),
])  # fmt: skip
def test_the_next_word_predictor_on_odd_text(predictor, sentence, tokens):
    result = predictor.predict_json({"sentence": sentence})
    assert len(result["tokens"]) == len(result["next_words"]) == tokens
    assert all(numpy.isfinite(c["cosine"]) for row in result["next_words"] for c in row)


@pytest.mark.parametrize("bad", [{"sentence": 5}, {"sentence": None}, {"text": "x"}])
def test_the_next_word_predictor_names_bad_json(predictor, bad):
    with pytest.raises(ConfigurationError, match="sentence"):
        predictor.predict_json(bad)
