"""
A value read from a received file as a message shows it: control characters escaped (no
terminal escape sequences, no line breaks) and cut to a length.
"""
from typing import Any

from allennlp_elmo_c.received.limits import SHOWN_CHARACTERS


def printable(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """`str(value)` with every non-printable character (a control, format or separator
    character other than the space) as its Python escape (`\\x1b`, `\\n`, `\\u202e`), cut to
    `limit` characters of the original, its length then said."""
    text = str(value)
    cut = text[:limit]
    shown = "".join(
        character if character.isprintable() else repr(character)[1:-1] for character in cut
    )
    if len(text) > limit:
        shown += f"... ({len(text)} characters)"
    return shown


def quoted(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """`value` in quotes, as `printable` shows it (for a name or key inside a message)."""
    return f"'{printable(value, limit)}'"
