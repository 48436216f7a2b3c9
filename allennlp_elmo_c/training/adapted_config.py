import json
import logging
import os
from typing import Any, Dict

from allennlp.models.archival import CONFIG_NAME
from allennlp.training.callbacks.callback import TrainerCallback

from allennlp_elmo_c.common.atomic import atomic_open

from allennlp_elmo_c.archive import read_archive_config

logger = logging.getLogger(__name__)


def standalone_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """
    The config of a run whose model is AllenNLP's `{"type": "from_archive", "archive_file": A}`
    (continued pretraining, `training_config/elmo_c_adapt.jsonnet`) rewritten as an ordinary
    `elmo_c` config: its `model` and dataset readers are the source archive A's, everything else
    (data paths, trainer) stays. The weights of such a run have the source model's parameter
    names, so the rewritten config loads them without A; a config whose model is not
    `from_archive` is returned unchanged.
    """
    model = config.get("model") or {}
    if model.get("type") != "from_archive":
        return config
    source = read_archive_config(model["archive_file"])  # ConfigurationError naming the file
    rewritten = dict(config, model=source["model"], dataset_reader=source["dataset_reader"])
    rewritten.pop("validation_dataset_reader", None)
    if "validation_dataset_reader" in source:
        rewritten["validation_dataset_reader"] = source["validation_dataset_reader"]
    return rewritten


@TrainerCallback.register("adapted_config")
class AdaptedConfigCallback(TrainerCallback):
    """
    At the end of a training run whose model is `from_archive` (continued pretraining of an
    ELMo-C archive), rewrites the serialization directory's config.json with `standalone_config`,
    before `allennlp train` packs it into model.tar.gz: the adapted archive is then an ordinary
    `elmo_c` archive (what `read_archive_config`, `elmo_c_token_embedder`, `elmo-c-embed` and
    the `elmo_c_next_word` predictor read) that no longer needs the source archive. It is
    rewritten at the end only: `allennlp train --recover` compares the config it is given with
    config.json. A run stopped early (Ctrl-C) keeps the `from_archive` config, which AllenNLP's
    `load_archive` loads while the source archive exists.

    Registered as a `TrainerCallback` with name "adapted_config".
    """

    def on_end(self, trainer, metrics=None, epoch=None, is_primary=True, **kwargs) -> None:
        if not is_primary:
            return
        path = os.path.join(self.serialization_dir, CONFIG_NAME)
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
        rewritten = standalone_config(config)
        if rewritten is config:
            return
        with atomic_open(path) as file:
            json.dump(rewritten, file, indent=4)
        logger.info("%s: model and reader of %s written in", path, config["model"]["archive_file"])
