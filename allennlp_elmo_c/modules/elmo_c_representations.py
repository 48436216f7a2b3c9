import inspect
import json
import logging
import tarfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import TokenIndexer, Vocabulary
from allennlp.models.archival import load_archive
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.nn.util import get_text_field_mask, remove_sentence_boundaries

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


def _archived_config(archive_file: str) -> dict:
    """An archive's config.json, read without loading any weights: AllenNLP writes it first, so
    reading stops there (looking it up by name would decompress the whole archive)."""
    config = None
    try:
        with tarfile.open(archive_file) as archive:
            for member in archive:
                if member.name == "config.json":
                    config = json.load(archive.extractfile(member))  # type: ignore[arg-type]
                    break
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise ConfigurationError(
            f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
        ) from error
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no model in its config.json")
    return config


def _archived_model_type(archive_file: str) -> str:
    """The `model.type` in an archive's config.json."""
    return str(_archived_config(archive_file)["model"].get("type"))


FASTTEXT_KEYS = ("model_path", "output_embedding_fasttext")


def fasttext_overrides(config: dict, new_path: str, archive_file: str) -> Dict[str, str]:
    """
    Overrides that point every fastText path of an archived config (input and target
    embedders, indexers, a fastText-initialised output layer) at `new_path`.
    """
    found: Dict[str, str] = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{prefix}.{key}" if prefix else key
                if key in FASTTEXT_KEYS and isinstance(value, str):
                    found[path] = value
                else:
                    walk(value, path)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{prefix}.{index}")

    walk(config, "")
    if not found:
        raise ConfigurationError(f"{archive_file}: the biLM reads no fastText file (fasttext_path)")
    if len(set(found.values())) > 1:
        raise ConfigurationError(
            f"{archive_file} refers to several fastText files ({sorted(set(found.values()))}): "
            "fasttext_path cannot say which to replace"
        )
    return {path: new_path for path in found}


