"""
Distributed training: the demo config (`training_config/elmo_c_demo.jsonnet`) with AllenNLP's
`distributed: {cuda_devices: [-1, -1]}` setting, i.e. two CPU worker processes joined by gloo, on
a tiny data directory (the fixture corpus and the 16-d fixture fastText model). It must train,
report metrics summed over both ranks, write an archive that loads and runs, and each rank and
each data-loader worker must have read its own disjoint share of the corpus lines.

Which lines each process read is recorded by `ShardProbeReader`, a test-only `lm_corpus` subclass
that the training subprocess (and its spawned ranks) import through `--include-package`.
"""

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Iterable, List

import torch
import torch.distributed as dist

from allennlp.common.util import is_distributed
from allennlp.data import Batch, DatasetReader, Instance
from allennlp.models.archival import load_archive

from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
from tests import PROJECT_ROOT
from tests.helpers import DEMO_AT_FIXTURE_SIZE, make_demo_data_dir
from tests.reliability import forked

DEMO_CONFIG = PROJECT_ROOT / "training_config" / "elmo_c_demo.jsonnet"
MAX_SEQUENCE_LENGTH = 21  # the demo config's
WORLD_SIZE = 2
LOADER_WORKERS = 2


@DatasetReader.register("lm_corpus_shard_probe")
class ShardProbeReader(LmCorpusReader):
    """
    `lm_corpus` that also appends every instance it yields (its tokens, one window a line) to
    `<record_dir>/<corpus stem>.<who>.txt`, where `who` is `rank<r>` in a distributed process or
    `main` otherwise, plus `.worker<w>` in a data-loader worker.
    """

    def __init__(self, record_dir: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self._record_dir = Path(record_dir)

    def _read(self, file_path) -> Iterable[Instance]:
        who = f"rank{dist.get_rank()}" if is_distributed() else "main"
        worker = self.get_worker_info()
        if worker is not None:
            who += f".worker{worker.id}"
        record = self._record_dir / f"{Path(file_path).stem}.{who}.txt"
        with open(record, "a", encoding="utf-8") as out:
            for instance in super()._read(file_path):
                out.write(" ".join(t.text for t in instance["tokens"].tokens) + "\n")
                out.flush()
                yield instance


def lines_of(path: Path, keep) -> List[str]:
    """The lines `i` of `path` with `keep(i)`."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline ends the last line; it starts none
    return [line for index, line in enumerate(lines) if keep(index)]


def chunks_of_lines(path: Path, keep) -> Counter:
    """The instances (as token strings) `lm_corpus` makes of the lines `i` of `path` with
    `keep(i)`: the non-blank lines, each between <S> and </S>, as one stream cut into
    `MAX_SEQUENCE_LENGTH`-token windows that share one token with the next."""
    lines = [line.split() for line in lines_of(path, keep) if line.split()]
    stream = [t for words in lines for t in ["<S>", *words, "</S>"]]
    step = MAX_SEQUENCE_LENGTH - 1
    starts = range(0, max(len(stream) - 1, 1), step)
    return Counter(" ".join(stream[start : start + MAX_SEQUENCE_LENGTH]) for start in starts)


def sentences_in(windows: List[str]) -> List[str]:
    """The sentences (words joined by spaces) of the stream that `windows` (one stream's
    windows, in order, as token strings) were cut from."""
    tokens = [window.split(" ") for window in windows]
    text = " ".join(tokens[0] + [t for window in tokens[1:] for t in window[1:]])
    assert text.startswith("<S> ") and text.endswith(" </S>")
    return text[len("<S> ") : -len(" </S>")].split(" </S> <S> ")


def recorded(path: Path) -> Counter:
    return Counter(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else Counter()


def test_demo_config_trains_on_two_gloo_workers_with_a_sharded_corpus(tmp_path):
    data = make_demo_data_dir(tmp_path / "data")
    records = tmp_path / "records"
    records.mkdir()
    run = tmp_path / "run"
    overrides = {
        **DEMO_AT_FIXTURE_SIZE,
        "dataset_reader.type": "lm_corpus_shard_probe",
        "dataset_reader.record_dir": str(records),
        # Several (and, per rank, unequal numbers of) steps; sharding by loader worker too.
        "data_loader.num_workers": LOADER_WORKERS,
        "distributed": {"cuda_devices": [-1] * WORLD_SIZE},
    }
    environment = dict(os.environ, ELMO_C_DATA_DIR=str(data), OMP_NUM_THREADS="1")
    environment["MKL_NUM_THREADS"] = "1"
    command = ["train", str(DEMO_CONFIG), "-s", str(run), "-o", json.dumps(overrides)]
    command += ["--file-friendly-logging", "--include-package", __name__]
    result = forked.run(command, environment, PROJECT_ROOT)  # a process of its own
    assert result.returncode == 0, result.stderr[-5000:]

    # Both ranks trained (each has its own log) and the primary wrote finite metrics.
    assert {p.name for p in run.glob("out_worker*.log")} == {"out_worker0.log", "out_worker1.log"}
    metrics = json.loads((run / "metrics.json").read_text())
    losses = {k: v for k, v in metrics.items() if k.endswith("_loss")}
    assert {"training_loss", "validation_loss", "validation_forward_loss"} <= set(losses)
    assert all(math.isfinite(value) for value in losses.values()), losses

    # Sharding: rank r took lines r, r + 2, ... and its loader worker w every other one of
    # those (lines i with i % 4 == r + 2w), each streamed into its own windows; validation (no
    # loader workers) is split by rank only.
    train, dev = data / "news" / "train.txt", data / "news" / "dev.txt"
    for rank in range(WORLD_SIZE):
        for worker in range(LOADER_WORKERS):
            shard = rank + WORLD_SIZE * worker
            expected = chunks_of_lines(train, lambda i: i % (WORLD_SIZE * LOADER_WORKERS) == shard)
            assert expected, "the fixture corpus is too small to give every worker a line"
            assert recorded(records / f"train.rank{rank}.worker{worker}.txt") == expected
        expected = chunks_of_lines(dev, lambda i: i % WORLD_SIZE == rank)
        assert recorded(records / f"dev.rank{rank}.txt") == expected
    # Together the workers' streams hold every sentence of the corpus exactly once.
    read = Counter()
    for path in records.glob("train.rank*"):
        read.update(sentences_in(path.read_text(encoding="utf-8").splitlines()))
    sentences = [" ".join(line.split()) for line in lines_of(train, lambda i: True)]
    assert read == Counter(sentence for sentence in sentences if sentence)

    # The archive loads and runs; its validation metrics, recomputed in one process over the
    # windows of both ranks' shares of the dev set (each its own stream), equal the ones training
    # reported: the ranks' metric sums were all-reduced. The run directory is loaded with the
    # plain reader (an archive may only name the plugin's own components, not this test's probe)
    # and its candidate list (a training-time setting, dropped when an archive is loaded).
    config = json.loads((run / "config.json").read_text())
    config["dataset_reader"]["type"] = "lm_corpus"
    del config["dataset_reader"]["record_dir"]
    (run / "config.json").write_text(json.dumps(config))
    words = config["model"]["nearest_neighbour_words"]
    archive = load_archive(str(run), overrides={"model.nearest_neighbour_words": words})
    model, reader = archive.model.eval(), archive.dataset_reader
    instances = []
    for rank in range(WORLD_SIZE):
        share = tmp_path / f"dev.rank{rank}.txt"
        lines = lines_of(dev, lambda i: i % WORLD_SIZE == rank)
        share.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        instances += list(reader.read(str(share)))
    for instance in instances:
        reader.apply_token_indexers(instance)
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    model.get_metrics(reset=True)
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    assert torch.isfinite(output["lm_embeddings"]).all() and torch.isfinite(output["loss"])
    recomputed = model.get_metrics(reset=True)
    # (Rank 0's share alone differs by ~1% here.)
    for name in ("forward_loss", "backward_loss", "forward_nn_accuracy", "backward_cosine"):
        assert math.isclose(recomputed[name], metrics[f"validation_{name}"], rel_tol=1e-5), name
