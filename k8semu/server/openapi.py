"""OpenAPI v3 documents generated from the typed schema (:mod:`k8semu.api.schema`).

kube-apiserver serves ``/openapi/v3`` (an index of group-versions, each with a
``serverRelativeURL`` carrying a content hash) and one document per
group-version. kubectl needs three things from them:

* ``kubectl apply`` with default (strict) validation asks whether the server
  validates fields itself: it looks for a ``patch`` operation tagged with the
  kind's ``x-kubernetes-group-version-kind`` that declares a ``fieldValidation``
  query parameter. Every ``patch`` operation here declares it.
* client-side apply computes strategic-merge patches from
  ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key`` on the
  properties (taken from the attrs field metadata ``patch_strategy`` /
  ``patch_merge_key``).
* ``kubectl explain`` finds the kind's schema by its
  ``x-kubernetes-group-version-kind`` list and walks ``allOf``/``$ref``
  properties, printing each referenced type by the last segment of its name.

``/openapi/v2`` is served too, as a document with no definitions
(:func:`v2_document`): kubectl validates on the client only the kinds whose
group-version the v3 index lacks, and it reads those schemas from v2; a kind
missing from v2 is not validated there, so an unknown kind reaches kubectl's
own "no matches for kind" error, as against a real cluster.

Schema names follow upstream's (``io.k8s.api.apps.v1.Deployment``,
``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``); a type shared by several
groups is named after the first group-version that reaches it. Descriptions
are not carried (the schema classes have none), so ``explain`` prints empty
descriptions. Documents are pure functions of the schema and are cached.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from typing import Any, get_args

import attrs
import orjson

from ..api.resources import RESOURCES, ResourceInfo
from ..api.schema import KINDS
from ..api.schema import convert as _conv
from ..api.schema.fields import (
    Bytes,
    Int32,
    Int64,
    IntOrString,
    MicroTime,
    Quantity,
    RawJSON,
    Time,
    wire_name,
)
from .discovery import SUBRESOURCE_KINDS, group_versions

__all__ = ["index", "document", "document_bytes", "gv_path"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_SCALARS: dict[Any, tuple[str, dict[str, Any]]] = {
    Quantity: ("io.k8s.apimachinery.pkg.api.resource.Quantity",
               {"oneOf": [{"type": "string"}, {"type": "number"}]}),
    IntOrString: ("io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                  {"type": "string", "format": "int-or-string"}),
    Time: (f"{_META}.Time", {"type": "string", "format": "date-time"}),
    MicroTime: (f"{_META}.MicroTime", {"type": "string", "format": "date-time"}),
}


def gv_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/apps/v1`` (the key in the ``/openapi/v3`` index)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _package(cls: type, group: str, version: str) -> str:
    mod = sys.modules[cls.__module__].__name__.rsplit(".", 1)[-1]
    if mod == "meta":
        return _META
    if mod == "apiextensions":
        return sys.modules[cls.__module__].GO_PACKAGE
    if mod in ("core", "apps", "batch", "autoscaling", "rbac"):
        pkg = getattr(sys.modules[cls.__module__], "GO_PACKAGE", "v1")
        return f"io.k8s.api.{mod}.{pkg}"
    short = (group.split(".", 1)[0] if group else "core")
    return f"io.k8s.api.{short}.{version}"


class _Builder:
    """Collects component schemas reachable from the kinds of one document."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self.names: dict[type, str] = {}

    def ref(self, cls: type, group: str, version: str) -> str:
        name = self.names.get(cls)
        if name is None:
            name = f"{_package(cls, group, version)}.{cls.__name__}"
            self.names[cls] = name
            self.schemas[name] = {}  # placeholder (recursive types)
            self.schemas[name] = self._object(cls, group, version)
        return name

    def _object(self, cls: type, group: str, version: str) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for a in attrs.fields(cls):
            tp = _conv._wire_table(cls)[wire_name(a)][0]
            p = self.type_schema(tp, group, version)
            if a.metadata.get("patch_strategy"):
                p["x-kubernetes-patch-strategy"] = a.metadata["patch_strategy"]
            if a.metadata.get("patch_merge_key"):
                p["x-kubernetes-patch-merge-key"] = a.metadata["patch_merge_key"]
                if p.get("type") == "array":
                    p["x-kubernetes-list-type"] = "map"
                    p["x-kubernetes-list-map-keys"] = [a.metadata["patch_merge_key"]]
            props[wire_name(a)] = p
        return {"type": "object", "properties": props}

    def type_schema(self, tp: Any, group: str, version: str) -> dict[str, Any]:
        tp = _conv._strip_optional(tp)
        if attrs.has(tp):
            return {"allOf": [{"$ref": "#/components/schemas/" + self.ref(tp, group, version)}], "default": {}}
        if tp in _SCALARS:
            name, schema = _SCALARS[tp]
            self.schemas.setdefault(name, schema)
            return {"allOf": [{"$ref": "#/components/schemas/" + name}]}
        if _conv._is_seq(tp):
            return {"type": "array", "items": self.type_schema(get_args(tp)[0], group, version)}
        if _conv._is_loose(tp) or tp is RawJSON:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        if _conv._is_map(tp):
            return {"type": "object", "additionalProperties": self.type_schema(get_args(tp)[1], group, version)}
        if tp is bool:
            return {"type": "boolean"}
        if tp is Int32:
            return {"type": "integer", "format": "int32"}
        if tp is Int64 or tp is int:
            return {"type": "integer", "format": "int64"}
        if tp is Bytes:
            return {"type": "string", "format": "byte"}
        if tp is float:
            return {"type": "number", "format": "double"}
        return {"type": "string"}


