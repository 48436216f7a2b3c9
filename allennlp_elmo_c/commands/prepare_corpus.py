"""`prepare-corpus`: raw text into the corpus format (one tokenized sentence a line), split by
document into train and validation, with a `manifest.json` of counts and problems
(docs/your-data.md)."""

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
import re
import sys
import time
import zlib
from collections import deque
from pathlib import Path
from typing import IO, Any, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import spacy
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from tqdm import tqdm

from allennlp_elmo_c.commands.subcommand import PluginSubcommand, options
from allennlp_elmo_c.common.atomic import atomic_path, remove_stale_temporaries
from allennlp_elmo_c.common.build_cache import MANIFEST, is_built, write_manifest
from allennlp_elmo_c.common.recent_set import RecentSet
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer
from allennlp_elmo_c.common.text import decode_line
from allennlp_elmo_c.data.corpus import PIECE_BYTES, file_problem, line_pieces
from allennlp_elmo_c.received.limits import MAX_JSON_DEPTH as MAX_DEPTH
from allennlp_elmo_c.received.received_json import json_depth

logger = logging.getLogger(__name__)

RECIPE_VERSION = 1
TEXT_SUFFIXES = (".txt", ".txt.gz")
JSON_SUFFIXES = (".jsonl", ".jsonl.gz")
KINDS = ".txt, .txt.gz, .jsonl or .jsonl.gz"
# The longest text given to spaCy at once (its `max_length` is 1,000,000).
CHUNK_CHARACTERS = PIECE_BYTES
# Sentence hashes held to find duplicates (`--duplicate-window`), about 80 bytes of memory each.
DUPLICATE_WINDOW = 8_000_000
# A `.jsonl` line (one document) longer than this is skipped, never read into memory whole.
MAX_JSON_LINE_BYTES = 64 * 1024 * 1024
# A file is binary when its first SNIFF_BYTES hold more than these fractions of NUL bytes or of
# bytes that are not UTF-8.
SNIFF_BYTES = 8192
BINARY_NUL_FRACTION = 0.01
BINARY_UNDECODABLE_FRACTION = 0.3
# What a read of a damaged file (a truncated or corrupt .gz) raises.
_READ_ERRORS = (OSError, EOFError, zlib.error)
_OUTPUT_NAME = re.compile(r"^(train(-\d{5})?|validation)\.txt$")

PathOrStr = Union[str, "os.PathLike[str]"]


