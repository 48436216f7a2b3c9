"""`describe`: what a pretrained biLM archive or model directory is and the lines that use it
downstream, read without building the model where its config allows (docs/using-a-model.md)."""

import argparse
import json
import math
import os
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import (
    contextualizer_config,
    input_embedder_config,
    read_archive_config,
    read_directory_config,
    representation_dim,
)
from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.config_tree import walk
from allennlp_elmo_c.fasttext.fasttext_source import (
    FASTTEXT_ENV,
    recorded_fasttext_path,
    resolve_fasttext_path,
)
from allennlp_elmo_c.nn.in_batch_softmax import DEFAULT_TEMPERATURE
from allennlp_elmo_c.received.model_directory import WEIGHTS_FILE
from allennlp_elmo_c.received.limits import MAX_CONFIG_BYTES
from allennlp_elmo_c.received.received_json import parse_received_json, read_received_json
from allennlp_elmo_c.received.received_model import is_subword_config, unreadable_archive
from allennlp_elmo_c.received.received_weights import safetensors_header, weights_table
from allennlp_elmo_c.received.safe_extract import open_checked_archive
from allennlp_elmo_c.received.limits import printable

WEIGHTS_NAME = "weights.th"
METRICS_NAME = "metrics.json"
LOSS_NAMES = {"cosine": "cosine", "vmf": "vMF", "l2": "L2", "in_batch_softmax": "in-batch softmax"}


def describe_archive(archive_file: str) -> Dict[str, Any]:
    """Everything `describe` prints about `archive_file`, as a JSON-serialisable dict."""
    if not Path(archive_file).exists():
        raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
    config = read_archive_config(archive_file)
    model = config["model"]
    contextualizer = contextualizer_config(config)
    lstm_layers = int(contextualizer["num_layers"])
    output_dim = representation_dim(config)
    input_embedder = input_embedder_config(config)[1]
    stored, training = _read_members(archive_file)
    fasttext = _fasttext(config, archive_file)
    parameters, counted_from = _trainable_parameters(archive_file, config, stored)
    return {
        "archive": archive_file,
        "model_type": model["type"],
        "output_head": _output_head(model.get("output_head", {})),
        "input_embedder": input_embedder.get("type"),
        "subword_bilm": is_subword_config(config),
        "contextualizer": contextualizer.get("type"),
        "output_dim": output_dim,
        "projection_size": int(contextualizer["projection_size"]),
        # As ElmoC.layers() returns them: the input projection + each LSTM layer.
        "num_layers": lstm_layers + 1,
        "lstm_layers": lstm_layers,
        "cell_size": int(contextualizer["cell_size"]),
        "fasttext": fasttext,
        "trainable_parameters": parameters,
        "parameters_counted_from": counted_from,
        "training": None if training is None else {"epochs": None, "training_duration": None,
                                                   "tokens_seen": None, **training},
        "training_precision": model.get("precision", "float32"),
        "config_snippet": downstream_snippet(config, archive_file),
    }


def _read_members(archive_file: str) -> Tuple[int, Optional[Dict[str, Any]]]:
    """The number of values the weights store (memory-mapped or from a header, not read) and
    the training record (`run_record`) of the archive's `metrics.json`, else of the one beside
    it, or the one `package` wrote into a model directory."""
    if Path(archive_file).is_dir():
        where = f"model directory {archive_file}: {WEIGHTS_FILE}"
        header = safetensors_header(Path(archive_file) / WEIGHTS_FILE, where)
        training = read_directory_config(archive_file).get("training") or None
        return sum(math.prod(shape) for _, shape, _, _ in header.values()), training
    stored = metrics = None
    try:
        with (
            open_checked_archive(archive_file) as (archive, members),
            tempfile.TemporaryDirectory() as directory,
        ):
            for member in members:
                if member.name == METRICS_NAME:
                    data = archive.extractfile(member).read(MAX_CONFIG_BYTES + 1)  # type: ignore[union-attr]
                    where = f"{archive_file}: {METRICS_NAME}"
                    metrics = _metrics(parse_received_json(data, where, MAX_CONFIG_BYTES), where)
                elif member.name == WEIGHTS_NAME:
                    archive.extract(member, directory, filter="data")
                    where = f"{archive_file}: {WEIGHTS_NAME}"
                    table = weights_table(Path(directory) / WEIGHTS_NAME, where)
                    stored = sum(math.prod(tensor.shape) for tensor in table.values())
    except (tarfile.TarError, EOFError, OSError, ValueError, RuntimeError) as error:
        raise unreadable_archive(archive_file, error) from error
    if stored is None:
        raise ConfigurationError(f"ELMo-C archive {archive_file} has no {WEIGHTS_NAME}")
    beside = Path(archive_file).parent / METRICS_NAME
    if metrics is None and beside.is_file():
        try:
            metrics = _metrics(read_received_json(beside, str(beside), MAX_CONFIG_BYTES), "-")
        except ConfigurationError:
            metrics = None
    return stored, None if metrics is None else run_record(metrics)


