"""
Hugging Face transformers' front door to a model directory (`package`); importing this module
registers `ElmoCConfig`, `ElmoCModel` and `ElmoCTokenizer` with the Auto classes:

    model = AutoModel.from_pretrained("my-elmo-c")
    tokenizer = AutoTokenizer.from_pretrained("my-elmo-c")
    inputs = tokenizer([["The", "council", "met"]], is_split_into_words=True)
    hidden = model(**inputs, output_hidden_states=True).hidden_states  # one per layer

The tokenizer is not a `PreTrainedTokenizer`: ELMo-C has no vocabulary of ids, a word is the bag
of its fastText subword rows (`subword_ids`, `subword_counts`).
"""

import copy
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    BatchEncoding,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.modeling_outputs import BaseModelOutput

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader
from allennlp.nn.util import remove_sentence_boundaries

from allennlp_elmo_c.archive import (
    input_embedder_config,
    is_model_directory,
    read_directory_config,
)
from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
from allennlp_elmo_c.modules.elmo_c import ElmoC, index_sentences
from allennlp_elmo_c.received.contained_files import (
    copy_regular_file,
    copy_regular_tree,
    inside_path,
)
from allennlp_elmo_c.received.model_directory import (
    DIRECTORY_FORMAT,
    MODEL_CARD,
    MODEL_TYPE,
    VOCABULARY_DIR,
    write_checksums,
)
from allennlp_elmo_c.received.received_model import is_subword_config, read_directory
from allennlp_elmo_c.received.received_vocabulary import read_vocabulary


# The options of `from_pretrained` about where files are found, which a local directory ignores.
HUB_OPTIONS = frozenset({
    "cache_dir", "force_download", "local_files_only", "proxies", "resume_download", "revision",
    "subfolder", "use_auth_token", "token", "use_safetensors", "adapter_kwargs", "_from_auto",
    "_from_pipeline", "_commit_hash",
})  # fmt: skip


class ElmoCConfig(PretrainedConfig):
    """A model directory's config.json: `bilm` (the biLM's AllenNLP config), `files`,
    `fasttext`, `hidden_size`, `num_hidden_layers` (the input projection and each LSTM layer)."""

    model_type = MODEL_TYPE

    def __init__(
        self,
        bilm: Optional[Dict[str, Any]] = None,
        files: Optional[Dict[str, str]] = None,
        fasttext: Optional[Dict[str, Any]] = None,
        hidden_size: int = 0,
        num_hidden_layers: int = 0,
        elmo_c_format: int = DIRECTORY_FORMAT,
        **kwargs: Any,
    ) -> None:
        self.bilm = bilm
        self.files = files or {}
        self.fasttext = fasttext
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.elmo_c_format = elmo_c_format
        super().__init__(**kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):  # type: ignore[override]
        """A model directory's config as the plugin read and checked it."""
        path = pretrained_model_name_or_path
        if not isinstance(path, (str, os.PathLike)) or not os.path.isdir(path):
            return super().from_pretrained(path, **kwargs)
        for option in HUB_OPTIONS:
            kwargs.pop(option, None)
        return cls.from_dict({}, name_or_path=str(path), **kwargs)

    @classmethod
    def from_dict(cls, config_dict: Dict[str, Any], **kwargs: Any):  # type: ignore[override]
        # `AutoConfig.from_pretrained(DIR)` reads config.json itself: replaced by the checked one.
        path = kwargs.get("name_or_path")
        if isinstance(path, (str, os.PathLike)) and os.path.isdir(path):
            config_dict, _ = read_directory(str(path), resolve=False)
        return super().from_dict(config_dict, **kwargs)


