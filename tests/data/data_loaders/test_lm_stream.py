"""`lm_stream`: a streamed corpus that knows its length, holds at most `max_instances_in_memory`
instances, shuffles the same way every time an epoch is trained, and skips what a resumed run
already trained without indexing it."""
import random

import pytest

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DataLoader, DatasetReader, Vocabulary

from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader


def write_corpus(path, lines=300, seed=0):
    rng = random.Random(seed)
    path.write_text("\n".join(" ".join(f"w{rng.randint(0, 50)}" for _ in range(rng.randint(1, 40)))
                              for _ in range(lines)) + "\n")  # fmt: skip
    return str(path)


class CountingReader(LmCorpusReader):
    """`lm_corpus` that counts the instances it has made."""

    made = 0

    def _read(self, file_path):
        for instance in super()._read(file_path):
            CountingReader.made += 1
            yield instance


def loader(path, reader=None, **settings):
    reader = reader or DatasetReader.from_params(
        Params({"type": "lm_corpus", "max_sequence_length": settings.pop("window", 21)})
    )
    made = DataLoader.from_params(Params({"type": "lm_stream", **settings}), reader=reader,
                                  data_path=path)  # fmt: skip
    made.index_with(Vocabulary.from_instances(reader.read(path)))
    return made


def window_texts(batches):
    """Each batch as its windows' token ids, padding removed (the corpus's random words tell
    windows apart)."""
    return [[tuple(i for i in row if i) for row in batch["tokens"]["tokens"]["tokens"].tolist()]
            for batch in batches]  # fmt: skip


@pytest.mark.parametrize("batch_size,workers,window,drop_last",
                         [(8, 0, 21, False), (3, 0, 12, False), (8, 0, 21, True), (8, 1, 5, False),
                          (4, 2, 21, False), (16, 3, 21, False)])  # fmt: skip
def test_the_length_is_the_batches_an_epoch_makes(tmp_path, batch_size, workers, window, drop_last):
    path = write_corpus(tmp_path / "corpus.txt")
    made = loader(path, batch_size=batch_size, num_workers=workers, window=window, shuffle=True,
                  drop_last=drop_last, max_instances_in_memory=batch_size * 3)
    real = sum(1 for _ in made)
    if workers <= 1:
        assert len(made) == real
    else:  # each worker cuts its own stream: within one batch per worker
        assert abs(len(made) - real) <= workers


def test_at_most_one_chunk_is_read_ahead(tmp_path):
    path = write_corpus(tmp_path / "corpus.txt", lines=2000)
    reader = CountingReader(max_sequence_length=21)
    made = loader(path, reader=reader, batch_size=4, shuffle=True, max_instances_in_memory=40)
    CountingReader.made = 0
    total = 0
    for number, batch in enumerate(made):
        total += len(batch["tokens"]["tokens"]["tokens"])
        # Batch `number` comes from the chunk holding windows 4 * number onwards.
        assert CountingReader.made <= (4 * number // 40 + 1) * 40
    assert CountingReader.made == total > 400


def test_an_epoch_is_shuffled_the_same_way_every_time_and_each_epoch_differently(tmp_path):
    path = write_corpus(tmp_path / "corpus.txt")
    settings = dict(batch_size=4, shuffle=True, max_instances_in_memory=20, seed=7)
    first, again = loader(path, **settings), loader(path, **settings)
    epoch_0, epoch_1 = window_texts(first), window_texts(first)
    assert window_texts(again) == epoch_0 and window_texts(again) == epoch_1
    assert epoch_0 != epoch_1
    plain = window_texts(loader(path, batch_size=4, shuffle=False, max_instances_in_memory=20))
    assert epoch_0 != plain
    for start in range(0, len(plain), 5):  # a permutation within each chunk of 5 batches
        chunk = lambda batches: sorted(w for b in batches[start:start + 5] for w in b)  # noqa: E731
        assert chunk(epoch_0) == chunk(plain)


def test_a_resumed_run_skips_the_trained_batches_without_indexing_them(tmp_path, monkeypatch):
    path = write_corpus(tmp_path / "corpus.txt")
    settings = dict(batch_size=4, shuffle=True, max_instances_in_memory=20, seed=3)
    uninterrupted = loader(path, **settings)
    epochs = [window_texts(uninterrupted) for _ in range(3)]
    resumed = loader(path, **settings)
    resumed.resume(epochs_completed=1, batches_completed=7)
    indexed = []
    real_index = resumed._index_instance
    monkeypatch.setattr(resumed, "_index_instance", lambda i: indexed.append(i) or real_index(i))
    assert list(resumed) == []  # epoch 0 was trained
    batches = list(resumed)
    assert batches[:7] == [{}] * 7  # placeholders the trainer skips
    assert window_texts(batches[7:]) == epochs[1][7:]
    assert len(indexed) == sum(len(b["tokens"]["tokens"]["tokens"]) for b in batches[7:])
    assert window_texts(resumed) == epochs[2]  # the next epoch as usual


def test_several_workers_cannot_skip_and_say_so(tmp_path, caplog):
    made = loader(write_corpus(tmp_path / "corpus.txt"), batch_size=4, num_workers=2)
    made.resume(1, 3)
    assert "re-read on resume" in caplog.text
    assert sum(1 for _ in made) > 0


@pytest.mark.parametrize("settings,message", [
    ({"batch_size": 4, "max_instances_in_memory": 10}, "must be a multiple of batch_size"),
    ({"batch_size": 0}, "batch_size must be >= 1"),
])  # fmt: skip
def test_settings_are_checked(tmp_path, settings, message):
    with pytest.raises(ConfigurationError, match=message):
        loader(write_corpus(tmp_path / "corpus.txt"), **settings)


def test_another_tokenizer_is_counted_with_the_reader(tmp_path):
    path = write_corpus(tmp_path / "corpus.txt")
    reader = DatasetReader.from_params(Params({
        "type": "lm_corpus", "max_sequence_length": 21,
        "tokenizer": {"type": "character"},
    }))  # fmt: skip
    made = loader(path, reader=reader, batch_size=8)
    assert len(made) == sum(1 for _ in made)
