import logging

from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.training.training_state import checked_count

logger = logging.getLogger(__name__)


@TrainerCallback.register("skip_trained_batches")
class SkipTrainedBatches(TrainerCallback):
    """
    On `allennlp train --recover`, tells a data loader that can skip (`lm_stream`) where the
    checkpoint left off, so that it makes nothing for the epochs done and cheap placeholders for
    the batches done instead of re-reading them; the data order stays the uninterrupted run's.

    Registered as a `TrainerCallback` with name "skip_trained_batches".
    """

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        # The position restored from the checkpoint (set by the trainer before `on_start`).
        where = "skip_trained_batches: the checkpoint's"
        epochs = checked_count(getattr(trainer, "_start_after_epochs_completed", 0),
                               "epochs_completed", where)  # fmt: skip
        batches = checked_count(getattr(trainer, "_start_after_batches_in_epoch_completed", 0),
                                "batches_in_epoch_completed", where)  # fmt: skip
        if not (epochs or batches):
            return
        resume = getattr(trainer.data_loader, "resume", None)
        if resume is None:
            logger.info("skip_trained_batches: %s cannot skip; the trainer re-reads the trained "
                        "batches", type(trainer.data_loader).__name__)  # fmt: skip
            return
        accumulation = getattr(trainer, "_num_gradient_accumulation_steps", 1)
        resume(epochs, batches * accumulation)
