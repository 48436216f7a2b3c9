"""
A received fastText `.bin` costs memory for what it holds and what is used of it, not for the
counts its header declares: the counts are checked against the file's size before anything
grows with them, and the per-row table of the C extension grows with the rows met.

Every `.bin` reader goes through `FastTextBin` (the `fasttext_subwords` indexer, the `fasttext`
embedder, the softmax head's fastText init, `package`, the archive loaders): these tests load the
crafted files through `FastTextBin` and through the indexer and the embedder.
"""

import struct
import tracemalloc
from pathlib import Path
from typing import List

import pytest
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer
from allennlp_elmo_c.fasttext import fasttext_bin
from allennlp_elmo_c.fasttext.fasttext_bin import FASTTEXT_MAGIC, FASTTEXT_VERSION, FastTextBin
from allennlp_elmo_c.modules.elmo_c import index_sentences
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

WORDS = ["the", "schools", "café", "</s>"]
MiB = 1 << 20


def header(dim: int, bucket: int, size: int, num_words: int) -> bytes:
    """fastText's arguments and dictionary counts (version 12, skipgram, minn 3, maxn 6, not
    pruned; the labels are the entries after the words)."""
    magic = struct.pack("<ii", FASTTEXT_MAGIC, FASTTEXT_VERSION)
    args = struct.pack("<12id", dim, 5, 5, 1, 5, 1, 2, 2, bucket, 3, 6, 100, 1e-4)
    return magic + args + struct.pack("<iiiqq", size, num_words, size - num_words, 1000, -1)


def entries(words: List[str]) -> bytes:
    return b"".join(word.encode() + b"\0" + struct.pack("<qb", 10, 0) for word in words)


def write_sparse_bin(path: Path, dim: int, bucket: int, words: List[str] = WORDS) -> Path:
    """A complete `.bin` whose input matrix (`len(words) + bucket` rows) is a hole in the file:
    its apparent size is the matrix's, its size on disk a few KB."""
    rows = len(words) + bucket
    start = header(dim, bucket, len(words), len(words)) + entries(words)
    start += struct.pack("<?qq", False, rows, dim)
    with open(path, "wb") as stream:
        stream.write(start)
        stream.seek(len(start) + rows * dim * 4)
        stream.write(struct.pack("<?qq", False, 0, dim))  # an empty output matrix
    return path


