import pytest
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch
from allennlp.models.archival import load_archive

from allennlp_elmo_c.data.token_indexers.bpe_first_subword import BpeFirstSubwordIndexer
from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
from allennlp_elmo_c.modules.elmo_c import ElmoC, index_sentences
from tests.helpers import train_tiny_elmo_sub

SENTENCES = [["Storms", "closed", "schools", "on", "Friday", "."], ["The", "council", "met"]]


@pytest.fixture(scope="module")
def archive(bpe, tmp_path_factory):
    return str(train_tiny_elmo_sub(tmp_path_factory.mktemp("elmo_sub"), bpe))


@pytest.fixture(scope="module")
def indexer(bpe, archive):
    # The vocabulary read from the archive itself.
    return BpeFirstSubwordIndexer(str(bpe / "tokenizer.json"), archive)


def indexed(sentences, indexer):
    return index_sentences(sentences, indexer)


def pretraining_layers(archive, sentence):
    """Every layer of the archived biLM run on the sentence exactly as in pretraining (the
    pretraining reader: <S> subwords </S>), `(subwords + 2, dim)` each."""
    loaded = load_archive(archive, overrides={"model.contextualizer.return_all_layers": True})
    model, reader = loaded.model.eval(), loaded.dataset_reader
    instance = reader.text_to_instance(" ".join(sentence))
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(model.vocab)
    with torch.no_grad():
        return [layer[0] for layer in model(**batch.as_tensor_dict())["lm_embeddings"]]


def first_subword_positions(bpe, sentence):
    """By hand: <S> is subword 0, each word's subwords follow one another."""
    tokenizer = BpeTokenizer(str(bpe / "tokenizer.json"))
    positions, position = [], 1
    for word in sentence:
        positions.append(position)
        position += len(tokenizer.word_subwords(word))
    return positions, position  # the last one is </S>


def test_word_vectors_are_the_bilm_layers_at_first_subwords(bpe, archive, indexer):
    sentence = SENTENCES[0]
    layers = pretraining_layers(archive, sentence)
    positions, end = first_subword_positions(bpe, sentence)
    assert positions != list(range(1, len(sentence) + 1))  # some word has several subwords
    assert end == layers[0].size(0) - 1
    for layer in range(3):
        weights = [-9e10] * 3
        weights[layer] = 1.0
        representations = ElmoC(
            archive, 1, dropout=0.0, scalar_mix_parameters=weights
        ).eval()
        output = representations(**indexed([sentence], indexer))["elmo_representations"][0]
        assert output.shape == (1, len(sentence), layers[layer].size(-1))
        torch.testing.assert_close(output[0], layers[layer][positions], atol=1e-5, rtol=1e-5)
        boundaries = ElmoC(
            archive, 1, dropout=0.0, scalar_mix_parameters=weights, keep_sentence_boundaries=True
        ).eval()(**indexed([sentence], indexer))["elmo_representations"][0]
        torch.testing.assert_close(
            boundaries[0], layers[layer][[0, *positions, end]], atol=1e-5, rtol=1e-5
        )


def test_layers_mix_as_scalar_mix(archive, indexer):
    representations = ElmoC(
        archive, 1, dropout=0.0, scalar_mix_parameters=[0.0, 1.0, 2.0]
    ).eval()
    tensors = indexed(SENTENCES, indexer)
    layers, full_mask = representations.layers(**tensors)
    weights = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    expected = sum(w * layer for w, layer in zip(weights, layers))[:, 1:-1]
    output = representations(**tensors)["elmo_representations"][0]
    torch.testing.assert_close(output[0], expected[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(output[1, :3], expected[1, :3], atol=1e-5, rtol=1e-5)
    assert full_mask.sum(1).tolist() == [8, 5]


def test_shapes_masks_padding_and_frozen_determinism(archive, indexer):
    representations = ElmoC(
        archive, 2, dropout=0.0
    )
    representations.train()  # a frozen biLM stays in inference mode: no recurrent dropout
    assert not representations._lm.training and representations.training
    tensors = indexed(SENTENCES, indexer)
    first, second = representations(**tensors), representations(**tensors)
    assert len(first["elmo_representations"]) == 2
    assert first["elmo_representations"][0].shape == (2, 6, 16)
    assert representations.get_output_dim() == 16 and representations.num_layers == 3
    assert torch.equal(first["mask"], tensors["mask"])
    for a, b in zip(first["elmo_representations"], second["elmo_representations"]):
        assert torch.equal(a, b)
    assert torch.all(first["elmo_representations"][0][1, 3:] == 0)  # padding words
    # A sentence alone gives the same vectors as in a batch.
    alone = representations(**indexed([SENTENCES[1]], indexer))["elmo_representations"][0]
    torch.testing.assert_close(
        alone[0], first["elmo_representations"][0][1, :3], atol=1e-5, rtol=1e-5
    )
    kept = ElmoC(archive, 1, keep_sentence_boundaries=True, dropout=0.0)
    output = kept.eval()(**tensors)
    assert output["elmo_representations"][0].shape == (2, 8, 16)
    assert output["mask"].sum(1).tolist() == [8, 5]
    assert torch.all(output["elmo_representations"][0][1, 5:] == 0)


def test_trainable_parameters(archive, indexer):
    frozen = ElmoC(archive, 1)
    trainable = {name for name, p in frozen.named_parameters() if p.requires_grad}
    assert trainable and all("_scalar_mixes" in name for name in trainable)
    tuned = ElmoC(archive, 1, requires_grad=True, dropout=0.0)
    tuned.train()
    assert tuned._lm.training
    output = tuned(**indexed(SENTENCES, indexer))["elmo_representations"][0]
    output.sum().backward()
    embedding = tuned._token_embedder.weight
    assert embedding.requires_grad and embedding.grad is not None
    assert all(p.grad is not None for p in tuned.parameters() if p.requires_grad)


def test_vocabulary_from_archive_equals_the_train_bpe_vocabulary(bpe, archive, indexer):
    from_directory = BpeFirstSubwordIndexer(str(bpe / "tokenizer.json"), str(bpe / "vocabulary"))
    tensors = indexed(SENTENCES, from_directory)
    for key, value in indexed(SENTENCES, indexer).items():
        assert torch.equal(value, tensors[key]), key


def test_errors(archive, tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        ElmoC(str(tmp_path / "nope.tar.gz"), 1)
    with pytest.raises(ConfigurationError, match="has 2 weights, the biLM has 3 layers"):
        ElmoC(archive, 1, scalar_mix_parameters=[0.0, 1.0])
    assert ElmoC(archive, 1).bilm.fasttext_path is None