class _InputFile:
    """One file to read: its path, its name in hashes and messages, and its problem counts."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self.problems: Dict[str, Any] = {}
        self.sentences = 0

    def count(self, problem: str) -> None:
        self.problems[problem] = self.problems.get(problem, 0) + 1

    def open(self) -> IO[bytes]:
        if self.path.name.endswith(".gz"):
            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return open(self.path, "rb")


def prepare_corpus(
    inputs: Sequence[PathOrStr],
    output_directory: PathOrStr,
    language: str = "en",
    validation_fraction: float = 0.01,
    shard_tokens: Optional[int] = None,
    seed: int = 13,
    text_field: str = "text",
    paragraphs: bool = False,
    duplicate_window: int = DUPLICATE_WINDOW,
    force: bool = False,
    show_progress: bool = True,
) -> Path:
    """Writes the corpus of `inputs` (files or directories) into `output_directory` and returns
    it, unless it is up to date or `force`; the options are the command's."""
    output_directory = Path(output_directory)
    options = dict(language=language, validation_fraction=validation_fraction, seed=seed,
                   shard_tokens=shard_tokens, text_field=text_field, paragraphs=paragraphs,
                   duplicate_window=duplicate_window)  # fmt: skip
    _check_options(inputs, options)
    files, skipped = _find_inputs([Path(p) for p in inputs], output_directory)
    recipe = _recipe(files, skipped, options)
    if not force and is_built(output_directory, recipe):
        logger.info("%s is up to date (prepare-corpus with the same inputs and options)",
                    output_directory)
        return output_directory
    tokenizer = SentenceTokenizer(language=language)  # before any output: a bad --language stops
    usable = _usable_files(files, skipped, inputs)

    output_directory.mkdir(parents=True, exist_ok=True)
    (output_directory / MANIFEST).unlink(missing_ok=True)  # no longer a finished build
    remove_stale_temporaries(output_directory)
    writer = _Writer(output_directory, shard_tokens)
    splitter = _Splitter(writer, seed, validation_fraction, duplicate_window)
    start = time.perf_counter()
    progress = tqdm(
        desc="prepare-corpus", unit=" tokens", unit_scale=True, file=sys.stderr,
        disable=not show_progress, mininterval=1.0,
    )
    with progress, writer:
        for file, key, sentences in _tokenized(tokenizer, usable, text_field, paragraphs):
            progress.update(splitter.add(file, key, sentences))
        if not any(split["sentences"] for split in splitter.splits.values()):
            raise ConfigurationError(
                f"prepare-corpus: {[str(p) for p in inputs]} hold no text (no sentence with a "
                "token was found); see the warnings above for the files skipped"
            )
    seconds = time.perf_counter() - start
    for name, counts in writer.files.items():  # the sizes a reader checks the counts against
        counts["bytes"] = (output_directory / name).stat().st_size

    problems = _report_inputs(usable, skipped)
    splits = splitter.splits
    if validation_fraction > 0 and not splits["validation"]["sentences"]:
        logger.warning(
            "prepare-corpus: validation.txt is empty: no document of %d fell in the validation "
            "fraction %g; give more documents (--paragraphs makes each block one) or a larger "
            "--validation-fraction", splits["train"]["documents"], validation_fraction,
        )
    window = {"sentences": duplicate_window, "forgotten": splitter.seen.forgotten}
    _remove_stale_outputs(output_directory, set(writer.files))
    write_manifest(output_directory, recipe, dict(
        files=writer.files, splits=splits, duplicates_removed=splitter.duplicates,
        duplicate_window=window, inputs_read=len(usable), skipped=skipped, problems=problems,
    ))  # fmt: skip
    total_tokens = splits["train"]["tokens"] + splits["validation"]["tokens"]
    logger.info(
        "prepare-corpus wrote %s: train %d / validation %d sentences, %d tokens, %d duplicate "
        "sentences removed, %d input(s) skipped (%.0f tokens/s)", output_directory,
        splits["train"]["sentences"], splits["validation"]["sentences"], total_tokens,
        splitter.duplicates, len(skipped), total_tokens / max(seconds, 1e-9),
    )
    return output_directory


def _check_options(inputs: Sequence[PathOrStr], options: Dict[str, Any]) -> None:
    """Refuses options `prepare_corpus` cannot run with, naming the one to change."""
    if not inputs:
        raise ConfigurationError("prepare-corpus: give at least one INPUT file or directory")
    if not 0.0 <= options["validation_fraction"] < 1.0:
        raise ConfigurationError("prepare-corpus: --validation-fraction must be in [0, 1), got "
                                 f"{options['validation_fraction']}")  # fmt: skip
    if options["shard_tokens"] is not None and options["shard_tokens"] < 1:
        raise ConfigurationError(
            f"prepare-corpus: --shard-tokens must be >= 1, got {options['shard_tokens']}"
        )
    if not options["text_field"]:
        raise ConfigurationError("prepare-corpus: --text-field must not be empty")
    if options["duplicate_window"] < 2:
        raise ConfigurationError("prepare-corpus: --duplicate-window must be >= 2 sentences, got "
                                 f"{options['duplicate_window']}")  # fmt: skip


def _recipe(
    files: List[_InputFile], skipped: List[Dict[str, str]], options: Dict[str, Any]
) -> Dict[str, Any]:
    """What a build is made from; an output directory built from the same is up to date."""
    inputs = [_identity(f.path) for f in files] + [_identity(Path(s["path"])) for s in skipped]
    return {
        "command": "prepare-corpus",
        "version": RECIPE_VERSION,
        "spacy": spacy.__version__,
        "inputs": inputs,
        **options,
    }


def _usable_files(
    files: List[_InputFile], skipped: List[Dict[str, str]], inputs: Sequence[PathOrStr]
) -> List[_InputFile]:
    """The `files` that can be read as text; the others go to `skipped`. Raises when none can."""
    usable: List[_InputFile] = []
    for file in files:
        reason = _sniff(file)
        if reason is None:
            usable.append(file)
        else:
            skipped.append({"path": str(file.path), "reason": reason})
    if not usable:
        reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:10]) or "no files"
        raise ConfigurationError(
            f"prepare-corpus: nothing usable in {[str(p) for p in inputs]} ({reasons}). Give "
            f"UTF-8 text files ending in {', '.join(TEXT_SUFFIXES + JSON_SUFFIXES)}."
        )
    return usable


