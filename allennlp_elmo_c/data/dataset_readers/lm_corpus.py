import logging
from copy import deepcopy
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import Token, Tokenizer, WhitespaceTokenizer

from allennlp_elmo_c.data.corpus import corpus_files, corpus_lines, has_text

logger = logging.getLogger(__name__)


class WindowTextField(TextField):
    """A window of `lm_corpus`'s stream; if `shares_first_token` (the previous window's last),
    that token is not counted for a vocabulary."""

    __slots__ = ["shares_first_token"]

    def __init__(
        self,
        tokens: List[Token],
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        shares_first_token: bool = False,
    ) -> None:
        super().__init__(tokens, token_indexers)
        self.shares_first_token = shares_first_token

    def count_vocab_items(self, counter: Dict[str, Dict[str, int]]):
        counted = self.tokens[1:] if self.shares_first_token else self.tokens
        for indexer in self.token_indexers.values():
            for token in counted:
                indexer.count_vocab_items(token, counter)

    def duplicate(self) -> "WindowTextField":
        copy = WindowTextField(deepcopy(self.tokens), self._token_indexers, self.shares_first_token)
        copy._indexed_tokens = deepcopy(self._indexed_tokens)
        return copy


@DatasetReader.register("lm_corpus")
class LmCorpusReader(DatasetReader):
    """
    Reads a corpus of one sentence a line (a file or a glob pattern) into one stream of sentences
    with their start and end tokens, cut into windows of `max_sequence_length` tokens that share
    one token with the next; without it, one instance per sentence. Lines are sharded over ranks
    and workers.

    Registered as a `DatasetReader` with name "lm_corpus".

    # Parameters

    tokenizer : `Tokenizer`, optional (default = `WhitespaceTokenizer()`)
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": single_id}`)
    max_sequence_length : `int`, optional (default = `None`)
        The tokens of one window (>= 2), the shared one included.
    start_tokens : `List[str]`, optional (default = `["<S>"]`)
    end_tokens : `List[str]`, optional (default = `["</S>"]`)
    field_name : `str`, optional (default = `"tokens"`)
        The field's name (`"source"` for allennlp-models' `language_model`).
    """

    def __init__(
        self,
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        max_sequence_length: Optional[int] = None,
        start_tokens: Optional[List[str]] = None,
        end_tokens: Optional[List[str]] = None,
        field_name: str = "tokens",
        **kwargs,
    ) -> None:
        super().__init__(
            manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs
        )
        if max_sequence_length is not None and max_sequence_length < 2:
            raise ConfigurationError(
                "lm_corpus: max_sequence_length must be >= 2 (or null): consecutive windows "
                f"share one token, so a window needs at least two; got {max_sequence_length}"
            )
        self.tokenizer = tokenizer or WhitespaceTokenizer()
        self.token_indexers = token_indexers or {"tokens": SingleIdTokenIndexer()}
        self.max_sequence_length = max_sequence_length
        self._start_tokens = [Token(t) for t in (["<S>"] if start_tokens is None else start_tokens)]
        self._end_tokens = [Token(t) for t in (["</S>"] if end_tokens is None else end_tokens)]
        self._field_name = field_name

    def _read(self, file_path) -> Iterable[Instance]:
        windows = self._windows(self._read_pieces(file_path))
        shares_first_token = False
        for window in windows:
            yield Instance({self._field_name: WindowTextField(window, None, shares_first_token)})
            shares_first_token = self.max_sequence_length is not None

    def _read_pieces(self, file_path) -> Iterator[Tuple[List[Token], bool]]:
        """This process's share of the sentences as `(tokens, ends_sentence)` pieces, with the
        start and end tokens."""
        paths = corpus_files(file_path)
        logger.info("Reading sentences from %s", file_path)
        undecodable = with_nul = sentences = 0
        try:
            for line in self.shard_iterable(corpus_lines(paths)):
                started = bad = nul = False
                for text, bad_bytes, had_nul in line:
                    bad, nul = bad or bad_bytes, nul or had_nul
                    tokens = self.tokenizer.tokenize(text) if text.strip() else []
                    if tokens:
                        yield (tokens if started else self._start_tokens + tokens), False
                        started = True
                undecodable, with_nul = undecodable + bad, with_nul + nul
                if started:
                    sentences += 1
                    yield list(self._end_tokens), True
        finally:
            self._warn(file_path, undecodable, with_nul)
        # A worker's shard of a small file may be empty; a corpus without text is an error.
        if not sentences and not has_text(paths):
            raise ConfigurationError(
                f"lm_corpus: {file_path} has no sentences (it is empty or has only blank lines)"
            )

    def _windows(self, pieces: Iterable[Tuple[List[Token], bool]]) -> Iterator[List[Token]]:
        length = self.max_sequence_length
        # The stream from the last window's last token (shared with the next window) on.
        pending: List[Token] = []
        made_one = False
        for tokens, ends in pieces:
            pending.extend(tokens)
            if length is None:
                if ends:
                    yield pending
                    pending = []
                continue
            start = 0
            while len(pending) - start >= length:
                yield pending[start : start + length]
                made_one = True
                start += length - 1
            if start:
                del pending[:start]
        if length is not None and (len(pending) > 1 or (pending and not made_one)):
            yield pending

    def count_instances(self, file_path) -> int:
        """The instances `read(file_path)` makes in this process, counted without making them."""
        return sum(1 for _ in self._windows(self._read_pieces(file_path)))

    def text_to_instance(self, sentence: Union[str, List[str]]) -> Instance:  # type: ignore
        """One instance of one sentence (a string, or a list of tokens), never cut into windows."""
        if isinstance(sentence, str):
            tokens = self.tokenizer.tokenize(sentence.replace("\x00", " "))
        else:
            tokens = [token if isinstance(token, Token) else Token(token) for token in sentence]
        return Instance(
            {self._field_name: TextField(self._start_tokens + tokens + self._end_tokens)}
        )

    @property
    def boundary_tokens(self) -> List[str]:
        """The start tokens then the end tokens added around every sentence."""
        return [token.text for token in self._start_tokens + self._end_tokens]

    def apply_token_indexers(self, instance: Instance) -> None:
        instance[self._field_name].token_indexers = self.token_indexers  # type: ignore

    def _warn(self, file_path, undecodable: int, with_nul: int) -> None:
        worker = self.get_worker_info()
        where = "" if worker is None else f" (worker {worker.id} of {worker.num_workers})"
        for count, what in ((undecodable, "bytes that are not UTF-8, read as U+FFFD"),
                            (with_nul, "NUL characters, read as spaces")):  # fmt: skip
            if count:
                logger.warning("%s: %d line(s) held %s%s", file_path, count, what, where)
