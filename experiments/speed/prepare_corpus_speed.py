"""
How fast `prepare-corpus` turns raw text into a corpus, against how fast the demo config pretrains
on one: the news corpus (`data/news/train.txt`, one sentence per line) joined back into
documents of `--lines-per-document` sentences (blank-line-separated blocks, `--paragraphs`), or,
without it, generated text; timed in-process (the `prepare_corpus` call: reading, spaCy, dedup,
writing; not Python's start-up), in one thread.

    OMP_NUM_THREADS=1 python -m experiments.speed.prepare_corpus_speed [--corpus data/news/train.txt]

Prints tokens/s and how many times faster than pretraining that is. The reference pretraining
speed is ELMo-C's demo config on 1 CPU thread, 3,535 tokens/s (`experiments/quality/QUALITY.md`):
preparing a corpus is worth optimizing only if it comes near that.
"""

import argparse
import json
import logging
import random
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus

PRETRAINING_TOKENS_PER_SECOND = 3_535  # experiments/quality/QUALITY.md, ELMo-C demo, 1 CPU thread


def generated_documents(tokens: int, seed: int = 13):
    """Sentences of 5 to 30 words from a Zipf-like vocabulary, 20 to a document."""
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(20_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    made = 0
    while made < tokens:
        sentences = []
        for _ in range(20):
            sentence = rng.choices(words, weights, k=rng.randint(5, 30))
            sentences.append(" ".join(sentence).capitalize() + ".")
            made += len(sentence) + 1
        yield " ".join(sentences)


def news_documents(corpus: Path, lines_per_document: int, tokens: int):
    document, made = [], 0
    with open(corpus, encoding="utf-8") as lines:
        for line in lines:
            if made >= tokens:
                break
            document.append(line.strip())
            made += len(line.split())
            if len(document) == lines_per_document:
                yield " ".join(document)
                document = []
    if document:
        yield " ".join(document)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(PROJECT / "data" / "news" / "train.txt"))
    parser.add_argument("--lines-per-document", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=1_000_000, help="about this many tokens")
    parser.add_argument("--language", default="en")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    corpus = Path(args.corpus)
    with tempfile.TemporaryDirectory() as directory:
        raw = Path(directory) / "raw" / "documents.txt"
        raw.parent.mkdir()
        if corpus.is_file():
            source = f"{corpus}, {args.lines_per_document} sentences a document"
            documents = news_documents(corpus, args.lines_per_document, args.tokens)
        else:
            source = f"generated text ({corpus} not found)"
            documents = generated_documents(args.tokens)
        with open(raw, "w", encoding="utf-8") as out:
            for document in documents:
                out.write(document + "\n\n")
        start = time.perf_counter()
        output = prepare_corpus(
            [raw.parent], Path(directory) / "out", language=args.language, paragraphs=True,
            show_progress=False,
        )
        seconds = time.perf_counter() - start
        stats = json.loads((output / "manifest.json").read_text(encoding="utf-8"))["stats"]
    tokens = sum(split["tokens"] for split in stats["splits"].values())
    rate = tokens / seconds
    print(f"input: {source}")
    print(f"prepare-corpus: {tokens:,} tokens written ({stats['duplicates_removed']:,} duplicate "
          f"sentences removed) in {seconds:.1f} s = {rate:,.0f} tokens/s")
    print(f"reference: ELMo-C demo pretraining, {PRETRAINING_TOKENS_PER_SECOND:,} tokens/s on 1 "
          "CPU thread (experiments/quality/QUALITY.md)")
    print(f"ratio: prepare-corpus is {rate / PRETRAINING_TOKENS_PER_SECOND:.1f}x pretraining speed")


if __name__ == "__main__":
    main()
