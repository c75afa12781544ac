"""Go's renderings of values in texts that must match upstream byte for byte.

Upstream composes many texts with ``fmt``'s ``%q`` (``strconv.Quote``): field
selector errors, label selector errors, the downward API's label and annotation
files, kubectl's validation messages. :func:`go_quote` is the one place k8semu
writes them; ``%v`` / ``%#v`` / ``encoding/json`` / float formatting of JSON values
(what kubectl's JSONPath and Go templates print) are here too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

__all__ = ["go_quote", "go_float", "go_v", "go_sharp_v", "go_json", "go_type_name"]

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


def go_float(v: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` — also ``fmt``'s ``%v`` and ``%#v`` of a
    float64: the shortest digits that read back, ``%e`` form when the exponent is < -4 or >= 6
    (so ``1e+06``, ``1.234567e+06``, ``1e-05``; ``100000``, ``0.0001``, ``2``)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    sign = "-" if v < 0 or (v == 0 and str(v).startswith("-")) else ""
    if v == 0:
        return sign + "0"
    m = re.fullmatch(r"(\d+)(?:\.(\d*))?(?:e([+-]\d+))?", repr(abs(v)))
    assert m is not None
    whole, frac, e = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = (whole + frac).lstrip("0")
    dp = len(whole) + e - (len(whole + frac) - len((whole + frac).lstrip("0")))
    digits = digits.rstrip("0") or "0"
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def go_v(value: Any, *, floats: bool = False) -> str:
    """Go's ``fmt.Sprint(value)`` (``%v``) of a JSON value: maps as ``map[k:v …]`` (keys sorted),
    lists as ``[a b]``, null as ``<nil>``. ``floats``: every number is a float64, as after
    ``json.Unmarshal`` into ``interface{}`` (go-template's data), so ``1048576`` prints
    ``1.048576e+06``; else whole numbers are int64 (unstructured objects: JSONPath, custom columns)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return go_float(float(value)) if floats else str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_v(value[k], floats=floats)}" for k in sorted(value)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_v(v, floats=floats) for v in value) + "]"
    return str(value)


def go_sharp_v(value: Any) -> str:
    """Go's ``fmt.Sprintf("%#v", value)`` of an unstructured object (``map[string]interface {}{"a":1,
    …}``, keys sorted), as kubectl's JSONPath error dumps the object it was given."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Mapping):
        return ("map[string]interface {}{"
                + ", ".join(f"{go_quote(str(k))}:{go_sharp_v(value[k])}" for k in sorted(value)) + "}")
    if isinstance(value, (list, tuple)):
        return "[]interface {}{" + ", ".join(go_sharp_v(v) for v in value) + "}"
    return go_quote(str(value))


def _go_json_float(v: float) -> str:
    """``encoding/json``'s float64: ``%f`` form for 1e-6 <= |v| < 1e21, else ``%e`` (``1e-07``)."""
    if v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    a = abs(v)
    if 1e-6 <= a < 1e21:
        return repr(v) if "e" not in repr(v) else format(v, "f").rstrip("0").rstrip(".")
    s = repr(v)
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", s)


def go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of a JSON value: compact, keys sorted, ``<``/``>``/``&`` (and
    U+2028/U+2029) escaped, as kubectl's JSONPath prints a map or a list."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return _go_json_float(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return json.dumps(value)


def go_type_name(value: Any) -> str:
    """The Go type a JSON value has in an unstructured object (``map[string]interface {}``,
    ``[]interface {}``, ``string``, ``int64``, ``float64``, ``bool``)."""
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, (list, tuple)):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"
