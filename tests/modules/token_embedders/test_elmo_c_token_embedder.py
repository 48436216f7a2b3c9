import shutil

import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn import InitializerApplicator

from allennlp_elmo_c.modules.elmo_c import ElmoC
from allennlp_elmo_c.modules.token_embedders.elmo_c_token_embedder import ElmoCTokenEmbedder
from tests import FIXTURES_ROOT
from tests.helpers import fasttext_ids, moved_archive, train_tiny_elmo_c

TINY = str(FIXTURES_ROOT / "fasttext" / "tiny.bin")
SENTENCES = [["The", "council", "met", "on", "Friday", "."], ["Storms", "closed", "schools"]]


@pytest.fixture(scope="module", params=["fused", "reference"])
def archive(request, tmp_path_factory, elmo_c_archive):
    """A tiny ELMo-C archive trained for one epoch with each encoder backend."""
    if request.param == "fused":
        return str(elmo_c_archive)
    return str(train_tiny_elmo_c(tmp_path_factory.mktemp("elmo_c_reference"), "reference"))


def test_shapes_mask_and_determinism(archive):
    embedder = ElmoCTokenEmbedder(archive, dropout=0.5).eval()
    tensors = fasttext_ids(SENTENCES)
    first, second = embedder(**tensors), embedder(**tensors)
    assert first.shape == (2, 6, 16) and embedder.get_output_dim() == 16
    assert torch.equal(first, second)
    assert torch.all(first[1, 3:] == 0)  # padding
    # A sentence alone gives the same vectors as in a batch.
    alone = embedder(**fasttext_ids([SENTENCES[1]]))
    torch.testing.assert_close(alone[0], first[1, :3], atol=1e-5, rtol=1e-5)


def test_equals_the_pretraining_representations(archive):
    """With a fixed mix selecting one layer, the output is that layer of the biLM run on
    `<S> w1 .. wn </S>` exactly as during pretraining, without the boundary positions."""
    loaded = load_archive(archive, overrides={"model.contextualizer.return_all_layers": True})
    model, reader = loaded.model.eval(), loaded.dataset_reader
    instance = reader.text_to_instance(" ".join(SENTENCES[0]))
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(model.vocab)
    layers = model(**batch.as_tensor_dict())["lm_embeddings"]
    for layer in range(3):
        weights = [-9e10] * 3
        weights[layer] = 1.0
        representations = ElmoC(archive, 1, dropout=0.0, scalar_mix_parameters=weights)
        output = representations.eval()(**fasttext_ids([SENTENCES[0]]))["elmo_representations"][0]
        torch.testing.assert_close(output[0], layers[layer][0, 1:-1], atol=1e-5, rtol=1e-5)


def test_keep_sentence_boundaries_and_several_representations(archive):
    representations = ElmoC(
        archive, 2, keep_sentence_boundaries=True, dropout=0.0
    ).eval()
    output = representations(**fasttext_ids(SENTENCES))
    assert len(output["elmo_representations"]) == 2
    assert output["elmo_representations"][0].shape == (2, 8, 16)
    assert output["mask"].sum(1).tolist() == [8, 5]


def test_requires_grad_and_scalar_mix_names(archive):
    frozen = ElmoCTokenEmbedder(archive)
    trainable = {name for name, p in frozen.named_parameters() if p.requires_grad}
    assert trainable and all("scalar_mixes" in name for name in trainable)
    assert any("scalar_parameters" in name for name in trainable)
    tuned = ElmoCTokenEmbedder(archive, requires_grad=True)
    assert all(p.requires_grad for p in tuned.parameters())
    tuned(**fasttext_ids(SENTENCES)).sum().backward()
    assert all(p.grad is not None for p in tuned.parameters())


def test_task_initializer_regexes_do_not_touch_the_bilm(archive):
    # ESIM's initializer (allennlp-models training_config/pair_classification/esim.jsonnet).
    applicator = InitializerApplicator(
        regexes=[
            (".*linear_layers.*weight", {"type": "xavier_uniform"}),
            (".*linear_layers.*bias", {"type": "constant", "val": 0}),
            (".*weight_ih.*", {"type": "xavier_uniform"}),
            (".*weight_hh.*", {"type": "orthogonal"}),
            (".*bias_ih.*", {"type": "zero"}),
            (".*bias_hh.*", {"type": "lstm_hidden_bias"}),
        ]
    )
    embedder = ElmoCTokenEmbedder(archive)
    before = {name: p.detach().clone() for name, p in embedder.named_parameters()}
    applicator(embedder)
    for name, parameter in embedder.named_parameters():
        assert torch.equal(parameter, before[name]), name


