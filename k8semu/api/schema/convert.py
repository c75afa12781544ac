"""Wire <-> typed conversion with kube-apiserver's strict decoding.

:func:`make_converter` builds a cattrs ``Converter`` for the schema classes:

* one structure / unstructure hook *factory* covers every attrs class, renaming
  snake_case attributes to their camelCase wire names (``fields.wire_name``);
* unknown keys are forbidden, and scalar hooks are strict (no ``"3"`` -> ``3``
  coercion, no ``"abc"`` -> ``["a", "b", "c"]``), so a document that structures
  without error is one kube-apiserver would also decode;
* unstructure drops ``None`` attributes, so ``unstructure(structure(d)) == d``
  for any valid ``d`` without explicit nulls; lists come back as lists.

Structuring is the fast path. Only when it fails does :func:`decode_strict`
walk the document a second time (``_Diagnosis``) to word the error the way
kube-apiserver does: Go's ``encoding/json`` reports the *first* type mismatch
(``json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas
of type int32``); otherwise the strict decoder lists *every* unknown field by its
full path (``strict decoding error: unknown field "spec.foo", unknown field
"spec.template.spec.containers[0].imagee"``). Either is wrapped as
``Deployment in version "v1" cannot be handled as a Deployment: …`` in a 400.

Loose values (``dict[str, Any]`` volume sources, ``managedFields``,
``ControllerRevision.data``) are shared, not copied: treat them as immutable.
"""

from __future__ import annotations

import functools
import re
import sys
import types
from datetime import datetime, timezone
from typing import Any, Callable, Union, get_args, get_origin

import attrs
import cattrs

from ..errors import BadRequest
from . import (admissionregistration, apiextensions, apps, autoscaling, batch, certificates, core, meta, networking,
               other, rbac)
from .fields import (
    Bytes,
    Int32,
    Int64,
    IntOrString,
    Loose,
    MicroTime,
    Quantity,
    RawJSON,
    Time,
    wire_name,
)

__all__ = [
    "KINDS",
    "make_converter",
    "kind_class",
    "structure",
    "unstructure",
    "decode_strict",
    "unknown_fields",
    "drop_unknown_fields",
]

#: ``"<apiVersion>/<Kind>"`` -> schema class, for every served kind and request body.
KINDS: dict[str, type] = {
    **meta.KINDS,
    **core.KINDS,
    **apps.KINDS,
    **batch.KINDS,
    **autoscaling.KINDS,
    **networking.KINDS,
    **rbac.KINDS,
    **other.KINDS,
    **apiextensions.KINDS,
    **admissionregistration.KINDS,
    **certificates.KINDS,
}

# class -> its first kind key (DeleteOptions is served under two), for error wording.
_KEY_OF: dict[type, str] = {c: k for k, c in reversed(KINDS.items())}

_INT_RANGE = {Int32: (-(2**31), 2**31 - 1), Int64: (-(2**63), 2**63 - 1)}
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_MSG = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_RFC3339_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_LAYOUT = {Time: "2006-01-02T15:04:05Z07:00", MicroTime: "2006-01-02T15:04:05.000000Z07:00"}
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


# Scalars unstructured as they are.
_PLAIN = frozenset({str, bool, Int32, Int64, Quantity, IntOrString, Time, MicroTime, Bytes, RawJSON})


class _Reject(ValueError):
    """A value the strict hooks refuse; details come from the diagnosis walk."""


# --- type analysis ----------------------------------------------------------------------------


def _strip_optional(tp: Any) -> Any:
    if isinstance(tp, types.UnionType) or get_origin(tp) is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _is_optional(tp: Any) -> bool:
    return _strip_optional(tp) is not tp


def _is_seq(tp: Any) -> bool:
    return get_origin(tp) is tuple


def _is_map(tp: Any) -> bool:
    return get_origin(tp) is dict


def _is_loose(tp: Any) -> bool:
    return tp == Loose


@functools.cache
def _wire_table(cls: type) -> dict[str, tuple[Any, str | None]]:
    """``wireName -> (resolved type without Optional, Go type override)`` for an attrs class."""
    attrs.resolve_types(cls)
    return {
        wire_name(a): (_strip_optional(a.type), a.metadata.get("go"))
        for a in attrs.fields(cls)
    }


