"""Reading manifests the way ``kubectl apply -f`` does.

Design
------
kubectl reads a file in three steps, and this module keeps the same steps so
that what loads, what fails, and the error text all match:

1. **Split** (apimachinery ``YAMLReader``): the text is cut into documents on
   lines that *start* with ``---``; anything after the ``---`` other than
   blanks or a ``#`` comment is an ``invalid Yaml document separator``. Each
   document is parsed on its own, so a broken document cannot hide the ones
   before it, and the line in a YAML error counts from the document's first
   line (the line after its ``---``), exactly as kubectl prints it.
   A text whose first non-blank character is ``{`` is first tried as a JSON
   stream (``{…}{…}``); when that fails it is read as YAML (KYAML and
   "JSON with comments" are YAML), as apimachinery does since v1.33.
2. **Parse** one document with ruamel.yaml's composer (pure Python, safe),
   then convert the node tree to wire form with *go-yaml v2* rules, because
   that is what ``sigs.k8s.io/yaml`` uses: YAML 1.1 booleans (``yes``/``no``/
   ``on``/``off``/``y``/``n``), ``0777`` octal, ``0x``/``0b`` ints, timestamps
   kept as their original strings, merge keys (``<<``), aliases, ``!!binary``
   decoded, map keys stringified (``true``, ``1``), whole floats below 1e21
   turned into ints (Go's JSON encoder writes ``1.0`` as ``1``), NaN/Inf
   refused. Large ints stay Python ints (Go would turn those above 2^63 into
   floats; we keep them exact). Parser messages are rewritten into libyaml's
   wording (``mapping values are not allowed in this context``) and the line
   follows go-yaml's rule (scanner errors: the 1-based line; parser errors:
   one less, go-yaml's well-known off-by-one).
3. **Check** like kubectl's client-side validation: a document must be a
   mapping with string ``apiVersion`` and ``kind``. A parse or validation
   error ends the file (documents after it are not read, as kubectl's
   ``StreamVisitor`` returns), documents before it still apply. A decode
   error (empty ``kind``) or an unserved kind (:func:`resource_for`) only
   affects that document. Any object with an ``items`` list (``kind: List``,
   ``DeploymentList``) is flattened into its items, like kubectl's
   ``FlattenListVisitor``; items of a typed ``XList`` lacking both
   ``apiVersion`` and ``kind`` inherit them from the list.

Errors are :class:`ManifestError`; ``str(err)`` is kubectl's message without
the ``error: `` prefix the CLI adds, e.g.::

    error parsing app.yaml: error converting YAML to JSON: yaml: line 15: found character that cannot start any token
    error validating "pod.yaml": error validating data: apiVersion not set; if you choose to ignore these errors, turn validation off with --validate=false
    resource mapping not found for name: "psp" namespace: "" from "psp.yaml": no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"

``err.line`` is always the absolute 1-based line in the file (for YAML errors
the line of the problem, otherwise the document's first line).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator

import attrs
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scanner import ScannerError
from ruamel.yaml.tag import Tag

from k8semu.api.gofmt import go_quote
from k8semu.api.resources import NoKindMatch, ResourceInfo, by_kind

__all__ = [
    "ManifestDoc",
    "ManifestError",
    "load_manifests",
    "load_text",
    "make_yaml",
    "resource_for",
    "MANIFEST_EXTENSIONS",
    "STDIN",
]

#: File endings kubectl picks up when ``-f`` names a directory.
MANIFEST_EXTENSIONS = (".json", ".yaml", ".yml")
#: The source name kubectl gives standard input.
STDIN = "STDIN"

_STOP_VALIDATE = "if you choose to ignore these errors, turn validation off with --validate=false"
_CRD_HINT = "ensure CRDs are installed first"


class ManifestError(Exception):
    """A manifest that cannot be used, with kubectl's one-line message.

    Attributes:
        source: file path as given (``STDIN`` for ``-``).
        line: absolute 1-based line in that file (0 when unknown, e.g. a missing path).
        message: kubectl's message (``str(err)``), without the ``error: `` prefix.
        reason: ``"path"`` (missing file), ``"parse"`` (YAML/JSON syntax),
            ``"validation"`` (not an object / apiVersion or kind not set),
            ``"decode"`` (empty apiVersion/kind), ``"mapping"`` (kind not served).
            ``parse`` and ``validation`` stop the rest of the file, as in kubectl.
        hint: a second line kubectl prints after the message
            (``ensure CRDs are installed first`` for ``mapping``), else ``None``.
    """

    def __init__(
        self, message: str, *, source: str, line: int = 0, reason: str = "parse",
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.reason = reason
        self.hint = hint

    @property
    def stops_file(self) -> bool:
        """True when kubectl stops reading the file at this error (parse/validation)."""
        return self.reason in ("parse", "validation")

    def __repr__(self) -> str:
        return f"ManifestError({self.message!r}, source={self.source!r}, line={self.line})"


@attrs.frozen(eq=False)
class ManifestDoc:
    """One object read from a manifest (a ``List`` contributes one per item).

    Attributes:
        source: file path as given (``STDIN`` for ``-``).
        index: 0-based number of the (non-empty) document in the file.
        line: 1-based line where the document (or list item) starts.
        obj: the wire-form object (plain dict/list/str/int/float/bool/None), or
            ``None`` when the document could not be parsed.
        error: a :class:`ManifestError` when the document cannot be applied, else ``None``.
        item: position inside a flattened ``items`` list, else ``None``.
    """

    source: str
    index: int
    line: int
    obj: dict[str, Any] | None = None
    error: ManifestError | None = None
    item: int | None = None

    @property
    def ok(self) -> bool:
        """True when the document can be sent to the server."""
        return self.error is None


# --------------------------------------------------------------------------- parsing

_PLAIN = "tag:k8semu.local,2024:plain"  # marker tag for untagged plain scalars
_YAML_TAG = "tag:yaml.org,2002:"


class _PlainMarkingResolver(VersionedResolver):
    """Leaves plain scalars unresolved so go-yaml v2's rules can be applied later."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            return Tag(suffix=_PLAIN)
        return super().resolve(kind, value, implicit)


