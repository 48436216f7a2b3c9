"""
How fast the `fasttext_subwords` indexer turns tokens into fastText subword ids with each of its
implementations, all timed in this run: the C extension (`_subwords.c`, "native", used when it
is built) and the pure-Python one it falls back to (`fasttext_bin.USE_NATIVE = False`: the
uncached words hashed word by word by `reference_subword_ids`).

    OMP_NUM_THREADS=1 python -m experiments.speed.indexing_speed [--bin tests/fixtures/fasttext/tiny.bin]

Words: a generated Zipfian vocabulary (`--vocab` types; lengths and letters like English word
types, frequent words shorter; 6% non-ASCII: accented Latin, Cyrillic, Greek, CJK, emoji; some
capitalized, with digits or punctuation) plus the model's own words. Timed in one thread, the
implementations in turn, the best of `--repeats` runs:

- cold: every token a distinct word (no cache hits), `tokens_to_indices` one sentence of
  `--sentence-length` tokens at a time as AllenNLP calls it, and all words in one call
  (`subword_ids_of`, e.g. for `embed_strings`), a fresh indexer each run (made before the
  timer, its cache freed after it: both happen once per process); the C extension's table of
  shared ints (`FastTextBin._row_ints`) belongs to the model and stays filled between runs, as
  in a process past its first batches (the first of the runs starts with it empty);
- warm: a Zipfian token stream indexed a second time (every word cached);
- the fastText library's own `get_subwords` per word (C++ hashing, but it loads the whole matrix
  into RAM: not an option for a 7 GB `cc.en.300.bin`), for scale.

Prints tokens/s and the native/pure-Python ratio (without the native column
if the extension is not built).
"""

import argparse
import random
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

PROJECT = Path(__file__).resolve().parents[2]

import numpy as np
import torch

from allennlp.data import Token, Vocabulary

from allennlp_elmo_c.data.token_indexers.fasttext_subwords import (
    FastTextSubwordsIndexer,
)
from allennlp_elmo_c.fasttext import fasttext_bin
from allennlp_elmo_c.fasttext.fasttext_bin import ARG_NAMES, FastTextBin


TINY = PROJECT / "tests" / "fixtures" / "fasttext" / "tiny.bin"
# English letter frequencies (%), for generated words.
LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
LETTER_WEIGHTS = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2,
                  2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1]  # fmt: skip
NON_ASCII = {
    "latin": "éèàüöäßçñøåíóú",
    "cyrillic": "абвгдежзиклмнопрстуфхцчшщыэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",
    "cjk": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
    "emoji": "😀😂🙂👍🎉🔥❤️🚀",
}


class PurePythonIndexer(FastTextSubwordsIndexer):
    """Today's indexer with the pure-Python implementation forced (the C extension's fallback)."""

    def subword_ids_of(self, texts: List[str]) -> List[Tuple[int, ...]]:
        fasttext_bin.USE_NATIVE = False
        try:
            return super().subword_ids_of(texts)
        finally:
            fasttext_bin.USE_NATIVE = True


