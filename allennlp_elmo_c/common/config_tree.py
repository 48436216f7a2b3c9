"""The walk of a config tree (parsed JSON dicts and lists) and its dotted key paths
(`model.token_embedders.0.type`, as `-o` overrides name a key)."""

from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

Key = Union[str, int]


def join_key(path: str, key: Key) -> str:
    return f"{path}.{key}" if path else str(key)


def walk(
    node: Any,
    path: str = "",
    skip: frozenset = frozenset(),
    join: Callable[[str, Key], str] = join_key,
) -> Iterator[Tuple[str, Optional[Key], Any]]:
    """`(key path, key, value)` of `node` (at `path`, key `None`) and of everything in it,
    parents first, in order, without recursion; dict keys in `skip` are left out with what they
    hold; `join` makes a child's key path."""
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
