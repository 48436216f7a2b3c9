"""
The Python front doors to a trained biLM, shaped like AllenNLP's ELMo: `ElmoC` (`Elmo`),
`batch_to_ids`, `ElmoCEmbedder` (0.9's `ElmoEmbedder`) and `PretrainedBiLM` (`Elmo`'s `module=`).
"""

import json
import logging
import os
from itertools import chain
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import h5py
import numpy
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.data import Batch, DatasetReader, Instance, Token, TokenIndexer, Vocabulary
from allennlp.data.fields import TextField
from allennlp.models import Model
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.nn.util import get_text_field_mask, remove_sentence_boundaries

from allennlp_elmo_c.archive import bilm_archive, bilm_record, record_params
from allennlp_elmo_c.common.text import check_sentences, decode_line
from allennlp_elmo_c.data.token_indexers.bpe_first_subword import BpeFirstSubwordIndexer
from allennlp_elmo_c.data.tokenizers.bpe import BpeTokenizer
from allennlp_elmo_c.modules.token_embedders.string_embedder import StringEmbedder

if TYPE_CHECKING:  # a layer above this one
    from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel

logger = logging.getLogger(__name__)

OUTPUT_MODES = ("all", "top", "average")


class PretrainedBiLM:
    """
    A trained `elmo_c` biLM (`model`, whose contextualizer returns all layers) with its one
    input token embedder and its pretraining reader's (`lm_corpus`) indexer, tokenizer and
    boundary tokens. `archive_file` names it in messages; `config` is what `record` keeps.
    """

    def __init__(
        self,
        model: "ElmoCLanguageModel",
        reader: DatasetReader,
        archive_file: Optional[str] = None,
        config: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.archive_file = archive_file or "the biLM"
        self.config = config
        input_embedders = model.input_token_embedders
        if len(input_embedders) != 1:
            raise ConfigurationError(
                f"{self.archive_file}: expected a biLM over one input token embedder, found "
                f"{sorted(input_embedders)}"
            )
        ((self.input_key, self.token_embedder),) = input_embedders.items()
        indexers = reader.token_indexers  # type: ignore[attr-defined]
        if self.input_key not in indexers:
            raise ConfigurationError(
                f"{self.archive_file}: no token indexer for the input embedder's key "
                f"{self.input_key!r} (the reader has {sorted(indexers)})"
            )
        boundary_tokens = reader.boundary_tokens  # type: ignore[attr-defined]
        if len(boundary_tokens) != 2:
            raise ConfigurationError(f"{archive_file}: expected one start and one end token")
        self.model = model
        self.token_indexer: TokenIndexer = indexers[self.input_key]
        self.tokenizer = reader.tokenizer  # type: ignore[attr-defined]
        self.boundary_tokens: Tuple[str, str] = (boundary_tokens[0], boundary_tokens[1])
        self.is_subword = isinstance(self.tokenizer, BpeTokenizer)

    @classmethod
    def from_archive(
        cls,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """
        The biLM of a `model.tar.gz` or model directory. `fasttext_path`: its fastText `.bin`,
        if not where `fasttext_source` finds it (another `.bin` than it was trained with is
        refused); `tokenizer_path`: a BPE biLM's tokenizer JSON, if not at the recorded path.
        """
        with bilm_archive(str(archive_file), fasttext_path, tokenizer_path) as (archive, config):
            return cls(archive.model, archive.dataset_reader, str(archive_file), config)

    def record(self) -> str:
        """Its config and vocabulary (not its weights) as one JSON line for `from_record`: a task
        model keeps it, so its archive loads without the biLM's."""
        if self.config is None:
            raise ConfigurationError(
                f"{self.archive_file}: no config to record (not read from an archive)"
            )
        return bilm_record(self.config, self.vocab)

    @classmethod
    def from_record(
        cls,
        record: str,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """The biLM of a `record()`, its weights on `meta` (`has_weights` is false) until a
        state dict brings them (`ElmoC` loads them)."""
        params, vocab, config = record_params(record, archive_file, fasttext_path, tokenizer_path)
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        # What a state dict restores goes to meta (a non-persistent buffer keeps its value).
        restored = {id(tensor) for tensor in model.state_dict(keep_vars=True).values()}
        model._apply(lambda tensor: tensor.to("meta") if id(tensor) in restored else tensor)
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        return cls(model, reader, archive_file, config)  # type: ignore[arg-type]

    @property
    def has_weights(self) -> bool:
        """False while a biLM of `from_record` has no storage for its weights."""
        return not any(
            tensor.is_meta for tensor in chain(self.model.parameters(), self.model.buffers())
        )

    @property
    def vocab(self) -> Vocabulary:
        return self.model.vocab

    @property
    def num_layers(self) -> int:
        """The input projection + the LSTM layers."""
        return self.model.num_layers()

    def get_output_dim(self) -> int:
        return self.model.contextualizer.get_output_dim()

    @property
    def fasttext_path(self) -> Optional[str]:
        """The fastText `.bin` the input embedder reads; `None` for any other input."""
        path = getattr(self.token_embedder, "model_path", None)
        return path if isinstance(path, str) else None


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
    new_mask = torch.arange(timesteps + 2, device=mask.device) < (lengths + 2).unsqueeze(1)
    return result, new_mask


def index_sentences(
    sentences: List[List[str]], indexer: TokenIndexer, vocab: Optional[Vocabulary] = None
) -> Dict[str, torch.Tensor]:
    """Tokenized sentences indexed by `indexer` over `vocab` and padded: the tensors
    `(batch, timesteps, ...)` by output name that `ElmoC` takes."""
    check_sentences(sentences, logger)
    if not sentences:
        raise ConfigurationError("no sentences to index (an empty batch)")
    fields = [
        TextField([Token(word) for word in sentence], {"words": indexer}) for sentence in sentences
    ]
    batch = Batch([Instance({"words": field}) for field in fields])
    batch.index_instances(vocab if vocab is not None else Vocabulary())
    return batch.as_tensor_dict()["words"]["words"]


class ElmoC(torch.nn.Module):
    """
    AllenNLP's `Elmo` for a trained ELMo-C biLM (word-level or ELMo-Sub), read from `model`
    (model directory or `model.tar.gz`) or given as `module` (a `PretrainedBiLM`; its output
    heads are dropped); the other parameters as `Elmo`'s, a frozen biLM always in inference
    mode. Mixes the layers (the input projection, then each LSTM layer, forward || backward);
    the pretraining reader's sentence boundaries are added around each sentence and, unless
    `keep_sentence_boundaries`, removed from the output. Over BPE subwords each word is its
    first subword's vectors.

        elmo = ElmoC("runs/elmo_c/model.tar.gz", num_output_representations=1, dropout=0.0)
        output = elmo(batch_to_ids([["The", "council", "met", "."]], elmo))
    """

    def __init__(
        self,
        model: Optional[str],
        num_output_representations: int,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Optional[List[float]] = None,
        module: Optional[PretrainedBiLM] = None,
    ) -> None:
        super().__init__()
        if (model is None) == (module is None):
            raise ConfigurationError("ElmoC: give the model's path or a ready module, not both")
        if module is None:
            module = PretrainedBiLM.from_archive(str(model))
        if scalar_mix_parameters is not None and len(scalar_mix_parameters) != module.num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(scalar_mix_parameters)} weights, the biLM has "
                f"{module.num_layers} layers"
            )
        self._bilm = module
        module.model.delete_softmax()
        self._lm = module.model
        self._token_embedder = module.token_embedder
        for parameter in self._lm.parameters():
            parameter.requires_grad_(requires_grad)
        self._requires_grad = requires_grad
        self._lm.train(False)
        self._keep_sentence_boundaries = keep_sentence_boundaries
        self._scalar_mixes = torch.nn.ModuleList(
            ScalarMix(
                module.num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self._dropout = torch.nn.Dropout(dropout)
        # The <S> / </S> vectors `(2, dim)` of a frozen word-level input embedder, when used.
        self._boundaries: Optional[torch.Tensor] = None
        self._word_indexer = module.token_indexer
        if module.is_subword:
            start, end = module.boundary_tokens
            self._word_indexer = BpeFirstSubwordIndexer(
                module.tokenizer.tokenizer_path,
                module.vocab,
                namespace=module.token_indexer.namespace,  # type: ignore[attr-defined]
                start_token=start,
                end_token=end,
            )
        elif not isinstance(self._token_embedder, StringEmbedder):
            raise ConfigurationError(
                f"{module.archive_file}: its input embedder "
                f"({type(self._token_embedder).__name__}) has no embed_strings method, so the "
                "sentence boundary vectors cannot be made"
            )
        self.register_load_state_dict_post_hook(lambda module, _: module.refresh_boundary_vectors())

    @property
    def bilm(self) -> PretrainedBiLM:
        return self._bilm

    @property
    def vocab(self) -> Vocabulary:
        return self._bilm.vocab

    @property
    def num_layers(self) -> int:
        """The layers mixed: the input projection and each LSTM layer."""
        return self._bilm.num_layers

    def get_output_dim(self) -> int:
        return self._bilm.get_output_dim()

    def word_indexer(self) -> TokenIndexer:
        """The indexer of the words `forward` and `layers` read (`batch_to_ids` uses it)."""
        return self._word_indexer

    def refresh_boundary_vectors(self) -> None:
        """Remakes the `<S>` / `</S>` vectors from the input embedder's weights (done after
        every `load_state_dict`; call it after changing a trainable input embedder's)."""
        self._boundaries = None
        if not self._bilm.is_subword and self._bilm.has_weights:
            with torch.no_grad():
                self._boundaries = self._boundary_vectors()

    def _boundary_vectors(self, device: Optional[torch.device] = None) -> torch.Tensor:
        """The input embedder's vectors of the pretraining reader's boundary tokens, `(2, dim)`."""
        embedder: StringEmbedder = self._token_embedder  # type: ignore[assignment]
        return embedder.embed_strings(list(self._bilm.boundary_tokens), device)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args, **kwargs) -> None:
        # A biLM without weights gets storage (on this module's device) just before its
        # children copy them in: copying into a meta tensor does nothing.
        keys = [key for key in state_dict if key.startswith(prefix + "_lm.")]
        assigned = local_metadata.get("assign_to_params_buffers")
        if keys and not self._bilm.has_weights and not assigned:
            placed = [tensor for tensor in self.parameters() if not tensor.is_meta]
            device = placed[0].device if placed else state_dict[keys[0]].device
            self._lm._apply(
                lambda tensor: torch.empty_like(tensor, device=device) if tensor.is_meta else tensor
            )
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args, **kwargs)

    def _apply(self, fn, recurse=True):
        # Moves skip the meta tensors of a biLM without weights (`_load_from_state_dict` places
        # them); dtype conversions apply.
        def applied(tensor: torch.Tensor) -> torch.Tensor:
            if not tensor.is_meta:
                return fn(tensor)
            return tensor.to(dtype=fn(torch.empty(0, dtype=tensor.dtype)).dtype)

        return super()._apply(applied, recurse)

    def train(self, mode: bool = True) -> "ElmoC":
        super().train(mode)
        if not self._requires_grad:
            self._lm.train(False)
        return self

    def forward(
        self, inputs: Optional[Dict[str, torch.Tensor]] = None, **kwargs: torch.Tensor
    ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        `inputs`: what `batch_to_ids` returns for `(batch, timesteps)` words (or the same tensors
        by keyword). Returns `{"elmo_representations": [(batch, timesteps, dim)] *
        num_output_representations, "mask": (batch, timesteps)}` (timesteps + 2 with
        `keep_sentence_boundaries`).
        """
        tensors = dict(inputs or {}, **kwargs)
        if not tensors:
            raise ConfigurationError(
                "ElmoC: no inputs; make them with batch_to_ids(sentences, elmo)"
            )
        layers, full_mask = self.layers(**tensors)
        representations = []
        for scalar_mix in self._scalar_mixes:
            mixed = scalar_mix(layers, full_mask)
            if not self._keep_sentence_boundaries:
                mixed, _ = remove_sentence_boundaries(mixed, full_mask)
            representations.append(self._dropout(mixed))
        return {
            "elmo_representations": representations,
            "mask": full_mask if self._keep_sentence_boundaries else self.word_mask(tensors),
        }

    @staticmethod
    def word_mask(inputs: Dict[str, torch.Tensor]) -> torch.BoolTensor:
        """The `(batch, timesteps)` mask of the words in an indexer's output."""
        for key in ("token_mask", "mask"):
            if key in inputs:
                return inputs[key].bool()
        return get_text_field_mask({"words": inputs})

    def layers(self, **inputs: torch.Tensor) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """
        Every layer of the biLM, `(batch, timesteps + 2, dim)` each, with the boundary positions
        (`<S>` first, `</S>` after each sentence's last token), and their mask.
        """
        if not self._bilm.has_weights:
            raise ConfigurationError(
                f"{self._bilm.archive_file} is missing and its biLM was built from a task "
                "model's record without weights (PretrainedBiLM.from_record); load that task "
                "model's state dict (load_archive) first, or give the biLM archive"
            )
        if self._bilm.is_subword:
            return self._subword_layers(**inputs)
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
        embeddings, full_mask = add_boundary_vectors(embeddings, mask, boundaries[0], boundaries[1])
        return self._lm.encode(embeddings, full_mask), full_mask

    def _subword_layers(
        self,
        subword_ids: torch.LongTensor,
        subword_mask: torch.BoolTensor,
        first_subword: torch.LongTensor,
        mask: torch.BoolTensor,
    ) -> Tuple[List[torch.Tensor], torch.BoolTensor]:
        """`layers` over the `bpe_first_subword` indexer's subwords (with boundaries) `(batch,
        num_subwords)`: each word's first subword's vectors, then `</S>`'s after the last."""
        subword_mask, mask = subword_mask.bool(), mask.bool()
        subword_layers = self._lm.encode(self._token_embedder(subword_ids), subword_mask)
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


def batch_to_ids(sentences: List[List[str]], elmo: ElmoC) -> Dict[str, torch.Tensor]:
    """AllenNLP's `batch_to_ids`: the padded tensors `elmo` reads, by name. ELMo-C's ids depend
    on the model (its fastText subword rows), so it is the second argument."""
    return index_sentences(sentences, elmo.word_indexer(), elmo.vocab)


def check_arguments(
    input_file: Path, output_file: Path, output_mode: str, batch_size: int, max_sentence_length: int
) -> None:
    if output_mode not in OUTPUT_MODES:
        raise ConfigurationError(f"elmo-c-embed: output mode must be one of {OUTPUT_MODES}")
    if batch_size < 1:
        raise ConfigurationError("elmo-c-embed: batch size must be >= 1")
    if max_sentence_length < 1:
        raise ConfigurationError("elmo-c-embed: max sentence length must be >= 1")
    if not input_file.is_file():
        raise ConfigurationError(f"elmo-c-embed: input file {input_file} does not exist")
    if output_file.exists():
        raise ConfigurationError(f"elmo-c-embed: {output_file} exists; remove it to re-embed")


def read_sentences(input_file: Path) -> List[List[str]]:
    """Whitespace-tokenized lines, decoded by `decode_line`; lines with bytes that are not UTF-8
    and with NUL characters are counted and logged."""
    sentences, undecodable, with_nul = [], [], []
    with open(input_file, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            line, bad_bytes, had_nul = decode_line(raw, first=number == 1)
            if bad_bytes:
                undecodable.append(number)
            if had_nul:
                with_nul.append(number)
            sentences.append(line.split())
    for problem, numbers in (("bytes that are not UTF-8 (read as U+FFFD)", undecodable),
                             ("NUL characters (read as spaces)", with_nul)):  # fmt: skip
        if numbers:
            logger.warning("%s: %d line(s) with %s, e.g. line %d", input_file, len(numbers),
                           problem, numbers[0])  # fmt: skip
    return sentences


@torch.no_grad()
def embed_sentences(
    sentences: List[List[str]],
    representations: ElmoC,
    device: torch.device,
) -> List[numpy.ndarray]:
    """Every layer of `representations` for each sentence: `(num_layers, len(sentence), dim)`
    arrays, the boundary positions removed (what `elmo-c-embed --all` writes)."""
    tensors = index_sentences(sentences, representations.word_indexer(), representations.vocab)
    layers, _ = representations.layers(**{k: v.to(device) for k, v in tensors.items()})
    stacked = torch.stack(layers, dim=1).float().cpu().numpy()  # (batch, layers, time + 2, dim)
    return [stacked[row, :, 1 : len(sentence) + 1] for row, sentence in enumerate(sentences)]


class ElmoCEmbedder:
    """
    AllenNLP 0.9's `ElmoEmbedder` for an ELMo-C model (stateless): every layer of the biLM
    (`model`: its model directory or `model.tar.gz`) for tokenized sentences, as numpy arrays
    `(num_layers, tokens, dim)`. `fasttext_path`: its `.bin`, if not where it is found.
    """

    def __init__(
        self, model: str, cuda_device: int = -1, fasttext_path: Optional[str] = None
    ) -> None:
        self.device = torch.device("cpu" if cuda_device < 0 else f"cuda:{cuda_device}")
        bilm = PretrainedBiLM.from_archive(str(model), fasttext_path)
        self.representations = ElmoC(None, 0, dropout=0.0, module=bilm).eval().to(self.device)

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        """Each sentence's layers, `(num_layers, len(sentence), dim)` (0 tokens if empty)."""
        check_sentences(batch, logger)
        filled = [index for index, sentence in enumerate(batch) if sentence]
        shape = (self.representations.num_layers, 0, self.representations.get_output_dim())
        result = [numpy.zeros(shape, dtype=numpy.float32) for _ in batch]
        if filled:
            vectors = embed_sentences([batch[i] for i in filled], self.representations,
                                      self.device)  # fmt: skip
            for index, layers in zip(filled, vectors):
                result[index] = layers
        return result

    def embed_sentence(self, sentence: List[str]) -> numpy.ndarray:
        """`(num_layers, len(sentence), dim)`."""
        return self.embed_batch([sentence])[0]

    def embed_sentences(
        self, sentences: Iterable[List[str]], batch_size: int = 64
    ) -> Iterator[numpy.ndarray]:
        """`embed_sentence` of each sentence, in order, `batch_size` at a time."""
        if batch_size < 1:
            raise ConfigurationError("ElmoCEmbedder: batch_size must be >= 1")
        batch: List[List[str]] = []
        for sentence in sentences:
            batch.append(list(sentence))
            if len(batch) == batch_size:
                yield from self.embed_batch(batch)
                batch = []
        if batch:
            yield from self.embed_batch(batch)

    def embed_file(
        self,
        input_file: Union[str, Path, IO],
        output_file_path: Union[str, Path],
        output_format: str = "all",
        batch_size: int = 64,
        max_sentence_length: int = 10_000,
    ) -> Path:
        """
        Each whitespace-tokenized line of `input_file` (a path or an open file) into HDF5: a
        dataset per line named by its index, `(num_layers, tokens, dim)` for "all", `(tokens,
        dim)` for "top" or "average", and a JSON `sentence_to_index`. Written as
        `OUTPUT.partial`, renamed when complete; a rerun resumes it. A line longer than
        `max_sentence_length` tokens stops it before anything is embedded.
        """
        output = Path(output_file_path)
        if hasattr(input_file, "read"):
            text = input_file.read()
            copy = output.with_name(output.name + ".input.txt")
            copy.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
            try:
                return self._write_file(copy, output, output_format, batch_size,
                                        max_sentence_length)  # fmt: skip
            finally:
                copy.unlink()
        return self._write_file(Path(input_file), output, output_format, batch_size,
                                max_sentence_length)  # fmt: skip

    def _write_file(
        self, input_file: Path, output_file: Path, output_mode: str, batch_size: int,
        max_sentence_length: int,
    ) -> Path:  # fmt: skip
        check_arguments(input_file, output_file, output_mode, batch_size, max_sentence_length)
        sentences = read_sentences(input_file)
        too_long = [i + 1 for i, words in enumerate(sentences) if len(words) > max_sentence_length]
        if too_long:
            raise ConfigurationError(
                f"elmo-c-embed: {input_file} has {len(too_long)} line(s) longer than "
                f"{max_sentence_length} tokens (line {', '.join(map(str, too_long[:5]))}"
                f"{', ...' if len(too_long) > 5 else ''}); split them or raise "
                "--max-sentence-length"
            )
        partial = output_file.with_name(output_file.name + ".partial")
        with h5py.File(partial, "a") as out:
            todo = [index for index in range(len(sentences)) if str(index) not in out]
            if len(todo) < len(sentences):
                logger.info("Resuming %s: %d sentences to do", partial, len(todo))
            empty = sum(not sentences[i] for i in todo)
            if empty:
                logger.warning("%s: %d empty line(s) written as 0-token entries", input_file,
                               empty)  # fmt: skip
            # Longest first: padding stays small and a batch that does not fit fails at once.
            todo.sort(key=lambda i: -len(sentences[i]))
            for start in Tqdm.tqdm(range(0, len(todo), batch_size), desc="embedding"):
                chunk = todo[start : start + batch_size]
                for index, layers in zip(chunk, self.embed_batch([sentences[i] for i in chunk])):
                    if output_mode != "all":  # (num_layers, tokens, dim) -> (tokens, dim)
                        layers = layers[-1] if output_mode == "top" else layers.mean(axis=0)
                    out.create_dataset(str(index), data=layers)
                out.flush()  # a resumed run loses at most one batch
            if "sentence_to_index" in out:
                del out["sentence_to_index"]
            mapping = {" ".join(words): str(index) for index, words in enumerate(sentences)}
            out.create_dataset("sentence_to_index", dtype=h5py.string_dtype(),
                               data=numpy.array([json.dumps(mapping)], dtype=object))  # fmt: skip
        os.replace(partial, output_file)
        return output_file
