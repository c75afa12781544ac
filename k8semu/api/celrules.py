"""CRD validation rules: ``x-kubernetes-validations`` (CEL) as kube-apiserver applies them.

Two entry points, both pure functions of their arguments:

* :func:`validate_rules` — what apiextensions-apiserver's CEL validator reports for a custom
  object on create, update and ``/status`` update, after the OpenAPI schema validation
  (:func:`~k8semu.api.customresources.validate_custom` calls it). Each rule's ``rule`` is
  evaluated with ``self`` bound to the value at the schema node it sits on (objects with
  their declared properties — names escaped as upstream, ``__dash__``, ``__dot__``,
  ``__namespace__``… —, maps from ``additionalProperties``, lists, ``integer`` as int,
  ``number`` as double, ``x-kubernetes-int-or-string`` as int or string, ``format:
  date-time``/``date`` as timestamp, ``duration`` as duration, ``byte`` as bytes; the
  resource root and ``x-kubernetes-embedded-resource`` objects also expose ``apiVersion``,
  ``kind`` and ``metadata.name``/``metadata.generateName``; null-valued fields are absent).
  A rule that mentions ``oldSelf`` is a transition rule: evaluated only on update when the
  old value at the same place exists and can be correlated (object properties and map
  entries by key, items of ``x-kubernetes-list-type: map`` lists by their keys), unless
  ``optionalOldSelf: true`` (then ``oldSelf`` is an optional: ``hasValue()``, ``value()``,
  ``orValue(v)``). A failing rule gives upstream's field error: the node's path (``<nil>``
  at the root, map keys as ``[key]``) or ``fieldPath`` appended, the schema type as the
  value (``Invalid value: "object"``), ``message``, else the ``messageExpression`` result,
  else ``failed rule: <rule>``; ``reason`` picks the error type. On update, a failing
  non-transition rule on a value that did not change (or whose nearest correlatable
  ancestor did not) is ratcheted (``CRDValidationRatcheting``, on since v1.30): a warning
  instead of an error. When the schema validation found a blocking error (type, required,
  enum, too long, too many) the rules are not run and ``<nil>: Invalid value: "null": some
  validation rules were not checked because the object was invalid; correct the existing
  errors to complete validation`` is reported instead (:func:`blocking_error`).

* :func:`crd_rule_errors` — what ``ValidateCustomResourceDefinition`` reports for the rules
  of a CRD's schemas: ``rule is not specified``, message/messageExpression/reason/fieldPath
  checks, ``compilation failed: ERROR: <input>:L:C: …`` with the caret excerpt (syntax
  errors, undeclared references, undefined fields, a rule that is not a bool), ``oldSelf
  cannot be used on the uncorrelatable portion of the schema within <path>``. When every
  version has the same schema, upstream hoists it to ``spec.validation`` and so do the
  paths here (``spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule``).

The CEL interpreter is the ``cel-python`` library (``celpy``), imported on first use. Kubernetes'
CEL libraries are added here as celpy functions: strings (``lowerAscii``, ``upperAscii``,
``trim``, ``replace``, ``split``, ``substring``, ``charAt``, ``indexOf``, ``lastIndexOf``,
``join``, ``reverse``), lists (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
``lastIndexOf``), regex (``find``, ``findAll``; ``matches`` is RE2 as upstream) and
quantities (``quantity``, ``isQuantity``, ``sign``, ``isInteger``, ``asInteger``,
``asApproximateFloat``, ``add``, ``sub``, ``isLessThan``, ``isGreaterThan``, ``compareTo``).
celpy has no static type checker: the compile-time checks here are a light walk of the
parse tree (undeclared names, fields a schema object does not declare, result types that are
plainly not bool/string); other type errors surface when a rule runs (``no such overload``).

Not supported (see :data:`UNSUPPORTED`): a rule that uses the optional syntax
(``self.?x``, ``[?k]``), ``optional.*``/``cel.bind``/``sets.*``/``base64.*``/``math.*``/
``strings.*``/``format.*``, the IP/CIDR, URL and semver libraries, two-variable
comprehensions, the three-argument ``map`` or message construction is accepted in a CRD and
*not evaluated* (it neither passes nor fails an object). Cost estimation and budgets are not
modelled. Syntax errors carry upstream's position and excerpt, but the wording after
``Syntax error:`` is an approximation of ANTLR's.
"""

from __future__ import annotations

import base64
import functools
import re
import sys
from fractions import Fraction
from typing import Any, Callable, Iterable

from .errors import FieldError

__all__ = ["validate_rules", "crd_rule_errors", "blocking_error", "has_rules", "schema_has_rules", "escape",
           "UNSUPPORTED", "BLOCKING_TYPES"]

#: field error types of the schema validation that stop the rules from running (upstream's
#: ``hasBlockingErr``)
BLOCKING_TYPES = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
                            "FieldValueTooMany", "FieldValueTypeInvalid"})
_NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
                "correct the existing errors to complete validation")
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")

# CEL's reserved words: a property with one of these names is ``__name__`` in a rule
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                       "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                       "void", "while"})
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_ESCAPE_RE = re.compile(r"__|[-./]")
_IDENT_CHARS = re.compile(r"[A-Za-z0-9_./-]*")

#: names of upstream's CEL libraries k8semu does not implement: a rule using one is not evaluated
UNSUPPORTED = {
    "namespaces": frozenset({"optional", "cel", "sets", "base64", "math", "strings", "format", "lists"}),
    "functions": frozenset({"ip", "isIP", "cidr", "isCIDR", "url", "isURL", "semver", "isSemver"}),
    "methods": frozenset({"family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
                          "isGlobalUnicast", "containsIP", "containsCIDR", "prefixLength", "masked", "isCanonical",
                          "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery", "major",
                          "minor", "patch", "format", "quote", "validate", "transformList", "transformMap",
                          "transformMapEntry", "ip", "string", "or", "optMap", "optFlatMap", "slice", "flatten",
                          "distinct", "sort", "sortBy"}),
}


def escape(name: str) -> str | None:
    """A property name as a CEL identifier (upstream's ``cel.Escape``), or None when it has no
    such form (empty, leading digit, a character outside ``[A-Za-z0-9_./-]``): reserved words
    become ``__word__``; ``__`` → ``__underscores__``, ``.`` → ``__dot__``, ``-`` → ``__dash__``,
    ``/`` → ``__slash__``."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if not _IDENT_CHARS.fullmatch(name):
        return None
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], name)


# ---------------------------------------------------------------------------- schema views
def _with_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a resource root as CEL sees it (upstream's ``WithTypeAndObjectMeta``)."""
    props = dict(schema.get("properties") or {})
    props["kind"] = {"type": "string"}
    props["apiVersion"] = {"type": "string"}
    props["metadata"] = {"type": "object", "properties": {"name": {"type": "string"},
                                                          "generateName": {"type": "string"}}}
    return {**schema, "type": "object", "properties": props}


def _type_name(schema: dict[str, Any]) -> str:
    """The value printed in a rule's field error: the schema's ``type`` (``""`` for int-or-string)."""
    t = schema.get("type")
    return t if isinstance(t, str) else ""


def _props(schema: Any) -> dict[str, Any]:
    p = schema.get("properties") if isinstance(schema, dict) else None
    return p if isinstance(p, dict) else {}


def _additional(schema: Any) -> dict[str, Any] | None:
    a = schema.get("additionalProperties") if isinstance(schema, dict) else None
    return a if isinstance(a, dict) else None


def _items(schema: Any) -> dict[str, Any] | None:
    i = schema.get("items") if isinstance(schema, dict) else None
    return i if isinstance(i, dict) else None


def _rules_of(schema: Any) -> list[Any]:
    r = schema.get("x-kubernetes-validations") if isinstance(schema, dict) else None
    return r if isinstance(r, list) else []


def has_rules(schema: Any) -> bool:
    """True when ``schema`` (an ``openAPIV3Schema``) has ``x-kubernetes-validations`` anywhere
    under properties, additionalProperties or items."""
    if not isinstance(schema, dict):
        return False
    if _rules_of(schema):
        return True
    subs = list(_props(schema).values()) + [_additional(schema), _items(schema)]
    return any(has_rules(s) for s in subs if s is not None)


