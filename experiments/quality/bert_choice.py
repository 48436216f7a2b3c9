"""
The BERT rows' choices in the Flair comparison, read from its JSON and kept free of torch (as
`flair_choice.py`): the embedding settings a BERT's tagger may use, and which BERT shape a budget's
comparison uses (the better mean development score).

    python -m experiments.quality.bert_choice RUN.json [--task ner] [--minutes 10]

prints the shape chosen on dev at `--minutes` (default: the run's smallest budget), for the next
run's `--systems`.
"""

import argparse
import statistics
from typing import Optional

from experiments.quality.systems import BERT_SHAPES

# A BERT's embedding settings in Flair's `TransformerWordEmbeddings`: subtoken pooling and layers
# (the top one, or the mean of every layer), by name.
BERT_EMBEDDINGS = {
    "first_top": {"subtoken_pooling": "first", "layers": "-1"},
    "first_all": {"subtoken_pooling": "first", "layers": "all"},
    "mean_top": {"subtoken_pooling": "mean", "layers": "-1"},
    "mean_all": {"subtoken_pooling": "mean", "layers": "all"},
}


def chosen_bert(data: dict, minutes: str, task: str = "ner") -> Optional[str]:
    """The BERT shape with the better mean development score on `task` at `minutes`."""
    scored = [(statistics.mean(cells[minutes][task]["dev"]), system)
              for system, cells in data["cells"].items()
              if system in BERT_SHAPES and cells.get(minutes, {}).get(task, {}).get("dev")]
    return max(scored)[1] if scored else None


def main(argv=None) -> Optional[str]:
    import json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json")
    parser.add_argument("--task", default="ner")
    parser.add_argument("--minutes", type=float, default=None)
    args = parser.parse_args(argv)
    with open(args.json, encoding="utf-8") as stream:
        data = json.load(stream)
    minutes = args.minutes if args.minutes is not None else min(data["minutes"])
    shape = chosen_bert(data, f"{minutes:g}", args.task)
    if shape is None:
        raise SystemExit(f"{args.json}: no BERT scored on {args.task} dev at {minutes:g} minutes")
    print(shape)
    return shape


if __name__ == "__main__":
    main()
