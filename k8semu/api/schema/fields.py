"""Building blocks shared by every schema module: wire scalar types and the field helper.

Each API type is a frozen, slotted attrs class whose attributes are snake_case;
the wire (JSON) name is derived by :func:`wire_name` (``host_ip`` -> ``hostIP``)
unless a field gives it explicitly. Every attribute defaults to ``None``: Go's
decoder accepts a missing or ``null`` value for any field, so requiredness is
validation's business, not decoding's.

Scalars that Go decodes specially get their own ``NewType`` so the converter can
give them strict hooks and the diagnostics the upstream error text:

=============  =====================================  ============================
type           wire value                             Go type
=============  =====================================  ============================
``Int32``      JSON integer in int32 range             ``int32``
``Int64``      JSON integer in int64 range             ``int64``
``Quantity``   string or number (``"500m"``, ``2``)    ``resource.Quantity``
``IntOrString`` integer or string (``8080``, ``"http"``) ``intstr.IntOrString``
``Time``       RFC 3339 string                         ``metav1.Time``
``MicroTime``  RFC 3339 string with fraction           ``metav1.MicroTime``
``Bytes``      base64 string                           ``[]byte``
``RawJSON``    any JSON value                          ``runtime.RawExtension``
=============  =====================================  ============================

Field metadata keys (read by the converter, the diagnostics and, later, OpenAPI):
``wire`` (JSON name), ``go`` (Go type name for error messages, e.g.
``v1.Protocol``), ``patch_strategy`` (``merge``, ``retainKeys``,
``merge,retainKeys``) and ``patch_merge_key`` (e.g. ``name``), as in the
``patchStrategy`` / ``patchMergeKey`` struct tags of k8s.io/api.
"""

from __future__ import annotations

from typing import Any, NewType

import attrs

__all__ = [
    "Int32",
    "Int64",
    "Quantity",
    "IntOrString",
    "Time",
    "MicroTime",
    "Bytes",
    "RawJSON",
    "Loose",
    "field",
    "wire_name",
    "camelize",
]

Int32 = NewType("Int32", int)
Int64 = NewType("Int64", int)
Quantity = NewType("Quantity", object)
IntOrString = NewType("IntOrString", object)
Time = NewType("Time", str)
MicroTime = NewType("MicroTime", str)
Bytes = NewType("Bytes", str)
RawJSON = NewType("RawJSON", object)
#: A free-form JSON object kept as a dict (rarely used volume sources, managedFields, …).
Loose = dict[str, Any]

# Word segments that upstream spells as acronyms after the first word.
_ACRONYMS = {
    "ip": "IP",
    "ips": "IPs",
    "id": "ID",
    "uid": "UID",
    "uuid": "UUID",
    "cidr": "CIDR",
    "cidrs": "CIDRs",
    "pid": "PID",
    "ipc": "IPC",
    "fqdn": "FQDN",
    "url": "URL",
    "urls": "URLs",
}


def camelize(name: str) -> str:
    """``host_ip`` -> ``hostIP``, ``api_version`` -> ``apiVersion``; a trailing ``_`` is dropped."""
    parts = name.rstrip("_").split("_")
    return parts[0] + "".join(_ACRONYMS.get(p, p[:1].upper() + p[1:]) for p in parts[1:])


def wire_name(a: attrs.Attribute) -> str:
    """The JSON name of an attrs attribute: its ``wire`` metadata, else :func:`camelize`."""
    return a.metadata.get("wire") or camelize(a.name)


def field(
    *,
    wire: str | None = None,
    go: str | None = None,
    strategy: str | None = None,
    merge_key: str | None = None,
) -> Any:
    """An optional attribute (default ``None``) carrying wire metadata.

    Args:
        wire: JSON name when :func:`camelize` would get it wrong (``from``, ``Port``).
        go: Go type name used in decode errors (``v1.Protocol``, ``[]v1.Capability``).
        strategy: upstream ``patchStrategy`` (``merge``, ``retainKeys``, ``merge,retainKeys``).
        merge_key: upstream ``patchMergeKey`` (``name``, ``containerPort``, …).
    """
    md: dict[str, str] = {}
    if wire:
        md["wire"] = wire
    if go:
        md["go"] = go
    if strategy:
        md["patch_strategy"] = strategy
    if merge_key:
        md["patch_merge_key"] = merge_key
    return attrs.field(default=None, metadata=md)