def _tokenized(
    tokenizer: SentenceTokenizer, files: List[_InputFile], text_field: str, paragraphs: bool
) -> Iterator[Tuple[_InputFile, str, List[List[str]]]]:
    """`(file, document key, sentences)` for each text of `files` in order."""
    pending: Deque[Tuple[_InputFile, str]] = deque()

    def texts() -> Iterator[str]:
        for file in files:
            for key, text in _read_documents(file, text_field, paragraphs):
                pending.append((file, key))
                yield text

    for sentences in tokenizer.split(texts()):
        file, key = pending.popleft()
        yield file, key, sentences


class _Splitter:
    """Writes each distinct sentence once to its document's split, counting per split."""

    def __init__(
        self, writer: "_Writer", seed: int, validation_fraction: float, duplicate_window: int
    ) -> None:
        self._writer = writer
        self._seed = seed
        self._threshold = int(validation_fraction * (1 << 64))
        self.seen = RecentSet(duplicate_window)  # 8-byte hashes of the recent sentences
        self._document: Optional[Tuple[_InputFile, str]] = None
        self._split = "train"
        self._counted = False  # whether the current document is counted in its split
        self.duplicates = 0
        self.splits = {
            name: {"documents": 0, "sentences": 0, "tokens": 0} for name in ("train", "validation")
        }

    def add(self, file: _InputFile, key: str, sentences: List[List[str]]) -> int:
        """Writes the new `sentences` of document `key` of `file`; returns the tokens read."""
        if self._document is None or self._document[0] is not file or self._document[1] != key:
            self._document = (file, key)  # a new document (two inputs may have one file name)
            hashed = _hash64(f"{self._seed}\0{file.source}\0{key}")
            self._split = "validation" if hashed < self._threshold else "train"
            self._counted = False
        counts = self.splits[self._split]
        tokens_read = 0
        for tokens in sentences:
            if not self._counted:
                counts["documents"] += 1
                self._counted = True
            file.sentences += 1
            tokens_read += len(tokens)
            line = " ".join(tokens)
            if self.seen.seen(_hash64(line)):
                self.duplicates += 1
                continue
            self._writer.write(self._split, line, len(tokens))
            counts["sentences"] += 1
            counts["tokens"] += len(tokens)
        return tokens_read


def _report_inputs(usable: List[_InputFile], skipped: List[Dict[str, str]]) -> Dict[str, Any]:
    """Adds the files that gave no sentence to `skipped`, logs it and the files' problems, and
    returns the problems by file."""
    for file in usable:
        if not file.sentences:
            skipped.append({"path": str(file.path), "reason": "no text (only whitespace or "
                            "nothing readable)"})
    skipped.sort(key=lambda entry: entry["path"])
    for entry in skipped:
        logger.warning("prepare-corpus skipped %s: %s", entry["path"], entry["reason"])
    problems = {str(f.path): f.problems for f in usable if f.problems}
    for path, counts in problems.items():
        shown = (f"{name.replace('_', ' ')}: {value}" for name, value in sorted(counts.items()))
        logger.warning("prepare-corpus: %s: %s", path, ", ".join(shown))
    return problems


