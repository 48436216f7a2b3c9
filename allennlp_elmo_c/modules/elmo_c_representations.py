import logging
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, TokenIndexer, Vocabulary
from allennlp.data.fields import TextField
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.nn.util import get_text_field_mask, remove_sentence_boundaries

from allennlp_elmo_c.common.text import check_sentences
from allennlp_elmo_c.modules.token_embedders.string_embedder import StringEmbedder

if TYPE_CHECKING:
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

logger = logging.getLogger(__name__)


def add_boundary_vectors(
    embeddings: torch.Tensor, mask: torch.BoolTensor, start: torch.Tensor, end: torch.Tensor
):
    """`start` before and `end` after each sequence of `embeddings` `(batch, timesteps, dim)`:
    the `(batch, timesteps + 2, dim)` result and its mask."""
    batch, timesteps, dim = embeddings.shape
    lengths = mask.sum(1)
    result = embeddings.new_zeros(batch, timesteps + 2, dim)
    result[:, 1:-1] = embeddings * mask.unsqueeze(-1)
    result[:, 0] = start
    result[torch.arange(batch, device=embeddings.device), lengths + 1] = end
    new_mask = torch.arange(timesteps + 2, device=mask.device).unsqueeze(0) < (
        lengths + 2
    ).unsqueeze(1)
    return result, new_mask


def index_sentences(
    sentences: List[List[str]], indexer: TokenIndexer, vocab: Optional[Vocabulary] = None
) -> Dict[str, torch.Tensor]:
    """Tokenized sentences indexed by `indexer` over `vocab` and padded: the tensors
    `(batch, timesteps, ...)` by output name that `ElmoCRepresentations` takes by keyword."""
    check_sentences(sentences, logger)
    if not sentences:
        raise ConfigurationError("no sentences to index (an empty batch)")
    fields = [
        TextField([Token(word) for word in sentence], {"words": indexer}) for sentence in sentences
    ]
    batch = Batch([Instance({"words": field}) for field in fields])
    batch.index_instances(vocab if vocab is not None else Vocabulary())
    return batch.as_tensor_dict()["words"]["words"]


