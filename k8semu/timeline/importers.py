"""Incidents recorded elsewhere: Kubernetes audit logs and SimKube traces as k8semu logs.

An imported log is an ordinary k8semu log (``history``, ``diff``, ``--at``,
``timeline`` work on it) whose header carries ``"source"`` (what it came
from). Its records are the real cluster's writes, at virtual times counted
from the recording's first timestamp (which becomes the cluster's epoch):

- writes by people and tools (audit ``user.username`` not starting with
  ``system:``; every object of a SimKube trace) are *inputs*, actor
  ``user:<name>``;
- writes by the control plane (``system:kube-scheduler``,
  ``system:serviceaccount:kube-system:<controller>``, ``system:node:<node>``…)
  are kept as the real cluster's record, under k8semu's actor names
  (``default-scheduler``, ``<controller>``, ``kubelet/<node>``).

``k8semu replay`` of an imported log *re-enacts* it (:func:`reenact`): a
fresh default cluster, each input re-issued at its recorded time, then the
cluster settles; the report says where k8semu's components did something
different from the recorded ones (pods created per owner, the nodes pods
landed on, inputs the emulated API refused).

Audit events: ``audit.k8s.io/v1`` (also ``v1beta1``/``v1alpha1`` and events
without ``apiVersion``), as JSON lines, one JSON object, or an ``EventList``.
Only completed (``ResponseComplete``), successful (code < 400) ``create``,
``update``, ``patch`` and ``delete`` requests at level ``Request`` or
``RequestResponse`` become records (the response object is preferred; a
patch without one is applied, as a strategic merge patch, to the object's
last known state); every other event is counted, by reason, in
:attr:`ImportResult.skipped`. Objects from retired API groups (``extensions/v1beta1``
Deployments…) are converted to the served version. Objects first seen being
changed or deleted are entered at time 0 by ``import:pre-existing`` (not an
input).

SimKube traces (format version 2, JSON or msgpack, as ``skctl export``
writes them): each event's ``applied_objs`` are creates (first sight) or
updates, ``deleted_objs`` deletes, all at the event's ``ts``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..api.resources import ResourceInfo, lookup
from ..store import EventLog
from ..store.record import DELETED
from .history import _owner_chain, describe_key
from .rerun import atomic_output, is_input, reissue

__all__ = ["ImportError_", "ImportResult", "import_audit", "import_simkube", "reenact", "ReenactReport"]

AUDIT_VERSIONS = ("audit.k8s.io/v1", "audit.k8s.io/v1beta1", "audit.k8s.io/v1alpha1")
_WRITE_VERBS = ("create", "update", "patch", "delete")
_READ_VERBS = ("get", "list", "watch")
_APPS_KINDS = {"Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"}


class ImportError_(ValueError):  # noqa: N801 - avoid shadowing the builtin ImportError
    """Input that is not what the importer reads: ``FILE:LINE: what`` (one line)."""


@dataclass
class ImportResult:
    """What an import wrote: ``records``, ``inputs`` among them, and what it left out.

    ``skipped`` counts the events (audit) or objects (SimKube) not imported, by
    reason: ``read (get)`` / ``read (list)`` / ``read (watch)`` (reads change
    nothing), ``verb <v>`` (another verb, ``deletecollection``…), ``stage <s>``
    (an earlier stage of a request also logged at ``ResponseComplete``),
    ``failed request`` (code ≥ 400), ``level Metadata (no object)``,
    ``subresource <s>``, ``unknown resource <r>``, ``no object name``,
    ``<verb> of an object never seen``, ``<verb> without an object``,
    ``unserved kind <k>``.
    """

    records: int = 0
    inputs: int = 0
    skipped: Counter = field(default_factory=Counter)


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = 1_000_000  # microseconds per second


def _ts(text: str) -> int:
    """An RFC 3339 timestamp as whole microseconds since the Unix epoch: exact, where a float
    POSIX timestamp (about 2e-7 s apart near 2024) would turn 10 ms into ``9.99999ms``."""
    d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.astimezone(timezone.utc)  # a naive time is local, as datetime.timestamp() reads it
    delta = d - _UNIX_EPOCH
    return (delta.days * 86400 + delta.seconds) * _US + delta.microseconds


def _epoch_text(t: float) -> str:
    return datetime.fromtimestamp(int(t), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _actor(username: str) -> str:
    """An audit username as a k8semu actor (``user:`` for people, component names otherwise)."""
    if not username.startswith("system:"):
        return f"user:{username}"
    if username == "system:kube-scheduler":
        return "default-scheduler"
    if username.startswith("system:node:"):
        return f"kubelet/{username[len('system:node:'):]}"
    if username.startswith("system:serviceaccount:kube-system:"):
        return username.rsplit(":", 1)[1]
    if username in ("system:kube-controller-manager", "system:apiserver"):
        return username.split(":", 1)[1]
    if username.startswith("system:serviceaccount:"):
        return f"user:{username}"
    return username


def _info(resource: str, group: str, kind: str | None) -> ResourceInfo | None:
    for info in lookup(resource):
        if info.plural != resource:
            continue
        if info.group == group or (group in ("extensions",) and info.group in ("apps", "networking.k8s.io")) \
                or (group == "apps" and info.group == "apps") or (kind and info.kind == kind):
            return info
    found = lookup(resource)
    return found[0] if found else None


def _convert(obj: dict[str, Any], info: ResourceInfo) -> dict[str, Any]:
    """The object in the served version (``extensions/v1beta1`` Deployment -> ``apps/v1``)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if v is not None and k != "resourceVersion"}
    return {**obj, "apiVersion": info.api_version, "kind": info.kind, "metadata": meta}


