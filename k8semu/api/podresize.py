"""The ``pods/NAME/resize`` subresource: in-place pod resize (InPlacePodVerticalScaling, beta
and on by default in Kubernetes 1.33).

As kube-apiserver 1.33's pod registry (``podResizeStrategy``) and ``ValidatePodResize``:

* **strategy** (:func:`prepare_for_update`): an update or patch of the subresource keeps, of
  what the client sent, only each container's and init container's ``resources`` and
  ``resizePolicy`` (matched by position); everything else — other spec fields, metadata other
  than ``managedFields``, status — is the stored pod's. When containers were added, removed,
  renamed or reordered the request is left as sent, for validation to refuse;
* **validation** (:func:`update_errors`), in upstream's order:

  - the metadata and the whole pod spec, as on create (e.g. ``spec.containers[0].resources.
    requests: Invalid value: "2": must be less than or equal to cpu limit of 1``);
  - static (mirror) pods: ``Forbidden: static pods cannot be resized``; Windows pods
    (``spec.os.name: windows``): ``Forbidden: windows pods cannot be resized``;
  - the QoS class may not change: ``spec: Invalid value: "Guaranteed": Pod QOS Class may not
    change as a result of resizing`` (the value is the pod's current ``status.qosClass``), so a
    Guaranteed pod's requests and limits move together and a BestEffort pod gets none;
  - a running pod whose first running container reports no ``status…resources`` is on a node
    that cannot resize: ``spec: Forbidden: Pod running on node without support for resize``;
  - containers may not be added, removed (``spec.containers: Forbidden: containers may not be
    added or removed on resize``), renamed or reordered (``spec.containers[0].name: Forbidden:
    containers may not be renamed or reordered on resize``); the same for ``initContainers``;
  - per resizable container (restartable init containers first, then containers): requests
    and limits may not be removed (``…resources.requests: Forbidden: resource requests cannot
    be removed``, ``…resources.limits: Forbidden: resource limits cannot be removed``), and a
    memory limit may not be lowered unless the container's ``resizePolicy`` for memory is
    ``RestartContainer`` (``…resources.limits[memory]: Forbidden: memory limits cannot be
    decreased unless resizePolicy is RestartContainer``; 1.35 lifted this);
  - only cpu and memory may change: a sidecar's other changes are ``spec: Forbidden: only cpu
    and memory resources for sidecar containers are mutable``, any change to a non-sidecar init
    container ``spec: Forbidden: resources for non-sidecar init containers are immutable``, and
    then anything else (another resource, a ``resizePolicy``, which is immutable in 1.33)
    ``spec: Forbidden: only cpu and memory resources are mutable``.

A pod that has not been scheduled can be resized too (its kubelet admits it with the new
resources). The main resource's update still refuses resource changes (``pod updates may not
change fields other than …``, :mod:`.validation`). A resize that changes the spec bumps the pod's
``metadata.generation`` (``updatePodGeneration``; 1.33 sets it on every pod; ``status.
observedGeneration`` is alpha there and not written). What the kubelet does with a resize is in
:mod:`k8semu.node.kubelet`.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import BadRequest, FieldError, Invalid
from .pods import qos_class
from .quantity import parse_quantity
from .strategy import with_pod_spec

__all__ = ["SUBRESOURCE", "prepare_for_update", "update_errors", "validate_update", "is_sidecar",
           "semantic_equal"]

SUBRESOURCE = "resize"
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_RESIZABLE = ("cpu", "memory")


def is_sidecar(container: dict[str, Any]) -> bool:
    """An init container with ``restartPolicy: Always`` (the only resizable init containers)."""
    return container.get("restartPolicy") == "Always"


def prepare_for_update(obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The pod a resize update stores (upstream ``dropNonResizeUpdates``): ``old`` (the stored
    Pod) with, for each container and init container, ``obj``'s ``resources`` and
    ``resizePolicy``, and ``obj``'s ``managedFields``; nothing else ``obj`` says is kept.

    ``obj`` is returned unchanged when its containers or init containers differ from ``old``'s
    in number or names (validation then refuses it, as upstream)."""
    new_spec = obj.get("spec") or {}
    old_spec = old.get("spec") or {}
    spec = dict(old_spec)
    for key in ("containers", "initContainers"):
        new_list = new_spec.get(key) or []
        old_list = old_spec.get(key) or []
        if len(new_list) != len(old_list):
            return obj
        merged = []
        for nc, oc in zip(new_list, old_list):
            if nc.get("name") != oc.get("name"):
                return obj
            c = dict(oc)
            for field in ("resources", "resizePolicy"):
                if nc.get(field) is not None:
                    c[field] = nc[field]
                else:
                    c.pop(field, None)
            merged.append(c)
        if key in old_spec:
            spec[key] = merged
    return with_pod_spec(obj, old, spec)


