"""The DaemonSet controller, as kube-controller-manager's ``daemonset-controller``
(pkg/controller/daemon, v1.3x).

Design
======

A sync of one DaemonSet:

1. makes sure a ControllerRevision for the current template exists
   (``<ds>-<hash>``, label ``controller-revision-hash``; data is the template
   patch upstream stores) and prunes old unused ones beyond
   ``revisionHistoryLimit``;
2. for every Node (in name order) decides, as upstream's
   ``NodeShouldRunDaemonPod`` (:func:`node_should_run`), whether a daemon pod
   should run there (``spec.nodeName``, node selector, required node
   affinity, taints against the template's tolerations plus the daemon
   tolerations :func:`daemon_tolerations` adds) and whether an existing one
   may keep running (only untolerated ``NoSchedule`` taints let it stay);
3. creates the missing pods — unbound, with required node affinity
   ``matchFields metadata.name In [<node>]`` so the scheduler binds them —
   and deletes pods that must go (failed ones, duplicates, misscheduled);
4. rolls out a new template (``RollingUpdate`` with ``maxUnavailable`` or
   ``maxSurge``; ``OnDelete`` waits for the user), as upstream's ``rollingUpdate``;
5. writes status (:func:`daemonset_status`).

Pods are tied to a node by ``spec.nodeName`` or, before binding, by the node
affinity term the controller set (upstream's ``GetTargetNodeName``).
Decisions are pure functions over wire-form dicts; the controller class reads
the caches and makes the API calls, with creation/deletion expectations from
:mod:`.controller_utils`.
"""

from __future__ import annotations

import math
from typing import Any

from ..api import errors
from ..api.meta import copy_object
from ..api.pods import is_pod_ready
from ..api.scheduling import RequiredNodeAffinity, tolerations_tolerate_taint
from ..api.selectors import selector_from_label_selector
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import CONTROLLER_UID_INDEX, EventHandler, controller_uid_index, meta_namespace_key
from .controller_utils import (
    ControllerExpectations,
    compute_hash,
    is_pod_available,
    REVISION_HASH_LABEL,
    new_controller_ref,
    new_controller_revision,
    pod_key,
)

__all__ = [
    "DaemonSetController",
    "daemon_tolerations",
    "node_should_run",
    "new_daemon_pod",
    "target_node",
    "daemonset_status",
    "REVISION_HASH_LABEL",
]

Obj = dict[str, Any]

#: Failed daemon pods are replaced after a back-off of 1 s doubling to 15 minutes.
FAILED_POD_BACKOFF = 1.0
MAX_FAILED_POD_BACKOFF = 900.0


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


# --------------------------------------------------------------------------- scheduling predicates