def _metrics(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where} is not a JSON object of metrics; remove or fix it")
    return value


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def run_record(metrics: Dict[str, Any]) -> Dict[str, Any]:
    """What a run's `metrics.json` says of its training: `epochs`, `training_duration`,
    `tokens_seen` (the `tokens_seen` callback's) and `best_validation` (with its epoch)."""
    record: Dict[str, Any] = {}
    if is_count(metrics.get("epoch")):  # AllenNLP's index of the last epoch, from 0
        record["epochs"] = metrics["epoch"] + 1
    if isinstance(metrics.get("training_duration"), str):
        record["training_duration"] = metrics["training_duration"]
    if is_count(metrics.get("tokens_seen")):
        record["tokens_seen"] = metrics["tokens_seen"]
    best = {key[len("best_validation_"):]: value for key, value in metrics.items()
            if key.startswith("best_validation_") and isinstance(value, (int, float))
            and not isinstance(value, bool)}  # fmt: skip
    if best and is_count(metrics.get("best_epoch")):
        record["best_validation"] = dict(best, epoch=metrics["best_epoch"] + 1)
    return record


def tokens_seen_text(training: Dict[str, Any]) -> str:
    if not is_count(training.get("tokens_seen")):
        return "not recorded (the run's trainer had no `tokens_seen` callback)"
    return f"{training['tokens_seen']:,} (the positions each direction was trained to predict)"


def _output_head(head: Dict[str, Any]) -> Dict[str, Any]:
    kind = head.get("type")
    description = {"type": kind}
    if kind == "continuous":
        loss = head.get("loss", "cosine")
        description["loss"] = loss
        name = f"{LOSS_NAMES.get(loss, loss)} loss"
        if loss == "in_batch_softmax":
            description["temperature"] = head.get("temperature", DEFAULT_TEMPERATURE)
            name += f", temperature {description['temperature']}"
        description["text"] = f"continuous ({name}, predicts fastText vectors)"
    else:
        description["text"] = str(kind)
    return description


def _fasttext(config: Dict[str, Any], archive_file: str) -> Dict[str, Any]:
    """The recorded fastText path and where it resolves now (`fasttext_source`'s order)."""
    recorded = recorded_fasttext_path(config, archive_file)
    found = {"recorded": recorded, "resolved": None, "resolves": None}
    if recorded is None:
        return {**found, "text": "none (reads no fastText)"}
    try:
        resolved = resolve_fasttext_path(recorded, archive_file)
    except ConfigurationError as error:
        text = f"{recorded} (recorded); NOT FOUND now: {error}"
        return {**found, "resolves": False, "text": text}
    how = (
        f"${FASTTEXT_ENV}" if resolved == os.environ.get(FASTTEXT_ENV)
        else "the recorded path" if resolved == recorded
        else "beside the archive"
    )  # fmt: skip
    text = f"{recorded} (recorded); resolves now to {resolved} ({how})"
    return {**found, "resolved": resolved, "resolves": True, "text": text}


def _stores_frozen_parameters(config: Any) -> bool:
    """Whether a config has parts whose stored tensors are not all trainable (a frozen or tied
    softmax embedding, a frozen char-CNN or embedding). The fastText matrices are never stored."""
    return any(_is_frozen(node) for _, _, node in walk(config) if isinstance(node, dict))


def _is_frozen(node: Dict[str, Any]) -> bool:
    if node.get("freeze_output_embedding") and node.get("output_embedding_fasttext") is None:
        return True
    if node.get("tie_input_embedding") or node.get("trainable") is False:
        return True
    return node.get("type") == "elmo_char_cnn" and not node.get("requires_grad", False)


