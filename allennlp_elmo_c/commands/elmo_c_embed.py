"""
`allennlp elmo-c-embed`: writes ELMo-C representations of a tokenized text file to HDF5, like the
old `allennlp elmo` command, for pipelines that consume cached features (e.g. e2e-coref).

The output has one dataset per input line, named by the line's index ("0", "1", ...):
`(num_layers, num_tokens, dim)` with `--all` (the default), or `(num_tokens, dim)` with `--top`
or `--average`; an empty line gives `num_tokens = 0`. A JSON dataset `sentence_to_index` maps
each sentence to its index. The file is written as `OUTPUT.partial` and renamed to `OUTPUT` only
when complete, so an interrupted run never leaves a file that looks finished; running the same
command again resumes from the sentences already in `OUTPUT.partial`.

Lines that are not UTF-8 are read with U+FFFD for the bad bytes and NUL characters as spaces
(both counted and logged). A sentence longer than `--max-sentence-length` tokens stops the
command before anything is embedded, naming the lines (the biLM's memory grows with the longest
sentence of a batch). Sentences are batched by length, so padding stays small.
"""

import argparse
import json
import logging
import os
from pathlib import Path
from typing import IO, Iterable, Iterator, List, Optional, Union

import h5py
import numpy
import torch

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm

from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.text import check_sentences, decode_line
from allennlp_elmo_c.fasttext.fasttext_source import ARGUMENT_HINT
from allennlp_elmo_c.modules.elmo_c_representations import ElmoCRepresentations, index_sentences
from allennlp_elmo_c.modules.subword_representations import load_representations

logger = logging.getLogger(__name__)

OUTPUT_MODES = ("all", "top", "average")


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
    """
    Embeds every line of `input_file` (whitespace-tokenized) and writes `output_file` (HDF5).
    Returns its path. See the module docstring for the layout.
    """
    _check_arguments(Path(input_file), Path(output_file), output_mode, batch_size,
                     max_sentence_length)  # fmt: skip
    embedder = ElmoCEmbedder(str(archive_file), cuda_device, fasttext_path=fasttext_path)
    return embedder.embed_file(input_file, output_file, output_mode, batch_size,
                               max_sentence_length)  # fmt: skip


def _write_file(
    representations: ElmoCRepresentations,
    device: torch.device,
    input_file: Path,
    output_file: Path,
    output_mode: str,
    batch_size: int,
    max_sentence_length: int,
) -> Path:
    """`embed_file` with the model loaded."""
    _check_arguments(input_file, output_file, output_mode, batch_size, max_sentence_length)
    sentences = read_sentences(input_file)
    _check_lengths(sentences, input_file, max_sentence_length)
    partial = output_file.with_name(output_file.name + ".partial")
    with h5py.File(partial, "a") as out:
        todo = _sentences_to_do(out, sentences, partial)
        _write_empty_sentences(out, sentences, todo, representations, output_mode, input_file)
        _write_embeddings(out, sentences, todo, representations, output_mode, batch_size, device)
        _write_sentence_index(out, sentences)
    os.replace(partial, output_file)
    return output_file


def _check_arguments(
    input_file: Path, output_file: Path, output_mode: str, batch_size: int, max_sentence_length: int
) -> None:
    if output_mode not in OUTPUT_MODES:
        raise ConfigurationError(f"elmo-c-embed: output mode must be one of {OUTPUT_MODES}")
    if batch_size < 1:
        raise ConfigurationError("elmo-c-embed: batch size must be >= 1")
    if max_sentence_length < 1:
        raise ConfigurationError("elmo-c-embed: max sentence length must be >= 1")
    if not input_file.is_file():
        raise ConfigurationError(f"elmo-c-embed: input file {input_file} does not exist")
    if output_file.exists():
        raise ConfigurationError(f"elmo-c-embed: {output_file} exists; remove it to re-embed")


def _check_lengths(sentences: List[List[str]], input_file: Path, max_sentence_length: int) -> None:
    """Stops before anything is embedded if a sentence is longer than the maximum."""
    too_long = [
        i + 1 for i, sentence in enumerate(sentences) if len(sentence) > max_sentence_length
    ]
    if too_long:
        raise ConfigurationError(
            f"elmo-c-embed: {input_file} has {len(too_long)} line(s) longer than "
            f"{max_sentence_length} tokens (line {', '.join(map(str, too_long[:5]))}"
            f"{', ...' if len(too_long) > 5 else ''}); split them or raise --max-sentence-length"
        )


