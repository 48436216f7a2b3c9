"""
Models made before received models were treated as untrusted still load: the fixtures in
tests/fixtures/legacy_models/ (a biLM archive, the model directory `package` made of it, a task
archive and a spaCy pipeline, all made by the code of commit 9a49d65; README.md there) go
through their documented front doors and give, within float tolerance, the numbers that code
gave (reference.json), so a loader that refuses them or silently builds another model fails here.

Each test reads a copy of the fixtures in a temporary directory (loading must write nothing into
the repository), with no `ELMO_C_*` variable set.
"""

import json
import shutil
from pathlib import Path

import numpy
import pytest
import torch

from tests import FIXTURES_ROOT
from tests.helpers import without_elmo_c_variables

LEGACY = FIXTURES_ROOT / "legacy_models"
REFERENCE = json.loads((LEGACY / "reference.json").read_text(encoding="utf-8"))
SENTENCES = REFERENCE["sentences"]
FASTTEXT = "legacy.bin"  # the biLM's fastText model, in package/; the name the archive records
DIM = 16  # the biLM's output size (2 x projection 8)


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> Path:
    """The fixtures copied to a new place, the fastText `.bin` beside the biLM archive under its
    recorded name, as a received archive is used (the path it records does not exist)."""
    root = tmp_path_factory.mktemp("received") / "legacy_models"
    shutil.copytree(LEGACY, root)
    shutil.copyfile(root / "package" / FASTTEXT, root / "bilm" / FASTTEXT)
    return root


@pytest.fixture(autouse=True)
def no_variables(monkeypatch):
    without_elmo_c_variables(monkeypatch)


def assert_reference(actual, reference: dict) -> None:
    """`actual` is finite, of the recorded shape, and equal to the recorded values."""
    array = actual.detach().cpu().numpy() if isinstance(actual, torch.Tensor) else numpy.asarray(actual)
    assert list(array.shape) == reference["shape"]
    assert numpy.isfinite(array).all()
    expected = numpy.asarray(reference["values"], dtype=numpy.float64).reshape(reference["shape"])
    numpy.testing.assert_allclose(array, expected, rtol=1e-4, atol=1e-5)


def test_the_fixtures_are_regular_files_and_small():
    paths = list(LEGACY.rglob("*"))
    assert not [path for path in paths if path.is_symlink()]
    assert sum(path.stat().st_size for path in paths if path.is_file()) < 1_000_000
    for part in ("bilm/model.tar.gz", "package/config.json", "task/model.tar.gz", "spacy_pipeline/meta.json"):
        assert (LEGACY / part).is_file(), part


def test_bilm_archive_through_elmo_c(received):
    from allennlp_elmo_c import ElmoC, batch_to_ids

    elmo = ElmoC(str(received / "bilm" / "model.tar.gz"), 1, dropout=0.0).eval()
    assert elmo.get_output_dim() == DIM and elmo.num_layers == 3
    with torch.no_grad():
        output = elmo(batch_to_ids(SENTENCES, elmo))
    assert output["mask"].tolist() == [[True] * 6, [True] * 3 + [False] * 3, [True] * 3 + [False] * 3]
    assert_reference(output["elmo_representations"][0], REFERENCE["elmo_c"])


def test_package_through_elmo_c_embedder(received):
    from allennlp_elmo_c import ElmoCEmbedder

    layers = ElmoCEmbedder(str(received / "package")).embed_batch(SENTENCES)
    assert len(layers) == len(REFERENCE["embedder"]) == len(SENTENCES)
    for actual, reference in zip(layers, REFERENCE["embedder"]):
        assert_reference(actual, reference)


def test_package_through_pretrained_bilm(received):
    """The directory's biLM is the archive's: `ElmoC` on it (`module=`) gives the archive's mix."""
    from allennlp_elmo_c import ElmoC, batch_to_ids
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    bilm = PretrainedBiLM.from_archive(str(received / "package"))
    assert bilm.num_layers == 3 and bilm.get_output_dim() == DIM
    assert Path(bilm.fasttext_path).resolve() == (received / "package" / FASTTEXT).resolve()
    elmo = ElmoC(None, 1, dropout=0.0, module=bilm).eval()
    with torch.no_grad():
        mixed = elmo(batch_to_ids(SENTENCES, elmo))["elmo_representations"][0]
    assert_reference(mixed, REFERENCE["elmo_c"])


def test_task_archive_through_load_archive(received):
    """The biLM archive and fastText file the task archive records are gone: its bundled `.bin`
    and biLM record carry it."""
    import allennlp_models.tagging  # noqa: F401  (crf_tagger, the conll2003 reader)
    from allennlp.data import Token
    from allennlp.models.archival import load_archive

    archive = load_archive(str(received / "task" / "model.tar.gz"))
    instance = archive.dataset_reader.text_to_instance([Token(w) for w in REFERENCE["task_words"]])
    archive.dataset_reader.apply_token_indexers(instance)
    prediction = archive.model.eval().forward_on_instance(instance)
    assert prediction["tags"] == REFERENCE["task"]["tags"]
    assert_reference(prediction["logits"], REFERENCE["task"])


def test_spacy_pipeline_through_spacy_load(received):
    import spacy

    doc = spacy.load(received / "spacy_pipeline")(REFERENCE["spacy_text"])
    assert doc._.elmo_c_layers.shape == (3, len(doc), DIM)
    assert_reference(doc.tensor, REFERENCE["spacy"])
    numpy.testing.assert_allclose(doc[1].vector, doc.tensor[1])


def test_package_through_hugging_face(received):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(received / "package"))
    tokenizer = AutoTokenizer.from_pretrained(str(received / "package"))
    with torch.no_grad():
        output = model(**tokenizer(SENTENCES, is_split_into_words=True), output_hidden_states=True)
    assert len(output.hidden_states) == 3
    assert_reference(output.last_hidden_state, REFERENCE["huggingface"])
