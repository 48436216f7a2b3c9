"""
Where a biLM archive's fastText `.bin` is found when the archive is used (`resolve_fasttext_path`):
the explicit argument (`fasttext_path`, `--fasttext-path`); the copy a task archive bundles; the
file `ELMO_C_FASTTEXT` names; the path recorded in the config (training records it absolute);
the file of that name beside the archive. A `fasttext` embedder or `fasttext_subwords` indexer
built from an archived config whose `model_path` does not exist resolves it likewise
(`resolve_missing_fasttext`); else a `ConfigurationError` lists every place tried.
"""

import contextlib
import contextvars
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_tree import join_key, lookup_dotted, walk
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin

logger = logging.getLogger(__name__)

FASTTEXT_ENV = "ELMO_C_FASTTEXT"
FASTTEXT_KEYS = ("model_path", "output_embedding_fasttext")
FASTTEXT_COMPONENTS = ("fasttext", "fasttext_subwords")
ARGUMENT_HINT = (
    "fasttext_path (elmo_c_token_embedder, ElmoC; --fasttext-path of elmo-c-embed)"
)


def recorded_fasttext_paths(config: Dict[str, Any]) -> Dict[str, str]:
    """Every fastText path of an archived config, by its dotted override key."""
    return {path: value for path, key, value in walk(config)
            if key in FASTTEXT_KEYS and isinstance(value, str)}  # fmt: skip



def absolute_config_paths(
    config: Dict[str, Any], keep: Optional[Dict[str, Any]] = None
) -> List[Tuple[str, str, str]]:
    """
    Makes absolute, in place, the relative paths of existing files the biLM reads, except those
    `keep` (a recovered run's config) has at the same key; returns `(dotted key, old, new)`.
    """
    changed: List[Tuple[str, str, str]] = []

    def rewrite(node: Dict[str, Any], key: str, path: str) -> None:
        value = node[key]
        if not isinstance(value, str) or os.path.isabs(value) or not Path(value).is_file():
            return
        if keep is not None and lookup_dotted(keep, path) == value:
            return
        node[key] = os.path.abspath(value)
        changed.append((path, value, node[key]))

    for path, _, node in walk(config):
        if not isinstance(node, dict):
            continue
        for key in list(node):
            if (key == "model_path" and node.get("type") in FASTTEXT_COMPONENTS) or (
                key in ("output_embedding_fasttext", "fasttext_path", "nearest_neighbour_words")
            ):
                rewrite(node, key, join_key(path, key))
    return changed


def component_nodes(config: Any, types: Tuple[str, ...]) -> List[Tuple[str, Dict[str, Any]]]:
    """`(dotted key, node)` of every component of a config whose `type` is one of `types`."""
    return [(path, node) for path, _, node in walk(config)
            if isinstance(node, dict) and node.get("type") in types]  # fmt: skip


def record_fingerprints(
    config: Dict[str, Any], keep: Optional[Dict[str, Any]] = None
) -> List[Tuple[str, int]]:
    """
    Adds, in place, the `fingerprint` of its `.bin` to every fastText component of `config` whose
    `model_path` exists, except those `keep` has without one; returns `(dotted key, fingerprint)`.
    """
    changed: List[Tuple[str, int]] = []
    for key, node in component_nodes(config, FASTTEXT_COMPONENTS):
        path = node.get("model_path")
        if "fingerprint" in node or not isinstance(path, str) or not Path(path).is_file():
            continue
        if keep is not None and lookup_dotted(keep, key + ".fingerprint") is None:
            continue
        node["fingerprint"] = FastTextBin.load(path).fingerprint
        changed.append((key, node["fingerprint"]))
    return changed


def trained_with(fingerprint: int) -> str:
    """The file a recorded fingerprint is known as in this process, for messages."""
    path = FastTextBin.path_of(fingerprint)
    return path if path is not None else "the .bin whose fingerprint the config records"


def check_fingerprint(path: str, expected: int, trained_with: str) -> None:
    """Refuses, naming both files, a `.bin` at `path` whose fingerprint is not `expected`."""
    found = FastTextBin.load(path).fingerprint
    if found != expected:
        raise ConfigurationError(
            f"fastText model {path} is not the one this model was trained with ({trained_with}, "
            f"fingerprint {expected}; this file's is {found}): its vectors and subword rows would "
            "silently be other ones. Give the .bin it was trained with, or unset the variable or "
            "argument that points at this one."
        )


# The archive being loaded (`loading_archive`) and the directory it is extracted to.
_LOADING_ARCHIVE: contextvars.ContextVar[Tuple[Optional[str], Optional[str]]] = (
    contextvars.ContextVar("elmo_c_loading_archive", default=(None, None))
)
# Where a task archive keeps the fastText models it reads: `fasttext/<fingerprint>.bin`.
BUNDLE_DIR = "fasttext"


def bundled_name(fingerprint: int) -> str:
    """The name, in an archive or run directory, of a bundled fastText model."""
    return f"{BUNDLE_DIR}/{fingerprint}.bin"


@contextlib.contextmanager
def loading_archive(archive_file: Optional[str], extracted: Optional[str] = None) -> Iterator[None]:
    """While inside, a missing fastText `.bin` is also looked for beside `archive_file` and among
    the files bundled in it (extracted to `extracted`)."""
    local = (
        str(archive_file) if archive_file is not None and Path(archive_file).is_file() else None
    )
    token = _LOADING_ARCHIVE.set((local, extracted))
    try:
        yield
    finally:
        _LOADING_ARCHIVE.reset(token)


