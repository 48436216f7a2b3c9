import logging
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import TokenIndexer

from allennlp_elmo_c.modules.elmo_c_representations import (
    ElmoCRepresentations,
    _archived_config,
    _archived_model_type,
)

logger = logging.getLogger(__name__)


def is_subword_archive(archive_file: str) -> bool:
    """
    True if `archive_file` is an `elmo_c` archive pretrained on BPE subwords (its reader has a
    `bpe` tokenizer): downstream it needs `SubwordElmoCRepresentations` and the
    `bpe_first_subword` indexer. Reads only the archive's `config.json`; False for anything
    unreadable (loading it then reports the problem).
    """
    try:
        config = _archived_config(archive_file)
    except ConfigurationError:
        return False
    tokenizer = config.get("dataset_reader", {}).get("tokenizer") or {}
    return tokenizer.get("type") == "bpe"


class SubwordElmoCRepresentations(ElmoCRepresentations):
    """
    `ElmoCRepresentations` for a biLM pretrained on BPE subwords (ELMo-Sub: an `embedding` input
    over a subword vocabulary and a softmax head): runs the biLM over each sentence's subwords
    (`<S>` ... `</S>` included, as in pretraining) and represents each word by the vectors of its
    FIRST subword, in every layer, before the layers are mixed. Inputs are the
    `bpe_first_subword` indexer's outputs (built with the same tokenizer and the archive's
    vocabulary; `word_indexer()` makes one). The output is word-level, exactly like
    `ElmoCRepresentations`'s: one vector per word, the boundaries being the `<S>` and `</S>`
    subwords' vectors.

    Everything but the input side (archive loading, freezing, the mixes, `forward`) is
    `ElmoCRepresentations`'s.

    # Parameters

    archive_file : `str`
        A `model.tar.gz` of an `elmo_c` model over BPE subwords.
    tokenizer_path : `str`, optional
        The BPE tokenizer JSON, if not at the path recorded in the archive.
    num_output_representations, requires_grad, do_layer_norm, dropout, keep_sentence_boundaries,
    scalar_mix_parameters :
        As for `ElmoCRepresentations` (`do_layer_norm` statistics are over the words).
    """

    def __init__(
        self,
        archive_file: str,
        num_output_representations: int = 1,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Optional[List[float]] = None,
        tokenizer_path: Optional[str] = None,
    ) -> None:
        self._tokenizer_path = tokenizer_path
        self._archive_file = archive_file
        super().__init__(
            archive_file,
            num_output_representations=num_output_representations,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            keep_sentence_boundaries=keep_sentence_boundaries,
            scalar_mix_parameters=scalar_mix_parameters,
        )

    def _load(self, archive_file: str, overrides: Dict[str, Optional[str]], moved: bool):
        # (Missing, unreadable or non-elmo_c archives are reported by the base class.)
        readable = Path(archive_file).is_file() and _archived_model_type(archive_file) == "elmo_c"
        if readable and not is_subword_archive(archive_file):
            raise ConfigurationError(
                f"{archive_file}: expected a biLM over BPE subwords (a `bpe` tokenizer); for a "
                "word-level biLM use ElmoCRepresentations"
            )
        if self._tokenizer_path is not None:
            overrides = {
                **overrides,
                "dataset_reader.tokenizer.tokenizer_path": self._tokenizer_path,
            }
        return super()._load(archive_file, overrides, moved)

    def _check_input(self, archive_file: str) -> None:
        pass  # the boundaries are the <S> / </S> subwords themselves

    def word_indexer(self) -> TokenIndexer:
        """A `bpe_first_subword` indexer with the biLM's tokenizer and vocabulary."""
        from allennlp_elmo_c.data.token_indexers.bpe_first_subword import BpeFirstSubwordIndexer

        start, end = self._boundary_tokens
        return BpeFirstSubwordIndexer(
            self._reader._tokenizer.tokenizer_path,
            self._archive_file,
            namespace=self._reader._token_indexers[self._input_key].namespace,
            start_token=start,
            end_token=end,
        )

    def layers(  # type: ignore[override]
        self,
        subword_ids: torch.LongTensor,
        subword_mask: torch.BoolTensor,
        first_subword: torch.LongTensor,
        mask: torch.BoolTensor,
    ) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """
        Every layer of the biLM at word level, `(batch, timesteps + 2, dim)` each: the `<S>`
        subword's vector, each word's first subword's vector, the `</S>` subword's vector after
        each sentence's last word (zeros after it); and the `(batch, timesteps + 2)` mask.

        # Parameters

        subword_ids, subword_mask : `torch.Tensor`
            `(batch, num_subwords)`: the `bpe_first_subword` indexer's subwords, with boundaries.
        first_subword, mask : `torch.Tensor`
            `(batch, timesteps)`: each word's first subword's index, and the word mask.
        """
        subword_mask, mask = subword_mask.bool(), mask.bool()
        embeddings = self._token_embedder(subword_ids)
        subword_layers = self._lm.encode(embeddings, subword_mask)
        batch, timesteps = first_subword.shape
        rows = torch.arange(batch, device=mask.device)
        num_words = mask.sum(1)
        positions = first_subword.new_zeros(batch, timesteps + 2)  # column 0: <S> at subword 0
        positions[:, 1:-1] = first_subword * mask
        positions[rows, num_words + 1] = subword_mask.sum(1) - 1  # </S>: the last subword
        full_mask = torch.arange(timesteps + 2, device=mask.device) < (num_words + 2).unsqueeze(1)
        index = positions.unsqueeze(-1).expand(-1, -1, subword_layers[0].size(-1))
        word_layers = [
            layer.gather(1, index) * full_mask.unsqueeze(-1).to(layer.dtype)
            for layer in subword_layers
        ]
        return word_layers, full_mask


def load_representations(
    archive_file: str,
    fasttext_path: Optional[str] = None,
    tokenizer_path: Optional[str] = None,
    **kwargs,
) -> ElmoCRepresentations:
    """
    `SubwordElmoCRepresentations` for an archive over BPE subwords, `ElmoCRepresentations`
    otherwise; `kwargs` are their common parameters. `fasttext_path` applies to the latter,
    `tokenizer_path` to the former.
    """
    if is_subword_archive(archive_file):
        if fasttext_path is not None:
            raise ConfigurationError(f"{archive_file} is a BPE subword biLM: it reads no fastText")
        return SubwordElmoCRepresentations(archive_file, tokenizer_path=tokenizer_path, **kwargs)
    if tokenizer_path is not None:
        raise ConfigurationError(f"{archive_file} is not a BPE subword biLM: no tokenizer_path")
    return ElmoCRepresentations(archive_file, fasttext_path=fasttext_path, **kwargs)
