import pickle

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.data.tokenizers import Tokenizer

from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
from tests.helpers import SENTENCES


@pytest.fixture(scope="module")
def tokenizer(bpe):
    return Tokenizer.from_params(
        Params({"type": "bpe", "tokenizer_path": str(bpe / "tokenizer.json")})
    )


def texts(tokens):
    return [token.text for token in tokens]


def test_sentence_is_the_concatenation_of_its_words_subwords(tokenizer):
    line = "The city council approved a new budget on Tuesday ."
    tokens = tokenizer.tokenize(line)
    assert texts(tokens) == [s for word in line.split() for s in tokenizer.word_subwords(word)]
    assert len(tokens) > len(line.split())  # some words are split at this vocabulary size
    first = [s for s in texts(tokens) if not s.startswith("##")]
    assert first == [tokenizer.word_subwords(word)[0] for word in line.split()]
    # Offsets point at the characters each subword stands for; no text_id (ids come from the
    # AllenNLP vocabulary).
    for token in tokens:
        assert token.text.removeprefix("##") == line[token.idx : token.idx_end]
        assert token.text_id is None


def test_whitespace_is_pythons(tokenizer):
    words = ["The", "city", "council"]
    for separator in [" ", "\t", "  ", "\u00a0", "\u3000", "\u2009", "\x1c", "\r\n"]:
        line = separator + separator.join(words) + separator
        assert texts(tokenizer.tokenize(line)) == texts(tokenizer.tokenize("The city council"))
    assert tokenizer.tokenize("") == [] and tokenizer.tokenize(" \t\n") == []
    assert tokenizer.word_subwords("") == []


def test_special_and_unknown_tokens(tokenizer):
    assert texts(tokenizer.tokenize("<S> The </S>")) == ["<S>", "The", "</S>"]
    assert texts(tokenizer.tokenize("a<S>b"))[1] == "<S>"  # never split, even inside a word
    # Characters never seen in training: the AllenNLP OOV token, one per character.
    assert tokenizer.word_subwords("Ω") == ["@@UNKNOWN@@"]
    assert tokenizer.word_subwords("ΩΩ") == ["@@UNKNOWN@@", "@@UNKNOWN@@"]
    assert tokenizer.word_subwords("TheΩ")[-1] == "@@UNKNOWN@@"


def test_cached_results_are_the_same_and_tokenizer_pickles(tokenizer):
    line = "Storms closed schools on Friday ."
    first = texts(tokenizer.tokenize(line))
    assert texts(tokenizer.tokenize(line)) == first
    copy = pickle.loads(pickle.dumps(tokenizer))  # multi-process data loading pickles readers
    assert texts(copy.tokenize(line)) == first


def test_small_cache_still_gives_the_same_subwords(bpe, tokenizer):
    small = BpeTokenizer(str(bpe / "tokenizer.json"), cache_size=2)
    line = SENTENCES.read_text().splitlines()[3]
    assert texts(small.tokenize(line)) == texts(tokenizer.tokenize(line))
    assert len(small._cache) <= 2


def test_missing_and_invalid_tokenizer_files(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist.*train-bpe"):
        BpeTokenizer(str(tmp_path / "nope.json"))
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(ConfigurationError, match="not a `tokenizers` JSON"):
        BpeTokenizer(str(tmp_path / "bad.json"))


def test_lm_corpus_reads_subwords_and_chunks_them(bpe, tokenizer):
    """max_sequence_length counts subwords: every window has at most that many, and the windows
    (each sharing its first subword with the previous one's last) are exactly the stream of the
    lines' subwords, each line's between <S> and </S>, in order."""
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "lm_corpus",
                "max_sequence_length": 5,
                "tokenizer": {"type": "bpe", "tokenizer_path": str(bpe / "tokenizer.json")},
                "token_indexers": {"tokens": {"type": "single_id", "namespace": "subwords"}},
            }
        )
    )
    instances = list(reader.read(str(SENTENCES)))
    chunks = [texts(instance["tokens"].tokens) for instance in instances]
    assert all(len(c) == 5 for c in chunks[:-1]) and 2 <= len(chunks[-1]) <= 5
    assert all(after[0] == before[-1] for before, after in zip(chunks, chunks[1:]))
    lines = [line for line in SENTENCES.read_text().splitlines() if line.strip()]
    expected = [
        s for line in lines for s in ["<S>", *texts(tokenizer.tokenize(line)), "</S>"]
    ]
    assert chunks[0] + [s for chunk in chunks[1:] for s in chunk[1:]] == expected
    assert len(chunks) > len(lines)
    # With the train-bpe vocabulary every subword of the training corpus has its own id.
    vocabulary = Vocabulary.from_files(str(bpe / "vocabulary"))
    batch = Batch(instances)
    batch.index_instances(vocabulary)
    ids = batch.as_tensor_dict()["tokens"]["tokens"]["tokens"]
    assert not (ids == 1).any()  # never OOV (1); 0 is padding, in a shorter last window only
    row = [vocabulary.get_token_index(s, "subwords") for s in chunks[0]]
    assert ids[0, : len(row)].tolist() == row
