"""Build-once outputs: a directory of files and a `manifest.json`, written last, of what they
were built from."""

import json
from pathlib import Path
from typing import Any, Dict, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_open

MANIFEST = "manifest.json"


def corpus_recipe(corpus: Path, command: str) -> Dict[str, Any]:
    """The recipe entries of a non-empty `corpus` file (path, size, modification time), so that a
    build from it is redone when it changes."""
    if not corpus.is_file():
        raise ConfigurationError(f"{command}: corpus {corpus} does not exist")
    stat = corpus.stat()
    if stat.st_size == 0:
        raise ConfigurationError(f"{command}: corpus {corpus} is empty")
    return {
        "corpus": str(corpus.resolve()),
        "corpus_size": stat.st_size,
        "corpus_mtime_ns": stat.st_mtime_ns,
    }


def is_built(directory: Union[str, Path], recipe: Dict[str, Any], name: str = MANIFEST) -> bool:
    """True if `directory` holds a complete build made from exactly `recipe`."""
    manifest = Path(directory) / name
    try:
        content = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if content.get("recipe") != recipe:
        return False
    return all((Path(directory) / name).is_file() for name in content.get("files", []))


def write_manifest(
    directory: Union[str, Path], recipe: Dict[str, Any], stats: Dict[str, Any], name: str = MANIFEST
) -> None:
    """Records a finished build; `stats["files"]` names the files that must exist for it."""
    files = sorted(stats.get("files", {}))
    with atomic_open(Path(directory) / name) as out:
        json.dump({"recipe": recipe, "files": files, "stats": stats}, out, indent=2, sort_keys=True)