def _trainable_parameters(
    archive_file: str, config: Dict[str, Any], stored: Optional[int]
) -> Tuple[int, str]:
    if not _stores_frozen_parameters(config["model"]):
        return stored, (  # type: ignore[return-value]
            f"the tensors of {WEIGHTS_NAME}, without building the model (frozen fastText "
            "matrices are not stored)"
        )
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM

    try:
        model = PretrainedBiLM.from_archive(archive_file).model
    except ConfigurationError as error:
        return stored, (  # type: ignore[return-value]
            f"the tensors of {WEIGHTS_NAME}, an upper bound: the config freezes some stored "
            f"parameters and the model could not be loaded ({error})"
        )
    return sum(p.numel() for p in model.parameters() if p.requires_grad), (
        "the loaded model (its config freezes some stored parameters)"
    )


def downstream_snippet(config: Dict[str, Any], archive_file: str) -> Dict[str, Any]:
    """The indexer and embedder (key `elmo`) that feed the biLM of `config` (an archive's
    config.json) in a downstream config, as `describe` prints them and `convert-config` writes
    them."""
    input_key, input_embedder = input_embedder_config(config)
    reader = config.get("dataset_reader", {})
    if is_subword_config(config):
        indexer = {"type": "bpe_first_subword",
                   "tokenizer_path": reader.get("tokenizer", {}).get("tokenizer_path"),
                   "vocabulary": archive_file}  # fmt: skip
    elif input_embedder.get("type") == "fasttext":
        indexer = {"type": "fasttext_subwords", "archive_file": archive_file}
    else:  # the pretraining reader's own indexer (elmo_characters, single_id, ...)
        indexer = reader.get("token_indexers", {}).get(input_key, {})
    embedder = {"type": "elmo_c_token_embedder", "archive_file": archive_file,
                "expected_output_dim": representation_dim(config), "do_layer_norm": False,
                "dropout": 0.5}  # fmt: skip
    return {"token_indexers": {"elmo": indexer}, "token_embedders": {"elmo": embedder}}


def precision_text(precision: str) -> str:
    """The `elmo_c` model's `precision`, in words (`describe`, the model card)."""
    if precision == "bfloat16":
        return ("bfloat16 mixed precision (bfloat16 matrix products, float32 weights and cell "
                "state); it embeds in float32 like any biLM")  # fmt: skip
    return precision


def format_description(info: Dict[str, Any]) -> str:
    """`describe`'s text: every value read from the received files printed with its control
    characters escaped and cut (`received.limits.printable`); the snippet lines as JSON."""
    shown = printable
    training = info["training"]
    if training is None:
        run = "no metrics.json in or beside the archive"
        tokens = "unknown (no metrics.json)"
    else:
        run = (
            f"{shown(training['training_duration'])} over {shown(training['epochs'])} epoch(s) "
            "(metrics.json)"
        )
        tokens = tokens_seen_text(training)
    snippet = info["config_snippet"]
    lines = [
        f"ELMo-C biLM archive {shown(info['archive'], 1000)}",
        f"  model:                {shown(info['model_type'])}, output head "
        f"{shown(info['output_head']['text'])}",
        f"  input embedder:       {shown(info['input_embedder'])}"
        + (" (BPE subwords)" if info["subword_bilm"] else ""),
        f"  representation size:  {info['output_dim']} "
        f"(2 x projection_size {info['projection_size']})",
        f"  layers:               {info['num_layers']} (input projection + {info['lstm_layers']} "
        "LSTM layers, forward || backward)",
        f"  cell size:            {info['cell_size']}",
        f"  fastText model:       {shown(info['fasttext']['text'], 1000)}",
        f"  trainable parameters: {info['trainable_parameters']:,} (counted from "
        f"{shown(info['parameters_counted_from'], 1000)})",
        f"  training time:        {run}",
        f"  tokens seen:          {tokens}",
        f"  trained in:           {shown(precision_text(info['training_precision']))}",
        "",
        "Paste into a downstream config (the environment, and the reader / text_field_embedder):",
        f"ELMO_C_DIM={info['output_dim']}",
        # json.dumps escapes every control character (ensure_ascii: every non-ASCII one too).
        f"token_indexers: {json.dumps(snippet['token_indexers'])}",
        f"token_embedders: {json.dumps(snippet['token_embedders'])}",
    ]
    return "\n".join(lines)


@Subcommand.register("describe")
class Describe(PluginSubcommand):
    description = (
        "Describe a pretrained biLM archive (sizes, output head, fastText model, parameters, "
        "training) and print the lines for a downstream config."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "archive_file", type=str, help="model.tar.gz or model directory of an elmo_c model"
        )
        subparser.add_argument("--json", action="store_true", help="machine-readable output")

    def run(self, args: argparse.Namespace) -> None:
        info = describe_archive(args.archive_file)
        print(json.dumps(info, indent=2) if args.json else format_description(info))

