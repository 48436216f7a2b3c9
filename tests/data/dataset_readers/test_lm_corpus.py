import collections
import logging
import os
import threading

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Vocabulary
from allennlp.data.data_loaders import MultiProcessDataLoader
from allennlp.data.dataset_readers.dataset_reader import WorkerInfo
from allennlp.data.token_indexers import SingleIdTokenIndexer

from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader


def write(tmp_path, data, name="corpus.txt"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def sentences(reader, path):
    return [[t.text for t in instance["tokens"].tokens] for instance in reader.read(path)]


def stream_of(lines, start=("<S>",), end=("</S>",)):
    """The token stream of `lines`: each non-blank line's words between its boundary tokens."""
    return [t for line in lines if line.split() for t in [*start, *line.split(), *end]]


def assert_windows_cover(windows, stream, length):
    """`windows` are `stream` cut into `length`-token windows that share one token with the
    next, the last one possibly shorter; and, as `elmo_c` reads a window `w` (forward targets
    `w[1:]`, backward targets `w[:-1]`), every token of the stream but the first is a forward
    target exactly once and every token but the last a backward target exactly once."""
    assert windows, "no windows"
    assert all(2 <= len(w) <= length for w in windows) or windows == [stream]
    assert all(len(w) == length for w in windows[:-1])
    assert all(after[0] == before[-1] for before, after in zip(windows, windows[1:]))
    assert windows[0] + [t for w in windows[1:] for t in w[1:]] == stream
    assert [t for w in windows for t in w[1:]] == stream[1:]  # forward targets
    assert [t for w in windows for t in w[:-1]] == stream[:-1]  # backward targets


def test_one_instance_per_line_with_boundaries(tmp_path):
    path = write(tmp_path, "the cat sat .\n\n  hello \t world  \r\nlast line without newline")
    assert sentences(LmCorpusReader(), path) == [
        ["<S>", "the", "cat", "sat", ".", "</S>"],
        ["<S>", "hello", "world", "</S>"],
        ["<S>", "last", "line", "without", "newline", "</S>"],
    ]


def test_boundary_tokens_can_be_changed_or_disabled(tmp_path):
    path = write(tmp_path, "a b\n")
    assert sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path) == [["a", "b"]]
    reader = LmCorpusReader(start_tokens=["<bos>", "<x>"], end_tokens=["<eos>"])
    assert sentences(reader, path) == [["<bos>", "<x>", "a", "b", "<eos>"]]


def test_sentences_stream_into_windows_sharing_one_token(tmp_path):
    # <S> a b c d | d e f g </S> | </S> <S> h </S> <S> | <S> i j </S>: a boundary token only
    # where a sentence starts or ends, the long sentence's middle without any, the last window
    # shorter.
    path = write(tmp_path, "a b c d e f g\n\nh\ni j\n")
    assert sentences(LmCorpusReader(max_sequence_length=5), path) == [
        ["<S>", "a", "b", "c", "d"],
        ["d", "e", "f", "g", "</S>"],
        ["</S>", "<S>", "h", "</S>", "<S>"],
        ["<S>", "i", "j", "</S>"],
    ]


def test_a_stream_that_ends_with_a_window_makes_no_one_token_window(tmp_path):
    # 9 tokens = 5 + 4: the second window ends the stream.
    path = write(tmp_path, "a b c d e f g\n")
    assert sentences(LmCorpusReader(max_sequence_length=5), path) == [
        ["<S>", "a", "b", "c", "d"],
        ["d", "e", "f", "g", "</S>"],
    ]


