import functools
import logging
import math
from typing import Callable, Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.softmax import SoftmaxOutputHead

logger = logging.getLogger(__name__)


def log_uniform_probabilities(ids: torch.Tensor, num_words: int) -> torch.Tensor:
    """P(id) = log((id + 2) / (id + 1)) / log(num_words + 1): TensorFlow's log-uniform
    (Zipfian) distribution over `[0, num_words)`."""
    ids = ids.to(torch.float32)
    return torch.log1p(1.0 / (ids + 1.0)) / math.log(num_words + 1)


def sample_log_uniform(
    num_words: int, num_samples: int, device: torch.device, chunk_size: Optional[int] = None
) -> Tuple[torch.LongTensor, int]:
    """`num_samples` distinct ids `(num_samples,)` from the log-uniform distribution over
    `[0, num_words)`, in order of first draw, as TensorFlow's unique sampler draws them, and
    the number of draws it took."""
    if not 0 < num_samples <= num_words:
        raise ValueError(f"cannot draw {num_samples} distinct ids from {num_words}")
    chunk_size = chunk_size or max(2 * num_samples, 64)
    log_range = math.log(num_words + 1)
    seen = torch.zeros(num_words, dtype=torch.bool, device=device)
    positions = torch.arange(chunk_size, device=device)
    found, tries, missing = [], 0, num_samples
    while True:
        uniform = torch.rand(chunk_size, device=device, dtype=torch.float64)
        draws = ((uniform * log_range).exp() - 1.0).long().clamp_(0, num_words - 1)
        # An id is new at its first position in this chunk, unless an earlier chunk drew it.
        first = torch.full((num_words,), chunk_size, dtype=torch.long, device=device)
        first.scatter_reduce_(0, draws, positions, reduce="amin")
        new = (first[draws] == positions) & ~seen[draws]
        new_so_far = new.cumsum(0)
        total_new = int(new_so_far[-1])
        if total_new >= missing:
            stop = int(torch.searchsorted(new_so_far, missing))  # the draw that completes it
            found.append(draws[: stop + 1][new[: stop + 1]])
            return torch.cat(found), tries + stop + 1
        found.append(draws[new])
        seen[draws] = True
        tries += chunk_size
        missing -= total_new


def expected_counts(ids: torch.Tensor, num_words: int, num_tries: int) -> torch.Tensor:
    """How often `ids` are expected to be drawn in `num_tries` draws: 1 - (1 - P(id))^tries."""
    probabilities = log_uniform_probabilities(ids, num_words)
    return -torch.expm1(num_tries * torch.log1p(-probabilities))


@OutputHead.register("sampled_softmax")
class SampledSoftmaxOutputHead(SoftmaxOutputHead):
    """
    The original ELMo's output layer: in training, a sampled softmax (Jean et al. 2015) over
    the true word and `num_samples` (default 8192, at most half the candidates) distinct words
    drawn per batch from a log-uniform distribution over the candidates' ranks (ids sorted by
    decreasing frequency, as a `Vocabulary` built from instances is; every id but padding's).
    Each logit is corrected by minus the log of its expected count; samples equal to a
    position's true word are removed from its softmax. In evaluation it is the full softmax
    of `softmax`, whose parameters it takes: validation perplexity is exact, the training loss
    is not comparable with it.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        *,
        num_samples: int = 8192,
        **kwargs,
    ) -> None:
        super().__init__(input_dim, target_dim, vocab, **kwargs)
        if num_samples < 1:
            raise ConfigurationError(
                f"sampled_softmax: num_samples must be >= 1, got {num_samples}"
            )
        # A padded namespace has @@PADDING@@ at id 0: the candidates are the ids after it.
        self.first_candidate_id = 1 if vocab.is_padded(self.vocab_namespace) else 0
        self.num_candidates = self.num_words - self.first_candidate_id
        self.num_samples = min(num_samples, max(self.num_candidates // 2, 1))
        if self.num_samples < num_samples:
            logger.warning(
                "sampled_softmax: %d samples from %d candidate words; using %d",
                num_samples,
                self.num_candidates,
                self.num_samples,
            )

    def draw_samples(self, device: torch.device) -> Tuple[torch.LongTensor, int]:
        """`num_samples` distinct candidate ids on `device` and the number of draws it took."""
        ranks, num_tries = sample_log_uniform(self.num_candidates, self.num_samples, device)
        return ranks + self.first_candidate_id, num_tries

    def log_expected_counts(self, ids: torch.Tensor, num_tries: int) -> torch.Tensor:
        """The log of how often each of `ids` is expected among `num_tries` draws."""
        return expected_counts(ids - self.first_candidate_id, self.num_candidates, num_tries).log()

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The full softmax's logits `(num_positions, num_words)`, -inf for padding."""
        logits = super().logits(hidden)
        if self.first_candidate_id == 0:
            return logits
        excluded = torch.arange(self.num_words, device=logits.device) < self.first_candidate_id
        return logits.masked_fill(excluded, float("-inf"))

    def loss_function(
        self, hidden: torch.Tensor, target_ids: torch.LongTensor
    ) -> Tuple[Callable[..., torch.Tensor], Tuple[torch.Tensor, ...]]:
        if not self.training:
            return super().loss_function(hidden, target_ids)
        if self.first_candidate_id and target_ids.numel():
            if int(target_ids.min()) < self.first_candidate_id:
                raise ValueError(
                    "sampled_softmax: a target id is @@PADDING@@ (0), which is never sampled; "
                    "padded positions must be masked out"
                )
        # Drawn once per batch and shared by every chunk of positions.
        samples, num_tries = self.draw_samples(hidden.device)
        sample_weights = torch.nn.functional.embedding(samples, self.output_embedding)
        # Each sample's bias and correction, in float32 whatever the autocast dtype.
        sample_offsets = self.output_bias[samples].float() - self.log_expected_counts(
            samples, num_tries
        )
        shared = (samples, sample_weights, sample_offsets)
        return functools.partial(self._sampled_loss, num_tries=num_tries), shared

    def _sampled_loss(
        self,
        hidden: torch.Tensor,
        target_ids: torch.LongTensor,
        samples: torch.LongTensor,
        sample_weights: torch.Tensor,
        sample_offsets: torch.Tensor,
        num_tries: int,
    ) -> torch.Tensor:
        """The summed sampled-softmax negative log-likelihood of `target_ids` `(N,)` against
        `samples` `(S,)`, their output vectors and their bias minus log expected count."""
        projected = self.project(hidden)
        count = target_ids.size(0)
        target_weights = torch.nn.functional.embedding(target_ids, self.output_embedding)
        # A matrix product as the sampled logits', so both run in one precision under autocast.
        true_logits = torch.bmm(projected.unsqueeze(1), target_weights.unsqueeze(2)).view(count)
        # The corrections and the softmax in float32 whatever the autocast dtype.
        true_logits = (
            true_logits.float()
            + self.output_bias[target_ids].float()
            - self.log_expected_counts(target_ids, num_tries)
        )
        sampled_logits = (projected @ sample_weights.t()).float() + sample_offsets
        accidental_hits = samples.unsqueeze(0) == target_ids.unsqueeze(1)
        sampled_logits = sampled_logits.masked_fill(accidental_hits, float("-inf"))
        logits = torch.cat([true_logits.unsqueeze(1), sampled_logits], dim=1)
        return -torch.log_softmax(logits, dim=1)[:, 0].sum()
