"""The typed schema of every served kind, with kube-apiserver's strict decoding.

One frozen, slotted attrs class per upstream Go type (same names: ``Deployment``,
``DeploymentSpec``, ``PodSpec``, ``Container``…), snake_case attributes, wire
names and patch tags in attribute metadata (see :mod:`.fields`). Modules follow
API groups: :mod:`.meta`, :mod:`.core`, :mod:`.apps`, :mod:`.batch`,
:mod:`.autoscaling`, :mod:`.networking` (with discovery), :mod:`.rbac`,
:mod:`.other` (events, coordination, scheduling, storage, policy, Scale),
:mod:`.apiextensions` (CustomResourceDefinition), :mod:`.certificates`
(CertificateSigningRequest).
:mod:`.convert` holds the converter and the strict decoder.

Typical use::

    from k8semu.api import schema
    dep = schema.decode_strict(body, "apps/v1/Deployment")   # BadRequest on typos
    wire = schema.unstructure(dep)
"""

from .convert import (
    KINDS,
    decode_strict,
    drop_unknown_fields,
    kind_class,
    make_converter,
    structure,
    unknown_fields,
    unstructure,
)

__all__ = [
    "KINDS",
    "decode_strict",
    "drop_unknown_fields",
    "kind_class",
    "make_converter",
    "structure",
    "unknown_fields",
    "unstructure",
]