class ElmoCModel(PreTrainedModel):
    """The biLM of a model directory: `last_hidden_state` is the top layer, `hidden_states`
    every layer, `(batch, words, hidden_size)` each, the sentence boundaries removed."""

    config_class = ElmoCConfig
    base_model_prefix = "bilm"
    main_input_name = "subword_ids"

    def __init__(self, config: ElmoCConfig, directory: Optional[str] = None) -> None:
        super().__init__(config)
        directory = directory or config.name_or_path
        if not directory or not is_model_directory(directory):
            raise ConfigurationError(
                "ElmoCModel is built from a model directory: AutoModel.from_pretrained(DIR), DIR "
                f"written by `python -m allennlp_elmo_c package` (got {directory!r})"
            )
        self.directory = str(directory)
        pretrained = PretrainedBiLM.from_archive(self.directory)
        self.bilm = pretrained.model
        # Not a submodule (its biLM is `self.bilm`).
        self._layers: List[ElmoC] = [
            ElmoC(None, 0, dropout=0.0, module=pretrained)
        ]
        self.post_init()

    def _init_weights(self, module: torch.nn.Module) -> None:
        """Nothing: the weights are the trained ones, read at construction."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):  # type: ignore[override]
        """The model directory's biLM, read by the plugin's loader, in evaluation mode; options
        other than `config`, its attributes and `HUB_OPTIONS` are refused."""
        directory = str(pretrained_model_name_or_path)
        config = kwargs.pop("config", None)
        options = {
            key: value
            for key, value in kwargs.items()
            if value is not None and (key not in HUB_OPTIONS or key == "subfolder" and value)
        }
        if not isinstance(config, ElmoCConfig):
            config, options = ElmoCConfig.from_pretrained(
                directory, return_unused_kwargs=True, **options
            )
        if model_args or options:
            raise ConfigurationError(
                f"ElmoCModel.from_pretrained({directory!r}) does not take "
                f"{sorted(options) or 'positional arguments'}: the biLM is read by "
                "allennlp-elmo-c's loader, its weights strictly and within a memory budget; once "
                "loaded, move the model with .to(device)"
            )
        config.name_or_path = directory
        return cls(config, directory).eval()

    def forward(
        self,
        attention_mask: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        **inputs: torch.Tensor,
    ) -> Union[BaseModelOutput, tuple]:
        """`ElmoCTokenizer`'s outputs in, a `BaseModelOutput` out."""
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        if attention_mask is not None:
            inputs["token_mask"] = attention_mask.bool()
        inputs.pop("token_type_ids", None)
        layers, full_mask = self._layers[0].layers(**inputs)  # each (batch, words + 2, dim)
        words = [remove_sentence_boundaries(layer, full_mask)[0] for layer in layers]
        hidden_states = tuple(words) if output_hidden_states else None
        if not return_dict:
            return tuple(v for v in (words[-1], hidden_states) if v is not None)
        return BaseModelOutput(last_hidden_state=words[-1], hidden_states=hidden_states)

    def save_pretrained(self, save_directory: Union[str, os.PathLike], **kwargs: Any) -> None:
        """Hugging Face's `save_pretrained`, then the rest of a model directory (its own regular
        files only), and its checksums."""
        super().save_pretrained(save_directory, **kwargs)
        target = Path(save_directory)
        source = Path(self.directory)
        if source.resolve() != target.resolve():
            for name in list(self.config.files.values()) + [MODEL_CARD]:
                path = inside_path(source, name, "the file")
                if path.is_file():
                    copy_regular_file(path, inside_path(target, name, "the file"))
            vocabulary = inside_path(source, VOCABULARY_DIR, "the vocabulary")
            copy_regular_tree(vocabulary, target / VOCABULARY_DIR)
        write_checksums(target)


class ElmoCTokenizer:
    """Raw or pre-tokenized text as `ElmoCModel`'s inputs, for the model `directory`."""

    model_input_names = ["subword_ids", "subword_counts", "attention_mask"]

    def __init__(self, directory: str) -> None:
        if not is_model_directory(directory):
            raise ConfigurationError(f"ElmoCTokenizer: {directory} is not a model directory")
        self.directory = str(directory)
        config = read_directory_config(self.directory)["bilm"]
        if is_subword_config(config):
            raise ConfigurationError(
                f"ElmoCTokenizer: {directory} is a biLM over BPE subwords (ELMo-Sub), whose words "
                "are indexed by their first subword; use ElmoC / batch_to_ids or ElmoCEmbedder"
            )
        reader = DatasetReader.from_params(Params(copy.deepcopy(config["dataset_reader"])))
        self._tokenizer = reader.tokenizer  # type: ignore[attr-defined]
        indexer_key = input_embedder_config(config)[0]
        self._indexer = reader.token_indexers[indexer_key]  # type: ignore[attr-defined]
        self._vocab, _ = read_vocabulary(
            Path(self.directory) / VOCABULARY_DIR, f"model directory {directory}"
        )

    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path, *args: Any, **kwargs: Any
    ) -> "ElmoCTokenizer":
        return cls(str(pretrained_model_name_or_path))

    def save_pretrained(self, save_directory: Union[str, os.PathLike], **kwargs: Any) -> None:
        """Nothing to add: `ElmoCModel.save_pretrained` writes what the tokenizer reads."""
        Path(save_directory).mkdir(parents=True, exist_ok=True)

    def tokenize(self, text: str) -> List[str]:
        """`text` split into words as the pretraining corpus was (the reader's tokenizer)."""
        return [token.text for token in self._tokenizer.tokenize(text)]

    def __call__(
        self,
        text: Union[str, Sequence[str], Sequence[Sequence[str]]],
        is_split_into_words: bool = False,
        return_tensors: Optional[str] = "pt",
        **kwargs: Any,
    ) -> BatchEncoding:
        """A `BatchEncoding` of the biLM's indexer outputs and `attention_mask` `(batch, words)`
        for a text, texts, or (`is_split_into_words`) words or lists of words."""
        if return_tensors not in ("pt", None):
            raise ValueError("ElmoCTokenizer returns torch tensors (return_tensors='pt')")
        if is_split_into_words:
            single = text and isinstance(text[0], str)  # one sentence, not a batch of them
            sentences = [list(text)] if single else [list(s) for s in text]
        else:
            sentences = [self.tokenize(t) for t in ([text] if isinstance(text, str) else text)]
        for sentence in sentences:
            if not all(isinstance(word, str) for word in sentence):
                raise ValueError("ElmoCTokenizer: words must be strings")
        indexed = dict(index_sentences(sentences, self._indexer, self._vocab))
        mask = ElmoC.word_mask(indexed)
        indexed.pop("token_mask", None)
        indexed["attention_mask"] = mask.long()
        return BatchEncoding(indexed, tensor_type=None)

    def __repr__(self) -> str:
        return f"ElmoCTokenizer({self.directory!r})"


AutoConfig.register(MODEL_TYPE, ElmoCConfig, exist_ok=True)
AutoModel.register(ElmoCConfig, ElmoCModel, exist_ok=True)
AutoTokenizer.register(ElmoCConfig, slow_tokenizer_class=ElmoCTokenizer, exist_ok=True)  # type: ignore[arg-type]