@pytest.mark.parametrize("length", [2, 3, 7, 20, 64])
def test_long_and_short_sentences_every_token_predicted_once_per_direction(tmp_path, length):
    lines = [
        " ".join(f"long{i}" for i in range(45)),
        "short one",
        "x",
        "",
        " ".join(f"mid{i}" for i in range(19)),
        " ".join(f"exact{i}" for i in range(max(length - 2, 1))),  # one window, with boundaries
        "tail",
    ]
    path = write(tmp_path, "\n".join(lines) + "\n")
    windows = sentences(LmCorpusReader(max_sequence_length=length), path)
    stream = stream_of(lines)
    assert_windows_cover(windows, stream, length)
    # Boundary tokens only at real sentence boundaries: as many as there are sentences.
    boundaries = [t for w in windows for t in w[1:] if t in ("<S>", "</S>")]
    assert boundaries.count("<S>") == 5 and boundaries.count("</S>") == 6


def test_a_vocabulary_counts_every_token_of_the_corpus_once(tmp_path):
    # <S> a b c d | d e f g </S> | </S> <S> d h c | c c </S>: one "d", one "</S>" and one "c"
    # are in two windows each.
    lines = ["a b c d e f g", "d h c c", "a b c d e f g " * 20, "x", "y z"]
    path = write(tmp_path, "\n".join(lines[:2]) + "\n")
    instances = list(LmCorpusReader(max_sequence_length=5).read(path))
    counter = collections.defaultdict(collections.Counter)
    for instance in instances:
        instance.count_vocab_items(counter)
    assert counter["tokens"] == collections.Counter(stream_of(lines[:2]))
    # min_count sees the corpus's counts: c 3, d 2, </S> 2 (in the windows: 4, 3, 3).
    vocabulary = Vocabulary.from_instances(instances, min_count={"tokens": 3})
    words = set(vocabulary.get_token_to_index_vocabulary("tokens"))
    assert words == {"@@PADDING@@", "@@UNKNOWN@@", "c"}
    # Long and short sentences, many windows.
    path = write(tmp_path, "\n".join(lines) + "\n", name="longer.txt")
    for length in (2, 3, 8):
        counter = collections.defaultdict(collections.Counter)
        for instance in LmCorpusReader(max_sequence_length=length).read(path):
            instance.count_vocab_items(counter)
        assert counter["tokens"] == collections.Counter(stream_of(lines))
    # A duplicate is still a window that shares its first token.
    window = instances[1]["tokens"]
    assert window.shares_first_token and not instances[0]["tokens"].shares_first_token
    copy = window.duplicate()
    assert type(copy) is type(window) and copy.shares_first_token and copy == window


def test_100k_token_line_keeps_every_token_in_order(tmp_path):
    words = [f"t{i}" for i in range(100_000)]
    path = write(tmp_path, " ".join(words) + "\n")
    read = sentences(LmCorpusReader(max_sequence_length=20, start_tokens=[], end_tokens=[]), path)
    assert len(read) == 5264  # 1 + ceil((100,000 - 20) / 19)
    assert_windows_cover(read, words, 20)


def test_a_single_token_stream_is_one_window(tmp_path):
    path = write(tmp_path, "only\n")
    reader = LmCorpusReader(max_sequence_length=4, start_tokens=[], end_tokens=[])
    assert sentences(reader, path) == [["only"]]


def test_without_max_sequence_length_lines_stay_whole(tmp_path):
    words = [f"w{i}" for i in range(1000)]
    path = write(tmp_path, " ".join(words) + "\n")
    assert sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path) == [words]


@pytest.mark.parametrize("content", ["", "\n", "   \n\t\n\n \r\n", " \u3000 \n", "\ufeff\n\x00 \n"])
def test_empty_and_blank_files_are_an_error(tmp_path, content):
    # Training on them would otherwise "succeed" with zero steps.
    path = write(tmp_path, content)
    with pytest.raises(ConfigurationError, match=f"{path}.*no sentences"):
        sentences(LmCorpusReader(), path)


def test_an_empty_shard_of_a_small_file_is_not_an_error(tmp_path):
    # Two lines, three workers: one worker's shard is empty, the file is not.
    reader = LmCorpusReader()
    reader._set_worker_info(WorkerInfo(3, 2))
    assert sentences(reader, write(tmp_path, "a b\nc d\n")) == []


