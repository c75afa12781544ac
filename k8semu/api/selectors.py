"""Label selectors and field selectors, as ``k8s.io/apimachinery`` ``labels`` and ``fields``.

Label selectors
    :func:`parse_label_selector` ports ``labels.Parse``: a small lexer (special
    symbols ``= == != ! ( ) , > <``, keywords ``in`` / ``notin``, whitespace
    ``' ' \\t \\r \\n``) and the same recursive-descent parser, so both the
    accepted language (``x in (a,,b)``, ``x=``, ``!x``, ``x>3``) and the error
    texts (``unable to parse requirement: <nil>: Invalid value: "a b": ...``)
    match kube-apiserver. The result is a frozen :class:`LabelSelector` whose
    requirements are sorted by key; ``str()`` is upstream ``String()``.

    From the API type (``{matchLabels, matchExpressions}``) use
    :func:`selector_from_label_selector`; it mirrors
    ``metav1.LabelSelectorAsSelector``: a missing (``None``) selector selects
    **nothing**, an empty ``{}`` selects **everything**. Pass
    ``nil_selects_everything=True`` where the API says a null selector means
    "all" instead. :func:`selector_from_set` mirrors ``labels.SelectorFromSet``
    for plain ``map[string]string`` selectors (Service, ReplicationController):
    ``None`` and ``{}`` both select everything.

    Parsers raise ``ValueError`` with upstream's text; the API layer turns that
    into a 400 ``BadRequest``.

Field selectors
    :func:`parse_field_selector` ports ``fields.ParseSelector`` (terms split on
    unescaped ``,``, sorted, each ``field=value`` / ``field==value`` /
    ``field!=value``, values unescaped with ``\\\\ \\, \\=``). Which fields a
    resource accepts, and their values for an object, come from
    :func:`validate_field_selector` (the per-kind field-label conversion
    functions, raising ``BadRequest`` with upstream's message) and
    :func:`field_set` (the registries' ``ToSelectableFields``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from k8semu.api import resources
from k8semu.api.errors import BadRequest
from k8semu.api.gofmt import go_quote
from k8semu.api.validation import is_label_value, is_qualified_name

__all__ = [
    "Requirement",
    "LabelSelector",
    "EVERYTHING",
    "NOTHING",
    "parse_label_selector",
    "selector_from_label_selector",
    "selector_from_set",
    "set_matches",
    "MapSelectorIndex",
    "selector_string",
    "FieldTerm",
    "FieldSelector",
    "parse_field_selector",
    "validate_field_selector",
    "field_set",
]

# Operators, spelled as upstream's selection.Operator values.
IN, NOT_IN = "in", "notin"
EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
EXISTS, DOES_NOT_EXIST = "exists", "!"
GREATER_THAN, LESS_THAN = "gt", "lt"
_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS = _BINARY_OPERATORS + (EXISTS, DOES_NOT_EXIST)

_INT64 = re.compile(r"[+-]?[0-9]+")


# --- Go-flavoured rendering helpers (messages only) -------------------------

def _go_string_slice(values: list[str] | None) -> str:
    """``%#v`` of a ``[]string``."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


