"""
The one walk of a config tree (the dicts and lists of a parsed JSON or jsonnet config) that every
search of the package's configs goes through, and the dotted key paths it names a part by: the
keys from the top joined with `.`, a list's item by its index (`model.token_embedders.0.type`),
as `-o` overrides name a key and as messages show it. `convert-config` joins list indices its
own way (`a.b[0]`, `walk`'s `join`).
"""

from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

# A dict's key or a list's index.
Key = Union[str, int]


def join_key(path: str, key: Key) -> str:
    """The dotted key path of `key` (a dict's key or a list's index) in the part at `path`."""
    return f"{path}.{key}" if path else str(key)


def walk(
    node: Any,
    path: str = "",
    skip: frozenset = frozenset(),
    join: Callable[[str, Key], str] = join_key,
) -> Iterator[Tuple[str, Optional[Key], Any]]:
    """
    `(key path, key, value)` of `node` and of every value in it, at any depth, parents before
    what they hold and in the config's order. `key` is the dict key or list index the value is
    under (`None` for `node`). The walk holds no recursion, so a deep config cannot overflow it.

    # Parameters

    node : `Any`
        A config, or a part of one.
    path : `str`, optional (default = `""`)
        The key path of `node` (`""` for a whole config).
    skip : `frozenset`, optional (default = `frozenset()`)
        Keys left out with all they hold, in the dicts that are not inside a list (as AllenNLP's
        `remove_keys_from_params`, which does not descend into lists: inside a list they are
        walked like any other key).
    join : `Callable[[str, Key], str]`, optional (default = `join_key`)
        The key path of a key or index in the part at a path.
    """
    stack: List[Tuple[str, Optional[Key], Any, frozenset]] = [(path, None, node, skip)]
    while stack:
        item_path, item_key, item, item_skip = stack.pop()
        yield item_path, item_key, item
        if isinstance(item, dict):
            children = [
                (join(item_path, key), key, value, item_skip)
                for key, value in item.items() if key not in item_skip
            ]  # fmt: skip
        elif isinstance(item, list):
            children = [
                (join(item_path, index), index, value, frozenset())
                for index, value in enumerate(item)
            ]
        else:
            continue
        stack.extend(reversed(children))


def lookup_dotted(config: Any, dotted: str) -> Any:
    """The part of `config` at the dotted key path `dotted`; `None` if there is none."""
    node = config
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