def make_yaml() -> YAML:
    """A ruamel.yaml instance for composing one manifest document into nodes.

    Safe, pure-Python, with a resolver that marks plain scalars so that
    :mod:`k8semu.api.manifest` resolves them with go-yaml v2 (YAML 1.1) rules.
    Only ``compose``/``compose_all`` are meant to be used on it.
    """
    y = YAML(typ="safe", pure=True)
    y.Resolver = _PlainMarkingResolver
    y.allow_duplicate_keys = True
    return y


class _YamlFail(Exception):
    """A go-yaml style failure inside one document: ``detail`` follows ``error converting YAML to JSON: ``."""

    def __init__(self, detail: str, line0: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.line0 = line0  # 0-based line within the document's chunk, when known


# go-yaml v2 scalar resolution -------------------------------------------------------

_RESOLVE_MAP: dict[str, Any] = {}
for _words, _val in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), math.nan),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    (("-.inf", "-.Inf", "-.INF"), -math.inf),
):
    for _w in _words:
        _RESOLVE_MAP[_w] = _val

_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")


def _go_int(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        return sign * int(body[2:], 16)
    if body[:2].lower() == "0o":
        return sign * int(body[2:], 8)
    if body[:2].lower() == "0b":
        return sign * int(body[2:], 2)
    if len(body) > 1 and body[0] == "0":
        return sign * int(body[1:], 8)
    return sign * int(body)


def _resolve_plain(value: str) -> Any:
    """A plain scalar's value as go-yaml v2 decodes it into ``interface{}``."""
    if value in _RESOLVE_MAP:
        return _RESOLVE_MAP[value]
    first = value[:1]
    if first == ".":
        if _DOT_FLOAT.match(value):
            return float(value)
        return value
    if first.isdigit() or first in "+-":
        # Timestamps would match here too, but go-yaml hands them back as the
        # original string when decoding into interface{}; nothing to do.
        plain = value.replace("_", "")
        if _GO_INT.match(plain):
            return _go_int(plain)
        if _YAML_FLOAT.match(plain):
            return float(plain)
    return value


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG):] if tag.startswith(_YAML_TAG) else tag


def _tagged_scalar(tag: str, value: str) -> Any:
    """A scalar with an explicit (or quoted-implied ``!!str``) tag."""
    short = _short_tag(tag)
    if short in ("!!str", "!!timestamp"):
        return value
    if short == "!!binary":
        try:
            raw = base64.b64decode("".join(value.split()), validate=True)
        except ValueError:
            raise _YamlFail("yaml: !!binary value contains invalid base64 data") from None
        return raw.decode("utf-8", "replace")
    if short in ("!!int", "!!float", "!!bool", "!!null"):
        got = _resolve_plain(value)
        kind = {bool: "!!bool", int: "!!int", float: "!!float", type(None): "!!null"}.get(
            type(got), "!!str")
        if kind == short or (short == "!!float" and kind == "!!int"):
            return float(got) if short == "!!float" else got
        raise _YamlFail(f"yaml: cannot decode {kind} `{value}` as a {short}")
    return value  # unknown/local tags: go-yaml keeps the text


