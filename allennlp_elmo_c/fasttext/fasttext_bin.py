"""
A fastText `.bin` model read without the fastText library: its dictionary and arguments parsed
into Python, its input matrix memory-mapped (no RAM until rows are touched, shared by every
process that maps it). Subword ids are computed as fastText's `Dictionary::getSubwords` does, for
many words at once: by the C extension `_subwords` when it is built, else in numpy.
"""

import functools
import itertools
import hashlib
import logging
import os
import struct
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)

FASTTEXT_MAGIC = 793712314
FASTTEXT_VERSION = 12
EOS = "</s>"
NATIVE_API = 2  # SUBWORDS_API of the _subwords.c this module calls
_MIN_ENTRY_BYTES = 10  # a dictionary entry: its word's NUL, an int64 count, an int8 type
_FINGERPRINT_SPAN = 1 << 20  # bytes of the matrix start and of the file end that are hashed
# Every fingerprint computed in this process, with the file it came from (for messages naming the
# file another component read).
_FINGERPRINT_PATHS: Dict[int, str] = {}
# The twelve int32 arguments at the start of a `.bin` header, in file order.
ARG_NAMES = (
    "dim", "ws", "epoch", "min_count", "neg", "word_ngrams", "loss", "model",
    "bucket", "minn", "maxn", "lr_update_rate",
)  # fmt: skip
# False forces the numpy implementation of the subword ids even where the C extension is built
# (the tests and `experiments/speed/indexing_speed.py` compare the two).
USE_NATIVE = True


@functools.lru_cache(maxsize=None)
def native_subwords():
    """The C extension computing subword ids (`_subwords.c`), or `None` if it is not built."""
    try:
        from allennlp_elmo_c.fasttext import _subwords
    except ImportError as error:
        logger.info(
            "fastText subword ids: the C extension is not built (%s); using the slower numpy "
            "implementation (build it with `python setup.py build_ext --inplace`)",
            error,
        )
        return None
    if getattr(_subwords, "API", None) != NATIVE_API:
        logger.info(
            "fastText subword ids: the C extension %s was built from another version of "
            "_subwords.c; using the slower numpy implementation (rebuild it with `python "
            "setup.py build_ext --inplace`)",
            _subwords.__file__,
        )
        return None
    logger.debug("fastText subword ids: using the C extension %s", _subwords.__file__)
    return _subwords