class ElmoCRepresentations(torch.nn.Module):
    """
    The counterpart of AllenNLP's `Elmo` for a trained `elmo_c` archive: runs the (frozen or
    fine-tuned) biLM on the tokens and returns `num_output_representations` softmax-weighted
    mixes (`ScalarMix`, with gamma) of its layers: layer 0 = the input projection of both
    directions, then every LSTM layer, forward || backward (1024-d for the paper's size).
    Sentence boundaries are added around each sentence as in pretraining and, as in `Elmo`,
    removed from the output unless `keep_sentence_boundaries`.

    Any word-level input embedder the biLM was pretrained with works (fastText, ELMo's char-CNN,
    a slim or plain embedding over the archive's vocabulary): index the words with the same
    indexer as in pretraining (`word_indexer()` gives it) and pass its outputs by keyword. The
    boundary vectors come from the embedder's `embed_strings`. A biLM over BPE subwords needs
    `SubwordElmoCRepresentations`, which overrides the input hooks (`_check_input`, `layers`).

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
        overrides: Dict[str, Optional[str]] = {}
        if fasttext_path is not None and Path(archive_file).is_file():
            config = _archived_config(archive_file)
            overrides.update(fasttext_overrides(config, fasttext_path, archive_file))
        self._lm = self._load(archive_file, overrides, fasttext_path is not None)
        self._lm.delete_softmax()
        contextualizer = self._lm._contextualizer
        if not hasattr(contextualizer, "return_all_layers"):
            raise ConfigurationError(
                f"{archive_file}: its contextualizer cannot return all layers (use elmo_lstm)"
            )
        contextualizer.return_all_layers = True
        token_embedders = dict(self._lm._text_field_embedder._token_embedders)
        if len(token_embedders) != 1:
            raise ConfigurationError(
                f"{archive_file}: expected a biLM over one input token embedder, found "
                f"{sorted(token_embedders)}"
            )
        ((self._input_key, self._token_embedder),) = token_embedders.items()
        self._check_input(archive_file)
        for parameter in self._lm.parameters():
            parameter.requires_grad_(requires_grad)
        self._requires_grad = requires_grad
        self._lm.train(False)
        self._keep_sentence_boundaries = keep_sentence_boundaries
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

    def _check_input(self, archive_file: str) -> None:
        """Checks the archived input embedder can be used here and prepares what it needs."""
        if not hasattr(self._token_embedder, "embed_strings"):
            raise ConfigurationError(
                f"{archive_file}: its input embedder ({type(self._token_embedder).__name__}) "
                "has no embed_strings method, so the sentence boundary vectors cannot be made"
            )
        with torch.no_grad():
            self._boundaries = self._token_embedder.embed_strings(self._boundary_tokens)
        signature = inspect.signature(self._token_embedder.forward).parameters
        self._takes_any_input = any(p.kind == p.VAR_KEYWORD for p in signature.values())
        self._embedder_inputs = set(signature)

    def train(self, mode: bool = True) -> "ElmoCRepresentations":
        # A frozen biLM always runs in inference mode (no recurrent dropout), as AllenNLP's ELMo:
        # the same batch gives the same representations. Fine-tuning (requires_grad) trains it.
        super().train(mode)
        if not self._requires_grad:
            self._lm.train(False)
        return self

    def _load(self, archive_file: str, overrides: Dict[str, Optional[str]], moved: bool):
        # Imported here: the model module imports the modules package, which imports this one.
        from allennlp_elmo_c.models.elmo_c import ElmoC

        if not Path(archive_file).is_file():
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        model_type = _archived_model_type(archive_file)
        if model_type != "elmo_c":
            raise ConfigurationError(
                f"{archive_file} holds a {model_type} model, not an elmo_c model"
            )
        # The validation-only candidate word list is not needed downstream (and may not exist
        # where the archive is used).
        overrides = {"model.nearest_neighbour_words": None, **overrides}
        try:
            archive = load_archive(archive_file, overrides=overrides)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise ConfigurationError(
                f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
            ) from error
        except ConfigurationError as error:
            if not moved and "fastText model" in str(error):
                raise ConfigurationError(
                    f"{error}. The archive {archive_file} refers to that fastText file; pass "
                    "fasttext_path to use a copy elsewhere."
                ) from error
            raise
        if not isinstance(archive.model, ElmoC):
            raise ConfigurationError(
                f"{archive_file} holds a {type(archive.model).__name__}, not an elmo_c model"
            )
        self._reader = archive.dataset_reader
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

    @property
    def vocab(self) -> Vocabulary:
        """The biLM's vocabulary (what `word_indexer()` indexes with, if it uses one)."""
        return self._lm.vocab

    def word_indexer(self) -> TokenIndexer:
        """The token indexer the biLM's input embedder reads (the pretraining reader's), to
        index words for `forward` / `layers`."""
        return self._reader._token_indexers[self._input_key]

    def forward(self, **inputs: torch.Tensor) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        # Parameters

        **inputs : `torch.Tensor`
            The outputs of `word_indexer()` for `(batch, timesteps)` words, by keyword (e.g.
            `subword_ids`, `subword_counts`, `token_mask` of `fasttext_subwords`).

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
        """Number of layers `layers()` returns (input projection + LSTM layers)."""
        return self._lm.num_layers()

    @property
    def fasttext_path(self) -> str:
        """The fastText `.bin` the biLM reads, if its input is fastText."""
        if not hasattr(self._token_embedder, "_fasttext"):
            raise ConfigurationError(
                f"this biLM reads {type(self._token_embedder).__name__} input, not fastText: "
                "index words with its word_indexer()"
            )
        return str(self._token_embedder._fasttext.path)

    def layers(self, **inputs: torch.Tensor) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """
        Every layer of the biLM, `(batch, timesteps + 2, dim)` each, with the boundary positions
        (`<S>` first, `</S>` after each sentence's last token), and their mask.
        """
        mask = self.word_mask(inputs)
        arguments = {
            key: value
            for key, value in inputs.items()
            if self._takes_any_input or key in self._embedder_inputs
        }
        embeddings = self._token_embedder(**arguments)
        if self._requires_grad and any(p.requires_grad for p in self._token_embedder.parameters()):
            # A fine-tuned input embedder moves the boundary vectors too.
            boundaries = self._token_embedder.embed_strings(
                self._boundary_tokens, embeddings.device
            )
        else:
            boundaries = self._boundaries
        boundaries = boundaries.to(device=embeddings.device, dtype=embeddings.dtype)
        embeddings, full_mask = add_boundary_vectors(embeddings, mask, boundaries[0], boundaries[1])
        return self._lm.encode(embeddings, full_mask), full_mask
