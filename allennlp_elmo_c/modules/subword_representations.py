from typing import TYPE_CHECKING, List, Optional, Tuple

import torch

from allennlp.data import TokenIndexer
from allennlp.data.token_indexers import SingleIdTokenIndexer

from allennlp_elmo_c.data.token_indexers.bpe_first_subword import BpeFirstSubwordIndexer
from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
from allennlp_elmo_c.modules.elmo_c_representations import ElmoCRepresentations

if TYPE_CHECKING:
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM


class SubwordElmoCRepresentations(ElmoCRepresentations):
    """
    `ElmoCRepresentations` for a biLM over BPE subwords (ELMo-Sub): each word is represented, in
    every layer, by its first subword's vectors, the boundaries by the `<S>` and `</S>`
    subwords'. Inputs are the `bpe_first_subword` indexer's (`word_indexer()`); the parameters
    are `ElmoCRepresentations`'s (no `fasttext_path`).
    """

    reads_subwords = True

    def __init__(self, archive_file: Optional[str] = None, **kwargs) -> None:
        super().__init__(archive_file, **kwargs)
        start, end = self.bilm.boundary_tokens
        tokenizer: BpeTokenizer = self.bilm.tokenizer  # type: ignore[assignment]
        indexer: SingleIdTokenIndexer = self.bilm.token_indexer  # type: ignore[assignment]
        self._word_indexer = BpeFirstSubwordIndexer(
            tokenizer.tokenizer_path,
            self.vocab,
            namespace=indexer.namespace,
            start_token=start,
            end_token=end,
        )

    def word_indexer(self) -> TokenIndexer:
        """A `bpe_first_subword` indexer with the biLM's tokenizer and vocabulary."""
        return self._word_indexer

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
        self._check_weights()
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
    Reads `archive_file` once and returns `SubwordElmoCRepresentations` for a biLM over BPE
    subwords, `ElmoCRepresentations` otherwise; `kwargs` are their common parameters.
    `fasttext_path` applies to the latter, `tokenizer_path` to the former.
    """
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    bilm = PretrainedBiLM.from_archive(
        archive_file, fasttext_path=fasttext_path, tokenizer_path=tokenizer_path
    )
    return representations_of(bilm, **kwargs)


def representations_of(bilm: "PretrainedBiLM", **kwargs) -> ElmoCRepresentations:
    """`SubwordElmoCRepresentations` of a biLM over BPE subwords, `ElmoCRepresentations` of any
    other; `kwargs` are their common parameters."""
    if bilm.is_subword:
        return SubwordElmoCRepresentations(bilm=bilm, **kwargs)
    return ElmoCRepresentations(bilm=bilm, **kwargs)
