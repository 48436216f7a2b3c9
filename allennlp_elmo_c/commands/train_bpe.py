"""
`allennlp train-bpe`: the BPE subword vocabulary of ELMo-Sub, trained with `tokenizers` on a
whitespace-tokenized corpus: `OUTPUT/tokenizer.json`, `OUTPUT/vocabulary/` (namespace
`subwords`) and `OUTPUT/manifest.json`. Continuation subwords carry `##`; `<S>`, `</S>` and
`@@UNKNOWN@@` are never split.
"""

import argparse
import logging
import shutil
from pathlib import Path
from typing import Any, Dict, Iterator, List, Union

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.data.vocabulary import DEFAULT_OOV_TOKEN, Vocabulary

from allennlp_elmo_c.commands.subcommand import PluginSubcommand, options
from allennlp_elmo_c.common.atomic import atomic_path
from allennlp_elmo_c.common.build_cache import corpus_recipe, is_built, write_manifest
from allennlp_elmo_c.common.text import decode_line

logger = logging.getLogger(__name__)

CONTINUATION_PREFIX = "##"
SPECIAL_TOKENS = ["<S>", "</S>", DEFAULT_OOV_TOKEN]
NAMESPACE = "subwords"
TOKENIZER_FILE = "tokenizer.json"


def train_bpe(
    corpus: Union[str, Path],
    output_directory: Union[str, Path],
    vocab_size: int = 30_000,
    min_frequency: int = 2,
    force: bool = False,
    show_progress: bool = True,
) -> Path:
    """Trains a BPE model of at most `vocab_size` subwords (special tokens and single characters
    included) on `corpus` into `output_directory`, merging pairs that occur `min_frequency`
    times, unless it is up to date or `force`."""
    corpus, output_directory = Path(corpus), Path(output_directory)
    recipe: Dict[str, Any] = {
        **corpus_recipe(corpus, "train-bpe"),
        "vocab_size": vocab_size,
        "min_frequency": min_frequency,
        "namespace": NAMESPACE,
        "continuation_prefix": CONTINUATION_PREFIX,
        "special_tokens": SPECIAL_TOKENS,
    }
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ConfigurationError(
            f"train-bpe: vocab_size must be > {len(SPECIAL_TOKENS)} (the special tokens), "
            f"got {vocab_size}"
        )
    if min_frequency < 1:
        raise ConfigurationError(f"train-bpe: min_frequency must be >= 1, got {min_frequency}")
    if not force and is_built(output_directory, recipe):
        logger.info("%s is up to date (trained from %s)", output_directory, corpus)
        return output_directory

    tokenizer = Tokenizer(
        models.BPE(unk_token=DEFAULT_OOV_TOKEN, continuing_subword_prefix=CONTINUATION_PREFIX)
    )
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX, cleanup=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        continuing_subword_prefix=CONTINUATION_PREFIX,
        show_progress=show_progress,
    )
    logger.info("Training BPE (vocab_size %d) on %s", vocab_size, corpus)
    tokenizer.train_from_iterator(_line_batches(corpus), trainer)
    subwords = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    if len(subwords) <= len(SPECIAL_TOKENS):
        raise ConfigurationError(f"train-bpe: corpus {corpus} holds no words")

    with atomic_path(output_directory / TOKENIZER_FILE) as temporary:
        tokenizer.save(str(temporary))
    vocabulary = Vocabulary()  # "subwords" is padded: 0 = @@PADDING@@, 1 = @@UNKNOWN@@
    vocabulary.add_tokens_to_namespace(
        [text for text, _ in subwords if text != DEFAULT_OOV_TOKEN], NAMESPACE
    )
    shutil.rmtree(output_directory / "vocabulary", ignore_errors=True)
    vocabulary.save_to_files(str(output_directory / "vocabulary"))
    files = [TOKENIZER_FILE, f"vocabulary/{NAMESPACE}.txt"]
    size = vocabulary.get_vocab_size(NAMESPACE)
    write_manifest(output_directory, recipe, {"files": {name: {} for name in files}, "size": size})
    logger.info("Saved %s: %d subwords", output_directory, size)
    return output_directory


def _line_batches(corpus: Path, batch_size: int = 1000) -> Iterator[List[str]]:
    """The corpus lines as the `lm_corpus` reader reads them, words joined by single spaces."""
    batch: List[str] = []
    with open(corpus, "rb") as lines:
        for number, raw in enumerate(lines):
            words = decode_line(raw, first=number == 0)[0].split()
            if words:
                batch.append(" ".join(words))
            if len(batch) == batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


@Subcommand.register("train-bpe")
class TrainBpe(PluginSubcommand):
    description = "Train the BPE subword vocabulary of ELMo-Sub (tokenizer.json, vocabulary/)."

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("corpus", type=str, help="text file, whitespace-tokenized")
        subparser.add_argument("output_directory", type=str,
                               help="gets tokenizer.json and vocabulary/")  # fmt: skip
        subparser.add_argument("--vocab-size", type=int, default=30_000, help="the most subwords")
        subparser.add_argument("--min-frequency", type=int, default=2,
                               help="how often a pair must occur to be merged")  # fmt: skip
        self.add_build_options(subparser)

    def run(self, args: argparse.Namespace) -> None:
        train_bpe(args.corpus, args.output_directory, show_progress=not args.quiet,
                  **options(args, "vocab_size", "min_frequency", "force"))  # fmt: skip
