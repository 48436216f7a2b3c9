import logging
import os
import time
from typing import Any, Callable, List, Optional, Set, Tuple, Union

import torch
import torch.distributed as dist

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.nn import util as nn_util
from allennlp.training.checkpointer import Checkpointer
from allennlp.training.trainer import Trainer, TrainerCheckpoint

from allennlp_elmo_c.common.atomic import atomic_path, remove_stale_temporaries
from allennlp_elmo_c.received.received_weights import load_weights_only
from allennlp_elmo_c.training.training_state import load_training_state

logger = logging.getLogger(__name__)

# The suffix a checkpoint file that `--recover` could not use is renamed with.
SET_ASIDE_SUFFIX = ".unusable"
# The only best-model file AllenNLP's trainer writes (in the run's directory).
BEST_MODEL_NAME = "best.th"


class _SavedState:
    """Hands AllenNLP's `save_checkpoint` a state that is already on disk."""

    def __init__(self, state: Optional[TrainerCheckpoint]) -> None:
        self._state = state

    def get_checkpoint_state(self) -> Optional[TrainerCheckpoint]:
        return self._state


@Checkpointer.register("atomic")
class AtomicCheckpointer(Checkpointer):
    """
    AllenNLP's checkpointer, with checkpoints that survive the crash that interrupts them and a
    `--recover` that resumes from the newest checkpoint that loads.

    Each `training_state_e*_b*.th`, then `model_state_e*_b*.th` (what AllenNLP lists
    checkpoints by), is written atomically (`common.atomic`); a failed save removes what it wrote
    of that checkpoint and raises. Stale temporaries of a killed run are removed at creation.

    `--recover` tries the checkpoints newest first and takes the first whose two files load
    (`weights_only`; the training state through `load_training_state`) and agree on the point in
    training; the newer ones are logged and renamed with `.unusable`. If none loads, a
    `ConfigurationError` lists every file and its problem. The best model is read from this
    run's directory, whatever path the training state names.

    Distributed: the first process of each machine writes and prunes that machine's `-s`
    directory; `save_every_num_seconds` follows rank 0's clock (one small all-reduce per batch)
    so that every process saves after the same batch; `--recover` raises unless every process
    resumes from the same point.

    Registered as a `Checkpointer` with name "atomic"; the `elmo_c` trainer uses it when its
    checkpointer has no `type`. The parameters are AllenNLP's `Checkpointer`'s;
    `keep_most_recent_by_count` must be at least 1 (1 is warned about: a damaged newest
    checkpoint then has nothing to fall back to).
    """

    def __init__(
        self,
        serialization_dir: Union[str, os.PathLike],
        save_completed_epochs: bool = True,
        save_every_num_seconds: Optional[float] = None,
        save_every_num_batches: Optional[int] = None,
        keep_most_recent_by_count: Optional[int] = 2,
        keep_most_recent_by_age: Optional[int] = None,
    ) -> None:
        if keep_most_recent_by_count is not None and keep_most_recent_by_count < 1:
            raise ConfigurationError(
                f"atomic checkpointer: keep_most_recent_by_count must be at least 1 (or null to "
                f"keep all), not {keep_most_recent_by_count}"
            )
        if keep_most_recent_by_count == 1 and keep_most_recent_by_age is None:
            logger.warning(
                "atomic checkpointer: keep_most_recent_by_count is 1, so --recover has no older "
                "checkpoint to fall back to if the newest one is damaged; 2 or more is safer"
            )
        super().__init__(
            serialization_dir,
            save_completed_epochs=save_completed_epochs,
            save_every_num_seconds=None,  # `maybe_save_checkpoint` below: also when distributed
            save_every_num_batches=save_every_num_batches,
            keep_most_recent_by_count=keep_most_recent_by_count,
            keep_most_recent_by_age=keep_most_recent_by_age,
        )
        self._every_num_seconds = save_every_num_seconds
        if self._is_primary:
            for path in remove_stale_temporaries(self._serialization_dir):
                logger.info("atomic checkpointer: removed %s, left by an interrupted write", path)

    @property
    def _is_primary(self) -> bool:
        """Whether this process writes this directory: local rank 0 of each machine."""
        per_node = os.environ.get("ALLENNLP_PROCS_PER_NODE")  # set by `allennlp train`'s workers
        if not is_distributed() or per_node is None:
            return self._rank == 0
        return self._rank % int(per_node) == 0

    def maybe_save_checkpoint(
        self, trainer: Trainer, num_epochs_completed: int, num_batches_in_epoch_completed: int
    ) -> bool:
        if super().maybe_save_checkpoint(
            trainer, num_epochs_completed, num_batches_in_epoch_completed
        ):
            return True
        if self._every_num_seconds is None:
            return False
        due = time.time() - self._last_save_time >= self._every_num_seconds
        if is_distributed():
            due = bool(nn_util.dist_reduce(int(due and self._rank == 0), dist.ReduceOp.MAX))
        if due:
            self.save_checkpoint(trainer)
        return due

    def save_checkpoint(self, trainer: Trainer) -> None:
        state = trainer.get_checkpoint_state()
        if state is not None:
            point = (
                state.trainer_state["epochs_completed"],
                state.trainer_state["batches_in_epoch_completed"],
            )
            paths = (self._training_state_path(*point), self._model_state_path(*point))
            try:
                for path, content in zip(paths, (state.trainer_state, state.model_state)):
                    with atomic_path(path) as temporary:
                        torch.save(content, temporary)
            except BaseException:
                for path in paths:  # an incomplete checkpoint is no checkpoint
                    if os.path.exists(path):
                        os.remove(path)
                raise
        # AllenNLP's bookkeeping and pruning, without its writes.
        super().save_checkpoint(_SavedState(state))  # type: ignore[arg-type]

    def load_checkpoint(self) -> Optional[TrainerCheckpoint]:
        """The newest checkpoint that loads; `None` without checkpoint files."""
        try:
            state, failure = self._load_newest(), None
        except ConfigurationError as error:
            state, failure = None, error
        if is_distributed():
            self._check_every_process_resumes_together(state, failure)
        if failure is not None:
            raise failure
        return state

    def _check_every_process_resumes_together(
        self, state: Optional[TrainerCheckpoint], failure: Optional[ConfigurationError]
    ) -> None:
        if state is None:
            point = None
        else:
            trainer_state = state.trainer_state
            point = (trainer_state["epochs_completed"], trainer_state["batches_in_epoch_completed"])
        mine = {"point": point, "failed": failure is not None, "directory": self._serialization_dir}
        everyone: List[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine)
        if failure is not None:
            return  # this process's own error says why
        failed = [rank for rank, theirs in enumerate(everyone) if theirs["failed"]]
        if failed:
            raise ConfigurationError(
                f"Could not recover training: rank(s) {failed} found no checkpoint that loads "
                "(their log says why)."
            )
        if len({theirs["point"] for theirs in everyone}) > 1:
            listing = "\n".join(
                f"  rank {rank}: {_describe(theirs['point'])} in {theirs['directory']}"
                for rank, theirs in enumerate(everyone)
            )
            raise ConfigurationError(
                "Could not recover training: the processes would resume from different points "
                f"in training, and so train different weights:\n{listing}\nGive every machine's "
                "-s directory the same newest checkpoint (copy the model_state_e*_b*.th and "
                "training_state_e*_b*.th files of one machine's newest checkpoint to the others, "
                "or move the newer ones away), then rerun every machine with --recover."
            )

    def _load_newest(self) -> Optional[TrainerCheckpoint]:
        points = self._find_all_checkpoint_points()
        if not points:
            return None
        skipped: List[Tuple[Tuple[int, int], List[Tuple[str, str]]]] = []
        for point in sorted(points, reverse=True):
            model_path = self._model_state_path(*point)
            training_path = self._training_state_path(*point)
            problems: List[Tuple[str, str]] = []
            model_state = _load(model_path, _load_weights, problems=problems)
            training_state = _load(training_path, load_training_state, problems=problems)
            if training_state is not None:
                found = (
                    training_state.get("epochs_completed"),
                    training_state.get("batches_in_epoch_completed"),
                )
                if found != point:
                    problems.append(
                        (training_path, f"holds the state after {found}, not after {point}")
                    )
                best = training_state.get("best_model_filename")
                if best is not None and os.path.basename(str(best)) != BEST_MODEL_NAME:
                    problems.append(
                        (training_path, f"names {best!r} as the best model, not {BEST_MODEL_NAME}")
                    )
                elif best is not None:
                    # AllenNLP stores the path where the run was; the run's own file is read.
                    training_state["best_model_filename"] = os.path.join(
                        self._serialization_dir, BEST_MODEL_NAME
                    )
            if not problems:
                if skipped:
                    self._set_aside(skipped)
                logger.info(
                    "atomic checkpointer: resuming from %s and %s", model_path, training_path
                )
                return TrainerCheckpoint(model_state, training_state)
            logger.warning(
                "atomic checkpointer: skipping the checkpoint after epoch %d, batch %d: %s",
                point[0],
                point[1],
                "; ".join(f"{path}: {problem}" for path, problem in problems),
            )
            skipped.append((point, problems))
        listing = "\n".join(
            f"  {path}: {problem}" for _, problems in skipped for path, problem in problems
        )
        raise ConfigurationError(
            f"Could not recover training: no checkpoint in {self._serialization_dir} loads.\n"
            f"{listing}\nMove these files away to start the run from the beginning."
        )

    def _find_all_checkpoint_points(self) -> Set[Tuple[int, int]]:
        # (AllenNLP's `_find_all_checkpoints` lists model states only.)
        shard = f"_w{self._rank}" if self.state_is_sharded else None
        points = set()
        for name in os.listdir(self._serialization_dir):
            for pattern in (self._model_state_file_re, self._training_state_file_re):
                match = pattern.match(name)
                if match is not None and match.group(4) == shard:
                    points.add((int(match.group(2)), int(match.group(3))))
        return points

    def _set_aside(self, skipped: List[Tuple[Tuple[int, int], List[Tuple[str, str]]]]) -> None:
        if not (self._is_primary or self.state_is_sharded):
            return
        for point, _ in skipped:
            for path in (self._model_state_path(*point), self._training_state_path(*point)):
                if os.path.exists(path):
                    os.replace(path, path + SET_ASIDE_SUFFIX)
                    logger.warning(
                        "atomic checkpointer: renamed %s to %s", path, path + SET_ASIDE_SUFFIX
                    )


