"""Parsing durations as kubectl and Go's ``time.ParseDuration`` accept them (``90s``, ``5m``, ``1h30m``)."""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (``1h30m``, ``45s``, ``2.5m``, a bare number = seconds).

    Raises:
        ValueError: ``invalid duration "x"``.
    """
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise ValueError(f'invalid duration "{text}"')
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not s:
        raise ValueError(f'invalid duration "{text}"')
    return total
