from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.fasttext.fasttext_source import (
    check_fingerprint,
    resolve_missing_fasttext,
    trained_with,
)


@TokenEmbedder.register("fasttext")
class FastTextEmbedder(TokenEmbedder):
    """
    Frozen fastText word vectors with subwords: a token's vector is the mean of the rows the
    `fasttext_subwords` indexer gives, fastText's `get_word_vector` for any word. The matrix is
    memory-mapped from `model_path` (resolved by `resolve_missing_fasttext` if missing), neither
    a parameter nor a buffer, copied once to each other device. `expected_dim`: another
    dimension is refused; `fingerprint`: the `.bin` it was trained with (recorded in
    config.json), another file is refused, as is an indexer's batch from another file.
    """

    def __init__(
        self, model_path: str, expected_dim: Optional[int] = None, fingerprint: Optional[int] = None
    ) -> None:
        super().__init__()
        model_path = resolve_missing_fasttext(model_path, "fasttext token embedder", fingerprint)
        if fingerprint is not None:
            check_fingerprint(model_path, fingerprint, trained_with(fingerprint))
        self._fasttext = FastTextBin.load(model_path)
        if expected_dim is not None and expected_dim != self._fasttext.dim:
            raise ConfigurationError(
                f"fastText model {model_path} has dimension {self._fasttext.dim}, but "
                f"{expected_dim} was expected (a task config's fastText-only row takes its size "
                f"from ELMO_C_FASTTEXT_DIM: set ELMO_C_FASTTEXT_DIM={self._fasttext.dim})"
            )

    def get_output_dim(self) -> int:
        return self._fasttext.dim

    @property
    def words(self) -> List[str]:
        """The fastText model's vocabulary, most frequent first (as stored in the `.bin`)."""
        return self._fasttext.words

    @property
    def model_path(self) -> str:
        """The fastText `.bin` this embedder reads."""
        return str(self._fasttext.path)

    def forward(
        self,
        subword_ids: torch.LongTensor,
        subword_counts: torch.LongTensor,
        token_mask: Optional[torch.BoolTensor] = None,
        fasttext_fingerprint: Optional[torch.LongTensor] = None,
    ) -> torch.Tensor:
        """
        `subword_ids` `(batch, total_subwords)`: each sentence's tokens' ids one after the
        other, padded with anything; `subword_counts` `(batch, num_tokens)`: how many each token
        has; `fasttext_fingerprint` `(batch, 1)`: the indexer's `.bin`, checked. Returns
        `(batch, num_tokens, dim)`, zeros for tokens without subwords.
        """
        if fasttext_fingerprint is not None:
            self.check_indexer_fingerprint(fasttext_fingerprint)
        matrix = self._fasttext.matrix_on(subword_ids.device)
        counts = subword_counts.reshape(-1)
        width = subword_ids.size(-1)
        sentences = subword_counts.sum(-1).reshape(-1)
        valid = torch.arange(width, device=subword_ids.device) < sentences.unsqueeze(1)
        flat_ids = subword_ids.reshape(sentences.numel(), width)[valid]
        offsets = torch.cumsum(counts, 0) - counts
        vectors = torch.nn.functional.embedding_bag(flat_ids, matrix, offsets, mode="mean")
        return vectors.view(*subword_counts.shape, self._fasttext.dim)

    def check_indexer_fingerprint(self, fingerprints: torch.Tensor) -> None:
        mine = self._fasttext.fingerprint
        others = sorted({int(value) for value in fingerprints.reshape(-1).tolist()} - {mine})
        if others:
            files = [FastTextBin.path_of(other) or f"another model (fingerprint {other})"
                     for other in others]  # fmt: skip
            raise ConfigurationError(
                f"The fastText embedder reads {self.model_path}, but the fasttext_subwords "
                f"indexer under its key reads {', '.join(files)}: its subword ids are rows of "
                "another model. Give the indexer the embedder's model: with an ELMo-C archive, "
                "{type: 'fasttext_subwords', archive_file: <the archive>} (no model_path); else "
                f"model_path: {self.model_path}."
            )

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        """The vectors of arbitrary strings, shape `(len(words), dim)`."""
        rows = self._fasttext.subword_ids_batch(words)
        ids = torch.tensor([i for row in rows for i in row], dtype=torch.long)
        counts = torch.tensor([len(row) for row in rows], dtype=torch.long)
        device = device or torch.device("cpu")
        return self.forward(ids.to(device).unsqueeze(0), counts.to(device).unsqueeze(0))[0]