class FastTextBin:
    """
    The parts of a fastText `.bin` that ELMo-C needs: the word dictionary, the subword settings
    (`minn`, `maxn`, `bucket`) and the input matrix of shape `(num_words + bucket, dim)` as a
    read-only memory map.

    Use `FastTextBin.load(path)`, which caches one instance per file in each process.

    # Parameters

    path : `Union[str, Path]`
        A model written by fastText's `save_model` (format version 12, not quantized).
    """

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigurationError(f"fastText model {self.path} does not exist")
        try:
            with open(self.path, "rb") as stream:
                matrix_offset = self._read_header(_Reader(stream))
        except (struct.error, UnicodeDecodeError, EOFError, MemoryError) as error:
            raise ConfigurationError(
                f"{self.path} is not a valid fastText .bin file (truncated or corrupt: {error})"
            ) from error
        rows, columns = self.num_rows, self.dim
        end = matrix_offset + rows * columns * 4
        expected = self._expected_size(end)
        if os.path.getsize(self.path) < expected:
            raise ConfigurationError(
                f"{self.path} is truncated: a complete model has {expected} bytes, the file has "
                f"{os.path.getsize(self.path)}"
            )
        # Copy-on-write mapping: pages are shared with every other process mapping the file;
        # nothing ever writes to it (the embedder is frozen).
        self.input_matrix = np.memmap(
            self.path, dtype="<f4", mode="c", offset=matrix_offset, shape=(rows, columns)
        )
        self._cpu_matrix = torch.from_numpy(self.input_matrix)
        self._device_matrices: Dict[torch.device, torch.Tensor] = {}
        self.fingerprint: int = self._fingerprint(matrix_offset)
        _FINGERPRINT_PATHS.setdefault(self.fingerprint, str(self.path))

    def _fingerprint(self, matrix_offset: int) -> int:
        """
        A 52-bit identity of the model's content (exact as a jsonnet double): a hash of the file
        size, everything before the input matrix, the matrix's first MB and the file's last MB.
        """
        size = os.path.getsize(self.path)
        digest = hashlib.blake2b(str(size).encode(), digest_size=8)
        with open(self.path, "rb") as stream:
            remaining = matrix_offset + _FINGERPRINT_SPAN
            while remaining > 0:
                chunk = stream.read(min(remaining, 1 << 22))
                if not chunk:
                    break
                digest.update(chunk)
                remaining -= len(chunk)
            stream.seek(max(size - _FINGERPRINT_SPAN, 0))
            digest.update(stream.read())
        return int.from_bytes(digest.digest(), "little") >> 12

    @property
    def stored_matrix_bytes(self) -> int:
        """The bytes of the input matrix the file really stores: its declared size, at most the
        file's blocks on disk (a hole in a sparse file stores nothing)."""
        stored = os.stat(self.path).st_blocks * 512
        return min(self.num_rows * self.dim * 4, stored)

    @staticmethod
    def path_of(fingerprint: int) -> Optional[str]:
        """The file of a fingerprint computed in this process (`None` if none was)."""
        return _FINGERPRINT_PATHS.get(fingerprint)

    @classmethod
    @functools.lru_cache(maxsize=8)
    def load(cls, path: Union[str, Path]) -> "FastTextBin":
        return cls(Path(path).resolve())

    def _expected_size(self, input_matrix_end: int) -> int:
        """Size of the whole file, from the output matrix header after the input matrix."""
        with open(self.path, "rb") as stream:
            stream.seek(input_matrix_end)
            header = stream.read(17)
        if len(header) < 17:
            return input_matrix_end + 17
        quantized, rows, columns = struct.unpack("<?qq", header)
        return input_matrix_end + 17 + (0 if quantized else rows * columns * 4)

    def _read_header(self, reader: "_Reader") -> int:
        """Parses everything before the input matrix; returns the matrix's byte offset."""
        unpack = reader.unpack
        magic, version = unpack("<ii")
        if magic != FASTTEXT_MAGIC:
            raise ConfigurationError(
                f"{self.path} is not a fastText .bin model (bad magic number; a .vec text file "
                "or a model from another library?)"
            )
        if version != FASTTEXT_VERSION:
            raise ConfigurationError(
                f"{self.path}: fastText format version {version} is not supported "
                f"(expected {FASTTEXT_VERSION}); re-save it with a current fastText"
            )
        args = dict(zip(ARG_NAMES, unpack("<12i")))
        unpack("<d")  # sampling threshold t
        self.dim: int = args["dim"]
        self.minn: int = args["minn"]
        self.maxn: int = args["maxn"]
        self.bucket: int = args["bucket"]
        size, self.num_words, num_labels, _num_tokens, prune_size = unpack("<iiiqq")
        for field, value in (("dim", self.dim), ("bucket", self.bucket), ("size", size),
                             ("nwords", self.num_words), ("nlabels", num_labels)):  # fmt: skip
            if value < 0 or (field == "dim" and value == 0):
                raise ConfigurationError(
                    f"{self.path}: invalid fastText header: {field} is {value}"
                )
        if self.num_words + num_labels != size:
            raise ConfigurationError(
                f"{self.path}: invalid fastText header: nwords {self.num_words} + nlabels "
                f"{num_labels} is not the dictionary's size {size}"
            )
        if prune_size >= 0:
            raise ConfigurationError(
                f"{self.path} is a pruned/quantized fastText model (.ftz), which is not supported"
            )
        # Before anything grows with them: the counts must fit in the file.
        rows = self.num_words + self.bucket
        if rows == 0:
            raise ConfigurationError(
                f"{self.path}: the fastText header declares no words and no buckets (nwords 0, "
                "bucket 0): a model without vectors, refused"
            )
        needed = reader.offset + size * _MIN_ENTRY_BYTES + 17 + rows * self.dim * 4
        if needed > self.path.stat().st_size:
            raise ConfigurationError(
                f"{self.path}: the fastText header declares {size} dictionary entries (size) and "
                f"an input matrix of {self.num_words} + {self.bucket} rows (nwords + bucket) of "
                f"{self.dim} floats (dim), at least {needed} bytes, but the file has "
                f"{self.path.stat().st_size}: truncated, or not a fastText model"
            )
        self.words: List[str] = []
        self.word_ids: Dict[str, int] = {}
        for index in range(size):
            word = reader.cstring()
            unpack("<qb")  # count, entry type (0 = word, 1 = label)
            if index < self.num_words:
                if word in self.word_ids:  # fastText's dictionary holds each word once
                    raise ConfigurationError(
                        f"{self.path}: invalid fastText dictionary: entry {index} repeats the word "
                        f"{word[:40]!r} of entry {self.word_ids[word]}"
                    )
                self.words.append(word)
                self.word_ids[word] = index
        (quantized,) = unpack("<?")
        if quantized:
            raise ConfigurationError(f"{self.path} is quantized (.ftz), which is not supported")
        rows, columns = unpack("<qq")
        if rows != self.num_words + self.bucket or columns != self.dim:
            raise ConfigurationError(
                f"{self.path}: input matrix is {rows} x {columns}, expected "
                f"{self.num_words + self.bucket} x {self.dim}"
            )
        self.num_rows: int = rows
        return reader.offset

    def matrix_on(self, device: torch.device) -> torch.Tensor:
        """
        The input matrix as a tensor on `device`: the memory map itself on CPU, one shared copy
        per other device (every embedder using this file shares it).
        """
        device = torch.device(device)
        if device.type == "cpu":
            return self._cpu_matrix
        if device not in self._device_matrices:
            logger.info(
                "Copying the fastText matrix %s to %s", tuple(self._cpu_matrix.shape), device
            )
            self._device_matrices[device] = self._cpu_matrix.to(device)
        return self._device_matrices[device]

    @functools.cached_property
    def _row_ints(self):
        """The C extension's table of shared int objects (`_subwords.IntTable`), one per row id
        met: every indexer reading this file shares them."""
        return native_subwords().IntTable(self.num_rows)

    def subword_ids(self, word: str, limit: Optional[int] = None) -> List[int]:
        """
        The input-matrix rows whose mean is `word`'s vector, as fastText's `get_subwords`: the
        word's own row if it is in the dictionary, then its hashed character n-grams (maybe none).
        With `limit`, at most the first `limit` ids.
        """
        return self.subword_ids_batch([word], limit)[0]

    def subword_ids_batch(
        self, words: Sequence[str], limit: Optional[int] = None
    ) -> List[List[int]]:
        """`subword_ids` of each of `words`."""
        return [list(ids) for ids in self.subword_ids_and_cuts(words, limit)[0]]

    def subword_ids_and_cuts(
        self, words: Sequence[str], limit: Optional[int] = None
    ) -> Tuple[List[Tuple[int, ...]], List[int]]:
        """
        `subword_ids_batch(words, limit)` as tuples, and the indices of the words that have more
        than `limit` ids (cut to `limit`; `limit >= 0`). Tuples: Python's garbage collector
        stops tracking them, so caching millions costs no collection time.
        """
        native = native_subwords() if USE_NATIVE else None
        if native is not None:
            return native.subword_ids(
                words, self.word_ids, self._row_ints, self.minn, self.maxn, self.bucket,
                self.num_words, -1 if limit is None else limit,
            )
        words = list(words)
        if not words:
            return [], []
        if len(words) > _HASH_CHUNK:
            # In chunks: the arrays are (bytes x the longest n-gram's bytes).
            ids, cut = [], []
            for begin in range(0, len(words), _HASH_CHUNK):
                chunk_ids, chunk_cut = self.subword_ids_and_cuts(
                    words[begin : begin + _HASH_CHUNK], limit
                )
                ids.extend(chunk_ids)
                cut.extend(begin + i for i in chunk_cut)
            return ids, cut
        word_ids = np.fromiter(
            map(self.word_ids.get, words, itertools.repeat(-1)), dtype=np.int64, count=len(words)
        )
        known = word_ids >= 0
        if self.maxn <= 0 or self.bucket <= 0:
            ids = [(int(i),) if i >= 0 else () for i in word_ids]
            if limit is None or limit >= 1:
                return ids, []
            return [() for _ in ids], np.flatnonzero(known).tolist()
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        hashed = words
        if limit is not None and lengths.max() > limit + self.maxn:
            # The first `limit` ids come from the first `limit + maxn` characters.
            longest = limit + self.maxn
            hashed = [word[:longest] for word in words]
            lengths = np.minimum(lengths, longest)
        eos = [i for i, word in enumerate(words) if word == EOS]  # in the dictionary or not
        ngrams, counts = _batch_ngram_hashes(
            hashed, self.minn, self.maxn, self.bucket, skip=eos, lengths=lengths
        )
        # One flat array: each word's own id (if it has one), then its n-grams.
        counts += known
        ends = np.cumsum(counts)
        begins = ends - counts
        ngrams += self.num_words
        if known.any():
            flat = np.empty(int(ends[-1]), dtype=np.int64)
            own = begins[known]
            is_ngram = np.ones(len(flat), dtype=bool)
            is_ngram[own] = False
            flat[own] = word_ids[known]
            flat[is_ngram] = ngrams
        else:
            flat = ngrams
        flat_ids = tuple(flat.tolist())
        result = [flat_ids[b:e] for b, e in zip(begins.tolist(), ends.tolist())]
        cut = []
        if limit is not None:
            cut = np.flatnonzero(counts > limit).tolist()
            for i in cut:
                result[i] = result[i][:limit]
        return result, cut

    def word_vector(self, word: str) -> np.ndarray:
        """`word`'s vector, shape `(dim,)`, as fastText's `get_word_vector` computes it."""
        ids = self.subword_ids(word)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        return np.asarray(self.input_matrix[ids], dtype=np.float32).mean(axis=0)

    def __deepcopy__(self, memo) -> "FastTextBin":
        return self  # read-only and shared: copying a module that uses it must not copy the matrix

    def __getstate__(self):
        # Pickled (e.g. to a spawned worker) as its path: the receiver re-maps the file.
        return {"path": str(self.path)}

    def __setstate__(self, state):
        self.__dict__ = FastTextBin.load(state["path"]).__dict__