def archive_being_loaded() -> Optional[str]:
    """The directory the archive being loaded (`loading_archive`) is extracted to, if any."""
    return _LOADING_ARCHIVE.get()[1]


def bundled_fasttext(fingerprint: Optional[int]) -> Optional[str]:
    """The copy of the `.bin` of `fingerprint` that the archive being loaded bundles, if any."""
    if fingerprint is None:
        return None
    archive_file, extracted = _LOADING_ARCHIVE.get()
    places = [extracted, str(Path(archive_file).parent) if archive_file else None]
    for place in filter(None, places):
        path = Path(place) / bundled_name(fingerprint)
        if path.is_file():
            return str(path)
    return None


def resolve_missing_fasttext(
    model_path: str, component: str, fingerprint: Optional[int] = None
) -> str:
    """The bundled copy, else `model_path` if it exists, else `$ELMO_C_FASTTEXT`, else the file
    of that name beside the archive being loaded (with a warning)."""
    bundled = bundled_fasttext(fingerprint)
    if bundled is not None:
        logger.info("%s: fastText model %s: using the archive's copy", component, model_path)
        return bundled
    if Path(model_path).is_file():
        return model_path
    tried = [f"{model_path} (model_path of the {component}, from {Path.cwd()})"]
    from_environment = os.environ.get(FASTTEXT_ENV)
    if from_environment:
        if Path(from_environment).is_file():
            logger.warning(
                "%s: fastText model %s does not exist; using $%s = %s",
                component, model_path, FASTTEXT_ENV, from_environment,
            )  # fmt: skip
            return from_environment
        tried.append(f"{from_environment} (${FASTTEXT_ENV})")
    else:
        tried.append(f"${FASTTEXT_ENV} (not set)")
    archive_file, extracted = _LOADING_ARCHIVE.get()
    overrides = '\'{"<key>.model_path": "/path/to/model.bin", ...}\''
    if archive_file is not None:
        beside = Path(archive_file).parent / Path(model_path).name
        if beside.is_file():
            logger.warning(
                "%s: fastText model %s does not exist; using %s beside the archive %s",
                component, model_path, beside, archive_file,
            )  # fmt: skip
            return str(beside)
        tried.append(f"{beside} (beside the archive)")
        overrides = _overrides_hint(extracted) or overrides
    else:
        tried.append("beside the archive (unknown: not loading an archive file)")
    raise ConfigurationError(
        f"The {component}'s fastText model was not found; tried {'; '.join(tried)}. Set the "
        f"environment variable {FASTTEXT_ENV} to the .bin (e.g. `{FASTTEXT_ENV}=/path/to/model.bin "
        "allennlp evaluate model.tar.gz ...`), copy it beside the archive under its recorded "
        f"name, or override the archive's fastText paths (`allennlp evaluate/predict ... -o "
        f"{overrides}`)."
    )


def _overrides_hint(extracted: Optional[str]) -> Optional[str]:
    """The `-o` argument that points every fastText path of the archive being loaded elsewhere."""
    try:
        config = json.loads((Path(extracted) / "config.json").read_text(encoding="utf-8"))
    except (TypeError, OSError, ValueError):
        return None
    keys = recorded_fasttext_paths(config) if isinstance(config, dict) else None
    if not keys:
        return None
    return "'" + json.dumps({key: "/path/to/model.bin" for key in keys}) + "'"


def recorded_fasttext_path(config: Dict[str, Any], archive_file: str) -> Optional[str]:
    """The one fastText path an archived config records; `None` if it reads no fastText."""
    paths = set(recorded_fasttext_paths(config).values())
    if len(paths) > 1:
        raise ConfigurationError(
            f"{archive_file} refers to several fastText files ({sorted(paths)}): fasttext_path "
            "cannot say which to replace"
        )
    return next(iter(paths), None)


def resolve_fasttext_path(
    recorded: str,
    archive_file: str,
    fasttext_path: Optional[str] = None,
    fingerprint: Optional[int] = None,
) -> str:
    """The biLM's fastText `.bin`, in the order the module docstring gives."""
    if fasttext_path is not None:
        if not Path(fasttext_path).is_file():
            raise ConfigurationError(
                f"fastText model {fasttext_path} (fasttext_path) does not exist"
            )
        return fasttext_path
    bundled = bundled_fasttext(fingerprint)
    if bundled is not None:
        return bundled
    tried: List[str] = []
    from_environment = os.environ.get(FASTTEXT_ENV)
    if from_environment:
        if Path(from_environment).is_file():
            return from_environment
        tried.append(f"{from_environment} (${FASTTEXT_ENV})")
    if Path(recorded).is_file():
        return recorded
    tried.append(f"{recorded} (recorded in the archive, from {Path.cwd()})")
    beside = Path(archive_file).parent / Path(recorded).name
    if beside.is_file():
        return str(beside)
    tried.append(f"{beside} (beside the archive)")
    raise ConfigurationError(
        f"The fastText model of the biLM {archive_file} was not found; tried {'; '.join(tried)}. "
        f"Give its path as {ARGUMENT_HINT}, set the environment variable {FASTTEXT_ENV}, or "
        f"copy the .bin beside the archive as {beside.name}."
    )
