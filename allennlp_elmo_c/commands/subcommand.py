"""The base of this plugin's `allennlp` subcommands."""

import argparse

from allennlp.commands.subcommand import Subcommand


class PluginSubcommand(Subcommand):
    """
    A subcommand of this plugin: its help text (`description`), the arguments it takes
    (`add_arguments`) and what it does with them (`run`). Register subclasses with
    `@Subcommand.register(name)`. They need no `--include-package` (`requires_plugins = False`):
    `allennlp` finds them through the plugin, `python -m allennlp_elmo_c` imports them.
    """

    requires_plugins: bool = False
    description: str = ""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = self.description
        subparser = parser.add_parser(self.name, description=description, help=description)
        self.add_arguments(subparser)
        subparser.set_defaults(func=self.run)
        return subparser

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        raise NotImplementedError

    def run(self, args: argparse.Namespace) -> None:
        raise NotImplementedError
