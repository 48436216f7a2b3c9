import logging

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import TokenIndexer
from allennlp.nn.util import get_text_field_mask

from allennlp_elmo_c.commands.train_bpe import train_bpe
from allennlp_elmo_c.data.token_indexers.bpe_first_subword import BpeFirstSubwordIndexer
from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
from allennlp_elmo_c.modules.elmo_c import index_sentences

SENTENCES = [["The", "council", "approved", "a", "budget", "."], ["Storms", "closed", "schools"]]


@pytest.fixture(scope="module")
def indexer(bpe):
    return TokenIndexer.from_params(
        Params(
            {
                "type": "bpe_first_subword",
                "tokenizer_path": str(bpe / "tokenizer.json"),
                "vocabulary": str(bpe / "vocabulary"),
            }
        )
    )


def tensors_for(sentences, indexer, vocabulary=None):
    return {"sub": index_sentences(sentences, indexer, vocabulary)}


def pretraining_ids(bpe, sentence):
    """The ids the pretraining pipeline (lm_corpus + bpe tokenizer + single_id over the
    train-bpe vocabulary) gives the sentence, boundaries included."""
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "lm_corpus",
                "tokenizer": {"type": "bpe", "tokenizer_path": str(bpe / "tokenizer.json")},
                "token_indexers": {"tokens": {"type": "single_id", "namespace": "subwords"}},
            }
        )
    )
    instance = reader.text_to_instance(" ".join(sentence))
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(Vocabulary.from_files(str(bpe / "vocabulary")))
    return batch.as_tensor_dict()["tokens"]["tokens"]["tokens"][0].tolist()


def test_ids_are_the_pretraining_ids_and_offsets_point_at_first_subwords(bpe, indexer):
    tokenizer = BpeTokenizer(str(bpe / "tokenizer.json"))
    vocabulary = Vocabulary.from_files(str(bpe / "vocabulary"))
    tensors = tensors_for(SENTENCES, indexer)["sub"]
    for row, sentence in enumerate(SENTENCES):
        expected = pretraining_ids(bpe, sentence)
        length = len(expected)
        assert tensors["subword_ids"][row, :length].tolist() == expected
        assert tensors["subword_mask"][row].tolist() == [True] * length + [False] * (
            tensors["subword_ids"].size(1) - length
        )
        # By hand: <S> at 0, then each word's subwords one after the other.
        position, offsets = 1, []
        for word in sentence:
            offsets.append(position)
            position += len(tokenizer.word_subwords(word))
        assert position == length - 1  # </S>
        assert tensors["first_subword"][row, : len(sentence)].tolist() == offsets
        for word, offset in zip(sentence, offsets):
            first = vocabulary.get_token_index(tokenizer.word_subwords(word)[0], "subwords")
            assert tensors["subword_ids"][row, offset] == first
    assert any(len(tokenizer.word_subwords(w)) > 1 for s in SENTENCES for w in s)


def test_padding_and_the_word_mask(indexer):
    text = tensors_for(SENTENCES, indexer)
    tensors = text["sub"]
    assert tensors["mask"].tolist() == [[True] * 6, [True] * 3 + [False] * 3]
    assert tensors["first_subword"][1, 3:].tolist() == [0, 0, 0]  # padding words point at <S>
    assert tensors["subword_ids"][1, int(tensors["subword_mask"][1].sum()) :].eq(0).all()
    assert torch.equal(get_text_field_mask(text), tensors["mask"])
    assert tensors["subword_mask"].dtype == torch.bool and tensors["mask"].dtype == torch.bool


def test_token_min_padding_length(bpe):
    indexer = BpeFirstSubwordIndexer(
        str(bpe / "tokenizer.json"), str(bpe / "vocabulary"), token_min_padding_length=10
    )
    tensors = tensors_for([["The"]], indexer)["sub"]
    assert tensors["first_subword"].shape == (1, 10) and tensors["mask"].sum() == 1


def test_task_vocabulary_is_neither_used_nor_extended(bpe, indexer):
    fields = [TextField([Token(w) for w in s], {"sub": indexer}) for s in SENTENCES]
    instances = [Instance({"text": field}) for field in fields]
    task_vocabulary = Vocabulary.from_instances(instances)
    assert task_vocabulary.get_vocab_size("subwords") == 2  # padding and OOV only
    task_vocabulary.add_tokens_to_namespace(["zzz", "The"], "subwords")  # other ids: ignored
    with_task = tensors_for(SENTENCES, indexer, task_vocabulary)["sub"]
    assert torch.equal(
        with_task["subword_ids"], tensors_for(SENTENCES, indexer)["sub"]["subword_ids"]
    )


