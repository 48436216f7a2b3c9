import logging

from allennlp_elmo_c.commands.train_bpe import _line_batches
from allennlp_elmo_c.common.text import TruncationWarnings, decode_line


def test_decode_line():
    assert decode_line("\ufeffa b\n".encode(), first=True) == ("a b\n", False, False)
    assert decode_line("\ufeffa b\n".encode()) == ("\ufeffa b\n", False, False)  # not the first
    assert decode_line(b"a\x00b \xff") == ("a b \ufffd", True, True)


def test_train_bpe_reads_lines_as_the_reader_does(tmp_path):
    # A byte order mark is stripped, as the reader strips it, not kept in the first word.
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\xef\xbb\xbfthe cat\na\x00b \xff\n\n")
    assert list(_line_batches(corpus)) == [["the cat", "a b \ufffd"]]


def test_truncation_warnings_are_throttled(caplog):
    warnings = TruncationWarnings(logging.getLogger("test"), "word(s)", 7)
    with caplog.at_level(logging.WARNING):
        for _ in range(101):
            warnings.record("x" * 30)
    assert warnings.count == 101
    assert len(caplog.records) == 3  # the 1st, 10th and 100th
    assert "more than 7 subwords" in caplog.records[0].getMessage()