class ElmoCRepresentations(torch.nn.Module):
    """
    AllenNLP's `Elmo` for a trained word-level `elmo_c` biLM: `num_output_representations`
    `ScalarMix`es of its layers (the input projection, then each LSTM layer, forward ||
    backward), with the pretraining reader's sentence boundaries added around each sentence and,
    unless `keep_sentence_boundaries`, removed from the output. Inputs are the outputs of
    `word_indexer()`, by keyword.

    # Parameters

    archive_file : `str`, optional
        The biLM's archive or model directory (or give `bilm`).
    num_output_representations : `int`, optional (default = `1`)
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM; a frozen one always runs in inference mode.
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
    keep_sentence_boundaries : `bool`, optional (default = `False`)
    scalar_mix_parameters : `List[float]`, optional
        Fixed pre-softmax layer weights.
    fasttext_path, tokenizer_path : `str`, optional
        As for `PretrainedBiLM.from_archive`, with `archive_file`.
    bilm : `PretrainedBiLM`, optional
        The biLM already read; its output heads are dropped.
    """

    reads_subwords = False

    def __init__(
        self,
        archive_file: Optional[str] = None,
        num_output_representations: int = 1,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Optional[List[float]] = None,
        fasttext_path: Optional[str] = None,
        bilm: Optional["PretrainedBiLM"] = None,
        tokenizer_path: Optional[str] = None,
    ) -> None:
        super().__init__()
        if (archive_file is None) == (bilm is None):
            raise ConfigurationError("ElmoCRepresentations: give archive_file or bilm (not both)")
        if bilm is None:
            from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

            bilm = PretrainedBiLM.from_archive(str(archive_file), fasttext_path, tokenizer_path)
        elif fasttext_path is not None or tokenizer_path is not None:
            raise ConfigurationError("fasttext_path and tokenizer_path go with archive_file")
        if bilm.is_subword != self.reads_subwords:
            raise ConfigurationError(
                f"{bilm.archive_file}: expected a biLM over BPE subwords (a `bpe` tokenizer); for "
                "a word-level biLM use ElmoCRepresentations"
                if self.reads_subwords
                else f"{bilm.archive_file} is a biLM over BPE subwords: use "
                "SubwordElmoCRepresentations"
            )
        self._bilm = bilm
        bilm.model.delete_softmax()
        self._lm = bilm.model
        self._token_embedder = bilm.token_embedder
        for parameter in self._lm.parameters():
            parameter.requires_grad_(requires_grad)
        self._requires_grad = requires_grad
        self._lm.train(False)
        self._keep_sentence_boundaries = keep_sentence_boundaries
        if scalar_mix_parameters is not None and len(scalar_mix_parameters) != bilm.num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(scalar_mix_parameters)} weights, the biLM has "
                f"{bilm.num_layers} layers"
            )
        self._scalar_mixes = torch.nn.ModuleList(
            ScalarMix(
                bilm.num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self._dropout = torch.nn.Dropout(dropout)
        # The <S> / </S> vectors `(2, dim)` of a frozen input embedder, made at first use.
        self._boundaries: Optional[torch.Tensor] = None
        if not self.reads_subwords:
            self._string_embedder()  # an input embedder without embed_strings fails here
        self.register_load_state_dict_post_hook(_refresh_after_loading)

    def _string_embedder(self) -> StringEmbedder:
        if not isinstance(self._token_embedder, StringEmbedder):
            raise ConfigurationError(
                f"{self._bilm.archive_file}: its input embedder "
                f"({type(self._token_embedder).__name__}) has no embed_strings method, so the "
                "sentence boundary vectors cannot be made"
            )
        return self._token_embedder

    def _boundary_vectors(self, device: Optional[torch.device] = None) -> torch.Tensor:
        """The input embedder's vectors of the pretraining reader's boundary tokens, `(2, dim)`."""
        return self._string_embedder().embed_strings(list(self._bilm.boundary_tokens), device)

    def refresh_boundary_vectors(self) -> None:
        """Remakes the `<S>` / `</S>` vectors from the input embedder's weights (done after
        every `load_state_dict`; call it after changing a trainable input embedder's)."""
        if self.reads_subwords or not self._bilm.has_weights:
            self._boundaries = None
            return
        with torch.no_grad():
            self._boundaries = self._boundary_vectors()

    def _check_weights(self) -> None:
        if not self._bilm.has_weights:
            raise ConfigurationError(
                f"{self._bilm.archive_file} is missing and its biLM was built from a task "
                "model's record without weights (PretrainedBiLM.from_record); load that task "
                "model's state dict (load_archive) first, or give the biLM archive"
            )

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args, **kwargs) -> None:
        # A biLM without weights gets storage (on this module's device) just before its
        # children copy them in: copying into a meta tensor does nothing.
        keys = [key for key in state_dict if key.startswith(prefix + "_lm.")]
        assigned = local_metadata.get("assign_to_params_buffers")
        if keys and not self._bilm.has_weights and not assigned:
            placed = [tensor for tensor in self.parameters() if not tensor.is_meta]
            self._bilm.allocate_weights(placed[0].device if placed else state_dict[keys[0]].device)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args, **kwargs)

    def _apply(self, fn, recurse=True):
        # Moves skip the meta tensors of a biLM without weights (`_load_from_state_dict` places
        # them); dtype conversions apply.
        def applied(tensor: torch.Tensor) -> torch.Tensor:
            if not tensor.is_meta:
                return fn(tensor)
            return tensor.to(dtype=fn(torch.empty(0, dtype=tensor.dtype)).dtype)

        return super()._apply(applied, recurse)

    @property
    def bilm(self) -> "PretrainedBiLM":
        return self._bilm

    def train(self, mode: bool = True) -> "ElmoCRepresentations":
        # A frozen biLM always runs in inference mode, as AllenNLP's ELMo.
        super().train(mode)
        if not self._requires_grad:
            self._lm.train(False)
        return self

    def get_output_dim(self) -> int:
        return self._bilm.get_output_dim()

    @property
    def vocab(self) -> Vocabulary:
        return self._bilm.vocab

    def word_indexer(self) -> TokenIndexer:
        """The pretraining reader's indexer of the biLM's input, for `forward` / `layers`."""
        return self._bilm.token_indexer

    def forward(self, **inputs: torch.Tensor) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        # Parameters

        **inputs : `torch.Tensor`
            The outputs of `word_indexer()` for `(batch, timesteps)` words.

        # Returns

        `{"elmo_representations": [(batch, timesteps, dim)] * num_output_representations,
        "mask": (batch, timesteps)}` (timesteps + 2 with `keep_sentence_boundaries`).
        """
        layers, full_mask = self.layers(**inputs)
        representations = []
        for scalar_mix in self._scalar_mixes:
            mixed = scalar_mix(layers, full_mask)
            if not self._keep_sentence_boundaries:
                mixed, _ = remove_sentence_boundaries(mixed, full_mask)
            representations.append(self._dropout(mixed))
        return {
            "elmo_representations": representations,
            "mask": full_mask if self._keep_sentence_boundaries else self.word_mask(inputs),
        }

    @staticmethod
    def word_mask(inputs: Dict[str, torch.Tensor]) -> torch.BoolTensor:
        """The `(batch, timesteps)` mask of the words in an indexer's output."""
        for key in ("token_mask", "mask"):
            if key in inputs:
                return inputs[key].bool()
        return get_text_field_mask({"words": inputs})

    @property
    def num_layers(self) -> int:
        return self._bilm.num_layers

    @property
    def fasttext_path(self) -> str:
        """The fastText `.bin` the biLM reads, if its input is fastText."""
        path = self._bilm.fasttext_path
        if path is None:
            raise ConfigurationError(
                f"this biLM reads {type(self._token_embedder).__name__} input, not fastText: "
                "index words with its word_indexer()"
            )
        return path

    def layers(self, **inputs: torch.Tensor) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """
        Every layer of the biLM, `(batch, timesteps + 2, dim)` each, with the boundary positions
        (`<S>` first, `</S>` after each sentence's last token), and their mask.
        """
        self._check_weights()
        mask = self.word_mask(inputs)  # (batch, timesteps)
        # Embedded as in pretraining: by the biLM's own text field embedder.
        embeddings = self._lm.text_field_embedder({self._bilm.input_key: inputs})
        if self._requires_grad and any(p.requires_grad for p in self._token_embedder.parameters()):
            boundaries = self._boundary_vectors(embeddings.device)  # fine-tuned: they move
        else:
            if self._boundaries is None:
                self.refresh_boundary_vectors()
            boundaries = self._boundaries
        boundaries = boundaries.to(device=embeddings.device, dtype=embeddings.dtype)  # (2, dim)
        # (batch, timesteps + 2, dim)
        embeddings, full_mask = add_boundary_vectors(embeddings, mask, boundaries[0], boundaries[1])
        return self._lm.encode(embeddings, full_mask), full_mask


def _refresh_after_loading(module: ElmoCRepresentations, incompatible_keys) -> None:
    module.refresh_boundary_vectors()
