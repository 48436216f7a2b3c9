"""
The one way into a pretrained biLM archive (`model.tar.gz` of an `elmo_c` model): everything that
uses a trained biLM downstream (`ElmoCRepresentations`, `elmo_c_token_embedder`, `elmo-c-embed`)
starts from a `PretrainedBiLM`.
"""

import json
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.params import with_overrides
from allennlp.data import DatasetReader, TokenIndexer, Tokenizer, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import CONFIG_NAME, extracted_archive, load_archive

from allennlp_elmo_c.common.fasttext_source import (
    recorded_fasttext_path,
    recorded_fasttext_paths,
    resolve_fasttext_path,
)
from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

if TYPE_CHECKING:  # the model imports the modules package, which imports this module
    from allennlp_elmo_c.models.elmo_c import ElmoCLanguageModel


def read_archive_config(archive_file: str) -> Dict[str, Any]:
    """
    An archive's config.json, read without loading any weights: AllenNLP writes it first, so
    reading stops there (looking it up by name would decompress the whole archive).
    """
    config = None
    try:
        with tarfile.open(archive_file) as archive:
            for member in archive:
                if member.name == CONFIG_NAME:
                    config = json.load(archive.extractfile(member))  # type: ignore[arg-type]
                    break
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise unreadable_archive(archive_file, error) from error
    _check_config(config, archive_file)
    return config  # type: ignore[return-value]


# elmo_lstm's defaults for the sizes a config may leave out
# (allennlp_elmo_c/modules/seq2seq_encoders/elmo_lstm.py).
ELMO_LSTM_DEFAULTS = {"projection_size": 512, "cell_size": 4096, "num_layers": 2}


def contextualizer_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """The biLM's contextualizer settings from an archive's config, with elmo_lstm's defaults."""
    return {**ELMO_LSTM_DEFAULTS, **config["model"].get("contextualizer", {})}


def representation_dim(config: Dict[str, Any]) -> int:
    """The size of each layer the biLM gives downstream: 2 x its projection (one per
    direction); what the downstream configs call `ELMO_C_DIM`."""
    return 2 * int(contextualizer_config(config)["projection_size"])


def is_subword_config(config: Dict[str, Any]) -> bool:
    """True for the config of a biLM pretrained on BPE subwords (its reader has a `bpe`
    tokenizer)."""
    tokenizer = config.get("dataset_reader", {}).get("tokenizer") or {}
    return tokenizer.get("type") == "bpe"


def fasttext_overrides(config: Dict[str, Any], new_path: str, archive_file: str) -> Dict[str, str]:
    """
    Overrides that point every fastText path of an archived config (input and target
    embedders, indexers, a fastText-initialised output layer) at `new_path`.
    """
    if recorded_fasttext_path(config, archive_file) is None:
        raise ConfigurationError(f"{archive_file}: the biLM reads no fastText file (fasttext_path)")
    return {path: new_path for path in recorded_fasttext_paths(config)}


