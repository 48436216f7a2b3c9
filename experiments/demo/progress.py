"""
The demo's terminal: each training run's full log goes to a file (`quiet`), and the terminal shows
one progress bar per run (`DemoProgressCallback`, a trainer callback the demo adds to its runs),
which also records the run's training curve (`curve.json`, drawn by `plot_curve`).
"""

import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Optional

from allennlp.training.callbacks.callback import TrainerCallback
from tqdm import tqdm

# Where the bars go while `quiet` sends everything else to a log file (None: sys.stderr).
_terminal: Optional[IO[str]] = None


@contextlib.contextmanager
def quiet(log_file: Path, verbose: bool = False) -> Iterator[None]:
    """
    Sends what the block prints and logs (AllenNLP's INFO log, its tqdm bars, warnings) to
    `log_file`, appending; the terminal keeps only `DemoProgressCallback`'s bar. With `verbose`
    nothing is redirected. Logging is restored afterwards (`allennlp train` replaces the root
    logger's handlers with its own).
    """
    global _terminal
    if verbose:
        yield
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    terminal = sys.stderr
    with open(log_file, "a", encoding="utf-8") as log:
        handler = logging.StreamHandler(log)
        handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s"))
        root.handlers, _terminal = [handler], terminal
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        finally:
            for added in root.handlers:
                if added not in handlers:
                    added.close()
            root.handlers, _terminal = handlers, None
            root.setLevel(level)


@TrainerCallback.register("demo_progress")
class DemoProgressCallback(TrainerCallback):
    """
    One progress bar for a whole training run, updated in place: training batches over all
    epochs, with the latest validation value of `metric` after each epoch.

    # Parameters

    serialization_dir : `str`
        Given by the trainer.
    label : `str`, optional (default = `"training"`)
        The bar's description.
    total_batches : `int`, optional (default = `None`)
        The number of training batches the run will take at most (unknown: a counter).
    metric : `str`, optional (default = `None`)
        A validation metric shown after each epoch.
    curve_every : `int`, optional (default = `10`)
        Every this many training batches, the batch loss and the running training metrics
        (`forward_cosine` / `backward_cosine` where the model reports them) go into
        `<serialization_dir>/curve.json`, written when training ends.
    """

    def __init__(
        self,
        serialization_dir: str,
        label: str = "training",
        total_batches: Optional[int] = None,
        metric: Optional[str] = None,
        curve_every: int = 10,
    ) -> None:
        super().__init__(serialization_dir)
        self.label = label
        self.total_batches = total_batches
        self.metric = metric
        self.curve_every = curve_every
        self.curve: List[Dict[str, float]] = []
        self._batches = 0
        self._bar: Optional[tqdm] = None

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs) -> None:
        super().on_start(trainer, is_primary, **kwargs)
        if is_primary:
            self._bar = tqdm(
                total=self.total_batches,
                desc=f"  {self.label}",
                unit="batch",
                file=_terminal or sys.stderr,
                dynamic_ncols=True,
                mininterval=1.0,
            )

    def on_batch(
        self,
        trainer: Any,
        batch_inputs: List[Dict[str, Any]],
        batch_outputs: List[Dict[str, Any]],
        batch_metrics: Dict[str, Any],
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        batch_grad_norm: Optional[float] = None,
        **kwargs,
    ) -> None:
        if self._bar is None or not is_training:
            return
        self._bar.update(1)
        self._batches += 1
        if self._batches % self.curve_every == 0:
            point = {"batch": float(self._batches), "loss": float(batch_metrics["batch_loss"])}
            for key in ("forward_cosine", "backward_cosine"):
                if key in batch_metrics:
                    point[key] = float(batch_metrics[key])
            self.curve.append(point)

    def on_epoch(
        self,
        trainer: Any,
        metrics: Dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs,
    ) -> None:
        value = metrics.get(f"validation_{self.metric}") if self.metric else None
        if self._bar is not None:
            postfix = {"epoch": epoch + 1}
            if value is not None:
                postfix[self.metric] = f"{value:.3f}"
            self._bar.set_postfix(postfix)

    def on_end(self, trainer: Any, metrics: Dict[str, Any] = None, epoch: int = None,
               is_primary: bool = True, **kwargs) -> None:  # fmt: skip
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            with open(os.path.join(self.serialization_dir, "curve.json"), "w") as out:
                json.dump(self.curve, out)


def plot_curve(curve_file: Path, png: Path, title: str) -> Path:
    """Draws `curve.json` (batch loss, and the cosines where recorded, against the batch) as a
    PNG; returns its path."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    points = json.loads(curve_file.read_text())
    batches = [point["batch"] for point in points]
    figure, loss_axis = plt.subplots(figsize=(7, 4))
    loss_axis.plot(batches, [point["loss"] for point in points], color="tab:red", lw=0.8)
    loss_axis.set_xlabel("training batch")
    loss_axis.set_ylabel("batch loss", color="tab:red")
    cosines = [key for key in ("forward_cosine", "backward_cosine") if points and key in points[0]]
    if cosines:
        cosine_axis = loss_axis.twinx()
        for key, style in zip(cosines, ("-", "--")):
            cosine_axis.plot(batches, [point[key] for point in points], style, color="tab:blue",
                             label=key.replace("_", " "))  # fmt: skip
        cosine_axis.set_ylabel("running training cosine", color="tab:blue")
        cosine_axis.legend(loc="lower right")
    loss_axis.set_title(title)
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)
    return png
