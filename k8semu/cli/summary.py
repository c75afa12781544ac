"""What converged and what did not, after ``apply`` lets the cluster settle.

For each applied object (and the pods it owns, through ownerReferences), one
line: workloads with ready/desired counts, Jobs with completions, Services
with their ClusterIP and ready endpoints, pods with their phase; and for
anything stuck, why — a pod Pending with the scheduler's FailedScheduling
message, a container waiting in ``CrashLoopBackOff`` / ``ImagePullBackOff``,
a Job that failed with its condition reason.

A workload counts as converged the way ``kubectl rollout status`` sees it:
its controller has observed its latest generation (``status.observedGeneration``)
— until then its counts are stale, and the line says ``not yet synced by its
controller`` instead of, say, ``0/0 ready`` — every replica is updated to the
latest template (Deployment, StatefulSet and DaemonSet rolling updates), no
old replica is left, and enough are ready/available. An outcome that is not
converged but shows nothing wrong (pods being created, a rollout under way)
is marked ``progressing`` (:attr:`Outcome.progressing`), so a caller that
stopped before the cluster settled (``apply --for 1s``) can say so honestly;
a workload with a stuck pod (a back-off, a failed scheduling) is not. An
outcome that nothing has acted on yet (a workload its controller has not
synced, a pod the scheduler has not tried) is ``fresh``
(:attr:`Outcome.fresh`): whatever the runtime said, the cluster was still
changing when the summary was taken.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import APIServer
from ..api.resources import ResourceInfo

__all__ = ["Outcome", "summarize"]


class Outcome:
    """One summary line: ``ok`` says whether the object converged.

    ``progressing`` (only when not ``ok``): nothing is wrong yet, the object is
    on its way (pods being created or becoming ready, a rollout under way, a
    controller that has not synced it yet); False for a problem that time
    alone does not fix soon (a back-off, a failed scheduling, a failed Job).
    ``fresh`` (implies ``progressing``): not acted on yet at all — its
    controller has not synced it, or the scheduler has not tried its pod.
    """

    __slots__ = ("name", "ok", "text", "progressing", "fresh")

    def __init__(self, name: str, ok: bool, text: str, progressing: bool = False, fresh: bool = False) -> None:
        self.name = name
        self.ok = ok
        self.text = text
        self.progressing = (progressing or fresh) and not ok
        self.fresh = fresh and not ok

    def __repr__(self) -> str:
        return f"{'ok' if self.ok else '..' if self.progressing else 'NOT'} {self.name}: {self.text}"


#: Pod problems (:func:`_pod_problem`) that are steps on the way, not faults.
_PASSING = ("Pending: not scheduled yet", "Pending: containers are being created", "Running but not Ready",
            "Terminating")
#: The pod problem of a pod nothing has acted on yet.
_UNTOUCHED = "Pending: not scheduled yet"


def _display(info: ResourceInfo, name: str) -> str:
    kind = info.kind.lower()
    return f"{kind}.{info.group}/{name}" if info.group else f"{kind}/{name}"


def _pod_problem(api: APIServer, pod: dict[str, Any], warnings: _Warnings) -> str | None:
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
        warning = warnings.last(pod)
        if warning is not None:  # e.g. FailedMount of a ConfigMap that does not exist
            count = warning.get("count") or 1
            return (f"Pending: {warning.get('reason')}{f' (x{count})' if count > 1 else ''}: "
                    f"{warning.get('message', '')}")
        return "Pending: containers are being created"
    if phase == "Running":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return None if ready else "Running but not Ready"
    return None


class _Warnings:
    """The latest Warning Event about each object (what ``describe`` shows last), read with one
    LIST per namespace however many pods ask."""

    def __init__(self, api: APIServer) -> None:
        self.api = api
        self._by_uid: dict[str | None, dict[str, dict[str, Any]]] = {}

    def last(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        ns, uid = obj["metadata"].get("namespace"), obj["metadata"].get("uid")
        latest = self._by_uid.get(ns)
        if latest is None:
            latest = self._by_uid[ns] = {}
            order = lambda e: (e.get("lastTimestamp") or "", int(e["metadata"]["resourceVersion"]))  # noqa: E731
            for e in sorted(self.api.list("events", namespace=ns, field_selector="type=Warning")["items"], key=order):
                latest[(e.get("involvedObject") or {}).get("uid", "")] = e
        return latest.get(uid)


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
    warnings = _Warnings(api)
    for info, ns, name in applied:
        try:
            obj = api.get(info, name, namespace=ns)
        except errors.NotFound:
            continue
        label = _display(info, name)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        kind = info.kind
        if kind in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController", "DaemonSet"):
            outcome = _workload(label, kind, obj)
            out.extend(_with_pods(outcome, api, obj, warnings))
        elif kind == "Job":
            conds = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
            if "Complete" in conds:
                out.append(Outcome(label, True, f"Complete ({status.get('succeeded', 0)}/{spec.get('completions', 1)})"))
            elif "Failed" in conds:
                c = conds["Failed"]
                out.append(Outcome(label, False, f"Failed: {c.get('reason')}: {c.get('message', '')}"))
            else:
                running = Outcome(label, False, f"running: {status.get('succeeded', 0)}/{spec.get('completions', 1)} completed",
                                  progressing=True)
                out.extend(_with_pods(running, api, obj, warnings))
        elif kind == "CronJob":
            out.append(Outcome(label, True, f"schedule {spec.get('schedule')!r}, {len(status.get('active') or [])} active"))
        elif kind == "Pod":
            problem = _pod_problem(api, obj, warnings)
            phase = status.get("phase", "Pending")
            out.append(Outcome(label, problem is None, phase if problem is None else problem,
                               progressing=problem in _PASSING, fresh=problem == _UNTOUCHED))
        elif kind == "Service":
            ip = spec.get("clusterIP", "")
            ports = ",".join(f"{p['port']}:{p['nodePort']}" for p in spec.get("ports") or [] if p.get("nodePort"))
            typ = spec.get("type", "ClusterIP")
            head = f"ClusterIP {ip}" if typ == "ClusterIP" else f"{typ} {ports}, ClusterIP {ip}".replace("  ", " ")
            out.append(Outcome(label, True, head + _endpoint_text(api, obj)))
        elif kind == "PersistentVolumeClaim":
            phase = status.get("phase", "Pending")
            if phase == "Pending" and _waits_for_consumer(api, spec):
                out.append(Outcome(label, True, "Pending: waiting for a first consumer to be scheduled"))
            else:
                out.append(Outcome(label, phase == "Bound", phase))  # no provisioner: Bound only to a hand-made PV
        else:
            out.append(Outcome(label, True, "exists"))  # (created, configured or unchanged: said above)
    return out


def _waits_for_consumer(api: APIServer, spec: dict[str, Any]) -> bool:
    """Whether a claim's StorageClass binds it only once a pod using it is scheduled
    (``volumeBindingMode: WaitForFirstConsumer``): Pending is where it should be then."""
    name = spec.get("storageClassName")
    if not name:
        return False
    try:
        sc = api.get("storageclasses.storage.k8s.io", name)
    except errors.NotFound:
        return False
    return sc.get("volumeBindingMode") == "WaitForFirstConsumer"


def _workload(label: str, kind: str, obj: dict[str, Any]) -> Outcome:
    """A Deployment, ReplicaSet, ReplicationController, StatefulSet or DaemonSet, as rollout status sees it."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation", 1)
    if (status.get("observedGeneration") or 0) < generation:
        return Outcome(label, False, "not yet synced by its controller", fresh=True)
    strategy = spec.get("updateStrategy" if kind in ("StatefulSet", "DaemonSet") else "strategy") or {}
    rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
    if kind == "DaemonSet":
        want = status.get("desiredNumberScheduled", 0) or 0
        ready = status.get("numberReady", 0) or 0
        updated = (status.get("updatedNumberScheduled", 0) or 0) if rolling else want
        text, lagging = f"{ready}/{want} ready", []
        if updated < want:
            lagging.append(f"{updated}/{want} updated")
        return Outcome(label, ready >= want and not lagging, ", ".join([text, *lagging]), progressing=True)
    want = spec.get("replicas", 1)
    lagging = []
    if kind == "Deployment":
        ready = status.get("availableReplicas", 0) or 0
        text = f"{ready}/{want} available"
        updated = status.get("updatedReplicas", 0) or 0
        old = (status.get("replicas", 0) or 0) - updated
        if updated < want:
            lagging.append(f"{updated}/{want} updated")
        elif old > 0:
            lagging.append(f"{old} old replica{'s' if old != 1 else ''} pending termination")
        ok = ready >= want and not lagging
        stalled = any(c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
                      for c in status.get("conditions") or [])
        if not ok and spec.get("paused"):
            lagging.append("paused")
        elif not ok and stalled:
            lagging.append("progress deadline exceeded")
        return Outcome(label, ok, ", ".join([text, *lagging]),
                       progressing=not (stalled or spec.get("paused")))
    ready = status.get("readyReplicas", 0) or 0
    text = f"{ready}/{want} ready"
    if kind == "StatefulSet" and rolling and ready >= want:  # rollout status: readiness first
        partition = (strategy.get("rollingUpdate") or {}).get("partition", 0) or 0
        updated = status.get("updatedReplicas", 0) or 0
        if updated < want - partition:
            lagging.append(f"{updated}/{want} updated")
    return Outcome(label, ready >= want and not lagging, ", ".join([text, *lagging]), progressing=True)


