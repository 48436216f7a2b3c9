"""
`elmo_c_token_embedder` on an archive of every model the project trains (ELMo-C, each baseline
head, each ablation embedder, ELMo-Sub): it builds, indexes words with the biLM's own indexer,
and gives exactly the biLM's pretraining-time layers at the words' positions (boundaries added
as the pretraining reader adds them), from a task whose text field holds only those words.
"""

import json
from pathlib import Path

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.data import Batch, Instance, Token
from allennlp.data.fields import TextField
from allennlp.models.archival import load_archive

from allennlp_elmo_c.modules.subword_representations import is_subword_archive
from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.elmo_sub_helpers import bpe_environment, train_tiny_bpe

CONFIGS = ["elmo_c", "elmo_softmax", "elmo_sampled", "elmo_fixed", "elmo_a", "elmo_c_rnd",
           "elmo_c_cnn", "elmo_c_cnn_out", "elmo_slim", "elmo_slim_input", "elmo_sub"]  # fmt: skip
SENTENCES = [["the", "cat", "sat", "on", "the", "mat"], ["unseen", "wordz"], ["a"]]


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """name -> model.tar.gz, each fixture config trained for one epoch."""
    root = tmp_path_factory.mktemp("archives")
    environment = bpe_environment(train_tiny_bpe(root / "bpe"))
    trained = {}
    for name in CONFIGS:
        config = FIXTURES_ROOT / "configs" / f"{name}_tiny.jsonnet"
        if name == "elmo_c":
            config = FIXTURES_ROOT / "configs" / "elmo_c.jsonnet"
        if not config.is_file():
            continue
        params = Params.from_file(str(config), json.dumps({"trainer.num_epochs": 1}), environment)
        with _in(PROJECT_ROOT):
            train_model(params, str(root / name))
        trained[name] = root / name / "model.tar.gz"
    return trained


class _in:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __enter__(self):
        import os

        self.previous = os.getcwd()
        os.chdir(self.directory)

    def __exit__(self, *exc):
        import os

        os.chdir(self.previous)


def word_tensors(embedder: ElmoCTokenEmbedder, sentences):
    indexer = embedder._elmo_c.word_indexer()
    fields = [TextField([Token(w) for w in words], {"words": indexer}) for words in sentences]
    batch = Batch([Instance({"words": field}) for field in fields])
    batch.index_instances(embedder._elmo_c.vocab)
    return batch.as_tensor_dict()["words"]["words"]


def pretraining_layers(archive: Path, words):
    """The archived model's own layers for one sentence, read as in pretraining (boundaries by
    the reader): `(num_layers, len(words) + 2, dim)`."""
    loaded = load_archive(str(archive), overrides={"model.nearest_neighbour_words": None})
    model, reader = loaded.model.eval(), loaded.dataset_reader
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

    if name not in archives:
        pytest.skip(f"no fixture config for {name}")
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
    if name not in archives:
        pytest.skip(f"no fixture config for {name}")
    archive = archives[name]
    embedder = ElmoCTokenEmbedder(str(archive), dropout=0.0).eval()
    tensors = word_tensors(embedder, SENTENCES)
    output = embedder(**tensors)
    assert output.shape == (3, 6, embedder.get_output_dim())
    assert torch.isfinite(output).all()
    for row, words in enumerate(SENTENCES):
        assert not output[row, len(words) :].any()  # padding stays zero
    if is_subword_archive(str(archive)):
        return  # word positions are first subwords: tests/modules/test_subword_representations.py
    # Every layer the embedder mixes equals the pretraining-time layer, boundaries included.
    layers, mask = embedder._elmo_c.layers(**tensors)
    for row, words in enumerate(SENTENCES):
        expected = pretraining_layers(archive, words)
        actual = torch.stack([layer[row, : len(words) + 2] for layer in layers])
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
        assert mask[row].sum() == len(words) + 2