def _go_name(tp: Any) -> str:
    """The Go type name that ``encoding/json`` prints for a schema type."""
    if attrs.has(tp):
        pkg = getattr(sys.modules[tp.__module__], "GO_PACKAGE", "v1")
        return f"{pkg}.{tp.__name__}"
    if _is_seq(tp):
        return "[]" + _go_name(get_args(tp)[0])
    if _is_map(tp):
        return "map[string]" + _go_name(get_args(tp)[1])
    return {
        str: "string",
        bool: "bool",
        Int32: "int32",
        Int64: "int64",
        Quantity: "resource.Quantity",
        IntOrString: "intstr.IntOrString",
        Time: "v1.Time",
        MicroTime: "v1.MicroTime",
        Bytes: "[]uint8",
    }.get(tp, "interface {}")


def _elem_go(go: str | None, prefix: str) -> str | None:
    """The element's Go name inside a ``[]T`` / ``map[K]T`` override, if any."""
    if not go:
        return None
    if prefix == "[]" and go.startswith("[]"):
        return go[2:]
    if prefix == "map" and go.startswith("map["):
        return go[go.index("]") + 1 :]
    return None


# --- strict scalar hooks ----------------------------------------------------------------------


def _s_str(v: Any, _: Any) -> str:
    if isinstance(v, str):
        return v
    raise _Reject()


def _s_bool(v: Any, _: Any) -> bool:
    if v is True or v is False:
        return v
    raise _Reject()