def test_from_params_and_projection(archive):
    embedder = TokenEmbedder.from_params(
        Params({"type": "elmo_c_token_embedder", "archive_file": archive, "projection_dim": 5})
    )
    assert embedder.get_output_dim() == 5
    assert embedder(**fasttext_ids(SENTENCES)).shape == (2, 6, 5)


def test_fasttext_path_override(archive, tmp_path):
    moved = tmp_path / "moved.bin"
    shutil.copy(TINY, moved)
    embedder = ElmoCTokenEmbedder(archive, fasttext_path=str(moved)).eval()
    reference = ElmoCTokenEmbedder(archive).eval()
    torch.testing.assert_close(embedder(**fasttext_ids(SENTENCES)), reference(**fasttext_ids(SENTENCES)))


def test_expected_output_dim(elmo_c_archive):
    # The fixture biLM is 16-d (2 x projection 8); num_output_representations and projection_dim
    # do not change what expected_output_dim describes.
    embedder = ElmoCTokenEmbedder(
        str(elmo_c_archive), expected_output_dim=16, num_output_representations=2, projection_dim=5
    )
    assert embedder.get_output_dim() == 5
    with pytest.raises(ConfigurationError) as error:
        ElmoCTokenEmbedder(str(elmo_c_archive), expected_output_dim=1024)
    message = str(error.value)
    assert "outputs 16-d" in message and "expects 1024-d" in message
    assert "ELMO_C_DIM=16" in message and "expected_output_dim" in message