def _json_float(value: float) -> Any:
    """What ``json.Marshal`` then apimachinery's number decoding make of a float."""
    if math.isnan(value):
        raise _YamlFail("json: unsupported value: NaN")
    if math.isinf(value):
        raise _YamlFail(f"json: unsupported value: {'+' if value > 0 else '-'}Inf")
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _map_key(key: Any) -> str:
    """sigs.k8s.io/yaml's stringification of non-string map keys."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return ".nan"
        if math.isinf(key):
            return ".inf" if key > 0 else "-.inf"
        if key.is_integer() and abs(key) < 1e21:
            return str(int(key))
        return repr(key)
    type_name = "<nil>" if key is None else type(key).__name__
    raise _YamlFail(f"unsupported map key of type: {type_name}, key: {key!r}")


def _is_merge_key(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.value == "<<" and (
        str(node.tag) in (_PLAIN, _YAML_TAG + "merge"))


def _convert(node: Node, depth: int = 0) -> Any:
    """Node tree -> wire-form value with go-yaml v2 + sigs.k8s.io/yaml semantics."""
    if depth > 10_000:
        raise _YamlFail("yaml: exceeded max depth of 10000")
    if isinstance(node, ScalarNode):
        if _SURROGATE.search(node.value):
            # libyaml refuses \uD800-\uDFFF escapes (no surrogate pairs in YAML)
            raise _YamlFail(f"yaml: line {node.start_mark.line + 1}: found invalid Unicode character "
                            "escape code", node.start_mark.line)
        tag = str(node.tag)
        val = _resolve_plain(node.value) if tag == _PLAIN else _tagged_scalar(tag, node.value)
        return _json_float(val) if isinstance(val, float) else val
    if isinstance(node, SequenceNode):
        return [_convert(child, depth + 1) for child in node.value]
    if isinstance(node, MappingNode):
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            if _is_merge_key(knode):
                _merge_into(out, vnode, depth)
                continue
            if not isinstance(knode, ScalarNode):
                raise _YamlFail("yaml: invalid map key: complex keys are not supported",
                                knode.start_mark.line)
            key = _map_key(_resolve_plain(knode.value) if str(knode.tag) == _PLAIN
                           else _tagged_scalar(str(knode.tag), knode.value))
            out[key] = _convert(vnode, depth + 1)
        return out
    raise _YamlFail(f"yaml: unsupported node {type(node).__name__}")


def _merge_into(out: dict[str, Any], value: Node, depth: int) -> None:
    """go-yaml v2 ``<<``: a map, or a list of maps where earlier maps win."""
    if isinstance(value, MappingNode):
        out.update(_convert(value, depth + 1))
        return
    if isinstance(value, SequenceNode) and all(isinstance(v, MappingNode) for v in value.value):
        for child in reversed(value.value):
            out.update(_convert(child, depth + 1))
        return
    raise _YamlFail("yaml: map merge requires map or sequence of maps as the value")


# libyaml's wording for ruamel's problems (ruamel is a port of PyYAML, itself a
# port of libyaml; the marks agree, the texts drifted).
_PROBLEM_TEXT: tuple[tuple[re.Pattern[str], str | None, str], ...] = tuple(
    (re.compile(pat), ctx, text) for pat, ctx, text in (
        (r"found character .* that cannot start any token", None,
         "found character that cannot start any token"),
        (r"mapping values are not allowed here", None, "mapping values are not allowed in this context"),
        (r"mapping keys are not allowed here", None, "mapping keys are not allowed in this context"),
        (r"sequence entries are not allowed here", None,
         "block sequence entries are not allowed in this context"),
        (r"found unknown escape character", None, "found unknown escape character"),
        (r"expected escape sequence of", None, "did not find expected hexdecimal number"),
        (r"found unexpected document separator", None, "found unexpected document indicator"),
        (r"expected <block end>, but found", "while parsing a block mapping", "did not find expected key"),
        (r"expected <block end>, but found", "while parsing a block collection",
         "did not find expected '-' indicator"),
        (r"expected ',' or '\]'", None, "did not find expected ',' or ']'"),
        (r"expected ',' or '\}'", None, "did not find expected ',' or '}'"),
        (r"expected the node content", None, "did not find expected node content"),
        (r"expected '<document start>'", None, "did not find expected <document start>"),
        (r"expected alphabetic or numeric character", None,
         "did not find expected alphabetic or numeric character"),
        (r"expected a comment or a line break", None, "did not find expected comment or line break"),
        (r"found undefined tag handle", None, "found undefined tag handle"),
        (r"found a tab character", None, "found a tab character that violates indentation"),
    )
)


def _libyaml_problem(problem: str, context: str | None) -> str:
    for pat, ctx, text in _PROBLEM_TEXT:
        if pat.match(problem) and (ctx is None or ctx == context):
            return text
    return problem


def _from_ruamel(exc: YAMLError) -> _YamlFail:
    """A ruamel error as go-yaml v2 would word it (line relative to the document)."""
    if isinstance(exc, ReaderError):
        return _YamlFail("yaml: control characters are not allowed")
    if not isinstance(exc, MarkedYAMLError):
        return _YamlFail(f"yaml: {exc}")
    problem = exc.problem or "unknown problem parsing YAML content"
    pmark, cmark = exc.problem_mark, exc.context_mark
    where_line0 = pmark.line if pmark is not None else (cmark.line if cmark is not None else None)
    if problem.startswith("found undefined alias"):
        name = problem.split(" ", 3)[-1].strip("'\"")
        return _YamlFail(f"yaml: unknown anchor '{name}' referenced", where_line0)
    text = _libyaml_problem(problem, exc.context)
    # go-yaml v2 parser.fail(): problem mark first; scanner errors count lines from 1,
    # parser errors print the 0-based line (hence "one line early"); line 0 is omitted.
    line = 0
    if pmark is not None and pmark.line != 0:
        line = pmark.line + (1 if isinstance(exc, ScannerError) else 0)
    elif cmark is not None and cmark.line != 0:
        line = cmark.line
    where = f"line {line}: " if line else ""
    return _YamlFail(f"yaml: {where}{text}", where_line0)


# --------------------------------------------------------------------------- splitting


@attrs.frozen
class _Chunk:
    text: str
    start0: int  # 0-based absolute line of the chunk's first line
    error: str | None = None  # an invalid separator ends the stream here


def _split_documents(text: str) -> Iterator[_Chunk]:
    """apimachinery ``YAMLReader``: cut on lines that start with ``---``."""
    buf: list[str] = []
    start = 0
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)
    for i, line in enumerate(lines):
        if line.startswith("---"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                yield _Chunk("", i, f"invalid Yaml document separator: {rest}")
                return
            if buf:
                yield _Chunk("".join(buf), start)
            buf, start = [], i + 1
            continue
        buf.append(line)
    if buf:
        yield _Chunk("".join(buf), start)


def _first_line0(text: str) -> int:
    """0-based line of the first non-blank, non-comment line in ``text`` (0 if none)."""
    for i, line in enumerate(text.split("\n")):
        s = line.strip()
        if s and not s.startswith("#"):
            return i
    return 0


def _parse_chunk(yaml: YAML, chunk: str) -> tuple[Any, Node | None]:
    """Parse one document; returns (wire value, root node) — (None, None) when empty."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            node = next(iter(yaml.compose_all(chunk)), None)
    except YAMLError as exc:
        raise _from_ruamel(exc) from None
    if node is None:
        return None, None
    return _convert(node), node