class _Writer:
    """Builds the imported log: per-key state, stub creation for pre-existing objects."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.t = 0.0
        self.log = EventLog(clock=lambda: self.t, path=path, header=header, sync="none")
        self.log.mark({"type": "SESSION", "event": "start", "rev": 0, "t": 0.0, "argv": ["import"],
                       "settle": True, "limit": 600.0, "imported": True})
        self.result = ImportResult()

    def write(self, verb: str, key: str, obj: dict[str, Any] | None, actor: str, t: float) -> None:
        self.t = max(self.t, t)
        cur = self.log.get(key)
        if verb == "delete":
            if cur is None:
                if obj is None:
                    self.result.skipped["delete of an object never seen"] += 1
                    return
                self._pre_existing(key, obj)
                cur = self.log.get(key)
            self.log.delete(key, actor, obj=cur.object)  # type: ignore[union-attr]
        elif cur is None:
            if verb != "create":
                if obj is None:
                    self.result.skipped[f"{verb} of an object never seen"] += 1
                    return
            self.log.create(key, obj, actor)  # type: ignore[arg-type]
        else:
            if obj is None:
                self.result.skipped[f"{verb} without an object"] += 1
                return
            self.log.update(key, obj, actor)
        self.result.records += 1
        if actor.startswith("user:"):
            self.result.inputs += 1

    def _pre_existing(self, key: str, obj: dict[str, Any]) -> None:
        t = self.t
        self.t = 0.0 if not self.log.revision else self.log.record(self.log.revision).time
        self.log.create(key, obj, "import:pre-existing")
        self.t = t
        self.result.records += 1

    def close(self) -> None:
        self.log.mark({"type": "SESSION", "event": "end", "rev": self.log.revision, "t": self.t,
                       "settled": True})
        self.log.close()


def _read_audit(path: Path) -> list[tuple[int, dict[str, Any]]]:
    data = path.read_bytes()
    stripped = data.strip()
    if not stripped:
        raise ImportError_(f"{path}:1: empty file: not an audit log")
    events: list[tuple[int, dict[str, Any]]] = []
    whole = None
    if stripped[:1] == b"{" and b"\n{" not in stripped:
        try:
            whole = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            whole = None
    if isinstance(whole, dict) and whole.get("kind") == "EventList":
        events = [(1, e) for e in whole.get("items") or []]
    elif isinstance(whole, dict):
        events = [(1, whole)]
    else:
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                e = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise ImportError_(f"{path}:{n}: not JSON ({err})") from None
            events.append((n, e))
    for n, e in events:
        if not isinstance(e, dict) or e.get("kind") not in ("Event", None) or "verb" not in e or \
                "auditID" not in e and "requestURI" not in e:
            raise ImportError_(f"{path}:{n}: not an audit event (expected kind Event with verb and auditID)")
        v = e.get("apiVersion")
        if v is not None and v not in AUDIT_VERSIONS:
            raise ImportError_(f"{path}:{n}: unsupported audit apiVersion {v!r} "
                               f"(reads {', '.join(AUDIT_VERSIONS)})")
    return events


def _event_time(e: dict[str, Any]) -> int:
    """The event's time in microseconds since the Unix epoch (:func:`_ts`; 0 if it has none)."""
    for k in ("stageTimestamp", "requestReceivedTimestamp", "timestamp"):
        if e.get(k):
            return _ts(e[k])
    md = e.get("metadata") or {}
    return _ts(md["creationTimestamp"]) if md.get("creationTimestamp") else 0


