import contextlib
import logging
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder, TokenEmbedder
from allennlp.nn import InitializerApplicator
from allennlp.common.util import is_distributed
from allennlp.nn.util import get_text_field_mask

from allennlp_elmo_c.common.config_defaults import ELMO_C_PRECISION
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.text_field_embedders import token_embedders
from allennlp_elmo_c.modules.token_embedders.string_embedder import StringEmbedder
from allennlp_elmo_c.nn.products import bfloat16_unsupported

logger = logging.getLogger(__name__)


DIRECTIONS = ("forward", "backward")
# Each direction with the positions of its states and of their targets.
SHIFTS = (
    ("forward", slice(None, -1), slice(1, None)),
    ("backward", slice(1, None), slice(None, -1)),
)
PRECISIONS = ("float32", "bfloat16")


def read_words(path: str) -> List[str]:
    """The distinct non-blank lines of a UTF-8 file, stripped, in file order."""
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    return [word for word in dict.fromkeys(line.strip() for line in lines) if word]


def _float32(value: Any) -> Any:
    """`value` with bfloat16 tensors (alone or in a list) as float32."""
    if isinstance(value, list):
        return [_float32(item) for item in value]
    if isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16:
        return value.float()
    return value


@Model.register("elmo_c")
class ElmoCLanguageModel(Model):
    """
    An ELMo-shaped bidirectional language model with a swappable output layer: with the
    `continuous` head it is ELMo-C, predicting the (frozen, e.g. fastText) embedding of the next
    (forward) or previous (backward) word. Sentences carry boundary tokens (`lm_corpus`); the
    loss is the mean of the two directions' mean losses.

    The `contextualizer` (`elmo_lstm`) is bidirectional, forward || backward. The
    `output_head` is built once per direction, or once with `share_output_head`. The
    `target_embedder` gives the vectors to predict (by default the input's); heads over a
    vocabulary predict the ids of the `single_id` indexer `target_ids_key`. `dropout` applies to
    the input embeddings and the heads' states. `nearest_neighbour_words`, a file of candidate
    words, adds the validation metric `*_nn_accuracy` (fastText target embedder). `precision`
    `"bfloat16"` autocasts `forward`, refused in training on a device without fast bfloat16
    products (float32 in evaluation there); `encode` is float32.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        contextualizer: Seq2SeqEncoder,
        output_head: Lazy[OutputHead],
        target_embedder: Optional[TextFieldEmbedder] = None,
        dropout: float = 0.0,
        target_ids_key: Optional[str] = None,
        share_output_head: bool = False,
        nearest_neighbour_words: Optional[str] = None,
        precision: str = "float32",
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        if precision not in PRECISIONS:
            raise ConfigurationError(
                f"elmo_c: precision must be one of {PRECISIONS}, got {precision!r}: set "
                f"{ELMO_C_PRECISION} (or model.precision) to float32 or bfloat16"
            )
        self.precision = precision
        self._text_field_embedder = text_field_embedder
        self._contextualizer = contextualizer
        self._target_embedder = target_embedder
        self._target_ids_key = target_ids_key
        if not contextualizer.is_bidirectional() or contextualizer.get_output_dim() % 2:
            raise ConfigurationError(
                "elmo_c needs a bidirectional contextualizer (forward || backward)"
            )
        check_dimensions_match(
            text_field_embedder.get_output_dim(),
            contextualizer.get_input_dim(),
            "elmo_c: the embedder's output dimension",
            "the contextualizer's input dimension",
        )
        hidden_dim = contextualizer.get_output_dim() // 2
        target_dim = (target_embedder or text_field_embedder).get_output_dim()

        def build_head() -> OutputHead:
            return output_head.construct(
                input_dim=hidden_dim,
                target_dim=target_dim,
                vocab=vocab,
                text_field_embedder=text_field_embedder,
            )

        shared = build_head() if share_output_head else None
        self._heads: Optional[torch.nn.ModuleDict] = torch.nn.ModuleDict(
            {f"{d}_lm": shared if shared is not None else build_head() for d in DIRECTIONS}
        )
        needs_ids = [head.needs_target_ids for head in self._heads.values()]
        if any(needs_ids) and target_ids_key is None:
            raise ConfigurationError(
                "elmo_c: this output head predicts vocabulary ids; set model.target_ids_key to "
                "the key of a single_id token indexer"
            )
        # Heads whose loss is a negative log-likelihood also report perplexity.
        self._perplexity_directions = [
            d for d in DIRECTIONS if self._heads[f"{d}_lm"].reports_perplexity
        ]
        self._dropout = torch.nn.Dropout(dropout)
        # Metric name -> [sum, count] on the model's device, summed across workers when read.
        self._metric_names = [
            f"{d}_{m}" for d in DIRECTIONS for m in ("loss", "cosine", "nn_accuracy")
        ]
        self._totals: Dict[str, torch.Tensor] = {}
        self._missing_candidates: Optional[str] = None
        self._candidate_words = self._read_candidates(nearest_neighbour_words)
        self._candidate_vectors: Optional[torch.Tensor] = None
        initializer(self)

    def _read_candidates(self, path: Optional[str]) -> Optional[List[str]]:
        if path is None:
            return None
        if not Path(path).is_file():
            logger.warning(
                "elmo_c: nearest_neighbour_words file %s does not exist: no *_nn_accuracy metric "
                "(training this model is refused; loading it for use is fine)",
                path,
            )
            self._missing_candidates = path
            return None
        words = read_words(path)
        if not words:
            raise ConfigurationError(f"elmo_c: nearest_neighbour_words file {path} is empty")
        if not isinstance(self._single_target_token_embedder(), StringEmbedder):
            raise ConfigurationError(
                "elmo_c: nearest_neighbour_words needs a fasttext target embedder"
            )
        return words

    def _single_target_token_embedder(self) -> Optional[TokenEmbedder]:
        embedder = self._target_embedder or self._text_field_embedder
        embedders = list(token_embedders(embedder).values())
        return embedders[0] if len(embedders) == 1 else None

    @property
    def text_field_embedder(self) -> TextFieldEmbedder:
        """The input embedder."""
        return self._text_field_embedder

    @property
    def input_token_embedders(self) -> Dict[str, TokenEmbedder]:
        """The input embedder's token embedders by indexer key."""
        return token_embedders(self._text_field_embedder)

    @property
    def contextualizer(self) -> Seq2SeqEncoder:
        """The bidirectional encoder (forward || backward)."""
        return self._contextualizer

    def num_layers(self) -> int:
        """Number of representations a downstream ScalarMix mixes: input layer + LSTM layers."""
        return self._contextualizer.num_layers + 1

    def encode(self, embeddings: torch.Tensor, mask: torch.BoolTensor) -> List[torch.Tensor]:
        """Every layer for embedded tokens `(batch, timesteps, dim)`: the input projection, then
        each LSTM layer (needs `return_all_layers`)."""
        layers = self._contextualizer(embeddings, mask)
        if not isinstance(layers, list):
            raise ConfigurationError("elmo_c.encode needs contextualizer.return_all_layers = True")
        return layers

    def delete_softmax(self) -> None:
        """Drops the output heads (downstream use needs only the representations)."""
        self._heads = None

    def forward(self, tokens: TextFieldTensors) -> Dict[str, torch.Tensor]:  # type: ignore
        """
        `tokens`: sentences with boundary tokens, `(batch, timesteps)` per indexer. Returns
        `loss`, `forward_loss`, `backward_loss` (with heads); `forward_predictions` /
        `backward_predictions` `(batch, timesteps - 1, dim)` for heads that predict vectors;
        `lm_embeddings` (the top layer, or all layers), `noncontextual_token_embeddings`, `mask`.
        """
        if self.training and self._missing_candidates is not None:
            raise ConfigurationError(
                f"elmo_c: nearest_neighbour_words file {self._missing_candidates} does not exist; "
                "give an existing file or remove nearest_neighbour_words from the config"
            )
        tokens, target_ids = self._take_target_ids(tokens)
        with self._autocast(get_text_field_mask(tokens).device):
            output = self._forward(tokens, target_ids)
        return {key: _float32(value) for key, value in output.items()}

    def _autocast(self, device: torch.device) -> Any:
        """bfloat16 autocast on `device` for `precision` "bfloat16", else none."""
        if self.precision == "float32":
            return contextlib.nullcontext()
        reason = bfloat16_unsupported(device)
        if reason is not None and not self.training:
            return contextlib.nullcontext()
        if reason is not None:
            raise ConfigurationError(
                f"elmo_c: precision 'bfloat16' needs fast bfloat16 matrix products, and {reason}; "
                f"set {ELMO_C_PRECISION}=float32 (or model.precision) for this device"
            )
        return torch.autocast(device.type, dtype=torch.bfloat16)

    def _forward(
        self, tokens: TextFieldTensors, target_ids: Optional[torch.LongTensor]
    ) -> Dict[str, torch.Tensor]:
        mask = get_text_field_mask(tokens)  # (batch, timesteps)
        embeddings = self._text_field_embedder(tokens)  # (batch, timesteps, embedding_dim)
        # (batch, timesteps, 2 * hidden), or a list of num_layers() such with return_all_layers
        contextual = self._contextualizer(self._dropout(embeddings), mask)
        output = {
            "lm_embeddings": contextual,
            "noncontextual_token_embeddings": embeddings,
            "mask": mask,
        }
        if self._heads is None:
            return output
        top = contextual[-1] if isinstance(contextual, list) else contextual
        # (batch, timesteps, 2 * hidden) -> 2 x (batch, timesteps, hidden)
        hidden = dict(zip(DIRECTIONS, self._dropout(top).chunk(2, dim=-1)))
        targets = embeddings if self._target_embedder is None else self._target_embedder(tokens)
        pair_mask = mask[:, 1:]  # positions t and t + 1 are both real tokens
        losses = []
        # The forward LM's state at t predicts token t + 1, the backward's at t + 1 token t.
        for direction, states, target in SHIFTS:
            target_vectors = targets[:, target]  # (batch, timesteps - 1, target_dim)
            result = self._heads[f"{direction}_lm"](
                hidden[direction][:, states],
                pair_mask,
                target_embeddings=target_vectors,
                target_ids=None if target_ids is None else target_ids[:, target],
            )
            loss = result["loss"] / result["count"].clamp(min=1)
            output[f"{direction}_loss"] = loss
            self._record(f"{direction}_loss", result["loss"].detach(), result["count"])
            if "predictions" in result:
                output[f"{direction}_predictions"] = result["predictions"]
                self._update_vector_metrics(
                    direction, result["predictions"], target_vectors, pair_mask
                )
            losses.append(loss)
        output["loss"] = 0.5 * (losses[0] + losses[1])
        if self.training:
            self._check_finite(losses)
        return output

    def _take_target_ids(
        self, tokens: TextFieldTensors
    ) -> Tuple[TextFieldTensors, Optional[torch.LongTensor]]:
        """The `(batch, timesteps)` ids to predict, removed from `tokens` if the input embedder
        does not read them."""
        if self._target_ids_key is None:
            return tokens, None
        if self._target_ids_key not in tokens:
            raise ConfigurationError(
                f"elmo_c: target_ids_key {self._target_ids_key!r} is not among the token "
                f"indexers ({sorted(tokens)})"
            )
        if "tokens" not in tokens[self._target_ids_key]:
            raise ConfigurationError(
                f"elmo_c: target_ids_key {self._target_ids_key!r} must name a single_id "
                f"indexer (its outputs are {sorted(tokens[self._target_ids_key])})"
            )
        target_ids = tokens[self._target_ids_key]["tokens"]
        if self._target_ids_key not in self.input_token_embedders:
            tokens = {k: v for k, v in tokens.items() if k != self._target_ids_key}
        return tokens, target_ids

    @staticmethod
    def _check_finite(losses: List[torch.Tensor]) -> None:
        # AllenNLP's trainer stops on NaN only; an infinite loss would train on silently.
        values = torch.stack([loss.detach().float() for loss in losses])
        if is_distributed():
            # Every rank must stop, not only the one that saw it.
            flags = (~torch.isfinite(values)).float()
            dist.all_reduce(flags)
            values = torch.where(flags > 0, torch.full_like(values, math.nan), values)
        for direction, value in zip(DIRECTIONS, values.tolist()):
            if not math.isfinite(value):
                raise ValueError(
                    f"elmo_c: the {direction} LM loss is {value} in this training batch (of "
                    "this process or another one); stopping instead of training on it (a "
                    "learning rate too high, corrupt input vectors?). The checkpoints in the "
                    "serialization directory hold the weights from before."
                )

    @torch.no_grad()
    def _update_vector_metrics(
        self,
        direction: str,
        predictions: torch.Tensor,
        targets: torch.Tensor,
        mask: torch.BoolTensor,
    ) -> None:
        with torch.autocast(predictions.device.type, enabled=False):  # cosines of 1 - 1e-5 below
            mask = mask.float()
            predictions, targets = predictions.float(), targets.float()
            cosine = torch.nn.functional.cosine_similarity(predictions, targets, dim=-1, eps=1e-8)
            self._record(f"{direction}_cosine", (cosine * mask).sum(), mask.sum())
            if self._candidate_words is None or self.training:
                return
            candidates = self.candidate_vectors(predictions.device)
            targets_match = torch.nn.functional.normalize(targets, dim=-1) @ candidates.t()
            best_target_score, target_index = targets_match.max(dim=-1)
            # Targets whose word is one of the candidates (its vector is a candidate's, cosine 1).
            in_list = (best_target_score > 1 - 1e-5).float() * mask
            unit = torch.nn.functional.normalize(predictions, dim=-1)
            correct = ((unit @ candidates.t()).argmax(-1) == target_index).float() * in_list
            self._record(f"{direction}_nn_accuracy", correct.sum(), in_list.sum())

    @property
    def predicts_vectors(self) -> bool:
        """Whether the output heads predict target vectors (`*_predictions`), not ids."""
        return self._heads is not None and not any(
            head.needs_target_ids for head in self._heads.values()
        )

    @property
    def target_vocabulary(self) -> Optional[List[str]]:
        """The target embedder's own words, most frequent first (fastText's); None if none."""
        embedder = self._single_target_token_embedder()
        words = getattr(embedder, "words", None)
        return list(words) if words is not None else None

    def target_vectors(self, words: List[str], device: torch.device) -> torch.Tensor:
        """Unit-length target vectors of any `words`, `(len(words), target_dim)`."""
        embedder = self._single_target_token_embedder()
        if not hasattr(embedder, "embed_strings"):
            raise ConfigurationError(
                "elmo_c: the target embedder cannot embed arbitrary words (use a fasttext "
                "target embedder)"
            )
        vectors = embedder.embed_strings(words, device)  # type: ignore[union-attr]
        return torch.nn.functional.normalize(vectors.float(), dim=-1)

    @property
    def candidate_words(self) -> Optional[List[str]]:
        """The `nearest_neighbour_words`, in file order (None if not configured)."""
        return self._candidate_words

    def candidate_vectors(self, device: torch.device) -> torch.Tensor:
        """Unit-length target vectors of `candidate_words`, `(num_candidates, target_dim)`."""
        if self._candidate_words is None:
            raise ConfigurationError("elmo_c: no nearest_neighbour_words configured")
        if self._candidate_vectors is None or self._candidate_vectors.device != device:
            self._candidate_vectors = self.target_vectors(self._candidate_words, device)
        return self._candidate_vectors

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        """Token-weighted means of the metrics that have counted something."""
        if not self._totals:
            return {}
        device = next(iter(self._totals.values())).device
        zero = torch.zeros(2, dtype=torch.float64, device=device)
        totals = torch.stack([self._totals.get(name, zero) for name in self._metric_names])
        if is_distributed():
            dist.all_reduce(totals)
        if reset:
            self._totals = {}
        metrics = {
            name: float(total / count)
            for name, (total, count) in zip(self._metric_names, totals.tolist())
            if count > 0
        }
        for direction in self._perplexity_directions:
            if f"{direction}_loss" in metrics:
                metrics[f"{direction}_perplexity"] = math.exp(
                    min(metrics[f"{direction}_loss"], 700)
                )
        return metrics

    def _record(self, name: str, total: torch.Tensor, count: torch.Tensor) -> None:
        value = torch.stack([total.double(), torch.as_tensor(count, device=total.device).double()])
        self._totals[name] = self._totals[name] + value if name in self._totals else value
