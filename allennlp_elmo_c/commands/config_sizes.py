"""
The output sizes that `convert-config` reads off a task config: a stock ELMo's or language-model
embedder's (from its options file or LM archive where it can, else `--stock-dim`, else assumed),
a contextualizer's, and any token embedder's (for the totals of a text field embedder).
"""

import json
import re
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received.received_json import (
    MAX_CONFIG_BYTES,
    parse_received_json,
    read_received_json,
)
from allennlp_elmo_c.received.safe_extract import read_member

# AllenNLP's contextual embedders over a trained language_model archive (allennlp-models' lm).
LM_EMBEDDERS = ("bidirectional_lm_token_embedder", "language_model_token_embedder")
ELMO_C_EMBEDDER = "elmo_c_token_embedder"
STOCK_ELMO_DIM = 1024  # elmo_2x4096_512_2048cnn_2xhighway: 2 x 512


def _stated(read: int, stock_dim: Optional[int], path: str, source: str) -> int:
    if stock_dim is not None and stock_dim != read:
        raise ConfigurationError(f"{path}: --stock-dim {stock_dim}, but {source} says {read}")
    return read


def stock_elmo_dim(
    params: Dict[str, Any], path: str, notes: List[str], stock_dim: Optional[int] = None
) -> int:
    """The output size of a stock `elmo_token_embedder` (or BCN's `Elmo`): its `projection_dim`,
    else 2 x the biLM's projection size, read from its options file when that is a local file,
    else `stock_dim` (`--stock-dim`), else from the options file's name (`elmo_2x4096_512_...`:
    2 x 512), else assumed 1024. A `stock_dim` that a local options file contradicts is a
    `ConfigurationError`. A language-model embedder's is `stock_lm_dim`'s."""
    if params.get("type") in LM_EMBEDDERS:
        return stock_lm_dim(params, path, notes, stock_dim)
    if params.get("projection_dim"):
        return int(params["projection_dim"])
    options = str(params.get("options_file", ""))
    if options and Path(options).is_file():
        try:
            recorded = json.loads(Path(options).read_text(encoding="utf-8"))
            read = 2 * int(recorded["lstm"]["projection_dim"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigurationError(
                f"{path}: cannot read the ELMo options file {options} ({error})"
            )
        return _stated(read, stock_dim, path, f"the options file {options}")
    if stock_dim is not None:
        return stock_dim
    match = re.search(r"\d+x\d+_(\d+)_\d+cnn", Path(options).name)
    if match:
        return 2 * int(match.group(1))
    notes.append(
        f"{path}: ELMo size not known from options_file {options!r}; assumed {STOCK_ELMO_DIM} "
        "(state it with --stock-dim)"
    )
    return STOCK_ELMO_DIM


def _lm_archive_config(archive_file: str) -> Dict[str, Any]:
    """The config.json of an AllenNLP archive (a model.tar.gz or a serialization directory)."""
    path = Path(archive_file)
    where = f"{archive_file}: config.json"
    if path.is_dir():
        return read_received_json(path / "config.json", where)
    data = read_member(archive_file, "config.json", MAX_CONFIG_BYTES)
    if data is None:
        raise ValueError("no config.json in it")
    return parse_received_json(data, where)


def contextualizer_dim(contextualizer: Dict[str, Any]) -> Optional[int]:
    """The output size of a language model's contextualizer config (allennlp-models' lm), `None`
    for a kind not known here."""
    kind = contextualizer.get("type")
    try:
        if kind == "bidirectional_language_model_transformer":  # forward + backward: 2 x input_dim
            return 2 * int(contextualizer["input_dim"])
        if kind in ("lstm", "gru", "rnn", "augmented_lstm", "alternating_lstm"):
            directions = 2 if contextualizer.get("bidirectional") else 1
            return int(contextualizer["hidden_size"]) * directions
        if kind == "stacked_bidirectional_lstm":
            return 2 * int(contextualizer["hidden_size"])
    except (KeyError, TypeError, ValueError):
        return None
    return None


def stock_lm_dim(
    params: Dict[str, Any], path: str, notes: List[str], stock_dim: Optional[int] = None
) -> int:
    """The output size of a stock `bidirectional_lm_token_embedder` /
    `language_model_token_embedder`: its language model's contextualizer's output size, read
    from the LM archive's config.json when `archive_file` is a local file, else `stock_dim`
    (`--stock-dim`), else assumed 1024 (the released transformer ELMo's: 2 x 512)."""
    archive_file = str(params.get("archive_file", ""))
    if archive_file and Path(archive_file).exists():
        try:
            config = _lm_archive_config(archive_file)
            contextualizer = config["model"]["contextualizer"]
        except (OSError, ValueError, KeyError, TypeError, tarfile.TarError, EOFError) as error:
            raise ConfigurationError(
                f"{path}: cannot read the language model archive {archive_file} ({error}); "
                "state its output size with --stock-dim after fixing or removing the path"
            ) from error
        read = contextualizer_dim(contextualizer) if isinstance(contextualizer, dict) else None
        if read is not None:
            return _stated(read, stock_dim, path, f"the language model archive {archive_file}")
        if stock_dim is None:
            kind = (
                contextualizer.get("type") if isinstance(contextualizer, dict) else contextualizer
            )
            raise ConfigurationError(
                f"{path}: the output size of the language model in {archive_file} (a {kind!r} "
                "contextualizer) cannot be told from its config; state it with --stock-dim"
            )
        return stock_dim
    if stock_dim is not None:
        return stock_dim
    notes.append(
        f"{path}: the language model's output size is not known from archive_file {archive_file!r} "
        f"(not a local file); assumed {STOCK_ELMO_DIM} (the released transformer ELMo's; state it "
        "with --stock-dim)"
    )
    return STOCK_ELMO_DIM


def _seq2vec_dim(encoder: Dict[str, Any]) -> Optional[int]:
    kind = encoder.get("type")
    if kind == "cnn":
        if encoder.get("output_dim"):
            return int(encoder["output_dim"])
        return int(encoder["num_filters"]) * len(encoder.get("ngram_filter_sizes", (2, 3, 4, 5)))
    if kind in ("lstm", "gru", "rnn", "augmented_lstm", "alternating_lstm"):
        return int(encoder["hidden_size"]) * (2 if encoder.get("bidirectional") else 1)
    if kind == "stacked_bidirectional_lstm":
        return 2 * int(encoder["hidden_size"])
    if kind in ("boe", "bag_of_embeddings"):
        return int(encoder["embedding_dim"])
    if kind == "cnn-highway":
        return int(encoder["projection_dim"])
    return None


def token_embedder_dim(params: Dict[str, Any]) -> Optional[int]:
    """The output size of a token embedder's config, `None` where it cannot be told from it."""
    kind = params.get("type", "embedding")
    try:
        if kind == "embedding":
            return int(params.get("projection_dim") or params["embedding_dim"])
        if kind == "character_encoding":
            return _seq2vec_dim(params.get("encoder", {}))
        if kind == "pass_through":
            return int(params["hidden_dim"])
        if kind == "empty":
            return 0
        if kind == ELMO_C_EMBEDDER and params.get("expected_output_dim"):
            if params.get("projection_dim"):
                return int(params["projection_dim"])
            mixes = int(params.get("num_output_representations", 1))
            return int(params["expected_output_dim"]) * mixes
    except (KeyError, TypeError, ValueError):
        return None
    return None