def _identity(path: Path) -> Dict[str, Any]:
    """An input's path, size and time; of a skipped link, the link's own (never followed)."""
    stat = path.lstat()
    return {
        "path": str(path.parent.resolve() / path.name),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def _find_inputs(
    inputs: List[Path], output_directory: Path
) -> Tuple[List[_InputFile], List[Dict[str, str]]]:
    """The files to read (sorted within each directory) and those skipped, with reasons."""
    output = output_directory.resolve()
    files: List[_InputFile] = []
    skipped: List[Dict[str, str]] = []
    for given in inputs:
        if not given.exists():
            raise ConfigurationError(f"prepare-corpus: input {given} does not exist")
        if given.is_symlink() and not given.is_dir():
            raise ConfigurationError(
                f"prepare-corpus: input {given} is a symbolic link, not followed: name the file "
                "itself"
            )
        if given.is_file():
            if not given.name.endswith(TEXT_SUFFIXES + JSON_SUFFIXES):
                raise ConfigurationError(
                    f"prepare-corpus: input {given} is not a {KINDS} file; rename it if it is "
                    "UTF-8 text (.txt) or JSON lines (.jsonl)"
                )
            files.append(_InputFile(given, given.name))
            continue
        for directory, subdirectories, names in os.walk(given):
            here = Path(directory)
            subdirectories[:] = sorted(
                name for name in subdirectories if (here / name).resolve() != output
            )
            for name in sorted(names):
                path = here / name
                if path.resolve().parent == output and _OUTPUT_NAME.match(name):
                    continue  # this command's own output
                reason = (
                    "hidden file" if name.startswith(".")
                    else f"not {KINDS}" if not name.endswith(TEXT_SUFFIXES + JSON_SUFFIXES)
                    else file_problem(str(path))  # a link may point anywhere
                )  # fmt: skip
                if reason:
                    skipped.append({"path": str(path), "reason": reason})
                else:
                    files.append(_InputFile(path, path.relative_to(given).as_posix()))
    return files, skipped


def _sniff(file: _InputFile) -> Optional[str]:
    """Why `file` cannot be read as text (empty, not gzip, binary), or None."""
    try:
        with file.open() as stream:
            head = stream.read(SNIFF_BYTES)
    except _READ_ERRORS as error:
        return f"cannot be read ({error})"
    if not head:
        return "empty file"
    nuls = head.count(b"\0")
    if nuls > BINARY_NUL_FRACTION * len(head):
        return f"binary ({nuls} NUL bytes in the first {len(head)} bytes; UTF-16 is not read)"
    # The block may end inside a character: only its first len - 3 bytes are judged.
    judged = head if len(head) < SNIFF_BYTES else head[: len(head) - 3]
    bad = judged.decode("utf-8", errors="replace").count("\ufffd") - judged.decode(
        "utf-8", errors="ignore"
    ).count("\ufffd")
    if bad > BINARY_UNDECODABLE_FRACTION * len(judged):
        return f"binary or not UTF-8 ({bad} undecodable bytes in the first {len(judged)} bytes)"
    return None


def _decode(raw: bytes, first: bool, file: _InputFile) -> str:
    text, undecodable, had_nul = decode_line(raw, first=first)
    if undecodable:
        file.count("lines_with_invalid_utf8")
    if had_nul:
        file.count("lines_with_nul")
    return text


def _read_documents(
    file: _InputFile, text_field: str, paragraphs: bool
) -> Iterator[Tuple[str, str]]:
    """`(document key, text)` for the texts of `file`, each at most `CHUNK_CHARACTERS` long: a
    `.txt` file's lines joined, and cut at blank lines (`paragraphs`: each block a document);
    each text of a `.jsonl` file alike."""
    try:
        with file.open() as stream:
            if file.path.name.endswith(JSON_SUFFIXES):
                yield from _json_documents(stream, file, text_field, paragraphs)
            else:
                yield from _text_documents(stream, file, paragraphs)
    except _READ_ERRORS as error:
        _read_error(file, error)


def _read_error(file: _InputFile, error: BaseException) -> None:
    file.problems["read_error"] = f"{error} (the text before it was kept)"


def _lines(stream: IO[bytes], file: _InputFile) -> Iterator[bytes]:
    """The lines of `stream`; a line longer than `MAX_JSON_LINE_BYTES` is read past (counted) and
    given as an empty one."""
    while True:
        line = stream.readline(MAX_JSON_LINE_BYTES + 1)
        if len(line) > MAX_JSON_LINE_BYTES and not line.endswith(b"\n"):
            file.count("lines_over_max_json_line_bytes")
            while line and not line.endswith(b"\n"):
                line = stream.readline(CHUNK_CHARACTERS)
            yield b""
            continue
        if not line:
            return
        yield line


def _text_documents(
    stream: IO[bytes], file: _InputFile, paragraphs: bool
) -> Iterator[Tuple[str, str]]:
    block: List[str] = []
    size = 0
    document = 0
    first = True
    pieces = line_pieces(stream, file.count)
    try:
        for raw, ends_line in pieces:
            text = _decode(raw, first, file)
            first = False
            if ends_line and not text.strip():  # a blank line ends a block
                if block:
                    yield str(document), " ".join(block)
                    block, size = [], 0
                    document += paragraphs
                continue
            if size + len(text) > CHUNK_CHARACTERS and block:
                yield str(document), " ".join(block)
                block, size = [], 0
            block.append(text)
            size += len(text)
    except _READ_ERRORS as error:
        _read_error(file, error)
    if block:
        yield str(document), " ".join(block)


def _json_documents(
    stream: IO[bytes], file: _InputFile, text_field: str, paragraphs: bool
) -> Iterator[Tuple[str, str]]:
    for number, raw in enumerate(_lines(stream, file)):
        line = _decode(raw, number == 0, file)
        if not line.strip():
            continue
        try:
            if line.count("[") + line.count("{") > MAX_DEPTH and json_depth(line) > MAX_DEPTH:
                raise ValueError("nested too deep")  # before Python's parser recurses into it
            record = json.loads(line)
        except (ValueError, RecursionError):
            file.count("invalid_json_lines")
            continue
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            file.count(f"lines_without_text_field_{text_field}")
            continue
        encoded = io.BytesIO(text.encode("utf-8", errors="replace"))
        for key, chunk in _text_documents(encoded, file, paragraphs):  # as a .txt file's text
            yield (f"{number}:{key}" if paragraphs else str(number)), chunk


class _Writer(contextlib.ExitStack):
    """The output files, renamed into place together when the `with` block ends without error."""

    def __init__(self, directory: Path, shard_tokens: Optional[int]) -> None:
        super().__init__()
        self._directory = directory
        self._shard_tokens = shard_tokens
        self._shard_size = 0
        self._outputs: Dict[str, Tuple[IO[str], Dict[str, int]]] = {}
        self.files: Dict[str, Dict[str, int]] = {}

    def __enter__(self) -> "_Writer":
        super().__enter__()
        self._open("validation", "validation.txt")
        self._open("train", "train.txt" if self._shard_tokens is None else "train-00000.txt")
        return self

    def _open(self, split: str, name: str) -> None:
        if split in self._outputs:
            self._outputs[split][0].close()
        temporary = self.enter_context(atomic_path(self._directory / name))
        stream = self.enter_context(open(temporary, "w", encoding="utf-8", newline="\n"))
        self.files[name] = {"sentences": 0, "tokens": 0}
        self._outputs[split] = (stream, self.files[name])

    def write(self, split: str, line: str, tokens: int) -> None:
        if split == "train" and self._shard_tokens is not None:
            if self._shard_size >= self._shard_tokens:
                self._open("train", f"train-{len(self.files) - 1:05d}.txt")
                self._shard_size = 0
            self._shard_size += tokens
        stream, counts = self._outputs[split]
        stream.write(line + "\n")
        counts["sentences"] += 1
        counts["tokens"] += tokens


def _remove_stale_outputs(directory: Path, written: set) -> None:
    """Removes the train/validation files of an earlier run that this run did not write."""
    for path in directory.iterdir():
        if _OUTPUT_NAME.match(path.name) and path.name not in written:
            path.unlink()


@Subcommand.register("prepare-corpus")
class PrepareCorpus(PluginSubcommand):
    description = (
        "Turn raw text (.txt, .txt.gz, .jsonl) into a tokenized corpus, one sentence per line, "
        "split by document into train and validation."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "inputs", nargs="+", metavar="INPUT",
            help="files or directories of .txt, .txt.gz, .jsonl or .jsonl.gz text",
        )
        subparser.add_argument(
            "output_directory", metavar="OUTPUT_DIR",
            help="gets train.txt (or train-00000.txt, ...), validation.txt and manifest.json",
        )
        subparser.add_argument("--language", type=str, default="en",
                               help="spaCy language code of the text (blank pipeline)")
        subparser.add_argument("--validation-fraction", type=float, default=0.01)
        subparser.add_argument("--shard-tokens", type=int, default=None,
                               help="write train-00000.txt, ... of about this many tokens")
        subparser.add_argument("--seed", type=int, default=13)
        subparser.add_argument("--text-field", type=str, default="text",
                               help="the field of a .jsonl line that holds the text")
        subparser.add_argument("--paragraphs", action="store_true",
                               help="each blank-line-separated block is a document")
        subparser.add_argument(
            "--duplicate-window", type=int, default=DUPLICATE_WINDOW, metavar="SENTENCES",
            help="duplicates are found among this many recent sentences (about 80 bytes each)",
        )
        self.add_build_options(subparser)

    def run(self, args: argparse.Namespace) -> None:
        names = ("language", "validation_fraction", "shard_tokens", "seed", "text_field",
                 "paragraphs", "duplicate_window", "force")  # fmt: skip
        prepare_corpus(args.inputs, args.output_directory, show_progress=not args.quiet,
                       **options(args, *names))  # fmt: skip
