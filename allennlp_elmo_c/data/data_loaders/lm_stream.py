import logging
import random
from typing import Any, Iterable, Iterator, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import lazy_groups_of
from allennlp.data.data_loaders.data_loader import DataLoader, TensorDict
from allennlp.data.data_loaders.multiprocess_data_loader import MultiProcessDataLoader
from allennlp.data.instance import Instance
from allennlp.data.tokenizers import WhitespaceTokenizer
from allennlp.nn import util as nn_util

from allennlp_elmo_c.data import corpus_size
from allennlp_elmo_c.data.corpus import corpus_files
from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader

logger = logging.getLogger(__name__)


@DataLoader.register("lm_stream")
class LmStreamDataLoader(MultiProcessDataLoader):
    """
    AllenNLP's `multiprocess` loader for a streamed `lm_corpus` that knows its length, shuffles
    each chunk from `seed`, epoch, chunk, rank and worker alone, and skips trained batches on
    `--recover`.

    Registered as a `DataLoader` with name "lm_stream".

    # Parameters

    max_instances_in_memory : `int`, optional (default = `batch_size * 200`)
        A multiple of `batch_size`.
    shuffle : `bool`, optional (default = `False`)
    seed : `int`, optional (default = `None`)
        The shuffles' seed; `None` draws one from Python's `random`.
    """

    def __init__(
        self,
        reader,
        data_path,
        *,
        batch_size: int,
        shuffle: bool = False,
        max_instances_in_memory: Optional[int] = None,
        seed: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        if batch_size is None or batch_size < 1:
            raise ConfigurationError(f"lm_stream: batch_size must be >= 1, got {batch_size}")
        if max_instances_in_memory is None:
            max_instances_in_memory = batch_size * 200
        if max_instances_in_memory < batch_size or max_instances_in_memory % batch_size:
            raise ConfigurationError(
                f"lm_stream: max_instances_in_memory ({max_instances_in_memory}) must be a "
                f"multiple of batch_size ({batch_size}), so that each chunk makes full batches"
            )
        super().__init__(
            reader, data_path, batch_size=batch_size, shuffle=False,
            max_instances_in_memory=max_instances_in_memory, **kwargs,
        )  # fmt: skip
        self.shuffle_chunks = shuffle
        self.seed = random.randrange(2**32) if seed is None else int(seed)
        self._epoch = -1
        self._skip_epochs = 0
        self._skip_batches = 0
        self._length: Optional[int] = None

    def __len__(self) -> int:
        if self.batches_per_epoch is not None:
            return self.batches_per_epoch
        if self._length is None:
            self._length = self._batches_per_epoch()
        return self._length

    def _batches_per_epoch(self) -> int:
        reader = self.reader
        if not isinstance(reader, LmCorpusReader):
            raise TypeError("lm_stream: the length is known for the lm_corpus reader only")
        distributed = reader.get_distributed_info()
        ranks = 1 if distributed is None else distributed.world_size
        streams = max(1, self.num_workers)
        if type(reader.tokenizer) is WhitespaceTokenizer:
            size = corpus_size.corpus_size(corpus_files(self.data_path))
            windows = corpus_size.corpus_windows(
                size, reader.max_sequence_length, len(reader.boundary_tokens), ranks * streams
            )
            per_stream = windows / (ranks * streams)
            counted = f"{size.sentences} sentences, {size.tokens} tokens ({size.source})"
        else:  # another tokenizer: this process's windows, counted by tokenizing the corpus once
            logger.info("lm_stream: counting the windows of %s with its %s", self.data_path,
                        type(reader.tokenizer).__name__)  # fmt: skip
            windows = reader.count_instances(self.data_path)
            per_stream = windows / streams
            counted = f"{windows} windows in this process (counted)"
        length = streams * corpus_size.batches(round(per_stream), self.batch_size, self.drop_last)
        logger.info("lm_stream: %s: %s: %d batches an epoch per process", self.data_path, counted,
                    length)  # fmt: skip
        return length

    def resume(self, epochs_completed: int, batches_completed: int) -> None:
        """The trained epochs make no batches, the next one's first `batches_completed` empty
        placeholders the trainer skips."""
        if self.num_workers > 1:
            logger.warning(
                "lm_stream: %d data-loader workers deliver batches in no fixed order, so the "
                "trained batches are re-read on resume (use at most one worker to skip them)",
                self.num_workers,
            )
            return
        self._skip_epochs, self._skip_batches = epochs_completed, batches_completed
        logger.info(
            "lm_stream: resuming after %d epoch(s) and %d batch(es): those are not re-read",
            epochs_completed, batches_completed,
        )  # fmt: skip

    def __iter__(self) -> Iterator[TensorDict]:
        self._epoch += 1
        if self._epoch < self._skip_epochs:
            return iter(())
        return super().__iter__()

    def _instances_to_batches(
        self, instance_iterator: Iterable[Instance], move_to_device
    ) -> Iterator[TensorDict]:
        skip = self._skip_batches if self._epoch == self._skip_epochs else 0
        if skip:
            self._skip_batches = 0
        worker = self.reader.get_worker_info()
        rank = self.reader.get_distributed_info()
        stream = f"{self.seed}:{0 if rank is None else rank.global_rank}:" \
                 f"{0 if worker is None else worker.id}:{self._epoch}"  # fmt: skip
        chunks = lazy_groups_of(instance_iterator, self.max_instances_in_memory)
        for number, chunk in enumerate(chunks):
            per_chunk = corpus_size.batches(len(chunk), self.batch_size, self.drop_last)
            if skip >= per_chunk:
                skip -= per_chunk
                yield from ({} for _ in range(per_chunk))
                continue
            if self.shuffle_chunks:
                random.Random(f"{stream}:{number}").shuffle(chunk)
            for start in range(0, per_chunk * self.batch_size, self.batch_size):
                if skip:
                    skip -= 1
                    yield {}
                    continue
                batch = [self._index_instance(i) for i in chunk[start : start + self.batch_size]]
                yield self._tensorize(batch, move_to_device)

    def _tensorize(self, batch: List[Instance], move_to_device) -> TensorDict:
        tensors = self.collate_fn(batch)
        if move_to_device and self.cuda_device is not None:
            tensors = nn_util.move_to_device(tensors, self.cuda_device)
        return tensors
