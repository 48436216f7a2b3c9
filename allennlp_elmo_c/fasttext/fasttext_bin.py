"""
A fastText `.bin` model read without the fastText library: its dictionary parsed, its input
matrix memory-mapped; subword ids as fastText's `Dictionary::getSubwords`, by the C extension
`_subwords` when it is built, else in pure Python.
"""

import functools
import hashlib
import logging
import mmap
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
# Every fingerprint computed in this process, with its file (for messages).
_FINGERPRINT_PATHS: Dict[int, str] = {}
# The twelve int32 arguments at the start of a `.bin` header, in file order.
ARG_NAMES = (
    "dim", "ws", "epoch", "min_count", "neg", "word_ngrams", "loss", "model",
    "bucket", "minn", "maxn", "lr_update_rate",
)  # fmt: skip
# False forces the pure-Python subword ids (the tests compare the two).
USE_NATIVE = True


@functools.lru_cache(maxsize=None)
def native_subwords():
    """The C extension computing subword ids (`_subwords.c`), or `None` if it is not built."""
    try:
        from allennlp_elmo_c.fasttext import _subwords
    except ImportError as error:
        _subwords, problem = None, f"not built ({error})"
    else:
        problem = None if getattr(_subwords, "API", None) == NATIVE_API else "of another version"
    if problem is not None:
        logger.info("fastText subword ids: the C extension is %s; using the pure-Python ids "
                    "(build it: `python setup.py build_ext --inplace`)", problem)  # fmt: skip
        return None
    return _subwords


class FastTextBin:
    """
    A fastText `.bin` (format 12, not quantized): its dictionary, subword settings (`minn`,
    `maxn`, `bucket`) and input matrix `(num_words + bucket, dim)` as a read-only memory map.
    `FastTextBin.load(path)` caches one instance per file.
    """

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigurationError(f"fastText model {self.path} does not exist")
        try:
            with open(self.path, "rb") as stream, mmap.mmap(
                stream.fileno(), 0, access=mmap.ACCESS_READ
            ) as data:
                matrix_offset = self._read_header(_Reader(data))
                rows, columns = self.num_rows, self.dim
                expected = _expected_size(data, matrix_offset + rows * columns * 4)
                self.fingerprint: int = _fingerprint(data, matrix_offset)
        except (struct.error, UnicodeDecodeError, EOFError, MemoryError, ValueError) as error:
            raise ConfigurationError(
                f"{self.path} is not a valid fastText .bin file (truncated or corrupt: {error})"
            ) from error
        if os.path.getsize(self.path) < expected:
            raise ConfigurationError(
                f"{self.path} is truncated: a complete model has {expected} bytes, the file has "
                f"{os.path.getsize(self.path)}"
            )
        self.input_matrix = np.memmap(
            self.path, dtype="<f4", mode="c", offset=matrix_offset, shape=(rows, columns)
        )
        self._cpu_matrix = torch.from_numpy(self.input_matrix)
        self._device_matrices: Dict[torch.device, torch.Tensor] = {}
        _FINGERPRINT_PATHS.setdefault(self.fingerprint, str(self.path))

    @property
    def stored_matrix_bytes(self) -> int:
        """The input matrix's bytes, at most the file's blocks on disk (a sparse file's holes)."""
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
        """The input matrix on `device`: the memory map on CPU, one shared copy elsewhere."""
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
        """The C extension's table of shared int objects, one per row id met."""
        return native_subwords().IntTable(self.num_rows)

    def subword_ids(self, word: str, limit: Optional[int] = None) -> List[int]:
        """The rows whose mean is `word`'s vector, as fastText's `get_subwords` (its own row if
        in the dictionary, then its n-grams'), at most `limit`."""
        return self.subword_ids_batch([word], limit)[0]

    def subword_ids_batch(
        self, words: Sequence[str], limit: Optional[int] = None
    ) -> List[List[int]]:
        """`subword_ids` of each of `words`."""
        return [list(ids) for ids in self.subword_ids_and_cuts(words, limit)[0]]

    def subword_ids_and_cuts(
        self, words: Sequence[str], limit: Optional[int] = None
    ) -> Tuple[List[Tuple[int, ...]], List[int]]:
        """`subword_ids_batch(words, limit)` as tuples (which the garbage collector does not
        track), and the indices of the words cut to `limit`."""
        native = native_subwords() if USE_NATIVE else None
        if native is not None:
            return native.subword_ids(
                words, self.word_ids, self._row_ints, self.minn, self.maxn, self.bucket,
                self.num_words, -1 if limit is None else limit,
            )
        longer = None if limit is None else limit + 1
        ids = [tuple(reference_subword_ids(self, word, longer)) for word in words]
        cut = [] if limit is None else [i for i, row in enumerate(ids) if len(row) > limit]
        for i in cut:
            ids[i] = ids[i][:limit]
        return ids, cut

    def word_vector(self, word: str) -> np.ndarray:
        """`word`'s vector, shape `(dim,)`, as fastText's `get_word_vector` computes it."""
        ids = self.subword_ids(word)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        return np.asarray(self.input_matrix[ids], dtype=np.float32).mean(axis=0)

    def __deepcopy__(self, memo) -> "FastTextBin":
        return self  # read-only and shared: copying a module that uses it must not copy the matrix

    def __getstate__(self):
        return {"path": str(self.path)}

    def __setstate__(self, state):
        self.__dict__ = FastTextBin.load(state["path"]).__dict__


def _expected_size(data: mmap.mmap, input_matrix_end: int) -> int:
    """Size of the whole file, from the output matrix header after the input matrix."""
    if len(data) < input_matrix_end + 17:
        return input_matrix_end + 17
    quantized, rows, columns = struct.unpack_from("<?qq", data, input_matrix_end)
    return input_matrix_end + 17 + (0 if quantized else rows * columns * 4)


def _fingerprint(data: mmap.mmap, matrix_offset: int) -> int:
    """A 52-bit hash (exact as a jsonnet double) of the file's size, everything before the input
    matrix, the matrix's first MB and the file's last MB."""
    digest = hashlib.blake2b(str(len(data)).encode(), digest_size=8)
    with memoryview(data) as view:
        digest.update(view[: matrix_offset + _FINGERPRINT_SPAN])
        digest.update(view[max(len(data) - _FINGERPRINT_SPAN, 0) :])
    return int.from_bytes(digest.digest(), "little") >> 12


class _Reader:
    """Fixed-size fields and NUL-terminated strings of a memory-mapped file, in order."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.offset = 0

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += struct.calcsize(fmt)
        return values

    def cstring(self) -> str:
        end = self.data.find(b"\x00", self.offset)
        if end < 0:
            raise EOFError("unexpected end of file in the header")
        text = self.data[self.offset : end].decode("utf-8", errors="replace")
        self.offset = end + 1
        return text


def _fnv1a(data: bytes) -> int:
    # fastText hashes each byte as a *signed* char: bytes >= 0x80 are sign-extended.
    h = 2166136261
    for byte in data:
        h ^= byte if byte < 0x80 else (byte | 0xFFFFFF00)
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def reference_subword_ids(model: FastTextBin, word: str, limit: Optional[int] = None) -> List[int]:
    """`model.subword_ids(word, limit)` in pure Python."""
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
