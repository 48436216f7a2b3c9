"""`convert-config`: a stock AllenNLP task config that uses ELMo, converted to use an ELMo-C
model (`config_conversion.py`) and written as JSON."""

import argparse
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import Params

from allennlp_elmo_c.commands.config_conversion import Conversion, convert_config
from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.atomic import atomic_open

_UNDEFINED = re.compile(r"undefined external variable: (\S+)")


def load_stock_config(
    config_file: str, ext_vars: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """A config file evaluated as `allennlp train` does (`ext_vars` over the environment); an
    unset `std.extVar` is a `ConfigurationError` naming every unset one."""
    if not Path(config_file).is_file():
        raise ConfigurationError(f"config {config_file} does not exist")
    given = dict(ext_vars or {})
    missing: List[str] = []
    while True:
        try:
            values = {**given, **dict.fromkeys(missing, "0")}  # the unset ones found so far: "0"
            params = Params.from_file(config_file, ext_vars=values)
        except RuntimeError as error:  # _jsonnet's errors
            name = _UNDEFINED.search(str(error))
            if name and name.group(1) not in missing and len(missing) < 100:
                missing.append(name.group(1))
                continue
            if missing:
                break
            raise ConfigurationError(f"config {config_file} does not evaluate: {error}") from error
        except ValueError as error:  # not JSON after all
            raise ConfigurationError(
                f"config {config_file} is not a JSON object: {error}"
            ) from error
        break
    if missing:
        raise ConfigurationError(
            f"config {config_file} reads the external variable(s) {', '.join(sorted(missing))} "
            "(std.extVar), which are not set: set them in the environment or give them with "
            "--ext-var NAME=VALUE (their values are written into the converted config)"
        )
    config = params.as_dict(quiet=True)
    if not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"config {config_file} has no model")
    return config


def convert_config_file(
    config_file: str,
    archive_file: str,
    output_file: str,
    ext_vars: Optional[Dict[str, str]] = None,
    fasttext_path: Optional[str] = None,
    stock_dim: Optional[int] = None,
) -> Conversion:
    """Converts `config_file` (`convert_config`) and writes it to `output_file` as JSON, the
    values of its external variables in it."""
    stock = load_stock_config(config_file, ext_vars)
    conversion = convert_config(stock, archive_file, fasttext_path, stock_dim)
    with atomic_open(output_file) as output:
        json.dump(conversion.config, output, indent=2)
    return conversion


def format_conversion(conversion: Conversion, output_file: str) -> str:
    lines = [f"{len(conversion.changes)} change(s):"]
    lines += [f"  {change}" for change in conversion.changes]
    lines += [f"note: {note}" for note in conversion.notes]
    lines.append(f"wrote {output_file}")
    return "\n".join(lines)


def _ext_var(text: str) -> Tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


@Subcommand.register("convert-config")
class ConvertConfig(PluginSubcommand):
    description = (
        "Convert a stock AllenNLP task config that uses ELMo (elmo_token_embedder, a language-"
        "model embedder, or BCN's elmo) to use an ELMo-C model, resizing the layers that read "
        "it; prints every change."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("config_file", type=str, help="the stock config (.jsonnet / .json)")
        subparser.add_argument("archive_file", type=str,
                               help="the ELMo-C model.tar.gz or model directory")
        subparser.add_argument("output_file", type=str,
                               help="where to write the converted config (JSON)")
        subparser.add_argument(
            "--ext-var", type=_ext_var, action="append", default=[], metavar="NAME=VALUE",
            help="an external variable (std.extVar) of the config; overrides the environment",
        )  # fmt: skip
        subparser.add_argument(
            "--fasttext-path", type=str, default=None,
            help="the biLM's fastText .bin, if not where the archive recorded it",
        )  # fmt: skip
        subparser.add_argument(
            "--stock-dim", type=int, default=None, metavar="N",
            help="the output size of the stock ELMo / language-model embedder where the config "
            "does not tell it; default: 1024",
        )  # fmt: skip

    def run(self, args: argparse.Namespace) -> None:
        conversion = convert_config_file(
            args.config_file, args.archive_file, args.output_file, dict(args.ext_var),
            args.fasttext_path, args.stock_dim,
        )  # fmt: skip
        print(format_conversion(conversion, args.output_file))