def _param(name: str, kind: str = "string", where: str = "query", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path",
            "schema": {"type": kind, "uniqueItems": True}}


_WRITE_PARAMS = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation")]
_PATCH_CONTENT = ("application/apply-patch+yaml", "application/json-patch+json",
                  "application/merge-patch+json", "application/strategic-merge-patch+json")


def _op(action: str, gvk: dict[str, str], ref: str, params: list[dict[str, Any]],
        body: tuple[str, ...] = (), op_id: str = "") -> dict[str, Any]:
    content = {"application/json": {"schema": {"$ref": ref}}}
    op: dict[str, Any] = {
        "operationId": op_id,
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": content}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if body:
        op["requestBody"] = {"content": {t: {"schema": {"$ref": ref}} for t in body}, "required": True}
    return op


def _paths(r: ResourceInfo, b: _Builder) -> dict[str, Any]:
    base = f"/{gv_path(r.group, r.version)}"
    coll = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
    item = coll + "/{name}"
    gvk = {"group": r.group, "version": r.version, "kind": r.kind}
    cls = KINDS.get(f"{r.api_version}/{r.kind}")
    ref = "#/components/schemas/" + (b.ref(cls, r.group, r.version) if cls else f"{_META}.Status")
    ns = [_param("namespace", where="path")] if r.namespaced else []
    name = [_param("name", where="path")]
    oid = r.kind
    out: dict[str, Any] = {
        coll: {
            "get": _op("list", gvk, ref, ns + [_param("labelSelector"), _param("fieldSelector"),
                                               _param("limit", "integer"), _param("continue"),
                                               _param("watch", "boolean")], op_id=f"list{oid}"),
            "post": _op("post", gvk, ref, ns + _WRITE_PARAMS, ("application/json",), f"create{oid}"),
            "delete": _op("deletecollection", gvk, ref, ns, op_id=f"deleteCollection{oid}"),
            "parameters": [_param("pretty")],
        },
        item: {
            "get": _op("get", gvk, ref, ns + name, op_id=f"read{oid}"),
            "put": _op("put", gvk, ref, ns + name + _WRITE_PARAMS, ("application/json",), f"replace{oid}"),
            "patch": _op("patch", gvk, ref, ns + name + _WRITE_PARAMS + [_param("force", "boolean")],
                         _PATCH_CONTENT, f"patch{oid}"),
            "delete": _op("delete", gvk, ref, ns + name + [_param("dryRun"), _param("gracePeriodSeconds", "integer"),
                                                           _param("propagationPolicy")], op_id=f"delete{oid}"),
        },
    }
    for sub in r.subresources:
        sgvk, verbs = SUBRESOURCE_KINDS.get(sub, (None, ("get",)))
        if sub in ("log", "binding", "eviction", "token") or "patch" not in verbs:
            continue
        g, v, k = sgvk or (r.group, r.version, r.kind)
        scls = KINDS.get(f"{g}/{v}/{k}" if g else f"{v}/{k}")
        sref = "#/components/schemas/" + (b.ref(scls, g, v) if scls else f"{_META}.Status")
        sg = {"group": g, "version": v, "kind": k}
        out[f"{item}/{sub}"] = {
            "get": _op("get", sg, sref, ns + name, op_id=f"read{oid}{sub.title()}"),
            "put": _op("put", sg, sref, ns + name + _WRITE_PARAMS, ("application/json",), f"replace{oid}{sub.title()}"),
            "patch": _op("patch", sg, sref, ns + name + _WRITE_PARAMS + [_param("force", "boolean")],
                         _PATCH_CONTENT, f"patch{oid}{sub.title()}"),
        }
    return out


@functools.cache
def document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of one group-version (None if not served)."""
    rs = [r for r in RESOURCES if (r.group, r.version) == (group, version)]
    if not rs:
        return None
    b = _Builder()
    paths: dict[str, Any] = {}
    for r in rs:
        paths.update(_paths(r, b))
    for r in rs:
        cls = KINDS.get(f"{r.api_version}/{r.kind}")
        if cls is None:
            continue
        schema = b.schemas[b.names[cls]]
        schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "version": r.version, "kind": r.kind}]
        schema["properties"]["apiVersion"]["type"] = "string"
    return _document(b, paths, "Kubernetes", "v1.33.1")


@functools.cache
def document_bytes(group: str, version: str) -> tuple[bytes, str] | None:
    """``(JSON bytes, content hash)`` of :func:`document` (None if not served)."""
    doc = document(group, version)
    if doc is None:
        return None
    data = orjson.dumps(doc)
    return data, hashlib.sha512(data).hexdigest().upper()


@functools.cache
def index() -> dict[str, Any]:
    """``GET /openapi/v3``: ``{"paths": {"apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=H"}}}``."""
    paths = {}
    for g, v in group_versions():
        key = gv_path(g, v)
        _, h = document_bytes(g, v)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={h}"}
    return {"paths": paths}


def custom_document(group: str, version: str, custom: list[ResourceInfo]) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of a custom resources' group-version (None if none is
    served there): each kind's schema is its CRD's ``openAPIV3Schema`` (named as upstream,
    ``com.example.stable.v1.CronTab``) with ``metadata`` referring to ObjectMeta, and the
    usual paths (every ``patch`` declares ``fieldValidation``, so kubectl leaves validation to
    the server). Not cached: CRDs change."""
    from ..api.customresources import openapi_schema, schema_name
    from ..api.schema.meta import ObjectMeta

    rs = [r for r in custom if (r.group, r.version) == (group, version)]
    if not rs:
        return None
    b = _Builder()
    b.ref(ObjectMeta, "", "v1")
    paths: dict[str, Any] = {}
    for r in rs:
        name = schema_name(r)
        b.schemas[name] = openapi_schema(r)
        b.schemas[schema_name(r, r.list_kind)] = {
            "type": "object", "required": ["items"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "items": {"type": "array", "items": {"$ref": f"#/components/schemas/{name}"}},
                           "metadata": {"type": "object"}},
            "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.list_kind}]}
        cls_paths = _paths(r, b)
        ref = f"#/components/schemas/{name}"
        for item in cls_paths.values():
            for op in item.values():
                if isinstance(op, dict) and "responses" in op:
                    if op["x-kubernetes-group-version-kind"]["kind"] == r.kind:
                        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"] = ref
                        for body in (op.get("requestBody") or {}).get("content", {}).values():
                            body["schema"]["$ref"] = ref
                    if op["x-kubernetes-action"] == "patch":
                        op["requestBody"]["content"].pop("application/strategic-merge-patch+json", None)
        paths.update(cls_paths)
    return _document(b, paths, "Kubernetes CRD Swagger", "v0.1.0")


def _document(b: Any, paths: dict[str, Any], title: str, version: str) -> dict[str, Any]:
    """An OpenAPI v3 document of ``paths`` and the schemas ``b`` collected (with meta/v1 Status,
    which every operation's error responses name)."""
    b.schemas.setdefault(f"{_META}.Status", {"type": "object", "properties": {
        "kind": {"type": "string"}, "apiVersion": {"type": "string"}, "status": {"type": "string"},
        "message": {"type": "string"}, "reason": {"type": "string"}, "code": {"type": "integer", "format": "int32"}},
        "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}]})
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": dict(sorted(b.schemas.items()))},
    }


def custom_document_bytes(group: str, version: str, custom: list[ResourceInfo]) -> tuple[bytes, str] | None:
    """``(JSON bytes, content hash)`` of :func:`custom_document` (None if not served)."""
    doc = custom_document(group, version, custom)
    if doc is None:
        return None
    data = orjson.dumps(doc)
    return data, hashlib.sha512(data).hexdigest().upper()


def index_with(custom: list[ResourceInfo]) -> dict[str, Any]:
    """:func:`index` plus the custom resources' group-versions."""
    doc = index()
    if not custom:
        return doc
    paths = dict(doc["paths"])
    for g, v in dict.fromkeys((r.group, r.version) for r in custom):
        key = gv_path(g, v)
        _, h = custom_document_bytes(g, v, custom)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={h}"}
    return {"paths": paths}


#: The Content-Type of ``/openapi/v2`` as protobuf (gnostic's ``openapi.v2.Document`` message).
#: kubectl asks for the older ``…spec.v2@v1.0+protobuf``, which is not a valid media type (Go's
#: ``mime.ParseMediaType`` rejects the ``@``), so kube-apiserver answers with this spelling.
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _pb_string(field: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (strings and sub-messages under 128 bytes)."""
    assert len(value) < 128
    return bytes([field << 3 | 2, len(value)]) + value


@functools.cache
def v2_document(protobuf: bool, version: str) -> bytes:
    """``GET /openapi/v2``: ``{"swagger": "2.0", "info": {...}, "paths": {}, "definitions": {}}``.

    As JSON, or as the protobuf message kubectl requests (:data:`OPENAPI_V2_PROTOBUF`):
    ``Document {1 swagger, 2 info {1 title, 2 version}, 8 paths {}, 9 definitions {}}``.
    """
    if not protobuf:
        return orjson.dumps({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version},
                             "paths": {}, "definitions": {}})
    info = _pb_string(1, b"Kubernetes") + _pb_string(2, version.encode())
    return _pb_string(1, b"2.0") + _pb_string(2, info) + _pb_string(8, b"") + _pb_string(9, b"")