class PretrainedBiLM:
    """
    A trained `elmo_c` biLM, read once from its archive, with what downstream code needs of it:
    the model (its contextualizer returns all layers), its single input token embedder and the
    token indexer and tokenizer it was pretrained with, and the pretraining reader's boundary
    tokens. Build it with `from_archive`; `ElmoCRepresentations(bilm=...)` takes it as
    AllenNLP's `Elmo(module=...)` takes a ready biLM.

    # Parameters

    model : `ElmoCLanguageModel`
        The biLM (loaded with `return_all_layers`).
    token_indexers : `Dict[str, TokenIndexer]`
        The pretraining reader's indexers; the one of the input embedder's key is kept.
    tokenizer : `Tokenizer`
        The pretraining reader's tokenizer.
    boundary_tokens : `Tuple[str, str]`
        The pretraining reader's start and end tokens.
    is_subword : `bool`
        Whether the biLM reads BPE subwords (ELMo-Sub) rather than words.
    archive_file : `str`, optional
        Where it was read from (for messages, and for indexers that read the archive).
    config : `Dict[str, Any]`, optional
        The archive's `config.json` as trained (before any load-time override), for `record`.
    """

    def __init__(
        self,
        model: "ElmoCLanguageModel",
        token_indexers: Dict[str, TokenIndexer],
        tokenizer: Tokenizer,
        boundary_tokens: Tuple[str, str],
        is_subword: bool,
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
        if self.input_key not in token_indexers:
            raise ConfigurationError(
                f"{self.archive_file}: no token indexer for the input embedder's key "
                f"{self.input_key!r} (the reader has {sorted(token_indexers)})"
            )
        self.model = model
        self.token_indexer = token_indexers[self.input_key]
        self.tokenizer = tokenizer
        self.boundary_tokens = boundary_tokens
        self.is_subword = is_subword

    @classmethod
    def from_archive(
        cls,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """
        Reads `archive_file` (decompressed once): its `config.json` decides the overrides, then
        AllenNLP's `load_archive` builds the model and reader from the same directory.
        Training-time-only settings (the validation candidate word list) are dropped, so an
        archive loads anywhere its weights and fastText file are.

        # Parameters

        archive_file : `str`
            A `model.tar.gz` of an `elmo_c` model.
        fasttext_path : `str`, optional
            The biLM's fastText `.bin` at another path than recorded in the archive (every
            fastText path of the config is replaced). Without it, the `.bin` is looked for in the
            environment variable `ELMO_C_FASTTEXT`, at the recorded path, then beside the archive
            (`allennlp_elmo_c.common.fasttext_source`).
        tokenizer_path : `str`, optional
            For a biLM over BPE subwords: its tokenizer JSON at another path than recorded.
        """
        if not Path(archive_file).is_file():
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        try:
            with extracted_archive(archive_file) as directory:
                config = _read_config(Path(directory) / CONFIG_NAME, archive_file)
                overrides = cls._overrides(config, archive_file, fasttext_path, tokenizer_path)
                archive = load_archive(directory, overrides=overrides)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise unreadable_archive(archive_file, error) from error
        except ConfigurationError as error:
            if "return_all_layers" in str(error):
                raise ConfigurationError(
                    f"{archive_file}: its contextualizer cannot return all layers (use "
                    "elmo_lstm)"
                ) from error
            raise
        return cls._built(archive.model, archive.dataset_reader, config, archive_file)

    @classmethod
    def _built(
        cls, model: Model, reader: DatasetReader, config: Dict[str, Any], archive_file: str
    ) -> "PretrainedBiLM":
        boundary_tokens = reader.boundary_tokens  # type: ignore[attr-defined]
        if len(boundary_tokens) != 2:
            raise ConfigurationError(f"{archive_file}: expected one start and one end token")
        return cls(
            model,  # type: ignore[arg-type]
            token_indexers=reader.token_indexers,  # type: ignore[attr-defined]
            tokenizer=reader.tokenizer,  # type: ignore[attr-defined]
            boundary_tokens=(boundary_tokens[0], boundary_tokens[1]),
            is_subword=is_subword_config(config),
            archive_file=archive_file,
            config=config,
        )

    def record(self) -> str:
        """
        What is needed to build this biLM again without its archive (its `config.json` and
        vocabulary; not its weights), as one JSON line for `from_record`. A task model that
        contains the biLM's weights in its own state dict keeps it (`elmo_c_token_embedder`
        stores it in the task's vocabulary), so the task archive loads after the biLM archive
        is moved or deleted.
        """
        if self.config is None:
            raise ConfigurationError(f"{self.archive_file}: no config to record (not read from an archive)")
        with tempfile.TemporaryDirectory() as directory:
            self.vocab.save_to_files(directory)
            files = {
                path.name: path.read_text(encoding="utf-8")
                for path in sorted(Path(directory).iterdir())
                if path.suffix == ".txt"
            }
        return json.dumps({"config": self.config, "vocabulary": files}, ensure_ascii=False)

    @classmethod
    def from_record(
        cls,
        record: str,
        archive_file: str,
        fasttext_path: Optional[str] = None,
        tokenizer_path: Optional[str] = None,
    ) -> "PretrainedBiLM":
        """
        The biLM of a `record()`, built from its config with fresh (untrained) weights: only for
        a module whose state dict then brings the trained ones. The fastText `.bin` is found as
        for `from_archive` (the archive itself is not needed).
        """
        data = json.loads(record)
        config = data["config"]
        _check_config(config, archive_file)
        overrides = cls._overrides(config, archive_file, fasttext_path, tokenizer_path)
        with tempfile.TemporaryDirectory() as directory:
            for name, text in data["vocabulary"].items():
                (Path(directory) / name).write_text(text, encoding="utf-8")
            vocab = Vocabulary.from_files(directory)
        params = Params(with_overrides(config, overrides))
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        return cls._built(model, reader, config, archive_file)

    @staticmethod
    def _overrides(
        config: Dict[str, Any],
        archive_file: str,
        fasttext_path: Optional[str],
        tokenizer_path: Optional[str],
    ) -> Dict[str, Any]:
        subword = is_subword_config(config)
        if subword and fasttext_path is not None:
            raise ConfigurationError(f"{archive_file} is a BPE subword biLM: it reads no fastText")
        if not subword and tokenizer_path is not None:
            raise ConfigurationError(f"{archive_file} is not a BPE subword biLM: no tokenizer_path")
        overrides: Dict[str, Any] = {
            "model.contextualizer.return_all_layers": True,
            # Only used in validation, and the file may not exist where the archive is used.
            "model.nearest_neighbour_words": None,
        }
        recorded = None if subword else recorded_fasttext_path(config, archive_file)
        if recorded is not None:
            resolved = resolve_fasttext_path(recorded, archive_file, fasttext_path)
            overrides.update(fasttext_overrides(config, resolved, archive_file))
        elif fasttext_path is not None:
            raise ConfigurationError(f"{archive_file}: the biLM reads no fastText file (fasttext_path)")
        if tokenizer_path is not None:
            overrides["dataset_reader.tokenizer.tokenizer_path"] = tokenizer_path
        return overrides

    @property
    def vocab(self) -> Vocabulary:
        """The biLM's vocabulary (what `token_indexer` indexes with, if it uses one)."""
        return self.model.vocab

    @property
    def num_layers(self) -> int:
        """Number of representation layers: the input projection + the LSTM layers."""
        return self.model.num_layers()

    def get_output_dim(self) -> int:
        """Size of every layer (forward || backward)."""
        return self.model.contextualizer.get_output_dim()

    @property
    def fasttext_path(self) -> Optional[str]:
        """The fastText `.bin` the input embedder reads; `None` for any other input."""
        if isinstance(self.token_embedder, FastTextEmbedder):
            return self.token_embedder.model_path
        return None


def _read_config(path: Path, archive_file: str) -> Dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise unreadable_archive(archive_file, error) from error
    _check_config(config, archive_file)
    return config


def _check_config(config: Any, archive_file: str) -> None:
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no model in its config.json")
    model_type = config["model"].get("type")
    if model_type != "elmo_c":
        raise ConfigurationError(f"{archive_file} holds a {model_type} model, not an elmo_c model")


def unreadable_archive(archive_file: str, error: Exception) -> ConfigurationError:
    """The error for an archive that cannot be read (truncated, not a tar.gz, ...)."""
    return ConfigurationError(
        f"ELMo-C archive {archive_file} is not a readable model.tar.gz ({error})"
    )