def _int_ok(v: Any, tp: Any) -> int | None:
    """``v`` as an int if Go would accept it for an int32/int64 field, else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float):
        if not v.is_integer():
            return None
        v = int(v)
    if not isinstance(v, int):
        return None
    lo, hi = _INT_RANGE[tp]
    return v if lo <= v <= hi else None


def _int_hook(tp: Any) -> Callable[[Any, Any], int]:
    def hook(v: Any, _: Any) -> int:
        out = _int_ok(v, tp)
        if out is None:
            raise _Reject()
        return out

    return hook


def _quantity_ok(v: Any) -> bool:
    if isinstance(v, str):
        return _QUANTITY_RE.match(v) is not None
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _s_quantity(v: Any, _: Any) -> Any:
    if _quantity_ok(v):
        return v
    raise _Reject()


def _s_int_or_string(v: Any, _: Any) -> Any:
    if isinstance(v, str):
        return v
    out = _int_ok(v, Int32)
    if out is None:
        raise _Reject()
    return out


def _s_time(v: Any, tp: Any) -> str:
    if isinstance(v, str) and _RFC3339_RE.match(v):
        return v
    if isinstance(v, datetime):  # an unquoted YAML timestamp; kubectl sends it as a string
        return _format_time(v, tp)
    raise _Reject()


def _format_time(v: datetime, tp: Any) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(timezone.utc)
    return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if tp is MicroTime else "%Y-%m-%dT%H:%M:%SZ")


def _base64_error_offset(s: str) -> int | None:
    """Offset Go's ``base64.StdEncoding`` reports for an invalid string, or None if valid.

    Mirrors ``encoding/base64``: ``\\r``/``\\n`` are skipped, padding is required,
    and the error offset is a byte offset into the input.
    """
    src = s.encode()
    n, si = len(src), 0
    while True:
        j = 0
        while j < 4:
            if si == n:
                return None if j == 0 else si - j
            c = src[si]
            si += 1
            if c in _B64:
                j += 1
                continue
            if c in (10, 13):
                continue
            if c != 61:  # '='
                return si - 1
            if j in (0, 1):
                return si - 1
            if j == 2:
                while si < n and src[si] in (10, 13):
                    si += 1
                if si == n:
                    return n
                if src[si] != 61:
                    return si - 1
                si += 1
            while si < n and src[si] in (10, 13):
                si += 1
            return si if si < n else None


def _s_bytes(v: Any, _: Any) -> str:
    if isinstance(v, str) and _base64_error_offset(v) is None:
        return v
    raise _Reject()


def _s_loose(v: Any, _: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    raise _Reject()


def _key(k: Any) -> str:
    """Map keys as sigs.k8s.io/yaml makes them: YAML ``1`` or ``true`` keys become strings."""
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


# --- the converter ----------------------------------------------------------------------------


def make_converter() -> cattrs.Converter:
    """A fresh cattrs converter between wire dicts and the schema classes.

    Structuring raises on unknown keys and wrong JSON types (any exception type;
    use :func:`decode_strict` for kube-apiserver's error text). Unstructuring
    emits camelCase keys, omits ``None`` attributes and turns tuples into lists.
    """
    conv = cattrs.Converter(detailed_validation=False)

    conv.register_structure_hook(str, _s_str)
    conv.register_structure_hook(bool, _s_bool)
    conv.register_structure_hook(Int32, _int_hook(Int32))
    conv.register_structure_hook(Int64, _int_hook(Int64))
    conv.register_structure_hook(Quantity, _s_quantity)
    conv.register_structure_hook(IntOrString, _s_int_or_string)
    conv.register_structure_hook(Time, _s_time)
    conv.register_structure_hook(MicroTime, _s_time)
    conv.register_structure_hook(Bytes, _s_bytes)
    conv.register_structure_hook(RawJSON, lambda v, _: v)
    conv.register_structure_hook_func(_is_loose, _s_loose)
    for nt in (Int32, Int64, Quantity, IntOrString, Time, MicroTime, Bytes, RawJSON):
        conv.register_unstructure_hook(nt, lambda v: v)
    conv.register_unstructure_hook_func(_is_loose, lambda v: v)

    def seq_structure(tp: Any) -> Callable[[Any, Any], tuple]:
        elem = get_args(tp)[0]
        hook = conv.get_structure_hook(elem)

        def structure_seq(v: Any, _: Any) -> tuple:
            if not isinstance(v, (list, tuple)):
                raise _Reject()
            return tuple(None if x is None else hook(x, elem) for x in v)

        return structure_seq

    def map_structure(tp: Any) -> Callable[[Any, Any], dict]:
        elem = get_args(tp)[1]
        hook = conv.get_structure_hook(elem)

        def structure_map(v: Any, _: Any) -> dict:
            if not isinstance(v, dict):
                raise _Reject()
            return {_key(k): None if x is None else hook(x, elem) for k, x in v.items()}

        return structure_map

    def seq_unstructure(tp: Any) -> Callable[[tuple], list]:
        elem = get_args(tp)[0]
        if not attrs.has(elem) and not _is_seq(elem) and not _is_map(elem):
            return list
        hook = conv.get_unstructure_hook(elem)
        return lambda v: [hook(x) for x in v]

    def map_unstructure(tp: Any) -> Callable[[dict], dict]:
        elem = get_args(tp)[1]
        if not attrs.has(elem) and not _is_seq(elem) and not _is_map(elem):
            return dict
        hook = conv.get_unstructure_hook(elem)
        return lambda v: {k: hook(x) for k, x in v.items()}

    def class_structure(cls: type) -> Callable[[Any, Any], Any]:
        # Iterate the keys present (objects are sparse) rather than every attribute;
        # nested hooks are resolved on first use so the factory never recurses.
        attrs.resolve_types(cls)
        plan: dict[str, tuple[str, Any, Any]] = {}

        def resolve() -> None:
            for a in attrs.fields(cls):
                inner = _strip_optional(a.type)
                plan[wire_name(a)] = (a.name, conv.get_structure_hook(inner), inner)

        def structure_cls(v: Any, _: Any) -> Any:
            if not plan:
                resolve()
            if not isinstance(v, dict):
                raise _Reject()
            kw = {}
            for k, x in v.items():
                name, hook, tp = plan[k]  # KeyError: unknown field
                if x is not None:
                    kw[name] = hook(x, tp)
            return cls(**kw)

        return structure_cls

    def class_unstructure(cls: type) -> Callable[[Any], dict]:
        attrs.resolve_types(cls)
        plan: list[tuple[str, str, Any]] = []

        def resolve() -> None:
            for a in attrs.fields(cls):
                inner = _strip_optional(a.type)
                hook = None if inner in _PLAIN else conv.get_unstructure_hook(inner)
                plan.append((a.name, wire_name(a), hook))

        def unstructure_cls(inst: Any) -> dict:
            if not plan:
                resolve()
            out = {}
            for name, wire, hook in plan:
                x = getattr(inst, name)
                if x is not None:
                    out[wire] = x if hook is None else hook(x)
            return out

        return unstructure_cls

    def optional_structure(tp: Any) -> Callable[[Any, Any], Any]:
        inner = _strip_optional(tp)
        hook = conv.get_structure_hook(inner)
        return lambda v, _: None if v is None else hook(v, inner)

    conv.register_structure_hook_factory(_is_seq, seq_structure)
    conv.register_structure_hook_factory(lambda t: _is_map(t) and not _is_loose(t), map_structure)
    conv.register_unstructure_hook_factory(_is_seq, seq_unstructure)
    conv.register_unstructure_hook_factory(lambda t: _is_map(t) and not _is_loose(t), map_unstructure)
    conv.register_structure_hook_factory(_is_optional, optional_structure)
    conv.register_structure_hook_factory(attrs.has, class_structure)
    conv.register_unstructure_hook_factory(attrs.has, class_unstructure)
    return conv


@functools.cache
def _converter() -> cattrs.Converter:
    return make_converter()


def kind_class(kind_key: str) -> type:
    """The schema class for ``"<apiVersion>/<Kind>"`` (``"apps/v1/Deployment"``, ``"v1/Pod"``).

    Raises:
        KeyError: the key names no kind this schema covers.
    """
    return KINDS[kind_key]


def structure(obj: dict[str, Any], cls: type) -> Any:
    """Wire dict -> instance of any schema class, strictly.

    Raises:
        BadRequest: as :func:`decode_strict` (worded with ``cls``'s kind and version).
    """
    try:
        return _converter().structure(obj, cls)
    except Exception:
        pass
    version, kind = _split_key(_KEY_OF.get(cls, f"v1/{cls.__name__}"))
    raise BadRequest(_diagnose(obj, cls).message(kind, version))


def unstructure(inst: Any) -> Any:
    """Instance -> wire dict (camelCase keys, ``None`` omitted, lists as lists)."""
    return _converter().unstructure(inst)


def _split_key(kind_key: str) -> tuple[str, str]:
    """``"apps/v1/Deployment"`` -> (``"v1"``, ``"Deployment"``)."""
    head, kind = kind_key.rsplit("/", 1)
    return head.rsplit("/", 1)[-1], kind


def decode_strict(obj: dict[str, Any], kind_key: str) -> Any:
    """Decode a request body the way kube-apiserver does with ``fieldValidation=Strict``.

    Args:
        obj: the wire dict (as parsed from JSON/YAML; not mutated).
        kind_key: ``"<apiVersion>/<Kind>"``, e.g. ``"apps/v1/Deployment"``.

    Returns:
        The typed object (an instance of ``KINDS[kind_key]``).

    Raises:
        BadRequest: 400 with upstream's text, e.g. ``Deployment in version "v1" cannot
            be handled as a Deployment: strict decoding error: unknown field
            "spec.template.spec.containers[0].imagee"``, or, for a wrong JSON type,
            ``…: json: cannot unmarshal string into Go struct field
            DeploymentSpec.spec.replicas of type int32`` (type errors win, as in Go).
        KeyError: ``kind_key`` is not a covered kind.
    """
    cls = KINDS[kind_key]
    try:
        return _converter().structure(obj, cls)
    except Exception:
        pass
    version, kind = _split_key(kind_key)
    raise BadRequest(_diagnose(obj, cls).message(kind, version))


def unknown_fields(obj: dict[str, Any], kind_key: str) -> list[str]:
    """Every unknown field of ``obj`` by full path, in document order (``fieldValidation=Warn``).

    kube-apiserver turns each into a warning ``unknown field "spec.foo"``. Type
    errors are not reported here (they fail the request in every mode: call
    :func:`decode_strict`).
    """
    cls = KINDS[kind_key]
    try:
        _converter().structure(obj, cls)
        return []
    except Exception:
        return _diagnose(obj, cls).unknown


def drop_unknown_fields(obj: dict[str, Any], kind_key: str) -> tuple[dict[str, Any], list[str]]:
    """Decode a request body the way kube-apiserver does with ``fieldValidation=Warn`` or
    ``Ignore``: unknown fields are dropped (Go's decoder has nowhere to put them).

    Returns:
        ``(object, paths)``: ``obj`` itself when it has no unknown field, else a copy
        without them; the dropped fields' paths in document order (``spec.foo``), for
        ``Warn``'s ``unknown field "spec.foo"`` warnings.
    Raises:
        BadRequest: a wrong JSON type, which fails the request in every mode
            (upstream's ``json: cannot unmarshal …`` text).
        KeyError: ``kind_key`` is not a covered kind.
    """
    from ..meta import copy_object

    cls = KINDS[kind_key]
    try:
        _converter().structure(obj, cls)
        return obj, []
    except Exception:
        pass
    out = copy_object(obj)
    diag = _diagnose(out, cls)
    if diag.type_error is not None or not diag.unknown:
        version, kind = _split_key(kind_key)
        raise BadRequest(diag.message(kind, version))
    for holder, key in diag.unknown_at:
        holder.pop(key, None)
    return out, diag.unknown


# --- diagnosis: upstream's error text ---------------------------------------------------------


def _json_kind(v: Any) -> str:
    """Go's name for the JSON kind of ``v`` (YAML dates and such travel as strings)."""
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "string"


def _number_literal(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


class _Diagnosis:
    """One walk over a document: Go's first type error and every unknown field path."""

    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.unknown_at: list[tuple[dict[str, Any], Any]] = []  # (the object holding it, its key)
        self.type_error: str | None = None

    def message(self, kind: str, version: str) -> str:
        if self.type_error is not None:
            err = self.type_error
        elif self.unknown:
            err = "strict decoding error: " + ", ".join(
                f'unknown field "{p}"' for p in self.unknown
            )
        else:  # the hooks refused something the walk accepts: should not happen
            err = "unable to decode request body"
        return f'{kind} in version "{version}" cannot be handled as a {kind}: {err}'

    def _fail(self, msg: str) -> None:
        if self.type_error is None:
            self.type_error = msg

    def _type(self, v: Any, tp: Any, go: str | None, struct: str, gpath: str, literal: bool = False) -> None:
        what = _json_kind(v)
        if literal and what == "number":
            what = f"number {_number_literal(v)}"
        self._fail(
            f"json: cannot unmarshal {what} into Go struct field {struct}.{gpath} "
            f"of type {go or _go_name(tp)}"
        )

    def struct(self, d: dict[str, Any], cls: type, upath: str, gpath: str) -> None:
        table = _wire_table(cls)
        for k, v in d.items():
            key = _key(k)
            up = f"{upath}.{key}" if upath else key
            entry = table.get(key)
            if entry is None:
                self.unknown.append(up)
                self.unknown_at.append((d, k))
                continue
            if v is None:
                continue
            tp, go = entry
            self.value(v, tp, go, cls.__name__, up, f"{gpath}.{key}" if gpath else key)

    def value(self, v: Any, tp: Any, go: str | None, struct: str, upath: str, gpath: str) -> None:
        if attrs.has(tp):
            if isinstance(v, dict):
                self.struct(v, tp, upath, gpath)
            else:
                self._type(v, tp, go, struct, gpath)
        elif _is_seq(tp):
            if not isinstance(v, (list, tuple)):
                self._type(v, tp, go, struct, gpath)
                return
            elem, ego = get_args(tp)[0], _elem_go(go, "[]")
            for i, x in enumerate(v):
                if x is not None:
                    self.value(x, elem, ego, struct, f"{upath}[{i}]", gpath)
        elif tp == Loose:
            if not isinstance(v, dict):
                self._type(v, tp, go, struct, gpath)
        elif _is_map(tp):
            if not isinstance(v, dict):
                self._type(v, tp, go, struct, gpath)
                return
            elem, ego = get_args(tp)[1], _elem_go(go, "map")
            for k, x in v.items():
                if x is not None:
                    self.value(x, elem, ego, struct, f"{upath}.{_key(k)}", gpath)
        elif tp is str or tp is bool:
            if not isinstance(v, tp) or (tp is str and isinstance(v, bool)):
                self._type(v, tp, go, struct, gpath)
        elif tp is Int32 or tp is Int64:
            if _int_ok(v, tp) is None:
                self._type(v, tp, go, struct, gpath, literal=True)
        elif tp is Quantity:
            if not _quantity_ok(v):
                self._fail(_QUANTITY_MSG)
        elif tp is IntOrString:
            if not isinstance(v, str) and _int_ok(v, Int32) is None:
                what = _json_kind(v)
                if what == "number":
                    what = f"number {_number_literal(v)}"
                self._fail(f"json: cannot unmarshal {what} into Go value of type int32")
        elif tp is Time or tp is MicroTime:
            if isinstance(v, datetime):
                return
            if not isinstance(v, str):
                self._fail(f"json: cannot unmarshal {_json_kind(v)} into Go value of type string")
            elif not _RFC3339_RE.match(v):
                layout = _LAYOUT[tp]
                self._fail(f'parsing time "{v}" as "{layout}": cannot parse "{v}" as "2006"')
        elif tp is Bytes:
            if not isinstance(v, str):
                self._type(v, tp, go, struct, gpath)
            else:
                off = _base64_error_offset(v)
                if off is not None:
                    self._fail(f"illegal base64 data at input byte {off}")
        # RawJSON / Any: every JSON value is accepted.


def _diagnose(obj: Any, cls: type) -> _Diagnosis:
    diag = _Diagnosis()
    if isinstance(obj, dict):
        diag.struct(obj, cls, "", "")
    else:
        diag._fail(
            f"json: cannot unmarshal {_json_kind(obj)} into Go value of type {_go_name(cls)}"
        )
    return diag
