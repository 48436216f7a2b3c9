"""The base of this plugin's `allennlp` subcommands."""

import argparse
import os
import re
import sys
from typing import Any, Dict

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

DEBUG_ENV = "ELMO_C_DEBUG"


class PluginSubcommand(Subcommand):
    """
    A subcommand of this plugin (`@Subcommand.register(name)`): its help text (`description`),
    its arguments (`add_arguments`) and what it does (`run`). It needs no `--include-package`.
    A `ConfigurationError` is printed as `error: <message>` on one line, with exit status 1;
    with `--verbose` or `ELMO_C_DEBUG=1` it is raised with its traceback.
    """

    requires_plugins: bool = False
    description: str = ""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = self.description
        subparser = parser.add_parser(self.name, description=description, help=description)
        self.add_arguments(subparser)
        subparser.add_argument(
            "--verbose",
            action="store_true",
            help=f"on an error, its traceback rather than one line (as {DEBUG_ENV}=1 does)",
        )
        subparser.set_defaults(func=self._run_reporting_errors)
        return subparser

    def _run_reporting_errors(self, args: argparse.Namespace) -> None:
        try:
            self.run(args)
        except ConfigurationError as error:
            if args.verbose or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            print(f"error: {one_line(str(error))}", file=sys.stderr)
            sys.exit(1)

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        raise NotImplementedError

    @staticmethod
    def add_build_options(subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--force", action="store_true", help="redo even if up to date")
        subparser.add_argument("--quiet", action="store_true", help="no progress output")

    def run(self, args: argparse.Namespace) -> None:
        raise NotImplementedError


def options(args: argparse.Namespace, *names: str) -> Dict[str, Any]:
    """The parsed values of the options `names`, as keyword arguments."""
    return {name: getattr(args, name) for name in names}


def one_line(message: str) -> str:
    """`message`'s lines joined, with "; " where a line ends no sentence or clause."""
    joined = ""
    for line in filter(None, (line.strip() for line in message.splitlines())):
        if joined:
            joined += " " if re.search(r"[.:;,]$", joined) else "; "
        joined += line
    return joined
