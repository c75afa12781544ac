"""Hypothesis strategies for wire-form Kubernetes objects, derived from the typed schema.

:func:`wire_object` draws a valid JSON-shaped dict for any schema class: each
object sets a small random subset of its fields (so deep kinds like Pod stay
small), values respect the wire types (int32 ranges, quantities as strings or
numbers, int-or-string, RFC 3339 times, base64 bytes). :func:`kind_document`
adds ``apiVersion``/``kind`` for a served kind. :func:`struct_paths` lists where
a typed object sits in a document, for tests that plant unknown fields.
"""

from __future__ import annotations

import base64
import functools
from datetime import datetime, timezone
from typing import Any, Iterator, get_args, get_origin

import attrs
from hypothesis import strategies as st

from k8semu.api.schema import KINDS
from k8semu.api.schema.fields import (
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

__all__ = ["wire_object", "kind_document", "struct_paths", "schema_fields"]

_FIELDS_PER_OBJECT = 4
_DEPTH = 9

_text = st.text(max_size=8)
_times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(timezone.utc)
)
_json_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | _text
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_text, inner, max_size=2),
    max_leaves=4,
)


def _strip_optional(tp: Any) -> Any:
    args = [a for a in get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 and type(None) in get_args(tp) else tp


@functools.cache
def schema_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """``(wireName, type without Optional)`` for each attribute of a schema class."""
    attrs.resolve_types(cls)
    return tuple((wire_name(a), _strip_optional(a.type)) for a in attrs.fields(cls))


_SCALARS: dict[Any, st.SearchStrategy[Any]] = {
    str: _text,
    bool: st.booleans(),
    Int32: st.integers(-(2**31), 2**31 - 1),
    Int64: st.integers(-(2**63), 2**63 - 1),
    Quantity: st.sampled_from(["100m", "1Gi", "2", "0.5", "1e3", "128974848", "500Mi"])
    | st.integers(0, 10**6),
    IntOrString: st.integers(0, 65535) | st.sampled_from(["http", "25%", "metrics"]),
    Time: _times.map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")),
    MicroTime: _times.map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    Bytes: st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()),
    RawJSON: _json.filter(lambda v: v is not None),  # a top-level null is omitted, like Go
}


def _value(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    if tp in _SCALARS:
        return _SCALARS[tp]
    if tp == Loose:
        return st.dictionaries(_text, _json, max_size=2)
    if attrs.has(tp):
        return wire_object(tp, depth)
    if get_origin(tp) is tuple:
        return st.lists(_value(get_args(tp)[0], depth), max_size=2)
    if get_origin(tp) is dict:
        return st.dictionaries(_text, _value(get_args(tp)[1], depth), max_size=2)
    raise TypeError(f"no strategy for {tp!r}")


@functools.cache
def wire_object(cls: type, depth: int = _DEPTH) -> st.SearchStrategy[dict[str, Any]]:
    """A valid wire dict for schema class ``cls``; nesting stops after ``depth`` objects."""
    fields = schema_fields(cls)
    if depth <= 0:
        fields = tuple((w, t) for w, t in fields if not attrs.has(t) and get_origin(t) is not tuple)
    if not fields:
        return st.just({})

    def build(chosen: list[int]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {fields[i][0]: _value(fields[i][1], depth - 1) for i in sorted(chosen)}
        )

    picks = st.lists(
        st.integers(0, len(fields) - 1), max_size=_FIELDS_PER_OBJECT, unique=True
    )
    return picks.flatmap(build)


@st.composite
def kind_document(draw: st.DrawFn, kind_key: str | None = None) -> tuple[str, dict[str, Any]]:
    """``(kind_key, document)`` for a served kind (drawn when ``kind_key`` is None)."""
    key = kind_key or draw(st.sampled_from(sorted(KINDS)))
    api_version, kind = key.rsplit("/", 1)
    body = draw(wire_object(KINDS[key]))
    return key, {**body, "apiVersion": api_version, "kind": kind}


def struct_paths(doc: Any, cls: type, path: str = "", keys: tuple = ()) -> Iterator[tuple[str, tuple]]:
    """Every typed object in ``doc``: ``(display path, key path)``, root first.

    The display path is how kube-apiserver names fields (``spec.containers[0]``);
    the key path indexes into the document (``("spec", "containers", 0)``).
    """
    yield path, keys
    types = dict(schema_fields(cls))
    for k, v in doc.items():
        tp = types.get(k)
        sub = f"{path}.{k}" if path else k
        if attrs.has(tp) and isinstance(v, dict):
            yield from struct_paths(v, tp, sub, (*keys, k))
        elif get_origin(tp) is tuple and attrs.has(get_args(tp)[0]) and isinstance(v, list):
            for i, item in enumerate(v):
                if isinstance(item, dict):
                    yield from struct_paths(item, get_args(tp)[0], f"{sub}[{i}]", (*keys, k, i))