def generated_word(rng: random.Random) -> str:
    length = max(1, min(int(rng.lognormvariate(2.0, 0.4)), 30))  # median ~7, like word types
    kind = rng.random()
    if kind < 0.06:
        alphabet = NON_ASCII[rng.choice(list(NON_ASCII))]
        if alphabet == NON_ASCII["latin"]:  # mostly ASCII letters with a few accented ones
            word = rng.choices(LETTERS, LETTER_WEIGHTS, k=length)
            for _ in range(rng.randint(1, 2)):
                word[rng.randrange(length)] = rng.choice(alphabet)
            return "".join(word)
        return "".join(rng.choice(alphabet) for _ in range(max(1, length // 2)))
    word = "".join(rng.choices(LETTERS, LETTER_WEIGHTS, k=length))
    if kind < 0.20:
        word = word.capitalize()
    elif kind < 0.23:
        word += str(rng.randint(0, 2030))
    elif kind < 0.25:
        word = word[: length // 2] + rng.choice("-'.") + word[length // 2 :]
    return word


def vocabulary(size: int, model_words: List[str], seed: int) -> List[str]:
    """Distinct words, roughly shortest first (for Zipfian ranks: frequent words are short)."""
    rng = random.Random(seed)
    words = dict.fromkeys(w for w in model_words if w != "</s>")
    while len(words) < size:
        words[generated_word(rng)] = None
    return sorted(words, key=lambda w: len(w) + rng.gauss(0, 3))


def zipf_sentences(words: List[str], tokens: int, length: int, seed: int) -> List[List[str]]:
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    stream = rng.choices(words, weights, k=tokens)
    return [stream[i : i + length] for i in range(0, tokens, length)]


def best_in_turn(
    work: Dict[str, Callable[[], Callable[[], object]]], repeats: int
) -> Dict[str, float]:
    """Prepares and runs each case in turn `repeats` times; each one's fastest run, in seconds
    (on a shared machine the fastest run is the one least slowed by other processes). Only the
    run is timed: a case's preparation (e.g. a fresh indexer) and the release of what the run
    built (a cold indexer's cache, freed once per process in real use) are not."""
    times: Dict[str, List[float]] = {name: [] for name in work}
    for _ in range(repeats):
        for name, prepare in work.items():
            run = prepare()
            start = time.perf_counter()
            result = run()
            times[name].append(time.perf_counter() - start)
            del run, result
    return {name: min(values) for name, values in times.items()}


def index_sentences(indexer_class, model_path: str, sentences, fresh: bool, warm=None):
    """A case indexing `sentences`: returns its run (with a fresh indexer each time if `fresh`,
    which the run returns so that it is released after the timer)."""
    vocab = Vocabulary()
    token_sentences = [[Token(w) for w in s] for s in sentences]
    shared = warm or indexer_class(model_path)

    def prepare() -> Callable[[], object]:
        indexer = indexer_class(model_path) if fresh else shared

        def run():
            for tokens in token_sentences:
                indexer.tokens_to_indices(tokens, vocab)
            return indexer

        return run

    return prepare


def one_call(indexer_class, model_path: str, words: List[str]):
    """A case: all `words` in one `subword_ids_of` call of a fresh indexer."""

    def prepare() -> Callable[[], object]:
        indexer = indexer_class(model_path)
        return lambda: (indexer, indexer.subword_ids_of(words))

    return prepare


def with_buckets(source: str, bucket: int, directory: str) -> str:
    """
    A copy of the fastText `.bin` `source` with `bucket` n-gram buckets (fastText's default and
    `cc.en.300.bin`'s is 2,000,000; the fixture has far fewer): the same words and settings, the
    header's bucket count and the input matrix's rows changed, the n-gram rows random (their
    values do not matter to indexing). Ids then spread over
    as many rows as a real model's, and so do the shared ints of the C extension.
    """
    model = FastTextBin(source)
    data = Path(source).read_bytes()
    matrix = model.input_matrix
    header = 8 + 4 * ARG_NAMES.index("bucket")  # magic, version, then the int arguments
    patched = bytearray(data[: matrix.offset - 17])  # up to the matrix's (quantized, rows, dim)
    patched[header : header + 4] = struct.pack("<i", bucket)
    patched += struct.pack("<?qq", False, model.num_words + bucket, model.dim)
    rows = np.random.default_rng(0).normal(0.0, 0.1, (bucket, model.dim)).astype("<f4")
    path = Path(directory) / f"{Path(source).stem}.bucket{bucket}.bin"
    with open(path, "wb") as stream:
        stream.write(patched)
        stream.write(np.ascontiguousarray(matrix[: model.num_words]).tobytes())
        stream.write(rows.tobytes())
        stream.write(data[matrix.offset + matrix.nbytes :])  # the output matrix
    copy = FastTextBin(path)
    assert copy.bucket == bucket and copy.words == model.words, "bad bucket copy"
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(TINY), help="fastText .bin (default: the fixture)")
    parser.add_argument("--bucket", type=int, default=None, help="time a copy of the model "
                        "with this many n-gram buckets (e.g. 2000000, fastText's default)")
    parser.add_argument("--vocab", type=int, default=200_000, help="word types")
    parser.add_argument("--cold-tokens", type=int, default=100_000, help="distinct words, cold")
    parser.add_argument("--warm-tokens", type=int, default=500_000)
    parser.add_argument("--sentence-length", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model_path = args.bin
    if args.bucket is not None:
        temporary = tempfile.TemporaryDirectory()
        model_path = with_buckets(args.bin, args.bucket, temporary.name)
    model_words = FastTextSubwordsIndexer(model_path)._model.words
    words = vocabulary(args.vocab, model_words, args.seed)
    print(f"model: {model_path}; {len(words):,} word types ({len(model_words):,} the model's), "
          f"{sum(any(ord(c) > 127 for c in w) for w in words) / len(words):.1%} non-ASCII, mean "
          f"{statistics.mean(map(len, words)):.1f} characters")

    # Cold: distinct words, in random order.
    distinct = random.Random(args.seed).sample(words, min(args.cold_tokens, len(words)))
    n = args.sentence_length
    cold_sentences = [distinct[i : i + n] for i in range(0, len(distinct), n)]
    stream = zipf_sentences(words, args.warm_tokens, n, args.seed + 1)
    implementations = {"pure Python": PurePythonIndexer}
    if fasttext_bin.native_subwords() is not None:
        implementations["native"] = FastTextSubwordsIndexer
    else:
        print("the C extension is not built (python setup.py build_ext --inplace): no native")
    work: Dict[str, Dict[str, Callable[[], None]]] = {}
    for name, indexer_class in implementations.items():
        warm_indexer = indexer_class(model_path)
        index_sentences(indexer_class, model_path, stream, fresh=False, warm=warm_indexer)()()
        work[name] = {
            "cold, per sentence": index_sentences(
                indexer_class, model_path, cold_sentences, fresh=True
            ),
            "cold, one call": one_call(indexer_class, model_path, distinct),
            "warm, per sentence": index_sentences(
                indexer_class, model_path, stream, fresh=False, warm=warm_indexer
            ),
        }
    tokens = {"cold, per sentence": len(distinct), "cold, one call": len(distinct),
              "warm, per sentence": args.warm_tokens}  # fmt: skip
    rates: Dict[str, Dict[str, float]] = {name: {} for name in work}
    for case, count in tokens.items():
        # The implementations in turn, so that load on the machine hits all alike; the best run.
        seconds = best_in_turn({name: work[name][case] for name in work}, args.repeats)
        for name in work:
            rates[name][case] = count / seconds[name]
    print(f"\nindexing, tokens/s (1 thread, best of {args.repeats}, implementations in turn):")
    ratios = ["native/Python"] if "native" in rates else []
    print(f"{'':24}" + "".join(f"{name:>15}" for name in [*rates, *ratios]))
    for case in tokens:
        line = "".join(f"{rates[name][case]:15,.0f}" for name in rates)
        if ratios:
            native = rates["native"][case]
            line += f"{native / rates['pure Python'][case]:14.1f}x"
        print(f"{case:24}{line}")

    try:
        import fasttext

        library = fasttext.load_model(model_path)
        seconds = best_in_turn(
            {"library": lambda: lambda: [library.get_subwords(w) for w in distinct]}, args.repeats
        )["library"]
        print(f"{'fastText get_subwords':24}{len(distinct) / seconds:15,.0f} (C++ per word, "
              "whole matrix in RAM)")
    except ImportError:
        print("fastText library not installed: get_subwords not timed")



if __name__ == "__main__":
    main()
