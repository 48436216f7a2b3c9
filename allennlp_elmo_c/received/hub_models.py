"""
The Hugging Face models a received task archive names (`model_name`, `bert_model_name`), found
in the local cache before anything is built: one missing would be downloaded, and without network
transformers retries for a minute before a long traceback. `check_hub_models` refuses it in one
line when `HF_HUB_OFFLINE=1` or the Hub does not answer within `PROBE_SECONDS`.
"""

from typing import Any, Iterator, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_tree import walk

# How long the Hub may take to answer before a model missing from the cache is refused.
PROBE_SECONDS = 5.0


def hub_model_names(config: Any, path: str = "") -> Iterator[Tuple[str, str]]:
    """`(dotted key, name)` of every Hugging Face model name (`*model_name`) of a config."""
    for where, key, value in walk(config, path):
        if isinstance(key, str) and key.endswith("model_name") and isinstance(value, str):
            yield where, value


def is_cached(name: str) -> bool:
    """Whether the Hugging Face model `name` has its config in the local cache."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid repository id
        return False
    return isinstance(found, str)


def hub_unreachable() -> str:
    """Why the Hugging Face Hub cannot be reached ("" if it answers within `PROBE_SECONDS`)."""
    import requests
    from huggingface_hub import constants

    try:
        requests.head(constants.ENDPOINT, timeout=PROBE_SECONDS, allow_redirects=False)
    except requests.RequestException as error:
        return type(error).__name__
    return ""


def check_hub_models(config: Any, source: str) -> None:
    """
    Refuses, with one line naming the key and the model, a config naming a Hugging Face model
    that is not in the local cache, when `HF_HUB_OFFLINE=1` (transformers would fail) or the Hub
    does not answer (transformers would retry for a minute, then fail).
    """
    from huggingface_hub import constants

    missing = [(key, name) for key, name in hub_model_names(config) if not is_cached(name)]
    if not missing:
        return
    key, name = missing[0]
    fix = (
        f"download it first (`huggingface-cli download {name}`, on a machine with network, into "
        "the cache this one uses)"
    )
    if constants.HF_HUB_OFFLINE:
        raise ConfigurationError(
            f"{source}: {key} names the Hugging Face model {name!r}, which is not in your Hugging "
            f"Face cache, and HF_HUB_OFFLINE=1 forbids downloading it: {fix}"
        )
    why = hub_unreachable()
    if why:
        raise ConfigurationError(
            f"{source}: {key} names the Hugging Face model {name!r}, which is not in your Hugging "
            f"Face cache, and the Hub at {constants.ENDPOINT} cannot be reached ({why}): set "
            f"HF_HUB_OFFLINE=1 to load only what your cache holds, or {fix}"
        )