class _Lazy:
    """A string made only when formatted (``f"{lazy}"``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __format__(self, spec: str) -> str:
        return format(self.make(), spec)


def _aggregate(msgs: list[str]) -> str:
    """``utilerrors.Aggregate.Error()``: one message bare, several bracketed, deduplicated."""
    seen: list[str] = []
    for m in msgs:
        if m not in seen:
            seen.append(m)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# label key / value validation: k8semu.api.validation (apimachinery's util/validation)


def _invalid(path: str, value: str, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()`` for a string value."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


def _key_error(key: str, path: str) -> str | None:
    errs = is_qualified_name(key)
    return _invalid(path, key, "; ".join(errs)) if errs else None


def _is_int64(s: str) -> bool:
    return bool(_INT64.fullmatch(s)) and -(2**63) <= int(s) < 2**63


# --- requirements and selectors ---------------------------------------------

@dataclass(frozen=True)
class Requirement:
    """One ``key <op> values`` clause (upstream ``labels.Requirement``).

    ``operator`` is one of ``in notin = == != exists ! gt lt``; ``values`` is a
    tuple (sorted and de-duplicated when it came from a parsed string). Build
    it with :meth:`new` to get upstream's validation.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: str, values: Iterable[str] | None = ()) -> "Requirement":
        """``labels.NewRequirement``: validate key, operator/value arity and values.

        ``values=None`` stands for a Go nil slice (only matters in messages).

        Raises:
            ValueError: the aggregated field errors, e.g.
                ``key: Invalid value: "a b": name part must consist of ...`` or
                ``values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty``.
        """
        vals = None if values is None else list(values)
        n = len(vals or [])
        errs: list[str] = []
        kerr = _key_error(key, "key")
        if kerr:
            errs.append(kerr)
        shown = _Lazy(lambda: _go_string_slice(vals))  # only messages need it
        if operator in (IN, NOT_IN):
            if n == 0:
                errs.append(f"values: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty")
        elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
            if n != 1:
                errs.append(f"values: Invalid value: {shown}: exact-match compatibility requires one single value")
        elif operator in (EXISTS, DOES_NOT_EXIST):
            if n != 0:
                errs.append(f"values: Invalid value: {shown}: values set must be empty for exists and does not exist")
        elif operator in (GREATER_THAN, LESS_THAN):
            if n != 1:
                errs.append(f"values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is required")
            for i, v in enumerate(vals or []):
                if not _is_int64(v):
                    errs.append(_invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
        else:
            supported = ", ".join(go_quote(o) for o in _VALID_OPERATORS)
            errs.append(f"operator: Unsupported value: {go_quote(operator)}: supported values: {supported}")
        for i, v in enumerate(vals or []):
            verrs = is_label_value(v)
            if verrs:
                errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(verrs)))
        if errs:
            raise ValueError(_aggregate(errs))
        return cls(key, operator, tuple(vals or ()))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Upstream ``Requirement.Matches`` (``notin``/``!=`` match a missing key)."""
        labels = labels or {}
        op, has = self.operator, self.key in labels
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return has and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return not has or labels[self.key] not in self.values
        if op == EXISTS:
            return has
        if op == DOES_NOT_EXIST:
            return not has
        if op in (GREATER_THAN, LESS_THAN):
            if not has or not _is_int64(labels[self.key]) or len(self.values) != 1:
                return False
            if not _is_int64(self.values[0]):
                return False
            lv, rv = int(labels[self.key]), int(self.values[0])
            return lv > rv if op == GREATER_THAN else lv < rv
        return False

    def __str__(self) -> str:
        op = self.operator
        head = ("!" if op == DOES_NOT_EXIST else "") + self.key
        if op in (EXISTS, DOES_NOT_EXIST):
            return head
        sym = {EQUALS: "=", DOUBLE_EQUALS: "==", NOT_EQUALS: "!=", IN: " in ", NOT_IN: " notin ",
               GREATER_THAN: ">", LESS_THAN: "<"}.get(op, "")
        vals = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            vals = f"({vals})"
        return head + sym + vals


@dataclass(frozen=True)
class LabelSelector:
    """An AND of :class:`Requirement` s, sorted by key (upstream ``internalSelector``).

    ``nothing=True`` is upstream ``labels.Nothing()``: matches no object and
    renders as ``""``. An empty selector (``EVERYTHING``) matches every object.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object's ``metadata.labels`` (``None`` = no labels) satisfy every requirement."""
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True for the match-everything selector (upstream ``Empty()``)."""
        return not self.nothing and not self.requirements

    def add(self, *reqs: Requirement) -> "LabelSelector":
        """A new selector with ``reqs`` added, re-sorted by key (``Nothing`` stays ``Nothing``)."""
        if self.nothing:
            return self
        return LabelSelector(tuple(sorted(self.requirements + reqs, key=lambda r: r.key)))

    def requires_exact_match(self, key: str) -> str | None:
        """The single value ``key`` must equal (``=``, ``==`` or one-value ``in``), else None."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return "" if self.nothing else ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

# --- the label selector lexer and parser ------------------------------------

