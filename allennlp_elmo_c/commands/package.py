"""`package`: a trained biLM as one self-contained model directory (docs/using-a-model.md),
written under a temporary name and renamed into place."""

import argparse
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Optional

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import is_model_directory, read_directory_config
from allennlp_elmo_c.commands.describe import is_count, precision_text, run_record, tokens_seen_text
from allennlp_elmo_c.commands.subcommand import PluginSubcommand
from allennlp_elmo_c.common.atomic import fsync_directory, link_or_copy
from allennlp_elmo_c.common.config_tree import lookup_dotted
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.fasttext.fasttext_source import recorded_fasttext_paths
from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
from allennlp_elmo_c.received.contained_files import copy_regular_file
from allennlp_elmo_c.received.model_directory import (
    DIRECTORY_FORMAT,
    FIXED_FILES,
    HUGGING_FACE_FILES,
    MODEL_CARD,
    MODEL_TYPE,
    VOCABULARY_DIR,
    WEIGHTS_FILE,
    write_checksums,
)
from allennlp_elmo_c.received.received_json import read_received_json
from allennlp_elmo_c.received.limits import printable

logger = logging.getLogger(__name__)

ARCHIVE_NAME = "model.tar.gz"


def package_model(source: str, output: str, copy: bool = False) -> Path:
    """
    Writes the model directory of `source` (a training run directory, its `model.tar.gz`, or a
    model directory) to `output`, which must not exist or be empty, and returns
    its path. `copy` copies the fastText `.bin` where a hard link would do.
    """
    archive, run_dir = _locate(Path(source))
    target = Path(output)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigurationError(f"package: {target} exists; choose a new directory")
    bilm = PretrainedBiLM.from_archive(str(archive))
    config = bilm.config
    assert config is not None  # read from an archive or directory
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        files = _copy_files(bilm, config, staging, copy)
        stored = _relative_config(config, files)
        _save_weights(bilm, staging / WEIGHTS_FILE)
        bilm.vocab.save_to_files(str(staging / VOCABULARY_DIR))
        training = _training_record(config, run_dir, archive)
        directory_config = _directory_config(bilm, stored, files, training)
        (staging / "config.json").write_text(
            json.dumps(directory_config, indent=2), encoding="utf-8"
        )
        (staging / MODEL_CARD).write_text(model_card(directory_config, bilm), encoding="utf-8")
        write_checksums(staging)
        fsync_directory(staging)
        os.replace(staging, target)  # onto an empty directory, if any
        fsync_directory(target.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("packaged %s as %s", archive, target)
    return target


def _locate(source: Path):
    """The archive or model directory to read, and the training run's directory if known."""
    if is_model_directory(str(source)):
        return source, None
    if source.is_dir():
        archive = source / ARCHIVE_NAME
        if not archive.is_file():
            raise ConfigurationError(
                f"package: {source} is neither a training run (no {ARCHIVE_NAME}) nor a model "
                "directory"
            )
        return archive, source
    if not source.is_file():
        raise ConfigurationError(f"package: {source} does not exist")
    run_dir = source.parent if (source.parent / "config.json").is_file() else None
    return source, run_dir


def _copy_files(bilm: PretrainedBiLM, config: Dict[str, Any], staging: Path, copy: bool):
    """The biLM's files (its fastText `.bin`, a BPE tokenizer) in the directory, by kind."""
    files: Dict[str, str] = {}
    sources: Dict[str, str] = {}
    if bilm.fasttext_path is not None:
        sources["fasttext"] = bilm.fasttext_path
    tokenizer = config.get("dataset_reader", {}).get("tokenizer") or {}
    if tokenizer.get("tokenizer_path"):
        sources["tokenizer"] = str(
            getattr(bilm.tokenizer, "tokenizer_path", tokenizer["tokenizer_path"])
        )
    for kind, path in sources.items():
        name = Path(path).name
        if name in files.values() or name in FIXED_FILES or name in HUGGING_FACE_FILES:
            name = f"{kind}-{name}"
        # A model directory's own files are copied as regular files only (never through a link).
        copier = copy_regular_file if Path(bilm.archive_file).is_dir() else link_or_copy
        copier(path, staging / name, link=not copy)
        files[kind] = name
    return files


def _relative_config(config: Dict[str, Any], files: Dict[str, str]) -> Dict[str, Any]:
    """The biLM config to store: its files by their names in the directory."""
    stored = json.loads(json.dumps(config))
    if "fasttext" in files:
        for dotted in recorded_fasttext_paths(stored):
            parent, _, key = dotted.rpartition(".")
            (lookup_dotted(stored, parent) if parent else stored)[key] = files["fasttext"]
    if "tokenizer" in files:
        stored["dataset_reader"]["tokenizer"]["tokenizer_path"] = files["tokenizer"]
    stored.get("model", {}).pop("nearest_neighbour_words", None)
    return stored


def _save_weights(bilm: PretrainedBiLM, path: Path) -> None:
    import safetensors.torch

    # Copies: safetensors refuses views and tensors that share memory (tied weights).
    state = {name: tensor.detach().clone().contiguous()
             for name, tensor in bilm.model.state_dict().items()}  # fmt: skip
    # Not safetensors' save_file: it creates the file with mode 0600.
    data = safetensors.torch.save(state, metadata={"format": "pt"})
    with open(path, "wb") as weights:
        weights.write(data)


def _training_record(
    config: Dict[str, Any], run_dir: Optional[Path], archive: Path
) -> Dict[str, Any]:
    """What the run directory says of the training (corpus manifest, `run_record` of its
    metrics, hardware), each file checked to the shape the run writes; of a model directory,
    its own record, checked the same way."""
    record: Dict[str, Any] = {"train_data_path": config.get("train_data_path")}
    if run_dir is None:
        if not is_model_directory(str(archive)):
            return record
        received = read_directory_config(str(archive)).get("training", {})
        return _checked_record(dict(received, **record), f"model directory {archive}: config.json")
    manifest = _corpus_manifest(config.get("train_data_path"))
    if manifest is not None:
        record["corpus"] = manifest
    record.update(run_record(_run_file(run_dir / "metrics.json", dict) or {}))
    hardware = _run_file(run_dir / "hardware.json", list)
    if hardware:
        record["hardware"] = hardware
    return _checked_record(record, f"training run {run_dir}")


def _corpus_manifest(train_data_path: Any) -> Optional[Dict[str, Any]]:
    """The sources and stats of the corpus's `manifest.json`, if any."""
    if not isinstance(train_data_path, str):
        return None
    manifest = _run_file(Path(train_data_path).parent / "manifest.json", dict)
    if not manifest:
        return None
    recipe = manifest.get("recipe") if isinstance(manifest.get("recipe"), dict) else {}
    sources = recipe.get("sources")
    if sources is None and isinstance(recipe.get("source"), str):
        sources = [{"name": recipe["source"]}]
    return {"sources": sources or [], "stats": manifest.get("stats", {})}


MAX_RECORD_BYTES = 1 << 20
_SCALARS = (str, int, float, bool, type(None))


def _run_file(path: Path, kind: type) -> Any:
    """A run's JSON record of `kind`, `None` if absent; a link, anything but a regular file, or
    another JSON shape is a `ConfigurationError`."""
    if not os.path.lexists(path):
        return None
    where = f"package: {path}"
    value = read_received_json(path, where, MAX_RECORD_BYTES, follow_links=False)
    if not isinstance(value, kind):
        raise ConfigurationError(
            f"{where} holds a JSON {type(value).__name__}, not the {kind.__name__} a training run "
            "writes; remove or fix it"
        )
    return value


def _checked_record(record: Dict[str, Any], where: str) -> Dict[str, Any]:
    """`record`, if of the shape `_training_record` makes; else a `ConfigurationError`."""
    problem = _record_problem(record)
    if problem:
        raise ConfigurationError(f"package: {where}: {printable(problem)}; remove or fix it")
    return record


def _record_problem(record: Any) -> Optional[str]:
    if not isinstance(record, dict):
        return "is not a JSON object"
    hardware = record.get("hardware", [])
    if not isinstance(hardware, list) or not all(_is_flat(session) for session in hardware):
        return "hardware is not a list of objects of plain values (as hardware.json holds)"
    corpus = record.get("corpus", {})
    sources = corpus.get("sources", []) if isinstance(corpus, dict) else None
    if not isinstance(sources, list) or not all(_is_flat(source) for source in sources):
        return "corpus.sources is not a list of objects of plain values (as manifest.json holds)"
    if not isinstance(corpus.get("stats", {}), dict):
        return "corpus.stats is not an object"
    for key in ("epochs", "tokens_seen"):
        if key in record and not is_count(record[key]):
            return f"{key} is not a count"
    if not isinstance(record.get("best_validation", {}), dict):
        return "best_validation is not an object"
    return None


def _is_flat(value: Any) -> bool:
    """Whether `value` is an object of scalars and lists of scalars."""
    return isinstance(value, dict) and all(
        isinstance(item, _SCALARS)
        or (isinstance(item, list) and all(isinstance(x, _SCALARS) for x in item))
        for item in value.values()
    )


def _directory_config(
    bilm: PretrainedBiLM, stored: Dict[str, Any], files: Dict[str, str], training: Dict[str, Any]
) -> Dict[str, Any]:
    parameters = sum(p.numel() for p in bilm.model.parameters())
    fasttext = None
    if bilm.fasttext_path is not None:
        model = FastTextBin.load(bilm.fasttext_path)
        fasttext = {"file": files["fasttext"], "fingerprint": model.fingerprint, "dim": model.dim,
                    "words": len(model.words), "source": bilm.fasttext_path}  # fmt: skip
    return {
        "model_type": MODEL_TYPE,
        "architectures": ["ElmoCModel"],
        "elmo_c_format": DIRECTORY_FORMAT,
        "hidden_size": bilm.get_output_dim(),
        "num_hidden_layers": bilm.num_layers,
        "parameters": parameters,
        "files": files,
        "fasttext": fasttext,
        "packaged": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "training": training,
        "bilm": stored,
    }


def _best_validation(training: Dict[str, Any]) -> str:
    best = dict(training.get("best_validation") or {})
    if not best:
        return "not recorded (the run had no validation data)"
    epoch = best.pop("epoch", None)
    shown = ", ".join(f"{name} {value:.4g}" for name, value in sorted(best.items())
                      if isinstance(value, (int, float)) and "memory" not in name)  # fmt: skip
    return f"epoch {epoch}: {shown}" if epoch is not None else shown


def model_card(config: Dict[str, Any], bilm: PretrainedBiLM) -> str:
    """The directory's README.md."""
    training = config["training"]
    bilm_config = config["bilm"]
    contextualizer = bilm_config["model"].get("contextualizer", {})
    head = bilm_config["model"].get("output_head", {}).get("type", "?")
    lines = [
        "# ELMo-C biLM",
        "",
        "Contextual word representations from a biLM trained with continuous outputs (ELMo-C, "
        "Li et al., TACL 2019), packaged by allennlp-elmo-c. Everything needed to use it is in "
        "this directory.",
        "",
        "## The model",
        "",
        f"- layers: {config['num_hidden_layers']} (the input projection, then each LSTM layer), "
        f"each {config['hidden_size']}-d (forward || backward)",
        f"- contextualizer: {contextualizer.get('type', '?')}, cell "
        f"{contextualizer.get('cell_size', '?')}, "
        f"projection {contextualizer.get('projection_size', '?')}",
        f"- output head (pretraining only): {head}",
        f"- parameters: {config['parameters']:,} (the fastText matrix, frozen and memory-mapped, "
        "is not counted)",
    ]
    if config["fasttext"]:
        fasttext = config["fasttext"]
        lines.append(
            f"- fastText: `{fasttext['file']}`, {fasttext['dim']}-d, {fasttext['words']:,} words, "
            f"fingerprint {fasttext['fingerprint']} (any other .bin is refused)"
        )
    lines += ["", "## Training", ""]
    corpus = training.get("corpus")
    if corpus:
        lines.append("Corpus (from its manifest):")
        for source in corpus["sources"]:
            licence = f"; licence: {source['licence']}" if source.get("licence") else ""
            version = f" {source['version']}" if source.get("version") else ""
            package = ""
            if source.get("package"):
                package = f" ({source.get('registry', '')} {source.get('package', '')}{version})"
            lines.append(f"- {source.get('name', '?')}{package}{licence}")
    else:
        lines.append(f"Corpus: {training.get('train_data_path')} (no manifest found beside it)")
    lines.append("")
    lines += [
        f"- tokens seen: {tokens_seen_text(training)}",
        f"- training time: {training.get('training_duration', 'not recorded')}",
        f"- epochs: {training.get('epochs', 'not recorded')}",
        f"- best validation: {_best_validation(training)}",
        f"- precision: {precision_text(bilm_config['model'].get('precision', 'float32'))}",
    ]
    hardware = training.get("hardware")
    if hardware:
        for session in hardware:
            gpus = ", ".join(session.get("gpus") or []) or "no GPU"
            lines.append(
                f"- hardware: {session.get('cpu')} ({session.get('cpu_cores')} cores, "
                f"{session.get('torch_threads')} torch threads), {gpus}; "
                f"torch {session.get('torch')}"
            )
    return "\n".join(lines) + "\n" + USE_IT


USE_IT = """
## Use it

Give this directory's path (`MODEL` below) wherever a model is asked for; nothing else is needed.

```python
from allennlp_elmo_c import ElmoC, batch_to_ids
elmo = ElmoC(MODEL, num_output_representations=1, dropout=0.0)
vectors = elmo(batch_to_ids([["The", "council", "met"]], elmo))["elmo_representations"][0]
```

- NumPy: `ElmoCEmbedder(MODEL).embed_sentence(tokens)`; HDF5: `python -m allennlp_elmo_c \
elmo-c-embed MODEL input.txt output.hdf5`.
- AllenNLP configs: `{type: 'elmo_c_token_embedder', archive_file: MODEL}` with the indexer
`{type: 'fasttext_subwords', archive_file: MODEL}`; or `python -m allennlp_elmo_c convert-config`
on an ELMo config.
- spaCy: `import allennlp_elmo_c; nlp.add_pipe('elmo_c', config={'model': MODEL})`.
- Hugging Face: `import allennlp_elmo_c; AutoModel.from_pretrained(MODEL)`.

`sha256sum -c checksums.sha256` checks every file.
"""



@Subcommand.register("package")
class Package(PluginSubcommand):
    description = (
        "Write a trained biLM (a run directory, its model.tar.gz or a model directory) as one "
        "self-contained model directory: weights (safetensors), config, fastText .bin, checksums, "
        "model card."
    )

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("source",
                               help="training run directory, model.tar.gz or model directory")
        subparser.add_argument("output", help="the model directory to write")
        subparser.add_argument(
            "--copy", action="store_true",
            help="copy the fastText .bin even where a hard link would do",
        )  # fmt: skip

    def run(self, args: argparse.Namespace) -> None:
        start = time.perf_counter()
        path = package_model(args.source, args.output, copy=args.copy)
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        print(f"{path}: {size / 2**20:.1f} MiB in {time.perf_counter() - start:.1f} s")
