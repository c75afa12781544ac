"""kubectl's output formats for wire objects: ``-o yaml|json|name|jsonpath|custom-columns``.

Design:

* **YAML** is what ``sigs.k8s.io/yaml`` (go-yaml v2 over the object's JSON) prints:
  keys sorted, two-space indent, sequence items (``- ``) at their key's
  indentation, strings double-quoted when go-yaml would read them back as
  another type (``"80"``, ``"true"``, ``"2025-01-01T00:00:00Z"``, ``""``),
  multi-line strings as ``|``/``|-`` blocks, long plain lines folded at 80
  columns. ruamel.yaml's emitter (a port of libyaml, like go-yaml's) does the
  layout; the quoting decisions are made here, as go-yaml's resolver makes them.
* **JSON** is Go's ``json.MarshalIndent(obj, "", "    ")``: sorted keys, four
  spaces, ``<``/``>``/``&`` escaped as ``\\u003c`` etc.
* **JSONPath** is a port of kubectl's dialect (``k8s.io/client-go/util/jsonpath``:
  its parser and evaluator, so its output and its error messages): ``{.a.b}``,
  ``[0]``, ``[-1]``, ``[0:2]``, ``[*]``, ``..name``, ``['key']``, unions
  ``[0,1]``, filters ``[?(@.type=="Ready")]``, ``{range …}…{end}`` and quoted
  text ``{"\\n"}``. No library implements the ``range``/``end`` template form,
  hence our own. Missing keys print nothing (kubectl sets
  ``AllowMissingKeys(true)``); maps and lists print as Go's ``json.Marshal``.
* **Go values** (:func:`go_v`, :func:`go_sharp_v`, :func:`go_json`): how Go's
  ``fmt`` (``%v``, ``%#v``) and ``encoding/json`` print JSON values, for the
  JSONPath and go-template printers and their error dumps.
* :func:`tabwrite` is Go's ``text/tabwriter`` with its column blocks (used by
  ``describe``, whose layout depends on them), and :func:`render_rows` the
  simpler all-rows table kubectl's printers use.
"""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any, Mapping, Sequence, get_args, get_origin

import attrs
from ruamel.yaml.comments import TaggedScalar

from ..api.gofmt import go_quote
from ..api.quantity import parse_quantity
from ..api.schema import kind_class
from ..api.schema.fields import Quantity, wire_name
from ..api.schema.meta import ObjectMeta

__all__ = [
    "to_yaml", "to_json", "list_object", "strip_managed_fields", "name_of",
    "go_float", "go_quote", "go_v", "go_sharp_v", "go_json", "go_type_name",
    "JSONPath", "JSONPathError", "JSONPathParseError", "JSONPathExecError", "parse_jsonpath",
    "relaxed_jsonpath", "jsonpath_text", "jsonpath_exec_error",
    "custom_columns", "sort_by", "tabwrite", "render_rows", "ObjectPrinter", "typed",
]


# ----------------------------------------------------------------------------- objects

