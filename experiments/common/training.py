"""Training runs of the experiment scripts: a config's overrides that time its updates."""

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

from allennlp.common import Params

from allennlp_elmo_c.training.update_timings import with_update_timings


def timed_overrides(config: Path, overrides: Dict[str, Any], environment: Mapping[str, str],
                    **options: Any) -> Tuple[Params, Dict[str, Any]]:  # fmt: skip
    """
    Evaluates `config` once, with `overrides` and `environment` as its external variables, and
    returns it and `overrides` with `trainer.callbacks` set to the config's callbacks followed by
    `update_timings` (built with `options`), which writes `TIMINGS` into the run's directory.

    # Parameters

    config : `Path`
        The training config (jsonnet).
    overrides : `Dict[str, Any]`
        The overrides the run is trained with, as for `allennlp train -o`.
    environment : `Mapping[str, str]`
        The external variables the config reads (`std.extVar`), as the run will see them.
    options : `Any`
        The `update_timings` callback's parameters (`write_every`).
    """
    params = Params.from_file(str(config), json.dumps(overrides), ext_vars=dict(environment))
    callbacks = params.as_dict(quiet=True).get("trainer", {}).get("callbacks")
    return params, {**overrides, "trainer.callbacks": with_update_timings(callbacks, **options)}
