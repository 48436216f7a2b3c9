import json
import logging
import tarfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.nn.util import remove_sentence_boundaries

logger = logging.getLogger(__name__)


def add_boundary_vectors(
    embeddings: torch.Tensor, mask: torch.BoolTensor, start: torch.Tensor, end: torch.Tensor
):
    """
    Puts `start` before and `end` after each (left-aligned) sequence of `embeddings`
    `(batch, timesteps, dim)`; returns the `(batch, timesteps + 2, dim)` result and its mask.
    """
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


def _archived_model_type(archive_file: str) -> str:
    """The `model.type` in an archive's config.json, read without loading any weights."""
    try:
        with tarfile.open(archive_file) as archive:
            member = archive.extractfile("config.json")
            config = json.load(member) if member is not None else None
    except (tarfile.TarError, EOFError, OSError, KeyError, ValueError) as error:
        raise ConfigurationError(
            f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
        ) from error
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no model in its config.json")
    return str(config["model"].get("type"))


class ElmoCRepresentations(torch.nn.Module):
    """
    The counterpart of AllenNLP's `Elmo` for a trained ELMo-C archive: runs the (frozen or
    fine-tuned) biLM on fastText-indexed tokens and returns `num_output_representations`
    softmax-weighted mixes (`ScalarMix`, with gamma) of its layers: layer 0 = the input
    projection of both directions, then every LSTM layer, forward || backward (1024-d for the
    paper's size). Sentence boundaries are added around each sentence as in pretraining and, as
    in `Elmo`, removed from the output unless `keep_sentence_boundaries`.

    # Parameters

    archive_file : `str`
        A `model.tar.gz` of an `elmo_c` model.
    num_output_representations : `int`, optional (default = `1`)
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM (then its dropout is active in training mode). A frozen biLM always
        runs in inference mode. The fastText matrix stays frozen either way.
    do_layer_norm : `bool`, optional (default = `False`)
        Passed to `ScalarMix`.
    dropout : `float`, optional (default = `0.5`)
        Applied to each mix.
    keep_sentence_boundaries : `bool`, optional (default = `False`)
    scalar_mix_parameters : `List[float]`, optional
        Fixed (not trained) pre-softmax layer weights, e.g. `[-9e10, 1, -9e10]` for layer 1 only.
    fasttext_path : `str`, optional
        Use this fastText `.bin` instead of the path recorded in the archive (e.g. when the archive
        was trained on another machine). Its dimension must match the biLM's.
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
        fasttext_path: Optional[str] = None,
    ) -> None:
        super().__init__()
        self._lm = self._load(archive_file, fasttext_path)
        self._lm.delete_softmax()
        contextualizer = self._lm._contextualizer
        if not hasattr(contextualizer, "return_all_layers"):
            raise ConfigurationError(
                f"{archive_file}: its contextualizer cannot return all layers (use elmo_lstm)"
            )
        contextualizer.return_all_layers = True
        token_embedders = list(self._lm._text_field_embedder._token_embedders.values())
        if len(token_embedders) != 1 or not hasattr(token_embedders[0], "embed_strings"):
            raise ConfigurationError(f"{archive_file}: expected a biLM over one fasttext embedder")
        self._token_embedder = token_embedders[0]
        for parameter in self._lm.parameters():
            parameter.requires_grad_(requires_grad)
        self._requires_grad = requires_grad
        self._lm.train(False)
        self._keep_sentence_boundaries = keep_sentence_boundaries
        self._boundaries = self._token_embedder.embed_strings(self._boundary_tokens)
        num_layers = self._lm.num_layers()
        if scalar_mix_parameters is not None and len(scalar_mix_parameters) != num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(scalar_mix_parameters)} weights, the biLM has "
                f"{num_layers} layers"
            )
        self._scalar_mixes = torch.nn.ModuleList(
            ScalarMix(
                num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self._dropout = torch.nn.Dropout(dropout)

    def train(self, mode: bool = True) -> "ElmoCRepresentations":
        # A frozen biLM always runs in inference mode (no recurrent dropout), as AllenNLP's ELMo:
        # the same batch gives the same representations. Fine-tuning (requires_grad) trains it.
        super().train(mode)
        if not self._requires_grad:
            self._lm.train(False)
        return self

    def _load(self, archive_file: str, fasttext_path: Optional[str]):
        # Imported here: the model module imports the modules package, which imports this one.
        from allennlp_elmo_c.models.elmo_c import ElmoC

        if not Path(archive_file).is_file():
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        # The validation-only candidate word list is not needed downstream (and may not exist
        # where the archive is used).
        model_type = _archived_model_type(archive_file)
        if model_type != "elmo_c":
            raise ConfigurationError(
                f"{archive_file} holds a {model_type} model, not an elmo_c model"
            )
        overrides: Dict[str, Optional[str]] = {"model.nearest_neighbour_words": None}
        if fasttext_path is not None:
            overrides["model.text_field_embedder.token_embedders.tokens.model_path"] = fasttext_path
            overrides["dataset_reader.token_indexers.tokens.model_path"] = fasttext_path
        try:
            archive = load_archive(archive_file, overrides=overrides)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise ConfigurationError(
                f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
            ) from error
        except ConfigurationError as error:
            if fasttext_path is None and "fastText model" in str(error):
                raise ConfigurationError(
                    f"{error}. The archive {archive_file} refers to that fastText file; pass "
                    "fasttext_path to use a copy elsewhere."
                ) from error
            raise
        if not isinstance(archive.model, ElmoC):
            raise ConfigurationError(
                f"{archive_file} holds a {type(archive.model).__name__}, not an elmo_c model"
            )
        reader = archive.config.get("dataset_reader").as_dict(quiet=True)
        self._boundary_tokens = [
            *reader.get("start_tokens", ["<S>"]),
            *reader.get("end_tokens", ["</S>"]),
        ]
        if len(self._boundary_tokens) != 2:
            raise ConfigurationError(f"{archive_file}: expected one start and one end token")
        return archive.model

    def get_output_dim(self) -> int:
        return self._lm._contextualizer.get_output_dim()

    def forward(
        self,
        subword_ids: torch.LongTensor,
        subword_counts: torch.LongTensor,
        token_mask: torch.BoolTensor,
    ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        # Parameters

        subword_ids, subword_counts, token_mask : `torch.Tensor`
            The `fasttext_subwords` indexer's output, `(batch, timesteps, max_subwords)`,
            `(batch, timesteps)` and `(batch, timesteps)`.

        # Returns

        `{"elmo_representations": [(batch, timesteps, dim)] * num_output_representations,
        "mask": (batch, timesteps)}` (timesteps + 2 with `keep_sentence_boundaries`).
        """
        layers, full_mask = self.layers(subword_ids, subword_counts, token_mask)
        representations = []
        for scalar_mix in self._scalar_mixes:
            mixed = scalar_mix(layers, full_mask)
            if not self._keep_sentence_boundaries:
                mixed, _ = remove_sentence_boundaries(mixed, full_mask)
            representations.append(self._dropout(mixed))
        return {
            "elmo_representations": representations,
            "mask": full_mask if self._keep_sentence_boundaries else token_mask.bool(),
        }

    @property
    def num_layers(self) -> int:
        """Number of layers `layers()` returns (input projection + LSTM layers)."""
        return self._lm.num_layers()

    @property
    def fasttext_path(self) -> str:
        """The fastText `.bin` the biLM reads (index tokens with it)."""
        return str(self._token_embedder._fasttext.path)

    def layers(
        self,
        subword_ids: torch.LongTensor,
        subword_counts: torch.LongTensor,
        token_mask: torch.BoolTensor,
    ) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """
        Every layer of the biLM, `(batch, timesteps + 2, dim)` each, with the boundary positions
        (`<S>` first, `</S>` after each sentence's last token), and their mask.
        """
        mask = token_mask.bool()
        embeddings = self._token_embedder(subword_ids, subword_counts)
        boundaries = self._boundaries.to(embeddings.device)
        embeddings, full_mask = add_boundary_vectors(embeddings, mask, boundaries[0], boundaries[1])
        return self._lm.encode(embeddings, full_mask), full_mask