# ---------------------------------------------------------------------------- semantic equality


def _semantic(value: Any, quantities: bool = False) -> Any:
    """``value`` as apimachinery's ``Semantic.DeepEqual`` compares it: empty and absent maps
    and lists alike, quantities (inside ``resources``) by value."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            s = _semantic(v, quantities or k == "resources")
            if s is None or s == {} or s == []:
                continue
            out[k] = s
        return out
    if isinstance(value, list):
        return [_semantic(v, quantities) for v in value]
    if quantities and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            return ("quantity", parse_quantity(value).value)
        except (ValueError, TypeError):
            return value
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (wire-form values) are equal as ``Semantic.DeepEqual`` says."""
    return _semantic(a) == _semantic(b)


def _quantity(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


# ---------------------------------------------------------------------------- validation


def _drop_cpu_memory_updates(new_list: Any, old_list: Any) -> Any:
    """``new_list`` (a ResourceList) with its cpu and memory put back to ``old_list``'s; None
    when ``old_list`` is None (upstream's ``dropCPUMemoryUpdates``)."""
    if old_list is None:
        return None
    out = dict(new_list or {})
    for r in _RESIZABLE:
        out.pop(r, None)
        if r in old_list:
            out[r] = old_list[r]
    return out


def _drop_cpu_memory(container: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    res = container.get("resources") or {}
    old_res = old.get("resources") or {}
    dropped = {}
    for part in ("limits", "requests"):
        v = _drop_cpu_memory_updates(res.get(part), old_res.get(part))
        if v is not None:
            dropped[part] = v
    return {**container, "resources": dropped}


def _removed(new_list: Any, old_list: Any) -> bool:
    new_list, old_list = new_list or {}, old_list or {}
    return len(old_list) > len(new_list) or any(name not in new_list for name in old_list)


def _memory_policy(container: dict[str, Any]) -> str:
    for p in container.get("resizePolicy") or ():
        if p.get("resourceName") == "memory":
            return p.get("restartPolicy") or ""
    return ""


def _container_resize_errors(new: dict[str, Any], old: dict[str, Any], path: str) -> list[FieldError]:
    """upstream ``validateContainerResize`` for one container at ``path`` (``….resources``)."""
    errs = []
    nres, ores = new.get("resources") or {}, old.get("resources") or {}
    if _removed(nres.get("requests"), ores.get("requests")):
        errs.append(FieldError.forbidden(f"{path}.requests", "resource requests cannot be removed"))
    if _removed(nres.get("limits"), ores.get("limits")):
        errs.append(FieldError.forbidden(f"{path}.limits", "resource limits cannot be removed"))
    if _memory_policy(old) in ("", "NotRequired"):
        nl = (nres.get("limits") or {}).get("memory")
        ol = (ores.get("limits") or {}).get("memory")
        if nl is not None and ol is not None:
            nq, oq = _quantity(nl), _quantity(ol)
            if nq is not None and oq is not None and nq < oq:
                errs.append(FieldError.forbidden(
                    f"{path}.limits[memory]",
                    "memory limits cannot be decreased unless resizePolicy is RestartContainer"))
    return errs


def _ordering_errors(new_spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    errs = []
    for key in ("containers", "initContainers"):
        new_list, old_list = new_spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list):
            errs.append(FieldError.forbidden(f"spec.{key}", f"{key} may not be added or removed on resize"))
            continue
        for i, (nc, oc) in enumerate(zip(new_list, old_list)):
            if nc.get("name") != oc.get("name"):
                errs.append(FieldError.forbidden(f"spec.{key}[{i}].name",
                                                 f"{key} may not be renamed or reordered on resize"))
    return errs


def _resize_supported(old: dict[str, Any]) -> bool:
    """upstream ``isPodResizeRequestSupported``: the first running container reports its
    resources (a node without InPlacePodVerticalScaling would not); no running container: yes."""
    for cs in (old.get("status") or {}).get("containerStatuses") or ():
        if "running" in (cs.get("state") or {}):
            return cs.get("resources") is not None
    return True


def update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The field errors of a resize from ``old`` to ``new`` (both Pods, ``new`` from
    :func:`prepare_for_update`), in upstream's order (see the module docstring); decoding
    errors (an unparseable quantity) come back as validation's ``_DecodeError`` entries."""
    from . import validation as v

    errs: list[FieldError] = []
    name_fn, _ = v._KINDS[("", "Pod")]
    v._validate_meta(errs, new, name_fn, True)
    v._validate_meta_update(errs, new, old)
    v._validate_pod_spec(errs, new.get("spec"), "spec")
    if _MIRROR_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [FieldError.forbidden("", "static pods cannot be resized")]
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    if ((old_spec.get("os") or {}).get("name") or "") == "windows":
        return [FieldError.forbidden("", "windows pods cannot be resized")]
    old_qos = (old.get("status") or {}).get("qosClass") or qos_class(old)
    if old_qos != qos_class(new):
        errs.append(FieldError.invalid("spec", (new.get("status") or {}).get("qosClass") or "",
                                       "Pod QOS Class may not change as a result of resizing"))
    if not _resize_supported(old):
        errs.append(FieldError.forbidden("spec", "Pod running on node without support for resize"))
    ordering = _ordering_errors(new_spec, old_spec)
    if ordering:
        return errs + ordering
    new_init = new_spec.get("initContainers") or []
    new_regular = new_spec.get("containers") or []
    for i, oc in enumerate(old_spec.get("initContainers") or ()):
        if is_sidecar(oc):
            errs.extend(_container_resize_errors(new_init[i], oc, f"spec.initContainers[{i}].resources"))
    for i, oc in enumerate(old_spec.get("containers") or ()):
        errs.extend(_container_resize_errors(new_regular[i], oc, f"spec.containers[{i}].resources"))
    munged = copy.deepcopy(new_spec)
    if new_regular:
        munged["containers"] = [_drop_cpu_memory(c, oc) for c, oc in zip(new_regular, old_spec.get("containers"))]
    if new_init:
        init = []
        for c, oc in zip(new_init, old_spec.get("initContainers")):
            if is_sidecar(c):
                c = _drop_cpu_memory(c, oc)
                if not semantic_equal(c, oc):
                    errs.append(FieldError.forbidden(
                        "spec", "only cpu and memory resources for sidecar containers are mutable"))
            elif not semantic_equal(c, oc):
                errs.append(FieldError.forbidden("spec", "resources for non-sidecar init containers are immutable"))
            init.append(c)
        munged["initContainers"] = init
    if errs:
        return errs
    if not semantic_equal(munged, old_spec):
        errs.append(FieldError.forbidden("spec", "only cpu and memory resources are mutable"))
    return errs


def validate_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Raise what kube-apiserver answers to a resize from ``old`` to ``new`` (see
    :func:`update_errors`), or return None when it is valid.

    Raises:
        BadRequest: a quantity does not parse (``Pod in version "v1" cannot be handled as a
            Pod: quantities must match the regular expression …``, upstream's decoding error).
        Invalid: 422 ``The Pod "web" is invalid: …`` with every field error.
    """
    from .validation import _DecodeError

    errs = update_errors(new, old)
    decode = [e for e in errs if isinstance(e, _DecodeError)]
    if decode:
        raise BadRequest(f'Pod in version "v1" cannot be handled as a Pod: {decode[0].detail}')
    if errs:
        raise Invalid("Pod", "", (new.get("metadata") or {}).get("name") or "", errs)