def test_invalid_utf8_replaced_and_counted_once(tmp_path, caplog):
    data = b"ok \xff\xfe bad\nfine \xef\xbf\xbd line\n\xc3 x\n"  # line 2: a genuine U+FFFD
    path = write(tmp_path, data)
    with caplog.at_level(logging.WARNING):
        read = sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path)
    assert read == [["ok", "\ufffd\ufffd", "bad"], ["fine", "\ufffd", "line"], ["\ufffd", "x"]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert path in warnings[0] and "2 line(s)" in warnings[0] and "UTF-8" in warnings[0]


def test_nul_characters_are_whitespace(tmp_path, caplog):
    path = write(tmp_path, b"a\x00b c\n\x00\x00\nd\n")
    with caplog.at_level(logging.WARNING):
        read = sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path)
    assert read == [["a", "b", "c"], ["d"]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and path in warnings[0] and "2 line(s)" in warnings[0]


def test_clean_file_logs_no_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        sentences(LmCorpusReader(), write(tmp_path, "all good here\n"))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_odd_unicode_preserved(tmp_path):
    line = "😀 👩‍👩‍👧 中文 字符 e\u0301 cafe\u0301 שָׁלוֹם مرحبا \u200fx"
    path = write(tmp_path, line + "\n")
    assert sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path) == [line.split()]


def test_byte_order_mark_dropped(tmp_path):
    path = write(tmp_path, "\ufeffa b\n\ufeffc\n")
    read = sentences(LmCorpusReader(start_tokens=[], end_tokens=[]), path)
    assert read == [["a", "b"], ["\ufeffc"]]  # only the file's first character is a BOM


def test_missing_file_and_directory(tmp_path):
    missing = str(tmp_path / "no_such_corpus.txt")
    with pytest.raises(ConfigurationError, match="no_such_corpus.txt"):
        list(LmCorpusReader().read(missing))
    with pytest.raises(ConfigurationError, match="directory"):
        list(LmCorpusReader().read(str(tmp_path)))


@pytest.mark.parametrize("length", [1, 0, -3])
def test_bad_max_sequence_length(length):
    with pytest.raises(ConfigurationError, match="max_sequence_length"):
        LmCorpusReader(max_sequence_length=length)


def test_from_params(tmp_path):
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "lm_corpus",
                "max_sequence_length": 2,
                "end_tokens": [],
                "tokenizer": {"type": "whitespace"},
                "token_indexers": {"lower": {"type": "single_id", "lowercase_tokens": True}},
            }
        )
    )
    assert isinstance(reader, LmCorpusReader)
    instances = list(reader.read(write(tmp_path, "a b c\n")))
    assert [[t.text for t in i["tokens"].tokens] for i in instances] == [
        ["<S>", "a"],
        ["a", "b"],
        ["b", "c"],
    ]
    assert list(instances[0]["tokens"].token_indexers) == ["lower"]


def test_text_to_instance_with_string_and_list():
    reader = LmCorpusReader(max_sequence_length=2)
    from_string = reader.text_to_instance("one two\x00three")
    from_list = reader.text_to_instance(["one", "two", "three"])
    for instance in (from_string, from_list):
        assert list(instance.fields) == ["tokens"]
        assert [t.text for t in instance["tokens"].tokens] == ["<S>", "one", "two", "three", "</S>"]
        assert instance["tokens"]._token_indexers is None  # set later, in apply_token_indexers
        reader.apply_token_indexers(instance)
        assert isinstance(instance["tokens"].token_indexers["tokens"], SingleIdTokenIndexer)


