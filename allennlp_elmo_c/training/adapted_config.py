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
    A config whose model is `{"type": "from_archive", "archive_file": A}` (continued
    pretraining) with A's `model` and dataset readers in place, so that it loads the run's
    weights without A; any other config unchanged.
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
    At the end of training, before it is archived, rewrites the run's config.json with
    `standalone_config`: the adapted archive is an ordinary `elmo_c` one. (At the end only:
    `--recover` compares the config it is given with config.json.)
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
