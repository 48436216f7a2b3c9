"""
`allennlp train-bpe`: the BPE subword vocabulary of ELMo-Sub, trained with `tokenizers` on a
whitespace-tokenized corpus (read as the `lm_corpus` reader reads it): `OUTPUT/tokenizer.json`,
`OUTPUT/vocabulary/` (AllenNLP's `from_files` layout) and `OUTPUT/manifest.json`. Continuation
subwords carry `##`; `<S>`, `</S>` and `@@UNKNOWN@@` are never split.
"""

import argparse
import logging
import shutil
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import namespace_match
from allennlp.data.vocabulary import DEFAULT_NON_PADDED_NAMESPACES, DEFAULT_OOV_TOKEN, Vocabulary

from allennlp_elmo_c.commands.subcommand import PluginSubcommand, options
from allennlp_elmo_c.common.text import decode_line
from allennlp_elmo_c.common.build_cache import corpus_recipe, is_built, write_manifest

logger = logging.getLogger(__name__)

CONTINUATION_PREFIX = "##"
START_TOKEN, END_TOKEN = "<S>", "</S>"
SPECIAL_TOKENS = [START_TOKEN, END_TOKEN, DEFAULT_OOV_TOKEN]
TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_DIRECTORY = "vocabulary"


def train_bpe(
    corpus: Union[str, Path],
    output_directory: Union[str, Path],
    vocab_size: int = 30_000,
    min_frequency: int = 2,
    namespace: str = "subwords",
    limit_alphabet: Optional[int] = None,
    force: bool = False,
    show_progress: bool = True,
) -> Path:
    """
    Trains a BPE model on `corpus` into `output_directory`, unless it is up to date or `force`.

    # Parameters

    vocab_size : `int`
        The most subwords, special tokens and single characters included.
    min_frequency : `int`
        A pair must occur this often to be merged.
    namespace : `str`
        The subwords' vocabulary namespace, a padded one (not `*tags` / `*labels`).
    limit_alphabet : `int`, optional
        Keep only this many of the most frequent characters; default: all.
    """
    corpus, output_directory = Path(corpus), Path(output_directory)
    corpus_entries = corpus_recipe(corpus, "train-bpe")
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ConfigurationError(
            f"train-bpe: vocab_size must be > {len(SPECIAL_TOKENS)} (the special tokens), "
            f"got {vocab_size}"
        )
    if min_frequency < 1:
        raise ConfigurationError(f"train-bpe: min_frequency must be >= 1, got {min_frequency}")
    if limit_alphabet is not None and limit_alphabet < 1:
        raise ConfigurationError(f"train-bpe: limit_alphabet must be >= 1, got {limit_alphabet}")
    if not namespace or any(namespace_match(p, namespace) for p in DEFAULT_NON_PADDED_NAMESPACES):
        raise ConfigurationError(
            f"train-bpe: namespace {namespace!r} must be a padded namespace (not matching "
            f"{list(DEFAULT_NON_PADDED_NAMESPACES)})"
        )
    recipe: Dict[str, Any] = {
        **corpus_entries,
        "vocab_size": vocab_size,
        "min_frequency": min_frequency,
        "namespace": namespace,
        "limit_alphabet": limit_alphabet,
        "continuation_prefix": CONTINUATION_PREFIX,
        "special_tokens": SPECIAL_TOKENS,
    }
    if not force and is_built(output_directory, recipe):
        logger.info("%s is up to date (trained from %s)", output_directory, corpus)
        return output_directory

    tokenizer = Tokenizer(
        models.BPE(unk_token=DEFAULT_OOV_TOKEN, continuing_subword_prefix=CONTINUATION_PREFIX)
    )
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX, cleanup=False)
    settings: Dict[str, Any] = {} if limit_alphabet is None else {"limit_alphabet": limit_alphabet}
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        continuing_subword_prefix=CONTINUATION_PREFIX,
        show_progress=show_progress,
        **settings,
    )
    logger.info("Training BPE (vocab_size %d) on %s", vocab_size, corpus)
    tokenizer.train_from_iterator(_line_batches(corpus), trainer)
    subwords = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    if len(subwords) <= len(SPECIAL_TOKENS):
        raise ConfigurationError(f"train-bpe: corpus {corpus} holds no words")

    output_directory.mkdir(parents=True, exist_ok=True)
    partial = output_directory / (TOKENIZER_FILE + ".partial")
    tokenizer.save(str(partial))
    partial.replace(output_directory / TOKENIZER_FILE)
    vocabulary = Vocabulary()  # "subwords" is padded: 0 = @@PADDING@@, 1 = @@UNKNOWN@@
    vocabulary.add_tokens_to_namespace(
        [text for text, _ in subwords if text != DEFAULT_OOV_TOKEN], namespace
    )
    vocabulary_directory = output_directory / VOCABULARY_DIRECTORY
    shutil.rmtree(vocabulary_directory, ignore_errors=True)  # no stale namespace files
    vocabulary.save_to_files(str(vocabulary_directory))
    files = [TOKENIZER_FILE, f"{VOCABULARY_DIRECTORY}/{namespace}.txt"]
    size = vocabulary.get_vocab_size(namespace)
    write_manifest(output_directory, recipe, {"files": {name: {} for name in files}, "size": size})
    logger.info("Saved %s: %d subwords in namespace %r", output_directory, size, namespace)
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
        subparser.add_argument(
            "output_directory", type=str, help="gets tokenizer.json and vocabulary/"
        )
        subparser.add_argument("--vocab-size", type=int, default=30_000,
                               help="the most subwords")
        subparser.add_argument("--min-frequency", type=int, default=2,
                               help="how often a pair must occur to be merged")
        subparser.add_argument("--namespace", type=str, default="subwords",
                               help="the subwords' vocabulary namespace")
        subparser.add_argument("--limit-alphabet", type=int, default=None,
                               help="keep this many of the most frequent characters (default: all)")
        self.add_build_options(subparser)

    def run(self, args: argparse.Namespace) -> None:
        names = ("vocab_size", "min_frequency", "namespace", "limit_alphabet", "force")
        train_bpe(args.corpus, args.output_directory, show_progress=not args.quiet,
                  **options(args, *names))  # fmt: skip
