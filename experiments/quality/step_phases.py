import json
import logging
import statistics
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.training.tokens_seen import predicted_tokens

logger = logging.getLogger(__name__)

RESULT_FILE = "step_phases.json"


def _tensors(value: Any) -> List[torch.Tensor]:
    """The tensors in a module's output (a tensor, or dicts, lists and tuples of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors(item)]
    return []


def _called_submodules(model: torch.nn.Module) -> List[Tuple[str, torch.nn.Module]]:
    """The model's direct submodules, with the members of a `ModuleDict` / `ModuleList` in
    place of the container (which is indexed, not called), e.g. `_heads.forward_lm`."""
    found = []
    for name, child in model.named_children():
        if isinstance(child, (torch.nn.ModuleDict, torch.nn.ModuleList)):
            found += [(f"{name}.{key}", member) for key, member in child.named_children()]
        else:
            found.append((name, child))
    return found


@TrainerCallback.register("step_phases")
class StepPhases(TrainerCallback):
    """
    Where a training step's time goes, measured inside a real `allennlp train` run: after `skip`
    training batches, for the next `batches`, each step's wall-clock time is split into

    - `data and trainer`: from the previous step's end to the model's forward (reading and
      indexing the batch, `zero_grad`, other callbacks' `on_batch` work after this one's);
    - `forward <child>`: each direct submodule of the model (its time summed over its calls; the
      members of a `ModuleDict` or `ModuleList` each on their own), and `forward, model's own
      code` for the rest of the model's forward;
    - `backward <child>`: from the moment the gradient of a submodule's output is complete to
      the next such moment (CPU autograd runs one node at a time): that submodule's backward,
      with the backward of the model's own code between it and the next submodule down; and
      `backward, before the submodules` for what runs from the loss down to the first of them;
    - `between forward and backward`: the trainer's loss checks and `on_backward` callbacks;
    - `after backward`: from the last parameter's gradient to the step's end (gradient clipping,
      the learning-rate scheduler, the optimizer step, other callbacks' `on_batch` work before
      this one's; with distributed training, waiting for the gradients' all-reduce).

    The phases of a step add up to the step. Left out, as `unmeasured`: the first step of each
    epoch and a step in which the model ran more than one forward. After `batches` steps it
    writes `step_phases.json` into the serialization directory (mean seconds per step of each
    phase, the median and mean step, tokens predicted per step) and removes its hooks; a run that
    ends normally before then writes what it measured. Meant for CPU runs (the timestamps are the
    host's).

    Registered as a `TrainerCallback` with name "step_phases".

    # Parameters

    skip : `int`, optional (default = `10`)
        Training batches run before measuring (warm-up: first allocations, the first data chunk).
    batches : `int`, optional (default = `40`)
        Training batches measured.
    """

    def __init__(self, serialization_dir: str, skip: int = 10, batches: int = 40) -> None:
        super().__init__(serialization_dir)
        if skip < 1 or batches < 1:
            raise ConfigurationError(
                f"step_phases: skip and batches must be >= 1 (the first step has no start to "
                f"measure from), got skip={skip}, batches={batches}"
            )
        self.skip = skip
        self.batches = batches
        self.seen = 0
        self.steps: List[Dict[str, float]] = []
        self.tokens: List[int] = []
        self._handles: List[Any] = []
        self._marks: Dict[str, float] = {}
        self._forward: Dict[str, float] = {}
        self._arrivals: Dict[str, float] = {}
        self._child_start: Dict[str, float] = {}
        self._step_end: Optional[float] = None
        self._watched: Dict[int, torch.Tensor] = {}
        self._forwards = 0  # the model's forwards in this step
        self._in_forward = False  # inside the step's (first) forward
        self.unmeasured = 0  # steps left out: not one model forward

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        if getattr(trainer, "_num_gradient_accumulation_steps", 1) > 1:
            raise ConfigurationError(
                "step_phases splits steps of one batch: remove num_gradient_accumulation_steps "
                "from the trainer while measuring"
            )
        model = trainer.model
        if any(parameter.is_cuda for parameter in model.parameters()):
            logger.warning(
                "step_phases: the model is on a GPU, where these host-side timestamps mark kernel "
                "launches, not their work: a phase's GPU time lands where the host next waits"
            )
        self._handles.append(model.register_forward_pre_hook(self._model_starts))
        self._handles.append(model.register_forward_hook(self._model_ends))
        for name, child in _called_submodules(model):
            self._handles.append(child.register_forward_pre_hook(self._child_starts(name)))
            self._handles.append(child.register_forward_hook(self._child_ends(name)))
        for parameter in model.parameters():
            if parameter.requires_grad:
                self._handles.append(
                    parameter.register_post_accumulate_grad_hook(self._gradient_done)
                )

    def _model_starts(self, module, inputs) -> None:
        self._forwards += 1
        self._in_forward = self._forwards == 1
        if self._in_forward:
            self._marks = {"forward_start": time.perf_counter()}
            self._forward, self._arrivals, self._child_start = {}, {}, {}

    def _model_ends(self, module, inputs, output) -> None:
        if not self._in_forward:
            return
        self._in_forward = False
        self._marks["forward_end"] = time.perf_counter()
        loss = output.get("loss") if isinstance(output, dict) else None
        if isinstance(loss, torch.Tensor) and loss.requires_grad:
            loss.register_hook(self._backward_starts)

    def _backward_starts(self, grad: torch.Tensor) -> None:
        self._marks.setdefault("backward_start", time.perf_counter())

    def _gradient_done(self, parameter: torch.Tensor) -> None:
        self._marks["backward_end"] = time.perf_counter()

    def _child_starts(self, name: str):
        def hook(module, inputs) -> None:
            if self._in_forward:
                self._child_start[name] = time.perf_counter()

        return hook

    def _child_ends(self, name: str):
        def arrived(grad: torch.Tensor) -> None:
            self._arrivals.setdefault(name, time.perf_counter())

        def hook(module, inputs, output) -> None:
            if not self._in_forward:  # called outside the model's forward: not a phase
                return
            now = time.perf_counter()
            self._forward[name] = self._forward.get(name, 0.0) + now - self._child_start[name]
            for tensor in _tensors(output):
                # A tensor passed through unchanged (dropout of 0 returns its input) is its
                # producer's: its gradient's arrival starts the producer's backward.
                if tensor.requires_grad and id(tensor) not in self._watched:
                    self._watched[id(tensor)] = tensor  # (kept alive: ids stay unique)
                    tensor.register_hook(arrived)

        return hook

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, batch_grad_norm=None, **kwargs) -> None:  # fmt: skip
        if not is_training or not self._handles:
            return
        now = time.perf_counter()
        self.seen += 1
        if self.seen > self.skip and self._step_end is not None:
            if self._forwards == 1:
                self.steps.append(self._phases(now))
                self.tokens.append(sum(predicted_tokens(batch) for batch in batch_inputs))
            else:  # another forward (a callback's) would be timed as part of some phase
                self.unmeasured += 1
                logger.warning("step_phases: a step with %d model forwards is not measured",
                               self._forwards)  # fmt: skip
        self._forwards, self._watched = 0, {}
        if len(self.steps) == self.batches:
            self._finish(is_primary)
            return
        self._step_end = time.perf_counter()  # this callback's own time counts as the next step's

    def on_epoch(self, trainer, metrics, epoch, is_primary=True, **kwargs) -> None:
        self._step_end = None  # the next epoch's first step would include validation and saving

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if not self._handles:
            return
        if self.steps and metrics is not None:  # finished before `batches` were measured
            self._finish(is_primary)
        else:  # nothing measured, or training failed: no result that could pass for one
            self._remove_hooks()
            why = "training failed" if metrics is None else "fewer than skip + 1"
            logger.warning("step_phases: %d steps measured, %s; nothing written",
                           len(self.steps), why)

    def _phases(self, end: float) -> Dict[str, float]:
        marks = self._marks  # of the step's one forward, which ended (see on_batch)
        forward_end = marks["forward_end"]
        backward_start = marks.get("backward_start", forward_end)
        backward_end = max(marks.get("backward_end", backward_start), backward_start)
        phases = {"data and trainer": marks["forward_start"] - self._step_end}
        for name, seconds in self._forward.items():
            phases[f"forward {name}"] = seconds
        phases["forward, model's own code"] = (
            forward_end - marks["forward_start"] - sum(self._forward.values())
        )
        phases["between forward and backward"] = backward_start - forward_end
        arrivals = sorted((t, name) for name, t in self._arrivals.items()
                          if backward_start <= t <= backward_end)  # fmt: skip
        first = arrivals[0][0] if arrivals else backward_end
        phases["backward, before the submodules"] = first - backward_start
        for (start, name), (stop, _) in zip(arrivals, arrivals[1:] + [(backward_end, "")]):
            phases[f"backward {name}"] = stop - start
        phases["after backward"] = end - backward_end
        return phases

    def _remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles, self._watched = [], {}

    def _finish(self, is_primary: bool) -> None:
        self._remove_hooks()
        names: List[str] = []
        for step in self.steps:
            names += [name for name in step if name not in names]
        totals = [sum(step.values()) for step in self.steps]
        result = {
            "batches": len(self.steps),
            "requested_batches": self.batches,
            "skipped": self.skip,
            "unmeasured": self.unmeasured,
            "tokens_per_step": statistics.mean(self.tokens),
            "median_step_seconds": statistics.median(totals),
            "mean_step_seconds": statistics.mean(totals),
            "mean_seconds": {name: statistics.mean(step.get(name, 0.0) for step in self.steps)
                             for name in names},  # fmt: skip
        }
        means = ", ".join(f"{k} {v:.4f}" for k, v in result["mean_seconds"].items())
        logger.info("step_phases: mean seconds per step over %d batches: %s",
                    len(self.steps), means)
        if is_primary:
            with atomic_open(Path(self.serialization_dir) / RESULT_FILE) as stream:
                stream.write(json.dumps(result, indent=1))
