"""`corpus_size`: a corpus's sentences and tokens as the `lm_corpus` reader sees them (from a
`prepare-corpus` manifest, a cached count or one read), and the windows the reader cuts."""
import json
import random

import pytest

from allennlp.common import Params
from allennlp.data import DatasetReader
from allennlp.data.dataset_readers.dataset_reader import WorkerInfo

from allennlp_elmo_c.data import corpus_size as sizes
from allennlp_elmo_c.data.corpus_size import CorpusSize, corpus_size, corpus_windows


def reader(length=21):
    return DatasetReader.from_params(Params({"type": "lm_corpus", "max_sequence_length": length}))


def write(path, data: bytes):
    path.write_bytes(data)
    return path


AWKWARD = (
    "\ufeffFirst line after a byte order mark\n"
    "  \n"
    "\tsplit\u00a0on\u3000unicode spaces too\r\n"
    "a NUL\x00inside\n"
    "\n"
    "one\n"
).encode("utf-8") + b"bytes \xff\xfe not utf-8\n" + b"no newline at the end"


def test_counts_what_the_reader_reads(tmp_path):
    path = write(tmp_path / "corpus.txt", AWKWARD)
    instances = list(reader(length=None).read(str(path)))  # one instance a sentence
    counted = sizes.count_file(path)
    assert counted["sentences"] == len(instances) == 6
    assert counted["tokens"] == sum(len(i["tokens"].tokens) - 2 for i in instances)


@pytest.mark.parametrize("length", [2, 3, 12, 21])
@pytest.mark.parametrize("seed", range(4))
def test_windows_are_the_readers_windows(tmp_path, length, seed):
    rng = random.Random(seed)
    lines = [" ".join("w" for _ in range(rng.choice([0, 1, 2, 5, 19, 20, 21, 40])))
             for _ in range(rng.randint(1, 30))]  # fmt: skip
    if not any(lines):
        lines.append("w")
    path = write(tmp_path / "corpus.txt", "\n".join(lines).encode())
    expected = sum(1 for _ in reader(length).read(str(path)))
    assert corpus_windows(corpus_size([str(path)]), length, boundary_tokens=2) == expected


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_several_streams_are_within_one_window_each(tmp_path, workers):
    rng = random.Random(workers)
    lines = [" ".join("w" for _ in range(rng.randint(1, 60))) for _ in range(500)]
    path = write(tmp_path / "corpus.txt", "\n".join(lines).encode())
    read = 0
    for worker in range(workers):  # each worker reads every workers-th line as its own stream
        sharded = reader()
        sharded._set_worker_info(WorkerInfo(workers, worker))
        read += sharded.count_instances(str(path))
    estimate = corpus_windows(corpus_size([str(path)]), 21, 2, streams=workers)
    assert abs(estimate - read) < workers


def test_the_manifest_is_used_while_it_agrees_with_the_file(tmp_path):
    path = write(tmp_path / "train.txt", b"a b c\nd e\n" * 10_000)  # 100,000 bytes
    record = {"bytes": 100_000, "sentences": 25_000, "tokens": 40_000}
    (tmp_path / "manifest.json").write_text(json.dumps({"stats": {"files": {"train.txt": record}}}))
    assert corpus_size([str(path)]) == CorpusSize(1, 25_000, 40_000, "manifest")
    write(path, b"a b c\nd e\n" * 10_001)  # the file changed after the manifest was written
    assert corpus_size([str(path)]) == CorpusSize(1, 20_002, 50_005, "counted")


def test_a_count_is_cached_by_path_size_and_time(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write(tmp_path / "corpus.txt", b"a b c\nd e\n")
    assert corpus_size([str(path)]).source == "counted"
    assert corpus_size([str(path)]) == CorpusSize(1, 2, 5, "cache")
    write(path, b"a b c\nd e f\n")
    assert corpus_size([str(path)]) == CorpusSize(1, 2, 6, "counted")
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = write(tmp_path / "not_a_directory", b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = write(tmp_path / "corpus.txt", b"a b\n")
    assert corpus_size([str(path)]) == corpus_size([str(path)]) == CorpusSize(1, 1, 2, "counted")


def test_several_files_add_up(tmp_path):
    first = write(tmp_path / "train-00000.txt", b"a b\n")
    second = write(tmp_path / "train-00001.txt", b"c d e\nf\n")
    assert corpus_size([str(first), str(second)]) == CorpusSize(2, 3, 6, "counted")