class _Reader:
    """Buffered reads of fixed-size fields and NUL-terminated strings from a binary stream."""

    def __init__(self, stream, chunk_size: int = 1 << 20) -> None:
        self._stream = stream
        self._chunk_size = chunk_size
        self._buffer = b""
        self._position = 0
        self._consumed = 0  # bytes of the stream before the buffer

    @property
    def offset(self) -> int:
        return self._consumed + self._position

    def _fill(self, needed: int) -> None:
        while len(self._buffer) - self._position < needed:
            data = self._stream.read(self._chunk_size)
            if not data:
                raise EOFError("unexpected end of file in the header")
            self._consumed += self._position
            self._buffer = self._buffer[self._position :] + data
            self._position = 0

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        self._fill(size)
        values = struct.unpack_from(fmt, self._buffer, self._position)
        self._position += size
        return values

    def cstring(self) -> str:
        while True:
            end = self._buffer.find(b"\x00", self._position)
            if end >= 0:
                break
            self._fill(len(self._buffer) - self._position + 1)
        text = self._buffer[self._position : end].decode("utf-8", errors="replace")
        self._position = end + 1
        return text


_FNV_OFFSET = 2166136261
_HASH_CHUNK = 1024  # words hashed together at most
_FNV_PRIME = 16777619