@pytest.mark.parametrize(
    "length, first, second",
    [
        (None, ["<S>", "first", "line", "</S>"], ["<S>", "second", "line", "</S>"]),
        (3, ["<S>", "first", "line"], ["line", "</S>", "<S>"]),
    ],
)
def test_reads_lazily_line_by_line(tmp_path, length, first, second):
    # A pipe whose second line is only written after the first instance came out: a reader that
    # read the whole file first would still be waiting.
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    first_read = threading.Event()

    def writer():
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write("first line\n")
            pipe.flush()
            first_read.wait(timeout=10)
            pipe.write("second line\n")

    thread = threading.Thread(target=writer)
    thread.start()
    instances = LmCorpusReader(max_sequence_length=length).read(fifo)
    result = {}
    reading = threading.Thread(target=lambda: result.update(first=next(instances)))
    reading.start()
    reading.join(timeout=5)
    streamed = not reading.is_alive()
    first_read.set()
    reading.join()
    thread.join()
    assert streamed
    assert [t.text for t in result["first"]["tokens"].tokens] == first
    assert [t.text for t in next(instances)["tokens"].tokens] == second


VARIED_LINES = [f"sentence {i} " + "word " * (i % 7) for i in range(101)]
VARIED_LINES[50] = " ".join(f"long{i}" for i in range(33))  # longer than a window
VARIED_LINES[20] = ""


@pytest.fixture
def varied_lines(tmp_path):
    return write(tmp_path, "\n".join(VARIED_LINES) + "\n")


def windows_of(reader, path):
    return [tuple(t.text for t in instance["tokens"].tokens) for instance in reader.read(path)]


def sentences_in(windows):
    """The sentences (words joined by spaces) of the stream that `windows` were cut from."""
    stream = windows[0] + [t for w in windows[1:] for t in w[1:]]
    text = " ".join(stream)
    assert text.startswith("<S> ") and text.endswith(" </S>")
    return text[len("<S> ") : -len(" </S>")].split(" </S> <S> ")


def corpus_sentences(lines):
    return collections.Counter(" ".join(line.split()) for line in lines if line.strip())


def test_workers_read_disjoint_shards(varied_lines):
    shards = []
    for worker_id in range(3):
        reader = LmCorpusReader(max_sequence_length=10)
        reader._set_worker_info(WorkerInfo(3, worker_id))
        shard = [list(w) for w in windows_of(reader, varied_lines)]
        # Each worker streams its own lines (every third one) into windows.
        assert_windows_cover(shard, stream_of(VARIED_LINES[worker_id::3]), 10)
        shards.append(shard)
    # Together the shards hold every sentence of the corpus exactly once.
    read = collections.Counter(s for shard in shards for s in sentences_in(shard))
    assert read == corpus_sentences(VARIED_LINES)


def test_ranks_and_workers_together_cover_the_corpus_once(varied_lines, monkeypatch):
    """2 distributed ranks x 2 loader workers: line i goes to rank i % 2 and to its worker
    (i // 2) % 2; each of the four streams its own lines into windows, and every token of the
    corpus is predicted exactly once per direction by one of them."""
    import allennlp.data.dataset_readers.dataset_reader as dataset_reader

    monkeypatch.setattr(dataset_reader.util, "is_distributed", lambda: True)
    monkeypatch.setattr(dataset_reader.dist, "get_world_size", lambda: 2)
    read = collections.Counter()
    for rank in range(2):
        monkeypatch.setattr(dataset_reader.dist, "get_rank", lambda: rank)
        for worker in range(2):
            reader = LmCorpusReader(max_sequence_length=7)
            reader._set_worker_info(WorkerInfo(2, worker))
            windows = [list(w) for w in windows_of(reader, varied_lines)]
            lines = VARIED_LINES[rank + 2 * worker :: 4]
            assert_windows_cover(windows, stream_of(lines), 7)
            read.update(sentences_in(windows))
    assert read == corpus_sentences(VARIED_LINES)


