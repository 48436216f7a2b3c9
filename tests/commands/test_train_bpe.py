import json
import sys

import pytest
from tokenizers import Tokenizer

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.commands.train_bpe import train_bpe
from tests import PROJECT_ROOT
from tests.helpers import run_plugin_command

SMALL = dict(vocab_size=100, min_frequency=1, show_progress=False)


def test_tokenizer_and_vocabulary_agree(varied_corpus, tmp_path):
    output = train_bpe(varied_corpus, tmp_path / "bpe", **SMALL)
    tokenizer = Tokenizer.from_file(str(output / "tokenizer.json"))
    by_id = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    assert len(by_id) == 100  # the corpus has far more than 100 possible merges
    assert [text for text, _ in by_id[:3]] == ["<S>", "</S>", "@@UNKNOWN@@"]
    vocabulary = Vocabulary.from_files(str(output / "vocabulary"))
    # A padded namespace: 0 = padding, 1 = OOV (= the BPE's unknown token), then the BPE's
    # subwords in the BPE's id order.
    expected = ["@@PADDING@@", "@@UNKNOWN@@", *(t for t, _ in by_id if t != "@@UNKNOWN@@")]
    index_to_token = vocabulary.get_index_to_token_vocabulary("subwords")
    assert [index_to_token[i] for i in range(len(index_to_token))] == expected
    assert vocabulary.get_token_index("never-a-subword", "subwords") == 1
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["stats"]["size"] == 101 and manifest["recipe"]["vocab_size"] == 100


def test_words_split_into_a_first_subword_and_prefixed_continuations(varied_corpus, tmp_path):
    tokenizer = Tokenizer.from_file(
        str(train_bpe(varied_corpus, tmp_path, **SMALL) / "tokenizer.json")
    )
    words = set(varied_corpus.read_text().split())
    split_somewhere = 0
    for word in sorted(words)[:200]:
        pieces = tokenizer.encode(word, add_special_tokens=False).tokens
        assert not pieces[0].startswith("##")
        assert all(piece.startswith("##") for piece in pieces[1:])
        assert pieces[0] + "".join(piece[2:] for piece in pieces[1:]) == word
        assert tokenizer.decode(tokenizer.encode(word).ids) == word
        split_somewhere += len(pieces) > 1
    assert split_somewhere > 50  # with 100 subwords most of the 4-syllable words are split
    # Special tokens stay whole, inside a line too.
    tokens = tokenizer.encode("<S> kalo </S>", add_special_tokens=False).tokens
    assert tokens[0] == "<S>" and tokens[-1] == "</S>"


def test_up_to_date_output_is_not_retrained(varied_corpus, tmp_path):
    output = train_bpe(varied_corpus, tmp_path, **SMALL)
    stamp = (output / "tokenizer.json").stat().st_mtime_ns
    train_bpe(varied_corpus, tmp_path, **SMALL)
    assert (output / "tokenizer.json").stat().st_mtime_ns == stamp
    train_bpe(varied_corpus, tmp_path, **{**SMALL, "vocab_size": 80})  # settings changed
    assert Tokenizer.from_file(str(output / "tokenizer.json")).get_vocab_size() == 80
    stamp = (output / "tokenizer.json").stat().st_mtime_ns
    train_bpe(varied_corpus, tmp_path, force=True, **{**SMALL, "vocab_size": 80})
    assert (output / "tokenizer.json").stat().st_mtime_ns != stamp


def test_blank_corpus(tmp_path):
    # A missing or empty corpus: tests/commands/test_corpus_checks.py.
    (tmp_path / "blank.txt").write_text(" \n\t\n\x00\n")
    with pytest.raises(ConfigurationError, match="holds no words"):
        train_bpe(tmp_path / "blank.txt", tmp_path / "out", **SMALL)
    assert not (tmp_path / "out" / "tokenizer.json").exists()


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"vocab_size": 3}, "vocab_size must be > 3"),
        ({"min_frequency": 0}, "min_frequency must be"),
    ],
)
def test_bad_settings(varied_corpus, tmp_path, bad, message):
    with pytest.raises(ConfigurationError, match=message):
        train_bpe(varied_corpus, tmp_path, **{**SMALL, **bad})


def test_odd_bytes_and_unicode_in_corpus(tmp_path):
    corpus = tmp_path / "odd.txt"
    lines = [
        b"caf\xc3\xa9 \xff\xfe broken \x00 bytes \xf0\x9f\x98\x80 emoji \xe6\x97\xa5\xe6\x9c\xac"
    ]
    lines += [b"plain\xc2\xa0words here\tand there\r"] * 20
    corpus.write_bytes(b"\n".join(lines * 5) + b"\n")
    tokenizer = Tokenizer.from_file(
        str(train_bpe(corpus, tmp_path / "out", **SMALL) / "tokenizer.json")
    )
    vocab = tokenizer.get_vocab()
    # Undecodable bytes were read as U+FFFD, NUL and U+00A0 as spaces; no other special cases.
    assert "\ufffd" in vocab and "\x00" not in vocab and "\xa0" not in vocab
    assert "\r" not in "".join(vocab)
    for word in ["café", "\U0001f600", "日本", "plain", "words"]:
        assert "@@UNKNOWN@@" not in tokenizer.encode(word, add_special_tokens=False).tokens
    assert tokenizer.encode("ü", add_special_tokens=False).tokens == ["@@UNKNOWN@@"]


def test_cli_registered_with_allennlp(varied_corpus, tmp_path):
    command = [sys.executable, "-m", "allennlp_elmo_c", "train-bpe", str(varied_corpus)]
    command += [str(tmp_path / "cli"), "--vocab-size", "60", "--min-frequency", "2", "--quiet"]
    result = run_plugin_command(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert Tokenizer.from_file(str(tmp_path / "cli" / "tokenizer.json")).get_vocab_size() == 60
    assert (
        Vocabulary.from_files(str(tmp_path / "cli" / "vocabulary")).get_vocab_size("subwords") == 61
    )
