"""Go's renderings of values in messages that must match upstream byte for byte.

Upstream composes many texts with ``fmt``'s ``%q`` (``strconv.Quote``): field
selector errors, label selector errors, the downward API's label and annotation
files, kubectl's validation messages. :func:`go_quote` is the one place k8semu
writes them.
"""

from __future__ import annotations

__all__ = ["go_quote"]

_NAMED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
          "\\": "\\\\", '"': '\\"'}


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): double-quoted, ``\\n``/``\\t``/``\\"``… escaped,
    other non-printable characters as ``\\x``/``\\u``/``\\U``; printable Unicode as it is."""
    out = ['"']
    for ch in s:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)
