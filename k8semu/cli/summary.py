"""What converged and what did not, after ``apply`` lets the cluster settle.

For each applied object (and the pods it owns, through ownerReferences), one
line: workloads with ready/desired counts, Jobs with completions, Services
with their ClusterIP and ready endpoints, pods with their phase; and for
anything stuck, why — a pod Pending with the scheduler's FailedScheduling
message, a container waiting in ``CrashLoopBackOff`` / ``ImagePullBackOff``,
a Job that failed with its condition reason.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import APIServer
from ..api.resources import ResourceInfo

__all__ = ["Outcome", "summarize"]


class Outcome:
    """One summary line: ``ok`` says whether the object converged."""

    __slots__ = ("name", "ok", "text")

    def __init__(self, name: str, ok: bool, text: str) -> None:
        self.name = name
        self.ok = ok
        self.text = text

    def __repr__(self) -> str:
        return f"{'ok' if self.ok else 'NOT'} {self.name}: {self.text}"


def _display(info: ResourceInfo, name: str) -> str:
    kind = info.kind.lower()
    return f"{kind}.{info.group}/{name}" if info.group else f"{kind}/{name}"


def _pod_problem(api: APIServer, pod: dict[str, Any]) -> str | None:
    """Why a pod is not Running/Succeeded and ready, or None if it is fine."""
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") not in (None, "ContainerCreating", "PodInitializing"):
            msg = waiting.get("message") or ""
            restarts = cs.get("restartCount", 0)
            extra = f" (restarts: {restarts})" if restarts else ""
            return f"{waiting['reason']}{extra}" + (f": {msg}" if msg else "")
    if phase == "Failed":
        why = status.get("reason") or next(
            (((cs.get("state") or {}).get("terminated") or {}).get("reason")
             for cs in status.get("containerStatuses") or []
             if ((cs.get("state") or {}).get("terminated") or {}).get("reason")), "")
        return f"Failed: {why} {status.get('message', '')}".rstrip()
    if phase == "Pending":
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                return f"Pending: {c.get('message', c.get('reason', ''))}"
        if not (pod.get("spec") or {}).get("nodeName"):
            return "Pending: not scheduled yet"
        return "Pending: containers are being created"
    if phase == "Running":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return None if ready else "Running but not Ready"
    return None


def _owned_pods(api: APIServer, owner: dict[str, Any]) -> list[dict[str, Any]]:
    ns = owner["metadata"].get("namespace")
    uids = {owner["metadata"]["uid"]}
    # one level of intermediate owners (Deployment -> ReplicaSet -> Pod, CronJob -> Job -> Pod)
    for plural in ("replicasets", "jobs"):
        for obj in api.list(plural, namespace=ns)["items"]:
            if any(r.get("uid") in uids for r in obj["metadata"].get("ownerReferences") or []):
                uids.add(obj["metadata"]["uid"])
    return [p for p in api.list("pods", namespace=ns)["items"]
            if any(r.get("uid") in uids for r in p["metadata"].get("ownerReferences") or [])]


def summarize(api: APIServer, applied: list[tuple[ResourceInfo, str | None, str]]) -> list[Outcome]:
    """Outcomes for the applied ``(resource, namespace, name)`` triples, in order."""
    out: list[Outcome] = []
    for info, ns, name in applied:
        try:
            obj = api.get(info, name, namespace=ns)
        except errors.NotFound:
            continue
        label = _display(info, name)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        kind = info.kind
        if kind in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"):
            want = spec.get("replicas", 1)
            ready = status.get("availableReplicas" if kind == "Deployment" else "readyReplicas", 0) or 0
            ok = ready >= want and status.get("observedGeneration", 0) >= obj["metadata"].get("generation", 1)
            what = "available" if kind == "Deployment" else "ready"
            out.append(Outcome(label, ok, f"{ready}/{want} {what}"))
            if not ok:
                out.extend(_pod_outcomes(api, obj))
        elif kind == "DaemonSet":
            want = status.get("desiredNumberScheduled", 0)
            ready = status.get("numberReady", 0)
            out.append(Outcome(label, ready >= want, f"{ready}/{want} ready"))
            if ready < want:
                out.extend(_pod_outcomes(api, obj))
        elif kind == "Job":
            conds = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
            if "Complete" in conds:
                out.append(Outcome(label, True, f"Complete ({status.get('succeeded', 0)}/{spec.get('completions', 1)})"))
            elif "Failed" in conds:
                c = conds["Failed"]
                out.append(Outcome(label, False, f"Failed: {c.get('reason')}: {c.get('message', '')}"))
            else:
                out.append(Outcome(label, False, f"running: {status.get('succeeded', 0)}/{spec.get('completions', 1)} completed"))
                out.extend(_pod_outcomes(api, obj))
        elif kind == "CronJob":
            out.append(Outcome(label, True, f"schedule {spec.get('schedule')!r}, {len(status.get('active') or [])} active"))
        elif kind == "Pod":
            problem = _pod_problem(api, obj)
            phase = status.get("phase", "Pending")
            out.append(Outcome(label, problem is None, phase if problem is None else problem))
        elif kind == "Service":
            ip = spec.get("clusterIP", "")
            ports = ",".join(f"{p['port']}:{p['nodePort']}" for p in spec.get("ports") or [] if p.get("nodePort"))
            typ = spec.get("type", "ClusterIP")
            head = f"ClusterIP {ip}" if typ == "ClusterIP" else f"{typ} {ports}, ClusterIP {ip}".replace("  ", " ")
            out.append(Outcome(label, True, head + _endpoint_text(api, obj)))
        elif kind == "PersistentVolumeClaim":
            phase = status.get("phase", "Pending")
            out.append(Outcome(label, phase == "Bound", phase))
        else:
            out.append(Outcome(label, True, "created"))
    return out


def _endpoint_text(api: APIServer, svc: dict[str, Any]) -> str:
    if not (svc.get("spec") or {}).get("selector"):
        return ""
    ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
    slices = api.list("endpointslices", namespace=ns, label_selector=f"kubernetes.io/service-name={name}")["items"]
    ready = sum(1 for s in slices for e in s.get("endpoints") or []
                if (e.get("conditions") or {}).get("ready"))
    return f", {ready} ready endpoint{'s' if ready != 1 else ''}"


def _pod_outcomes(api: APIServer, owner: dict[str, Any]) -> list[Outcome]:
    out = []
    for pod in _owned_pods(api, owner):
        problem = _pod_problem(api, pod)
        if problem is not None:
            out.append(Outcome(f"  pod/{pod['metadata']['name']}", False, problem))
    return out