_T_ERROR, _T_EOS, _T_CLOSE, _T_COMMA, _T_NOT, _T_DEQ, _T_EQ, _T_GT, _T_ID, _T_IN, _T_LT, _T_NEQ, \
    _T_NOTIN, _T_OPEN = range(14)
_STRING2TOKEN = {")": _T_CLOSE, ",": _T_COMMA, "!": _T_NOT, "==": _T_DEQ, "=": _T_EQ, ">": _T_GT,
                 "in": _T_IN, "<": _T_LT, "!=": _T_NEQ, "notin": _T_NOTIN, "(": _T_OPEN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    """Tokenise like upstream's ``Lexer``; a NUL character ends the input as in Go."""
    items: list[tuple[int, str]] = []
    pos, n = 0, len(s)

    def read() -> str:
        nonlocal pos
        if pos < n:
            pos += 1
            return s[pos - 1]
        return "\0"

    while True:
        ch = read()
        while ch in _WHITESPACE:
            ch = read()
        if ch == "\0":
            items.append((_T_EOS, ""))
            return items
        pos -= 1
        if ch in _SPECIAL:
            buf, last = "", None
            while True:
                c = read()
                if c == "\0":
                    break
                if c in _SPECIAL:
                    buf += c
                    if buf in _STRING2TOKEN:
                        last = (_STRING2TOKEN[buf], buf)
                    elif last is not None:
                        pos -= 1
                        break
                else:
                    pos -= 1
                    break
            items.append(last or (_T_ERROR, f"error expected: keyword found '{buf}'"))
        else:
            buf = ""
            while True:
                c = read()
                if c == "\0":
                    break
                if c in _SPECIAL or c in _WHITESPACE:
                    pos -= 1
                    break
                buf += c
            items.append((_STRING2TOKEN.get(buf, _T_ID), buf))


class _Parser:
    """Upstream's ``labels.Parser`` over the scanned token list."""

    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    def _tok(self, i: int, values: bool) -> tuple[int, str]:
        tok, lit = self.items[min(i, len(self.items) - 1)]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        return self._tok(self.pos, values)

    def consume(self, values: bool = True) -> tuple[int, str]:
        self.pos += 1
        return self._tok(self.pos - 1, values)

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.parse_requirement())
                except ValueError as e:
                    raise ValueError(f"unable to parse requirement: {e}") from None
                t, l = self.consume()
                if t == _T_EOS:
                    return reqs
                if t == _T_COMMA:
                    t2, l2 = self.lookahead()
                    if t2 not in (_T_ID, _T_NOT):
                        raise ValueError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise ValueError(f"found '{l}', expected: ',' or 'end of string'")
            elif tok == _T_EOS:
                return reqs
            else:
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            return Requirement.new(key, op, [])
        op = self.parse_operator()
        if op in (IN, NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return Requirement.new(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume()
        if tok == _T_NOT:
            op = DOES_NOT_EXIST
            tok, lit = self.consume()
        if tok != _T_ID:
            raise ValueError(f"found '{lit}', expected: identifier")
        err = _key_error(lit, "<nil>")
        if err:
            raise ValueError(err)
        if self.lookahead()[0] in (_T_EOS, _T_COMMA) and op != DOES_NOT_EXIST:
            op = EXISTS
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(values=False)
        ops = {_T_IN: IN, _T_EQ: EQUALS, _T_DEQ: DOUBLE_EQUALS, _T_GT: GREATER_THAN,
               _T_LT: LESS_THAN, _T_NOTIN: NOT_IN, _T_NEQ: NOT_EQUALS}
        if tok not in ops:
            raise ValueError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return ops[tok]

    def parse_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _T_OPEN:
            raise ValueError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_T_ID, _T_COMMA):
            s = self.parse_identifiers_list()
            if self.consume()[0] != _T_CLOSE:
                raise ValueError(f"found '{lit}', expected: ')'")
            return s
        if tok == _T_CLOSE:
            self.consume()
            return {""}
        raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        s: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _T_ID:
                s.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return s
                raise ValueError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                if not s:
                    s.add("")  # "(,"
                tok2, _ = self.lookahead()
                if tok2 == _T_CLOSE:
                    s.add("")  # ",)"
                    return s
                if tok2 == _T_COMMA:
                    self.consume()
                    s.add("")  # ",,"
            else:
                raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        if self.lookahead()[0] in (_T_EOS, _T_COMMA):
            return {""}
        tok, lit = self.consume()
        if tok == _T_ID:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


def parse_label_selector(s: str) -> LabelSelector:
    """Parse a label selector string as upstream ``labels.Parse``.

    Grammar: comma-separated requirements, each ``[!]KEY``, ``KEY (=|==|!=) VALUE``,
    ``KEY (in|notin) (V1,V2,...)`` or ``KEY (>|<) INTEGER``. ``""`` selects everything.

    Raises:
        ValueError: upstream's message, e.g. ``found ',', expected: !, identifier,
            or 'end of string'`` or ``unable to parse requirement: <nil>: Invalid
            value: "a b": name part must consist of ...``.
    """
    reqs = _Parser(s).parse()
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


_MATCH_EXPRESSION_OPS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def selector_from_label_selector(
    obj: Mapping[str, Any] | None, *, nil_selects_everything: bool = False
) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` dict, as ``metav1.LabelSelectorAsSelector``.

    ``obj`` is ``{"matchLabels": {k: v}, "matchExpressions": [{"key", "operator",
    "values"}]}``. Semantics: ``None`` selects **nothing** (upstream's
    ``labels.Nothing()``; pass ``nil_selects_everything=True`` for APIs where a
    null selector means all objects); ``{}`` or empty lists/maps select **everything**.

    Raises:
        ValueError: ``"Foo" is not a valid label selector operator`` or a
            :meth:`Requirement.new` error (``key: Invalid value: ...``).
    """
    if obj is None:
        return EVERYTHING if nil_selects_everything else NOTHING
    match_labels = obj.get("matchLabels") or {}
    exprs = obj.get("matchExpressions") or []
    if not match_labels and not exprs:
        return EVERYTHING
    reqs = [Requirement.new(k, EQUALS, [match_labels[k]]) for k in sorted(match_labels)]
    for expr in exprs:
        op = _MATCH_EXPRESSION_OPS.get(expr.get("operator", ""))
        if op is None:
            raise ValueError(f"{go_quote(str(expr.get('operator', '')))} is not a valid label selector operator")
        values = expr.get("values")
        reqs.append(Requirement.new(expr.get("key", ""), op, list(values) if values else None))
    return EVERYTHING.add(*reqs)


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """``labels.SelectorFromSet``: ``k=v`` for every pair; ``None`` / ``{}`` select everything.

    No validation (as upstream's pre-validated variant).
    """
    if not labels:
        return EVERYTHING
    return LabelSelector(tuple(Requirement(k, EQUALS, (labels[k],)) for k in sorted(labels)))


def set_matches(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """``selector_from_set(selector).matches(labels)`` without building the selector: every
    pair of a map selector (a Service's ``spec.selector``) present with the same value."""
    if not selector:
        return True
    if not labels:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


class MapSelectorIndex:
    """The map selectors of one kind (Services' ``spec.selector``), found from a pod's labels.

    Upstream answers "which Services select this pod" (``GetPodServices``,
    ``GetPodServiceMemberships``) by testing every Service of the namespace;
    with 1,500 Services that is the cost of every pod event. Here each
    selector is filed under one of its own ``key=value`` pairs (the smallest
    key), so :meth:`matching` tests only the selectors filed under one of the
    pod's labels, and answers the same.

    An absent or empty selector selects nothing: kube-apiserver drops an
    empty ``selector`` map when it stores a Service (``omitempty``), and a
    Service without one is skipped by upstream's lookups.

    Buckets are tuples, so :meth:`copy` (the scheduler's per-cycle snapshot)
    is two shallow dict copies.
    """

    __slots__ = ("_filed", "_buckets")

    def __init__(self) -> None:
        self._filed: dict[str, tuple[str, Mapping[str, str]]] = {}  # object key -> (bucket, selector)
        self._buckets: dict[str, tuple[str, ...]] = {}  # "ns\x00k=v" -> object keys

    def set(self, key: str, namespace: str, selector: Mapping[str, str] | None) -> None:
        """File ``selector`` (an object's ``spec.selector``) under the object's key ``ns/name``."""
        self.discard(key)
        if not selector or not isinstance(selector, Mapping):
            return
        k = min(selector)
        bucket = f"{namespace}\x00{k}={selector[k]}"
        self._filed[key] = (bucket, selector)
        self._buckets[bucket] = self._buckets.get(bucket, ()) + (key,)

    def discard(self, key: str) -> None:
        """Forget the object ``key`` (no error when it was never filed)."""
        filed = self._filed.pop(key, None)
        if filed is None:
            return
        rest = tuple(k for k in self._buckets[filed[0]] if k != key)
        if rest:
            self._buckets[filed[0]] = rest
        else:
            del self._buckets[filed[0]]

    def matching(self, namespace: str, labels: Mapping[str, str] | None) -> list[str]:
        """Keys (sorted) of the objects in ``namespace`` whose selector matches ``labels``."""
        if not labels:
            return []
        out = []
        for k, v in labels.items():
            for key in self._buckets.get(f"{namespace}\x00{k}={v}", ()):
                sel = self._filed[key][1]
                if all(labels.get(sk) == sv for sk, sv in sel.items()):
                    out.append(key)
        out.sort()  # each key sits in one bucket: no duplicates
        return out

    def selector(self, key: str) -> Mapping[str, str] | None:
        """The selector filed under ``key``, or None."""
        filed = self._filed.get(key)
        return filed[1] if filed is not None else None

    def copy(self) -> "MapSelectorIndex":
        """An independent copy (later changes to either do not show in the other)."""
        c = MapSelectorIndex()
        c._filed = dict(self._filed)
        c._buckets = dict(self._buckets)
        return c

    def __len__(self) -> int:
        return len(self._filed)


def selector_string(sel: Mapping[str, Any] | None) -> str:
    """The ``status.selector`` string of a ``Scale``: ``"app=web,tier in (a,b)"``.

    ``sel`` is a ``metav1.LabelSelector`` dict (Deployments, ReplicaSets,
    StatefulSets; converted as :func:`selector_from_label_selector`) or a plain
    label map (ReplicationController ``spec.selector``; as :func:`selector_from_set`).
    ``None``, or a selector that fails to convert, gives ``""``.
    """
    if sel is None:
        return ""
    if "matchLabels" in sel or "matchExpressions" in sel:
        try:
            return str(selector_from_label_selector(sel))
        except ValueError:
            return ""
    return str(selector_from_set(sel))


# --- field selectors ---------------------------------------------------------

@dataclass(frozen=True)
class FieldTerm:
    """``field=value`` (``op`` ``"="``, also for ``==``) or ``field!=value`` (``op`` ``"!="``)."""

    field: str
    op: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        got = fields.get(self.field, "")
        return got == self.value if self.op == "=" else got != self.value

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.op}{escaped}"


@dataclass(frozen=True)
class FieldSelector:
    """An AND of :class:`FieldTerm` s (upstream ``fields.Selector``); empty matches everything."""

    terms: tuple[FieldTerm, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether a :func:`field_set` satisfies every term; a missing field reads as ``""``."""
        return all(t.matches(fields) for t in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal (a ``=`` term on it), else None (for indexing)."""
        for t in self.terms:
            if t.field == field and t.op == "=":
                return t.value
        return None

    def json_needles(self) -> tuple[bytes, ...]:
        """Bytes that the compact JSON (as orjson writes it) of every object this selector
        matches contains: each ``=`` term's non-empty value as a JSON string. For fields
        whose values are JSON strings (every field of an Event), an object without one of
        them cannot match, so it need not be decoded to be ruled out."""
        import orjson

        return tuple(orjson.dumps(t.value) for t in self.terms if t.op == "=" and t.value)

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)


def _split_terms(s: str) -> list[str]:
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(s):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    terms.append(s[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _unescape(value: str) -> str:
    out, in_slash = [], False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            # Go formats the rune with %v, i.e. as its code point number.
            raise ValueError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(s: str) -> FieldSelector:
    """Parse a field selector as upstream ``fields.ParseSelector``.

    Terms are split on unescaped commas and sorted; empty terms are skipped; no
    whitespace trimming. ``""`` selects everything.

    Raises:
        ValueError: ``invalid selector: 'a'; can't understand 'a'``,
            ``invalid field selector: invalid escape sequence: \\x`` or
            ``invalid field selector: unescaped character in value: 61``.
    """
    terms: list[FieldTerm] = []
    for part in sorted(_split_terms(s)) if s else []:
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise ValueError(f"invalid selector: '{s}'; can't understand '{part}'")
        lhs, op, rhs = split
        terms.append(FieldTerm(lhs, "!=" if op == "!=" else "=", _unescape(rhs)))
    return FieldSelector(tuple(terms))


# Field labels each kind accepts (its FieldLabelConversionFunc), keyed by (group, plural).
# Value: (accepted labels, renames, error message maker). Kinds not listed use
# runtime.DefaultMetaV1FieldSelectorConversion.
_META = ("metadata.name", "metadata.namespace")


def _not_supported(label: str) -> str:
    return f"field label not supported: {label}"


_FIELD_LABELS: dict[tuple[str, str], tuple[tuple[str, ...], dict[str, str], Callable[[str], str]]] = {
    ("", "pods"): (_META + ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                            "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                            "status.podIP", "status.podIPs", "status.nominatedNodeName"),
                   {"spec.host": "spec.nodeName"}, _not_supported),
    ("", "nodes"): (("metadata.name", "spec.unschedulable"), {}, _not_supported),
    ("", "replicationcontrollers"): (_META + ("status.replicas",), {}, _not_supported),
    ("", "events"): (("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                      "involvedObject.uid", "involvedObject.apiVersion",
                      "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                      "reportingComponent", "source", "type") + _META, {}, _not_supported),
    ("", "namespaces"): (("status.phase", "metadata.name"), {}, _not_supported),
    ("", "secrets"): (("type",) + _META, {}, _not_supported),
    ("", "services"): (_META + ("spec.clusterIP", "spec.type"), {}, _not_supported),
    ("batch", "jobs"): (_META + ("status.successful",), {},
                        lambda label: f"field label {go_quote(label)} not supported for batchv1.Job"),
    ("events.k8s.io", "events"): (
        ("reason", "type") + _META,
        {"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
         "regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
         "regarding.apiVersion": "involvedObject.apiVersion",
         "regarding.resourceVersion": "involvedObject.resourceVersion",
         "regarding.fieldPath": "involvedObject.fieldPath",
         "reportingController": "reportingComponent"},
        _not_supported),
}


def _convert_label(group: str, plural: str, label: str) -> str:
    rule = _FIELD_LABELS.get((group, plural))
    if rule is None:
        if label in _META:
            return label
        raise BadRequest(f'{go_quote(label)} is not a known field selector: only "metadata.name", '
                         f'"metadata.namespace"')
    accepted, renames, message = rule
    if label in accepted:
        return label
    if label in renames:
        return renames[label]
    raise BadRequest(message(label))


def _group_of(plural: str, group: str | None) -> str:
    """The API group for ``plural`` when the caller gave none: core wins (``events``)."""
    if group is not None:
        return group
    if resources.by_resource("", plural) is not None:
        return ""
    for r in resources.RESOURCES:
        if r.plural == plural:
            return r.group
    return ""


def validate_field_selector(
    resource_plural: str, sel: FieldSelector, group: str | None = None
) -> FieldSelector:
    """Check ``sel`` against the field labels the kind accepts; return it converted.

    Mirrors the apiserver's ``FieldSelector.Transform(ConvertFieldLabel)``: pods
    accept ``spec.host`` as an alias of ``spec.nodeName``; ``events.k8s.io``
    events accept ``regarding.*``/``reportingController`` and are converted to
    the core names :func:`field_set` produces. Kinds without their own rules
    accept only ``metadata.name`` and ``metadata.namespace``. Note upstream
    apps/v1 ReplicaSets have no rules, so ``status.replicas`` is refused there.

    Raises:
        BadRequest: the first offending term (in sorted order), with upstream's
            message, e.g. ``field label not supported: spec.foo`` (core kinds),
            ``"spec.replicas" is not a known field selector: only "metadata.name",
            "metadata.namespace"`` (other kinds), or ``field label "x" not
            supported for batchv1.Job``.
    """
    g = _group_of(resource_plural, group)
    return FieldSelector(tuple(
        FieldTerm(_convert_label(g, resource_plural, t.field), t.op, t.value) for t in sel.terms
    ))


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def _s(v: Any) -> str:
    return "" if v is None else str(v)


def _b(v: Any) -> str:
    return "true" if v else "false"


def _i(v: Any) -> str:
    return str(int(v or 0))


def field_set(
    resource_plural: str, obj: Mapping[str, Any], group: str | None = None
) -> dict[str, str]:
    """The selectable fields of a wire-form object, as the registries' ``ToSelectableFields``.

    Always ``metadata.name``, plus ``metadata.namespace`` for namespaced kinds;
    per kind: pods (``spec.nodeName``, ``spec.restartPolicy``,
    ``spec.schedulerName``, ``spec.serviceAccountName``, ``spec.hostNetwork``
    ``"true"``/``"false"``, ``status.phase``, ``status.podIP`` (first of
    ``status.podIPs``), ``status.nominatedNodeName``), events (``involvedObject.*``,
    ``reason``, ``reportingComponent``, ``source`` = ``source.component`` or else
    ``reportingComponent``, ``type``; ``events.k8s.io`` objects are mapped to
    these same names), nodes ``spec.unschedulable``, namespaces ``status.phase``,
    secrets ``type``, services ``spec.clusterIP``/``spec.type``,
    replicasets/replicationcontrollers ``status.replicas``, jobs
    ``status.successful`` (from ``status.succeeded``). Missing values read as
    ``""`` (strings), ``"0"`` (counts) or ``"false"`` (booleans).
    """
    group = _group_of(resource_plural, group)
    meta = obj.get("metadata") or {}
    info = resources.by_resource(group, resource_plural)
    namespaced = info.namespaced if info is not None else "namespace" in meta
    out = {"metadata.name": _s(meta.get("name"))}
    if namespaced:
        out["metadata.namespace"] = _s(meta.get("namespace"))
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if resource_plural == "pods" and group == "":
        ips = status.get("podIPs") or []
        pod_ip = _s(ips[0].get("ip")) if ips else _s(status.get("podIP"))
        out.update({
            "spec.nodeName": _s(spec.get("nodeName")),
            "spec.restartPolicy": _s(spec.get("restartPolicy")),
            "spec.schedulerName": _s(spec.get("schedulerName")),
            "spec.serviceAccountName": _s(spec.get("serviceAccountName")),
            "spec.hostNetwork": _b(spec.get("hostNetwork")),
            "status.phase": _s(status.get("phase")),
            "status.podIP": pod_ip,
            "status.nominatedNodeName": _s(status.get("nominatedNodeName")),
        })
    elif resource_plural == "events" and group in ("", "events.k8s.io"):
        if group == "":
            inv = obj.get("involvedObject") or {}
            reporting = _s(obj.get("reportingComponent"))
            source = _s(_get(obj, "source", "component")) or reporting
        else:
            inv = obj.get("regarding") or {}
            reporting = _s(obj.get("reportingController"))
            source = _s(_get(obj, "deprecatedSource", "component")) or reporting
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            out[f"involvedObject.{f}"] = _s(inv.get(f))
        out.update({"reason": _s(obj.get("reason")), "reportingComponent": reporting,
                    "source": source, "type": _s(obj.get("type"))})
    elif resource_plural == "nodes" and group == "":
        out["spec.unschedulable"] = _b(spec.get("unschedulable"))
    elif resource_plural == "namespaces" and group == "":
        out["status.phase"] = _s(status.get("phase"))
    elif resource_plural == "secrets" and group == "":
        out["type"] = _s(obj.get("type"))
    elif resource_plural == "services" and group == "":
        out["spec.clusterIP"] = _s(spec.get("clusterIP"))
        out["spec.type"] = _s(spec.get("type"))
    elif (group, resource_plural) in (("", "replicationcontrollers"), ("apps", "replicasets")):
        out["status.replicas"] = _i(status.get("replicas"))
    elif (group, resource_plural) == ("batch", "jobs"):
        out["status.successful"] = _i(status.get("succeeded"))
    return out
