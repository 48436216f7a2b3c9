"""
Every limit a received file, archive, config or model build is held to, and how a received value
is shown in a message. Checks read this module when they run: to read a trusted input beyond a
limit, raise it here first, e.g. `allennlp_elmo_c.received.limits.MAX_EXTRACTED_BYTES = 100 << 30`.
"""
from typing import Any

# Received JSON: a config.json, an archive's meta.json, a safetensors header.
MAX_CONFIG_BYTES = 4 << 20
MAX_META_BYTES = 4096
MAX_SAFETENSORS_HEADER_BYTES = 1 << 20
MAX_JSON_DEPTH = 64

# A vocabulary: what one line costs once AllenNLP reads it; its non_padded_namespaces.txt.
ENTRY_BYTES = 256
MAX_PATTERNS_BYTES = 1 << 16

# An archive: what it extracts (beyond RATIO_FLOOR_BYTES, at most MAX_COMPRESSION_RATIO times
# its size), its members, what tarfile reads before a member is known, its names' depth.
MAX_EXTRACTED_BYTES = 32 << 30
MAX_COMPRESSION_RATIO = 50
RATIO_FLOOR_BYTES = 64 << 20
MAX_MEMBERS = 10_000
MAX_HEADER_BYTES = 64 << 10
MAX_CHAINED_HEADERS = 4
MAX_NAME_BYTES = 4096
MAX_PATH_DEPTH = 32

# A config's sizes, layers and (model directory) labels.
MAX_SIZE = (1 << 31) - 1
MAX_LAYERS = 64
MAX_LABELS = 1 << 16

# Building a model: BUDGET_FACTOR times the bytes its used weights hold, plus BUDGET_SLACK.
BUDGET_FACTOR = 8
BUDGET_SLACK = 64 << 20

# The most characters of one received value shown in a message.
SHOWN_CHARACTERS = 200


def printable(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """`str(value)`, its non-printable characters as Python escapes (`\\x1b`, `\\n`), cut to
    `limit` characters, its length then said."""
    text = str(value)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return shown + (f"... ({len(text)} characters)" if len(text) > limit else "")


def quoted(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """`printable(value, limit)` in quotes."""
    return f"'{printable(value, limit)}'"