def _sentences_to_do(out: h5py.File, sentences: List[List[str]], partial: Path) -> List[int]:
    """The indices of the sentences not yet in `out` (a resumed run has some)."""
    todo = [index for index in range(len(sentences)) if str(index) not in out]
    if len(todo) < len(sentences):
        logger.info(
            "Resuming %s: %d of %d sentences done",
            partial,
            len(sentences) - len(todo),
            len(sentences),
        )
    return todo


def _write_empty_sentences(
    out: h5py.File,
    sentences: List[List[str]],
    todo: List[int],
    representations: ElmoCRepresentations,
    output_mode: str,
    input_file: Path,
) -> None:
    """Empty lines: `(num_layers, 0, dim)` entries (`(0, dim)` unless `--all`)."""
    empty = [index for index in todo if not sentences[index]]
    for index in empty:
        shape = (0, representations.get_output_dim())
        if output_mode == "all":
            shape = (representations.num_layers,) + shape
        out.create_dataset(str(index), shape, dtype="float32")
    if empty:
        logger.warning("%s: %d empty line(s) written as 0-token entries", input_file, len(empty))


def _write_embeddings(
    out: h5py.File,
    sentences: List[List[str]],
    todo: List[int],
    representations: ElmoCRepresentations,
    output_mode: str,
    batch_size: int,
    device: torch.device,
) -> None:
    """Embeds the non-empty sentences of `todo` in batches and writes each, flushing after
    every batch (so a resumed run loses at most one)."""
    # Longest first: padding stays small and a batch that does not fit fails at once.
    todo = sorted((i for i in todo if sentences[i]), key=lambda i: -len(sentences[i]))
    for start in Tqdm.tqdm(range(0, len(todo), batch_size), desc="embedding"):
        chunk = todo[start : start + batch_size]
        vectors = embed_sentences([sentences[i] for i in chunk], representations, device)
        for index, layers in zip(chunk, vectors):  # (num_layers, num_tokens, dim)
            if output_mode == "top":
                layers = layers[-1]  # (num_tokens, dim)
            elif output_mode == "average":
                layers = layers.mean(axis=0)  # (num_tokens, dim)
            out.create_dataset(str(index), data=layers)
        out.flush()


def _write_sentence_index(out: h5py.File, sentences: List[List[str]]) -> None:
    """The `sentence_to_index` JSON dataset (rewritten on a resumed run)."""
    if "sentence_to_index" in out:
        del out["sentence_to_index"]
    mapping = {" ".join(sentence): str(index) for index, sentence in enumerate(sentences)}
    out.create_dataset("sentence_to_index", data=numpy.array([json.dumps(mapping)], dtype=object),
                       dtype=h5py.string_dtype())  # fmt: skip


