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
* **JSONPath** is a small evaluator of kubectl's dialect written here
  (``k8s.io/client-go/util/jsonpath``): ``{.a.b}``, ``[0]``, ``[-1]``,
  ``[0:2]``, ``[*]``, ``..name``, ``['key']``, unions ``[0,1]``, filters
  ``[?(@.type=="Ready")]``, ``{range …}…{end}`` and quoted text ``{"\\n"}``.
  No library implements the ``range``/``end`` template form, hence our own.
  Missing keys print nothing (kubectl sets ``AllowMissingKeys(true)``).
* :func:`tabwrite` is Go's ``text/tabwriter`` with its column blocks (used by
  ``describe``, whose layout depends on them), and :func:`render_rows` the
  simpler all-rows table kubectl's printers use.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "to_yaml", "to_json", "list_object", "strip_managed_fields", "name_of",
    "JSONPath", "JSONPathError", "parse_jsonpath", "relaxed_jsonpath", "jsonpath_text",
    "custom_columns", "sort_by", "tabwrite", "render_rows",
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


# ----------------------------------------------------------------------------- JSONPath

class JSONPathError(ValueError):
    """A template kubectl would reject (``error: error parsing jsonpath …``)."""


_MISSING = object()


def _go_text(value: Any) -> str:
    """How one JSONPath result prints: scalars as Go's ``fmt``, maps/lists as compact JSON."""
    if isinstance(value, (Mapping, list)):
        return json.dumps(_sorted(value), separators=(",", ":"), ensure_ascii=False)
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _tokenize_path(expr: str) -> list[tuple[str, Any]]:
    """Split ``.items[0].metadata..name`` into steps: ``("field", name)``, ``("recursive", None)``,
    ``("index", spec)``, ``("filter", text)``, ``("wildcard", None)``."""
    steps: list[tuple[str, Any]] = []
    i, n = 0, len(expr)
    if expr.startswith("$"):
        i = 1
    while i < n:
        c = expr[i]
        if expr.startswith("..", i):
            steps.append(("recursive", None))
            i += 2
            continue
        if c == ".":
            i += 1
            continue
        if c == "[":
            depth, j, quote = 0, i, ""
            while j < n:
                ch = expr[j]
                if quote:
                    if ch == quote:
                        quote = ""
                elif ch in "'\"":
                    quote = ch
                elif ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                raise JSONPathError(f"unterminated array: {expr}")
            inner = expr[i + 1:j].strip()
            i = j + 1
            if inner.startswith("?"):
                body = inner[1:].strip()
                if not (body.startswith("(") and body.endswith(")")):
                    raise JSONPathError(f"unclosed filter: {inner}")
                steps.append(("filter", body[1:-1]))
            elif inner == "*":
                steps.append(("wildcard", None))
            elif inner[:1] in "'\"":
                steps.append(("field", [p.strip()[1:-1] for p in inner.split(",")]))
            else:
                steps.append(("index", inner))
            continue
        if c == "*":
            steps.append(("wildcard", None))
            i += 1
            continue
        j, name = i, []
        while j < n and expr[j] not in ".[":
            if expr[j] == "\\" and j + 1 < n:
                name.append(expr[j + 1])
                j += 2
                continue
            name.append(expr[j])
            j += 1
        steps.append(("field", ["".join(name)]))
        i = j
    return steps


def _children(v: Any) -> list[Any]:
    if isinstance(v, Mapping):
        return [v[k] for k in sorted(v)]
    if isinstance(v, list):
        return list(v)
    return []


def _descendants(v: Any) -> list[Any]:
    out = [v]
    for c in _children(v):
        out.extend(_descendants(c))
    return out


def _literal(text: str) -> Any:
    t = text.strip()
    if t[:1] in "'\"" and t[-1:] == t[:1]:
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        raise JSONPathError(f"unrecognized filter value {t}") from None