def _json_stream(text: str) -> list[tuple[Any, int]] | None:
    """``{…}{…}`` as concatenated JSON values with their 0-based lines, or None if not JSON."""
    dec = json.JSONDecoder(parse_constant=_reject_constant)
    out: list[tuple[Any, int]] = []
    pos, end = 0, len(text)
    ws = re.compile(r"\s*")
    try:
        while True:
            pos = ws.match(text, pos).end()
            if pos >= end:
                return out
            value, nxt = dec.raw_decode(text, pos)
            out.append((value, text.count("\n", 0, pos)))
            pos = nxt
    except ValueError:
        return None


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


# --------------------------------------------------------------------------- checks


def _validation_errors(obj: Any) -> list[str]:
    """kubectl's ``getObjectKind`` checks (client-side validation)."""
    if not isinstance(obj, dict):
        return ["invalid object to validate"]
    errs = []
    api_version = obj.get("apiVersion")
    if api_version is None:
        errs.append("apiVersion not set")
    elif not isinstance(api_version, str):
        errs.append("apiVersion isn't string type")
    elif api_version.count("/") > 1:
        errs.append(f"unexpected GroupVersion string: {api_version}")
    kind = obj.get("kind")
    if kind is None:
        errs.append("kind not set")
    elif not isinstance(kind, str):
        errs.append("kind isn't string type")
    return errs


