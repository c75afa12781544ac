"""kubectl's output formats for wire objects: ``-o yaml|json|name|jsonpath|custom-columns``.

Design:

* **YAML** is what ``sigs.k8s.io/yaml`` (go-yaml v2 over the object's JSON) prints:
  keys sorted, two-space indent, sequence items (``- ``) at their key's
  indentation, strings double-quoted when go-yaml would read them back as
  another type (``"80"``, ``"true"``, ``"2025-01-01T00:00:00Z"``, ``""``),
  multi-line strings as ``|``/``|-`` blocks, long plain lines folded at 80
  columns as go-yaml folds them (at a space past the width, never before a
  word: :func:`_go_emitter`). ruamel.yaml's emitter (a port of libyaml, like
  go-yaml's) does the rest of the layout; the quoting decisions are made here,
  as go-yaml's resolver makes them.
* **JSON** is Go's ``json.MarshalIndent(obj, "", "    ")``: sorted keys, four
  spaces, ``<``/``>``/``&`` escaped as ``\\u003c`` etc.
* **JSONPath** (``-o jsonpath=``, ``custom-columns``, ``--sort-by``) is
  :mod:`k8semu.api.jsonpath`, kubectl's dialect ported from client-go, and Go's
  renderings of values are :mod:`k8semu.api.gofmt` (the API server needs both:
  custom resources' printer columns).
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

from ..api.gofmt import go_json, go_v
from ..api.jsonpath import NIL, JSONPath, JSONPathError, jsonpath_text, parse_jsonpath, relaxed_jsonpath
from ..api.quantity import parse_quantity
from ..api.schema import kind_class
from ..api.schema.fields import Quantity, wire_name
from ..api.schema.meta import ObjectMeta

__all__ = [
    "to_yaml", "to_json", "list_object", "strip_managed_fields", "name_of",
    "custom_columns", "sort_by", "tabwrite", "render_rows", "ObjectPrinter", "typed", "RememberingTabWriter",
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


_GO_EMITTER: Any = None


def _go_emitter() -> Any:
    """ruamel.yaml's round-trip emitter with go-yaml v2's folding of plain scalars (made once).

    go-yaml breaks a plain scalar only at a single space met once the line is already past the
    width (80): the space becomes the line break and the rest goes on at the indentation. It never
    moves a value to a line of its own nor breaks before a word that would overflow, as ruamel's
    ``write_plain`` does — so a long value without spaces (``containerID: containerd://…``) stays
    on its key's line, and ``a long … column limit`` folds after ``limit``, not before it.
    """
    global _GO_EMITTER
    if _GO_EMITTER is not None:
        return _GO_EMITTER
    from ruamel.yaml.emitter import RoundTripEmitter

    class GoYAMLEmitter(RoundTripEmitter):
        def write_plain(self, text: Any, split: Any = True) -> None:
            """A plain scalar, folded (when ``split``) as go-yaml's ``yaml_emitter_write_plain_scalar``."""
            if self.root_context or not text or any(c in text for c in "\n\x85\u2028\u2029"):
                super().write_plain(text, split)  # a bare document, or line breaks: not kubectl's case
                return
            if not self.whitespace:
                self._put(" ")
            chunk, after_space = [], False
            for i, ch in enumerate(text):
                if (ch == " " and split and not after_space and self.column + len(chunk) > self.best_width
                        and i + 1 < len(text) and text[i + 1] != " "):
                    self._put("".join(chunk))
                    chunk = []
                    self.write_indent()  # the space becomes the break
                else:
                    chunk.append(ch)
                after_space = ch == " "
            self._put("".join(chunk))
            self.whitespace = False
            self.indention = False

        def choose_scalar_style(self) -> Any:
            """go-yaml's choice: a string that cannot be plain is single-quoted when it can be
            (``'Node didn''t have …'``), double-quoted only when asked for (strings that would
            read as another type) or when single quotes cannot hold it."""
            style = super().choose_scalar_style()
            if style == '"' and self.event.style != '"':
                if self.analysis is None:
                    self.analysis = self.analyze_scalar(self.event.value)
                if self.analysis.allow_single_quoted and not self.analysis.multiline:
                    return "'"
            return style

        def write_single_quoted(self, text: Any, split: Any = True) -> None:
            """A single-quoted scalar folded as go-yaml's ``yaml_emitter_write_single_quoted``:
            a space past the width (not the first or last character, not before another space)
            becomes the line break; ``'`` is doubled."""
            if self.root_context or any(c in text for c in "\n\x85\u2028\u2029"):
                super().write_single_quoted(text, split)
                return
            if not self.whitespace:
                self._put(" ")
            chunk, after_space = ["'"], False
            for i, ch in enumerate(text):
                if (ch == " " and split and not after_space and self.column + len("".join(chunk)) > self.best_width
                        and 0 < i < len(text) - 1 and text[i + 1] != " "):
                    self._put("".join(chunk))
                    chunk = []
                    self.write_indent()
                else:
                    chunk.append("''" if ch == "'" else ch)
                after_space = ch == " "
            chunk.append("'")
            self._put("".join(chunk))
            self.whitespace = False
            self.indention = False

        def _put(self, data: str) -> None:
            if not data:
                return
            self.column += len(data)
            self.stream.write(data.encode(self.encoding) if self.encoding else data)

    _GO_EMITTER = GoYAMLEmitter
    return _GO_EMITTER


def to_yaml(obj: Any) -> str:
    """kubectl's ``-o yaml`` text for one object (sigs.k8s.io/yaml layout; see the module docstring)."""
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.Emitter = _go_emitter()
    y.indent(mapping=2, sequence=2, offset=0)
    y.width = 80
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(_yaml_value(obj), buf)
    return buf.getvalue()


# ----------------------------------------------------------------------------- tables

def render_rows(lines: Sequence[Sequence[str]]) -> str:
    """kubectl's table layout (tabwriter minwidth 6, padding 3) where every line has the same columns."""
    from ..api.tables import _tabwrite

    return _tabwrite([list(l) for l in lines])


class RememberingTabWriter:
    """kubectl's tab writer across flushes (``printers.GetNewTabWriter``: liggitt/tabwriter with
    ``RememberWidths``), as a watch prints through it: each flush lays its lines out with every
    column as wide as it has been in any flush so far (at least ``minwidth``, cells padded by
    ``padding``), so the rows printed one change at a time line up with the header and rows
    before them, and widen the column when one is longer."""

    def __init__(self, minwidth: int = 6, padding: int = 3) -> None:
        self.minwidth, self.padding = minwidth, padding
        self.widths: list[int] = []

    def write(self, lines: Sequence[Sequence[str]]) -> str:
        """One flush of ``lines`` (cells; the last cell of a line is not padded)."""
        for line in lines:
            for j, cell in enumerate(line[:-1]):
                w = max(self.minwidth, len(cell) + self.padding)
                if j == len(self.widths):
                    self.widths.append(w)
                elif w > self.widths[j]:
                    self.widths[j] = w
        return "".join("".join(cell.ljust(self.widths[j]) for j, cell in enumerate(line[:-1]))
                       + (line[-1] if line else "") + "\n" for line in lines)


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


def custom_columns(objects: Sequence[Mapping[str, Any]], spec: str, no_headers: bool = False,
                   writer: RememberingTabWriter | None = None) -> str:
    """``-o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[*].image``.

    Each cell: every result of the column's JSONPath joined with ``,``; ``<none>``
    when there is none. Headers are printed as given. ``writer``: lay the lines out with it
    (a watch's widths), else on their own.

    Raises:
        JSONPathError: a column without ``HEADER:PATH``
            (``custom-columns format specified incorrectly``), or a bad path; a path that fails
            on an object carries the lines printed before it as ``partial`` (kubectl prints them).
    """
    layout = writer.write if writer is not None else render_rows
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
            e.partial = layout(lines) if lines else ""  # type: ignore[attr-defined]
            raise
    for obj in objects:
        row = []
        for _, jp in columns:
            try:
                results = jp.find_results(obj)
            except JSONPathError as e:
                # kubectl's tabwriter is flushed on the way out: the lines so far are printed
                e.partial = layout(lines) if lines else ""  # type: ignore[attr-defined]
                raise
            if not results or not results[0]:
                row.append("<none>")
                continue
            row.append(",".join(go_v(None if v is NIL else v) for vals in results for v in vals))
        lines.append(row)
    return layout(lines)


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
        vals = [v for vals in jp.find_results(obj) for v in vals if v is not NIL]
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
    meta = out.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("managedFields"), list):
        out["metadata"] = {**meta, "managedFields": [
            {k: e[k] for k in _MANAGED_FIELDS_ORDER if k in e} | e if isinstance(e, dict) else e
            for e in meta["managedFields"]]}
    return {k: out[k] for k in ("kind", "apiVersion") if k in out} | out