def daemon_tolerations(pod_spec: Obj) -> list[Obj]:
    """The template's tolerations plus those upstream's ``AddOrUpdateDaemonPodTolerations``
    adds: not-ready / unreachable ``NoExecute`` (no tolerationSeconds),
    disk-pressure / memory-pressure / pid-pressure / unschedulable ``NoSchedule``,
    and network-unavailable ``NoSchedule`` for hostNetwork pods."""
    tols = list(pod_spec.get("tolerations") or [])
    wanted = [("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
              ("node.kubernetes.io/disk-pressure", "NoSchedule"),
              ("node.kubernetes.io/memory-pressure", "NoSchedule"),
              ("node.kubernetes.io/pid-pressure", "NoSchedule"),
              ("node.kubernetes.io/unschedulable", "NoSchedule")]
    if pod_spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        tols = [t for t in tols if not (t.get("key") == key and t.get("effect") == effect)] + [tol]
    return tols


# DaemonSet uid -> (its template's pod spec, what node_should_run needs of it): a sync asks
# it of every node. A hit needs the very same pod-spec dict (informer caches share one
# per version), so another version, or another cluster reusing a seeded uid, recomputes.
_PLACEMENTS: dict[str, tuple[Obj, RequiredNodeAffinity, list[Obj]]] = {}


def _placement(ds: Obj) -> tuple[Obj, RequiredNodeAffinity, list[Obj]]:
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    uid = _meta(ds).get("uid") or ""
    found = _PLACEMENTS.get(uid)
    if found is None or found[0] is not pod_spec:
        found = (pod_spec, RequiredNodeAffinity({"spec": pod_spec}), daemon_tolerations(pod_spec))
        if uid:
            if len(_PLACEMENTS) > 256:
                _PLACEMENTS.clear()
            _PLACEMENTS[uid] = found
    return found


def node_should_run(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """``(shouldRun, shouldContinueRunning)`` for ``ds`` on ``node``, as upstream's
    ``NodeShouldRunDaemonPod``: a wrong ``spec.nodeName`` or failed node
    selector / affinity means neither; an untolerated ``NoExecute`` taint
    means neither; an untolerated ``NoSchedule`` taint means a pod already
    there may stay but no new one is made."""
    return should_run_on(ds, [node])[node["metadata"]["name"]]


# (DaemonSet uid, node name) -> (pod spec, node, answer): every sync asks about every node,
# and between two versions of either object the answer cannot change (identity-checked,
# as _PLACEMENTS)
_SHOULD_RUN: dict[tuple[str, str], tuple[Obj, Obj, tuple[bool, bool]]] = {}


def should_run_on(ds: Obj, nodes: list[Obj]) -> dict[str, tuple[bool, bool]]:
    """:func:`node_should_run` for every node, by node name (one template lookup per call)."""
    pod_spec, affinity, tols = _placement(ds)
    uid = _meta(ds).get("uid") or ""
    out: dict[str, tuple[bool, bool]] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        hit = _SHOULD_RUN.get((uid, name))
        if hit is not None and hit[0] is pod_spec and hit[1] is node:
            out[name] = hit[2]
            continue
        result = out[name] = _should_run(pod_spec, affinity, tols, node, name)
        if uid:
            if len(_SHOULD_RUN) > 200_000:
                _SHOULD_RUN.clear()
            _SHOULD_RUN[(uid, name)] = (pod_spec, node, result)
    return out


def _should_run(pod_spec: Obj, affinity: RequiredNodeAffinity, tols: list[Obj], node: Obj,
                name: str | None) -> tuple[bool, bool]:
    if pod_spec.get("nodeName") and pod_spec["nodeName"] != name:
        return False, False
    if not affinity.matches(node):
        return False, False
    untolerated = [t for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerations_tolerate_taint(tols, t)]
    if any(t.get("effect") == "NoExecute" for t in untolerated):
        return False, False
    if untolerated:
        return False, True
    return True, True


def target_node(pod: Obj) -> str | None:
    """The node a daemon pod is for: ``spec.nodeName``, else the single
    ``metadata.name In [node]`` matchFields term (upstream's ``GetTargetNodeName``)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return f["values"][0]
    return None


def new_daemon_pod(ds: Obj, node_name: str, hash_: str) -> Obj:
    """The pod created for ``node_name``: the template with the revision hash
    label, the daemon tolerations, required node affinity replaced by
    ``matchFields metadata.name In [node]`` and a controller reference."""
    tmpl = copy_object(((ds.get("spec") or {}).get("template")) or {})
    tmeta = tmpl.get("metadata") or {}
    spec = tmpl.get("spec") or {}
    spec["tolerations"] = daemon_tolerations(spec)
    affinity = spec.get("affinity") or {}
    node_aff = dict(affinity.get("nodeAffinity") or {})
    node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    spec["affinity"] = {**affinity, "nodeAffinity": node_aff}
    labels = dict(tmeta.get("labels") or {})
    labels[REVISION_HASH_LABEL] = hash_
    meta: Obj = {"generateName": f"{_meta(ds).get('name')}-", "namespace": _meta(ds).get("namespace"),
                 "labels": labels, "ownerReferences": [new_controller_ref(ds)]}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        pct = int(text[:-1])
        v = pct * total / 100
        return math.ceil(v) if round_up else math.floor(v)
    return int(text)


def _revision_data(ds: Obj) -> Obj:
    """What upstream's ``getPatch`` stores in a DaemonSet ControllerRevision."""
    tmpl = copy_object(((ds.get("spec") or {}).get("template")) or {})
    tmpl["$patch"] = "replace"
    return {"spec": {"template": tmpl}}


def daemonset_status(ds: Obj, nodes: list[Obj], by_node: dict[str, list[Obj]], hash_: str, now: float,
                     epoch, runs: dict[str, tuple[bool, bool]] | None = None) -> Obj:
    """The DaemonSet's status counters over ``nodes`` (upstream's ``updateDaemonSetStatus``).

    ``runs``: :func:`node_should_run` per node name, when the caller has it already.
    """
    desired = current = mis = ready = updated = available = 0
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    for node in nodes:
        name = _meta(node)["name"]
        should_run = runs[name][0] if runs is not None else node_should_run(ds, node)[0]
        on_node = by_node.get(name)
        if not on_node:
            desired += should_run
            continue
        if should_run and len(on_node) == 1 and not min_ready:
            # the steady state, kept cheap for thousands of nodes: one pod, no minReadySeconds
            only = on_node[0]
            if not only["metadata"].get("deletionTimestamp"):
                desired += 1
                current += 1
                if is_pod_ready(only):
                    ready += 1
                    available += 1
                if (only["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) == hash_:
                    updated += 1
                continue
        pods = [p for p in on_node if not _meta(p).get("deletionTimestamp")]
        if should_run:
            desired += 1
            if pods:
                current += 1
                oldest = sorted(pods, key=lambda p: (_meta(p).get("creationTimestamp") or "",
                                                     _meta(p).get("name")))[0]
                if is_pod_ready(oldest):
                    ready += 1
                    if is_pod_available(oldest, min_ready, now, epoch):
                        available += 1
                if (_meta(oldest).get("labels") or {}).get(REVISION_HASH_LABEL) == hash_:
                    updated += 1
        elif pods:
            mis += 1
    status: Obj = {"currentNumberScheduled": current, "numberMisscheduled": mis,
                   "desiredNumberScheduled": desired, "numberReady": ready,
                   "observedGeneration": _meta(ds).get("generation")}
    for k, v in (("updatedNumberScheduled", updated), ("numberAvailable", available),
                 ("numberUnavailable", desired - available)):
        if v:
            status[k] = v
    cc = (ds.get("status") or {}).get("collisionCount")
    if cc is not None:
        status["collisionCount"] = cc
    return status


# --------------------------------------------------------------------------- controller


class DaemonSetController(Component):
    """kube-controller-manager's DaemonSet controller (actor ``daemonset-controller``).

    Events: ``SuccessfulCreate`` ``Created pod: <name>``, ``SuccessfulDelete``
    ``Deleted pod: <name>``, Warning ``FailedDaemonPod`` ``Found failed daemon
    pod <ns>/<name> on node <node>, will try to kill it``, ``FailedCreate``.
    """

    name = "daemonset-controller"

    def __init__(self, api, name: str | None = None, user=None) -> None:
        super().__init__(api, name, user)
        self.dss = self.informer("daemonsets.apps")
        self.nodes = self.informer("nodes")
        self.pods = self.informer("pods", indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        self.revisions = self.informer("controllerrevisions.apps", indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        self.q = self.queue()
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.exp = ControllerExpectations()
        self._failed_backoff: dict[str, tuple[int, float]] = {}
        # pod uid -> (the pod version, its target node): by_node is rebuilt every sync
        self._targets: dict[str, tuple[Obj, str | None]] = {}
        self.dss.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n), on_delete=self._ds_deleted))
        self.nodes.add_event_handler(EventHandler(
            on_add=self._node_added, on_update=self._node_updated,
            on_delete=lambda n: self._enqueue_all()))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted))

    async def main(self) -> None:
        # a sync walks every node: fold the events of one instant into one sync
        await self.run_workers(self.q, self.sync, coalesce=True)

    def _enqueue(self, ds: Obj) -> None:
        self.q.add(meta_namespace_key(ds))

    def _ds_deleted(self, ds: Obj) -> None:
        self.exp.delete(meta_namespace_key(ds))

    def _enqueue_all(self) -> None:
        for ds in self.dss.indexer.list():
            self._enqueue(ds)

    def _node_added(self, node: Obj) -> None:
        """Upstream ``addNode``: the DaemonSets that should run a pod there."""
        for ds in self.dss.indexer.list():
            if node_should_run(ds, node)[0]:
                self._enqueue(ds)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        """Upstream ``updateNode``: the DaemonSets whose (shouldRun, shouldContinueRunning)
        differ between the two versions (a heartbeat or a tolerated taint changes nothing)."""
        def shape(n: Obj) -> tuple:
            return (_meta(n).get("labels"), (n.get("spec") or {}).get("taints"),
                    (n.get("spec") or {}).get("unschedulable"))
        if shape(old) == shape(new):
            return
        for ds in self.dss.indexer.list():
            if node_should_run(ds, old) != node_should_run(ds, new):
                self._enqueue(ds)

    def _ds_key(self, pod: Obj) -> str | None:
        for ref in _meta(pod).get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == "DaemonSet":
                return f"{_meta(pod).get('namespace')}/{ref.get('name')}"
        return None

    def _pod_added(self, pod: Obj) -> None:
        key = self._ds_key(pod)
        if key:
            self.exp.creation_observed(key)
            self.q.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        key = self._ds_key(new)
        if key:
            if _meta(new).get("deletionTimestamp"):
                self.exp.deletion_observed(key, pod_key(new))
            self.q.add(key)

    def _pod_deleted(self, pod: Obj) -> None:
        self._targets.pop(_meta(pod).get("uid"), None)
        key = self._ds_key(pod)
        if key:
            self.exp.deletion_observed(key, pod_key(pod))
            self.q.add(key)

    # ---- sync
    def sync(self, key: str) -> None:
        """Reconcile one DaemonSet (``namespace/name``)."""
        ns, name = key.split("/", 1)
        ds = self.dss.indexer.get_by(ns, name)
        if ds is None:
            self.exp.delete(key)
            return
        if _meta(ds).get("deletionTimestamp"):
            return
        now = self.api.now
        hash_ = self._ensure_revision(ds)
        nodes = self.nodes.indexer.list()
        selector = selector_from_label_selector((ds.get("spec") or {}).get("selector"))
        pods = [p for p in self.pods.indexer.by_index(CONTROLLER_UID_INDEX, _meta(ds).get("uid", ""))
                if selector.matches(_meta(p).get("labels") or {})]
        by_node: dict[str, list[Obj]] = {}
        targets = self._targets
        for p in pods:
            uid = p["metadata"].get("uid")
            hit = targets.get(uid)
            if hit is not None and hit[0] is p:
                node = hit[1]
            else:
                node = target_node(p)
                targets[uid] = (p, node)
            if node:
                by_node.setdefault(node, []).append(p)
        runs = should_run_on(ds, nodes)
        if self.exp.satisfied(key, now):
            self._manage(key, ds, nodes, by_node, hash_, runs)
            if self.exp.satisfied(key, now):
                self._rolling_update(key, ds, nodes, by_node, hash_, runs)
        self._cleanup_history(ds, pods, hash_)
        status = daemonset_status(ds, nodes, by_node, hash_, now, self.api.epoch, runs)
        if status != (ds.get("status") or {}):
            try:
                self.api.update("daemonsets.apps", {**ds, "status": status}, subresource="status", ctx=self.ctx,
                                field_validation="Ignore")
            except errors.Conflict:
                self.q.add(key)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status.get("numberReady", 0) != status.get("numberAvailable", 0):
            self.q.add_after(key, float(min_ready))

    def _ensure_revision(self, ds: Obj) -> str:
        """Find or create the ControllerRevision of the current template; returns its hash."""
        data = _revision_data(ds)
        cc = (ds.get("status") or {}).get("collisionCount")
        hash_ = compute_hash(((ds.get("spec") or {}).get("template")) or {}, cc)
        revs = self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, _meta(ds).get("uid", ""))
        name = f"{_meta(ds)['name']}-{hash_}"
        top = max([int(r.get("revision") or 0) for r in revs], default=0)
        for r in revs:
            if _meta(r).get("name") == name:
                if r.get("data") == data and int(r.get("revision") or 0) < top:
                    self.api.update("controllerrevisions.apps", {**r, "revision": top + 1}, ctx=self.ctx,
                                    field_validation="Ignore")
                return hash_
        body = new_controller_revision(ds, name, hash_, data, top + 1)
        try:
            self.api.create("controllerrevisions.apps", body, namespace=_meta(ds).get("namespace"), ctx=self.ctx,
                            field_validation="Ignore")
        except errors.AlreadyExists:
            pass
        return hash_

    def _cleanup_history(self, ds: Obj, pods: list[Obj], hash_: str) -> None:
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit") or 10)
        live = {(_meta(p).get("labels") or {}).get(REVISION_HASH_LABEL) for p in pods}
        revs = self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, _meta(ds).get("uid", ""))
        old = sorted((r for r in revs if (_meta(r).get("labels") or {}).get(REVISION_HASH_LABEL) not in live
                      and not _meta(r).get("name", "").endswith(f"-{hash_}")),
                     key=lambda r: int(r.get("revision") or 0))
        for r in old[:max(0, len(old) - limit)]:
            try:
                self.api.delete("controllerrevisions.apps", _meta(r)["name"], namespace=_meta(r).get("namespace"),
                                ctx=self.ctx)
            except errors.NotFound:
                pass

    def _manage(self, key: str, ds: Obj, nodes: list[Obj], by_node: dict[str, list[Obj]], hash_: str,
                runs: dict[str, tuple[bool, bool]]) -> None:
        """Upstream's ``manage``/``podsShouldBeOnNode`` over every node."""
        now = self.api.now
        surge = _surge_allowed(ds)
        create: list[str] = []
        delete: list[Obj] = []
        retry_after: float | None = None
        node_names = {_meta(n)["name"] for n in nodes}
        for node in nodes:
            name = _meta(node)["name"]
            should_run, keep = runs[name]
            on_node = by_node.get(name)
            if not on_node:
                if not should_run:
                    continue
            elif should_run and len(on_node) == 1:
                only = on_node[0]
                if not only["metadata"].get("deletionTimestamp") and \
                        (only.get("status") or {}).get("phase") != "Failed":
                    continue  # the steady state: nothing to create or delete here
            pods = [p for p in on_node or () if not _meta(p).get("deletionTimestamp")]
            if should_run and not pods:
                fails, last = self._failed_backoff.get(f"{key}/{name}", (0, 0.0))
                wait = min(FAILED_POD_BACKOFF * 2 ** max(0, fails - 1), MAX_FAILED_POD_BACKOFF) if fails else 0.0
                if fails and now < last + wait:
                    retry_after = min(retry_after or math.inf, last + wait - now)
                    continue
                create.append(name)
            elif keep:
                running = []
                for p in pods:
                    if (p.get("status") or {}).get("phase") == "Failed":
                        self.recorder.event(ds, WARNING, "FailedDaemonPod",
                                            f"Found failed daemon pod {pod_key(p)} on node {name}, will try to kill it")
                        fails, _ = self._failed_backoff.get(f"{key}/{name}", (0, 0.0))
                        self._failed_backoff[f"{key}/{name}"] = (fails + 1, now)
                        delete.append(p)
                    else:
                        running.append(p)
                if len(running) > 1:
                    ordered = sorted(running, key=lambda p: (_meta(p).get("creationTimestamp") or "",
                                                             _meta(p).get("name")))
                    if surge:
                        new = [p for p in ordered if _hash_of(p) == hash_]
                        old = [p for p in ordered if _hash_of(p) != hash_]
                        keepers = {id(x) for x in (new[:1] + old[:1])}
                        delete += [p for p in ordered if id(p) not in keepers]
                    else:
                        delete += ordered[1:]
            elif pods:
                delete += pods
        for name in sorted(by_node):
            if name not in node_names:  # the node is gone
                delete += [p for p in by_node[name] if not _meta(p).get("deletionTimestamp")]
        self._sync_nodes(key, ds, delete, create, hash_)
        if retry_after is not None:
            self.q.add_after(key, retry_after)

    def _rolling_update(self, key: str, ds: Obj, nodes: list[Obj], by_node: dict[str, list[Obj]],
                        hash_: str, runs: dict[str, tuple[bool, bool]]) -> None:
        """Upstream's ``rollingUpdate`` (maxUnavailable, or maxSurge)."""
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type") != "RollingUpdate":
            return
        if all(_hash_of(p) == hash_ for pods in by_node.values() for p in pods):
            return  # no old pod to replace
        now, epoch = self.api.now, self.api.epoch
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        desired = sum(1 for r in runs.values() if r[0])
        ru = strategy.get("rollingUpdate") or {}
        max_surge = _scaled(ru.get("maxSurge"), desired, True)
        max_unavailable = _scaled(ru.get("maxUnavailable"), desired, True)
        if max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1
        to_delete: list[Obj] = []
        if max_surge == 0:
            unavailable = 0
            replace: list[Obj] = []
            candidates: list[Obj] = []
            for name in sorted(by_node):
                pods = [p for p in by_node[name] if not _meta(p).get("deletionTimestamp")]
                new, old, ok = _split_pods(pods, hash_)
                if not ok or (new is None and old is None) or (new is not None and old is not None):
                    unavailable += 1
                elif new is not None:
                    if not is_pod_available(new, min_ready, now, epoch):
                        unavailable += 1
                elif not is_pod_available(old, min_ready, now, epoch):
                    replace.append(old)
                elif unavailable < max_unavailable:
                    candidates.append(old)
            room = min(max(0, max_unavailable - unavailable), len(candidates))
            to_delete = replace + candidates[:room]
            self._sync_nodes(key, ds, to_delete, [], hash_)
            return
        surged = 0
        allowed: list[str] = []
        candidate_nodes: list[str] = []
        for name in sorted(by_node):
            pods = [p for p in by_node[name] if not _meta(p).get("deletionTimestamp")]
            new, old, ok = _split_pods(pods, hash_)
            if not ok:
                surged += 1
                continue
            if new is not None and old is not None:
                surged += 1
            if old is None:
                continue
            if new is None:
                should_run = name in runs and runs[name][0]
                if not is_pod_available(old, min_ready, now, epoch):
                    if should_run:
                        allowed.append(name)
                    else:
                        to_delete.append(old)
                elif should_run:
                    candidate_nodes.append(name)
            elif is_pod_available(new, min_ready, now, epoch):
                to_delete.append(old)
        room = min(max(0, max_surge - surged), len(candidate_nodes))
        self._sync_nodes(key, ds, to_delete, allowed + candidate_nodes[:room], hash_)

    def _sync_nodes(self, key: str, ds: Obj, delete: list[Obj], create: list[str], hash_: str) -> None:
        if not delete and not create:
            return
        now = self.api.now
        self.exp.expect_deletions(key, [pod_key(p) for p in delete], now)
        self.exp.set(key, len(create), len(delete), now)
        ns = _meta(ds).get("namespace")
        err: Exception | None = None
        for node in create:
            try:
                pod = self.api.create("pods", new_daemon_pod(ds, node, hash_), namespace=ns, ctx=self.ctx,
                                      field_validation="Ignore")
            except errors.StatusError as exc:
                self.exp.creation_observed(key)
                self.recorder.event(ds, WARNING, "FailedCreate", f"Error creating: {exc}")
                err = exc
                continue
            self.recorder.event(ds, NORMAL, "SuccessfulCreate", f"Created pod: {_meta(pod)['name']}")
        for p in delete:
            try:
                self.api.delete("pods", _meta(p)["name"], namespace=ns, ctx=self.ctx)
            except errors.NotFound:
                self.exp.deletion_observed(key, pod_key(p))
                continue
            except errors.StatusError as exc:
                self.exp.deletion_observed(key, pod_key(p))
                err = exc
                continue
            self.recorder.event(ds, NORMAL, "SuccessfulDelete", f"Deleted pod: {_meta(p)['name']}")
        if err is not None:
            raise err


def _hash_of(pod: Obj) -> str | None:
    return (_meta(pod).get("labels") or {}).get(REVISION_HASH_LABEL)


def _split_pods(pods: list[Obj], hash_: str) -> tuple[Obj | None, Obj | None, bool]:
    """Upstream's ``findUpdatedPodsOnNode``: (new pod, old pod, at most one of each)."""
    new = old = None
    for p in pods:
        if _hash_of(p) == hash_:
            if new is not None:
                return None, None, False
            new = p
        else:
            if old is not None:
                return None, None, False
            old = p
    return new, old, True


def _surge_allowed(ds: Obj) -> bool:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return False
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge")
    return surge not in (None, 0, "0", "0%")