def _invalid_doc(obj: Any, source: str, index: int, line: int, item: int | None) -> ManifestDoc | None:
    """A doc carrying kubectl's validation error, or None when ``obj`` passes."""
    errs = _validation_errors(obj)
    if not errs:
        return None
    detail = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"  # utilerrors.Aggregate
    msg = f"error validating {go_quote(source)}: error validating data: {detail}; {_STOP_VALIDATE}"
    return ManifestDoc(source, index, line, obj if isinstance(obj, dict) else None,
                       ManifestError(msg, source=source, line=line, reason="validation"), item)


def _compact_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _expand(obj: dict[str, Any], source: str, index: int, line: int,
            item_lines: list[int]) -> Iterator[ManifestDoc]:
    """One validated object -> ManifestDocs (lists flattened, decode errors attached)."""
    items = obj.get("items")
    if isinstance(items, list):
        list_kind = obj.get("kind", "")
        typed = list_kind != "List" and list_kind.endswith("List")
        for n, item in enumerate(items):
            iline = item_lines[n] if n < len(item_lines) else line
            if typed and isinstance(item, dict) and not item.get("kind") and not item.get("apiVersion"):
                item = {**item, "apiVersion": obj.get("apiVersion"), "kind": list_kind[: -len("List")]}
            invalid = _invalid_doc(item, source, index, iline, n)
            if invalid is not None:
                yield invalid
                return
            yield _decoded(item, source, index, iline, n)
        return
    yield _decoded(obj, source, index, line, None)


def _decoded(obj: dict[str, Any], source: str, index: int, line: int, item: int | None) -> ManifestDoc:
    """The unstructured decoder's checks: empty ``kind``/``apiVersion`` are not objects."""
    missing = "Kind" if not obj["kind"] else ("apiVersion" if not obj["apiVersion"] else None)
    if missing:
        msg = f"unable to decode {go_quote(source)}: Object '{missing}' is missing in '{_compact_json(obj)}'"
        return ManifestDoc(source, index, line, obj,
                           ManifestError(msg, source=source, line=line, reason="decode"), item)
    return ManifestDoc(source, index, line, obj, None, item)


def _items_lines(root: Node) -> list[int]:
    """0-based chunk lines of each ``items`` entry ([] when not a plain ``items:`` sequence)."""
    lines: list[int] = []
    if isinstance(root, MappingNode):
        for knode, vnode in root.value:
            if isinstance(knode, ScalarNode) and knode.value == "items" and isinstance(vnode, SequenceNode):
                lines = [child.start_mark.line for child in vnode.value]
    return lines


# --------------------------------------------------------------------------- public API


def load_text(text: str, source_name: str) -> list[ManifestDoc]:
    """Read every object in one file's text, in order, as kubectl's StreamVisitor does.

    Args:
        text: the file contents (YAML, KYAML, JSON or a JSON stream).
        source_name: the name used in messages (a path, or ``STDIN``).

    Returns:
        One :class:`ManifestDoc` per non-empty document (per item for lists).
        A document that fails to parse or validate becomes a doc with ``error``
        set and is the last one returned (kubectl stops reading the file there);
        decode errors (empty ``kind``) are attached and reading goes on.
        Never raises for bad content.
    """
    out: list[ManifestDoc] = []
    index = 0
    stripped = text.lstrip()
    if stripped.startswith("{"):
        stream = _json_stream(text)
        if stream is not None:
            for value, line0 in stream:
                if value is None:
                    continue
                if not _emit(out, value, source_name, index, line0 + 1, []):
                    return out
                index += 1
            return out
    yaml = make_yaml()
    for chunk in _split_documents(text):
        if chunk.error is not None:
            msg = f"error parsing {source_name}: {chunk.error}"
            out.append(ManifestDoc(source_name, index, chunk.start0 + 1, None,
                                   ManifestError(msg, source=source_name, line=chunk.start0 + 1)))
            return out
        try:
            value, root = _parse_chunk(yaml, chunk.text)
        except _YamlFail as fail:
            rel = fail.line0 if fail.line0 is not None else _first_line0(chunk.text)
            line = chunk.start0 + rel + 1
            msg = f"error parsing {source_name}: error converting YAML to JSON: {fail.detail}"
            out.append(ManifestDoc(source_name, index, chunk.start0 + _first_line0(chunk.text) + 1,
                                   None, ManifestError(msg, source=source_name, line=line)))
            return out
        if value is None or root is None:
            continue  # empty document: only comments, blanks or `null`
        item_lines = [chunk.start0 + n + 1 for n in _items_lines(root)]
        doc_line = chunk.start0 + root.start_mark.line + 1
        if not _emit(out, value, source_name, index, doc_line, item_lines):
            return out
        index += 1
    return out


