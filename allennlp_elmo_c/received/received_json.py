"""
JSON received from elsewhere (a config.json, meta.json, a safetensors header, a corpus's line, a
run's records): plain JSON only, its size capped before it is read and its nesting depth before
it is parsed; a refusal is one `ConfigurationError` line naming the file.
"""
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Optional, Union

import numpy

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.received import limits

# A JSON string (a `"` up to the next `"` not escaped), whose brackets do not nest.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def read_received_json(
    path: Union[str, Path],
    where: str,
    max_bytes: int = limits.MAX_CONFIG_BYTES,
    follow_links: bool = True,
) -> Any:
    """The file `path` as `parse_received_json` reads it; with `follow_links` false, a link or
    anything but a regular file is refused, unopened."""
    try:
        descriptor = os.open(
            path, os.O_RDONLY | (0 if follow_links else os.O_NOFOLLOW | os.O_NONBLOCK)
        )
    except OSError as error:
        if not follow_links and os.path.islink(path):
            raise ConfigurationError(f"{where}: a symbolic link, not a file; it is not followed")
        raise ConfigurationError(f"{where}: unreadable ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as stream:
        if not follow_links and not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ConfigurationError(f"{where}: not a regular file; it is not read")
        try:
            data = stream.read(max_bytes + 1)
        except OSError as error:
            raise ConfigurationError(f"{where}: unreadable ({error.strerror})") from None
    return parse_received_json(data, where, max_bytes)


def parse_received_json(
    data: Union[bytes, str], where: str, max_bytes: Optional[int] = limits.MAX_CONFIG_BYTES
) -> Any:
    """JSON text as plain JSON (no NaN, finite floats, 64-bit integers) of at most `max_bytes`
    (None: no cap), nested at most `MAX_JSON_DEPTH`."""
    if max_bytes is not None and len(data) > max_bytes:
        raise ConfigurationError(
            f"{where}: larger than {max_bytes} bytes; a model's config is a few KB, so it is not "
            "read"
        )
    if json_depth(data) > limits.MAX_JSON_DEPTH:
        raise ConfigurationError(
            f"{where}: nested deeper than {limits.MAX_JSON_DEPTH} levels; it is not parsed"
        )
    try:
        return json.loads(
            data, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int64
        )
    except ValueError as error:  # UnicodeDecodeError included
        raise ConfigurationError(
            f"{where} is not plain JSON ({str(error)[:200]}); a received file is read as JSON "
            "only, never evaluated as jsonnet (no imports, no external variables)"
        ) from None


def json_depth(data: Union[bytes, str]) -> int:
    """How deep the arrays and objects of the JSON text `data` nest, without parsing it."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    brackets = numpy.frombuffer(_STRING.sub(b'""', raw), dtype=numpy.uint8)
    steps = numpy.zeros(len(brackets), dtype=numpy.int32)
    steps[(brackets == ord("[")) | (brackets == ord("{"))] = 1
    steps[(brackets == ord("]")) | (brackets == ord("}"))] = -1
    return int(numpy.cumsum(steps).max(initial=0))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    if not math.isfinite(value := float(text)):
        raise ValueError(f"the number {text[:40]} is too large for a float (not a finite number)")
    return value


def _int64(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -(1 << 63) <= int(text) < 1 << 63:
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"
        raise ValueError(f"the integer {shown} does not fit in 64 bits")
    return int(text)
