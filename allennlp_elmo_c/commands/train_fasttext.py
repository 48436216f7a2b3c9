"""`train-fasttext`: ELMo-C's frozen input and target vectors, a skipgram fastText model with
character n-grams, written as a standard `.bin`."""

import argparse
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Union

import fasttext

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.commands.subcommand import PluginSubcommand, options
from allennlp_elmo_c.common.build_cache import corpus_recipe, is_built, write_manifest
from allennlp_elmo_c.common.threads import thread_count

logger = logging.getLogger(__name__)

NAN_ATTEMPTS = 3  # fastText's spurious "Encountered NaN" on small corpora
INIT_BLOCKS = 10


def train_fasttext(
    corpus: Union[str, Path],
    output: Union[str, Path],
    dim: int = 100,
    minn: int = 3,
    maxn: int = 6,
    bucket: int = 200_000,
    epoch: int = 5,
    min_count: int = 5,
    lr: float = 0.05,
    threads: Optional[int] = None,
    force: bool = False,
    verbose: int = 2,
) -> Path:
    """
    Trains a skipgram fastText model on `corpus` and saves it to `output`, unless it is up to
    date (same corpus file and settings) or `force`. `minn` and `maxn` are the character n-gram
    lengths (`maxn = 0`: no subwords); `verbose` is fastText's (2: progress, 0: silent).
    """
    corpus, output = Path(corpus), Path(output)
    chosen = dict(dim=dim, minn=minn, maxn=maxn, bucket=bucket, epoch=epoch, min_count=min_count,
                  lr=lr)  # fmt: skip
    recipe: Dict[str, Any] = {**corpus_recipe(corpus, "train-fasttext"), "model": "skipgram",
                              **chosen}  # fmt: skip
    for name in ("dim", "bucket", "epoch", "min_count"):
        if chosen[name] < 1:
            raise ConfigurationError(f"train-fasttext: {name} must be >= 1, got {chosen[name]}")
    if not 0 <= minn <= maxn or (maxn > 0 and minn < 1):
        raise ConfigurationError(
            f"train-fasttext: need 1 <= minn <= maxn (or maxn = 0), got {minn}, {maxn}"
        )
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigurationError(f"train-fasttext: lr must be a positive number, got {lr}")
    threads = thread_count(threads, "train-fasttext: threads")
    manifest = output.name + ".json"
    if not force and is_built(output.parent, recipe, name=manifest):
        logger.info("%s is up to date (trained from %s with the same settings)", output, corpus)
        return output

    # fastText initialises its input matrix in ten blocks of rows, one per thread: fewer threads
    # leave rows uninitialised.
    settings = dict(chosen, input=str(corpus), model="skipgram", thread=max(threads, INIT_BLOCKS),
                    verbose=verbose)  # fmt: skip
    settings["minCount"] = settings.pop("min_count")
    logger.info("Training fastText on %s with %s", corpus, settings)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    for attempt in range(1, NAN_ATTEMPTS + 1):
        error = _train_in_child_process(settings, partial)
        if error is None:
            break
        if "NaN" in error and attempt < NAN_ATTEMPTS:
            logger.warning("fastText hit NaN (attempt %d of %d); retrying", attempt, NAN_ATTEMPTS)
            continue
        hint = ""
        if "NaN" in error:
            hint = (
                f" Training diverged (--lr {lr}, --bucket {bucket}): lower --lr (e.g. {lr / 5:g}); "
                "a larger, more varied corpus also helps."
            )
        elif "vocabulary" in error.lower():
            hint = f" No word occurs at least --min-count={min_count} times in {corpus}."
        raise ConfigurationError(f"fastText training on {corpus} failed: {error}{hint}")
    os.replace(partial, output)
    model = fasttext.load_model(str(output))
    words = len(model.get_words(on_unicode_error="replace"))
    write_manifest(output.parent, recipe, {"files": {output.name: {"words": words}}}, name=manifest)
    logger.info("Saved %s: %d words, dim %d", output, words, model.get_dimension())
    return output


# A fresh interpreter that imports only fastText: fewer spurious NaNs than beside torch, and a
# C++ abort cannot take the caller down.
_CHILD = """
import json, sys
import fasttext
settings, output, error_file = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    fasttext.train_unsupervised(**settings).save_model(output)
except (RuntimeError, ValueError) as error:
    open(error_file, "w", encoding="utf-8").write(str(error))
    sys.exit(3)
"""


def _train_in_child_process(settings: Dict[str, Any], output: Path) -> Optional[str]:
    """fastText's error message, or None when it saved the model to `output`."""
    error_file = output.with_name(output.name + ".error")
    error_file.unlink(missing_ok=True)
    command = [sys.executable, "-c", _CHILD, json.dumps(settings), str(output), str(error_file)]
    returncode = subprocess.run(command).returncode
    if returncode == 0 and output.is_file():
        return None
    if error_file.is_file():
        message = error_file.read_text(encoding="utf-8")
        error_file.unlink()
        return message
    return f"the fastText process exited with code {returncode}"


@Subcommand.register("train-fasttext")
class TrainFastText(PluginSubcommand):
    description = "Train skipgram fastText vectors with subwords (ELMo-C's input and targets)."

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("corpus", type=str, help="text file, whitespace-tokenized")
        subparser.add_argument("output", type=str, help="where to write the model (.bin)")
        subparser.add_argument("--dim", type=int, default=100, help="vector size")
        subparser.add_argument("--minn", type=int, default=3, help="shortest character n-gram")
        subparser.add_argument("--maxn", type=int, default=6, help="longest character n-gram")
        subparser.add_argument("--bucket", type=int, default=200_000, help="n-gram hash buckets")
        subparser.add_argument("--epoch", type=int, default=5)
        subparser.add_argument("--min-count", type=int, default=5,
                               help="the fewest occurrences of a word in the dictionary")
        subparser.add_argument("--lr", type=float, default=0.05)
        subparser.add_argument("--threads", type=int, default=None,
                               help="default: one per CPU this process may use")
        self.add_build_options(subparser)

    def run(self, args: argparse.Namespace) -> None:
        names = ("dim", "minn", "maxn", "bucket", "epoch", "min_count", "lr", "threads", "force")
        train_fasttext(args.corpus, args.output, verbose=0 if args.quiet else 2,
                       **options(args, *names))  # fmt: skip
