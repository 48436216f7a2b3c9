"""
Flair's front door: `ElmoCEmbeddings`, a `TokenEmbeddings` over a trained ELMo-C biLM (a model
directory or `model.tar.gz`), to stack in Flair's `StackedEmbeddings` and `SequenceTagger`. A
saved tagger records the biLM's path and weights' fingerprint, not the biLM. Import this module
before `SequenceTagger.load`, so that Flair finds the class.
"""

import hashlib
import logging.config
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.modules.scalar_mix import ScalarMix

from allennlp_elmo_c.modules.elmo_c import ElmoCEmbedder


def _import_flair() -> None:
    """Imports Flair, whose `logging.config.dictConfig` would close every logging handler (an
    AllenNLP run's `out.log` among them)."""
    clear = logging.config._clearExistingHandlers  # type: ignore[attr-defined]
    logging.config._clearExistingHandlers = lambda: None  # type: ignore[attr-defined]
    try:
        import flair  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"allennlp_elmo_c.integrations.flair needs Flair ({error}): install it with `make "
            "install` (flair==0.15.1, pinned in constraints.txt)"
        ) from error
    finally:
        logging.config._clearExistingHandlers = clear  # type: ignore[attr-defined]


_import_flair()

import flair
from flair.data import Sentence
from flair.embeddings import TokenEmbeddings
from flair.embeddings.base import register_embeddings

EMBEDDING_MODES = ("all", "top", "average", "mix")


@register_embeddings
class ElmoCEmbeddings(TokenEmbeddings):
    """
    Every token's ELMo-C vector, as a Flair token embedding.

    # Parameters

    model : `str`
        The trained biLM: its model directory or `model.tar.gz` (kept as an absolute path).
    embedding_mode : `str`, optional (default = `"all"`)
        `"all"` (every layer, concatenated), `"top"`, `"average"` or `"mix"` (a `ScalarMix`).
    fine_tune : `bool`, optional (default = `False`)
        With `"mix"`: the tagger trains the mix (the biLM stays frozen).
    batch_size : `int`, optional (default = `32`)
        Sentences per forward pass of the biLM.
    name : `str`, optional
        The embedding's name in Flair; by default `elmo-c-MODE-` and the model's file name.
    fingerprint : `str`, optional
        The fingerprint the biLM's weights must have (what `to_params` records).
    """

    def __init__(
        self,
        model: str,
        embedding_mode: str = "all",
        fine_tune: bool = False,
        batch_size: int = 32,
        name: Optional[str] = None,
        fingerprint: Optional[str] = None,
    ) -> None:
        if embedding_mode not in EMBEDDING_MODES:
            raise ConfigurationError(
                f"ElmoCEmbeddings: embedding_mode must be one of {EMBEDDING_MODES}, got "
                f"{embedding_mode!r}"
            )
        if fine_tune and embedding_mode != "mix":
            raise ConfigurationError(
                f"ElmoCEmbeddings: fine_tune trains the scalar mix, which embedding_mode "
                f"{embedding_mode!r} has not; use embedding_mode='mix' (the biLM stays frozen)"
            )
        if batch_size < 1:
            raise ConfigurationError(f"ElmoCEmbeddings: batch_size must be >= 1, got {batch_size}")
        self.model = os.path.abspath(model)  # a saved tagger finds it from any directory
        self.embedding_mode = embedding_mode
        self.fine_tune = fine_tune
        self.batch_size = batch_size
        self.name = name or f"elmo-c-{embedding_mode}-{Path(self.model).name}"
        self.static_embeddings = not fine_tune
        super().__init__()
        representations = self._load(fingerprint).representations
        self._num_layers = representations.num_layers
        self._dim = representations.get_output_dim()
        if embedding_mode == "mix":
            self.scalar_mix = ScalarMix(self._num_layers, trainable=fine_tune)
        self.to(flair.device)

    def _load(self, fingerprint: Optional[str]) -> ElmoCEmbedder:
        """Reads the biLM on `flair.device`, outside the module's parameters, refusing one whose
        weights' fingerprint is not `fingerprint`."""
        if not Path(self.model).exists():
            raise ConfigurationError(
                f"ElmoCEmbeddings: the ELMo-C biLM {self.model} does not exist (a saved tagger "
                "reads it from the path it was trained with): put the model directory or archive "
                "back there"
            )
        device = flair.device
        cuda_device = (device.index or 0) if device.type == "cuda" else -1
        embedder = ElmoCEmbedder(self.model, cuda_device=cuda_device)
        found = weights_fingerprint(embedder)
        if fingerprint is not None and found != fingerprint:
            raise ConfigurationError(
                f"ElmoCEmbeddings: {self.model} is not the biLM this embedding was built with (its "
                f"weights' fingerprint is {found}, the recorded one {fingerprint}); put that biLM "
                "back at this path"
            )
        self.__dict__["_embedder"] = embedder
        self.fingerprint = found
        return embedder

    @property
    def embedder(self) -> ElmoCEmbedder:
        """The `ElmoCEmbedder` of `model`."""
        return self.__dict__["_embedder"]

    @property
    def embedding_length(self) -> int:
        return self._dim * (self._num_layers if self.embedding_mode == "all" else 1)

    def _everything_embedded(self, data_points) -> bool:
        # A trained mix changes with every step: its vectors are never taken from the tokens.
        return not self.fine_tune and super()._everything_embedded(data_points)

    def _add_embeddings_internal(self, sentences: List[Sentence]) -> List[Sentence]:
        words = [[token.text for token in sentence] for sentence in sentences]
        batches = self.embedder.embed_sentences(words, self.batch_size)
        for sentence, layers in zip(sentences, batches):
            vectors = self.vectors(torch.from_numpy(layers).to(flair.device))
            for token, vector in zip(sentence, vectors):
                token.set_embedding(self.name, vector)
        return sentences

    def vectors(self, layers: torch.Tensor) -> torch.Tensor:
        """One sentence's `(tokens, embedding_length)` vectors from its `(layers, tokens, dim)`."""
        if self.embedding_mode == "all":
            return layers.permute(1, 0, 2).reshape(layers.size(1), -1)
        if self.embedding_mode == "top":
            return layers[-1]
        if self.embedding_mode == "average":
            return layers.mean(0)
        return self.scalar_mix(list(layers))

    def __str__(self) -> str:
        return f"ElmoCEmbeddings({self.model!r}, embedding_mode={self.embedding_mode!r})"

    def to_params(self) -> Dict[str, Any]:
        names = ("model", "embedding_mode", "fine_tune", "batch_size", "name", "fingerprint")
        return {name: getattr(self, name) for name in names}

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "ElmoCEmbeddings":
        return cls(**params)

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_embedder", None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        self._load(self.fingerprint)


def weights_fingerprint(embedder: ElmoCEmbedder) -> str:
    """SHA-256 of the biLM's tensors (names, dtypes, shapes, values), as a directory or archive."""
    digest = hashlib.sha256()
    for key, tensor in sorted(embedder.representations.state_dict().items()):
        data = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{key} {data.dtype} {tuple(tensor.shape)}\n".encode())
        digest.update(data.view(torch.uint8).numpy())
    return digest.hexdigest()
