"""The ``pods/NAME/ephemeralcontainers`` subresource: how ``kubectl debug`` adds a container.

As kube-apiserver's pod registry (``podEphemeralContainersStrategy``) and
``ValidatePodEphemeralContainersUpdate``:

* an update or patch of the subresource changes ``spec.ephemeralContainers`` and nothing
  else: the rest of the stored pod (metadata, every other spec field, status) is kept;
* containers already there may be neither removed (``existing ephemeral containers "x" may
  not be removed``) nor changed (``… may not be changed`` with a diff);
* each container is validated as a container, except that ``ports``, ``resources``,
  ``resizePolicy``, the probes, ``lifecycle`` and ``restartPolicy`` are
  ``Forbidden: cannot be set for an Ephemeral Container`` (an allow-list upstream: an
  empty ``resources: {}``, which kubectl sends, is fine), as is a ``volumeMounts[*].subPath``;
  its name must be unique among all the pod's containers, and ``targetContainerName`` name
  one of them;
* mirror pods (static pods) refuse them: ``Forbidden: static pods do not support ephemeral
  containers``.

A pod cannot be created with ephemeral containers (``spec.ephemeralContainers: Forbidden:
cannot be set on create``, :func:`create_errors`), and a main-resource update may not change
them. The kubelet starts each one once and never restarts it (:mod:`k8semu.node.kubelet`).
"""

from __future__ import annotations

from typing import Any

from .errors import FieldError
from .strategy import with_pod_spec

__all__ = ["SUBRESOURCE", "create_errors", "prepare_for_update", "update_errors"]

SUBRESOURCE = "ephemeralcontainers"
_PATH = "spec.ephemeralContainers"
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_NOT_ALLOWED = "cannot be set for an Ephemeral Container"
# EphemeralContainerCommon's fields outside upstream's allow-list, in its declaration order
_FORBIDDEN_FIELDS = ("ports", "resources", "resizePolicy", "livenessProbe", "readinessProbe",
                     "startupProbe", "lifecycle", "restartPolicy")


def prepare_for_update(obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The pod an ephemeralcontainers update stores: ``old`` (a stored Pod) with ``obj``'s
    ``spec.ephemeralContainers`` and managedFields, ``metadata.generation`` one up when that
    changed the spec; nothing else ``obj`` says is kept."""
    spec = dict(old.get("spec") or {})
    containers = (obj.get("spec") or {}).get("ephemeralContainers")
    if containers:
        spec["ephemeralContainers"] = containers
    else:
        spec.pop("ephemeralContainers", None)
    return with_pod_spec(obj, old, spec)


def create_errors(pod: dict[str, Any]) -> list[FieldError]:
    """What a create of ``pod`` with ephemeral containers gets (none without)."""
    if (pod.get("spec") or {}).get("ephemeralContainers"):
        return [FieldError.forbidden(_PATH, "cannot be set on create")]
    return []


def update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The field errors of an ephemeralcontainers update from ``old`` to ``new`` (both Pods,
    ``new`` from :func:`prepare_for_update`), in upstream's order."""
    from . import validation as v

    if _MIRROR_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [FieldError.forbidden("", "static pods do not support ephemeral containers")]
    errs: list[FieldError] = []
    spec = new.get("spec") or {}
    containers = spec.get("ephemeralContainers") or []
    others = [c.get("name") for key in ("containers", "initContainers") for c in spec.get(key) or ()]
    volumes = {vol.get("name") for vol in spec.get("volumes") or ()}
    # the container checks, with regular and init containers' names already taken
    v._validate_containers(errs, containers, _PATH, volumes, set(others), regular=False)
    for i, c in enumerate(containers):
        path = f"{_PATH}[{i}]"
        for name in _FORBIDDEN_FIELDS:
            if c.get(name):
                errs.append(FieldError.forbidden(f"{path}.{name}", _NOT_ALLOWED))
        for j, mount in enumerate(c.get("volumeMounts") or ()):
            for name in ("subPath", "subPathExpr"):
                if mount.get(name):
                    errs.append(FieldError.forbidden(f"{path}.volumeMounts[{j}].{name}", _NOT_ALLOWED))
        target = c.get("targetContainerName")
        if target and target not in others:
            errs.append(v._not_found(f"{path}.targetContainerName", target))
    by_name = {c.get("name"): c for c in containers}
    for was in (old.get("spec") or {}).get("ephemeralContainers") or ():
        name = was.get("name")
        now = by_name.get(name)
        if now is None:
            errs.append(FieldError.forbidden(_PATH, f'existing ephemeral containers "{name}" may not be removed\n'))
        elif now != was:
            errs.append(FieldError.forbidden(f"{_PATH}.{name}",
                                             f'existing ephemeral containers "{name}" may not be changed\n'
                                             + v._spec_diff(was, now, "core.EphemeralContainer")))
    return errs