def import_audit(src: str | os.PathLike[str], out: str | os.PathLike[str], *,
                 cluster: dict[str, Any] | None = None) -> ImportResult:
    """Convert a Kubernetes audit log into a k8semu log at ``out`` (written atomically).

    Raises:
        FileNotFoundError; ImportError_: a line that is not an audit event (``FILE:LINE: …``).
        OutputError: ``out`` cannot be written (:func:`~k8semu.timeline.rerun.check_output`).
    """
    from ..api import patch as patching
    from ..sim.config import ClusterConfig

    src = Path(src)
    events = _read_audit(src)
    times = [_event_time(e) for _, e in events]
    t0 = min(times) if times else 0
    config = dict(cluster or ClusterConfig.default().to_dict())
    config["epoch"] = _epoch_text(t0 // _US)
    header = {"seed": 0, "cluster": config, "source": {"kind": "audit", "file": src.name}}
    with atomic_output(out) as tmp:
        w = _Writer(tmp, header)
        t_base = t0 // _US * _US  # the epoch's whole second, in microseconds
        for (n, e), t in sorted(zip(events, times), key=lambda x: x[1]):
            verb = e.get("verb")
            if e.get("stage") not in (None, "ResponseComplete"):
                # the same request is logged again when it completes
                w.result.skipped[f"stage {e.get('stage')}"] += 1
                continue
            if verb not in _WRITE_VERBS:
                w.result.skipped[f"read ({verb})" if verb in _READ_VERBS else f"verb {verb}"] += 1
                continue
            code = (e.get("responseStatus") or {}).get("code", 200)
            if code >= 400:
                w.result.skipped["failed request"] += 1
                continue
            if e.get("level") not in ("Request", "RequestResponse"):
                w.result.skipped[f"level {e.get('level')} (no object)"] += 1
                continue
            ref = e.get("objectRef") or {}
            if ref.get("subresource") not in (None, "", "status", "scale"):
                w.result.skipped[f"subresource {ref['subresource']}"] += 1
                continue
            body = e.get("responseObject") if isinstance(e.get("responseObject"), dict) and \
                (e["responseObject"].get("kind") not in ("Status", None)) else None
            req = e.get("requestObject") if isinstance(e.get("requestObject"), dict) else None
            kind = (body or req or {}).get("kind")
            info = _info(ref.get("resource", ""), ref.get("apiGroup", ""), kind if kind != "DeleteOptions" else None)
            if info is None:
                w.result.skipped[f"unknown resource {ref.get('resource')}"] += 1
                continue
            user = e.get("impersonatedUser") or e.get("user") or {}
            actor = _actor(user.get("username", "unknown"))
            ns = ref.get("namespace") if info.namespaced else None
            name = ref.get("name") or ((body or req or {}).get("metadata") or {}).get("name")
            if not name:
                w.result.skipped["no object name"] += 1
                continue
            key = info.key(ns, name)
            obj: dict[str, Any] | None = None
            if verb in ("create", "update"):
                obj = body or (req if req and req.get("kind") == info.kind or req and req.get("kind") in (
                    info.kind, None) else None)
            elif verb == "patch":
                if body is not None:
                    obj = body
                elif req is not None and w.log.get(key) is not None:
                    cur = w.log.get(key).object  # type: ignore[union-attr]
                    obj = patching.apply_strategic_merge_patch(cur, req, f"{info.api_version}/{info.kind}")
            if obj is not None:
                meta = dict(obj.get("metadata") or {})
                meta.setdefault("name", name)
                if ns:
                    meta.setdefault("namespace", ns)
                obj = _convert({**obj, "metadata": meta}, info)
                if ref.get("subresource") == "status" and w.log.get(key) is not None:
                    obj = {**w.log.get(key).object, "status": obj.get("status") or {}}  # type: ignore[union-attr]
            elif verb == "delete":
                obj = {"apiVersion": info.api_version, "kind": info.kind,
                       "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
            w.write(verb, key, obj, actor, (t - t_base) / _US)  # exact integers, one rounding
        w.close()
        result = w.result
    return result


# ---------------------------------------------------------------------- SimKube
def _read_simkube(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if not data.strip():
        raise ImportError_(f"{path}:1: empty file: not a SimKube trace")
    if data.lstrip()[:1] == b"{":
        try:
            trace = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise ImportError_(f"{path}:1: not JSON ({e})") from None
    else:
        try:
            import msgpack
        except ImportError:  # pragma: no cover - msgpack is a dependency
            raise ImportError_(f"{path}:1: reading msgpack traces needs the msgpack package") from None

        def pairs(items: list[tuple[Any, Any]]) -> dict[Any, Any]:
            return {(tuple(k) if isinstance(k, list) else k): v for k, v in items}

        try:
            trace = msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=pairs)
        except Exception as e:  # noqa: BLE001 - msgpack raises several unrelated types
            raise ImportError_(f"{path}:1: neither JSON nor msgpack ({type(e).__name__}: {e})") from None
    if not isinstance(trace, dict) or "events" not in trace:
        raise ImportError_(f"{path}:1: not a SimKube trace (no \"events\")")
    if trace.get("version") != 2:
        raise ImportError_(f"{path}:1: SimKube trace version {trace.get('version')!r} is not supported (reads 2)")
    return trace


def import_simkube(src: str | os.PathLike[str], out: str | os.PathLike[str], *,
                   cluster: dict[str, Any] | None = None) -> ImportResult:
    """Convert a SimKube trace (version 2, JSON or msgpack) into a k8semu log at ``out``.

    Raises:
        FileNotFoundError; ImportError_: not a version-2 trace. OutputError: ``out`` cannot be
        written (:func:`~k8semu.timeline.rerun.check_output`).
    """
    from ..api.resources import by_kind
    from ..sim.config import ClusterConfig

    src = Path(src)
    trace = _read_simkube(src)
    events = [e for e in trace.get("events") or [] if isinstance(e, dict)]
    t0 = min((float(e.get("ts", 0)) for e in events), default=0.0)
    config = dict(cluster or ClusterConfig.default().to_dict())
    config["epoch"] = _epoch_text(t0)
    header = {"seed": 0, "cluster": config, "source": {"kind": "simkube", "file": src.name}}
    with atomic_output(out) as tmp:
        w = _Writer(tmp, header)
        for i, e in enumerate(events):
            t = float(e.get("ts", t0)) - int(t0)
            for verb, objs in (("apply", e.get("applied_objs") or []), ("delete", e.get("deleted_objs") or [])):
                for obj in objs:
                    try:
                        info = by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
                    except Exception:  # noqa: BLE001 - an unserved kind
                        w.result.skipped[f"unserved kind {obj.get('kind')}"] += 1
                        continue
                    meta = obj.get("metadata") or {}
                    key = info.key(meta.get("namespace") or "default", meta.get("name", ""))
                    body = _convert(obj, info)
                    if info.namespaced:
                        body["metadata"].setdefault("namespace", "default")
                    if verb == "delete":
                        w.write("delete", key, body if w.log.get(key) is None else None, "user:simkube", t)
                    else:
                        w.write("create" if w.log.get(key) is None else "update", key, body, "user:simkube", t)
        w.close()
        result = w.result
    return result


# ---------------------------------------------------------------------- re-enactment
@dataclass
class ReenactReport:
    """Where k8semu's components differed from the recorded cluster.

    ``inputs``: re-issued; ``refused``: ``[(revision, message)]``;
    ``pods``: ``{owner: (recorded, k8semu)}`` pods created per top-level owner;
    ``nodes``: ``{owner: (recorded nodes Counter, k8semu nodes Counter)}``;
    ``cluster``: the re-enacted cluster.
    """

    inputs: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)
    pods: dict[str, tuple[int, int]] = field(default_factory=dict)
    nodes: dict[str, tuple[Counter, Counter]] = field(default_factory=dict)
    cluster: Any = None
    recorded_pods: bool = True

    def lines(self) -> list[str]:
        out = [f"re-enacted {self.inputs} inputs"]
        for rev, msg in self.refused:
            out.append(f"  input at revision {rev} refused: {msg}")
        if not self.recorded_pods:
            out.append("  (the recording has no pod writes: only k8semu's side is shown)")
        for owner, (a, b) in sorted(self.pods.items()):
            if not self.recorded_pods:
                out.append(f"  {owner}: k8semu created {b} pods")
                continue
            mark = "same" if a == b else "differs"
            out.append(f"  {owner}: pods created: recorded {a}, k8semu {b} ({mark})")
        for owner, (a, b) in sorted(self.nodes.items()):
            if not self.recorded_pods:
                out.append(f"  {owner}: k8semu placed pods on " +
                           (", ".join(f"{k}×{n}" for k, n in sorted(b.items())) or "no node"))
            elif a != b:
                fmt = lambda c: ", ".join(f"{k}×{n}" for k, n in sorted(c.items())) or "none"  # noqa: E731
                out.append(f"  {owner}: nodes: recorded {fmt(a)}; k8semu {fmt(b)}")
        return out


def _pods_by_owner(log: EventLog) -> tuple[Counter, dict[str, Counter]]:
    created: Counter = Counter()
    nodes: dict[str, Counter] = {}
    owner_of: dict[str, str] = {}
    for rec in log.records(log.compact_revision, "/registry/pods/"):
        ns = rec.key.split("/")[3]
        if rec.key not in owner_of or rec.type == "ADDED":
            chain = _owner_chain(log, ns, rec.object, rec.revision)
            owner = describe_key((chain[-1] if chain else rec).key)
            owner_of[rec.key] = f"{ns}/{owner}"
            if rec.type == "ADDED":
                created[owner_of[rec.key]] += 1
        node = (rec.object.get("spec") or {}).get("nodeName")
        if node and rec.type != DELETED:
            prev = log.get(rec.key, rec.revision - 1) if rec.revision > 1 else None
            if prev is None or not (prev.object.get("spec") or {}).get("nodeName"):
                nodes.setdefault(owner_of[rec.key], Counter())[node] += 1
    return created, nodes


def _owner_label(key: str) -> tuple[str, str]:
    parts = key.split("/")
    return (parts[3] if len(parts) == 5 else ""), describe_key(key)


def reenact(log: EventLog, until: float | None = None) -> ReenactReport:
    """Re-issue an imported log's inputs on a fresh cluster at their times, settle, and compare.

    ``until``: only the inputs up to this virtual time (seconds).

    Raises:
        ReplayError: the log was not imported.
    """
    import trio

    from ..api.errors import StatusError
    from ..sim.cluster import Cluster
    from .rerun import ReplayError, run_session_like

    if not log.header.get("source"):
        raise ReplayError("not an imported log")
    seed = int(log.header.get("seed", 0))
    cluster = Cluster.create(None, seed=seed, config=dict(log.header.get("cluster") or {}))
    report = ReenactReport(cluster=cluster)
    inputs = [r for r in log.records(log.compact_revision) if (is_input(r) or r.actor == "import:pre-existing")
              and (until is None or r.time <= until)]
    owners = {r.key for r in inputs}

    async def body(rt: Any) -> None:
        for rec in inputs:
            parts = rec.key.split("/")
            if len(parts) == 5 and cluster.log.get(f"/registry/namespaces/{parts[3]}") is None:
                # the recording's namespaces existed before it began (SimKube's driver creates them too)
                cluster.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": parts[3]}})
            if rt.now < rec.time:
                await trio.sleep_until(rec.time)
            prev = cluster.log.get(rec.key)
            try:
                reissue(cluster.api, rec, prev)
                report.inputs += 1
            except (StatusError, ReplayError) as e:
                report.refused.append((rec.revision, str(e)))

    run_session_like(cluster, {"settle": True, "limit": 600.0}, None, body)
    rec_created, rec_nodes = _pods_by_owner(log)
    got_created, got_nodes = _pods_by_owner(cluster.log)
    # compare what the recording is about: objects it created or changed, and what they own
    def about(owner: str) -> bool:
        ns, ref = owner.split("/", 1)
        return any(_owner_label(k) == (ns, ref) for k in owners)

    report.recorded_pods = bool(log.count("/registry/pods/") or log.records(0, "/registry/pods/"))
    for owner in sorted(o for o in set(rec_created) | set(got_created) if about(o)):
        report.pods[owner] = (rec_created.get(owner, 0), got_created.get(owner, 0))
    for owner in sorted(o for o in set(rec_nodes) | set(got_nodes) if about(o)):
        report.nodes[owner] = (rec_nodes.get(owner, Counter()), got_nodes.get(owner, Counter()))
    return report
