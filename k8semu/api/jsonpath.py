"""kubectl's JSONPath: a port of client-go's ``util/jsonpath`` (the parser and the evaluator),
so that what a template prints, and the errors it gives, are kubectl's; used by the CLI's
``-o jsonpath`` / ``wait --for=jsonpath`` and by the API server's custom resource printer
columns and scale paths (as apiextensions-apiserver runs the same package).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .gofmt import go_json, go_quote, go_sharp_v, go_type_name, go_v

__all__ = ["NIL", "JSONPath", "JSONPathError", "JSONPathParseError", "JSONPathExecError", "parse_jsonpath",
           "relaxed_jsonpath", "jsonpath_text", "jsonpath_exec_error"]


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


#: a JSON null met on the way, among a node's results: Go's nil interface (skipped, printed <nil>)
NIL = object()


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
                    out.extend(self._run(nodes, i + 1, None if item is NIL else item, in_range=True)[0])
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
        if v is NIL or v is None:
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
            return [c for v in values if v is not NIL and v is not None for c in self._wrap(_items_of(v))]
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
        return [NIL if v is None else v for v in values]

    def _field(self, values: list[Any], name: str) -> list[Any]:
        out = []
        for v in values:
            if v is NIL or v is None:
                continue
            if isinstance(v, Mapping) and name in v:
                out.append(NIL if v[name] is None else v[name])
        if not out and values and not self.allow_missing_keys:
            raise JSONPathExecError(f"{name} is not found")
        return out

    def _array(self, values: list[Any], params: list[list[Any]]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if v is NIL or v is None:
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
            if v is NIL or v is None:
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
                shown = "<nil>" if v is NIL or v is None else go_v(v)
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
                a, b = (None if x is NIL else x for x in (lefts[0], rights[0]))
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