def _fnv1a(data: bytes) -> int:
    # fastText hashes each byte as a *signed* char: bytes >= 0x80 are sign-extended.
    h = 2166136261
    for byte in data:
        h ^= byte if byte < 0x80 else (byte | 0xFFFFFF00)
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def reference_subword_ids(model: FastTextBin, word: str, limit: Optional[int] = None) -> List[int]:
    """`model.subword_ids(word, limit)` word by word in pure Python (the tests' reference)."""
    ids = []
    word_id = model.word_ids.get(word)
    if word_id is not None:
        ids.append(word_id)
    if word != EOS and model.maxn > 0 and model.bucket > 0:
        encoded = ("<" + word + ">").encode("utf-8", errors="surrogatepass")
        remaining = None if limit is None else max(limit - len(ids), 0)
        ids.extend(
            model.num_words + h
            for h in _ngram_hashes(encoded, model.minn, model.maxn, model.bucket, remaining)
        )
    return ids if limit is None else ids[:limit]


def _ngram_hashes(
    word: bytes, minn: int, maxn: int, bucket: int, limit: Optional[int] = None
) -> List[int]:
    """Character n-gram hashes of `word` (already wrapped in `<`, `>`), in fastText's order;
    the first `limit` of them if given."""
    hashes: List[int] = []
    length = len(word)
    for i in range(length):
        if limit is not None and len(hashes) >= limit:
            return hashes[:limit]
        if word[i] & 0xC0 == 0x80:  # not the first byte of a UTF-8 character
            continue
        j, n = i, 1
        while j < length and n <= maxn:
            j += 1
            while j < length and word[j] & 0xC0 == 0x80:
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == length)):
                hashes.append(_fnv1a(word[i:j]) % bucket)
            n += 1
    return hashes if limit is None else hashes[:limit]