def test_missing_and_corrupt_archives(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        ElmoCTokenEmbedder(str(tmp_path / "nope.tar.gz"))
    corrupt = tmp_path / "model.tar.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    with pytest.raises(ConfigurationError, match="not a readable model.tar.gz"):
        ElmoCTokenEmbedder(str(corrupt))


def test_fasttext_of_the_wrong_dimension(archive, tmp_path):
    from tests.helpers import train_small_fasttext

    other = train_small_fasttext(tmp_path, dim=8, bucket=20_000)
    with pytest.raises(ConfigurationError, match="does not match|dimension|not the one this model was trained with"):
        ElmoCTokenEmbedder(archive, fasttext_path=str(other))


def test_frozen_bilm_runs_in_inference_mode_even_when_training(archive):
    embedder = ElmoCTokenEmbedder(archive, dropout=0.0).train()
    tensors = fasttext_ids(SENTENCES)
    assert torch.equal(embedder(**tensors), embedder(**tensors))  # no recurrent dropout
    tuned = ElmoCTokenEmbedder(archive, dropout=0.0, requires_grad=True).train()
    assert tuned._elmo_c._lm.training


def test_archive_with_a_candidate_word_list_loads_without_it(archive, tmp_path):
    # The fixture archive was trained with nearest_neighbour_words; no loader reads the list, so
    # a missing file does not matter (e.g. the archive was moved to another machine).
    from allennlp.models.archival import load_archive

    from allennlp_elmo_c.archive import read_archive_config

    assert read_archive_config(archive)["model"]["nearest_neighbour_words"]
    assert "nearest_neighbour_words" not in load_archive(archive).config.as_dict(quiet=True)["model"]
    assert ElmoC(archive, 1)._lm.candidate_words is None


def test_several_output_representations_are_concatenated(archive):
    weights = [[1.0, -9e10, -9e10], [-9e10, -9e10, 1.0]]
    single = [
        ElmoCTokenEmbedder(archive, dropout=0.0, scalar_mix_parameters=w).eval() for w in weights
    ]
    double = ElmoCTokenEmbedder(archive, dropout=0.0, num_output_representations=2).eval()
    assert double.get_output_dim() == 32
    for k, mix in enumerate(double._elmo_c._scalar_mixes):  # give each mix a known weighting
        mix.scalar_parameters.load_state_dict(
            single[k]._elmo_c._scalar_mixes[0].scalar_parameters.state_dict()
        )
    tensors = fasttext_ids(SENTENCES)
    output = double(**tensors)
    assert output.shape == (2, 6, 32)
    torch.testing.assert_close(output[..., :16], single[0](**tensors))
    torch.testing.assert_close(output[..., 16:], single[1](**tensors))
    with pytest.raises(ConfigurationError):
        ElmoCTokenEmbedder(archive, num_output_representations=0)


def test_the_archive_is_read_once_and_the_bilm_can_be_passed_in(archive, monkeypatch):
    import tarfile

    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    opened = []
    real_open = tarfile.open

    def counting_open(*args, **kwargs):
        opened.append(args[0] if args else kwargs.get("name"))
        return real_open(*args, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting_open)
    embedder = ElmoCTokenEmbedder(archive, dropout=0.0).eval()
    assert len(opened) == 1
    monkeypatch.setattr(tarfile, "open", real_open)

    bilm = PretrainedBiLM.from_archive(archive)
    assert bilm.num_layers == 3 and bilm.get_output_dim() == 16
    assert bilm.fasttext_path.endswith("tiny.bin")
    given = ElmoC(None, 1, module=bilm, dropout=0.0, scalar_mix_parameters=[0.0, 0.0, 0.0])
    read = ElmoC(archive, 1, dropout=0.0, scalar_mix_parameters=[0.0, 0.0, 0.0])
    tensors = fasttext_ids(SENTENCES)
    torch.testing.assert_close(
        given.eval()(**tensors)["elmo_representations"][0],
        read.eval()(**tensors)["elmo_representations"][0],
    )
    assert embedder.representations.word_indexer() is embedder.representations.bilm.token_indexer
    with pytest.raises(ConfigurationError, match="not both"):
        ElmoC(archive, 1, module=bilm)
    with pytest.raises(ConfigurationError, match="not both"):
        ElmoC(None, 1)


@pytest.fixture(scope="module")
def other_fasttext(tmp_path_factory):
    """16-d fastText models other than the biLM's tiny.bin (10,000 buckets): one with fewer
    rows (5,000 buckets), one with more (20,000)."""
    from tests.helpers import train_small_fasttext

    return {
        rows: train_small_fasttext(tmp_path_factory.mktemp(rows), dim=16, bucket=bucket)
        for rows, bucket in (("fewer", 5_000), ("more", 20_000))
    }


@pytest.mark.parametrize("rows", ["fewer", "more"])
def test_an_indexer_over_another_fasttext_model_is_refused(elmo_c_archive, other_fasttext, rows):
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
    from allennlp_elmo_c.modules.elmo_c import index_sentences

    other = other_fasttext[rows]
    embedder = ElmoCTokenEmbedder(str(elmo_c_archive), dropout=0.0).eval()
    inputs = index_sentences(SENTENCES, FastTextSubwordsIndexer(str(other)))
    with pytest.raises(ConfigurationError) as error:
        embedder(**inputs)
    assert str(other) in str(error.value) and "tiny.bin" in str(error.value)
    assert "archive_file" in str(error.value)
    # The biLM's own model, from the archive, is accepted.
    own = index_sentences(SENTENCES, FastTextSubwordsIndexer(archive_file=str(elmo_c_archive)))
    assert embedder(**own).shape == (2, 6, 16)


def test_another_indexer_under_the_embedders_key_names_the_right_one(elmo_c_archive):
    from allennlp.data.token_indexers import ELMoTokenCharactersIndexer
    from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder

    from allennlp_elmo_c.modules.elmo_c import index_sentences

    token_embedder = ElmoCTokenEmbedder(str(elmo_c_archive))
    embedder = BasicTextFieldEmbedder({"elmo": token_embedder})
    inputs = index_sentences(SENTENCES, ELMoTokenCharactersIndexer())
    with pytest.raises(ConfigurationError, match="fasttext_subwords', archive_file"):
        embedder({"elmo": inputs})
    # After batches of the right indexer too (every batch is checked, not only the first).
    token_embedder(**index_sentences(SENTENCES, token_embedder.representations.word_indexer()))
    with pytest.raises(ConfigurationError, match="fasttext_subwords', archive_file"):
        embedder({"elmo": inputs})


def test_fasttext_resolution_order(elmo_c_archive, tmp_path, monkeypatch):
    # Training records the absolute path: the moved archive loads from another directory.
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ELMO_C_FASTTEXT", raising=False)
    recorded = moved_archive(elmo_c_archive, tmp_path / "recorded")
    assert PretrainedBiLM.from_archive(str(recorded)).fasttext_path == str(FIXTURES_ROOT / "fasttext" / "tiny.bin")
    # An archive recording tests/fixtures/fasttext/tiny.bin relative to the project (as before
    # #18): from another directory it is missing.
    moved = tmp_path / "moved"
    archive = moved_archive(elmo_c_archive, moved, relative=True)
    with pytest.raises(ConfigurationError) as error:
        PretrainedBiLM.from_archive(str(archive))
    for tried in ("ELMO_C_FASTTEXT", "fasttext_path", "--fasttext-path", str(moved / "tiny.bin")):
        assert tried in str(error.value)
    elsewhere = tmp_path / "elsewhere.bin"
    shutil.copy(TINY, elsewhere)
    monkeypatch.setenv("ELMO_C_FASTTEXT", str(elsewhere))
    assert PretrainedBiLM.from_archive(str(archive)).fasttext_path == str(elsewhere.resolve())
    monkeypatch.delenv("ELMO_C_FASTTEXT")
    shutil.copy(TINY, moved / "tiny.bin")  # beside the archive, under the recorded name
    assert PretrainedBiLM.from_archive(str(archive)).fasttext_path == str(moved / "tiny.bin")
    # An explicit path comes first; the indexer built from the archive finds the same file.
    bilm = PretrainedBiLM.from_archive(str(archive), fasttext_path=str(elsewhere))
    assert bilm.fasttext_path == str(elsewhere.resolve())
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer

    assert FastTextSubwordsIndexer(archive_file=str(archive)).model_path == str(moved / "tiny.bin")


def test_a_biLM_built_from_the_task_vocabulary_needs_the_task_weights(elmo_c_archive, tmp_path):
    from allennlp.data import Vocabulary

    archive = tmp_path / "model.tar.gz"
    shutil.copy(elmo_c_archive, archive)
    vocab = Vocabulary()
    trained = ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()
    archive.unlink()
    with pytest.raises(ConfigurationError, match="does not exist"):
        ElmoCTokenEmbedder(str(archive), vocab=Vocabulary())  # no record: nothing to build from
    rebuilt = ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()
    inputs = fasttext_ids(SENTENCES)
    with pytest.raises(ConfigurationError, match="without weights"):
        rebuilt(**inputs)
    rebuilt.load_state_dict(trained.state_dict())
    torch.testing.assert_close(rebuilt(**inputs), trained(**inputs))


def rebuilt_without_its_archive(elmo_c_archive, tmp_path):
    """An embedder over a copy of the archive, and one built, as a task model's is, from the
    record the first left in the task vocabulary once the copy is deleted."""
    from allennlp.data import Vocabulary

    archive = tmp_path / "model.tar.gz"
    shutil.copy(elmo_c_archive, archive)
    vocab = Vocabulary()
    trained = ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()
    archive.unlink()
    return trained, ElmoCTokenEmbedder(str(archive), dropout=0.0, vocab=vocab).eval()


def test_copying_into_a_meta_tensor_is_a_silent_no_op():
    # Why the record-built biLM is given storage before a load: load_state_dict without assign
    # (as AllenNLP's load_archive calls it) copies into the existing tensors, and a meta one
    # takes nothing, with no error.
    with torch.device("meta"):
        meta = torch.nn.Linear(2, 3)
    with pytest.warns(UserWarning, match="no-op"):
        result = meta.load_state_dict(torch.nn.Linear(2, 3).state_dict())
    assert not result.missing_keys and not result.unexpected_keys and meta.weight.is_meta


def test_a_load_without_the_biLM_weights_leaves_it_without_weights(elmo_c_archive, tmp_path):
    trained, rebuilt = rebuilt_without_its_archive(elmo_c_archive, tmp_path)
    others = {key: value for key, value in trained.state_dict().items() if "._lm." not in key}
    rebuilt.load_state_dict(others, strict=False)  # the mixes only
    assert not rebuilt.representations.bilm.has_weights
    with pytest.raises(ConfigurationError, match="load that task model's state dict"):
        rebuilt(**fasttext_ids(SENTENCES))


def test_a_dtype_conversion_before_the_load_applies_to_the_biLM(elmo_c_archive, tmp_path):
    trained, rebuilt = rebuilt_without_its_archive(elmo_c_archive, tmp_path)
    rebuilt.double()
    bilm = rebuilt.representations.bilm.model
    assert {(tensor.device.type, tensor.dtype) for tensor in bilm.parameters()} == {
        ("meta", torch.float64)
    }
    rebuilt.load_state_dict(trained.state_dict())
    assert {(tensor.device.type, tensor.dtype) for tensor in bilm.parameters()} == {
        ("cpu", torch.float64)
    }
    expected = trained.double().state_dict()
    for key, value in rebuilt.state_dict().items():
        torch.testing.assert_close(value, expected[key], rtol=0, atol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_the_biLM_weights_go_to_the_device_the_model_was_moved_to(elmo_c_archive, tmp_path):
    # As load_archive(cuda_device=0): the model is moved, then a state dict (here on the CPU)
    # is loaded; the biLM's storage is made on the GPU, with the rest of the embedder.
    trained, rebuilt = rebuilt_without_its_archive(elmo_c_archive, tmp_path)
    rebuilt.cuda()
    rebuilt.load_state_dict(trained.state_dict())
    assert {tensor.device.type for tensor in rebuilt.state_dict().values()} == {"cuda"}
    inputs = fasttext_ids(SENTENCES)
    expected = trained(**inputs)
    output = rebuilt(**{key: value.cuda() for key, value in inputs.items()})
    torch.testing.assert_close(output.cpu(), expected, atol=1e-5, rtol=1e-5)