def _emit(out: list[ManifestDoc], value: Any, source: str, index: int, line: int,
          item_lines: list[int]) -> bool:
    """Validate one document and append its docs; False when the file must stop here."""
    invalid = _invalid_doc(value, source, index, line, None)
    if invalid is not None:
        out.append(invalid)
        return False
    for doc in _expand(value, source, index, line, item_lines):
        out.append(doc)
        if doc.error is not None and doc.error.stops_file:
            return False
    return True


def _read_file(path: Path) -> str:
    """Bytes -> text the way kubectl's FileVisitor does (UTF-8, BOMs honoured)."""
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig", "replace")


def _walk(root: str, recursive: bool) -> list[str]:
    """Files under ``root`` in Go ``filepath.Walk`` order, filtered by extension."""
    found: list[str] = []
    for name in sorted(os.listdir(root)):
        path = os.path.normpath(os.path.join(root, name))
        if os.path.isdir(path):
            if recursive:
                found.extend(_walk(path, recursive))
        elif path.endswith(MANIFEST_EXTENSIONS):
            found.append(path)
    return found


def load_manifests(path: str | Path, recursive: bool = False, text: str | None = None) -> list[ManifestDoc]:
    """Read ``kubectl apply -f PATH [-R]``: a file, a directory, or ``-`` for stdin.

    Args:
        path: a file (read whatever its extension), a directory (its
            ``.json``/``.yaml``/``.yml`` files in name order; subdirectories
            only with ``recursive``, like ``-R``), or ``"-"`` for standard input
            (source name ``STDIN``).
        recursive: descend into subdirectories.
        text: for ``"-"``, the input to use instead of reading ``sys.stdin``.

    Returns:
        The docs of every file in order (see :func:`load_text`).

    Raises:
        ManifestError: ``the path "X" does not exist`` (reason ``path``); like
            kubectl, nothing is read in that case.
    """
    p = str(path)
    if p == "-":
        return load_text(sys.stdin.read() if text is None else text, STDIN)
    if not os.path.exists(p):
        raise ManifestError(f"the path {go_quote(p)} does not exist", source=p, reason="path")
    if os.path.isdir(p):
        docs: list[ManifestDoc] = []
        for f in _walk(p, recursive):
            docs.extend(load_text(_read_file(Path(f)), f))
        return docs
    return load_text(_read_file(Path(p)), p)


def resource_for(doc: ManifestDoc, api: Any = None) -> ResourceInfo:
    """The served resource for a loaded doc (``apps/v1`` ``Deployment`` -> deployments).

    With ``api`` (an APIServer), a kind one of its CRDs defines resolves too.

    Raises:
        ManifestError: the doc's own error if it has one; otherwise kubectl's
            mapping error (reason ``mapping``, ``hint`` = ``ensure CRDs are
            installed first``), e.g. ``resource mapping not found for name:
            "psp" namespace: "" from "psp.yaml": no matches for kind
            "PodSecurityPolicy" in version "policy/v1beta1"``. Name and
            namespace are the manifest's own (empty when absent).
    """
    if doc.error is not None:
        raise doc.error
    obj = doc.obj or {}
    try:
        if api is not None:
            return api.resource_for_kind(obj["apiVersion"], obj["kind"])
        return by_kind(obj["apiVersion"], obj["kind"])
    except NoKindMatch as exc:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name = meta.get("name") if isinstance(meta.get("name"), str) else ""
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
        msg = (f"resource mapping not found for name: {go_quote(name)} namespace: "
               f"{go_quote(namespace)} from {go_quote(doc.source)}: {exc}")
        raise ManifestError(msg, source=doc.source, line=doc.line, reason="mapping",
                            hint=_CRD_HINT) from None