def test_multiprocess_loader_yields_each_window_once(varied_lines):
    def loader(num_workers, **kwargs):
        reader = LmCorpusReader(max_sequence_length=10)
        return MultiProcessDataLoader(
            reader, varied_lines, batch_size=8, num_workers=num_workers, **kwargs
        )

    def texts(instances):
        return collections.Counter(tuple(t.text for t in i["tokens"].tokens) for i in instances)

    # With 2 workers, the windows of each worker's stream (its every other line).
    expected = collections.Counter()
    for worker_id in range(2):
        reader = LmCorpusReader(max_sequence_length=10)
        reader._set_worker_info(WorkerInfo(2, worker_id))
        expected.update(windows_of(reader, varied_lines))
    assert set(expected.values()) == {1}
    assert texts(loader(2).iter_instances()) == expected
    # Batches built in the workers (instances not cached): every instance exactly once too.
    batched = loader(2, max_instances_in_memory=16)
    vocab = Vocabulary.from_instances(loader(0).iter_instances())
    batched.index_with(vocab)
    seen = collections.Counter()
    for batch in batched:
        for row in batch["tokens"]["tokens"]["tokens"].tolist():
            seen[tuple(vocab.get_token_from_index(i) for i in row if i != 0)] += 1
    assert seen == expected


def test_a_glob_of_shards_reads_as_the_concatenated_file(tmp_path):
    """The shards `prepare-corpus --shard-tokens` writes, read in sorted order as one stream,
    windows crossing from one file into the next; a BOM is dropped at every file's start."""
    lines = [f"sentence {i} of the corpus with words" for i in range(23)]
    shards = tmp_path / "corpus"
    shards.mkdir()
    for number, start in enumerate(range(0, 23, 7)):
        text = "\n".join(lines[start : start + 7]) + "\n"
        write(shards, ("\ufeff" if number == 1 else "") + text, f"train-{number:05d}.txt")
    write(shards, "not a shard\n", "validation.txt")
    whole = write(tmp_path, "\n".join(lines) + "\n")
    reader = LmCorpusReader(max_sequence_length=9)
    assert windows_of(reader, str(shards / "train-*.txt")) == windows_of(reader, whole)
    # Loader workers share the lines of all files between them, each line once.
    read = collections.Counter()
    for worker_id in range(2):
        reader = LmCorpusReader(max_sequence_length=9)
        reader._set_worker_info(WorkerInfo(2, worker_id))
        windows = [list(w) for w in windows_of(reader, str(shards / "train-*.txt"))]
        assert_windows_cover(windows, stream_of(lines[worker_id::2]), 9)
        read.update(sentences_in(windows))
    assert read == corpus_sentences(lines)


def test_a_glob_matching_nothing_or_only_blank_files_is_an_error(tmp_path):
    with pytest.raises(ConfigurationError, match="matches no corpus file"):
        list(LmCorpusReader().read(str(tmp_path / "train-*.txt")))
    write(tmp_path, "\n\n", "train-00000.txt")
    write(tmp_path, "  \n", "train-00001.txt")
    with pytest.raises(ConfigurationError, match="has no sentences"):
        list(LmCorpusReader().read(str(tmp_path / "train-*.txt")))
    # The directory itself names the pattern to give.
    with pytest.raises(ConfigurationError, match="train-\\*.txt"):
        list(LmCorpusReader().read(str(tmp_path)))


def test_allennlp_train_reads_a_glob_of_shards(tmp_path):
    """`train_data_path` as a pattern through `allennlp train`, as the README shows it."""
    import json

    from tests import FIXTURES_ROOT
    from tests.helpers import train_config

    lines = (FIXTURES_ROOT / "data" / "lm" / "sentences.txt").read_text().splitlines()
    half = len(lines) // 2
    for number, part in enumerate((lines[:half], lines[half:])):
        write(tmp_path, "\n".join(part) + "\n", f"train-{number:05d}.txt")
    overrides = {"train_data_path": str(tmp_path / "train-*.txt"), "trainer.num_epochs": 1}
    metrics = train_config(
        FIXTURES_ROOT / "configs" / "elmo_c.jsonnet", tmp_path / "run", json.dumps(overrides)
    )
    assert metrics["epoch"] == 0 and metrics["training_loss"] > 0
