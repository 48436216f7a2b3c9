"""
Flair: `ElmoCEmbeddings` against the real Flair (flair 0.15.1, pinned), on the tiny trained biLMs
(a model directory moved after its run and fastText file were deleted, and an archive), no
`ELMO_C_*` variable set: its vectors are `ElmoCEmbedder`'s, it trains in a `SequenceTagger`
stacked with word embeddings, and the tagger is saved and loaded.
"""

import pickle
import shutil
import subprocess
import sys

import numpy
import pytest
import torch
from flair.data import Corpus, Sentence
from flair.embeddings import OneHotEmbeddings, StackedEmbeddings
from flair.models import SequenceTagger
from flair.trainers import ModelTrainer

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c import ElmoCEmbedder
from allennlp_elmo_c.commands.package import package_model
from allennlp_elmo_c.integrations.flair import ElmoCEmbeddings, weights_fingerprint
from tests import PROJECT_ROOT
from tests.helpers import RECEIVED_MODEL_DOORS, doc_blocks, outcome, without_elmo_c_variables

WORDS = ["The", "bank", "raised", "its", "rates", "."]
TRAIN = [
    ("The council met on Friday .", [(1, 2, "ORG")]),
    ("We sat by the river bank .", [(4, 6, "LOC")]),
    ("The bank of England met .", [(1, 2, "ORG"), (3, 4, "LOC")]),
]


@pytest.fixture
def bilm(model_directory, tmp_path, monkeypatch):
    """A copy of the packaged biLM, that a test may delete or change."""
    without_elmo_c_variables(monkeypatch)
    target = tmp_path / "my-elmo-c"
    shutil.copytree(model_directory[0], target)
    return target


def labelled():
    sentences = []
    for text, spans in TRAIN:
        sentence = Sentence(text.split())
        for start, end, tag in spans:
            sentence[start:end].add_label("ner", tag)
        sentences.append(sentence)
    return sentences


def corpus() -> Corpus:
    return Corpus(train=labelled(), dev=labelled()[:1], test=labelled()[1:2], sample_missing_splits=False)


def tagger_on(embeddings: ElmoCEmbeddings, data: Corpus) -> SequenceTagger:
    # ELMo-C first: a token's vectors are concatenated in the order of their names, and Flair's
    # OneHotEmbeddings does not save its name (StackedEmbeddings' "1-" is lost on loading).
    words = OneHotEmbeddings.from_corpus(data, embedding_length=4, min_freq=1)
    stacked = StackedEmbeddings([embeddings, words])
    tags = data.make_label_dictionary("ner", add_unk=False)
    return SequenceTagger(hidden_size=8, embeddings=stacked, tag_dictionary=tags, tag_type="ner")


def tagged(tagger: SequenceTagger, text: str):
    """The tagger's spans for `text`, and each token's scores of every tag."""
    sentence = Sentence(text.split())
    tagger.predict(sentence, return_probabilities_for_all_classes=True)
    spans = [(span.text, span.tag) for span in sentence.get_spans("ner")]
    scores = [[(label.value, label.score) for label in token.get_tags_proba_dist("ner")] for token in sentence]
    assert all(scores), "no tag scores"
    return spans, scores


def flair_vectors(embeddings: ElmoCEmbeddings, words) -> numpy.ndarray:
    sentence = Sentence(list(words))
    with torch.no_grad():
        embeddings.embed(sentence)
    return numpy.stack([token.get_embedding([embeddings.name]).cpu().numpy() for token in sentence])


def test_each_mode_is_the_embedders_layers(bilm):
    layers = ElmoCEmbedder(str(bilm)).embed_sentence(WORDS)  # (3, 6, 16)
    expected = {
        "all": numpy.concatenate(list(layers), axis=-1),
        "top": layers[-1],
        "average": layers.mean(0),
        "mix": layers.mean(0),  # the mix starts as the average
    }
    for mode, vectors in expected.items():
        embeddings = ElmoCEmbeddings(str(bilm), embedding_mode=mode)
        assert embeddings.embedding_length == vectors.shape[-1] == (48 if mode == "all" else 16)
        numpy.testing.assert_allclose(flair_vectors(embeddings, WORDS), vectors, atol=1e-6)
    mix = ElmoCEmbeddings(str(bilm), embedding_mode="mix", fine_tune=True)
    with torch.no_grad():
        for parameter, value in zip(mix.scalar_mix.scalar_parameters, [1.0, -1.0, 2.0]):
            parameter.fill_(value)
        mix.scalar_mix.gamma.fill_(0.5)
    weights = numpy.exp([1.0, -1.0, 2.0]) / numpy.exp([1.0, -1.0, 2.0]).sum()
    numpy.testing.assert_allclose(
        flair_vectors(mix, WORDS), 0.5 * numpy.einsum("l,ltd->td", weights, layers), atol=1e-6
    )


