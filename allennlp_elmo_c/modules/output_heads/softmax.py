import logging
from typing import Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.modules import TextFieldEmbedder
from allennlp.modules.token_embedders import Embedding

from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.modules.output_heads.output_head import OutputHead
from allennlp_elmo_c.modules.output_heads.vocabulary_head import VocabularyOutputHead
from allennlp_elmo_c.modules.text_field_embedders import token_embedders
from allennlp_elmo_c.received.allocation_budget import allow

logger = logging.getLogger(__name__)


def fasttext_output_embedding(vocab: Vocabulary, namespace: str, path: str) -> torch.Tensor:
    """
    The fastText vector of each word of `namespace` in id order, `(vocab_size, dim)`: zeros for
    padding, the mean of the others for the OOV row.
    """
    fasttext = FastTextBin.load(path)
    size = vocab.get_vocab_size(namespace)
    # Frozen, these rows are not in the weights a received model's budget counts: allowed as
    # far as the .bin stores them (and the mean's copy).
    allow(2 * min(size * fasttext.dim * 4, fasttext.stored_matrix_bytes))
    vectors = torch.zeros(size, fasttext.dim)
    if vectors.is_meta:  # built on `meta`: filled once the weights are loaded
        return vectors
    # A padded namespace has padding at id 0 and the OOV token at id 1.
    padded = vocab.is_padded(namespace)
    padding_index = 0 if padded else None
    oov_index = 1 if padded and size > 1 else None
    for index, word in vocab.get_index_to_token_vocabulary(namespace).items():
        if index in (padding_index, oov_index):
            continue
        vectors[index] = torch.from_numpy(fasttext.word_vector(word))
    if oov_index is not None:
        known = torch.ones(size, dtype=torch.bool)
        known[[padding_index, oov_index]] = False
        if known.any():
            vectors[oov_index] = vectors[known].mean(0)
    logger.info("Output embedding: fastText vectors of %d words from %s", size, path)
    return vectors


@OutputHead.register("softmax")
class SoftmaxOutputHead(VocabularyOutputHead):
    """
    A full softmax over the words of `vocab_namespace`: `logits = W h + b`. `W` `(vocab_size,
    embedding_dim)` is a trainable `N(0, 1 / input_dim)` matrix, or the input embedding
    (`tie_input_embedding`, ELMo-Sub: the input's one `embedding` of shape `(vocab_size,
    input_dim)`), or the words' fastText vectors (`output_embedding_fasttext`, with a trainable
    projection of `h` when the sizes differ), frozen with `freeze_output_embedding` (the bias
    still trains): the paper's FIXED layer. Other parameters as `VocabularyOutputHead`'s.
    """

    def __init__(
        self,
        input_dim: int,
        target_dim: int,
        vocab: Vocabulary,
        text_field_embedder: Optional[TextFieldEmbedder] = None,
        vocab_namespace: str = "tokens",
        tie_input_embedding: bool = False,
        freeze_output_embedding: bool = False,
        output_embedding_fasttext: Optional[str] = None,
        positions_per_chunk: Optional[int] = None,
    ) -> None:
        super().__init__(input_dim, target_dim, vocab, vocab_namespace, positions_per_chunk)
        name = type(self).__name__
        if tie_input_embedding and (freeze_output_embedding or output_embedding_fasttext):
            raise ConfigurationError(
                f"{name}: a tied output embedding is the input embedding; freeze or initialise "
                "the input embedder instead of setting freeze_output_embedding / "
                "output_embedding_fasttext"
            )
        self.tie_input_embedding = tie_input_embedding
        if tie_input_embedding:
            self.output_embedding = self._input_embedding_weight(text_field_embedder)
        else:
            if output_embedding_fasttext is not None:
                weight = fasttext_output_embedding(
                    vocab, vocab_namespace, output_embedding_fasttext
                )
            else:
                weight = torch.randn(self.num_words, input_dim) / input_dim**0.5
            if output_embedding_fasttext is not None and freeze_output_embedding:
                # Rebuilt from the .bin whenever the model is built: never in checkpoints.
                self.register_buffer("output_embedding", weight, persistent=False)
                if weight.is_meta:  # built on `meta`: the rows are computed once loaded
                    self._fasttext_rows = (vocab, vocab_namespace, output_embedding_fasttext)
                    self.register_load_state_dict_post_hook(_fill_fasttext_rows)
            else:
                self.output_embedding = torch.nn.Parameter(
                    weight, requires_grad=not freeze_output_embedding
                )
        self.output_bias = torch.nn.Parameter(torch.zeros(self.num_words))
        embedding_dim = self.output_embedding.size(1)
        self.projection: Optional[torch.nn.Linear] = (
            torch.nn.Linear(input_dim, embedding_dim) if embedding_dim != input_dim else None
        )

    def _input_embedding_weight(
        self, text_field_embedder: Optional[TextFieldEmbedder]
    ) -> torch.nn.Parameter:
        name = type(self).__name__
        embedders = token_embedders(text_field_embedder) if text_field_embedder else {}
        if len(embedders) != 1:
            raise ConfigurationError(
                f"{name}: tie_input_embedding needs an input embedder with exactly one token "
                f"embedder, found {sorted(embedders)}"
            )
        ((key, embedder),) = embedders.items()
        if not isinstance(embedder, Embedding):
            raise ConfigurationError(
                f"{name}: tie_input_embedding: the input token embedder {key!r} "
                f"({type(embedder).__name__}) has no weight matrix (use an 'embedding')"
            )
        weight = embedder.weight
        expected = (self.num_words, self.input_dim)
        if tuple(weight.shape) != expected:
            raise ConfigurationError(
                f"{name}: tie_input_embedding: the input embedding {key!r} is "
                f"{tuple(weight.shape)}, the output embedding must be {expected} (vocabulary "
                f"{self.vocab_namespace!r} x input_dim; set embedding_dim to input_dim and no "
                "projection_dim)"
            )
        return weight

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        """`(N, input_dim)` -> `(N, embedding_dim)`: the space of the output embedding."""
        return hidden if self.projection is None else self.projection(hidden)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(
            self.project(hidden), self.output_embedding, self.output_bias
        )


def _fill_fasttext_rows(head: "SoftmaxOutputHead", incompatible_keys) -> None:
    """After the weights of a head built on `meta` are loaded: its frozen fastText rows."""
    if head.output_embedding.is_meta and not head.output_bias.is_meta:
        rows = fasttext_output_embedding(*head._fasttext_rows)
        head.register_buffer("output_embedding", rows, persistent=False)
