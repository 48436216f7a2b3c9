"""
Defaults for the environment variables our configs read with `std.extVar`. Jsonnet has no
default for an unset external variable (`std.extVar` of one is an error), and AllenNLP passes the
environment as the external variables; importing this package makes AllenNLP's
`Params.from_file` (every `allennlp` command, `--include-package allennlp_elmo_c` or
`.allennlp_plugins`) see these defaults wherever the environment does not set the variable. The
environment itself is not changed, and an explicit `ext_vars` or environment value always wins.
"""

import logging
from typing import Dict

from allennlp.common import params

logger = logging.getLogger(__name__)

ELMO_C_DIM = "ELMO_C_DIM"
"""The output size of the ELMo-C biLM (2 x projection size) that the downstream configs size
their layers for and check the archive against (`expected_output_dim`)."""

CONFIG_DEFAULTS: Dict[str, str] = {ELMO_C_DIM: "1024"}  # the paper's biLM: 2 x 512


def apply() -> None:
    """Makes AllenNLP's config parsing see `CONFIG_DEFAULTS` for unset variables (once)."""
    original = params._environment_variables
    if getattr(original, "_elmo_c_defaults", False):
        return

    def environment_with_defaults() -> Dict[str, str]:
        return {**CONFIG_DEFAULTS, **original()}

    environment_with_defaults._elmo_c_defaults = True  # type: ignore[attr-defined]
    environment_with_defaults.__doc__ = original.__doc__
    params._environment_variables = environment_with_defaults
