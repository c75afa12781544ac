"""Small pure helpers about Pods shared by the API layer, the scheduler and the kubelet."""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["qos_class", "all_containers", "pod_condition", "is_pod_ready", "is_terminal", "pod_ipv4", "find_port"]


def all_containers(spec: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """Init containers then containers of a PodSpec."""
    yield from spec.get("initContainers") or ()
    yield from spec.get("containers") or ()


def qos_class(pod: dict[str, Any]) -> str:
    """``Guaranteed`` / ``Burstable`` / ``BestEffort`` as upstream's ``qos.GetPodQOS``.

    Guaranteed: every container has cpu and memory limits, and requests equal
    limits (requests default to limits). BestEffort: no container has any cpu or
    memory request or limit. Burstable otherwise.
    """
    from .quantity import parse_quantity

    spec = pod.get("spec") or {}
    any_set = False
    guaranteed = True
    for c in all_containers(spec):
        res = c.get("resources") or {}
        req = res.get("requests") or {}
        lim = res.get("limits") or {}
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim:
                guaranteed = False
            elif r in req and parse_quantity(req[r]) != parse_quantity(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_condition(pod: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The pod's condition of ``type_`` (``Ready``, ``PodScheduled``…), or None."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def is_pod_ready(pod: dict[str, Any]) -> bool:
    """Whether the pod's Ready condition is ``"True"``."""
    c = pod_condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def is_terminal(pod: dict[str, Any]) -> bool:
    """Whether the pod has phase Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_ipv4(pod: dict[str, Any]) -> str | None:
    """The pod's IPv4 address (``status.podIPs`` first, then ``status.podIP``), or None."""
    status = pod.get("status") or {}
    ips = [p.get("ip") for p in status.get("podIPs") or () if p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [status["podIP"]]
    return next((ip for ip in ips if ":" not in ip), None)


def find_port(pod: dict[str, Any], svc_port: dict[str, Any]) -> int | None:
    """``podutil.FindPort``: the container port a Service port targets, or None.

    A numeric ``targetPort`` is used as is (``port`` when absent); a named one is
    looked up among the pod's containers' ports with that name and the Service
    port's protocol.
    """
    target = svc_port.get("targetPort")
    if target in (None, "", 0):
        target = svc_port.get("port")
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    proto = svc_port.get("protocol") or "TCP"
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == target and (p.get("protocol") or "TCP") == proto:
                return int(p["containerPort"])
    return None
