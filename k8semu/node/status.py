"""Pod status as the kubelet computes it: pure functions over wire-form dicts.

Mirrors ``pkg/kubelet/status/generate.go`` (the Initialized, ContainersReady,
Ready and PodReadyToStartContainers conditions with their reasons and
messages), ``getPhase`` in ``pkg/kubelet/kubelet_pods.go`` (the pod phase
from its container statuses, sidecars counted as upstream), the status
manager's rule that a terminal phase never goes back, and the kubelet's
admission check (``lifecycle.NewPredicateAdmitHandler``: ``OutOfcpu``,
``OutOfmemory``, ``OutOfpods`` with ``Node didn't have enough resource: …``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from ..api.quantity import bytes_value, cpu_millis

__all__ = [
    "is_sidecar", "pod_requests", "admit", "pod_phase", "conditions",
    "merge_conditions", "waiting", "running", "terminated", "go_list",
]

Obj = dict[str, Any]
T = TypeVar("T")


def go_list(names: list[str]) -> str:
    """Go's ``%s`` of a ``[]string``: ``[a b]``."""
    return "[" + " ".join(names) + "]"


def is_sidecar(container: Obj) -> bool:
    """An init container with ``restartPolicy: Always`` (a native sidecar)."""
    return container.get("restartPolicy") == "Always"


def _req(container: Obj, resource: str) -> int:
    res = container.get("resources") or {}
    q = (res.get("requests") or {}).get(resource)
    if q is None:
        q = (res.get("limits") or {}).get(resource)
    if q is None:
        return 0
    return cpu_millis(q) if resource == "cpu" else bytes_value(q)


def pod_requests(pod: Obj) -> dict[str, int]:
    """The pod's effective requests (``cpu`` in millicores, ``memory`` in bytes), as
    ``resourcehelper.PodRequests``: the larger of the regular containers' sum (plus
    sidecars) and each init container's need at its turn, plus ``spec.overhead``."""
    spec = pod.get("spec") or {}
    out = {}
    for r in ("cpu", "memory"):
        total = sum(_req(c, r) for c in spec.get("containers") or ())
        sidecars = 0
        init_peak = 0
        for c in spec.get("initContainers") or ():
            if is_sidecar(c):
                sidecars += _req(c, r)
            else:
                init_peak = max(init_peak, sidecars + _req(c, r))
        need = max(total + sidecars, init_peak)
        over = (spec.get("overhead") or {}).get(r)
        if over is not None:
            need += cpu_millis(over) if r == "cpu" else bytes_value(over)
        out[r] = need
    return out


def admit(pod: T, active: Sequence[T], allocatable: Obj, *,
          requests: Callable[[T], dict[str, int]] = pod_requests) -> tuple[str, str] | None:  # type: ignore[assignment]
    """The kubelet's resource admission of ``pod`` next to the ``active`` pods already
    admitted on the node; None if it fits, else ``(reason, message)`` such as
    ``("OutOfcpu", "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000")``.

    ``pod`` and ``active`` are pods (wire-form dicts), or anything ``requests`` maps to
    :func:`pod_requests`' answer (``cpu`` millicores, ``memory`` bytes) — the kubelet passes
    its pod workers, which remember their pods' requests. ``allocatable`` is the Node's
    ``status.allocatable`` (quantity strings).
    """
    cap_pods = int(allocatable.get("pods", "110"))
    if len(active) + 1 > cap_pods:
        return "OutOfpods", (f"Node didn't have enough resource: pods, requested: 1, "
                             f"used: {len(active)}, capacity: {cap_pods}")
    want = requests(pod)
    used = {"cpu": 0, "memory": 0}
    for p in active:
        for r, v in requests(p).items():
            used[r] += v
    for r, conv in (("cpu", cpu_millis), ("memory", bytes_value)):
        cap = conv(allocatable.get(r, "0"))
        if want[r] > 0 and want[r] > cap - used[r]:
            return f"OutOf{r}", (f"Node didn't have enough resource: {r}, requested: {want[r]}, "
                                 f"used: {used[r]}, capacity: {cap}")
    return None