def peak_bytes(function) -> int:
    """The peak of Python's allocations (numpy's and the C extension's included) while
    `function` runs."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("implementation", ["native", "python"])
def test_a_sparse_bin_with_a_huge_bucket_costs_the_rows_used(tmp_path, implementation, monkeypatch):
    """A 2^28 bucket in a sparse file (1 GiB apparent, a few KB on disk): a table of 8 bytes per
    declared row would be 2 GiB on the first ids computed. Both paths (the C extension's and
    pure Python's) stay under 32 MiB."""
    if implementation == "python":
        monkeypatch.setattr(fasttext_bin, "USE_NATIVE", False)
    elif fasttext_bin.native_subwords() is None:
        pytest.skip("the C extension is not built")
    path = write_sparse_bin(tmp_path / "sparse.bin", dim=1, bucket=1 << 28)
    assert path.stat().st_blocks * 512 < MiB  # sparse indeed (a few KB on disk)

    def use():
        model = FastTextBin(path)
        ids = model.subword_ids_batch(["schools", "unseenword", "café"] * 100)
        assert len(ids[0]) == 1 + 22 and max(max(i) for i in ids) < model.num_rows
        indexer = FastTextSubwordsIndexer(str(path))
        embedder = FastTextEmbedder(str(path))
        vectors = embedder(**index_sentences([["schools", "are", "closed"], ["a"]], indexer))
        assert vectors.shape == (2, 3, 1) and torch.all(vectors == 0)  # the hole reads as zeros

    FastTextBin.load.cache_clear()
    try:
        peak = peak_bytes(use)
    finally:
        FastTextBin.load.cache_clear()
    assert peak < 32 * MiB, f"{peak / MiB:.0f} MiB for a model of 4 words"  # 8 * 2^28 = 2 GiB


def test_the_native_table_grows_with_the_rows_met(tmp_path):
    """A `.bin` declaring 2^28 buckets: the C extension's per-row table holds one slot per row
    met (the subwords of the words looked up), not one per declared row."""
    if fasttext_bin.native_subwords() is None:
        pytest.skip("the C extension is not built")
    model = FastTextBin(write_sparse_bin(tmp_path / "sparse.bin", dim=1, bucket=1 << 28))
    ids = model.subword_ids_batch(["schools", "unseenword"])
    assert len(model._row_ints) == len(set(ids[0]) | set(ids[1])) <= 23 + 34
    again = model.subword_ids_batch(["schools"])
    assert again[0] == ids[0] and all(a is b for a, b in zip(again[0], ids[0]))  # shared ints


def test_a_header_claiming_more_rows_than_the_file_holds_is_refused(tmp_path):
    """The input matrix's rows (nwords + bucket) of dim floats must fit in the file: a header
    claiming more is refused, naming the fields and the file's size."""
    path = tmp_path / "claims.bin"
    data = header(300, 1 << 30, len(WORDS), len(WORDS)) + entries(WORDS)
    path.write_bytes(data + struct.pack("<?qq", False, len(WORDS) + (1 << 30), 300) + bytes(4096))
    with pytest.raises(ConfigurationError) as refusal:
        FastTextBin(path)
    message = str(refusal.value)
    assert str(path) in message and "bucket" in message and "dim" in message
    assert f"the file has {path.stat().st_size}" in message
    peak = peak_bytes(lambda: pytest.raises(ConfigurationError, FastTextBin, path))
    assert peak < 4 * MiB  # (the header is read 1 MiB at a time)


def test_a_dictionary_larger_than_the_file_is_refused_before_it_is_read(tmp_path):
    """2^31 - 1 dictionary entries declared in a 200-byte file: refused before the dictionary is
    read, naming the field."""
    path = tmp_path / "dictionary.bin"
    path.write_bytes(header(4, 0, 2**31 - 1, 2**31 - 1) + entries(WORDS))
    with pytest.raises(ConfigurationError, match=r"dictionary entries \(size\)") as refusal:
        FastTextBin(path)
    assert str(path) in str(refusal.value)


def test_a_zero_filled_dictionary_is_refused_at_its_second_entry(tmp_path):
    """Two million empty entries: a hole of 20 MB that reads as zeros, each entry the same empty
    word. Reading every declared entry into the word list would cost the memory and time of the
    declared count: refused at the second entry, in under 4 MiB."""
    count = 2_000_000
    path = tmp_path / "zeros.bin"
    start = header(1, 0, count, count)
    with open(path, "wb") as stream:
        stream.write(start)
        stream.seek(len(start) + count * 10)
        stream.write(struct.pack("<?qq", False, count, 1))
        stream.seek(count * 4, 1)
        stream.write(struct.pack("<?qq", False, 0, 1))
    with pytest.raises(ConfigurationError, match="entry 1 repeats the word '' of entry 0"):
        FastTextBin(path)
    peak = peak_bytes(lambda: pytest.raises(ConfigurationError, FastTextBin, path))
    assert peak < 4 * MiB


@pytest.mark.parametrize(
    "field, change",
    [("dim", {"dim": 0}), ("bucket", {"bucket": -1}), ("nlabels", {"num_words": 5})],
)
def test_invalid_counts_name_the_field(tmp_path, field, change):
    """A `dim`, `bucket` or `nlabels` out of range: refused, naming the field and its value."""
    values = {"dim": 4, "bucket": 10, "size": len(WORDS), "num_words": len(WORDS), **change}
    path = tmp_path / "invalid.bin"  # (nwords 5 of a dictionary of 4: nlabels -1)
    path.write_bytes(header(**values) + entries(WORDS))
    with pytest.raises(ConfigurationError, match=f"{field} is -?[0-9]+") as refusal:
        FastTextBin(path)
    assert str(path) in str(refusal.value)
