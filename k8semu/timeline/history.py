"""Who changed what, and when: object histories, readable diffs, cluster diffs, timelines, pod traces.

Everything here reads an :class:`~k8semu.store.EventLog` (usually opened
read-only with :func:`~k8semu.timeline.view.open_log`) and never writes.

Readable diffs (:func:`diff_objects`) name each changed leaf by its field
path, the way ``kubectl explain`` spells paths: ``spec.replicas``,
``metadata.labels.tier``; list items that carry a ``name`` (containers,
ports, volumes, env) are addressed by it (``spec.containers[nginx].image``),
conditions by their ``type`` (``status.conditions[Ready].status``), other
list items by index. Each change prints as ``~ path: old → new``,
``+ path: new`` or ``- path: old``. ``metadata.resourceVersion`` and
``metadata.managedFields`` are left out (they change on every write).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import orjson

from ..api.resources import ResourceInfo, lookup
from ..store import EventLog, Record
from ..store.record import ADDED, DELETED

__all__ = ["Change", "diff_objects", "format_value", "object_key", "describe_key", "Version",
           "object_history", "ClusterDiff", "cluster_diff", "logs_diff", "uid_of", "timeline", "TraceStep",
           "trace_pod", "Incarnation", "incarnations", "pick_incarnation", "IGNORED_PATHS"]

#: Paths left out of readable diffs (they change on every write).
IGNORED_PATHS = ("metadata.resourceVersion", "metadata.managedFields")


@dataclass(frozen=True)
class Change:
    """One changed field: ``op`` is ``~`` (changed), ``+`` (added) or ``-`` (removed)."""

    op: str
    path: str
    old: Any = None
    new: Any = None

    def __str__(self) -> str:
        if self.op == "~":
            return f"~ {self.path}: {format_value(self.old)} → {format_value(self.new)}"
        if self.op == "+":
            return f"+ {self.path}: {format_value(self.new)}"
        return f"- {self.path}: {format_value(self.old)}"


def format_value(v: Any, limit: int = 120) -> str:
    """A value as one short line: strings bare, everything else compact JSON (cut at ``limit``)."""
    text = v if isinstance(v, str) else orjson.dumps(v).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _list_ids(items: list[Any]) -> list[str] | None:
    """Identifiers for list items addressed by name/type (None: address by index)."""
    for attr in ("name", "type", "key"):
        if items and all(isinstance(i, dict) and isinstance(i.get(attr), str) for i in items):
            ids = [i[attr] for i in items]
            if len(set(ids)) == len(ids):
                return ids
    return None


def diff_objects(old: Any, new: Any, path: str = "", ignore: Iterable[str] = IGNORED_PATHS) -> list[Change]:
    """Field-level changes from ``old`` to ``new`` (either may be None: everything added/removed).

    Returns changes in field order (old's keys first, then new keys). Dicts
    recurse; lists recurse by item identity (name/type/key) when both sides
    allow it, else by index; a scalar-or-type change is one ``~``.
    """
    out: list[Change] = []
    _diff(old, new, path, frozenset(ignore), out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _diff(old: Any, new: Any, path: str, ignore: frozenset[str], out: list[Change]) -> None:
    if path in ignore or old == new:
        return
    if old is None and new is not None and not path:
        old = {}
    if new is None and old is not None and not path:
        new = {}
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old:
            p = _join(path, k)
            if k not in new:
                if p not in ignore:
                    _leaves("-", p, old[k], bool(path), out)
            else:
                _diff(old[k], new[k], p, ignore, out)
        for k in new:
            if k not in old:
                p = _join(path, k)
                if p not in ignore:
                    _leaves("+", p, new[k], bool(path), out)
        return
    if isinstance(old, list) and isinstance(new, list):
        ids_old, ids_new = _list_ids(old), _list_ids(new)
        if ids_old is not None and ids_new is not None and (old and new):
            attr = next(a for a in ("name", "type", "key") if all(a in i for i in old + new))
            by_old = {i[attr]: i for i in old}
            by_new = {i[attr]: i for i in new}
            for k, item in by_old.items():
                p = f"{path}[{k}]"
                if k not in by_new:
                    out.append(Change("-", p, item, None))
                else:
                    _diff(item, by_new[k], p, ignore, out)
            for k, item in by_new.items():
                if k not in by_old:
                    out.append(Change("+", f"{path}[{k}]", None, item))
            return
        for i in range(max(len(old), len(new))):
            p = f"{path}[{i}]"
            if i >= len(new):
                out.append(Change("-", p, old[i], None))
            elif i >= len(old):
                out.append(Change("+", p, None, new[i]))
            else:
                _diff(old[i], new[i], p, ignore, out)
        return
    out.append(Change("~", path or ".", old, new))


def _leaves(op: str, path: str, value: Any, expand: bool, out: list[Change]) -> None:
    """An added/removed value; below the top level a map is spelled out leaf by leaf
    (``+ metadata.labels.tier: front``), a top-level field of a new object stays whole."""
    if expand and isinstance(value, dict) and value:
        for k, v in value.items():
            _leaves(op, _join(path, k), v, True, out)
        return
    out.append(Change(op, path, value if op == "-" else None, value if op == "+" else None))


def lookup_kind(kind: str, api: Any = None, log: Any = None) -> list[ResourceInfo]:
    """What a user typed as a type, built-in or custom: with ``api`` (an APIServer), the custom
    resources of its CRDs; failing those, with ``log``, those of any CRD the log ever held,
    newest definition first (a deleted CRD's kind still names its objects' past)."""
    found = lookup(kind) or (api.custom.lookup(kind) if api is not None and hasattr(api, "custom") else [])
    if found or log is None:
        return found
    from ..api.customresources import CRD_RESOURCE
    from .view import state_at

    last: dict[str, int] = {}  # each CRD's last revision before it was deleted
    for rec in log.records(log.compact_revision, f"/registry/{CRD_RESOURCE}/"):
        if rec.type != "DELETED":
            last[rec.key] = rec.revision
    for rev in sorted(last.values(), reverse=True):
        found = state_at(log, rev).custom.lookup(kind)
        if found:
            return found
    return []


def object_key(ref: str, namespace: str | None = "default", api: Any = None,
               log: Any = None) -> tuple[ResourceInfo, str]:
    """``deployment/web`` (kubectl's ``TYPE/NAME``, any alias) -> (resource, etcd key); with
    ``api`` (an APIServer) or ``log``, custom resources resolve too (``ct/nightly``:
    :func:`lookup_kind`).

    Raises:
        ValueError: not ``TYPE/NAME``, or an unknown type
            (``the server doesn't have a resource type "x"``).
    """
    if "/" not in ref:
        raise ValueError(f'"{ref}": expected TYPE/NAME, e.g. deployment/web')
    kind, name = ref.split("/", 1)
    found = lookup_kind(kind, api, log)
    if not found or not name:
        raise ValueError(f'the server doesn\'t have a resource type "{kind}"')
    info = found[0]
    return info, info.key(namespace or "default", name)


def describe_key(key: str) -> str:
    """``/registry/deployments.apps/default/web`` -> ``deployment.apps/web`` (``ns`` shown by callers)."""
    parts = key.split("/")
    res = parts[2]
    found = lookup(res)
    kind = found[0].singular if found else res
    if found and found[0].group:
        kind = f"{kind}.{found[0].group}"
    return f"{kind}/{parts[-1]}"


def _ns_of(key: str) -> str:
    parts = key.split("/")
    return parts[3] if len(parts) == 5 else ""


@dataclass
class Version:
    """One write of an object: its record and the changes from the version before."""

    revision: int
    time: float
    actor: str
    type: str
    key: str
    object: dict[str, Any]
    changes: list[Change] = field(default_factory=list)


def object_history(log: EventLog, key: str) -> list[Version]:
    """Every retained write of ``key``, oldest first, each with its readable diff.

    A re-creation after a delete diffs against nothing (all ``+``); a
    ``DELETED`` version carries no changes. Cost: one bisect-free walk of the
    key's own history (the store keeps one list per key).
    """
    out: list[Version] = []
    prev: dict[str, Any] | None = None
    for rec in log.history(key):
        obj = rec.object
        if rec.type == DELETED:
            changes: list[Change] = []
        else:
            changes = diff_objects(None if rec.type == ADDED else prev, obj)
        out.append(Version(rec.revision, rec.time, rec.actor, rec.type, rec.key, obj, changes))
        prev = None if rec.type == DELETED else obj
    return out


@dataclass
class ClusterDiff:
    """What changed between two revisions (or two logs), per resource (``deployments.apps``, ``pods``…).

    ``created`` / ``deleted``: keys; ``changed``: ``{key: [Change]}``;
    ``replaced``: ``{key: [Change]}`` for an object deleted and created again
    with the same name in between — a different object (another uid), as
    kubectl users see it, not a change of one; its changes include the uid's.
    """

    start: int
    end: int
    created: dict[str, list[str]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    changed: dict[str, dict[str, list[Change]]] = field(default_factory=dict)
    replaced: dict[str, dict[str, list[Change]]] = field(default_factory=dict)

    def resources(self) -> list[str]:
        return sorted(set(self.created) | set(self.deleted) | set(self.changed) | set(self.replaced))

    @property
    def empty(self) -> bool:
        return not (self.created or self.deleted or self.changed or self.replaced)

    def _add(self, key: str, a: Record | None, b: Record | None, replaced: bool) -> None:
        res = key.split("/")[2]
        if a is None and b is not None:
            self.created.setdefault(res, []).append(key)
        elif a is not None and b is None:
            self.deleted.setdefault(res, []).append(key)
        elif a is not None and b is not None:
            changes = diff_objects(a.object, b.object)
            if replaced:
                self.replaced.setdefault(res, {})[key] = changes
            elif changes:
                self.changed.setdefault(res, {})[key] = changes


def uid_of(rec: Record | None) -> str | None:
    """The object's ``metadata.uid`` (None for no record)."""
    return None if rec is None else (rec.object.get("metadata") or {}).get("uid")


def cluster_diff(log: EventLog, start: int, end: int) -> ClusterDiff:
    """Objects created, deleted, changed and replaced between revision ``start`` and ``end`` (state vs state).

    An object present at both points with another uid was deleted and created
    again in between: ``replaced``, not ``changed``. Only keys written in
    between are compared, so the cost is the number of records in the
    window, not the size of the cluster. ``start > end`` diffs backwards.
    """
    lo, hi = min(start, end), max(start, end)
    keys = sorted({r.key for r in log.records(lo) if r.revision <= hi})
    diff = ClusterDiff(start, end)
    for key in keys:
        a = log.get(key, start) if start else None
        b = log.get(key, end) if end else None
        if a is not None and b is not None and a.revision == b.revision:
            continue
        diff._add(key, a, b, a is not None and b is not None and uid_of(a) != uid_of(b))
    return diff


def logs_diff(log: EventLog, start: int, other: EventLog, end: int) -> ClusterDiff:
    """The cluster of ``other`` at ``end`` against ``log``'s at ``start`` (e.g. a fork against its original).

    ``created``: in ``other`` only; ``deleted``: in ``log`` only; ``changed``:
    in both, with other contents. Two timelines create objects independently,
    so a different uid alone is a change; ``replaced`` is an object one of the
    timelines had as the other has it and then deleted and created again (its
    uid at one point is in the other log's history of that name). Every object
    of both states is compared: the cost is the size of the clusters.
    """
    a_recs = {r.key: r for r in log.range("/", start)} if start else {}
    b_recs = {r.key: r for r in other.range("/", end)} if end else {}
    diff = ClusterDiff(start, end)
    for key in sorted(set(a_recs) | set(b_recs)):
        a, b = a_recs.get(key), b_recs.get(key)
        if a is not None and b is not None and a.object == b.object:
            continue
        ua, ub = uid_of(a), uid_of(b)
        replaced = (a is not None and b is not None and ua != ub and
                    (ua in {uid_of(r) for r in other.history(key) if r.revision <= end} or
                     ub in {uid_of(r) for r in log.history(key) if r.revision <= start}))
        diff._add(key, a, b, replaced)
    return diff


def timeline(
    log: EventLog,
    *,
    after: int = 0,
    until: int | None = None,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    actor: str | None = None,
) -> Iterator[Record]:
    """Records with ``after < revision ≤ until``, filtered.

    ``kind``: a type as kubectl takes it (``deploy``, ``pods``); ``name``: exact
    object name, or a prefix ending in ``*``; ``namespace``: exact; ``actor``:
    exact, a prefix ending in ``*`` (``kubelet/*``), or ``user`` for every user.

    Raises:
        ValueError: an unknown kind.
    """
    prefix = "/"
    if kind:
        found = lookup_kind(kind, log=log)
        if not found:
            raise ValueError(f'the server doesn\'t have a resource type "{kind}"')
        prefix = found[0].prefix(namespace if found[0].namespaced else None)
    hi = log.revision if until is None else until
    for rec in log.records(max(after, log.compact_revision), prefix):
        if rec.revision > hi:
            break
        if namespace and _ns_of(rec.key) != namespace:
            continue
        if name:
            last = rec.key.rsplit("/", 1)[1]
            if not (last.startswith(name[:-1]) if name.endswith("*") else last == name):
                continue
        if actor:
            if actor == "user":
                if not rec.actor.startswith("user:"):
                    continue
            elif actor.endswith("*"):
                if not rec.actor.startswith(actor[:-1]):
                    continue
            elif rec.actor != actor:
                continue
        yield rec


# ---------------------------------------------------------------------- pod trace
@dataclass
class TraceStep:
    """One step of a pod's creation flow as it happened (``revision`` None: not reached / not recorded)."""

    number: int
    title: str
    actor: str = ""
    revision: int | None = None
    time: float | None = None
    detail: str = ""


_STEP_TITLES = (
    "request: the write that asked for the pod",
    "pod created and stored (authn, authz, admission passed)",
    "scheduler binds the pod to a node",
    "kubelet sees the pod assigned to its node",
    "sandbox created, pod IP assigned (CNI)",
    "image pulled",
    "container created",
    "container started",
    "pod Running",
    "pod Ready",
    "endpoints updated with the pod",
    "kube-proxy programs the rules",
)


def _owner_chain(log: EventLog, ns: str, obj: dict[str, Any], rev: int) -> list[Record]:
    """Owner records of ``obj`` at ``rev``, nearest first (ReplicaSet, then Deployment…)."""
    chain: list[Record] = []
    seen = 0
    while seen < 5:
        seen += 1
        refs = [r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")]
        if not refs:
            break
        ref = refs[0]
        found = lookup(ref.get("kind", ""))
        info = next((i for i in found if i.kind == ref.get("kind")), None) if found else None
        if info is None:
            break
        rec = log.get(info.key(ns, ref.get("name", "")), rev)
        if rec is None:
            break
        chain.append(rec)
        obj = rec.object
    return chain


def _spec_changes(hist: list[Record], upto: int) -> list[Record]:
    """The records of one object (oldest first, up to revision ``upto``) that created it or
    changed its ``spec``."""
    out, spec = [], None
    for r in hist:
        if r.revision > upto:
            break
        new = (r.object.get("spec") if r.type != DELETED else spec)
        if r.type == "ADDED" or new != spec:
            out.append(r)
        spec = new
    return out


def _owned_by(rec: Record, owner_uid: str | None) -> bool:
    return any(ref.get("uid") == owner_uid for ref in (rec.object.get("metadata") or {}).get("ownerReferences") or ())


def _deletion_start(records: Iterable[Record]) -> Record | None:
    """The write that started an object's deletion: the first that sets ``deletionTimestamp``
    (a graceful delete, an eviction), else its ``DELETED`` record; None if it was never deleted."""
    for rec in records:
        if rec.type == DELETED or (rec.object.get("metadata") or {}).get("deletionTimestamp"):
            return rec
    return None


def _request_of(log: EventLog, ns: str, first: Record, chain: list[Record]) -> tuple[Record, str]:
    """Step 1 for a pod that a controller created: what made its owner create it, and a detail.

    Its nearest owner (a ReplicaSet, Job…) creates pods when its spec changes (created, scaled:
    the change is traced up the owner chain to the user's write that caused it) or when one of
    its pods goes away (deleted, evicted: that deletion is the request, whoever made it).

    Pods are told apart by uid, not name: a pod of a stable name (a StatefulSet's ``web-0``)
    deleted and created again replaces the previous incarnation of that name (its deletion is
    the request), never another pod of the owner; a pod of a generated name (ReplicaSet,
    DaemonSet, Job) replaces one of its owner's pods lost since the owner's last spec change,
    paired oldest first (each earlier creation of the owner took the oldest loss before it).
    """
    owner = chain[0]
    owner_uid = (owner.object.get("metadata") or {}).get("uid")
    changes = _spec_changes(log.history(owner.key), first.revision)
    since = changes[-1].revision if changes else first.revision
    lost: Record | None = None
    previous = [i for i in incarnations(log, first.key) if i.created < first.revision]
    if previous and any(_owned_by(r, owner_uid) for r in previous[-1].records):
        start = _deletion_start(previous[-1].records)  # the incarnation this one replaces
        if start is not None and since <= start.revision < first.revision:
            lost = start
    elif owner.key.split("/")[2] != "statefulsets.apps":  # generated names: any of the owner's pods
        pending: list[Record] = []  # losses not replaced yet, oldest first
        counted: set[str] = set()  # uids whose loss is in pending (or was replaced)
        for rec in log.records(max(since, log.compact_revision), f"/registry/pods/{ns}/"):
            if rec.revision >= first.revision:
                break
            if not _owned_by(rec, owner_uid):
                continue
            if rec.type == ADDED:
                if pending:
                    pending.pop(0)
                continue
            uid = uid_of(rec) or rec.key
            if uid not in counted and (rec.type == DELETED or (rec.object.get("metadata") or {}).get(
                    "deletionTimestamp")):
                counted.add(uid)
                pending.append(rec)
        lost = pending[0] if pending else None
    via = " → ".join(describe_key(r.key) for r in reversed(chain))
    if lost is not None:
        return lost, (f"{describe_key(lost.key)} deleted by {lost.actor}; {describe_key(owner.key)} "
                      f"created a replacement (via {via})")
    req = changes[-1] if changes else owner
    for higher in chain[1:]:  # a controller's write: look for what changed its own owner
        if req.actor.startswith("user:"):
            break
        up = _spec_changes(log.history(higher.key), req.revision)
        if up:
            req = up[-1]
    return req, f"{req.type} {describe_key(req.key)}; via {via}"


@dataclass
class Incarnation:
    """One object of a name: from its ``ADDED`` record to its ``DELETED`` one (a StatefulSet's
    ``web-0`` deleted and created again is two). ``deleted`` None: it exists at the log's end."""

    uid: str
    created: int
    time: float
    deleted: int | None
    deleted_time: float | None
    records: list[Record]

    def live_at(self, revision: int) -> bool:
        return self.created <= revision and (self.deleted is None or revision < self.deleted)


def incarnations(log: EventLog, key: str) -> list[Incarnation]:
    """The objects that had ``key`` over time, oldest first (each ``ADDED`` starts one)."""
    out: list[Incarnation] = []
    for rec in log.history(key):
        if rec.type == ADDED or not out or out[-1].deleted is not None:
            out.append(Incarnation(uid_of(rec) or "", rec.revision, rec.time, None, None, []))
        inc = out[-1]
        inc.records.append(rec)
        if rec.type == DELETED:
            inc.deleted, inc.deleted_time = rec.revision, rec.time
    return out


def pick_incarnation(incs: list[Incarnation], *, uid: str | None = None, at: int | None = None,
                     what: str = "the object") -> Incarnation:
    """The incarnation with ``uid`` (or a unique prefix of it), the one that existed at revision
    ``at`` (else the last one created before it), or else the latest.

    Raises:
        ValueError: no incarnation matches (the message lists them).
    """
    if not incs:
        raise ValueError(f"{what} is not in the log")
    listing = ", ".join(f"{i.uid} (created at revision {i.created})" for i in incs)
    if uid:
        found = [i for i in incs if i.uid == uid] or [i for i in incs if i.uid.startswith(uid)]
        if len(found) != 1:
            raise ValueError(f'{"no" if not found else "more than one"} incarnation of {what} has uid '
                             f'"{uid}" (there were {len(incs)}: {listing})')
        return found[0]
    if at is not None:
        live = [i for i in incs if i.live_at(at)]
        if live:
            return live[-1]
        before = [i for i in incs if i.created <= at]
        if not before:
            raise ValueError(f"{what} did not exist yet at revision {at} (first created at revision "
                             f"{incs[0].created})")
        return before[-1]
    return incs[-1]


def trace_pod(log: EventLog, namespace: str, name: str, *, uid: str | None = None,
              at: int | None = None) -> list[TraceStep]:
    """The pod's path through the components: the 12 steps of pod creation, as they happened.

    1 the request (for a pod a controller created: the deletion of the pod it
    replaces, else the spec change of its owners that led to it, traced up to a
    user's write; otherwise the pod's own create), 2 the pod's ``ADDED`` record, 3 the
    scheduler's binding (``spec.nodeName`` set; its ``Scheduled`` event),
    4 the kubelet's first write about it (a status update or an event), 5 the
    status write that first sets ``status.podIP``, 6–8 the ``Pulled`` /
    ``Created`` / ``Started`` events, 9 ``phase: Running``, 10 the ``Ready``
    condition ``True``, 11 the first EndpointSlice (else Endpoints) write
    listing the pod ready, 12 kube-proxy (it writes nothing to the API, so the
    step is the EndpointSlice write its rules follow). Each step is the
    earliest write that shows it, and the steps come in causal order: the
    kubelet makes the sandbox (and gets the IP) before it pulls, creates or
    starts a container, but reports the IP only with the status it writes at
    the end of that sync. When that status write comes after the first of
    steps 6–8 (an image already present: Pulled, Created and Started are
    written first), step 5 is the kubelet's first container event, the first
    record made once the sandbox was up, and its detail names the revision
    that reported the IP.

    When several pods had the name over time (deleted and created again, as
    a StatefulSet's pods are), one is traced (:func:`pick_incarnation`): the
    one with ``uid``, the one that existed at revision ``at``, else the
    latest; :func:`incarnations` lists them all.

    Raises:
        ValueError: no such pod in the log, or none with that uid / at that revision.
    """
    key = f"/registry/pods/{namespace}/{name}"
    incs = incarnations(log, key)
    if not incs:
        raise ValueError(f'pods "{name}" not found in the log (namespace {namespace})')
    inc = pick_incarnation(incs, uid=uid, at=at, what=f"pod {namespace}/{name}")
    later = [i for i in incs if i.created > inc.created]
    hist = inc.records
    first = hist[0]
    end = later[0].created if later else None
    pod_uid = inc.uid
    steps = [TraceStep(i + 1, t) for i, t in enumerate(_STEP_TITLES)]

    def hit(n: int, rec: Record, detail: str = "") -> None:
        s = steps[n - 1]  # the earliest write that shows the step
        if s.revision is None or rec.revision < s.revision:
            s.revision, s.time, s.actor, s.detail = rec.revision, rec.time, rec.actor, detail

    pod0 = first.object
    chain = _owner_chain(log, namespace, pod0, first.revision)
    if chain:
        req, detail = _request_of(log, namespace, first, chain)
        hit(1, req, detail)
    else:
        hit(1, first, f"{first.type} {describe_key(first.key)}")
    hit(2, first, "spec.nodeName empty" if not (pod0.get("spec") or {}).get("nodeName") else
        f"created with spec.nodeName={pod0['spec']['nodeName']}")
    node = None
    ip = None
    for rec in hist:
        if rec.type == DELETED:
            break
        obj = rec.object
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if spec.get("nodeName") and node is None:
            node = spec["nodeName"]
            hit(3, rec, f"spec.nodeName={node}")
        if rec.actor.startswith("kubelet/"):
            hit(4, rec, "status update")
        if status.get("podIP"):
            ip = ip or status["podIP"]
            hit(5, rec, f"podIP={status['podIP']}")
        if status.get("phase") == "Running":
            hit(9, rec, "status.phase=Running")
        for c in status.get("conditions") or ():
            if c.get("type") == "Ready" and c.get("status") == "True":
                hit(10, rec, "condition Ready=True")
    # events about the pod (by involvedObject), in revision order
    first_container_event: Record | None = None  # the kubelet's first event about one of its containers
    for rec in log.records(max(first.revision - 1, log.compact_revision), f"/registry/events/{namespace}/"):
        if end is not None and rec.revision >= end:
            break
        if rec.type == DELETED:
            continue
        ev = rec.object
        inv = ev.get("involvedObject") or ev.get("regarding") or {}
        if inv.get("kind") != "Pod" or inv.get("name") != name or (pod_uid and inv.get("uid", pod_uid) != pod_uid):
            continue
        reason = ev.get("reason") or ""
        msg = (ev.get("message") or ev.get("note") or "").strip()
        if reason == "Scheduled":
            s = steps[2]
            s.detail = (s.detail + "; " if s.detail else "") + f"event Scheduled at revision {rec.revision}: {msg}"
            if s.revision is None:
                hit(3, rec, msg)
        elif rec.actor.startswith("kubelet/"):
            hit(4, rec, f"event {reason}")
            if first_container_event is None and inv.get("fieldPath"):
                first_container_event = rec
            if reason == "Pulled":
                hit(6, rec, msg)
            elif reason == "Created":
                hit(7, rec, msg)
            elif reason == "Started":
                hit(8, rec, msg)
    _sandbox_before_containers(steps, first_container_event, ip)
    if ip:
        for prefix in ("/registry/endpointslices.discovery.k8s.io/", "/registry/endpoints/"):
            for rec in log.records(max(steps[4].revision or first.revision, log.compact_revision) - 1,
                                   prefix + namespace + "/"):
                if rec.type == DELETED or (end is not None and rec.revision >= end):
                    continue
                if _lists_pod(rec.object, name, ip):
                    hit(11, rec, f"{describe_key(rec.key)} lists {ip}")
                    break
            if steps[10].revision is not None:
                break
        s11 = steps[10]
        if s11.revision is not None:
            s = steps[11]
            s.revision, s.time, s.actor = s11.revision, s11.time, "kube-proxy/*"
            s.detail = (f"derived: kube-proxy writes nothing to the API; every node's rules follow "
                        f"revision {s11.revision}")
    return steps


def _sandbox_before_containers(steps: list[TraceStep], first_container_event: Record | None,
                               ip: str | None) -> None:
    """Keep step 5 (sandbox and pod IP) before steps 6–8 (pull, create, start).

    The kubelet makes the sandbox before any of the pod's containers, but writes the pod IP
    only with the status at the end of its sync: when Pulled, Created and Started are written
    in that same sync (the image was already there), the first record with ``status.podIP``
    comes after them. The sandbox was up when the kubelet wrote its first container event
    (``involvedObject.fieldPath`` set: Pulling, Pulled, Created…), so that record is step 5.
    """
    s5 = steps[4]
    later = [s.revision for s in steps[5:8] if s.revision is not None]
    if first_container_event is None or not later:
        return
    if s5.revision is not None and s5.revision <= min(later):
        return
    rec = first_container_event
    reason = rec.object.get("reason") or ""
    if s5.revision is not None:
        detail = f"sandbox up before event {reason}; podIP={ip} reported at revision {s5.revision}"
    else:
        detail = f"sandbox up before event {reason}; no podIP reported"
    s5.revision, s5.time, s5.actor, s5.detail = rec.revision, rec.time, rec.actor, detail


def _lists_pod(obj: dict[str, Any], name: str, ip: str) -> bool:
    for ep in obj.get("endpoints") or ():  # EndpointSlice
        ref = ep.get("targetRef") or {}
        if (ref.get("name") == name or ip in (ep.get("addresses") or ())) and \
                (ep.get("conditions") or {}).get("ready") is not False:
            return True
    for subset in obj.get("subsets") or ():  # Endpoints
        for a in subset.get("addresses") or ():
            if a.get("ip") == ip or (a.get("targetRef") or {}).get("name") == name:
                return True
    return False
