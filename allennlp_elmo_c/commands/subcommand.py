"""The base of this plugin's `allennlp` subcommands."""

import argparse
from typing import Any, Dict

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

    @staticmethod
    def add_build_options(subparser: argparse.ArgumentParser) -> None:
        """`--force` and `--quiet`, the options of every command that builds a cached output."""
        subparser.add_argument("--force", action="store_true", help="redo even if up to date")
        subparser.add_argument("--quiet", action="store_true", help="no progress output")

    def run(self, args: argparse.Namespace) -> None:
        raise NotImplementedError


def options(args: argparse.Namespace, *names: str) -> Dict[str, Any]:
    """The parsed values of the options `names` (their argparse names), as keyword arguments of
    the function a subcommand runs."""
    return {name: getattr(args, name) for name in names}