def read_sentences(input_file: Path) -> List[List[str]]:
    """Whitespace-tokenized lines, decoded by `decode_line`; lines with bytes that are not UTF-8
    and with NUL characters are counted and logged."""
    sentences, undecodable, with_nul = [], [], []
    with open(input_file, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            line, bad_bytes, had_nul = decode_line(raw, first=number == 1)
            if bad_bytes:
                undecodable.append(number)
            if had_nul:
                with_nul.append(number)
            sentences.append(line.split())
    for problem, numbers in (("bytes that are not UTF-8 (read as U+FFFD)", undecodable),
                             ("NUL characters (read as spaces)", with_nul)):  # fmt: skip
        if numbers:
            logger.warning(
                "%s: %d line(s) with %s, e.g. line %d",
                input_file,
                len(numbers),
                problem,
                numbers[0],
            )
    return sentences


@torch.no_grad()
def embed_sentences(
    sentences: List[List[str]],
    representations: ElmoCRepresentations,
    device: torch.device,
) -> List[numpy.ndarray]:
    """Every layer of `representations` for each sentence: `(num_layers, len(sentence), dim)`
    arrays, the boundary positions removed (what `elmo-c-embed --all` writes)."""
    tensors = index_sentences(sentences, representations.word_indexer(), representations.vocab)
    layers, _ = representations.layers(**{k: v.to(device) for k, v in tensors.items()})
    stacked = torch.stack(layers, dim=1).float().cpu().numpy()  # (batch, layers, time + 2, dim)
    return [stacked[row, :, 1 : len(sentence) + 1] for row, sentence in enumerate(sentences)]


class ElmoCEmbedder:
    """
    AllenNLP 0.9's `ElmoEmbedder` (removed from AllenNLP in 1.0) for an ELMo-C model: every layer
    of the biLM for tokenized sentences, as numpy arrays, through the code `elmo-c-embed` runs.
    Stateless: a sentence gets the same vectors whatever was embedded before.

        from allennlp_elmo_c import ElmoCEmbedder
        embedder = ElmoCEmbedder("runs/elmo_c/model.tar.gz")
        layers = embedder.embed_sentence(["The", "council", "met", "."])  # (3, 4, dim)

    # Parameters

    model : `str`
        The trained biLM: its model directory (`package`) or `model.tar.gz`.
    cuda_device : `int`, optional (default = `-1`)
        The GPU to run on; -1 for the CPU.
    fasttext_path : `str`, optional
        The biLM's fastText `.bin`, if it is no longer where the model recorded it.
    """

    def __init__(
        self, model: str, cuda_device: int = -1, fasttext_path: Optional[str] = None
    ) -> None:
        self.representations = load_representations(
            str(model), num_output_representations=0, dropout=0.0, fasttext_path=fasttext_path
        ).eval()
        self.device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
        self.representations.to(self.device)

    def _empty(self) -> numpy.ndarray:
        dim = self.representations.get_output_dim()
        return numpy.zeros((self.representations.num_layers, 0, dim), dtype=numpy.float32)

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        """Each sentence's layers, `(num_layers, len(sentence), dim)`; `(num_layers, 0, dim)`
        for an empty one."""
        check_sentences(batch, logger)
        filled = [index for index, sentence in enumerate(batch) if sentence]
        result = [self._empty() for _ in batch]
        if not filled:
            return result
        vectors = embed_sentences([batch[i] for i in filled], self.representations, self.device)
        for index, layers in zip(filled, vectors):
            result[index] = layers
        return result

    def embed_sentence(self, sentence: List[str]) -> numpy.ndarray:
        """`(num_layers, len(sentence), dim)`."""
        return self.embed_batch([sentence])[0]

    def embed_sentences(
        self, sentences: Iterable[List[str]], batch_size: int = 64
    ) -> Iterator[numpy.ndarray]:
        """`embed_sentence` of each sentence, in order, `batch_size` at a time."""
        if batch_size < 1:
            raise ConfigurationError("ElmoCEmbedder: batch_size must be >= 1")
        batch: List[List[str]] = []
        for sentence in sentences:
            batch.append(list(sentence))
            if len(batch) == batch_size:
                yield from self.embed_batch(batch)
                batch = []
        if batch:
            yield from self.embed_batch(batch)

    def embed_file(
        self,
        input_file: Union[str, Path, IO],
        output_file_path: Union[str, Path],
        output_format: str = "all",
        batch_size: int = 64,
        max_sentence_length: int = 10_000,
    ) -> Path:
        """The HDF5 file `elmo-c-embed` writes (see the module docstring); `output_format`
        "all", "top" or "average". `input_file` is a path or, as for 0.9's `ElmoEmbedder`, an
        open file (its lines are copied beside the output first)."""
        output = Path(output_file_path)
        if hasattr(input_file, "read"):
            text = input_file.read()
            copy = output.with_name(output.name + ".input.txt")
            copy.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
            try:
                return _write_file(self.representations, self.device, copy, output,
                                   output_format, batch_size, max_sentence_length)  # fmt: skip
            finally:
                copy.unlink()
        return _write_file(self.representations, self.device, Path(input_file), output,
                           output_format, batch_size, max_sentence_length)  # fmt: skip


@Subcommand.register("elmo-c-embed")
class ElmoCEmbed(PluginSubcommand):
    description = "Write ELMo-C representations of a tokenized text file to HDF5."

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("archive_file", help="the ELMo-C model.tar.gz")
        subparser.add_argument("input_file", help="one whitespace-tokenized sentence per line")
        subparser.add_argument("output_file", help="the HDF5 file to write")
        mode = subparser.add_mutually_exclusive_group()
        mode.add_argument(
            "--all", action="store_const", const="all", dest="mode", help="every layer (default)"
        )
        mode.add_argument(
            "--top", action="store_const", const="top", dest="mode", help="the top layer"
        )
        mode.add_argument(
            "--average",
            action="store_const",
            const="average",
            dest="mode",
            help="mean of the layers",
        )
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
