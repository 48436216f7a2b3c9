"""
A received corpus is read as data, the same way by every command (`allennlp_elmo_c.data.corpus`):
a linked shard is never read, a line of any length is read in bounded pieces, and a
`manifest.json` is used only when it agrees with the files it describes.
"""

import json
import tracemalloc

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DataLoader, DatasetReader

from allennlp_elmo_c.commands.plan import _sizes
from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus
from allennlp_elmo_c.data import corpus as corpus_module
from allennlp_elmo_c.data.corpus import corpus_files
from allennlp_elmo_c.data.corpus_size import CorpusSize, corpus_size, count_file
from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
from tests.helpers import SENTENCES

TEXT = SENTENCES.read_text(encoding="utf-8")
WORDS = TEXT.split()
SENTENCE_COUNT = sum(1 for line in TEXT.splitlines() if line.split())


def config() -> Params:
    return Params({"dataset_reader": {"type": "lm_corpus", "max_sequence_length": 21},
                   "data_loader": {"type": "lm_stream", "batch_size": 2}})  # fmt: skip


@pytest.fixture
def received(tmp_path):
    """A received corpus of two shards and a third that links to a file of the receiver."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = TEXT.splitlines()
    (corpus / "train-00000.txt").write_text("\n".join(lines[:10]) + "\n")
    (corpus / "train-00002.txt").write_text("\n".join(lines[10:]) + "\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("receiver's secret words\n" * 100)
    (corpus / "train-00001.txt").symlink_to(secret)
    return corpus


def test_a_linked_shard_is_skipped_everywhere_in_one_line(received, caplog):
    pattern = str(received / "train-*.txt")
    assert [p.rsplit("-", 1)[1] for p in corpus_files(pattern)] == ["00000.txt", "00002.txt"]
    warnings = [r.getMessage() for r in caplog.records if "train-00001.txt" in r.getMessage()]
    assert warnings == [f"lm_corpus: {received / 'train-00001.txt'} skipped: symbolic link (not followed)"]
    read = [t.text for i in LmCorpusReader(start_tokens=[], end_tokens=[]).read(pattern) for t in i["tokens"]]
    assert read == WORDS and "secret" not in read
    assert corpus_size(corpus_files(pattern)) == CorpusSize(2, SENTENCE_COUNT, len(WORDS), "counted")
    sizes = _sizes(config(), pattern)  # plan, and lm_stream's length
    assert sizes["tokens"] == len(WORDS) and sizes["files"] == 2


def test_a_named_link_is_refused_in_one_line(received, tmp_path):
    linked = str(received / "train-00001.txt")
    with pytest.raises(ConfigurationError, match="is a symbolic link, not followed") as refusal:
        list(LmCorpusReader().read(linked))
    assert "\n" not in str(refusal.value)
    with pytest.raises(ConfigurationError, match="is a symbolic link, not followed"):
        prepare_corpus([linked], tmp_path / "out", show_progress=False)


def peak(function):
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_line_is_read_in_bounded_pieces(tmp_path, monkeypatch):
    """A corpus of one-line books (the fixture's real text repeated on one line, ~1 MB): the
    count and the reader hold a few pieces, never the line (its bytes and text alone are 2 MB)."""
    monkeypatch.setattr(corpus_module, "PIECE_BYTES", 10_000)
    book = tmp_path / "books.txt"
    book.write_text(" ".join([TEXT.replace("\n", " ")] * 750) + "\n", encoding="utf-8")
    counted, counting = peak(lambda: count_file(book))
    assert counted == {"sentences": 1, "tokens": 750 * len(WORDS)}
    reader = LmCorpusReader(max_sequence_length=21)
    windows, reading = peak(lambda: reader.count_instances(str(book)))
    assert windows == -(-(counted["tokens"] + 2 - 1) // 20)  # every token, boundaries included
    assert counting < 300_000 and reading < 1_000_000 < book.stat().st_size, (counting, reading)


def test_a_long_line_keeps_its_tokens_across_pieces(tmp_path):
    words = [f"w{i:06d}" for i in range(60_000)]  # 480,000 bytes on one line
    path = tmp_path / "corpus.txt"
    path.write_text("first line\n" + " ".join(words) + "\nlast\n")
    read = [[t.text for t in i["tokens"]] for i in LmCorpusReader().read(str(path))]
    assert read == [["<S>", "first", "line", "</S>"], ["<S>", *words, "</S>"], ["<S>", "last", "</S>"]]
    assert count_file(path) == {"sentences": 3, "tokens": 60_003}


def manifest(corpus, counts):
    stats = {"files": {"train.txt": counts}}
    (corpus / "manifest.json").write_text(json.dumps({"stats": stats}))


@pytest.mark.parametrize(
    "tokens", [0, 1, 2**63 - 1, 1e300, float("nan"), -1, "90000", True, 40_000, 200_000]
)
def test_a_manifest_that_disagrees_with_its_file_is_not_used(tmp_path, tokens):
    """The counts are refused (the file is counted) unless they fit the file's size and the
    rate of tokens at its start; plan sizes the run from what is read (no OverflowError)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    train = corpus / "train.txt"
    train.write_text(TEXT * 60)  # 81,840 bytes
    real = (60 * SENTENCE_COUNT, 60 * len(WORDS))
    size = train.stat().st_size
    manifest(corpus, {"bytes": size, "sentences": real[0], "tokens": tokens})
    assert corpus_size([str(train)])[1:] == (*real, "counted")
    sizes = _sizes(config(), str(train))
    assert (sizes["tokens"], sizes["counted_from"]) == (real[1], "cache")
    for sentences, bytes_, source in [(1, size, "cache"), (real[0], size + 1, "cache"),
                                      (real[0], size, "manifest")]:  # fmt: skip
        manifest(corpus, {"bytes": bytes_, "sentences": sentences, "tokens": real[1]})
        assert corpus_size([str(train)])[1:] == (*real, source)


def test_plan_refuses_an_empty_corpus_in_one_line(tmp_path):
    (tmp_path / "train.txt").write_text("\n \n")
    with pytest.raises(ConfigurationError, match="has no tokens"):
        _sizes(config(), str(tmp_path / "train.txt"))


def test_a_prepared_corpus_is_counted_from_its_manifest(tmp_path):
    source = tmp_path / "a.txt"
    source.write_text("\n".join(f"{i} {line}" for i in range(60) for line in TEXT.splitlines()))
    out = prepare_corpus([source], tmp_path / "out", validation_fraction=0.0, show_progress=False)
    files = json.loads((out / "manifest.json").read_text())["stats"]["files"]
    assert files["train.txt"]["bytes"] == (out / "train.txt").stat().st_size > 2**16
    size = corpus_size([str(out / "train.txt")])
    assert size.source == "manifest" and size.tokens == files["train.txt"]["tokens"]
    loader = DataLoader.from_params(config()["data_loader"], data_path=str(out / "train.txt"),
                                    reader=DatasetReader.from_params(config()["dataset_reader"]))
    assert len(loader) > 0