def test_odd_unicode_empty_and_unknown_words(bpe, indexer):
    vocabulary = Vocabulary.from_files(str(bpe / "vocabulary"))
    words = ["", " ", "Ω", "e\u0301", "\U0001f600", "שלום", "The"]
    indexed = indexer.tokens_to_indices([Token(w) for w in words], Vocabulary())
    ids, first = indexed["subword_ids"], indexed["first_subword"]
    assert len(first) == len(words) and indexed["mask"] == [True] * len(words)
    oov = vocabulary.get_token_index("@@UNKNOWN@@", "subwords")
    assert oov == 1
    # "" and " " have no subwords: one OOV subword each, so every word has a first subword.
    assert ids[first[0]] == oov and first[1] == first[0] + 1 and ids[first[1]] == oov
    assert ids[first[2]] == oov and first[3] == first[2] + 1  # unseen character
    assert ids[first[-1]] == vocabulary.get_token_index("The", "subwords")
    assert ids[0] == vocabulary.get_token_index("<S>", "subwords")
    assert ids[-1] == vocabulary.get_token_index("</S>", "subwords")


def test_very_long_word_is_truncated_and_logged(bpe, caplog):
    indexer = BpeFirstSubwordIndexer(
        str(bpe / "tokenizer.json"), str(bpe / "vocabulary"), max_subwords_per_word=7
    )
    long_word = "schoolsΩ" * 2000
    with caplog.at_level(logging.WARNING):
        indexed = indexer.tokens_to_indices([Token(long_word), Token("The")], Vocabulary())
    assert indexed["first_subword"] == [1, 8] and len(indexed["subword_ids"]) == 10
    assert indexer.num_truncated == 1 and "more than 7 subwords" in caplog.text
    assert indexed["subword_ids"][1] == indexer.word_subword_ids("schools")[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=6))
def test_offsets_for_any_words(indexer, words):
    indexed = indexer.tokens_to_indices([Token(w) for w in words], Vocabulary())
    first, ids = indexed["first_subword"], indexed["subword_ids"]
    lengths = [len(indexer.word_subword_ids(w)) for w in words]
    assert all(length >= 1 for length in lengths)
    assert first == [1 + sum(lengths[:k]) for k in range(len(words))]
    assert len(ids) == 2 + sum(lengths)
    for word, offset, length in zip(words, first, lengths):
        assert ids[offset : offset + length] == indexer.word_subword_ids(word)


def test_tokenizer_and_vocabulary_of_different_runs(bpe, tmp_path, varied_corpus):
    other = train_bpe(varied_corpus, tmp_path / "other", vocab_size=80, show_progress=False)
    with pytest.raises(ConfigurationError, match="not from the same `train-bpe` run"):
        BpeFirstSubwordIndexer(str(other / "tokenizer.json"), str(bpe / "vocabulary"))
    # The output directory of train-bpe is accepted as the vocabulary too.
    same = BpeFirstSubwordIndexer(str(bpe / "tokenizer.json"), str(bpe))
    assert same.word_subword_ids("The") == BpeFirstSubwordIndexer(
        str(bpe / "tokenizer.json"), str(bpe / "vocabulary")
    ).word_subword_ids("The")


def test_bad_settings(bpe, tmp_path):
    with pytest.raises(ConfigurationError, match="cannot read a vocabulary"):
        BpeFirstSubwordIndexer(str(bpe / "tokenizer.json"), str(tmp_path / "nope"))
    with pytest.raises(ConfigurationError, match="max_subwords_per_word"):
        BpeFirstSubwordIndexer(
            str(bpe / "tokenizer.json"), str(bpe / "vocabulary"), max_subwords_per_word=0
        )
    with pytest.raises(ConfigurationError, match="does not exist"):
        BpeFirstSubwordIndexer(str(tmp_path / "nope.json"), str(bpe / "vocabulary"))
    with pytest.raises(ConfigurationError, match="not in namespace 'tokens'"):
        BpeFirstSubwordIndexer(str(bpe / "tokenizer.json"), str(bpe), namespace="tokens")
