"""
`allennlp train --recover` reads the run directory's `config.json` (to compare it with the
config given) with `Params.from_file`: AllenNLP evaluates it as jsonnet with every environment
variable as an external variable, so a run directory received from elsewhere could read any file
(`importstr`) or variable (`std.extVar`) into the values it logs, to the terminal and to the
run's own `out.log`, or loop for hours; and AllenNLP then appends to the run's `out.log` and
writes into its `vocabulary/` by name, so a symbolic link there sends those writes into whatever
file it points at. For a run of an ELMo-C config (`is_elmo_c_config` of the config given), the
patched `create_serialization_dir` (which AllenNLP calls before it opens anything in the run)
first refuses a run directory holding a link or anything but regular files and directories
(`check_run_directory`), then reads `config.json` as plain JSON, which is what AllenNLP writes
there (`read_received_json`), and refuses anything else; then AllenNLP's function runs as it is.
Any other run is AllenNLP's.
"""

import os

from allennlp.models.archival import CONFIG_NAME
from allennlp.training import util as training_util

from allennlp_elmo_c.received.received_config import is_elmo_c_config
from allennlp_elmo_c.received.received_json import read_received_json
from allennlp_elmo_c.received.run_directory import check_run_directory

# AllenNLP's function, kept so that its test can show the patch is still needed.
ORIGINAL = training_util.create_serialization_dir


def _create_serialization_dir(params, serialization_dir, recover: bool, force: bool) -> None:
    config = os.path.join(serialization_dir, CONFIG_NAME)
    if recover and is_elmo_c_config(params.as_dict(quiet=True)):
        check_run_directory(serialization_dir)
        if os.path.isfile(config):
            read_received_json(config, f"run directory {serialization_dir}: {CONFIG_NAME}")
    ORIGINAL(params, serialization_dir, recover, force)


def apply() -> None:
    """Replaces `create_serialization_dir` (once)."""
    if training_util.create_serialization_dir is _create_serialization_dir:
        return
    _create_serialization_dir.__doc__ = ORIGINAL.__doc__
    training_util.create_serialization_dir = _create_serialization_dir
