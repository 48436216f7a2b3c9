"""
spaCy's `elmo_c` pipeline component, which gives every token its ELMo-C vector:

    nlp.add_pipe("elmo_c", config={"model": "my-elmo-c"})  # a model directory or model.tar.gz
    doc = nlp("The council met on Friday.")
    doc[1].vector           # the mean of the layers (or `layer`), also doc.tensor
    doc._.elmo_c_layers     # every layer: (layers, tokens, dim)

Settings: `model`, `layer` (default: the mean), `batch_size`, `device` (default: the GPU torch
sees). `nlp.to_disk` stores the model inside the pipeline. The factory is
`allennlp_elmo_c_spacy.make_elmo_c` (spaCy's entry point).
"""

import os
import shutil
from pathlib import Path
from typing import Iterable, Iterator, Optional, Union

import numpy
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import is_model_directory
from allennlp_elmo_c.modules.elmo_c import ElmoCEmbedder
from allennlp_elmo_c.common.atomic import link_or_copy
from allennlp_elmo_c.received.contained_files import copy_regular_tree
from allennlp_elmo_c_spacy import FACTORY, make_elmo_c  # noqa: F401  (registers the factory)

LAYERS_EXTENSION = "elmo_c_layers"
MODEL_SUBDIRECTORY = "model"

if not Doc.has_extension(LAYERS_EXTENSION):
    Doc.set_extension(LAYERS_EXTENSION, default=None)


class ElmoCComponent:
    """The `elmo_c` component; the model is read when the first document is processed, so that
    `from_disk` can point it at the pipeline's copy first."""

    def __init__(
        self,
        nlp: Language,
        name: str,
        model: str,
        layer: Optional[int] = None,
        batch_size: int = 32,
        device: Optional[str] = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"{name}: batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.model = str(model)
        self.layer = layer
        self.batch_size = batch_size
        self.device = device
        self._embedder: Optional[ElmoCEmbedder] = None

    @property
    def embedder(self) -> ElmoCEmbedder:
        """The `ElmoCEmbedder` of `model` (read on first use)."""
        if self._embedder is None:
            if not Path(self.model).exists():
                raise ConfigurationError(
                    f"{self.name}: the ELMo-C model {self.model} does not exist"
                )
            self._embedder = ElmoCEmbedder(self.model, cuda_device=self._cuda_device())
            layers = self._embedder.representations.num_layers
            if self.layer is not None and not -layers <= self.layer < layers:
                raise ConfigurationError(
                    f"{self.name}: layer {self.layer} does not exist; the model has {layers} "
                    f"(0 .. {layers - 1}, or -1 for the top one)"
                )
        return self._embedder

    def _cuda_device(self) -> int:
        device = self.device
        if device is None:
            return 0 if torch.cuda.is_available() else -1
        parsed = torch.device(device)
        if parsed.type == "cpu":
            return -1
        if parsed.type != "cuda":
            raise ConfigurationError(f"{self.name}: device must be cpu or cuda[:N], got {device!r}")
        if not torch.cuda.is_available():
            raise ConfigurationError(
                f"{self.name}: device {device!r} asked for, but torch sees no GPU"
            )
        return parsed.index or 0

    def __call__(self, doc: Doc) -> Doc:
        return next(iter(self.pipe([doc])))

    def pipe(self, docs: Iterable[Doc], batch_size: Optional[int] = None) -> Iterator[Doc]:
        for batch in minibatch(docs, size=batch_size or self.batch_size):
            arrays = self.embedder.embed_batch([[token.text for token in doc] for doc in batch])
            for doc, layers in zip(batch, arrays):  # layers: (num_layers, tokens, dim)
                self._set(doc, layers)
                yield doc

    def _set(self, doc: Doc, layers: numpy.ndarray) -> None:
        vectors = layers.mean(0) if self.layer is None else layers[self.layer]  # (tokens, dim)
        doc._.set(LAYERS_EXTENSION, layers)
        doc.tensor = numpy.ascontiguousarray(vectors, dtype=numpy.float32)
        doc.user_token_hooks["vector"] = _token_vector
        doc.user_token_hooks["has_vector"] = _has_vector
        doc.user_span_hooks["vector"] = _span_vector
        doc.user_hooks["vector"] = _doc_vector

    def to_disk(self, path: Union[str, Path], exclude: Iterable[str] = ()) -> None:
        target = Path(path) / MODEL_SUBDIRECTORY
        source = Path(self.model)
        if target.resolve() == source.resolve():
            return
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        Path(path).mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            if not is_model_directory(str(source)):
                raise ConfigurationError(f"{self.name}: {source} is not a model directory")
            copy_regular_tree(source, target)  # its own regular files only: a link is refused
        else:
            link_or_copy(source, target)

    def from_disk(self, path: Union[str, Path], exclude: Iterable[str] = ()) -> "ElmoCComponent":
        for place in (Path(path), Path(path) / MODEL_SUBDIRECTORY):
            if place.is_symlink():
                raise ConfigurationError(
                    f"{self.name}: {place} is a symbolic link (to {os.readlink(place)!r}); a saved "
                    "pipeline holds its model itself"
                )
        self.model = str(Path(path) / MODEL_SUBDIRECTORY)
        self._embedder = None
        return self


def _token_vector(token) -> numpy.ndarray:
    return token.doc.tensor[token.i]


def _has_vector(token) -> bool:
    return True


def _span_vector(span) -> numpy.ndarray:
    return span.doc.tensor[span.start : span.end].mean(0)


def _doc_vector(doc) -> numpy.ndarray:
    if not len(doc):
        return numpy.zeros(doc.tensor.shape[-1:], dtype=numpy.float32)
    return doc.tensor.mean(0)
