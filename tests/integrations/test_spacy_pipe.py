"""
spaCy: the `elmo_c` component in a real (blank) `Language`, on a model directory moved after its
run and fastText file were deleted, no `ELMO_C_*` variable set.
"""
import os
import subprocess
import sys

import h5py
import numpy
import pytest
import spacy
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.elmo_c_embed import embed_file
from tests.helpers import without_elmo_c_variables

def clean_environment():
    return {name: value for name, value in os.environ.items() if not name.startswith("ELMO_C_")}


TEXTS = ["The bank raised its rates .", "We sat on the bank of the river .", ""]


@pytest.fixture
def nlp(model_directory, monkeypatch):
    directory, _ = model_directory
    without_elmo_c_variables(monkeypatch)
    pipeline = spacy.blank("en")
    pipeline.add_pipe("elmo_c", config={"model": str(directory), "batch_size": 2})
    return pipeline


def test_vectors_are_the_embed_commands(nlp, model_directory, tmp_path):
    directory, _ = model_directory
    docs = list(nlp.pipe(TEXTS))
    text = tmp_path / "tokens.txt"
    text.write_text("\n".join(" ".join(t.text for t in doc) for doc in docs) + "\n", encoding="utf-8")
    # One sentence per batch on both sides, on the device the pipe chose (the GPU when torch sees
    # one): the same padding, so the same numbers.
    single = [nlp(text) for text in TEXTS]
    cuda_device = nlp.get_pipe("elmo_c")._cuda_device()
    embed_file(directory, text, tmp_path / "out.hdf5", batch_size=1, cuda_device=cuda_device)
    with h5py.File(tmp_path / "out.hdf5", "r") as vectors:
        for index, doc in enumerate(single):
            expected = vectors[str(index)][()]  # (layers, tokens, dim)
            assert doc._.elmo_c_layers.shape == expected.shape
            numpy.testing.assert_allclose(doc._.elmo_c_layers, expected, atol=1e-6)
            numpy.testing.assert_allclose(doc.tensor, expected.mean(0), atol=1e-6)
    # Batched by nlp.pipe: the same vectors up to float32 rounding of the padded batch.
    for batched, alone in zip(docs, single):
        numpy.testing.assert_allclose(batched.tensor, alone.tensor, atol=1e-5)


def test_the_same_word_in_two_contexts(nlp):
    money, river = nlp(TEXTS[0]), nlp(TEXTS[1])
    first, second = money[1], river[4]
    assert first.text == second.text == "bank"
    assert first.has_vector and first.vector.shape == (16,)
    assert not numpy.allclose(first.vector, second.vector)
    numpy.testing.assert_allclose(money[1:3].vector, money.tensor[1:3].mean(0), rtol=1e-6)
    assert money.vector.shape == (16,)


def test_a_chosen_layer(model_directory, monkeypatch):
    directory, _ = model_directory
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(directory), "layer": -1})
    doc = nlp("The bank raised its rates .")
    numpy.testing.assert_array_equal(doc.tensor, doc._.elmo_c_layers[-1])
    nlp.replace_pipe("elmo_c", "elmo_c", config={"model": str(directory), "layer": 7})
    with pytest.raises(ConfigurationError, match="layer 7 does not exist"):
        nlp("The bank")


def test_to_disk_and_spacy_load(nlp, model_directory, tmp_path):
    directory, _ = model_directory
    before = nlp(TEXTS[0]).tensor
    nlp.to_disk(tmp_path / "pipeline")
    # The pipeline carries the model: it loads after the directory it was made from is gone.
    moved = tmp_path / "gone"
    directory.rename(moved)
    try:
        loaded = spacy.load(tmp_path / "pipeline")
        numpy.testing.assert_array_equal(loaded(TEXTS[0]).tensor, before)
        # In a fresh process that never imports allennlp_elmo_c: spaCy finds the factory by its
        # entry point.
        script = ("import spacy, sys; nlp = spacy.load(sys.argv[1]); "
                  "print(nlp('The bank').tensor.shape)")  # fmt: skip
        result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "pipeline")],
                                capture_output=True, text=True, env=clean_environment())  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == "(2, 16)"
    finally:
        moved.rename(directory)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_on_a_gpu(model_directory):
    directory, _ = model_directory
    cpu = spacy.blank("en")
    cpu.add_pipe("elmo_c", config={"model": str(directory), "device": "cpu"})
    gpu = spacy.blank("en")
    gpu.add_pipe("elmo_c", config={"model": str(directory), "device": "cuda"})
    numpy.testing.assert_allclose(gpu(TEXTS[0]).tensor, cpu(TEXTS[0]).tensor, atol=1e-5)


def test_missing_model_is_a_clear_error(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo_c", config={"model": str(tmp_path / "nowhere")})
    with pytest.raises(ConfigurationError, match="does not exist"):
        nlp("text")