_FILTER = re.compile(r"^(.*?)\s*(==|!=|<=|>=|<|>|=~)\s*(.*)$")


def _filter_ok(item: Any, cond: str) -> bool:
    m = _FILTER.match(cond)
    if m is None:
        got = _eval_steps([item], _tokenize_path(cond.strip().lstrip("@")))
        return any(v is not _MISSING for v in got)
    left, op, right = m.group(1).strip(), m.group(2), m.group(3).strip()

    def operand(text: str) -> list[Any]:
        if text.startswith("@"):
            return [v for v in _eval_steps([item], _tokenize_path(text[1:])) if v is not _MISSING]
        return [_literal(text)]

    for a in operand(left):
        for b in operand(right):
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
                pass
            elif op not in ("==", "!=") and type(a) is not type(b):
                continue
            try:
                if (op == "==" and a == b) or (op == "!=" and a != b) or (op == "<" and a < b) \
                        or (op == ">" and a > b) or (op == "<=" and a <= b) or (op == ">=" and a >= b):
                    return True
                if op == "=~" and isinstance(a, str) and re.search(str(b), a):
                    return True
            except TypeError:
                continue
    return False


def _index(v: list[Any], spec: str) -> list[Any]:
    out: list[Any] = []
    for part in spec.split(","):
        part = part.strip()
        n = len(v)
        if ":" in part:
            bits = [b.strip() for b in part.split(":")]
            try:
                start = int(bits[0]) if bits[0] else 0
                end = int(bits[1]) if len(bits) > 1 and bits[1] else n
                step = int(bits[2]) if len(bits) > 2 and bits[2] else 1
            except ValueError:
                raise JSONPathError(f"invalid array index {part}") from None
            start = max(0, start + n if start < 0 else start)
            end = min(n, end + n if end < 0 else end)
            out.extend(v[start:end:step] if step > 0 else [])
            continue
        try:
            i = int(part)
        except ValueError:
            raise JSONPathError(f"invalid array index {part}") from None
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise JSONPathError(f"array index out of bounds: index {int(part)}, length {n}")
        out.append(v[i])
    return out


def _eval_steps(values: list[Any], steps: list[tuple[str, Any]]) -> list[Any]:
    cur = values
    recursive = False
    for kind, arg in steps:
        if kind == "recursive":
            recursive = True
            continue
        if recursive:
            pool = []
            for v in cur:
                pool.extend(_descendants(v))
            cur = pool
        nxt: list[Any] = []
        for v in cur:
            if v is _MISSING:
                continue
            if kind == "field":
                if isinstance(v, Mapping):
                    for name in arg:
                        if name in v:
                            nxt.append(v[name])
                        elif not recursive and name:
                            nxt.append(_MISSING)
                        elif not name:
                            nxt.append(v)
            elif kind == "wildcard":
                nxt.extend(_children(v))
            elif kind == "index":
                if isinstance(v, list):
                    nxt.extend(_index(v, arg))
            elif kind == "filter":
                items = v if isinstance(v, list) else _children(v)
                nxt.extend(x for x in items if _filter_ok(x, arg))
        cur = nxt
        recursive = False
    return cur


class JSONPath:
    """A parsed kubectl JSONPath template (text, ``{expr}``, ``{range}``…``{end}``)."""

    def __init__(self, nodes: list[Any]) -> None:
        self.nodes = nodes

    def execute(self, data: Any) -> str:
        """The template's text for ``data`` (missing keys print nothing).

        Raises:
            JSONPathError: an index out of range, a bad filter.
        """
        return "".join(self._run(self.nodes, data))

    def _run(self, nodes: list[Any], data: Any) -> Iterable[str]:
        for node in nodes:
            if node[0] == "text":
                yield node[1]
            elif node[0] == "expr":
                got = [v for v in self._values(node[1], data) if v is not _MISSING]
                yield " ".join(_go_text(v) for v in got)
            else:  # range
                for item in self._values(node[1], data):
                    if item is _MISSING:
                        continue
                    for x in (item if isinstance(item, list) else [item]):
                        yield from self._run(node[2], x)

    @staticmethod
    def _values(expr: str, data: Any) -> list[Any]:
        e = expr.strip()
        if e[:1] in "'\"" and e[-1:] == e[:1] and len(e) > 1:
            return [_unquote(e)]
        if e.startswith("@"):
            e = e[1:]
        return _eval_steps([data], _tokenize_path(e))


