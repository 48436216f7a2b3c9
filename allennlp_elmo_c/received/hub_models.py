"""
The Hugging Face models a received task archive names (`*model_name`), found in the local cache
before anything is built, or refused in one line where transformers could not download them.
"""
from typing import Any

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.config_tree import walk

# How long the Hub may take to answer before a model missing from the cache is refused.
PROBE_SECONDS = 5.0


def _is_cached(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except ValueError:  # not a valid repository id
        return False


def check_hub_models(config: Any, source: str) -> None:
    """Refuses, naming the key and the model, a config naming a Hugging Face model missing from
    the local cache when `HF_HUB_OFFLINE=1` or the Hub does not answer within `PROBE_SECONDS`
    (transformers would retry for a minute, then fail)."""
    import requests
    from huggingface_hub import constants

    missing = [
        (where, value) for where, key, value in walk(config)
        if isinstance(key, str) and key.endswith("model_name") and isinstance(value, str)
        and not _is_cached(value)
    ]  # fmt: skip
    if not missing:
        return
    key, name = missing[0]
    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE=1 forbids downloading it:"
    else:
        try:
            requests.head(constants.ENDPOINT, timeout=PROBE_SECONDS, allow_redirects=False)
            return
        except requests.RequestException as error:
            why = (f"the Hub at {constants.ENDPOINT} cannot be reached ({type(error).__name__}): "
                   "set HF_HUB_OFFLINE=1 to load only what your cache holds, or")  # fmt: skip
    raise ConfigurationError(
        f"{source}: {key} names the Hugging Face model {name!r}, which is not in your Hugging "
        f"Face cache, and {why} download it first (`huggingface-cli download {name}`, on a "
        "machine with network, into the cache this one uses)"
    )
