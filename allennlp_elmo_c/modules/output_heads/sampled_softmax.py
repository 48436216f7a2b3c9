import logging
import math
from typing import Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules import TextFieldEmbedder

from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.softmax import SoftmaxOutputHead

logger = logging.getLogger(__name__)


def log_uniform_probabilities(ids: torch.Tensor, num_words: int) -> torch.Tensor:
    """
    P(id) = log((id + 2) / (id + 1)) / log(num_words + 1), the log-uniform (Zipfian) distribution
    over `[0, num_words)` (TensorFlow's `log_uniform_candidate_sampler`). Written with `log1p`
    so that it stays accurate in float32 for large ids, where the two logarithms nearly cancel.
    """
    ids = ids.to(torch.float32)
    return torch.log1p(1.0 / (ids + 1.0)) / math.log(num_words + 1)


def sample_log_uniform(
    num_words: int, num_samples: int, device: torch.device, chunk_size: Optional[int] = None
) -> Tuple[torch.LongTensor, int]:
    """
    `num_samples` distinct ids from the log-uniform distribution over `[0, num_words)`, drawn as
    TensorFlow's unique sampler does: ids are drawn one after another, repeats are skipped, and
    drawing stops at the `num_samples`-th new id. Vectorised in chunks on `device`.

    # Returns

    The ids `(num_samples,)` in order of first draw, and the number of draws (tries) it took.
    """
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
    The original ELMo's output layer: in training, a sampled softmax (Jean et al. 2015) over the
    true word and `num_samples` distinct words drawn from a log-uniform (Zipfian) distribution
    over the ids, shared by the batch; each logit is corrected by minus the log of its expected
    count and samples equal to a position's true word ("accidental hits") are removed from that
    position's softmax. In evaluation (`not self.training`) it is the full softmax of its
    parent class, so validation perplexity is exact.

    The log-uniform sampler assumes the ids are sorted by decreasing frequency, which is what a
    `Vocabulary` built from instances does (`@@PADDING@@` = 0 and `@@UNKNOWN@@` = 1 come first
    and are sampled often, so their scores are pushed down as for any frequent word).

    The output embedding options are those of `softmax`: with `freeze_output_embedding` and
    `output_embedding_fasttext` this is the paper's FIXED layer (a sampled softmax over a frozen
    fastText output embedding). The training loss (and so the training perplexity) is the
    sampled one and is not comparable with the validation loss.

    Registered as an `OutputHead` with name "sampled_softmax".

    # Parameters

    num_samples : `int`, optional (default = `8192`)
        Distinct negative samples per batch (ELMo's setting). Capped at half the vocabulary
        (beyond that drawing distinct ids gets slow and a full softmax costs about the same).

    The other parameters are those of `softmax`.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        text_field_embedder: Optional[TextFieldEmbedder] = None,
        vocab_namespace: str = "tokens",
        num_samples: int = 8192,
        tie_input_embedding: bool = False,
        freeze_output_embedding: bool = False,
        output_embedding_fasttext: Optional[str] = None,
    ) -> None:
        super().__init__(
            input_dim,
            target_dim,
            vocab,
            text_field_embedder=text_field_embedder,
            vocab_namespace=vocab_namespace,
            tie_input_embedding=tie_input_embedding,
            freeze_output_embedding=freeze_output_embedding,
            output_embedding_fasttext=output_embedding_fasttext,
        )
        if num_samples < 1:
            raise ConfigurationError(
                f"sampled_softmax: num_samples must be >= 1, got {num_samples}"
            )
        self.num_samples = min(num_samples, max(self.num_words // 2, 1))
        if self.num_samples < num_samples:
            logger.warning(
                "sampled_softmax: %d samples from a vocabulary of %d words; using %d",
                num_samples,
                self.num_words,
                self.num_samples,
            )

    def loss(self, hidden: torch.Tensor, target_ids: torch.LongTensor) -> torch.Tensor:
        if not self.training:
            return super().loss(hidden, target_ids)
        samples, num_tries = sample_log_uniform(self.num_words, self.num_samples, hidden.device)
        projected = self.project(hidden)
        ids = torch.cat([target_ids, samples])
        weights = torch.nn.functional.embedding(ids, self.output_embedding)
        biases = self.output_bias[ids]
        count = target_ids.size(0)
        # A batched matrix product, like the sampled logits' (under autocast both then run in the
        # same precision; an elementwise product would stay in float32 and bias the softmax).
        true_logits = torch.bmm(projected.unsqueeze(1), weights[:count].unsqueeze(2)).view(count)
        true_logits = true_logits + biases[:count]
        sampled_logits = projected @ weights[count:].t() + biases[count:]
        # The corrections and the softmax in float32 whatever the autocast dtype.
        true_logits = (
            true_logits.float() - expected_counts(target_ids, self.num_words, num_tries).log()
        )
        sampled_logits = (
            sampled_logits.float() - expected_counts(samples, self.num_words, num_tries).log()
        )
        accidental_hits = samples.unsqueeze(0) == target_ids.unsqueeze(1)
        sampled_logits = sampled_logits.masked_fill(accidental_hits, float("-inf"))
        logits = torch.cat([true_logits.unsqueeze(1), sampled_logits], dim=1)
        return -torch.log_softmax(logits, dim=1)[:, 0].sum()
