"""
`allennlp elmo-c-embed`: ELMo-C representations of a tokenized text file in HDF5, like the old
`allennlp elmo` command (`ElmoCEmbedder.embed_file` writes it).
"""

import argparse
from pathlib import Path
from typing import Optional, Union

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.fasttext.fasttext_source import ARGUMENT_HINT
from allennlp_elmo_c.modules.elmo_c import ElmoCEmbedder, check_arguments


def embed_file(
    archive_file: Union[str, Path],
    input_file: Union[str, Path],
    output_file: Union[str, Path],
    output_mode: str = "all",
    batch_size: int = 64,
    cuda_device: int = -1,
    fasttext_path: Optional[str] = None,
    max_sentence_length: int = 10_000,
) -> Path:
    """`ElmoCEmbedder(archive_file, ...).embed_file(...)`, its arguments checked first."""
    check_arguments(Path(input_file), Path(output_file), output_mode, batch_size,
                    max_sentence_length)  # fmt: skip
    embedder = ElmoCEmbedder(str(archive_file), cuda_device, fasttext_path=fasttext_path)
    return embedder.embed_file(input_file, output_file, output_mode, batch_size,
                               max_sentence_length)  # fmt: skip


@Subcommand.register("elmo-c-embed")
class ElmoCEmbed(PluginSubcommand):
    description = "Write ELMo-C representations of a tokenized text file to HDF5."

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("archive_file", help="the ELMo-C model.tar.gz or model directory")
        subparser.add_argument("input_file", help="one whitespace-tokenized sentence per line")
        subparser.add_argument("output_file", help="the HDF5 file to write")
        mode = subparser.add_mutually_exclusive_group()
        for name, help in (("all", "every layer (default)"), ("top", "the top layer"),
                           ("average", "mean of the layers")):  # fmt: skip
            mode.add_argument(f"--{name}", action="store_const", const=name, dest="mode", help=help)
        subparser.add_argument("--batch-size", type=int, default=64)
        subparser.add_argument("--cuda-device", type=int, default=-1)
        subparser.add_argument("--fasttext-path", default=None, help="the biLM's .bin, if moved")
        subparser.add_argument(
            "--max-sentence-length",
            type=int,
            default=10_000,
            help="stop (before embedding anything) if a line has more tokens than this",
        )

    def run(self, args: argparse.Namespace) -> None:
        try:
            embed_file(
                args.archive_file,
                args.input_file,
                args.output_file,
                args.mode or "all",
                args.batch_size,
                args.cuda_device,
                args.fasttext_path,
                args.max_sentence_length,
            )
        except ConfigurationError as error:
            raise ConfigurationError(cli_message(str(error))) from error


def cli_message(message: str) -> str:
    """A library error as the command's user needs it: naming the flags, not the arguments."""
    message = message.replace(ARGUMENT_HINT, "--fasttext-path")
    return message.replace("fasttext_path", "--fasttext-path")