# ---------------------------------------------------------------------------- celpy glue
@functools.cache
def _celpy() -> Any:
    """The celpy modules and k8semu's runtime classes, built on first use (the lark grammar
    takes a fraction of a second to load, so only CRDs with rules pay for it)."""
    import celpy
    import celpy.celtypes as ct
    from celpy.adapter import json_to_cel
    from celpy.evaluation import CELEvalError, Evaluator

    class Obj(ct.MapType):
        """A schema object: declared properties only, under their escaped names; equality as
        upstream's (declared fields by CEL value, undeclared ones by the raw JSON)."""

        def __init__(self, raw: dict[str, Any], props: dict[str, Any]) -> None:
            super().__init__()
            self.raw, self.props = raw, props
            for k, v in raw.items():
                sub = props.get(k)
                name = escape(k)
                if sub is not None and v is not None and name is not None:
                    dict.__setitem__(self, ct.StringType(name), to_cel(v, sub))

        def __eq__(self, other: Any) -> bool:
            if not isinstance(other, Obj):
                return super().__eq__(other)
            if len(self.raw) != len(other.raw):
                return False
            for k, v in self.raw.items():
                name = escape(k) if k in self.props else None
                if name is not None:
                    key = ct.StringType(name)
                    if (key in self) != (key in other):
                        return False
                    if key in self and not (self[key] == other[key]):
                        return False
                elif k in other.raw and not _deep_equal(v, other.raw[k]):
                    return False
            return True

        def __ne__(self, other: Any) -> bool:
            return not self.__eq__(other)

        __hash__ = None  # type: ignore[assignment]

    class List(ct.ListType):
        """A list; an index outside it is ``index out of bounds: N`` (never Python's negative indexing)."""

        def __getitem__(self, i: Any) -> Any:
            if isinstance(i, slice):
                return super().__getitem__(i)
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError("no such overload")
            if i < 0 or i >= len(self):
                raise IndexError(f"index out of bounds: {int(i)}")
            return super().__getitem__(i)

    class SetList(List):
        """``x-kubernetes-list-type: set``: equality ignores order."""

        def __eq__(self, other: Any) -> bool:
            if not isinstance(other, list):
                raise TypeError("no such overload")
            return len(self) == len(other) and all(any(o == s for s in self) for o in other)

        def __ne__(self, other: Any) -> bool:
            return not self.__eq__(other)

    class MapList(List):
        """``x-kubernetes-list-type: map``: equality pairs items by their map keys."""

        keys: tuple[str, ...] = ()

        def key_of(self, item: Any) -> tuple:
            return tuple(_freeze(item.get(ct.StringType(escape(k) or k))) if isinstance(item, dict) else None
                         for k in self.keys)

        def __eq__(self, other: Any) -> bool:
            if not isinstance(other, list):
                raise TypeError("no such overload")
            if len(self) != len(other):
                return False
            mine = {self.key_of(e): e for e in self}
            for o in other:
                k = self.key_of(o)
                if k not in mine or not (mine[k] == o):
                    return False
            return True

        def __ne__(self, other: Any) -> bool:
            return not self.__eq__(other)

    class Optional:
        """``oldSelf`` of an ``optionalOldSelf`` rule: ``hasValue()``, ``value()``, ``orValue(v)``."""

        def __init__(self, value: Any = None, present: bool = False) -> None:
            self.v, self.present = value, present

        def __eq__(self, other: Any) -> bool:
            if isinstance(other, Optional):
                return self.present == other.present and (not self.present or self.v == other.v)
            raise TypeError("no such overload")

        __hash__ = None  # type: ignore[assignment]

    class QuantityVal:
        """A ``quantity(...)`` value (Kubernetes' CEL Quantity library)."""

        def __init__(self, q: Any) -> None:
            self.q = q

        def __eq__(self, other: Any) -> bool:
            if isinstance(other, QuantityVal):
                return self.q.value == other.q.value
            raise TypeError("no such overload")

        __hash__ = None  # type: ignore[assignment]

    def to_cel(v: Any, s: Any, resource_root: bool = False) -> Any:
        """``v`` as the CEL value its schema ``s`` makes it (upstream's ``UnstructuredToVal``)."""
        if v is None:
            return None
        if not isinstance(s, dict):
            return json_to_cel(v)
        if s.get("x-kubernetes-int-or-string"):
            if isinstance(v, int) and not isinstance(v, bool):
                return ct.IntType(v)
            if isinstance(v, str):
                return ct.StringType(v)
            return json_to_cel(v)
        t = s.get("type")
        if t == "object" and isinstance(v, dict):
            if resource_root or s.get("x-kubernetes-embedded-resource"):
                return Obj(v, _props(_with_meta(s)))
            add = _additional(s)
            if add is not None and not _props(s):
                m = ct.MapType()
                for k, x in v.items():
                    embedded = bool(add.get("x-kubernetes-embedded-resource"))
                    dict.__setitem__(m, ct.StringType(k), to_cel(x, add, embedded))
                return m
            return Obj(v, _props(s))
        if t == "array" and isinstance(v, list):
            items = _items(s)
            lt = s.get("x-kubernetes-list-type")
            cls = MapList if lt == "map" else SetList if lt == "set" else List
            out = cls(to_cel(x, items, bool(items and items.get("x-kubernetes-embedded-resource"))) for x in v)
            if lt == "map":
                out.keys = tuple(str(k) for k in s.get("x-kubernetes-list-map-keys") or ())
            return out
        if t == "string" and isinstance(v, str):
            fmt = s.get("format")
            try:
                if fmt == "byte":
                    return ct.BytesType(base64.b64decode(v, validate=True))
                if fmt == "duration":
                    return ct.DurationType(v)
                if fmt == "date-time":
                    return ct.TimestampType(v)
                if fmt == "date" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
                    return ct.TimestampType(v + "T00:00:00Z")
            except Exception:  # a malformed value stays a string, as the schema validation reports it
                pass
            return ct.StringType(v)
        if t == "number" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return ct.DoubleType(float(v))
        if t == "integer" and isinstance(v, int) and not isinstance(v, bool):
            return ct.IntType(v)
        if t == "boolean" and isinstance(v, bool):
            return ct.BoolType(v)
        return json_to_cel(v)

    class K8sEvaluator(Evaluator):
        """celpy's evaluator with CEL's ``has()``: ``has(a.f)`` is an error when ``a`` is."""

        def macro_has_eval(self, exprlist: Any) -> Any:
            sel = _single_select(exprlist)
            if sel is None:
                return CELEvalError("invalid argument to has() macro", TypeError, None)
            target = self.visit(sel.children[0])
            if isinstance(target, CELEvalError):
                return target
            if isinstance(target, dict):
                return ct.BoolType(ct.StringType(sel.children[1].value) in target)
            return CELEvalError("no such overload", TypeError, None)

    class Runner(celpy.InterpretedRunner):
        def evaluate(self, context: Any) -> Any:
            return K8sEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)

    limit = sys.getrecursionlimit()
    env = celpy.Environment(runner_class=Runner)  # sets the recursion limit to 2500 (its parser recurses)
    sys.setrecursionlimit(max(limit, sys.getrecursionlimit()))  # never lower one set higher
    return _Glue(celpy, ct, env, CELEvalError, to_cel, Obj, List, Optional, QuantityVal)


