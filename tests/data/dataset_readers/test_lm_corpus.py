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


def test_long_line_split_into_chunks(tmp_path):
    words = [f"w{i}" for i in range(45)]
    path = write(tmp_path, " ".join(words) + "\nshort one\n")
    read = sentences(LmCorpusReader(max_sequence_length=20), path)
    assert [len(s) for s in read] == [22, 22, 7, 4]
    assert all(s[0] == "<S>" and s[-1] == "</S>" for s in read)
    assert [t for s in read[:3] for t in s[1:-1]] == words


def test_100k_token_line_keeps_every_token_in_order(tmp_path):
    words = [f"t{i}" for i in range(100_000)]
    path = write(tmp_path, " ".join(words) + "\n")
    read = sentences(LmCorpusReader(max_sequence_length=20, start_tokens=[], end_tokens=[]), path)
    assert len(read) == 5000 and all(len(chunk) == 20 for chunk in read)
    assert [t for chunk in read for t in chunk] == words


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


@pytest.mark.parametrize("length", [0, -3])
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
        ["<S>", "a", "b"],
        ["<S>", "c"],
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


def test_reads_lazily_line_by_line(tmp_path):
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
    instances = LmCorpusReader().read(fifo)
    result = {}
    reading = threading.Thread(target=lambda: result.update(first=next(instances)))
    reading.start()
    reading.join(timeout=5)
    streamed = not reading.is_alive()
    first_read.set()
    reading.join()
    thread.join()
    assert streamed
    assert [t.text for t in result["first"]["tokens"].tokens] == ["<S>", "first", "line", "</S>"]
    assert [t.text for t in next(instances)["tokens"].tokens] == ["<S>", "second", "line", "</S>"]


@pytest.fixture
def varied_lines(tmp_path):
    lines = [f"sentence {i} " + "word " * (i % 7) for i in range(101)]
    lines[50] = " ".join(f"long{i}" for i in range(33))  # 4 chunks of at most 10
    lines[20] = ""
    return write(tmp_path, "\n".join(lines) + "\n")


def test_workers_read_disjoint_shards(varied_lines):
    everything = sentences(LmCorpusReader(max_sequence_length=10), varied_lines)
    shards = []
    for worker_id in range(3):
        reader = LmCorpusReader(max_sequence_length=10)
        reader._set_worker_info(WorkerInfo(3, worker_id))
        shards.append(
            [tuple(t.text for t in i["tokens"].tokens) for i in reader.read(varied_lines)]
        )
    assert all(shards) and sum(len(shard) for shard in shards) == len(everything) == 103
    assert sorted(s for shard in shards for s in shard) == sorted(tuple(s) for s in everything)


def test_multiprocess_loader_yields_each_sentence_once(varied_lines):
    def loader(num_workers, **kwargs):
        reader = LmCorpusReader(max_sequence_length=10)
        return MultiProcessDataLoader(
            reader, varied_lines, batch_size=8, num_workers=num_workers, **kwargs
        )

    def texts(instances):
        return collections.Counter(tuple(t.text for t in i["tokens"].tokens) for i in instances)

    single = loader(0)
    expected = texts(single.iter_instances())
    assert set(expected.values()) == {1} and len(expected) == 103
    assert texts(loader(2).iter_instances()) == expected
    # Batches built in the workers (instances not cached): every instance exactly once too.
    batched = loader(2, max_instances_in_memory=16)
    vocab = Vocabulary.from_instances(single.iter_instances())
    batched.index_with(vocab)
    seen = collections.Counter()
    for batch in batched:
        for row in batch["tokens"]["tokens"]["tokens"].tolist():
            seen[tuple(vocab.get_token_from_index(i) for i in row if i != 0)] += 1
    assert seen == expected