# --------------------------------------------------------------------------- container states

def waiting(reason: str, message: str | None = None) -> Obj:
    w: Obj = {"reason": reason}
    if message:
        w["message"] = message
    return {"waiting": w}


def running(started_at: str) -> Obj:
    return {"running": {"startedAt": started_at}}


def terminated(exit_code: int, reason: str, started_at: str | None, finished_at: str | None,
               container_id: str | None, message: str | None = None) -> Obj:
    t: Obj = {"exitCode": exit_code, "reason": reason}
    if message:
        t["message"] = message
    t["startedAt"] = started_at
    t["finishedAt"] = finished_at
    if container_id:
        t["containerID"] = container_id
    return {"terminated": t}


def _status_of(statuses: list[Obj], name: str) -> Obj | None:
    for s in statuses:
        if s.get("name") == name:
            return s
    return None


def _any_regular_started(spec: Obj, statuses: list[Obj]) -> bool:
    for c in spec.get("containers") or ():
        s = _status_of(statuses, c["name"])
        if s is None:
            continue
        st = s.get("state") or {}
        last = s.get("lastState") or {}
        if "running" in st or "terminated" in st or "terminated" in last:
            return True
    return False


# --------------------------------------------------------------------------- phase

def pod_phase(pod: Obj, statuses: list[Obj], terminal: bool = False) -> str:
    """The pod phase from init + regular container statuses, as upstream ``getPhase``.

    Args:
        pod: the pod (its spec and restartPolicy).
        statuses: init container statuses followed by container statuses.
        terminal: the pod is being torn down for good (deleted): stopped
            containers then give Succeeded/Failed whatever the restart policy.
    """
    spec = pod.get("spec") or {}
    policy = spec.get("restartPolicy", "Always")
    pending_init = failed_init = 0
    unknown = running_ = waiting_ = stopped = succeeded = 0
    for c in spec.get("initContainers") or ():
        s = _status_of(statuses, c["name"])
        st = (s or {}).get("state") or {}
        last = (s or {}).get("lastState") or {}
        if is_sidecar(c):
            if s is None:
                unknown += 1
            elif "running" in st:
                if not s.get("started"):
                    pending_init += 1
                running_ += 1
            elif "terminated" in st:
                pass
            elif "waiting" in st:
                if "terminated" not in last:
                    pending_init += 1
                    waiting_ += 1
            else:
                pending_init += 1
                unknown += 1
            continue
        if s is None or "running" in st:
            pending_init += 1
        elif "terminated" in st:
            if st["terminated"].get("exitCode", 0) != 0:
                failed_init += 1
        elif "waiting" in st:
            if "terminated" in last:
                if last["terminated"].get("exitCode", 0) != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1
    for c in spec.get("containers") or ():
        s = _status_of(statuses, c["name"])
        if s is None:
            unknown += 1
            continue
        st = s.get("state") or {}
        last = s.get("lastState") or {}
        if "running" in st:
            running_ += 1
        elif "terminated" in st:
            stopped += 1
            if st["terminated"].get("exitCode", 0) == 0:
                succeeded += 1
        elif "waiting" in st:
            if "terminated" in last:
                stopped += 1
            else:
                waiting_ += 1
        else:
            unknown += 1
    if failed_init > 0 and policy == "Never":
        return "Failed"
    if (pending_init > 0 and not _any_regular_started(spec, statuses)) or waiting_ > 0:
        return "Pending"
    if running_ > 0 and unknown == 0:
        return "Running"
    if running_ == 0 and stopped > 0 and unknown == 0:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


# --------------------------------------------------------------------------- conditions