def _batch_ngram_hashes(
    words: Sequence[str],
    minn: int,
    maxn: int,
    bucket: int,
    skip: Sequence[int] = (),
    lengths: Optional[np.ndarray] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """
    `_ngram_hashes` of every word (wrapped in `<`, `>` here) at once: a flat int64 array, word
    after word in fastText's order, and the number of hashes of each word. Every byte starts a
    running FNV-1a hash; after step `k` row `r` holds the hash of bytes `r..r+k`; the n-grams
    fastText keeps are selected by a mask, in row-major order (fastText's). The words at `skip`
    get none ("</s>"); `lengths` are the words' lengths in code points, if known.
    """
    if lengths is None:
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    lengths = lengths + 2  # with `<` and `>`
    data = np.frombuffer(
        ("<" + "><".join(words) + ">").encode("utf-8", errors="surrogatepass"), dtype=np.uint8
    )
    # fastText's quirk: each byte is read as a signed char and sign-extended to 32 bits.
    extended = data.view(np.int8).astype(np.uint32)
    num_bytes = len(data)
    char_ends = np.cumsum(lengths)  # per word, in characters
    sizes = np.arange(1, maxn + 1)
    if int(char_ends[-1]) == num_bytes:  # all ASCII: a byte is a character
        steps = maxn
        remaining = np.repeat(char_ends, lengths) - np.arange(num_bytes)  # to the word's end
        keep = (sizes <= remaining[:, None]) & (sizes >= minn)
        if minn <= 1:  # no 1-gram of the `<` or of the `>`
            keep[char_ends - lengths, 0] = False
            keep[remaining == 1, 0] = False
        word_rows = char_ends
    else:
        lead = (data & 0xC0) != 0x80
        starts = np.flatnonzero(lead)  # byte offset of each character
        starts_end = np.append(starts, num_bytes)
        byte_ends = starts_end[char_ends]  # per word, in bytes
        char_of_start = np.arange(len(starts))
        # The bytes spanned by the longest n-gram (maxn characters, within the word) of a start.
        last = np.minimum(char_of_start + maxn, np.repeat(char_ends, lengths))
        steps = int((starts_end[last] - starts).max())
        # Characters before each byte position (0 .. num_bytes + steps), for n-gram lengths.
        chars_before = np.zeros(num_bytes + steps + 1, dtype=np.int64)
        np.cumsum(lead, out=chars_before[1 : num_bytes + 1])
        chars_before[num_bytes + 1 :] = chars_before[num_bytes]
        boundary = np.ones(num_bytes + steps + 1, dtype=bool)  # a character starts (or all end)
        boundary[:num_bytes] = lead
        rows = np.arange(num_bytes)[:, None]
        ends = rows + np.arange(1, steps + 1)  # exclusive end byte of each (row, step)
        n = chars_before[ends] - chars_before[rows]
        word_end = np.repeat(byte_ends, np.diff(byte_ends, prepend=0))[:, None]
        keep = lead[:, None] & boundary[ends] & (ends <= word_end) & (n >= minn) & (n <= maxn)
        if minn <= 1:
            keep[np.concatenate(([0], byte_ends[:-1])), 0] = False  # the `<` (one byte)
            keep[byte_ends - 1, 0] = False  # the `>` (one byte, itself a start)
        word_rows = byte_ends
    padded = np.zeros(num_bytes + steps, dtype=np.uint32)
    padded[:num_bytes] = extended
    hashes = np.empty((num_bytes, steps), dtype=np.uint32)
    running = np.full(num_bytes, _FNV_OFFSET, dtype=np.uint32)
    prime = np.uint32(_FNV_PRIME)
    for k in range(steps):
        running ^= padded[k : k + num_bytes]
        running *= prime  # uint32 arithmetic wraps modulo 2**32, as in C++
        hashes[:, k] = running
    word_starts = np.concatenate(([0], word_rows[:-1]))
    for word in skip:
        keep[word_starts[word] : word_rows[word]] = False
    counts = np.add.reduceat(keep.sum(axis=1), word_starts)
    return (hashes[keep] % np.uint32(bucket)).astype(np.int64), counts