def _unquote(s: str) -> str:
    try:
        return json.loads('"' + s[1:-1].replace('\\"', '"').replace('"', '\\"') + '"')
    except json.JSONDecodeError:
        return s[1:-1]


def parse_jsonpath(template: str) -> JSONPath:
    """Parse a kubectl JSONPath template (``{.items[*].metadata.name}``, ``{range …}{end}``).

    Raises:
        JSONPathError: unclosed ``{``, ``{end}`` without ``{range}``, unclosed range.
    """
    root: list[Any] = []
    stack = [root]
    i, n = 0, len(template)
    while i < n:
        j = template.find("{", i)
        if j < 0:
            stack[-1].append(("text", template[i:]))
            break
        if j > i:
            stack[-1].append(("text", template[i:j]))
        k, quote = j + 1, ""
        while k < n:
            ch = template[k]
            if quote:
                if ch == "\\":
                    k += 2
                    continue
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "}":
                break
            k += 1
        if k >= n:
            raise JSONPathError("unclosed action")
        body = template[j + 1:k].strip()
        i = k + 1
        if body.startswith("range ") or body == "range":
            node = ("range", body[5:].strip(), [])
            stack[-1].append(node)
            stack.append(node[2])
        elif body == "end":
            if len(stack) == 1:
                raise JSONPathError("not in range, nothing to end")
            stack.pop()
        else:
            stack[-1].append(("expr", body))
    if len(stack) > 1:
        raise JSONPathError("unclosed range")
    return JSONPath(root)


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
            (``custom-columns format specified incorrectly``), or a bad path.
    """
    columns = []
    for part in spec.split(","):
        if ":" not in part:
            raise JSONPathError(f'unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>')
        header, path = part.split(":", 1)
        columns.append((header, parse_jsonpath(relaxed_jsonpath(path))))
    lines: list[list[str]] = [] if no_headers else [[h for h, _ in columns]]
    for obj in objects:
        row = []
        for _, jp in columns:
            node = jp.nodes[0]
            vals = [v for v in JSONPath._values(node[1], obj) if v is not _MISSING]
            row.append(",".join(_go_fmt(v) for v in vals) if vals else "<none>")
        lines.append(row)
    return render_rows(lines)


def _go_fmt(v: Any) -> str:
    """Go's ``fmt.Sprintf("%v", v)`` for JSON values (maps as ``map[k:v]``)."""
    if isinstance(v, Mapping):
        return "map[" + " ".join(f"{k}:{_go_fmt(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_fmt(x) for x in v) + "]"
    return _go_text(v)


def sort_by(objects: Sequence[Mapping[str, Any]], expr: str) -> list[Mapping[str, Any]]:
    """``--sort-by=.metadata.name``: a stable sort on the first value of a JSONPath.

    Numbers compare numerically, quantities (``100m``, ``64Mi``) by value,
    everything else as text; objects without the field sort first.

    Raises:
        JSONPathError: a bad expression.
    """
    from ..api.quantity import parse_quantity

    jp = parse_jsonpath(relaxed_jsonpath(expr))
    node = jp.nodes[0]

    def key(obj: Mapping[str, Any]) -> tuple[int, Any]:
        vals = [v for v in JSONPath._values(node[1], obj) if v is not _MISSING]
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
        return (2, _go_text(v))

    try:
        return sorted(objects, key=key)
    except TypeError:
        return sorted(objects, key=lambda o: str(key(o)))
