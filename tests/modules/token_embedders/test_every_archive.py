"""
`elmo_c_token_embedder` on an archive of every model the project trains (ELMo-C, each baseline
head, each ablation embedder, ELMo-Sub): it builds, indexes words with the biLM's own indexer,
and gives exactly the biLM's pretraining-time layers at the words' positions (boundaries added
as the pretraining reader adds them), from a task whose text field holds only those words.
"""

import contextlib
import json
from pathlib import Path

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch
from allennlp.models.archival import load_archive

from allennlp_elmo_c.archive import read_archive_config, representation_dim
from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.helpers import bpe_environment, train_tiny_bpe

CONFIGS = ["elmo_c", "elmo_softmax", "elmo_sampled", "elmo_fixed", "elmo_a", "elmo_c_rnd",
           "elmo_c_cnn", "elmo_c_cnn_out", "elmo_slim", "elmo_slim_input", "elmo_sub"]  # fmt: skip
SENTENCES = [["the", "cat", "sat", "on", "the", "mat"], ["unseen", "wordz"], ["a"]]


@pytest.fixture(scope="module")
def archives(tmp_path_factory, elmo_c_archive):
    """name -> model.tar.gz, each fixture config trained for one epoch (ELMo-C's is the
    session's `elmo_c_archive`)."""
    root = tmp_path_factory.mktemp("archives")
    environment = bpe_environment(train_tiny_bpe(root / "bpe"))
    trained = {"elmo_c": elmo_c_archive}
    for name in CONFIGS[1:]:
        config = FIXTURES_ROOT / "configs" / f"{name}_tiny.jsonnet"
        params = Params.from_file(str(config), json.dumps({"trainer.num_epochs": 1}), environment)
        with contextlib.chdir(PROJECT_ROOT):  # the configs' paths are relative to it
            train_model(params, str(root / name))
        trained[name] = root / name / "model.tar.gz"
    return trained


def word_tensors(embedder: ElmoCTokenEmbedder, sentences):
    representations = embedder.representations
    return index_sentences(sentences, representations.word_indexer(), representations.vocab)


def pretraining_layers(archive: Path, words, change=None):
    """The archived model's own layers for one sentence, read as in pretraining (boundaries by
    the reader): `(num_layers, len(words) + 2, dim)`; `change(model)` first if given."""
    loaded = load_archive(str(archive), overrides={"model.nearest_neighbour_words": None})
    model, reader = loaded.model.eval(), loaded.dataset_reader
    if change is not None:
        change(model)
    model._contextualizer.return_all_layers = True
    instance = reader.text_to_instance(words)
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(model.vocab)
    with torch.no_grad():
        return torch.stack(model(**batch.as_tensor_dict())["lm_embeddings"])[:, 0]


@pytest.mark.parametrize("name", CONFIGS)
def test_embed_command_on_every_archive(archives, name, tmp_path):
    import h5py

    from allennlp_elmo_c.commands.elmo_c_embed import embed_file

    source = tmp_path / "text.txt"
    source.write_text("\n".join(" ".join(words) for words in SENTENCES) + "\n")
    output = embed_file(archives[name], source, tmp_path / "out.hdf5", "all")
    embedder = ElmoCTokenEmbedder(str(archives[name]), dropout=0.0).eval()
    with h5py.File(output, "r") as out:
        for index, words in enumerate(SENTENCES):
            layers = out[str(index)][()]
            assert layers.shape == (embedder._elmo_c.num_layers, len(words), 16)
            # The embedder's equal-weight mix (untrained ScalarMix: mean x gamma 1) of them.
            expected = embedder(**word_tensors(embedder, [words]))[0].detach().numpy()
            assert abs(layers.mean(axis=0) - expected).max() < 1e-5


@pytest.mark.parametrize("name", CONFIGS)
def test_downstream_embedder_on_every_archive(archives, name):
    archive = archives[name]
    embedder = ElmoCTokenEmbedder(str(archive), dropout=0.0).eval()
    tensors = word_tensors(embedder, SENTENCES)
    output = embedder(**tensors)
    assert output.shape == (3, 6, embedder.get_output_dim())
    assert torch.isfinite(output).all()
    # The size read off the config alone (describe, the demo, quality.py) is the built one's.
    assert representation_dim(read_archive_config(str(archive))) == embedder.get_output_dim()
    for row, words in enumerate(SENTENCES):
        assert not output[row, len(words) :].any()  # padding stays zero
    # As a task model calls it: through a text field embedder (which passes the output of a
    # one-tensor indexer positionally).
    from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder

    through_field = BasicTextFieldEmbedder({"elmo": embedder})({"elmo": tensors})
    torch.testing.assert_close(through_field, output)
    if embedder._elmo_c.bilm.is_subword:
        return  # word positions are first subwords: tests/modules/test_subword_representations.py
    # Every layer the embedder mixes equals the pretraining-time layer, boundaries included.
    layers, mask = embedder._elmo_c.layers(**tensors)
    for row, words in enumerate(SENTENCES):
        expected = pretraining_layers(archive, words)
        actual = torch.stack([layer[row, : len(words) + 2] for layer in layers])
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
        assert mask[row].sum() == len(words) + 2


