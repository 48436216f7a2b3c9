import logging
import os
from typing import Dict, Iterable, List, Union

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import Token, Tokenizer, WhitespaceTokenizer

logger = logging.getLogger(__name__)


@DatasetReader.register("lm_corpus")
class LmCorpusReader(DatasetReader):
    """
    Reads a language modelling corpus with one sentence per line. Every line becomes one or more
    instances with a single field, `"tokens"` (a `TextField`), holding the line's tokens between
    the start and end tokens.

    The file is streamed: only one line is held at a time. Lines are split on `\\n` (a trailing
    `\\r` is whitespace) and decoded as UTF-8; undecodable bytes become U+FFFD and NUL characters
    become spaces, and the number of lines affected is logged as one warning per file (in
    multi-process loading, per worker: each reports its own share of the lines). Blank lines
    are skipped. A line longer than `max_sequence_length` tokens is split into consecutive chunks
    of at most that many tokens, one instance each: no token is ever dropped.

    Sharding is done here: with multi-process loading or distributed training each worker and
    rank reads a disjoint subset of the lines (`shard_iterable`), and token indexers are set in
    `apply_token_indexers`, in the main process.

    Registered as a `DatasetReader` with name "lm_corpus".

    # Parameters

    tokenizer : `Tokenizer`, optional (default = `WhitespaceTokenizer()`)
        Splits a line into tokens.
    token_indexers : `Dict[str, TokenIndexer]`, optional
        Defaults to `{"tokens": SingleIdTokenIndexer()}`.
    max_sequence_length : `int`, optional (default = `None`)
        If given (>= 1), the most tokens in one instance, not counting the start and end tokens.
        Longer lines are split into chunks. `None` keeps every line whole.
    start_tokens : `List[str]`, optional (default = `["<S>"]`)
        Added before every chunk; `[]` adds none.
    end_tokens : `List[str]`, optional (default = `["</S>"]`)
        Added after every chunk; `[]` adds none.

    # Example

    ```json
    "dataset_reader": {
        "type": "lm_corpus",
        "max_sequence_length": 400,
        "token_indexers": {"tokens": {"type": "single_id"}}
    }
    ```
    """

    def __init__(
        self,
        tokenizer: Tokenizer = None,
        token_indexers: Dict[str, TokenIndexer] = None,
        max_sequence_length: int = None,
        start_tokens: List[str] = None,
        end_tokens: List[str] = None,
        **kwargs,
    ) -> None:
        super().__init__(
            manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs
        )
        if max_sequence_length is not None and max_sequence_length < 1:
            raise ConfigurationError(
                f"lm_corpus: max_sequence_length must be >= 1 (or null), got {max_sequence_length}"
            )
        self._tokenizer = tokenizer or WhitespaceTokenizer()
        self._token_indexers = token_indexers or {"tokens": SingleIdTokenIndexer()}
        self._max_sequence_length = max_sequence_length
        self._start_tokens = [Token(t) for t in (["<S>"] if start_tokens is None else start_tokens)]
        self._end_tokens = [Token(t) for t in (["</S>"] if end_tokens is None else end_tokens)]

    def _read(self, file_path) -> Iterable[Instance]:
        try:
            path = cached_path(file_path)
        except FileNotFoundError as error:
            raise ConfigurationError(f"lm_corpus: corpus file {file_path} not found") from error
        if os.path.isdir(path):
            raise ConfigurationError(f"lm_corpus: {file_path} is a directory, not a corpus file")
        logger.info("Reading sentences from %s", file_path)
        undecodable = with_nul = sentences = 0
        try:
            with open(path, "rb") as corpus:
                for number, raw_line in self.shard_iterable(enumerate(corpus)):
                    try:
                        line = raw_line.decode("utf-8")
                    except UnicodeDecodeError:
                        line = raw_line.decode("utf-8", errors="replace")
                        undecodable += 1
                    if number == 0 and line.startswith("\ufeff"):  # a byte order mark
                        line = line[1:]
                    if "\x00" in line:
                        line = line.replace("\x00", " ")
                        with_nul += 1
                    if not line.strip():
                        continue
                    tokens = self._tokenizer.tokenize(line)
                    sentences += 1
                    step = self._max_sequence_length or max(len(tokens), 1)
                    for start in range(0, len(tokens), step):
                        yield self.text_to_instance(tokens[start : start + step])
        finally:
            self._warn(file_path, undecodable, with_nul)
        # Training on nothing would "succeed" with zero steps: an empty corpus is an error. (A
        # worker's shard of a small file may be empty; only a file without any text is.)
        if not sentences and not _has_text(path):
            raise ConfigurationError(
                f"lm_corpus: {file_path} has no sentences (it is empty or has only blank lines)"
            )

    def text_to_instance(self, sentence: Union[str, List[str]]) -> Instance:  # type: ignore
        """
        One instance from a sentence, as a string (tokenized like the corpus; NUL characters are
        spaces) or as a list of tokens (strings or `Token`s). It is never split into chunks.
        """
        if isinstance(sentence, str):
            tokens = self._tokenizer.tokenize(sentence.replace("\x00", " "))
        else:
            tokens = [token if isinstance(token, Token) else Token(token) for token in sentence]
        return Instance({"tokens": TextField(self._start_tokens + tokens + self._end_tokens)})

    def apply_token_indexers(self, instance: Instance) -> None:
        instance["tokens"].token_indexers = self._token_indexers  # type: ignore

    def _warn(self, file_path, undecodable: int, with_nul: int) -> None:
        worker = self.get_worker_info()
        where = "" if worker is None else f" (worker {worker.id} of {worker.num_workers})"
        if undecodable:
            logger.warning(
                "%s: %d line(s) held bytes that are not UTF-8, read as U+FFFD%s",
                file_path,
                undecodable,
                where,
            )
        if with_nul:
            logger.warning(
                "%s: %d line(s) held NUL characters, read as spaces%s", file_path, with_nul, where
            )


def _has_text(path: str) -> bool:
    """Whether any line of the file holds more than whitespace, NULs and a byte order mark."""
    with open(path, "rb") as corpus:
        for raw_line in corpus:
            line = raw_line.decode("utf-8", errors="replace").replace("\x00", " ")
            if line.lstrip("\ufeff").strip():
                return True
    return False