def strip_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields`` (kubectl's default ``--show-managed-fields=false``)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return dict(obj)
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def list_object(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """kubectl's client-side list for ``-o yaml|json`` of several objects:
    ``{"apiVersion": "v1", "items": [...], "kind": "List", "metadata": {"resourceVersion": ""}}``."""
    return {"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {"resourceVersion": ""}}


def name_of(obj: Mapping[str, Any]) -> str:
    """``-o name``: ``pod/web-1``, ``deployment.apps/web`` (kind lower-cased, group when not core)."""
    from ..api.resources import split_api_version

    group, _ = split_api_version(str(obj.get("apiVersion") or ""))
    kind = str(obj.get("kind") or "").lower()
    name = (obj.get("metadata") or {}).get("name", "")
    return f"{kind}.{group}/{name}" if group else f"{kind}/{name}"


# ----------------------------------------------------------------------------- JSON

def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def to_json(obj: Any) -> str:
    """Go's ``json.MarshalIndent(obj, "", "    ")`` plus a newline: sorted keys, HTML-escaped."""
    text = json.dumps(_sorted(obj), indent=4, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


# ----------------------------------------------------------------------------- YAML

_YAML11_BOOL = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
                "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"}
_YAML_NULL = {"", "~", "null", "Null", "NULL"}
_INT = re.compile(r"^[-+]?(0b[01_]+|0[0-7_]+|(0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$"
                    r"|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}([Tt ]\d{1,2}:\d{2}:\d{2}(\.\d*)?"
                        r"(Z|[-+]\d{1,2}(:\d{2})?)?)?$")


def _resolves_non_string(s: str) -> bool:
    """go-yaml v2 ``resolve``: would this plain scalar read back as null/bool/int/float/timestamp?"""
    return (s in _YAML_NULL or s in _YAML11_BOOL or bool(_INT.match(s)) or bool(_FLOAT.match(s))
            or bool(_TIMESTAMP.match(s)) or s == "<<")


def _yaml_value(value: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

    if isinstance(value, Mapping):
        m = CommentedMap()
        for k in sorted(value):
            m[k] = _yaml_value(value[k])
        return m
    if isinstance(value, list):
        return CommentedSeq(_yaml_value(v) for v in value)
    if isinstance(value, str):
        if "\n" in value:
            return LiteralScalarString(value)
        if _resolves_non_string(value):
            return DoubleQuotedScalarString(value)
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def to_yaml(obj: Any) -> str:
    """kubectl's ``-o yaml`` text for one object (sigs.k8s.io/yaml layout; see the module docstring)."""
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.indent(mapping=2, sequence=2, offset=0)
    y.width = 80
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(_yaml_value(obj), buf)
    return buf.getvalue()


# ----------------------------------------------------------------------------- Go values

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


# ----------------------------------------------------------------------------- JSONPath
#
# A port of client-go's ``util/jsonpath`` (the parser and the evaluator kubectl runs), so that
# what a template prints and the errors it gives are kubectl's. Nodes are tuples:
# ("list", [nodes]), ("text", s), ("field", name), ("array", params), ("filter", left, right, op),
# ("int", n), ("float", f), ("bool", b), ("wildcard",), ("recursive",), ("union", [lists]),
# ("identifier", name). Map iteration (``*``, ``..``) is in key order (Go's is random).

class JSONPathError(ValueError):
    """A JSONPath template kubectl refuses or fails on; the message is client-go's, bare
    (``unterminated array``) — the command adds kubectl's ``error parsing jsonpath …`` prefix."""


class JSONPathParseError(JSONPathError):
    """The template does not parse (kubectl: ``error: error parsing jsonpath TEMPLATE, MSG``)."""


class JSONPathExecError(JSONPathError):
    """The template fails on the data (kubectl: ``error: error executing jsonpath "TEMPLATE":
    Error executing template: MSG. Printing more information …``)."""


_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$")
_FILTER_OP = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)
_EOF = ""


def _is_terminator(r: str) -> bool:
    return r in (_EOF, " ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}")


def _is_alnum(r: str) -> bool:
    return r == "_" or (r != _EOF and (r.isalpha() or r.isdigit()))


def _go_rune(r: str) -> str:
    """Go's ``%#U``: ``U+0023 '#'``."""
    return f"U+{ord(r):04X} '{r}'"


def _unquote_extend(s: str) -> str:
    """client-go's ``UnquoteExtend``: a ``"…"`` or ``'…'`` literal with Go's escapes."""
    if len(s) < 2 or s[0] != s[-1] or s[0] not in "\"'":
        raise JSONPathParseError(f"unquote string {s} error invalid syntax")
    body = s[1:-1]
    if "\\" not in body:
        return body
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        raise JSONPathParseError(f"unquote string {s} error invalid syntax") from None


class _JSONPathParser:
    """client-go's ``jsonpath.Parser``: the same scanning, the same error messages."""

    def __init__(self, text: str) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.root: list[Any] = []

    def parse(self) -> list[Any]:
        self._text(self.root)
        return self.root

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return _EOF
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def _peek(self) -> str:
        r = self._next()
        self.pos -= self.width
        return r

    def _consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def _text(self, cur: list[Any]) -> None:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.append(("text", self._consume()))
                self.pos += 1
                self._consume()
                node: list[Any] = []
                cur.append(("list", node))
                self._inside(node)
                return
            if self._next() == _EOF:
                break
        if self.pos > self.start:
            cur.append(("text", self._consume()))

    def _inside(self, cur: list[Any]) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                self._text(self.root)
                return
            if rest.startswith("[?("):
                self._filter(cur)
                continue
            if rest.startswith(".."):
                if cur and cur[-1][0] == "recursive":
                    raise JSONPathParseError("invalid multiple recursive descent")
                self.pos += 2
                self._consume()
                cur.append(("recursive",))
                if _is_alnum(self._peek()):
                    self._field(cur)
                continue
            r = self._next()
            if r == _EOF or r in "\r\n":
                raise JSONPathParseError("unclosed action")
            if r in " @$":
                self._consume()
            elif r == "[":
                self._array(cur)
            elif r in "\"'":
                self._quote(cur, r)
            elif r == ".":
                self._field(cur)
            elif r in "+-" or r.isdigit():
                self.pos -= self.width
                self._number(cur)
            elif _is_alnum(r):
                self.pos -= self.width
                self._identifier(cur)
            else:
                raise JSONPathParseError(f"unrecognized character in action: {_go_rune(r)}")

    def _identifier(self, cur: list[Any]) -> None:
        while not _is_terminator(self._next()):
            pass
        self.pos -= self.width
        value = self._consume()
        cur.append(("bool", value == "true") if value in ("true", "false") else ("identifier", value))

    def _number(self, cur: list[Any]) -> None:
        if self._peek() in "+-" and self._peek() != _EOF:
            self._next()
        while True:
            r = self._next()
            if r != "." and not r.isdigit() or r == _EOF:
                self.pos -= self.width
                break
        value = self._consume()
        try:
            cur.append(("int", int(value)))
            return
        except ValueError:
            pass
        try:
            cur.append(("float", float(value)))
        except ValueError:
            raise JSONPathParseError(f"cannot parse number {value}") from None

    @staticmethod
    def _action(text: str) -> list[Any]:
        """client-go's ``parseAction``: the nodes of ``{text}``."""
        root = _JSONPathParser("{" + text + "}").parse()
        return root[0][1]

    def _array(self, cur: list[Any]) -> None:
        while True:
            r = self._next()
            if r == _EOF or r == "\n":
                raise JSONPathParseError("unterminated array")
            if r == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.append(("union", [self._action(f"[{p.strip(' ')}]") for p in parts]))
            return
        m = _DICT_KEY.match(text)
        if m:
            cur.extend(self._action(f".{m.group(1)}"))
            return
        m = _SLICE.match(text)
        if not m:
            raise JSONPathParseError(f"invalid array index {text}")
        params: list[list[Any]] = []  # [known, value, derived]
        for i, raw in enumerate(m.groups()):
            raw = raw or ""
            if raw:
                if i > 0:
                    raw = raw[1:]
                if i > 0 and raw == "":
                    params.append([False, 0, False])
                else:
                    try:
                        params.append([True, int(raw), False])
                    except ValueError:
                        raise JSONPathParseError(f"array index {raw} is not a number") from None
            elif i == 1:
                params.append([True, params[0][1] + 1, True])
            else:
                params.append([False, 0, False])
        cur.append(("array", params))

    def _filter(self, cur: list[Any]) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            r = self._next()
            if r == _EOF or r == "\n":
                raise JSONPathParseError("unterminated filter")
            if r in "\"'":
                if not begin:
                    begin, pair = True, r
                    continue
                if self.input[self.pos - 2] != "\\" and r == pair:
                    end = True
            elif r == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathParseError("unclosed array expect ]")
        text = self._consume()[:-2]
        m = _FILTER_OP.match(text)
        if m is None:
            cur.append(("filter", self._action(text), [], "exists"))
        else:
            cur.append(("filter", self._action(m.group(1)), self._action(m.group(3)), m.group(2)))

    def _quote(self, cur: list[Any], end: str) -> None:
        while True:
            r = self._next()
            if r == _EOF or r == "\n":
                raise JSONPathParseError("unterminated quoted string")
            if r == end and self.input[self.pos - 2] != "\\":
                break
        cur.append(("text", _unquote_extend(self._consume())))

    def _field(self, cur: list[Any]) -> None:
        self._consume()
        while True:
            r = self._next()
            if r == "\\":
                self._next()
            elif _is_terminator(r):
                self.pos -= self.width
                break
        value = self._consume()
        cur.append(("wildcard",) if value == "*" else ("field", value.replace("\\", "")))


_NIL = object()  # a JSON null met on the way: Go's nil interface (skipped, printed <nil>)


def _items_of(v: Any) -> list[Any]:
    """What ``*`` and ``..`` reach in a value: a map's values (by key), a list's items, a
    string's bytes (as Go's ``reflect`` indexes one)."""
    if isinstance(v, Mapping):
        return [v[k] for k in sorted(v)]
    if isinstance(v, list):
        return list(v)
    if isinstance(v, str):
        return list(v.encode("utf-8"))
    return []


def _go_compare(op: str, a: Any, b: Any) -> bool:
    """Go template's ``eq``/``lt``… on two JSON scalars (client-go's forked ``template``)."""
    def kind(x: Any) -> str:
        if isinstance(x, bool):
            return "bool"
        if isinstance(x, int):
            return "int"
        if isinstance(x, float):
            return "float"
        if isinstance(x, str):
            return "string"
        return "other"

    ka, kb = kind(a), kind(b)
    if op in ("==", "!="):
        if ka != kb or ka == "other":
            if ka == "other" or kb == "other":
                raise JSONPathExecError("invalid type for comparison")
            raise JSONPathExecError("incompatible types for comparison")
        return (a == b) == (op == "==")
    if ka != kb:
        raise JSONPathExecError("incompatible types for comparison")
    if ka not in ("int", "float", "string"):
        raise JSONPathExecError("invalid type for comparison")
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]


class JSONPath:
    """A parsed kubectl JSONPath template (client-go's ``JSONPath``, ``AllowMissingKeys(true)``
    unless ``allow_missing_keys=False``)."""

    def __init__(self, nodes: list[Any], *, allow_missing_keys: bool = True) -> None:
        self.nodes = nodes
        self.allow_missing_keys = allow_missing_keys

    # -- running -------------------------------------------------------------------------------

    def find_results(self, data: Any) -> list[list[Any]]:
        """client-go's ``FindResults``: one list of values per node printed.

        ``{range X}`` runs the nodes up to its matching ``{end}`` once per value of ``X``
        (that value as ``@``, and as ``$``), then goes on after the ``{end}`` with the values
        from before the range; a range without an ``{end}`` runs its nodes once per value,
        then once more on the values from before it (kubectl 1.33's behaviour).

        Raises:
            JSONPathExecError: client-go's execution errors (``array index out of bounds: …``,
                ``not in range, nothing to end``, ``unrecognized identifier x``, …).
        """
        return self._run(self.nodes, 0, data, in_range=False)[0]

    @staticmethod
    def _control(node: tuple[Any, ...]) -> str:
        """``range`` / ``end`` for a node holding that identifier, else ``""``."""
        if node[0] == "list":
            for n in node[1]:
                if n[0] == "identifier" and n[1] in ("range", "end"):
                    return n[1]
        return ""

    def _matching_end(self, nodes: list[Any], i: int) -> int:
        depth = 0
        for k in range(i, len(nodes)):
            control = self._control(nodes[k])
            if control == "range":
                depth += 1
            elif control == "end":
                if depth == 0:
                    return k
                depth -= 1
        return len(nodes)

    def _run(self, nodes: list[Any], i: int, data: Any, *, in_range: bool) -> tuple[list[list[Any]], int]:
        """Run ``nodes[i:]`` on ``data`` up to the ``{end}`` that closes the current range (when
        ``in_range``); returns the results and where it stopped."""
        cur = [data]
        out: list[list[Any]] = []
        while i < len(nodes):
            node = nodes[i]
            control = self._control(node)
            if control == "end":
                if in_range:
                    return out, i
                raise JSONPathExecError("not in range, nothing to end")
            if control == "range":
                rest = [n for n in node[1] if not (n[0] == "identifier" and n[1] == "range")]
                for item in self._walk(cur, ("list", rest)):
                    out.extend(self._run(nodes, i + 1, None if item is _NIL else item, in_range=True)[0])
                end = self._matching_end(nodes, i + 1)
                i = end + 1 if end < len(nodes) else i + 1
                continue
            out.append(self._walk(cur, node))
            i += 1
        return out, len(nodes)

    def execute(self, data: Any) -> str:
        """The template's text for ``data``: each value as kubectl's JSONPath printer writes it
        (maps and lists as compact JSON, scalars as Go prints them), space-separated per node.

        Raises:
            JSONPathExecError: see :meth:`find_results`.
        """
        out: list[str] = []
        for results in self.find_results(data):
            out.append(" ".join(self._text(v) for v in results))
        return "".join(out)

    @staticmethod
    def _text(v: Any) -> str:
        if v is _NIL or v is None:
            return "<nil>"
        if isinstance(v, (Mapping, list)):
            return go_json(v)
        return go_v(v)

    def _walk(self, values: list[Any], node: tuple[Any, ...]) -> list[Any]:
        kind = node[0]
        if kind == "list":
            cur = values
            for n in node[1]:
                cur = self._walk(cur, n)
            return cur
        if kind == "text":
            return [node[1]]
        if kind in ("int", "float", "bool"):
            return [node[1] for _ in values]
        if kind == "field":
            return self._field(values, node[1])
        if kind == "array":
            return self._array(values, node[1])
        if kind == "filter":
            return self._filter(values, node)
        if kind == "wildcard":
            return [c for v in values if v is not _NIL and v is not None for c in self._wrap(_items_of(v))]
        if kind == "recursive":
            return self._recursive(values)
        if kind == "union":
            out: list[Any] = []
            for lst in node[1]:
                out.extend(self._walk(values, ("list", lst)))
            return out
        # identifier ({range}/{end} are handled by _run)
        raise JSONPathExecError(f"unrecognized identifier {node[1]}")

    @staticmethod
    def _wrap(values: list[Any]) -> list[Any]:
        return [_NIL if v is None else v for v in values]

    def _field(self, values: list[Any], name: str) -> list[Any]:
        out = []
        for v in values:
            if v is _NIL or v is None:
                continue
            if isinstance(v, Mapping) and name in v:
                out.append(_NIL if v[name] is None else v[name])
        if not out and values and not self.allow_missing_keys:
            raise JSONPathExecError(f"{name} is not found")
        return out

    def _array(self, values: list[Any], params: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if v is _NIL or v is None:
                continue
            if not isinstance(v, list):
                raise JSONPathExecError(f"{go_type_name(v)} is not array or slice")
            n = len(v)
            start = params[0][1] if params[0][0] else 0
            if start < 0:
                start += n
            end = params[1][1] if params[1][0] else n
            if end < 0 or (end == 0 and params[1][2]):
                end += n
            if end == start:
                return out
            if start >= n or start < 0:
                raise JSONPathExecError(f"array index out of bounds: index {start}, length {n}")
            if end > n or end < 0:
                raise JSONPathExecError(f"array index out of bounds: index {end - 1}, length {n}")
            if start > end:
                raise JSONPathExecError(f"starting index {start} is greater than ending index {end}")
            step = 1
            if params[2][0]:
                if params[2][1] <= 0:
                    raise JSONPathExecError("step must be > 0")
                step = params[2][1]
            out.extend(self._wrap(v[start:end:step]))
        return out

    def _recursive(self, values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if v is _NIL or v is None:
                continue
            children = _items_of(v)
            if children:
                out.append(v)
                out.extend(self._recursive(self._wrap(children)))
        return out

    def _filter(self, values: list[Any], node: tuple[Any, ...]) -> list[Any]:
        _, left, right, op = node
        out: list[Any] = []
        for v in values:
            if not isinstance(v, list):
                shown = "<nil>" if v is _NIL or v is None else go_v(v)
                raise JSONPathExecError(f"{shown} is not array or slice and cannot be filtered")
            for item in self._wrap(v):
                if op == "exists":
                    try:
                        lefts = self._walk([item], ("list", left))
                    except JSONPathExecError:
                        lefts = []
                    if lefts:
                        out.append(item)
                    continue
                lefts = self._walk([item], ("list", left))
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathExecError("can only compare one element at a time")
                rights = self._walk([item], ("list", right))
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathExecError("can only compare one element at a time")
                if op not in ("<", ">", "==", "!=", "<=", ">="):
                    raise JSONPathExecError(f"unrecognized filter operator {op}")
                a, b = (None if x is _NIL else x for x in (lefts[0], rights[0]))
                if _go_compare(op, a, b):
                    out.append(item)
        return out


def parse_jsonpath(template: str, *, allow_missing_keys: bool = True) -> JSONPath:
    """Parse a kubectl JSONPath template (``{.items[*].metadata.name}``, ``{range …}{end}``).

    Raises:
        JSONPathParseError: client-go's parse errors (``unclosed action``, ``unterminated
            array``, ``invalid array index x``, ``unrecognized character in action: U+0023 '#'``…).
    """
    return JSONPath(_JSONPathParser(template).parse(), allow_missing_keys=allow_missing_keys)


def relaxed_jsonpath(expr: str) -> str:
    """kubectl's ``RelaxedJSONPathExpression``: ``.a.b``, ``a.b`` and ``{.a.b}`` all mean ``{.a.b}``."""
    e = expr.strip()
    if e.startswith("{") and e.endswith("}"):
        e = e[1:-1].strip()
    if not e.startswith(".") and not e.startswith("$") and not e.startswith("@"):
        e = "." + e
    return "{" + e + "}"


def jsonpath_text(template: str, data: Any) -> str:
    """Parse and run ``template`` on ``data``.

    Raises:
        JSONPathError: see :func:`parse_jsonpath` / :meth:`JSONPath.execute`.
    """
    return parse_jsonpath(template).execute(data)


def jsonpath_exec_error(template: str, err: Exception, data: Any) -> str:
    """kubectl's message for a template that fails on ``data`` (printed after ``error: ``):
    ``error executing jsonpath "T": Error executing template: MSG. Printing more information
    for debugging the template:`` then the template and ``%#v`` of the object, and blank lines."""
    return (f"error executing jsonpath {go_quote(template)}: Error executing template: {err}. "
            "Printing more information for debugging the template:\n"
            f"\ttemplate was:\n\t\t{template}\n"
            f"\tobject given to jsonpath engine was:\n\t\t{go_sharp_v(data)}\n\n\n")


# ----------------------------------------------------------------------------- tables

def render_rows(lines: Sequence[Sequence[str]]) -> str:
    """kubectl's table layout (tabwriter minwidth 6, padding 3) where every line has the same columns."""
    from ..api.tables import _tabwrite

    return _tabwrite([list(l) for l in lines])


def tabwrite(text: str, minwidth: int = 0, padding: int = 2) -> str:
    """Go's ``text/tabwriter`` (pad with spaces, align left) over ``text``.

    Tab-terminated cells form columns; a column's width is decided per *block*
    of consecutive lines that have a cell in that column, as Go's does (so a
    line without tabs ends every block). Default settings are describe's
    ``tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)``.
    """
    lines = [line.split("\t") for line in text.split("\n")]
    trailing = text.endswith("\n")
    if trailing:
        lines = lines[:-1]
    widths: list[int] = []
    out: list[str] = []

    def write_lines(a: int, b: int) -> None:
        for line in lines[a:b]:
            parts = []
            for j, cell in enumerate(line):
                if j < len(line) - 1 and j < len(widths):
                    parts.append(cell.ljust(widths[j]))
                else:
                    parts.append(cell)
            out.append("".join(parts))

    def fmt(line0: int, line1: int) -> None:
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            write_lines(line0, this)
            line0 = this
            width = minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + padding)
                this += 1
            widths.append(width)
            fmt(line0, this)
            widths.pop()
            line0 = this
        write_lines(line0, line1)

    fmt(0, len(lines))
    return "\n".join(out) + ("\n" if trailing else "")


def custom_columns(objects: Sequence[Mapping[str, Any]], spec: str, no_headers: bool = False) -> str:
    """``-o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[*].image``.

    Each cell: every result of the column's JSONPath joined with ``,``; ``<none>``
    when there is none. Headers are printed as given.

    Raises:
        JSONPathError: a column without ``HEADER:PATH``
            (``custom-columns format specified incorrectly``), or a bad path; a path that fails
            on an object carries the lines printed before it as ``partial`` (kubectl prints them).
    """
    specs = []
    for part in spec.split(","):
        if ":" not in part:
            raise JSONPathError(f'unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>')
        specs.append(part.split(":", 1))
    lines: list[list[str]] = [] if no_headers else [[h for h, _ in specs]]
    columns = []
    for header, path in specs:  # kubectl parses them after printing the header
        try:
            columns.append((header, parse_jsonpath(relaxed_jsonpath(path))))
        except JSONPathError as e:
            e.partial = render_rows(lines) if lines else ""  # type: ignore[attr-defined]
            raise
    for obj in objects:
        row = []
        for _, jp in columns:
            try:
                results = jp.find_results(obj)
            except JSONPathError as e:
                # kubectl's tabwriter is flushed on the way out: the lines so far are printed
                e.partial = render_rows(lines) if lines else ""  # type: ignore[attr-defined]
                raise
            if not results or not results[0]:
                row.append("<none>")
                continue
            row.append(",".join(go_v(None if v is _NIL else v) for vals in results for v in vals))
        lines.append(row)
    return render_rows(lines)


def sort_by(objects: Sequence[Mapping[str, Any]], expr: str) -> list[Mapping[str, Any]]:
    """``--sort-by=.metadata.name``: a stable sort on the first value of a JSONPath.

    Numbers compare numerically, quantities (``100m``, ``64Mi``) by value,
    everything else as text; objects without the field sort first.

    Raises:
        JSONPathError: a bad expression.
    """
    from ..api.quantity import parse_quantity

    jp = parse_jsonpath(relaxed_jsonpath(expr))

    def key(obj: Mapping[str, Any]) -> tuple[int, Any]:
        vals = [v for vals in jp.find_results(obj) for v in vals if v is not _NIL]
        if not vals:
            return (0, 0)
        v = vals[0]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (1, v)
        if isinstance(v, str):
            try:
                return (1, float(parse_quantity(v).value))
            except (ValueError, TypeError):
                return (2, v)
        return (2, go_json(v) if isinstance(v, (Mapping, list)) else go_v(v))

    try:
        return sorted(objects, key=key)
    except TypeError:
        return sorted(objects, key=lambda o: str(key(o)))


# --------------------------------------------------------------------------- a mutating command's -o

def _go_ordered(value: Any, tp: Any) -> Any:
    """``value`` (of schema type ``tp``) as ``encoding/json`` renders the Go struct: keys in
    field order (a map's sorted), every ObjectMeta with ``creationTimestamp`` (``null`` when
    unset), quantities in their canonical form (``8388608Ki`` -> ``8Gi``)."""
    if get_origin(tp) is not None and type(None) in get_args(tp):  # X | None
        tp = next(a for a in get_args(tp) if a is not type(None))
    if tp is Quantity:
        try:
            return str(parse_quantity(value))
        except ValueError:
            return value
    if attrs.has(tp) and isinstance(value, dict):
        attrs.resolve_types(tp)
        out: dict[str, Any] = {}
        for a in attrs.fields(tp):
            name = wire_name(a)
            if name in value:
                out[name] = _go_ordered(value[name], a.type)
            elif tp is ObjectMeta and name == "creationTimestamp":
                out[name] = None
        return {**out, **{k: v for k, v in value.items() if k not in out}}
    if get_origin(tp) is tuple and isinstance(value, list):
        return [_go_ordered(v, get_args(tp)[0]) for v in value]
    if isinstance(value, dict):  # a Go map (map[string]T, or free-form JSON): keys sorted
        item = get_args(tp)[1] if get_origin(tp) is dict else Any
        return {k: _go_ordered(value[k], item) for k in sorted(value)}
    if isinstance(value, list):
        return [_go_ordered(v, Any) for v in value]
    return value


def typed(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as kubectl prints an object it decoded into its Go type (a generator's, or
    what a typed client got back): in the struct's field order with ``kind`` before
    ``apiVersion`` (Go's ``TypeMeta``), ``creationTimestamp: null`` in every ObjectMeta
    without one, canonical quantities. A kind the schema does not know is left as it is."""
    try:
        cls = kind_class(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    except KeyError:
        return obj
    out = _go_ordered(obj, cls)
    return {k: out[k] for k in ("kind", "apiVersion") if k in out} | out


def _yaml_nulls(value: Any) -> Any:
    """``value`` with each ``None`` as a YAML scalar that prints ``null``, as go-yaml writes it
    (:func:`~k8semu.cli.printing.to_yaml` would leave the value empty: ``creationTimestamp:``)."""
    if value is None:
        return TaggedScalar("null", tag="tag:yaml.org,2002:null")
    if isinstance(value, dict):
        return {k: _yaml_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_nulls(v) for v in value]
    return value


class ObjectPrinter:
    """kubectl's printer of a mutating command (``PrintFlags.ToPrinter``), for one ``-o``:

    - none: the command's line (``deployment.apps/web created (dry run)``);
    - ``name``: ``deployment.apps/web``;
    - ``yaml``: the object, ``---`` before each one after the first (one printer's count);
    - ``json``: the object as Go's ``json.MarshalIndent`` writes it — keys sorted for an
      object kubectl holds unstructured (``-f`` manifests, what such a request returns),
      in Go struct order (:func:`typed`) for one it holds typed;
    - ``jsonpath=TEMPLATE``.

    ``metadata.managedFields`` is left out (kubectl's ``--show-managed-fields=false``).

    Raises:
        ValueError: kubectl's ``unable to match a printer suitable for the output format "wide",
            allowed formats are: …``, or a template that does not parse.
    """

    def __init__(self, fmt: str | None) -> None:
        self.fmt = fmt or ""
        self.count = 0
        if self.fmt.startswith("jsonpath="):
            try:
                parse_jsonpath(self.fmt.split("=", 1)[1])
            except JSONPathError as e:
                raise ValueError(f"error parsing jsonpath {self.fmt.split('=', 1)[1]}, {e}") from None
        elif self.fmt not in ("", "yaml", "json", "name"):
            raise ValueError(f'unable to match a printer suitable for the output format "{self.fmt}", allowed '
                             "formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,"
                             "jsonpath-file,name,template,templatefile,yaml")

    def print(self, obj: dict[str, Any], line: str, *, go_struct: bool = False) -> None:
        """Print ``obj`` in the format (``line`` when there is none); ``go_struct``: kubectl
        holds the object typed (:func:`typed`)."""
        self.count += 1
        if not self.fmt:
            print(line)
            return
        if self.fmt == "name":
            print(name_of(obj))
            return
        obj = strip_managed_fields(typed(obj) if go_struct else obj)
        if self.fmt == "yaml":
            sys.stdout.write(("---\n" if self.count > 1 else "") + to_yaml(_yaml_nulls(obj)))
        elif self.fmt == "json" and not go_struct:
            sys.stdout.write(to_json(obj))
        elif self.fmt == "json":  # printing.to_json, in the struct's order instead of sorted
            text = json.dumps(obj, indent=4, ensure_ascii=False)
            sys.stdout.write(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n")
        else:
            sys.stdout.write(jsonpath_text(self.fmt.split("=", 1)[1], obj))
