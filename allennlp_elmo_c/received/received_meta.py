"""
An archive's `meta.json` (AllenNLP's version), read as received JSON and checked, then compared
with this AllenNLP's version as AllenNLP does.
"""
import re
from pathlib import Path
from typing import Optional

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Meta, _check_version_compatibility

from allennlp_elmo_c.received import limits
from allennlp_elmo_c.received.received_json import read_received_json
from allennlp_elmo_c.received.shown_text import quoted

META_NAME = "meta.json"
_VERSION = re.compile(r"^\d{1,9}\.\d{1,9}\.[0-9A-Za-z.+\-]{1,40}$")


def read_meta(root: Path, source: str) -> Optional[Meta]:
    """The `meta.json` of the extracted archive `root` (`source` names the archive in messages),
    checked and compared with this AllenNLP's version; `None` if there is none."""
    path = Path(root) / META_NAME
    if not path.exists() and not path.is_symlink():
        return None
    where = f"{source}: {META_NAME}"
    data = read_received_json(path, where, limits.MAX_META_BYTES, follow_links=False)
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, str) or not _VERSION.match(version):
        got = version if isinstance(data, dict) else type(data).__name__
        raise ConfigurationError(
            f"{where}: not AllenNLP's record of its version (an object with a version such as "
            f"'2.10.1'; got {quoted(got, 60)}); remove it, or save the archive again"
        )
    meta = Meta(version=version)
    _check_version_compatibility(source, meta)
    return meta
