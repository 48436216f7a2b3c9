"""
Where a biLM archive's fastText `.bin` is found when the archive is used, in this order:

1. the explicit argument (`fasttext_path` of `elmo_c_token_embedder`, `ElmoCRepresentations`,
   `PretrainedBiLM.from_archive`; `--fasttext-path` of `elmo-c-embed`);
2. the environment variable `ELMO_C_FASTTEXT`, if it names an existing file (the downstream and
   training configs read the same variable);
3. the path recorded in the archive's config, if it exists (a relative one is relative to the
   current directory, as when the biLM was trained);
4. a file with the recorded file name beside the archive (copy the `.bin` next to
   `model.tar.gz` and the pair works anywhere).

The `fasttext_subwords` indexer built from an archive (`archive_file`) resolves the same way, so
indexer and embedder read the same model.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

from allennlp.common.checks import ConfigurationError

FASTTEXT_ENV = "ELMO_C_FASTTEXT"
FASTTEXT_KEYS = ("model_path", "output_embedding_fasttext")
# How the explicit argument is named in messages (the elmo-c-embed command names its flag only).
ARGUMENT_HINT = (
    "fasttext_path (elmo_c_token_embedder, ElmoCRepresentations; --fasttext-path of elmo-c-embed)"
)


def recorded_fasttext_paths(config: Dict[str, Any]) -> Dict[str, str]:
    """Every fastText path of an archived config, by its dotted override key (input and target
    embedders, indexers, a fastText-initialised output layer)."""
    found: Dict[str, str] = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{prefix}.{key}" if prefix else key
                if key in FASTTEXT_KEYS and isinstance(value, str):
                    found[path] = value
                else:
                    walk(value, path)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{prefix}.{index}")

    walk(config, "")
    return found


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
    recorded: str, archive_file: str, fasttext_path: Optional[str] = None
) -> str:
    """
    The biLM's fastText `.bin` (see the module docstring for the order); a
    `ConfigurationError` listing every place tried if none exists.
    """
    if fasttext_path is not None:
        if not Path(fasttext_path).is_file():
            raise ConfigurationError(f"fastText model {fasttext_path} (fasttext_path) does not exist")
        return fasttext_path
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