def test_only_a_fine_tuned_mix_trains(bilm):
    assert not any(p.requires_grad for p in ElmoCEmbeddings(str(bilm), "mix").parameters())
    assert list(ElmoCEmbeddings(str(bilm), "all").parameters()) == []
    tuned = ElmoCEmbeddings(str(bilm), "mix", fine_tune=True)
    assert [p.requires_grad for p in tuned.parameters()] == [True] * 4  # three weights and gamma
    assert not any(p.requires_grad for p in tuned.embedder.representations.parameters())
    with pytest.raises(ConfigurationError, match="fine_tune trains the scalar mix"):
        ElmoCEmbeddings(str(bilm), "top", fine_tune=True)
    with pytest.raises(ConfigurationError, match="embedding_mode must be one of"):
        ElmoCEmbeddings(str(bilm), "last")


def test_a_fine_tuned_mix_is_computed_again_on_every_embed(bilm):
    sentence = Sentence(list(WORDS))
    frozen = ElmoCEmbeddings(str(bilm), "mix")
    frozen.embed(sentence)
    kept = sentence[0].get_embedding([frozen.name])
    frozen.embed(sentence)  # static: the stored vectors are kept
    assert sentence[0].get_embedding([frozen.name]) is kept
    tuned = ElmoCEmbeddings(str(bilm), "mix", fine_tune=True)
    tuned.embed(sentence)
    first = sentence[0].get_embedding([tuned.name]).detach().clone()
    with torch.no_grad():
        tuned.scalar_mix.gamma.fill_(3.0)
    tuned.embed(sentence)  # a trained mix's vectors are never taken from the tokens
    torch.testing.assert_close(sentence[0].get_embedding([tuned.name]).detach(), 3.0 * first)


def test_a_stacked_tagger_trains_saves_loads_and_tags_the_same(bilm, tmp_path):
    data = corpus()
    embeddings = ElmoCEmbeddings(str(bilm), embedding_mode="mix", fine_tune=True)
    tagger = tagger_on(embeddings, data)
    start = [p.detach().clone() for p in embeddings.scalar_mix.parameters()]
    ModelTrainer(tagger, data).train(
        tmp_path / "tagger", max_epochs=1, mini_batch_size=2, learning_rate=0.5,
        save_final_model=False, create_file_logs=False, create_loss_file=False,
    )  # fmt: skip
    trained = [p.detach().clone() for p in embeddings.scalar_mix.parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(start, trained)), "the mix did not train"
    before = tagged(tagger, "The bank met by the river .")
    tagger.save(tmp_path / "tagger.pt")
    loaded = SequenceTagger.load(tmp_path / "tagger.pt")
    after = tagged(loaded, "The bank met by the river .")
    assert after[0] == before[0]
    assert [[tag for tag, _ in token] for token in after[1]] == [[tag for tag, _ in token] for token in before[1]]
    numpy.testing.assert_allclose(
        [[score for _, score in token] for token in after[1]],
        [[score for _, score in token] for token in before[1]],
        rtol=1e-5,
    )
    reloaded = loaded.embeddings.list_embedding_0
    assert isinstance(reloaded, ElmoCEmbeddings) and reloaded.model == str(bilm)
    for a, b in zip(reloaded.scalar_mix.parameters(), trained):
        torch.testing.assert_close(a, b)


def test_a_saved_tagger_whose_bilm_is_gone_names_the_path(bilm, tmp_path):
    tagger_on(ElmoCEmbeddings(str(bilm), "top"), corpus()).save(tmp_path / "tagger.pt")
    shutil.rmtree(bilm)
    with pytest.raises(ConfigurationError) as error:
        SequenceTagger.load(tmp_path / "tagger.pt")
    message = str(error.value)
    assert f"the ELMo-C biLM {bilm} does not exist" in message and "\n" not in message


