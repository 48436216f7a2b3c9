"""
AllenNLP passes the environment to jsonnet as its external variables, and jsonnet has no default
for an unset one. The patched `allennlp.common.params` adds `CONFIG_DEFAULTS` (the plugin
configs' `ELMO_C_*` variables) where the environment does not set them, and a config that reads
unset variables of the plugin's configs stops with an `UnsetVariableError` naming every one and
what to set it to. Other configs evaluate, and fail, as without the plugin.
"""

import re
from typing import Callable, Dict

from allennlp.common import params

from allennlp_elmo_c.common.config_defaults import (
    CONFIG_DEFAULTS,
    REQUIRED,
    UnsetVariableError,
    unset_variable_message,
)

ORIGINALS = {
    "environment_variables": params._environment_variables,
    "evaluate_file": params.evaluate_file,
    "evaluate_snippet": params.evaluate_snippet,
}
# What jsonnet says about an unset std.extVar (a RuntimeError of _jsonnet).
_UNDEFINED = re.compile(r"undefined external variable: (\S+)")
_MAX_UNSET = 100


def _environment_with_defaults() -> Dict[str, str]:
    return {**CONFIG_DEFAULTS, **ORIGINALS["environment_variables"]()}


def _naming_unset_variables(evaluate: Callable[..., str], name: Callable[..., str]) -> Callable:
    """`evaluate` (jsonnet's evaluate_file or evaluate_snippet) raising `UnsetVariableError`
    naming every unset variable when one of them is a variable of the plugin's configs."""

    def evaluate_naming_unset(*args, **kwargs) -> str:
        try:
            return evaluate(*args, **kwargs)
        except RuntimeError as error:
            found = _UNDEFINED.search(str(error))
            if found is None or isinstance(error, UnsetVariableError):
                raise
            first_error = error
        ext_vars = dict(kwargs.get("ext_vars") or {})
        unset = [found.group(1)]
        while len(unset) < _MAX_UNSET:
            try:
                evaluate(*args, **{**kwargs, "ext_vars": {**ext_vars, **dict.fromkeys(unset, "0")}})
                break
            except RuntimeError as error:
                found = _UNDEFINED.search(str(error))
                if found is None or found.group(1) in unset:
                    break
                unset.append(found.group(1))
        if not any(variable in REQUIRED or variable in CONFIG_DEFAULTS for variable in unset):
            raise first_error
        raise UnsetVariableError(unset_variable_message(name(*args), unset)) from first_error

    evaluate_naming_unset.__doc__ = evaluate.__doc__
    return evaluate_naming_unset


_EVALUATE_FILE = _naming_unset_variables(
    ORIGINALS["evaluate_file"], lambda filename, *_: str(filename)
)
_EVALUATE_SNIPPET = _naming_unset_variables(
    ORIGINALS["evaluate_snippet"], lambda *_: "the overrides (-o)"
)


def apply() -> None:
    """Replaces `_environment_variables`, `evaluate_file` and `evaluate_snippet` of
    `allennlp.common.params` (once)."""
    if params._environment_variables is _environment_with_defaults:
        return
    _environment_with_defaults.__doc__ = ORIGINALS["environment_variables"].__doc__
    params._environment_variables = _environment_with_defaults
    params.evaluate_file = _EVALUATE_FILE
    params.evaluate_snippet = _EVALUATE_SNIPPET
