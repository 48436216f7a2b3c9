import inspect
import logging
import warnings
from typing import Any, Dict, Optional

from allennlp.common import Lazy
from allennlp.training.checkpointer import Checkpointer
from allennlp.training.gradient_descent_trainer import GradientDescentTrainer
from allennlp.training.trainer import Trainer

from allennlp_elmo_c.common.atomic import atomic_path
from allennlp_elmo_c.training.atomic_checkpointer import AtomicCheckpointer

logger = logging.getLogger(__name__)

# The trainer's deprecated `torch.cuda.amp.autocast(...)` call, which no user can act on.
AUTOCAST_WARNING = {
    "message": r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
    "category": FutureWarning,
    "module": r"allennlp\.training\.gradient_descent_trainer",
}


@Trainer.register("elmo_c", constructor="from_partial_objects")
class ElmoCTrainer(GradientDescentTrainer):
    """
    AllenNLP's `gradient_descent` trainer (its parameters) with three differences: a
    checkpointer without a `type` (as an `-o` override of it leaves it), or none, is `atomic`;
    `best.th` is written atomically; the trainer's `torch.cuda.amp.autocast` FutureWarning is not
    shown.
    """

    @classmethod
    def from_partial_objects(cls, **kwargs: Any) -> Trainer:  # type: ignore[override]
        checkpointer: Optional[Lazy[Checkpointer]] = kwargs.pop("checkpointer", Lazy(Checkpointer))
        if checkpointer is not None and "type" not in checkpointer._params:
            checkpointer = Lazy(
                AtomicCheckpointer, checkpointer._params, checkpointer._constructor_extras
            )
        return super().from_partial_objects(checkpointer=checkpointer, **kwargs)

    def train(self) -> Dict[str, Any]:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", **AUTOCAST_WARNING)
            return super().train()

    def _save_model_state(self, path: str) -> None:
        with atomic_path(path) as temporary:
            super()._save_model_state(str(temporary))


# AllenNLP reads a constructor's parameters from its signature: `gradient_descent`'s.
ElmoCTrainer.from_partial_objects.__func__.__signature__ = inspect.signature(  # type: ignore
    GradientDescentTrainer.from_partial_objects.__func__  # type: ignore[attr-defined]
)
