import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List

from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import CONFIG_NAME
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.archive import checked_fasttext, read_archive_config
from allennlp_elmo_c.common.atomic import atomic_open, link_or_copy
from allennlp_elmo_c.fasttext.fasttext_bin import FastTextBin
from allennlp_elmo_c.fasttext.fasttext_source import (
    absolute_config_paths,
    bundled_name,
    component_nodes,
    record_fingerprints,
    recorded_fasttext_path,
)
from allennlp_elmo_c.training.run_info import record_hardware

logger = logging.getLogger(__name__)


@TrainerCallback.register("elmo_c_run")
class ElmoCRun(TrainerCallback):
    """
    When training ends, before `allennlp train` archives the run: appends the machine to
    `hardware.json` (`run_info`), and after a finished run `record_run_files` (at the end only:
    `--recover` compares the config it is given with config.json).
    """

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if not is_primary:
            return
        record_hardware(self.serialization_dir)
        if metrics is not None:
            record_run_files(self.serialization_dir)


def record_run_files(serialization_dir: str) -> List[str]:
    """Rewrites the run's config.json with absolute fastText paths and fingerprints (so that
    the archive works from anywhere and refuses another `.bin`), and `bundle_fasttext`s."""
    path = Path(serialization_dir) / CONFIG_NAME
    config = json.loads(path.read_text(encoding="utf-8"))
    changed = absolute_config_paths(config) + record_fingerprints(config)
    changed += _record_indexer_fingerprints(config)
    if changed:
        with atomic_open(path) as stream:
            json.dump(config, stream, indent=4)
        logger.info("%s: fastText paths and fingerprints recorded (%d)", path, len(changed))
    return bundle_fasttext(config, serialization_dir)


def _record_indexer_fingerprints(config: Dict[str, Any]) -> List[Any]:
    """`record_fingerprints` for `fasttext_subwords` indexers given a biLM (`archive_file`), so
    that they find the task archive's bundled copy once the biLM is gone."""
    changed = []
    for key, node in component_nodes(config, ("fasttext_subwords",)):
        archive_file = node.get("archive_file")
        if "fingerprint" in node or not isinstance(archive_file, str):
            continue
        if not os.path.exists(archive_file):
            continue
        _, fingerprint = checked_fasttext(read_archive_config(archive_file), archive_file)
        if fingerprint is not None:
            node["fingerprint"] = fingerprint
            changed.append((key, fingerprint))
    return changed


def bundle_fasttext(config: Dict[str, Any], serialization_dir: str) -> List[str]:
    """Links (or copies) the fastText `.bin` of the biLM of every `elmo_c_token_embedder`
    (unless `bundle_fasttext: false`) to `fasttext/<fingerprint>.bin` in the run, which the
    configs' `include_in_archive` puts into a task archive; returns their names. A biLM that
    cannot be read is skipped, warned."""
    names: List[str] = []
    for key, node in component_nodes(config, ("elmo_c_token_embedder",)):
        if not node.get("bundle_fasttext", True) or not isinstance(node.get("archive_file"), str):
            continue
        try:
            bilm_config = read_archive_config(node["archive_file"])
            if recorded_fasttext_path(bilm_config, node["archive_file"]) is None:
                continue  # a biLM over BPE subwords or a char-CNN: no fastText
            path, fingerprint = checked_fasttext(
                bilm_config, node["archive_file"], node.get("fasttext_path")
            )
        except ConfigurationError as error:
            logger.warning("%s: its fastText model is not bundled in the archive (%s)", key, error)
            continue
        if fingerprint is None:
            fingerprint = FastTextBin.load(path).fingerprint
        name = bundled_name(fingerprint)
        target = Path(serialization_dir) / name
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(path, target)
        if name not in names:
            names.append(name)
    return names
