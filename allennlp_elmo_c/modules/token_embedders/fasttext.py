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
    Frozen fastText word vectors with subwords: a token's vector is the mean of the input-matrix
    rows given by the `fasttext_subwords` indexer, which equals fastText's `get_word_vector` for
    in- and out-of-vocabulary words alike.

    The matrix is memory-mapped from the `.bin` and is neither a parameter nor a buffer (not
    trained, not in `state_dict()` or archives, not broadcast by DDP, not copied by `deepcopy`);
    it is copied once to each other device the ids are on. A `model_path` that does not exist is
    resolved by `allennlp_elmo_c.fasttext.fasttext_source.resolve_missing_fasttext`.

    Every batch's fingerprint (from the `fasttext_subwords` indexer) is checked against this
    embedder's `.bin`: another model is a `ConfigurationError` naming both files.

    Registered as a `TokenEmbedder` with name "fasttext".

    # Parameters

    model_path : `str`
        The fastText `.bin`.
    expected_dim : `int`, optional (default = `None`)
        If given, a `.bin` of another dimension is a `ConfigurationError`.
        If given, a `.bin` of another dimension is a `ConfigurationError` (e.g. a model trained
        on 300-d vectors must not silently get 100-d ones).
    fingerprint : `int`, optional (default = `None`)
        The `FastTextBin.fingerprint` of the `.bin` the model was trained with: any other file is
        a `ConfigurationError` naming both. Training records it in config.json.
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
        # Parameters

        subword_ids : `torch.LongTensor`
            Shape `(batch_size, total_subwords)`: the `fasttext_subwords` indexer's ids, each
            sentence's tokens' ids one after the other, padded with anything.
        subword_counts : `torch.LongTensor`
            Shape `(batch_size, num_tokens)`: how many of the ids each token has.
        token_mask : `torch.BoolTensor`, optional
            Shape `(batch_size, num_tokens)`; unused (padding tokens have count 0 and get zeros).
        fasttext_fingerprint : `torch.LongTensor`, optional
            Shape `(batch_size, 1)`: the fingerprint of the indexer's `.bin`, checked against this
            embedder's on every batch that has one.

        # Returns

        `torch.Tensor` of shape `(batch_size, num_tokens, dim)`, float32; all zeros for tokens
        with no subwords.
        """
        if fasttext_fingerprint is not None:  # the (batch_size, 1) values synced once per batch
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
        """
        Raises a `ConfigurationError` naming both files unless every fingerprint in
        `fingerprints` (from the `fasttext_subwords` indexer) is this embedder's `.bin`'s.
        """
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
