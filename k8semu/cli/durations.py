"""Durations as kubectl and Go read and print them: ``time.ParseDuration`` (``90s``, ``5m``,
``1h30m``) and ``time.Duration.String()`` (``5m0s``)."""

from __future__ import annotations

import re

__all__ = ["parse_duration", "go_duration", "parse_rfc3339"]

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, *, allow_negative: bool = True) -> float:
    """Seconds in ``text`` (``1h30m``, ``45s``, ``2.5m``, a bare number = seconds).

    A leading ``-`` or ``+`` is accepted, as Go's ``time.ParseDuration`` does
    (``-5s`` is -5.0).

    Args:
        allow_negative: False for a span of virtual time to run or wait
            (``advance``, ``--for``, ``--timeout``): a negative one is an error.

    Raises:
        ValueError: ``invalid duration "x"``; with ``allow_negative=False``,
            ``invalid duration "-5s": must not be negative``.
    """
    s = text.strip()
    try:
        total = float(s)
    except ValueError:
        sign, body = (-1.0, s[1:]) if s[:1] == "-" else (1.0, s[1:] if s[:1] == "+" else s)
        pos, total = 0, 0.0
        while pos < len(body):
            m = _PART.match(body, pos)
            if not m:
                raise ValueError(f'invalid duration "{text}"') from None
            total += float(m.group(1)) * _UNIT[m.group(2)]
            pos = m.end()
        if not body:
            raise ValueError(f'invalid duration "{text}"') from None
        total *= sign
    if total != total or total in (float("inf"), float("-inf")):  # nan, inf: not a span of time
        raise ValueError(f'invalid duration "{text}"')
    if total < 0 and not allow_negative:
        raise ValueError(f'invalid duration "{text}": must not be negative')
    return total


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String()``: ``5m0s``, ``1h0m0s``, ``1.5s``, ``500ms``, ``0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    h, rest = divmod(nanos, 3600 * 10**9)
    m, rest = divmod(rest, 60 * 10**9)
    secs = _trim(rest / 1e9)
    if h:
        return f"{sign}{h}h{m}m{secs}s"
    if m:
        return f"{sign}{m}m{secs}s"
    return f"{sign}{secs}s"


def point_time(seconds: float) -> str:
    """A point's virtual time as the time-travel commands print it: :func:`go_duration` to the
    microsecond, the precision of the times recorded elsewhere (audit logs); records ``serve``
    wrote carry the float noise of the wall clock below it (``16788h5m53.33857s``, not
    ``16788h5m53.338569616s``)."""
    return go_duration(round(seconds, 6))


def _trim(x: float) -> str:
    text = f"{x:.9f}".rstrip("0").rstrip(".")
    return text or "0"


#: Go's ``time.RFC3339`` layout, as its parse errors name it.
RFC3339 = "2006-01-02T15:04:05Z07:00"
#: The layout's chunks: (literal before, element, digits of a fixed-width number).
_RFC3339_CHUNKS = (("", "2006", 4), ("-", "01", 2), ("-", "02", 2), ("T", "15", 2), (":", "04", 2),
                   (":", "05", 2), ("", "Z07:00", 0))
_RANGES = {"01": ("month", 1, 12), "15": ("hour", 0, 23), "04": ("minute", 0, 59), "05": ("second", 0, 59)}


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_rfc3339(text: str) -> "datetime":
    """An RFC 3339 time as Go's ``time.Parse(time.RFC3339, text)`` reads it (fractional seconds
    allowed), an aware datetime.

    Raises:
        ValueError: Go's ``ParseError`` text: ``parsing time "bad" as "2006-01-02T15:04:05Z07:00":
            cannot parse "bad" as "2006"``, ``parsing time "2025-13-01T00:00:00Z": month out of
            range``, ``…: extra text: "x"``.
    """
    import calendar
    from datetime import datetime, timedelta, timezone

    def fail(value: str, elem: str) -> ValueError:
        return ValueError(f"parsing time {_go_quote(text)} as {_go_quote(RFC3339)}: cannot parse "
                          f"{_go_quote(value)} as {_go_quote(elem)}")

    value = text
    nums: dict[str, int] = {}
    micros = 0
    tz = timezone.utc
    for literal, elem, width in _RFC3339_CHUNKS:
        if not value.startswith(literal):
            raise fail(value, literal)
        value = value[len(literal):]
        if elem == "Z07:00":
            if value.startswith("Z"):
                value = value[1:]
            elif len(value) >= 6 and value[0] in "+-" and value[3] == ":" and value[1:3].isdigit() \
                    and value[4:6].isdigit():
                offset = timedelta(hours=int(value[1:3]), minutes=int(value[4:6]))
                tz = timezone(-offset if value[0] == "-" else offset)
                value = value[6:]
            else:
                raise fail(value, elem)
            continue
        digits = value[:width]
        if len(digits) < width or not digits.isdigit():
            raise fail(value, elem)
        nums[elem] = int(digits)
        value = value[width:]
        if elem in _RANGES:
            what, low, high = _RANGES[elem]
            if not low <= nums[elem] <= high:
                raise ValueError(f"parsing time {_go_quote(text)}: {what} out of range")
        if elem == "05" and len(value) >= 2 and value[0] in ".," and value[1].isdigit():
            n = 1
            while n < len(value) and value[n].isdigit():
                n += 1
            micros = int((value[1:n] + "000000")[:6])
            value = value[n:]
    if value:
        raise ValueError(f"parsing time {_go_quote(text)}: extra text: {_go_quote(value)}")
    year, month, day = nums["2006"], nums["01"], nums["02"]
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        raise ValueError(f"parsing time {_go_quote(text)}: day out of range")
    return datetime(year, month, day, nums["15"], nums["04"], nums["05"], micros, tzinfo=tz)