def with_fasttext_gone(archive: Path, directory: Path) -> Path:
    """A copy of `archive` whose config points at a fastText file that no longer exists."""
    import io
    import tarfile

    copy = directory / "moved_model.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(copy, "w:gz") as target:
        for member in source:
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name == "config.json":
                text = data.decode().replace("tests/fixtures/fasttext/tiny.bin", "/gone/tiny.bin")
                data = text.encode()
                member.size = len(data)
            target.addfile(member, io.BytesIO(data) if data is not None else None)
    return copy


@pytest.mark.parametrize("name", CONFIGS)
def test_fasttext_path_override_on_every_archive(archives, name, tmp_path):
    """An archive whose fastText file moved loads with `fasttext_path`, wherever the biLM reads
    fastText (input, target, a fastText-initialised output layer, indexers)."""
    import shutil

    from allennlp_elmo_c.archive import read_archive_config

    archive = archives[name]
    if "fasttext" not in json.dumps(read_archive_config(str(archive))):
        with pytest.raises(Exception, match="no fastText|BPE subword"):
            ElmoCTokenEmbedder(str(archive), fasttext_path=str(tmp_path / "x.bin"))
        return
    gone = with_fasttext_gone(archive, tmp_path)
    with pytest.raises(Exception, match="/gone/tiny.bin"):
        ElmoCTokenEmbedder(str(gone))
    moved = tmp_path / "moved.bin"
    shutil.copy(FIXTURES_ROOT / "fasttext" / "tiny.bin", moved)
    embedder = ElmoCTokenEmbedder(str(gone), fasttext_path=str(moved), dropout=0.0).eval()
    fasttext_users = [module for module in embedder.modules() if hasattr(module, "_fasttext")]
    assert {str(module._fasttext.path) for module in fasttext_users} <= {str(moved)}
    reference = ElmoCTokenEmbedder(str(archive), dropout=0.0).eval()
    tensors = word_tensors(reference, SENTENCES)
    torch.testing.assert_close(embedder(**tensors), reference(**tensors))


def test_fine_tuned_input_embedder_moves_the_boundary_vectors_too(archives):
    """With requires_grad, a trained input embedder (here slim) changes; `<S>` / `</S>` must
    follow it, as the pretraining reader's boundary tokens would."""
    archive = archives["elmo_slim_input"]

    def change(model):
        with torch.no_grad():
            for parameter in model._text_field_embedder.parameters():
                parameter.add_(0.5)

    embedder = ElmoCTokenEmbedder(str(archive), dropout=0.0, requires_grad=True).eval()
    change(embedder.representations.bilm.model)  # as an optimizer step would
    tensors = word_tensors(embedder, SENTENCES[:1])
    with torch.no_grad():
        layers, _ = embedder._elmo_c.layers(**tensors)
    expected = pretraining_layers(archive, SENTENCES[0], change)
    torch.testing.assert_close(torch.stack([layer[0] for layer in layers]), expected)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_biLM_is_rebuilt_from_the_task_record_without_its_archive(archives, name, tmp_path):
    # As a task archive loads after its biLM archive is deleted: the biLM is built from the
    # record in the task's vocabulary, the state dict brings its weights (including a trainable
    # input embedder's, whose boundary vectors must then be remade).
    import shutil

    from allennlp.data import Vocabulary

    archive = tmp_path / "model.tar.gz"
    shutil.copy(archives[name], archive)
    vocab = Vocabulary()
    trained = ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()
    inputs = word_tensors(trained, SENTENCES)
    expected = trained(**inputs)
    archive.unlink()
    rebuilt = ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()
    # Without weights until the load: the biLM's tensors are on meta, running it is refused.
    bilm = rebuilt.representations.bilm
    assert not bilm.has_weights
    assert all(tensor.is_meta for tensor in bilm.model.state_dict().values())
    with pytest.raises(ConfigurationError, match="record without weights"):
        rebuilt(**inputs)
    rebuilt.cpu()  # as load_archive moves the model before it loads the state dict
    assert rebuilt.load_state_dict(trained.state_dict()) == ([], [])
    assert bilm.has_weights
    assert {tensor.device.type for tensor in rebuilt.state_dict().values()} == {"cpu"}
    torch.testing.assert_close(rebuilt(**inputs), expected)
    original = trained.representations._boundaries
    if original is None:  # a subword biLM: its boundaries are subwords of the sentence
        assert trained.representations.bilm.is_subword
        return
    # The boundary vectors remade at the load are the original ones; a load into a biLM read
    # from its archive (the same weights) remakes the same vectors.
    torch.testing.assert_close(rebuilt.representations._boundaries, original, rtol=0, atol=0)
    trained.load_state_dict(trained.state_dict())
    assert trained.representations._boundaries is not original
    torch.testing.assert_close(trained.representations._boundaries, original, rtol=0, atol=0)