def _endpoint_text(api: APIServer, svc: dict[str, Any]) -> str:
    if not (svc.get("spec") or {}).get("selector"):
        return ""
    ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
    slices = api.list("endpointslices", namespace=ns, label_selector=f"kubernetes.io/service-name={name}")["items"]
    ready = sum(1 for s in slices for e in s.get("endpoints") or []
                if (e.get("conditions") or {}).get("ready"))
    return f", {ready} ready endpoint{'s' if ready != 1 else ''}"


def _pod_outcomes(api: APIServer, owner: dict[str, Any], warnings: _Warnings) -> list[Outcome]:
    out = []
    for pod in _owned_pods(api, owner):
        problem = _pod_problem(api, pod, warnings)
        if problem is not None:
            out.append(Outcome(f"  pod/{pod['metadata']['name']}", False, problem,
                               progressing=problem in _PASSING, fresh=problem == _UNTOUCHED))
    return out


def _with_pods(outcome: Outcome, api: APIServer, owner: dict[str, Any], warnings: _Warnings) -> list[Outcome]:
    """``outcome`` of a workload or Job, then (when it is not ok) a line per pod of it with a problem.

    The owner is progressing only while none of its pods is stuck, and fresh
    when one of its pods is.
    """
    if outcome.ok:
        return [outcome]
    pods = _pod_outcomes(api, owner, warnings)
    if any(not p.progressing for p in pods):
        outcome.progressing = outcome.fresh = False
    elif any(p.fresh for p in pods):
        outcome.progressing = outcome.fresh = True
    return [outcome, *pods]
