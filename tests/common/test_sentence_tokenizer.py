import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common import sentence_tokenizer
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer


def test_splits_sentences_and_tokens():
    (sentences,) = SentenceTokenizer().split(
        ["The U.S. economy grew. It's 2.5% up, said Mr. Smith."]
    )
    assert sentences[0] == ["The", "U.S.", "economy", "grew", "."]
    assert sentences[1][:3] == ["It", "'s", "2.5"]


def test_odd_whitespace_unicode_and_empty_texts():
    texts = ["", "   \n\t ", "caf\u0065\u0301\u00a0au\u200blait \U0001f600 日本語のテキスト。"]
    results = list(SentenceTokenizer().split(texts))
    assert results[0] == [] and results[1] == []
    tokens = [token for sentence in results[2] for token in sentence]
    assert tokens[:2] == ["caf\u00e9", "aulait"]  # NFC-composed; zero-width space dropped
    assert "\U0001f600" in tokens
    assert all(token.strip() == token and token for token in tokens)


def test_deterministic():
    text = ["Prices rose 3% in May. Analysts were surprised! Were they?"] * 3
    first, second = list(SentenceTokenizer().split(text)), list(SentenceTokenizer().split(text))
    assert first == second and first[0] == first[1]


def test_opening_quote_moves_to_the_sentence_it_opens():
    text = 'Money was added. "It is fair," the mayor said. He said "go home." Then left.'
    (sentences,) = SentenceTokenizer().split([text])
    assert sentences == [
        ["Money", "was", "added", "."],
        ['"', "It", "is", "fair", ",", '"', "the", "mayor", "said", "."],
        ["He", "said", '"', "go", "home", ".", '"'],
        ["Then", "left", "."],
    ]


def test_other_languages_use_their_blank_pipeline():
    (sentences,) = SentenceTokenizer(language="fr").split(["L'été est là. Привет, мир!"])
    assert sentences == [["L'", "été", "est", "là", "."], ["Привет", ",", "мир", "!"]]


def test_unknown_or_unavailable_language_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="Unknown language code 'qq' \\(--language\\)"):
        SentenceTokenizer(language="qq")
    with pytest.raises(ConfigurationError, match="'ja' \\(--language\\) needs a word segmenter"):
        SentenceTokenizer(language="ja")


def test_vocabulary_does_not_grow_with_the_stream(monkeypatch):
    monkeypatch.setattr(sentence_tokenizer, "ZONE_TEXTS", 10)
    tokenizer = SentenceTokenizer()
    texts = (f"Word{n}a word{n}b word{n}c." for n in range(100))
    results = list(tokenizer.split(texts))
    assert len(results) == 100 and results[99] == [["Word99a", "word99b", "word99c", "."]]
    assert not any("word5" in string for string in tokenizer._nlp.vocab.strings)
