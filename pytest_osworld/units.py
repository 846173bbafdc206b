"""Values as users write them: sizes the way Docker reads them (``512m``, ``4g``, ``1073741824``), and
the path of an HTTP request (``HttpPath``, checked to start with ``/``)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_bytes(value: Any) -> Any:
    """``"4g"`` -> 4294967296 (binary units, as Docker uses). Other types pass to pydantic as they are."""
    if isinstance(value, bool) or not isinstance(value, str):
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"{value!r} is not a size; write e.g. 512m, 4g or a number of bytes")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


ByteCount = Annotated[int, BeforeValidator(parse_bytes)]


def _absolute_path(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"path must start with '/', got {value!r}")
    return value


# The path of an HTTP request a probe or a reset sends (sandbox readiness, service readiness and reset).
HttpPath = Annotated[str, AfterValidator(_absolute_path)]