class _Glue:
    """The handles :func:`_celpy` returns."""

    def __init__(self, celpy: Any, ct: Any, env: Any, err: Any, to_cel: Callable[..., Any], obj: type,
                 list_: type, optional: type, quantity: type) -> None:
        self.celpy, self.ct, self.env, self.CELEvalError, self.to_cel = celpy, ct, env, err, to_cel
        self.Obj, self.List, self.Optional, self.Quantity = obj, list_, optional, quantity


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((str(k), _freeze(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def _deep_equal(a: Any, b: Any) -> bool:
    """JSON deep equality with Go's types: ``1`` is not ``1.0`` nor ``true``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
    return a == b


def _single_select(tree: Any) -> Any:
    """The ``member_dot`` node an expression consists of (``has()``'s argument), or None."""
    node = tree
    while True:
        kids = [c for c in getattr(node, "children", ()) if hasattr(c, "data")]
        data = getattr(node, "data", None)
        if data == "member_dot":
            return node
        if data in ("exprlist", "expr", "conditionalor", "conditionaland", "relation", "addition",
                    "multiplication", "unary", "member", "primary", "paren_expr") and len(node.children) == 1 \
                and len(kids) == 1:
            node = kids[0]
            continue
        return None


# ---------------------------------------------------------------------------- Kubernetes libraries
def _functions() -> dict[str, Callable[..., Any]]:
    """Kubernetes' CEL extension functions over celpy values (strings, lists, regex, quantity,
    optionals), plus CEL's own ``_[_]`` and ``matches`` with upstream's semantics."""
    g = _celpy()
    ct = g.ct
    import re2

    def s(x: Any) -> str:
        if not isinstance(x, str):
            raise TypeError("no such overload")
        return x

    def i(x: Any) -> int:
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError("no such overload")
        return int(x)

    def regex(pattern: Any) -> Any:
        opts = re2.Options()
        opts.log_errors = False
        try:
            return re2.compile(s(pattern), opts)
        except re2.error as e:
            why = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
            raise _RuntimeError(f"error parsing regexp: {why}") from None

    def getitem(container: Any, key: Any) -> Any:
        if isinstance(container, list) and not isinstance(container, g.List):
            container = g.List(container)
        if isinstance(container, dict):
            if not isinstance(key, (str, int)):
                raise TypeError("no such overload")
            if key not in container:
                raise _RuntimeError(f"no such key: {key}")
        return container[key]

    def lower_ascii(x: Any) -> Any:
        return ct.StringType("".join(c.lower() if "A" <= c <= "Z" else c for c in s(x)))

    def upper_ascii(x: Any) -> Any:
        return ct.StringType("".join(c.upper() if "a" <= c <= "z" else c for c in s(x)))

    def replace(x: Any, old: Any, new: Any, n: Any = -1) -> Any:
        return ct.StringType(s(x).replace(s(old), s(new), i(n)))

    def split(x: Any, sep: Any, n: Any = -1) -> Any:
        n = i(n)
        if n == 0:
            return g.List()
        parts = list(s(x)) if s(sep) == "" else s(x).split(s(sep), n - 1 if n > 0 else -1)
        if s(sep) == "" and n > 0 and len(parts) > n:
            parts = parts[:n - 1] + ["".join(parts[n - 1:])]
        return g.List(ct.StringType(p) for p in parts)

    def substring(x: Any, start: Any, end: Any = None) -> Any:
        text, a = s(x), i(start)
        b = len(text) if end is None else i(end)
        if a < 0 or a > len(text):
            raise _RuntimeError(f"index out of range: {a}")
        if b < 0 or b > len(text):
            raise _RuntimeError(f"index out of range: {b}")
        if b < a:
            raise _RuntimeError(f"invalid substring range. start: {a}, end: {b}")
        return ct.StringType(text[a:b])

    def char_at(x: Any, n: Any) -> Any:
        text, k = s(x), i(n)
        if k < 0 or k > len(text):
            raise _RuntimeError(f"index out of range: {k}")
        return ct.StringType(text[k:k + 1])

    def index_of(x: Any, item: Any, start: Any = 0) -> Any:
        if isinstance(x, list):
            for n, e in enumerate(x):
                if n >= i(start) and e == item:
                    return ct.IntType(n)
            return ct.IntType(-1)
        text, k = s(x), i(start)
        if k < 0 or k > len(text):
            raise _RuntimeError(f"index out of range: {k}")
        return ct.IntType(text.find(s(item), k))

    def last_index_of(x: Any, item: Any, end: Any = None) -> Any:
        if isinstance(x, list):
            for n in range(len(x) - 1, -1, -1):
                if x[n] == item:
                    return ct.IntType(n)
            return ct.IntType(-1)
        text = s(x)
        k = len(text) if end is None else i(end)
        if k < 0 or k > len(text):
            raise _RuntimeError(f"index out of range: {k}")
        return ct.IntType(text.rfind(s(item), 0, k + len(s(item))))

    def join(x: Any, sep: Any = "") -> Any:
        if not isinstance(x, list):
            raise TypeError("no such overload")
        return ct.StringType(s(sep).join(s(e) for e in x))

    def reverse(x: Any) -> Any:
        return ct.StringType(s(x)[::-1])

    def trim(x: Any) -> Any:
        return ct.StringType(s(x).strip())

    def matches(x: Any, pattern: Any) -> Any:
        return ct.BoolType(regex(pattern).search(s(x)) is not None)

    def find(x: Any, pattern: Any) -> Any:
        m = regex(pattern).search(s(x))
        return ct.StringType(m.group(0) if m else "")

    def find_all(x: Any, pattern: Any, n: Any = -1) -> Any:
        found = [ct.StringType(m.group(0)) for m in regex(pattern).finditer(s(x))]
        return g.List(found if i(n) < 0 else found[:i(n)])

    def is_sorted(x: Any) -> Any:
        if not isinstance(x, list):
            raise TypeError("no such overload")
        return ct.BoolType(all(x[n] <= x[n + 1] for n in range(len(x) - 1)))

    def total(x: Any) -> Any:
        if not isinstance(x, list):
            raise TypeError("no such overload")
        if not x:
            return ct.IntType(0)
        acc = x[0]
        for e in x[1:]:
            acc = acc + e
        return acc

    def largest(x: Any) -> Any:
        if not isinstance(x, list):
            raise TypeError("no such overload")
        if not x:
            raise _RuntimeError("max(list) argument must not be empty")
        return max(x)

    def quantity(x: Any) -> Any:
        from .quantity import parse_quantity

        try:
            return g.Quantity(parse_quantity(s(x)))
        except ValueError:
            raise _RuntimeError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None

    def is_quantity(x: Any) -> Any:
        from .quantity import parse_quantity

        try:
            parse_quantity(s(x))
        except ValueError:
            return ct.BoolType(False)
        return ct.BoolType(True)

    def q(x: Any) -> Any:
        if not isinstance(x, g.Quantity):
            raise TypeError("no such overload")
        return x.q

    def q_other(x: Any) -> Any:
        from .quantity import Quantity

        if isinstance(x, g.Quantity):
            return x.q
        return Quantity(Fraction(i(x)))

    def sign(x: Any) -> Any:
        v = q(x).value
        return ct.IntType((v > 0) - (v < 0))

    def is_integer(x: Any) -> Any:
        v = q(x).value
        return ct.BoolType(v.denominator == 1 and -(2 ** 63) <= v < 2 ** 63)

    def as_integer(x: Any) -> Any:
        v = q(x).value
        if v.denominator != 1 or not -(2 ** 63) <= v < 2 ** 63:
            raise _RuntimeError("cannot convert value to integer")
        return ct.IntType(int(v))

    def as_float(x: Any) -> Any:
        return ct.DoubleType(float(q(x).value))

    def add(x: Any, y: Any) -> Any:
        return g.Quantity(q(x) + q_other(y))

    def sub(x: Any, y: Any) -> Any:
        return g.Quantity(q(x) - q_other(y))

    def less(x: Any, y: Any) -> Any:
        return ct.BoolType(q(x).value < q(y).value)

    def greater(x: Any, y: Any) -> Any:
        return ct.BoolType(q(x).value > q(y).value)

    def compare(x: Any, y: Any) -> Any:
        a, b = q(x).value, q(y).value
        return ct.IntType((a > b) - (a < b))

    def has_value(x: Any) -> Any:
        if not isinstance(x, g.Optional):
            raise TypeError("no such overload")
        return ct.BoolType(x.present)

    def value(x: Any) -> Any:
        if not isinstance(x, g.Optional):
            raise TypeError("no such overload")
        if not x.present:
            raise _RuntimeError("optional.none() dereference")
        return x.v

    def or_value(x: Any, alt: Any) -> Any:
        if not isinstance(x, g.Optional):
            raise TypeError("no such overload")
        return x.v if x.present else alt

    import operator

    from celpy.evaluation import bool_ge, bool_gt, bool_le, bool_lt

    def numeric(x: Any) -> bool:
        return isinstance(x, (ct.IntType, ct.UintType, ct.DoubleType)) and not isinstance(x, ct.BoolType)

    def ordering(op: Callable[[Any, Any], bool], base: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        # Kubernetes' environment has cel-go's CrossTypeNumericComparisons: 3 > 2.5 is true
        def compare(a: Any, b: Any) -> Any:
            if numeric(a) and numeric(b) and type(a) is not type(b):
                return ct.BoolType(op(Fraction(a), Fraction(b)))
            return base(a, b)

        return compare

    table = {
        "_<_": ordering(operator.lt, bool_lt), "_<=_": ordering(operator.le, bool_le),
        "_>_": ordering(operator.gt, bool_gt), "_>=_": ordering(operator.ge, bool_ge),
        "_[_]": getitem, "matches": matches, "lowerAscii": lower_ascii, "upperAscii": upper_ascii,
        "replace": replace, "split": split, "substring": substring, "charAt": char_at, "indexOf": index_of,
        "lastIndexOf": last_index_of, "join": join, "reverse": reverse, "trim": trim, "find": find,
        "findAll": find_all, "isSorted": is_sorted, "sum": total, "max": largest, "quantity": quantity,
        "isQuantity": is_quantity, "sign": sign, "isInteger": is_integer, "asInteger": as_integer,
        "asApproximateFloat": as_float, "add": add, "sub": sub, "isLessThan": less, "isGreaterThan": greater,
        "compareTo": compare, "hasValue": has_value, "value": value, "orValue": or_value,
    }
    return {name: _as_value(fn, g.CELEvalError) for name, fn in table.items()}


def _as_value(fn: Callable[..., Any], err_type: type) -> Callable[..., Any]:
    """``fn`` returning its CEL runtime error as an error *value*, so that ``&&``, ``||`` and
    ``?:`` can still absorb it (CEL's commutative error semantics); a TypeError stays an
    exception, which celpy reports as ``no such overload``."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except _RuntimeError as e:
            return err_type(str(e), _RuntimeError, (str(e),))

    call.__name__ = getattr(fn, "__name__", "call")
    return call


class _RuntimeError(Exception):
    """A CEL runtime error with upstream's words (``no such key: x``, ``index out of bounds: 3``)."""


# ---------------------------------------------------------------------------- compilation
class _Issue:
    __slots__ = ("offset", "message")

    def __init__(self, offset: int, message: str) -> None:
        self.offset, self.message = offset, message


def _issues_text(text: str, issues: list[_Issue]) -> str:
    """cel-go's ``Issues.String()``: ``ERROR: <input>:L:C: msg`` then the line and a caret."""
    out = []
    for issue in sorted(issues, key=lambda x: x.offset):
        before = text[:issue.offset]
        line = before.count("\n") + 1
        col = issue.offset - (before.rfind("\n") + 1)
        src = text.split("\n")[line - 1]
        out.append(f"ERROR: <input>:{line}:{col + 1}: {issue.message}\n | {src}\n | {'.' * col}^")
    return "\n".join(out)


#: lark terminal names as ANTLR's CEL grammar displays them
_ANTLR_NAMES = {
    "RPAR": "')'", "LPAR": "'('", "RSQB": "']'", "LSQB": "'['", "RBRACE": "'}'", "LBRACE": "'{'", "COMMA": "','",
    "COLON": "':'", "DOT": "'.'", "QMARK": "'?'", "MINUS": "'-'", "BANG": "'!'", "PLUS": "'+'", "STAR": "'*'",
    "SLASH": "'/'", "PERCENT": "'%'", "LESSTHAN": "'<'", "MORETHAN": "'>'", "__ANON_0": "'||'",
    "IDENT": "IDENTIFIER", "INT_LIT": "NUM_INT", "UINT_LIT": "NUM_UINT", "FLOAT_LIT": "NUM_FLOAT",
    "STRING_LIT": "STRING", "MLSTRING_LIT": "STRING", "BYTES_LIT": "BYTES", "BOOL_LIT": "'true'", "NULL_LIT": "'null'",
}
_EXPR_START = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
               "IDENTIFIER}")
_STRINGS = re.compile(r"""[rR]?("""
                      r"""'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""",
                      re.S)


def _syntax_issue(text: str, exc: BaseException) -> _Issue:
    """A parse error as cel-go reports a syntax error: the position is exact; the words after
    ``Syntax error:`` follow ANTLR's forms (``mismatched input 'x' expecting …``, ``token
    recognition error at: …``) but the expected sets are lark's, so they may differ."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    cause = exc if isinstance(exc, (UnexpectedCharacters, UnexpectedToken)) else exc.__context__
    if isinstance(cause, UnexpectedCharacters):
        offset = min(cause.pos_in_stream, len(text))
        ch = text[offset:offset + 1]
        if ch in ("'", '"'):
            ch = text[offset:].split("\n", 1)[0]
        return _Issue(offset, f"Syntax error: token recognition error at: '{ch}'")
    if isinstance(cause, UnexpectedToken):
        token = cause.token
        if token.type == "$END":
            shown, offset = "<EOF>", len(text)
        else:
            shown, offset = str(token), token.start_pos or 0
        expected = set(cause.expected or ())
        if {"IDENT", "INT_LIT", "STRING_LIT"} <= expected:
            want = _EXPR_START
        elif expected & {"PLUS", "STAR", "QMARK", "SLASH", "PERCENT"}:
            want = "<EOF>"
        else:
            names = sorted({_ANTLR_NAMES.get(e, e) for e in expected})
            want = names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"
        return _Issue(offset, f"Syntax error: mismatched input '{shown}' expecting {want}")
    return _Issue(0, f"Syntax error: {str(exc).splitlines()[0] if str(exc) else 'invalid expression'}")


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Any:
    """The parse tree of a CEL expression (cached by its text), or the parse exception."""
    g = _celpy()
    try:
        return g.env.compile(text)
    except Exception as e:  # celpy's CELParseError, or a lark error it did not wrap
        return e


def _uses_optional_syntax(text: str) -> bool:
    """``self.?x`` / ``m[?k]``: CEL's optional syntax, which celpy cannot parse."""
    bare = _STRINGS.sub('""', text)
    return re.search(r"\.\s*\?|\[\s*\?", bare) is not None


# checker types: (kind, schema) with kind one of struct, map, list, bool, int, uint, double,
# string, bytes, null, timestamp, duration, type, quantity, optional, dyn
_DYN: tuple[str, Any] = ("dyn", None)
_TYPE_NAMES = frozenset({"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type",
                         "dyn"})
_GLOBALS = {"size": "int", "int": "int", "uint": "uint", "double": "double", "string": "string", "bytes": "bytes",
            "bool": "bool", "type": "type", "duration": "duration", "timestamp": "timestamp", "matches": "bool",
            "quantity": "quantity", "isQuantity": "bool", "dyn": "dyn", "has": "bool"}
_METHODS = {"startsWith": "bool", "endsWith": "bool", "contains": "bool", "matches": "bool", "lowerAscii": "string",
            "upperAscii": "string", "trim": "string", "replace": "string", "substring": "string", "charAt": "string",
            "reverse": "string", "split": "list", "indexOf": "int", "lastIndexOf": "int", "size": "int",
            "join": "string", "find": "string", "findAll": "list", "isSorted": "bool", "sum": "dyn", "min": "dyn",
            "max": "dyn", "sign": "int", "isInteger": "bool", "asInteger": "int", "asApproximateFloat": "double",
            "add": "quantity", "sub": "quantity", "isLessThan": "bool", "isGreaterThan": "bool", "compareTo": "int",
            "hasValue": "bool", "value": "dyn", "orValue": "dyn", "getDate": "int", "getDayOfMonth": "int",
            "getDayOfWeek": "int", "getDayOfYear": "int", "getFullYear": "int", "getMonth": "int",
            "getHours": "int", "getMilliseconds": "int", "getMinutes": "int", "getSeconds": "int"}
_MACROS = {"all": "bool", "exists": "bool", "exists_one": "bool", "map": "list", "filter": "list"}
_SCALARS = frozenset({"bool", "int", "uint", "double", "string", "bytes", "null", "timestamp", "duration"})
_NUMERIC = frozenset({"int", "uint", "double"})
_OPS = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
        "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in", "addition_add": "_+_",
        "addition_sub": "_-_", "multiplication_mul": "_*_", "multiplication_div": "_/_",
        "multiplication_mod": "_%_"}
_OP_TEXT = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">=", "_==_": "==", "_!=_": "!=", "@in": "in",
            "_+_": "+", "_-_": "-", "_*_": "*", "_/_": "/", "_%_": "%"}


def _schema_type(schema: Any, resource_root: bool = False) -> tuple[str, Any]:
    """The CEL type of a schema node, for the checker."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-int-or-string"):
        return _DYN
    if resource_root or schema.get("x-kubernetes-embedded-resource"):
        return ("struct", _with_meta(schema))
    t = schema.get("type")
    if t == "object":
        if _additional(schema) is not None and not _props(schema):
            return ("map", _additional(schema))
        return ("struct", schema)
    if t == "array":
        return ("list", _items(schema)) if _items(schema) is not None else _DYN
    if t == "string":
        return ({"byte": ("bytes", None), "duration": ("duration", None), "date": ("timestamp", None),
                 "date-time": ("timestamp", None)}.get(schema.get("format") or "", ("string", None)))
    return ({"boolean": ("bool", None), "number": ("double", None), "integer": ("int", None)}
            .get(t if isinstance(t, str) else "", _DYN))


def _elem(t: tuple[str, Any]) -> tuple[str, Any]:
    if t[0] == "list" and isinstance(t[1], dict):
        return _schema_type(t[1])
    if t[0] == "map":
        return ("string", None)
    return _DYN


def _type_text(t: tuple[str, Any]) -> str:
    """A checked type as cel-go names it in messages (``int``, ``object``, ``optional_type(int)``)."""
    if t[0] == "optional":
        return f"optional_type({_type_text(t[1]) if t[1] is not None else 'dyn'})"
    return {"struct": "object"}.get(t[0], t[0])


class _Checker:
    """A light static check of a parsed rule against the schema node it sits on: undeclared
    names, fields an object does not declare, operators on plainly mismatched scalar types,
    and the result type; also whether the rule uses ``oldSelf`` and names something k8semu
    does not implement."""

    def __init__(self, text: str, self_type: tuple[str, Any], optional_old_self: bool = False) -> None:
        self.text = text
        self.self_type = self_type
        # optionalOldSelf: oldSelf is optional_type(T); selecting a field of an optional gives an
        # optional of the field's type, as cel-go's checker does
        self.old_type = ("optional", self_type) if optional_old_self else self_type
        self.issues: list[_Issue] = []
        self.uses_old_self = False
        self.unsupported: list[str] = []
        self.scopes: list[dict[str, tuple[str, Any]]] = []

    # positions
    def _dot_before(self, token: Any) -> int:
        k = token.start_pos - 1
        while k > 0 and self.text[k] != ".":
            k -= 1
        return max(k, 0)

    def _paren_after(self, token: Any) -> int:
        k = token.end_pos
        while k < len(self.text) and self.text[k] != "(":
            k += 1
        return k

    def _op_after(self, left: Any, op: str) -> int:
        end = getattr(getattr(left, "meta", None), "end_pos", None)
        if end is None:
            return 0
        k = self.text.find(op, end)
        return k if k >= 0 else end

    def check(self, tree: Any) -> tuple[str, Any]:
        return self.visit(tree)

    def visit(self, node: Any) -> tuple[str, Any]:
        if not hasattr(node, "data"):
            return _DYN
        fn = getattr(self, "v_" + str(node.data), None)
        if fn is None:
            for c in node.children:
                self.visit(c)
            return _DYN
        return fn(node)

    def v_expr(self, node: Any) -> tuple[str, Any]:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        self.visit(node.children[0])
        a, b = self.visit(node.children[1]), self.visit(node.children[2])
        return a if a[0] == b[0] and a[0] != "struct" else _DYN

    def v_conditionalor(self, node: Any) -> tuple[str, Any]:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        for c in node.children:
            self.visit(c)
        return ("bool", None)

    v_conditionaland = v_conditionalor

    def _binary(self, node: Any) -> tuple[str, Any]:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        op_tree, right = node.children
        left = op_tree.children[0]
        op = _OPS.get(str(op_tree.data), "")
        lt, rt = self.visit(left), self.visit(right)
        if op == "@in":
            return ("bool", None)
        if "optional" in (lt[0], rt[0]) and op not in ("_==_", "_!=_"):
            self.issues.append(_Issue(self._op_after(left, _OP_TEXT[op]),
                                      f"found no matching overload for '{op}' applied to "
                                      f"'({_type_text(lt)}, {_type_text(rt)})'"))
            return _DYN
        mismatch = lt[0] in _SCALARS and rt[0] in _SCALARS and lt[0] != rt[0] and not (
            lt[0] in _NUMERIC and rt[0] in _NUMERIC and op in ("_<_", "_<=_", "_>_", "_>=_")) and not (
            {lt[0], rt[0]} <= {"timestamp", "duration"} and op in ("_+_", "_-_"))
        if mismatch and "null" not in (lt[0], rt[0]):
            names = {"struct": "object", "double": "double"}
            self.issues.append(_Issue(self._op_after(left, _OP_TEXT[op]),
                                      f"found no matching overload for '{op}' applied to "
                                      f"'({names.get(lt[0], lt[0])}, {names.get(rt[0], rt[0])})'"))
            return _DYN
        if op in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
            return ("bool", None)
        if lt[0] == rt[0] == "timestamp":
            return ("duration", None) if op == "_-_" else _DYN
        if lt[0] == rt[0] and lt[0] in ("int", "uint", "double", "string", "bytes", "list", "duration"):
            return lt
        if {lt[0], rt[0]} == {"timestamp", "duration"}:
            return ("timestamp", None) if op == "_+_" or lt[0] == "timestamp" else _DYN
        return _DYN

    v_relation = v_addition = v_multiplication = _binary

    def v_unary(self, node: Any) -> tuple[str, Any]:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        t = self.visit(node.children[1])
        return ("bool", None) if node.children[0].data == "unary_not" else t

    def v_member(self, node: Any) -> tuple[str, Any]:
        return self.visit(node.children[0])

    v_primary = v_paren_expr = v_member

    def _field(self, t: tuple[str, Any], name: str, offset: int) -> tuple[str, Any]:
        if t[0] == "optional":
            return ("optional", self._field(t[1], name, offset) if t[1] is not None else _DYN)
        if t[0] == "struct":
            props = _props(t[1])
            for k, sub in props.items():
                if escape(k) == name:
                    return _schema_type(sub, False)
            self.issues.append(_Issue(offset, f"undefined field '{name}'"))
            return _DYN
        if t[0] == "map":
            return _schema_type(t[1])
        return _DYN

    def _namespace(self, member: Any) -> str | None:
        """The name when ``member`` is a bare identifier of an unimplemented library namespace."""
        node = member
        while getattr(node, "data", None) in ("member", "primary") and len(node.children) == 1:
            node = node.children[0]
        if getattr(node, "data", None) == "ident":
            name = node.children[0].value
            if name in UNSUPPORTED["namespaces"] and not any(name in s for s in self.scopes):
                return name
        return None

    def v_member_dot(self, node: Any) -> tuple[str, Any]:
        member, ident = node.children
        ns = self._namespace(member)
        if ns is not None:
            self.unsupported.append(f"{ns}.{ident.value}")
            return _DYN
        return self._field(self.visit(member), ident.value, self._dot_before(ident))

    def v_member_dot_arg(self, node: Any) -> tuple[str, Any]:
        member, ident = node.children[0], node.children[1]
        args = list(node.children[2].children) if len(node.children) > 2 else []
        name = ident.value
        ns = self._namespace(member)
        if ns is not None:
            self.unsupported.append(f"{ns}.{name}")
            return _DYN
        if name in _MACROS:
            target = self.visit(member)
            var = _single_select_ident(args[0]) if args else None
            if len(args) != 2 or var is None:
                self.unsupported.append(f"{name}() with {len(args)} arguments")
                return _DYN
            self.scopes.append({var: _elem(target)})
            self.visit(args[1])
            self.scopes.pop()
            return (_MACROS[name], None)
        target = self.visit(member)
        for a in args:
            self.visit(a)
        if target[0] == "optional" and name in ("value", "orValue"):
            return target[1] if target[1] is not None else _DYN
        if name in _METHODS:
            return (_METHODS[name], None)
        if name in UNSUPPORTED["methods"]:
            self.unsupported.append(f"{name}()")
            return _DYN
        self.issues.append(_Issue(self._paren_after(ident), f"undeclared reference to '{name}' (in container '')"))
        return _DYN

    def v_member_index(self, node: Any) -> tuple[str, Any]:
        t = self.visit(node.children[0])
        self.visit(node.children[1])
        if t[0] == "list":
            return _elem(t)
        if t[0] == "map":
            return _schema_type(t[1])
        return _DYN

    def v_member_object(self, node: Any) -> tuple[str, Any]:
        self.unsupported.append("message construction")
        return _DYN

    def v_literal(self, node: Any) -> tuple[str, Any]:
        kind = node.children[0].type
        return ({"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                 "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null"}
                .get(kind, "dyn"), None)

    def v_list_lit(self, node: Any) -> tuple[str, Any]:
        for c in node.children:
            self.visit(c)
        return ("list", None)

    def v_map_lit(self, node: Any) -> tuple[str, Any]:
        for c in node.children:
            self.visit(c)
        return ("map", None)

    def _ident(self, token: Any) -> tuple[str, Any]:
        name = token.value
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name == "self":
            return self.self_type
        if name == "oldSelf":
            self.uses_old_self = True
            return self.old_type
        if name in _TYPE_NAMES:
            return ("type", None)
        if name in UNSUPPORTED["namespaces"]:
            self.unsupported.append(name)
            return _DYN
        self.issues.append(_Issue(token.start_pos, f"undeclared reference to '{name}' (in container '')"))
        return _DYN

    def v_ident(self, node: Any) -> tuple[str, Any]:
        return self._ident(node.children[0])

    def v_dot_ident(self, node: Any) -> tuple[str, Any]:
        return self._ident(node.children[0])

    def v_dot_ident_arg(self, node: Any) -> tuple[str, Any]:
        return self.v_ident_arg(node)

    def v_ident_arg(self, node: Any) -> tuple[str, Any]:
        ident = node.children[0]
        args = list(node.children[1].children) if len(node.children) > 1 else []
        name = ident.value
        if name == "has":
            sel = _single_select(node.children[1]) if len(node.children) > 1 and len(args) == 1 else None
            if sel is None:
                self.issues.append(_Issue(self._paren_after(ident), "invalid argument to has() macro"))
                return ("bool", None)
            target = sel.children[0]
            ns = self._namespace(target)
            if ns is not None:
                self.unsupported.append(ns)
                return ("bool", None)
            t = self.visit(target)
            before = len(self.issues)
            self._field(t, sel.children[1].value, 0)
            if len(self.issues) > before:
                self.issues[-1].offset = self._paren_after(ident)
            return ("bool", None)
        for a in args:
            self.visit(a)
        if name in _GLOBALS:
            return (_GLOBALS[name], None)
        if name in UNSUPPORTED["functions"]:
            self.unsupported.append(f"{name}()")
            return _DYN
        self.issues.append(_Issue(self._paren_after(ident), f"undeclared reference to '{name}' (in container '')"))
        return _DYN


def _single_select_ident(tree: Any) -> str | None:
    """The identifier an expression consists of (a macro's variable), or None."""
    node = tree
    while hasattr(node, "data"):
        if node.data == "ident":
            return node.children[0].value
        kids = [c for c in node.children if hasattr(c, "data")]
        if len(node.children) != 1 or len(kids) != 1:
            return None
        node = kids[0]
    return None


class _Compiled:
    """One rule, compiled for one schema node."""

    __slots__ = ("rule", "text", "message", "message_expression", "reason", "field_path", "optional_old_self",
                 "program", "message_program", "uses_old_self", "error", "message_error", "unsupported")

    def __init__(self, rule: dict[str, Any]) -> None:
        self.rule = rule
        self.text = rule.get("rule") if isinstance(rule.get("rule"), str) else ""
        self.message = rule.get("message") if isinstance(rule.get("message"), str) else ""
        mx = rule.get("messageExpression")
        self.message_expression = mx if isinstance(mx, str) else ""
        self.reason = rule.get("reason") if isinstance(rule.get("reason"), str) else None
        self.field_path = rule.get("fieldPath") if isinstance(rule.get("fieldPath"), str) else ""
        self.optional_old_self = rule.get("optionalOldSelf") is True
        self.program: Any = None
        self.message_program: Any = None
        self.uses_old_self = False
        self.error = ""
        self.message_error = ""
        self.unsupported: list[str] = []


def _compile(rule: dict[str, Any], self_type: tuple[str, Any]) -> _Compiled:
    """Compile one rule (and its messageExpression) against the CEL type of its node."""
    c = _Compiled(rule)
    if not c.text.strip():
        return c
    g = _celpy()
    funcs = _function_table()
    tree = _parse(c.text)
    if isinstance(tree, Exception):
        if _uses_optional_syntax(c.text):
            c.unsupported.append("optional syntax")
            c.uses_old_self = "oldSelf" in c.text
            return c
        c.error = "compilation failed: " + _issues_text(c.text, [_syntax_issue(c.text, tree)])
        return c
    checker = _Checker(c.text, self_type, c.optional_old_self)
    result = checker.check(tree)
    c.uses_old_self = checker.uses_old_self
    c.unsupported = checker.unsupported
    if checker.issues:
        c.error = "compilation failed: " + _issues_text(c.text, checker.issues)
        return c
    if result[0] not in ("bool", "dyn"):
        c.error = "cel expression must evaluate to a bool"
        return c
    c.program = g.env.program(tree, functions=funcs)
    if c.message_expression.strip():
        mtree = _parse(c.message_expression)
        if isinstance(mtree, Exception):
            if _uses_optional_syntax(c.message_expression):
                return c
            c.message_error = "messageExpression compilation failed: " + _issues_text(
                c.message_expression, [_syntax_issue(c.message_expression, mtree)])
            return c
        mcheck = _Checker(c.message_expression, self_type, False)
        mresult = mcheck.check(mtree)
        if mcheck.issues:
            c.message_error = "messageExpression compilation failed: " + _issues_text(c.message_expression,
                                                                                      mcheck.issues)
        elif mresult[0] not in ("string", "dyn"):
            c.message_error = "messageExpression must evaluate to a string"
        elif not mcheck.unsupported:
            c.message_program = g.env.program(mtree, functions=funcs)
    return c


@functools.cache
def _function_table() -> dict[str, Callable[..., Any]]:
    return _functions()


# ---------------------------------------------------------------------------- compiled schemas
class _Node:
    """A schema node with its compiled rules and the nodes below it that have rules."""

    __slots__ = ("schema", "type_name", "resource_root", "rules", "props", "additional", "items", "map_keys",
                 "list_type", "atomic_map")

    def __init__(self, schema: dict[str, Any], resource_root: bool, props: dict[str, "_Node"],
                 additional: "_Node | None", items: "_Node | None") -> None:
        self.schema = schema
        self.type_name = _type_name(schema)
        self.resource_root = resource_root
        st = _schema_type(schema, resource_root)
        self.rules = [_compile(r, st) for r in _rules_of(schema) if isinstance(r, dict)]
        self.props, self.additional, self.items = props, additional, items
        self.list_type = schema.get("x-kubernetes-list-type")
        self.map_keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
        self.atomic_map = schema.get("x-kubernetes-map-type") == "atomic"


def _build(schema: dict[str, Any], resource_root: bool) -> _Node | None:
    """The compiled tree of ``schema``: only nodes with rules at or below them (None if none)."""
    props = {}
    for k, sub in _props(schema).items():
        if isinstance(sub, dict):
            n = _build(sub, bool(sub.get("x-kubernetes-embedded-resource")))
            if n is not None:
                props[k] = n
    add = _additional(schema)
    add_node = _build(add, bool(add.get("x-kubernetes-embedded-resource"))) if add is not None else None
    items = _items(schema)
    items_node = _build(items, bool(items.get("x-kubernetes-embedded-resource"))) if items is not None else None
    if not _rules_of(schema) and not props and add_node is None and items_node is None:
        return None
    return _Node(schema, resource_root, props, add_node, items_node)


_COMPILED: dict[int, tuple[Any, _Node | None]] = {}


def _compiled(schema: dict[str, Any]) -> _Node | None:
    """The compiled rules of a version's schema (None when it has none), kept while the schema
    object lives (keyed by identity and holding it: a CRD's schema dict is replaced, never
    changed in place, when the CRD is written)."""
    hit = _COMPILED.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = _build(schema, True)
    if len(_COMPILED) >= 256:
        _COMPILED.pop(next(iter(_COMPILED)))
    _COMPILED[id(schema)] = (schema, node)
    return node


def schema_has_rules(schema: Any) -> bool:
    """:func:`has_rules`, memoized per schema object (for the request path)."""
    return isinstance(schema, dict) and _compiled(schema) is not None


# ---------------------------------------------------------------------------- evaluation
class _Correlation:
    """Ratcheting state (upstream's ``ratchetingOptions``): the correlated (new, old) pair at
    this node, if any, and at the nearest correlated ancestor."""

    __slots__ = ("current", "parent")

    def __init__(self, current: tuple[Any, Any] | None, parent: tuple[Any, Any] | None) -> None:
        self.current, self.parent = current, parent

    def ratchets(self) -> bool:
        pair = self.current if self.current is not None else self.parent
        return pair is not None and _deep_equal(pair[0], pair[1])

    def key(self, field: str, atomic: bool, root: bool) -> "_Correlation":
        if self.current is None:
            return self
        if root and field in ("apiVersion", "kind"):
            return _Correlation(None, None)
        new, old = self.current
        child = None
        if not atomic and isinstance(new, dict) and isinstance(old, dict) and field in new and field in old:
            child = (new[field], old[field])
        return _Correlation(child, self.current)

    def index(self, new_item: Any, old_item: Any) -> "_Correlation":
        if self.current is None:
            return self
        return _Correlation((new_item, old_item) if old_item is not None else None, self.current)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _map_key(item: Any, keys: tuple[str, ...]) -> Any:
    return tuple(_freeze(item.get(k)) for k in keys) if isinstance(item, dict) else None


def _runtime_text(err: BaseException) -> str:
    """A CEL evaluation error in cel-go's words (``no such key: x``, ``index out of bounds: 3``,
    ``division by zero``, ``no such overload``…), from celpy's ``CELEvalError(message,
    exception type, exception args)``."""
    if isinstance(err, _RuntimeError):
        return str(err)
    if isinstance(err.__cause__, _RuntimeError):
        return str(err.__cause__)
    args = err.args
    msg = str(args[0]) if args else str(err)
    exc_type = args[1] if len(args) > 1 else None
    exc_args = args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()
    if exc_args and isinstance(exc_args[0], str) and (exc_args[0].startswith("no such key: ")
                                                      or exc_args[0].startswith("index out of bounds: ")
                                                      or exc_args[0].startswith("index out of range: ")):
        return exc_args[0]
    m = re.match(r"no such member in mapping: '(.*)'$", msg)
    if m:
        return f"no such key: {m.group(1)}"
    if exc_type is ZeroDivisionError:
        text = " ".join(str(a) for a in exc_args)
        return "modulus by zero" if "modulo" in text and "division" not in text else "division by zero"
    if exc_type is ValueError and exc_args == ("overflow",):
        return "integer overflow"
    m = re.match(r"invalid literal for int\(\) with base 10: (?:StringType\()?'(.*)'\)?$",
                 str(exc_args[0]) if exc_args else "")
    if exc_type is ValueError and m:
        from .gofmt import go_quote

        return f"strconv.ParseInt: parsing {go_quote(m.group(1))}: invalid syntax"
    if msg.startswith("no such overload") or msg.startswith("found no matching overload") or exc_type is TypeError:
        return "no such overload"
    if msg == "no such key" and exc_args:
        return f"no such key: {exc_args[0]}"
    if exc_type is IndexError:
        return "index out of bounds"
    return msg


def _ok(value: Any) -> bool:
    """Only ``true`` passes (upstream: ``evalResult == types.True``)."""
    return isinstance(value, _celpy().ct.BoolType) and bool(value)


def validate_rules(schema: Any, obj: dict[str, Any], old: dict[str, Any] | None, *,
                   warnings: list[str] | None = None) -> list[FieldError]:
    """The field errors of every ``x-kubernetes-validations`` rule in ``schema`` (a version's
    ``openAPIV3Schema``) that ``obj`` fails, in upstream's shape.

    ``old``: the stored object on update (enables transition rules and ratcheting), None on
    create. ``obj``/``old`` are whole custom objects (``apiVersion``, ``kind``, ``metadata``,
    ``spec``…). Nodes are visited depth-first, a node's rules before its children, properties
    and map entries in the object's key order, list items in order. A ratcheted failure is
    appended to ``warnings`` (upstream's ``Warning`` header text) instead of the result.
    Evaluation never raises: an evaluation error is reported as upstream does
    (``<err> evaluating rule: <rule>``)."""
    root = _compiled(schema) if isinstance(schema, dict) else None
    if root is None:
        return []
    errs: list[FieldError] = []
    corr = _Correlation((obj, old) if old is not None else None, None)
    _validate_node(root, obj, old, "", corr, errs, warnings)
    return errs


def _validate_node(node: _Node, value: Any, old: Any, path: str, corr: _Correlation, errs: list[FieldError],
                   warnings: list[str] | None) -> None:
    if value is None:
        return
    if node.rules:
        _run_rules(node, value, old, path, corr, errs, warnings)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) and not node.atomic_map else None
        for k, v in value.items():
            sub = node.props.get(k) if node.props else None
            if sub is None and node.additional is not None and k not in _props(node.schema):
                sub = node.additional
                child_path = f"{path}[{k}]" if path else f"[{k}]"
            else:
                child_path = _join(path, k)
            if sub is None:
                continue
            ov = old_map.get(k) if old_map is not None else None
            _validate_node(sub, v, ov, child_path, corr.key(k, node.atomic_map, node.resource_root and not path),
                           errs, warnings)
    elif isinstance(value, list) and node.items is not None:
        olds: dict[Any, Any] = {}
        if node.list_type == "map" and isinstance(old, list):
            for o in old:
                olds.setdefault(_map_key(o, node.map_keys), o)
        for n, v in enumerate(value):
            ov = olds.get(_map_key(v, node.map_keys)) if olds else None
            _validate_node(node.items, v, ov, f"{path}[{n}]", corr.index(v, ov), errs, warnings)


def _run_rules(node: _Node, value: Any, old: Any, path: str, corr: _Correlation, errs: list[FieldError],
               warnings: list[str] | None) -> None:
    g = _celpy()
    shown = path or "<nil>"
    self_val = None
    old_val: Any = ...
    for c in node.rules:
        if c.error:
            errs.append(FieldError.invalid(shown, node.type_name, f"rule compile error: {c.error}"))
            continue
        if c.program is None or c.unsupported:
            continue
        if c.uses_old_self and old is None and not c.optional_old_self:
            continue
        if self_val is None:
            self_val = g.to_cel(value, node.schema, node.resource_root)
        if old_val is ...:
            old_val = g.to_cel(old, node.schema, node.resource_root) if old is not None else None
        ctx = {"self": self_val}
        if c.uses_old_self:
            ctx["oldSelf"] = g.Optional(old_val, old is not None) if c.optional_old_self else old_val
        rule_text = c.message.strip() if c.message else c.text.strip()
        try:
            result = c.program.evaluate(ctx)
        except Exception as e:  # CELEvalError, or a Python error inside celpy: never fatal
            text = _runtime_text(e)
            if text.startswith("no such overload"):
                detail = (f"'{text}': call arguments did not match a supported operator, function or macro "
                          f"signature for rule: {rule_text}")
            else:
                detail = f"{text} evaluating rule: {rule_text}"
            errs.append(FieldError.invalid(shown, node.type_name, detail))
            continue
        if _ok(result):
            continue
        err_path = shown
        if c.field_path:
            normalized = _normalize_field_path(c.field_path, node.schema)
            if normalized:
                err_path = f"{path}.{normalized}" if path else normalized
        detail = c.message.strip() if c.message else f"failed rule: {c.text.strip()}"
        if c.message_program is not None:
            mctx = {"self": self_val}
            if c.uses_old_self or "oldSelf" in c.message_expression:
                mctx["oldSelf"] = old_val
            try:
                m = c.message_program.evaluate(mctx)
                if isinstance(m, str) and m.strip() and "\n" not in m.strip():
                    detail = m.strip()
            except Exception:
                pass
        fe = _reason_error(c.reason, err_path, node.type_name, detail)
        if not c.uses_old_self and corr.ratchets():
            if warnings is not None:
                warnings.append(fe.text())
        else:
            errs.append(fe)


def _reason_error(reason: str | None, path: str, type_name: str, detail: str) -> FieldError:
    """upstream's ``fieldErrorForReason``."""
    if reason == "FieldValueForbidden":
        return FieldError.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return FieldError.required(path, detail)
    if reason == "FieldValueDuplicate":
        return FieldError.duplicate(path, type_name)
    return FieldError.invalid(path, type_name, detail)


def blocking_error(errs: Iterable[FieldError]) -> FieldError | None:
    """The error that replaces the rules' when the schema validation found a blocking one
    (upstream's ``hasBlockingErr``), else None."""
    if any(e.type in BLOCKING_TYPES for e in errs):
        return FieldError.invalid("<nil>", "null", _NOT_CHECKED)
    return None


# ---------------------------------------------------------------------------- fieldPath
def _field_path(path: str, schema: Any) -> tuple[list[tuple[str, str]], str]:
    """Parse a rule's ``fieldPath`` against ``schema`` (upstream's ``ValidFieldPath``): the
    elements (``("field", name)`` / ``("key", name)``) and an error text (``""`` when valid)."""
    tokens = re.findall(r"'(?:\\.|[^'\\])*'|[.\[\]]|[^.\[\]']+", path)
    out: list[tuple[str, str]] = []
    node = schema if isinstance(schema, dict) else {}
    k = 0

    def step(name: str) -> str:
        nonlocal node
        if _props(node):
            sub = _props(node).get(name)
            if not isinstance(sub, dict):
                return "does not refer to a valid field"
            out.append(("field", name))
            node = sub
        elif _additional(node) is not None:
            out.append(("key", name))
            node = _additional(node) or {}
        else:
            return "does not refer to a valid field"
        return ""

    while k < len(tokens):
        tok = tokens[k]
        if tok == "[":
            if k + 1 >= len(tokens):
                return out, "unexpected end of JSON path"
            lit = tokens[k + 1]
            if len(lit) < 2 or lit[0] != "'" or lit[-1] != "'":
                return out, f"expected single quoted string but got {lit}"
            err = step(re.sub(r"\\(.)", r"\1", lit[1:-1]))
            if err:
                return out, err
            if k + 2 >= len(tokens):
                return out, "unexpected end of JSON path"
            if tokens[k + 2] != "]":
                return out, f"expected ] but got {tokens[k + 2]}"
            k += 3
        elif tok == ".":
            if k + 1 >= len(tokens):
                return out, "unexpected end of JSON path"
            err = step(tokens[k + 1])
            if err:
                return out, err
            k += 2
        else:
            return out, f"expected [ or . but got: {tok}"
    return out, ""


def _normalize_field_path(path: str, schema: Any) -> str:
    """A valid ``fieldPath`` as a field path string (``spec.ports[http]``), ``""`` if invalid."""
    elems, err = _field_path(path, schema)
    if err:
        return ""
    s = ""
    for kind, name in elems:
        s = (f"{s}[{name}]" if s else f"[{name}]") if kind == "key" else _join(s, name)
    return s


# ---------------------------------------------------------------------------- CRD validation
class _GoRule:
    """A rule rendered as Go's ``%#v`` of ``apiextensions.ValidationRule`` (the value of a CRD's
    rule errors). A set ``reason``/``optionalOldSelf`` is a pointer upstream, printed as an
    address; k8semu prints a fixed one so texts stay deterministic."""

    def __init__(self, rule: dict[str, Any]) -> None:
        self.rule = rule

    def __str__(self) -> str:
        from .gofmt import go_quote

        r = self.rule

        def text(k: str) -> str:
            v = r.get(k)
            return go_quote(v if isinstance(v, str) else "")

        reason = "(*apiextensions.FieldValueErrorReason)(nil)" if r.get("reason") is None else \
            "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
        oos = "(*bool)(nil)" if r.get("optionalOldSelf") is None else "(*bool)(0xc000a1b2c8)"
        return (f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')}, "
                f"MessageExpression:{text('messageExpression')}, Reason:{reason}, FieldPath:{text('fieldPath')}, "
                f"OptionalOldSelf:{oos}}}")


_NEWLINES = re.compile(r"[\n\r]+")


def crd_rule_errors(crd: dict[str, Any]) -> list[FieldError]:
    """The errors ``ValidateCustomResourceDefinition`` reports for the ``x-kubernetes-validations``
    of ``crd``'s schemas. Paths are ``spec.validation.openAPIV3Schema…`` when every version has
    the same schema (upstream hoists it), else ``spec.versions[i].schema.openAPIV3Schema…``;
    per schema, the rule-shape errors (``rule is not specified``, ``message must be non-empty
    if specified``, ``reason``, ``fieldPath``…) come before the compilation ones, each group
    deepest node first (upstream's ``SchemaErrors`` then ``CELErrors``)."""
    versions = [v for v in ((crd.get("spec") or {}).get("versions") or ()) if isinstance(v, dict)]
    schemas = []
    for i, v in enumerate((crd.get("spec") or {}).get("versions") or ()):
        if not isinstance(v, dict):
            continue
        sch = v.get("schema") if isinstance(v.get("schema"), dict) else None
        schemas.append((i, sch.get("openAPIV3Schema") if sch else None))
    if not versions or not any(isinstance(s, dict) and has_rules(s) for _, s in schemas):
        return []
    first = schemas[0][1] if schemas else None
    if all(_deep_equal(s, first) for _, s in schemas):
        targets = [("spec.validation.openAPIV3Schema", first)]
    else:
        targets = [(f"spec.versions[{i}].schema.openAPIV3Schema", s) for i, s in schemas]
    out: list[FieldError] = []
    for path, schema in targets:
        if not isinstance(schema, dict):
            continue
        shape: list[FieldError] = []
        cel: list[FieldError] = []
        _check_schema(schema, path, True, None, shape, cel)
        out.extend(shape + cel)
    return out


def _check_schema(schema: dict[str, Any], path: str, resource_root: bool, uncorrelatable: str | None,
                  shape: list[FieldError], cel: list[FieldError]) -> None:
    before = len(shape)
    add = _additional(schema)
    if add is not None:
        _check_schema(add, f"{path}.additionalProperties", bool(add.get("x-kubernetes-embedded-resource")),
                      uncorrelatable, shape, cel)
    for k, sub in _props(schema).items():
        if isinstance(sub, dict):
            unc = uncorrelatable or (path if schema.get("x-kubernetes-map-type") == "atomic" else None)
            _check_schema(sub, f"{path}.properties[{k}]", bool(sub.get("x-kubernetes-embedded-resource")), unc,
                          shape, cel)
    items = _items(schema)
    if items is not None:
        unc = uncorrelatable or (path if schema.get("x-kubernetes-list-type") != "map" else None)
        _check_schema(items, f"{path}.items", bool(items.get("x-kubernetes-embedded-resource")), unc, shape, cel)
    rules = _rules_of(schema)
    if not rules:
        return
    base = f"{path}.x-kubernetes-validations"
    for i, r in enumerate(rules):
        if not isinstance(r, dict):
            continue
        c = _Compiled(r)
        p = f"{base}[{i}]"
        trimmed_msg = c.message.strip()
        if not c.text.strip():
            shape.append(FieldError.required(f"{p}.rule", "rule is not specified"))
        elif c.message and not trimmed_msg:
            shape.append(FieldError.invalid(f"{p}.message", c.message, "message must be non-empty if specified"))
        elif len(c.message) > 2048:
            shape.append(FieldError.invalid(f"{p}.message", c.message[:10] + "...",
                                            "message must have a maximum length of 2048 characters"))
        elif _NEWLINES.search(trimmed_msg):
            shape.append(FieldError.invalid(f"{p}.message", c.message, "message must not contain line breaks"))
        elif _NEWLINES.search(c.text.strip()) and not trimmed_msg:
            shape.append(FieldError.required(f"{p}.message", "message must be specified if rule contains line breaks"))
        if c.message_expression and not c.message_expression.strip():
            shape.append(FieldError.required(f"{p}.messageExpression",
                                             "messageExpression must be non-empty if specified"))
        if r.get("reason") is not None and r.get("reason") not in _REASONS:
            shape.append(FieldError.not_supported(f"{p}.reason", r.get("reason"), list(_REASONS)))
        if c.field_path and not c.field_path.strip():
            shape.append(FieldError.invalid(f"{p}.fieldPath", c.field_path, "fieldPath must be non-empty if specified"))
        if _NEWLINES.search(c.field_path):
            shape.append(FieldError.invalid(f"{p}.fieldPath", c.field_path, "fieldPath must not contain line breaks"))
        if c.field_path:
            _, err = _field_path(c.field_path, schema)
            if err:
                shape.append(FieldError.invalid(f"{p}.fieldPath", c.field_path,
                                                f"fieldPath must be a valid path: {err}"))
    if len(shape) > before:
        return
    st = _schema_type(schema, resource_root)
    for i, r in enumerate(rules):
        if not isinstance(r, dict):
            continue
        p = f"{base}[{i}]"
        c = _compile(r, st)
        if c.error:
            cel.append(FieldError.invalid(f"{p}.rule", _GoRule(r), c.error))
        if c.message_error:
            cel.append(FieldError.invalid(f"{p}.messageExpression", _GoRule(r), c.message_error))
        if c.uses_old_self:
            if uncorrelatable is not None:
                cel.append(FieldError.invalid(f"{p}.rule", c.text,
                                              f"oldSelf cannot be used on the uncorrelatable portion of the schema "
                                              f"within {uncorrelatable}"))
        elif r.get("optionalOldSelf") is not None and not c.error:
            cel.append(FieldError.invalid(f"{p}.optionalOldSelf", r.get("optionalOldSelf"),
                                          "may not be set if oldSelf is not used in rule"))
