import logging

from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.training.training_state import checked_count

logger = logging.getLogger(__name__)


@TrainerCallback.register("skip_trained_batches")
class SkipTrainedBatches(TrainerCallback):
    """On `--recover`, tells a data loader that can skip (`lm_stream.resume`) where the
    checkpoint left off, instead of re-reading the trained batches."""

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
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