#: ``ManagedFieldsEntry``'s fields in Go's order.
_MANAGED_FIELDS_ORDER = ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource")


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
    - ``jsonpath=``/``jsonpath-file=``/``jsonpath-as-json=``, ``go-template=``/
      ``go-template-file=`` (``template``, ``templatefile``; ``--template`` alone is a
      go-template), with get's errors (:func:`k8semu.cli.commands.get.print_template`).

    ``metadata.managedFields`` is left out of ``json`` and ``yaml`` (kubectl's
    ``--show-managed-fields=false``); templates see it, as kubectl's.

    Raises:
        ValueError: kubectl's ``unable to match a printer suitable for the output format "wide",
            allowed formats are: …``, a template that does not parse, a template file that
            cannot be read.
    """

    def __init__(self, fmt: str | None, *, template: str = "", allow_missing: bool = True,
                 show_managed_fields: bool = False) -> None:
        from .commands.get import OutputError, resolve_output

        self.fmt = fmt or ""
        self.count = 0
        self.allow_missing, self.show_managed_fields = allow_missing, show_managed_fields
        name = self.fmt.split("=", 1)[0]
        if name in ("wide", "custom-columns", "custom-columns-file") or (
                self.fmt and name not in ("yaml", "json", "name") and not self._template_format(name)):
            raise ValueError(f'unable to match a printer suitable for the output format "{self.fmt}", allowed '
                             "formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,"
                             "jsonpath-file,name,template,templatefile,yaml")
        try:
            self.printer, self.template = resolve_output(argparse_namespace(output=self.fmt, template=template))
        except OutputError as e:
            raise ValueError(str(e)) from None
        if self.printer in ("jsonpath", "jsonpath-as-json"):
            try:
                parse_jsonpath(self.template, allow_missing_keys=allow_missing)
            except JSONPathError as e:
                raise ValueError(f"error parsing jsonpath {self.template}, {e}") from None
        elif self.printer == "go-template":
            from .gotemplate import TemplateParseError, parse_template

            try:
                parse_template(self.template, missing_key_error=not allow_missing)
            except TemplateParseError as e:
                raise ValueError(f"error parsing template {self.template}, {e}") from None

    @staticmethod
    def _template_format(name: str) -> bool:
        return name in ("go-template", "go-template-file", "template", "templatefile", "jsonpath",
                        "jsonpath-file", "jsonpath-as-json")

    @classmethod
    def from_args(cls, args: Any) -> "ObjectPrinter":
        """The printer of a command's print flags (:func:`k8semu.cli.output.add_output_flag`)."""
        return cls(getattr(args, "output", None), template=getattr(args, "template", "") or "",
                   allow_missing=getattr(args, "allow_missing_template_keys", True) is not False,
                   show_managed_fields=bool(getattr(args, "show_managed_fields", False)))

    @property
    def prints_objects(self) -> bool:
        """True when the objects are printed, not the command's lines."""
        return bool(self.printer)

    def print(self, obj: dict[str, Any], line: str, *, go_struct: bool = False) -> int:
        """Print ``obj`` in the format (``line`` when there is none); ``go_struct``: kubectl
        holds the object typed (:func:`typed`). Returns 1 when a template fails on it."""
        self.count += 1
        if not self.printer:
            print(line)
            return 0
        if self.printer == "name":
            print(name_of(obj))
            return 0
        obj = typed(obj) if go_struct else obj
        if self.printer in ("yaml", "json") and not self.show_managed_fields:
            obj = strip_managed_fields(obj)
        if self.printer == "yaml":
            sys.stdout.write(("---\n" if self.count > 1 else "") + to_yaml(_yaml_nulls(obj)))
        elif self.printer == "json" and not go_struct:
            sys.stdout.write(to_json(obj))
        elif self.printer == "json":  # printing.to_json, in the struct's order instead of sorted
            text = json.dumps(obj, indent=4, ensure_ascii=False)
            sys.stdout.write(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n")
        else:
            from .commands.get import print_template

            return print_template(self.printer, self.template, json.loads(json.dumps(obj)), self.allow_missing)
        return 0


def argparse_namespace(**kwargs: Any) -> Any:
    """An ``argparse.Namespace`` of ``kwargs`` (what get's output helpers read)."""
    import argparse

    return argparse.Namespace(**kwargs)