def test_a_saved_tagger_refuses_another_bilm_at_its_path(bilm, tmp_path):
    tagger_on(ElmoCEmbeddings(str(bilm), "average"), corpus()).save(tmp_path / "tagger.pt")
    state = torch.load(tmp_path / "tagger.pt", weights_only=False)
    (recorded, _) = state["embeddings"]["embeddings"]
    assert recorded["fingerprint"] == weights_fingerprint(ElmoCEmbedder(str(bilm)))
    recorded["fingerprint"] = "0" * 64  # what a tagger trained with another biLM recorded
    with pytest.raises(ConfigurationError, match="is not the biLM this embedding was built with"):
        SequenceTagger.load(state)


def test_the_fingerprint_is_the_weights_whatever_the_form(elmo_c_archive, tmp_path):
    directory = package_model(str(elmo_c_archive), str(tmp_path / "packaged"))
    archive, packaged = ElmoCEmbeddings(str(elmo_c_archive)), ElmoCEmbeddings(str(directory))
    assert archive.fingerprint == packaged.fingerprint
    numpy.testing.assert_array_equal(flair_vectors(archive, WORDS), flair_vectors(packaged, WORDS))


def test_pickling_keeps_the_path_and_reads_the_bilm_again(bilm):
    embeddings = ElmoCEmbeddings(str(bilm), "all")
    data = pickle.dumps(embeddings)
    assert len(data) < 20_000  # the path and settings, not the biLM
    copy = pickle.loads(data)
    assert copy.embedder is not embeddings.embedder
    numpy.testing.assert_array_equal(flair_vectors(copy, WORDS), flair_vectors(embeddings, WORDS))


def test_a_tampered_received_model_is_refused_as_through_elmo_c(bilm, tmp_path):
    weights = bilm / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:-8] + bytes(1 if byte == 0 else 0 for byte in data[-8:]))  # still loads
    through_flair = outcome(lambda: RECEIVED_MODEL_DOORS["Flair"](bilm, tmp_path))
    through_elmo_c = outcome(lambda: RECEIVED_MODEL_DOORS["ElmoC"](bilm, tmp_path))
    assert isinstance(through_flair, ConfigurationError), through_flair
    assert str(through_flair) == str(through_elmo_c)
    assert "model.safetensors does not match its checksum" in str(through_flair)


def test_importing_the_package_does_not_import_flair(tmp_path):
    """Only `allennlp_elmo_c.integrations.flair` imports Flair; importing it leaves the logging
    handlers open (an AllenNLP run's `out.log`); without Flair it is an error naming the fix."""
    code = (
        "import logging, sys, allennlp_elmo_c, allennlp_elmo_c.integrations\n"
        "assert 'flair' not in sys.modules, 'flair imported'\n"
        f"handler = logging.FileHandler({str(tmp_path / 'out.log')!r})\n"
        "logging.getLogger().addHandler(handler)\n"
        "import allennlp_elmo_c.integrations.flair\n"
        "assert 'flair' in sys.modules and handler.stream is not None, 'the handler was closed'\n"
        "del sys.modules['allennlp_elmo_c.integrations.flair']\n"
        "sys.modules['flair'] = None  # as if Flair were not installed\n"
        "try:\n"
        "    import allennlp_elmo_c.integrations.flair\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "needs Flair" in result.stdout and "make install" in result.stdout


def test_the_docs_flair_block_runs(bilm, tmp_path, monkeypatch):
    """docs/using-a-model.md's Flair block, on the model directory `my-elmo-c` and this module's
    corpus and word embeddings."""
    (block,) = doc_blocks("flair")
    assert block.file == "docs/using-a-model.md" and block.language == "python"
    monkeypatch.chdir(tmp_path)
    data = corpus()
    namespace = {
        "corpus": data,
        "words": OneHotEmbeddings.from_corpus(data, embedding_length=4, min_freq=1),
    }
    exec(block.code.replace("max_epochs=10", "max_epochs=1"), namespace)
    tagger = namespace["tagger"]
    assert isinstance(tagger.embeddings.list_embedding_0, ElmoCEmbeddings)
    assert tagger.embeddings.list_embedding_0.model == str(bilm)  # absolute: found from anywhere
    assert tagged(tagger, "The bank met .")
