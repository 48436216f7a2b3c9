from typing import List, Optional

import h5py
import torch

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.token_indexers.elmo_indexer import ELMoCharacterMapper
from allennlp.modules.elmo import _ElmoCharacterEncoder
from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.received.allocation_budget import spend
from allennlp_elmo_c.received.received_json import read_received_json


_ACTIVATIONS = {"relu": torch.nn.functional.relu, "tanh": torch.tanh}


@TokenEmbedder.register("elmo_char_cnn")
class ElmoCharCnnEmbedder(TokenEmbedder):
    """
    ELMo's character CNN (character embedding, max-pooled convolutions, highway layers,
    projection) of a released ELMo's `options_file` `.json` and `weight_file` `.hdf5`, read by
    AllenNLP's `_ElmoCharacterEncoder`, without its sentence boundaries (`lm_corpus` adds
    them). Index with `elmo_characters`. Each distinct token of a batch runs once.
    `requires_grad`: fine-tune it (not as the *target* embedder: the model would collapse it).
    """

    def __init__(self, options_file: str, weight_file: str, requires_grad: bool = False) -> None:
        super().__init__()
        _check_files(options_file, weight_file)
        try:
            self._encoder = _ElmoCharacterEncoder(options_file, weight_file, requires_grad)
        except (OSError, KeyError, ValueError, TypeError, IndexError, RuntimeError) as error:
            raise ConfigurationError(
                f"elmo_char_cnn: cannot load ELMo weights {weight_file} with options "
                f"{options_file}: {type(error).__name__}: {error}"
            ) from error
        options = self._encoder._options["char_cnn"]
        self._max_characters = options["max_characters_per_token"]
        self._activation = _ACTIVATIONS[options["activation"]]
        self._mapper = ELMoCharacterMapper()

    def get_output_dim(self) -> int:
        return self._encoder.get_output_dim()

    def forward(self, elmo_tokens: torch.LongTensor) -> torch.Tensor:
        """`elmo_tokens` `(batch, num_tokens, max_characters_per_token)` from `elmo_characters`
        (all-zero rows are padding) to `(batch, num_tokens, output_dim)`."""
        if elmo_tokens.size(-1) != self._max_characters:
            raise ConfigurationError(
                f"elmo_char_cnn: got {elmo_tokens.size(-1)} characters per token, the ELMo "
                f"options say {self._max_characters} (index tokens with elmo_characters)"
            )
        flat = elmo_tokens.reshape(-1, self._max_characters)
        distinct, inverse = torch.unique(flat, dim=0, return_inverse=True)
        vectors = self._embed_distinct(distinct)[inverse]
        mask = (flat > 0).any(-1, keepdim=True)
        return (vectors * mask).view(*elmo_tokens.shape[:-1], -1)

    def _embed_distinct(self, character_ids: torch.LongTensor) -> torch.Tensor:
        # (tokens, characters, char_dim) -> (tokens, char_dim, characters) for Conv1d.
        characters = torch.nn.functional.embedding(
            character_ids, self._encoder._char_embedding_weights
        ).transpose(1, 2)
        pooled = [
            self._activation(conv(characters).max(dim=-1)[0])
            for conv in self._encoder._convolutions
        ]
        return self._encoder._projection(self._encoder._highways(torch.cat(pooled, dim=-1)))

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        """`(len(words), output_dim)`; `<S>` / `</S>` are ELMo's sentence boundaries."""
        ids = [self._mapper.convert_word_to_char_ids(word) for word in words]
        ids = torch.tensor(ids, dtype=torch.long).view(len(words), self._max_characters)
        return self.forward(ids.to(device or torch.device("cpu")).unsqueeze(0))[0]


def _check_files(options_file: str, weight_file: str) -> None:
    try:
        options = read_received_json(
            cached_path(options_file), f"elmo_char_cnn: ELMo options {options_file}"
        )
        char_cnn = options["char_cnn"]
        num_filters = len(char_cnn["filters"])
        num_highway = int(char_cnn["n_highway"])
        activation = char_cnn["activation"]
        int(char_cnn["max_characters_per_token"]), int(char_cnn["embedding"]["dim"])
        int(options["lstm"]["projection_dim"])
    except OSError as error:
        raise ConfigurationError(
            f"elmo_char_cnn: cannot read ELMo options {options_file}: {error}"
        ) from error
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(
            f"elmo_char_cnn: {options_file} is not an ELMo options file with a char_cnn section "
            f"and lstm.projection_dim ({type(error).__name__}: {error})"
        ) from error
    if activation not in _ACTIVATIONS:
        raise ConfigurationError(
            f"elmo_char_cnn: unknown activation {activation!r} in {options_file}"
        )
    names = ["char_embed", "CNN_proj/W_proj", "CNN_proj/b_proj"]
    names += [f"CNN/{kind}_cnn_{i}" for kind in "Wb" for i in range(num_filters)]
    names += [
        f"CNN_high_{k}/{kind}_{part}"
        for k in range(num_highway)
        for kind in "Wb"
        for part in ("transform", "carry")
    ]
    try:
        with h5py.File(cached_path(weight_file), "r") as weights:
            missing = [name for name in names if name not in weights]
            if not missing:
                declared = _checked_datasets(weights, names, weight_file)
                spend(declared, f"the datasets of {weight_file}")
    except OSError as error:
        raise ConfigurationError(
            f"elmo_char_cnn: cannot read ELMo weights {weight_file} (an HDF5 file): {error}"
        ) from error
    if missing:
        raise ConfigurationError(
            f"elmo_char_cnn: ELMo weights {weight_file} lack {missing} required by {options_file}"
        )


def _checked_datasets(weights: h5py.File, names: List[str], weight_file: str) -> int:
    """The bytes the datasets `names` take once read, each checked to be data of the file
    itself (no link, virtual dataset or external storage: they would read other files)."""
    total = 0
    for name in names:
        parts = name.split("/")
        for depth in range(1, len(parts) + 1):
            link = weights.get("/".join(parts[:depth]), getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise ConfigurationError(
                    f"elmo_char_cnn: ELMo weights {weight_file}: {'/'.join(parts[:depth])} is a "
                    f"{type(link).__name__}, not data of the file itself; it is not followed"
                )
        dataset = weights[name]
        if not isinstance(dataset, h5py.Dataset) or dataset.is_virtual or dataset.external:
            kind = (
                "not a dataset" if not isinstance(dataset, h5py.Dataset)
                else "stored in other files"
            )
            raise ConfigurationError(
                f"elmo_char_cnn: ELMo weights {weight_file}: {name} is {kind}; only data held in "
                "the .hdf5 itself is read"
            )
        total += dataset.size * dataset.dtype.itemsize
    return total