def _cond(type_: str, ok: bool, reason: str | None = None, message: str | None = None) -> Obj:
    c: Obj = {"type": type_, "status": "True" if ok else "False"}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def conditions(pod: Obj, init_statuses: list[Obj], statuses: list[Obj], phase: str,
               sandbox_ready: bool) -> list[Obj]:
    """The kubelet-owned conditions, in upstream's order: PodReadyToStartContainers,
    Initialized, Ready, ContainersReady (without timestamps; see :func:`merge_conditions`)."""
    spec = pod.get("spec") or {}
    everything = list(init_statuses) + list(statuses)
    out = [_cond("PodReadyToStartContainers", sandbox_ready)]
    # Initialized
    unknown, incomplete = [], []
    for c in spec.get("initContainers") or ():
        s = _status_of(init_statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
            continue
        st = s.get("state") or {}
        if is_sidecar(c):
            if not s.get("started"):
                incomplete.append(c["name"])
        elif not ("terminated" in st and st["terminated"].get("exitCode") == 0):
            incomplete.append(c["name"])
    if phase == "Succeeded" and not unknown:
        init = _cond("Initialized", True, "PodCompleted")
    elif _any_regular_started(spec, everything) or not (unknown or incomplete):
        init = _cond("Initialized", True)
    else:
        msgs = []
        if unknown:
            msgs.append(f"containers with unknown status: {go_list(unknown)}")
        if incomplete:
            msgs.append(f"containers with incomplete status: {go_list(incomplete)}")
        init = _cond("Initialized", False, "ContainersNotInitialized", ", ".join(msgs))
    out.append(init)
    # ContainersReady / Ready
    unknown, unready = [], []
    for c in spec.get("initContainers") or ():
        if not is_sidecar(c):
            continue
        s = _status_of(init_statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
        elif not s.get("ready"):
            unready.append(c["name"])
    for c in spec.get("containers") or ():
        s = _status_of(statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
        elif not s.get("ready"):
            unready.append(c["name"])
    if (phase == "Succeeded" and not unknown) or phase == "Failed":
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        cr = _cond("ContainersReady", False, reason)
    else:
        msgs = []
        if unknown:
            msgs.append(f"containers with unknown status: {go_list(unknown)}")
        if unready:
            msgs.append(f"containers with unready status: {go_list(unready)}")
        cr = _cond("ContainersReady", False, "ContainersNotReady", ", ".join(msgs)) if msgs else _cond(
            "ContainersReady", True)
    ready = {**cr, "type": "Ready"}
    if cr["status"] == "True":
        missing = []
        for gate in spec.get("readinessGates") or ():
            ctype = gate.get("conditionType")
            found = next((c for c in (pod.get("status") or {}).get("conditions") or ()
                          if c.get("type") == ctype), None)
            if found is None or found.get("status") != "True":
                missing.append(ctype)
        if missing:
            ready = _cond("Ready", False, "ReadinessGatesNotReady",
                          f"corresponding condition of pod readiness gate \"{missing[0]}\" does not exist."
                          if len(missing) == 1 else f"the status of pod readiness gates {go_list(missing)} is not \"True\"")
    out.append(ready)
    out.append(cr)
    return out


_KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def merge_conditions(old: list[Obj], new: list[Obj], stamp: str) -> list[Obj]:
    """Put the kubelet's ``new`` conditions next to the others in ``old`` (PodScheduled,
    DisruptionTarget, readiness gates…), keeping ``lastTransitionTime`` when a
    condition's status did not change, else stamping it ``stamp``."""
    old_by = {c.get("type"): c for c in old or ()}
    out = []
    for c in new:
        prev = old_by.get(c["type"])
        ltt = prev.get("lastTransitionTime") if prev and prev.get("status") == c["status"] else stamp
        out.append({"type": c["type"], "status": c["status"], "lastProbeTime": None,
                    "lastTransitionTime": ltt,
                    **({"reason": c["reason"]} if c.get("reason") else {}),
                    **({"message": c["message"]} if c.get("message") else {})})
    others = [c for c in old or () if c.get("type") not in _KUBELET_CONDITIONS]
    # upstream order: PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled
    return out + others