def _describe(point: Optional[Tuple[int, int]]) -> str:
    if point is None:
        return "no checkpoint (a fresh start)"
    return f"the checkpoint after epoch {point[0]}, batch {point[1]}"


def _load_weights(path: str) -> Any:
    return load_weights_only(path, map_location=nn_util.device_mapping(-1))


def _load(
    path: str, loader: Callable[[str], Any], problems: List[Tuple[str, str]]
) -> Optional[Any]:
    """`loader(path)`, or `None` with the problem recorded."""
    if not os.path.exists(path):
        problems.append((path, "missing"))
        return None
    try:
        state = loader(path)
    except ConfigurationError as error:  # a refusal, its own message
        problems.append((path, str(error).removeprefix(f"{path}: ")))
        return None
    except Exception as error:  # noqa: BLE001  (any failure to load is reported, none is fatal)
        message = (str(error).strip().splitlines() or [""])[0]
        if len(message) > 160:  # torch's messages go on with advice: keep their first sentences
            end = message.rfind(". ", 0, 160)
            message = message[: end + 1] if end > 40 else message[:160] + " ..."
        size = os.path.getsize(path)
        problems.append((path, f"does not load ({size} bytes): {type(error).__name__}: {message}"))
        return None
    if not isinstance(state, dict):
        problems.append((path, f"holds a {type(state).__name__}, not a state dictionary"))
        return None
    return state
