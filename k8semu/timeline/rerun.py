"""Re-executing a log: inputs in, outputs compared record by record; stopping early; forking.

Inputs and outputs (``docs/replay.md``): *inputs* are what came from outside
the emulated components — the header (seed, cluster configuration), every
write whose actor is ``user:<name>`` (requests, and faults such as ``node
stop``, which are user writes too), and the sessions: each CLI command that
runs the cluster is bracketed by ``{"type":"SESSION","event":"start"|"end"}``
marks recording the revision and virtual time it started at, how it ends
(settle with a limit, or run for a duration) and the time it reached, and
between them one ``"event":"wait"`` mark per wait the command made between
its requests (:class:`ClientWaits`: drain's polls, ``wait``, ``rollout
status``, ``delete``'s wait for deletion). Everything else is an *output* of
the components.

A replay rebuilds the cluster from the header (bootstrap included: its
records are outputs too) and then, per session, does what the command did:
reopen (RNG ``f"{seed}:{revision}"``, Trio scheduling seeded from seed and
revision, clock at the session's start mark's time), start every component, re-issue
the session's inputs in order as API requests — each once the log has
reached the revision just before it, i.e. at the same point of the
component's work — making the command's recorded waits between them as it
made them (:func:`wait_again`: the command's client work shares Trio's
seeded scheduling with the components, so *how* it waited decides the order
of their later writes), then settle or run exactly as the session did. A listener
compares every record the replay writes with the recorded one (revision,
type, key, actor, virtual time, object bytes) and stops at the first
difference.

Re-issuing an input as a request: ``ADDED`` → create of the recorded object
without its server-set fields (uid, creationTimestamp, resourceVersion,
generation, managedFields; the name too when it was generated; the RNG draw
of the token volume's name that a Pod's admission made), or with the
metadata the client sent (what precedes the uid; a ``creationTimestamp:
null`` as kubectl's generators send) and a Job's generated selector left to
the server, whichever dry-run gives the recorded bytes; ``MODIFIED``
that sets ``deletionTimestamp`` → delete (grace period and propagation
policy read back from the object); other ``MODIFIED`` → update with the
recorded object (a ``scale`` subresource write → update of the scale);
``DELETED`` → delete. The field manager is the one whose managedFields entry
the write changed. Writes made outside any session (none are, by the
current CLI) are re-applied verbatim.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import trio

from ..store import EventLog, Record
from ..store.logfile import LogWriter
from ..store.record import ADDED, DELETED, MODIFIED
from ..store.snapshot import snapshot_path
from .history import diff_objects
from .view import PointError

__all__ = ["Session", "sessions_of", "is_input", "Divergence", "ReplayResult", "replay", "fork",
           "ReplayError", "ForkRefused", "write_log", "atomic_output", "check_output", "OutputError",
           "ClientWaits", "wait_again"]


class ReplayError(ValueError):
    """The log cannot be re-executed (no session marks, an unknown resource…): one line."""


def is_input(rec: Record) -> bool:
    """True for records that came from outside the components (actor ``user:<name>``)."""
    return rec.actor.startswith("user:")


@dataclass
class Session:
    """One recorded session: its marks, its input records (in revision order) and the
    command's waits (``{"event":"wait",…}`` marks, in order; see :class:`ClientWaits`;
    for a session cut by :func:`write_log` while its command was waiting, that wait, from
    the end mark's ``"waiting"``, comes last).

    ``last_rev`` is the last revision written in it: its end mark's, or, for a
    session without one (the command was killed, e.g. ``kill -9``), the next
    session's start or the head of the log (set by :func:`sessions_of`).
    """

    start: dict[str, Any]
    end: dict[str, Any] | None
    inputs: list[Record] = field(default_factory=list)
    waits: list[dict[str, Any]] = field(default_factory=list)
    last_rev: int = 0

    @property
    def start_rev(self) -> int:
        return int(self.start["rev"])

    @property
    def end_rev(self) -> int | None:
        return None if self.end is None else int(self.end["rev"])

    @property
    def truncated(self) -> bool:
        """True when the session stopped at a revision rather than ending by itself: it has
        no end mark (the command was killed), or its end mark is ``"cut": true`` (written by
        :func:`write_log` where ``replay --until`` / ``--fork-at`` cut it). A replay runs it
        up to ``last_rev`` and no further."""
        return self.end is None or bool(self.end.get("cut"))


def sessions_of(log: EventLog) -> list[Session]:
    """Pair the log's SESSION marks into sessions and attach each one's input records.

    A start without an end (the command was killed) ends at the next start or
    at the head (its ``last_rev``). Wait marks belong to the session they were
    written in.
    """
    out: list[Session] = []
    for m in log.marks:
        if m.get("event") == "start":
            out.append(Session(m, None))
        elif m.get("event") == "end" and out and out[-1].end is None:
            out[-1].end = m
            if m.get("waiting"):  # cut by write_log while its command was waiting
                out[-1].waits.append(m["waiting"])
        elif m.get("event") == "wait" and out and out[-1].end is None:
            out[-1].waits.append(m)
    for i, s in enumerate(out):
        if s.end_rev is not None:
            s.last_rev = s.end_rev
        else:
            s.last_rev = out[i + 1].start_rev if i + 1 < len(out) else log.revision
        hi = s.last_rev
        s.inputs = [r for r in log.records(s.start_rev) if r.revision <= hi and is_input(r)] \
            if hi > s.start_rev else []
    return out


# ---------------------------------------------------------------------- a command's waits
class ClientWaits:
    """A command's waiting inside a session, recorded so that a replay waits the same way.

    The command's client work runs in the session's main Trio task, next to
    the components' tasks, and Trio orders each batch of ready tasks by a
    seeded shuffle of the tasks in it (:mod:`k8semu.sim.clock`): when and how
    the command sleeps or polls decides which batches it joins, hence the
    order of the components' writes from then on. So every wait a command
    makes between its requests goes through this class, which makes it on
    the runtime and then writes a mark, after the revision and at the virtual
    time the wait ended::

        {"type":"SESSION","event":"wait","rev":341,"t":17.0,"op":"advance","seconds":1.0}
        {"type":"SESSION","event":"wait","rev":512,"t":31.5,"op":"until","limit":30.0,"step":1.0,"checks":3,"met":true}

    A replay makes the same calls at the same points (:func:`wait_again`):
    ``advance`` the same span; ``until`` with a predicate that holds at the
    recorded check (``met``) or never (the limit ran out). The command's
    requests fall between its waits, so a recorded input is re-issued before
    the first wait that ended after it.

    Args:
        rt: the session's :class:`~k8semu.sim.runtime.Runtime`.
    """

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def _mark(self, op: str, **fields: Any) -> None:
        log = self.rt.cluster.log
        log.mark({"type": "SESSION", "event": "wait", "rev": log.revision, "t": self.rt.now, "op": op, **fields})

    async def advance(self, seconds: float) -> None:
        """:meth:`Runtime.advance <k8semu.sim.runtime.Runtime.advance>`, recorded."""
        await self.rt.advance(seconds)
        self._mark("advance", seconds=float(seconds))

    async def until(self, predicate: Callable[[], bool], *, limit: float = 600.0, step: float = 1.0) -> bool:
        """:meth:`Runtime.until <k8semu.sim.runtime.Runtime.until>`, recorded with the number
        of times ``predicate`` was checked; True once it holds, False if ``limit`` ran out."""
        checks = 0

        def counted() -> bool:
            nonlocal checks
            checks += 1
            return bool(predicate())

        met = await self.rt.until(counted, limit=limit, step=step)
        self._mark("until", limit=float(limit), step=float(step), checks=checks, met=met)
        return met


#: the kinds of recorded waits (the ``op`` of a wait mark)
_WAITS = ("advance", "until")


async def wait_again(rt: Any, wait: dict[str, Any]) -> None:
    """Make the wait recorded in a ``{"event":"wait",…}`` mark again (see :class:`ClientWaits`).

    Raises:
        ReplayError: a wait this k8semu does not know (a log from a newer one).
    """
    op = wait.get("op")
    if op == "advance":
        await rt.advance(float(wait["seconds"]))
    elif op == "until":
        checks, met, seen = int(wait["checks"]), bool(wait.get("met", True)), 0

        def again() -> bool:
            nonlocal seen
            seen += 1
            return met and seen >= checks

        await rt.until(again, limit=float(wait["limit"]), step=float(wait["step"]))
    else:
        raise ReplayError(f"revision {wait.get('rev')}: a command's wait of an unknown kind {op!r} "
                          "(a log from a newer k8semu?)")


@dataclass
class Divergence:
    """The first record where the replay differs from the log."""

    revision: int
    expected: Record | None
    got: Record | None
    reason: str = ""
    #: why the log may not be re-executable there (a session killed while its command waited), or ""
    note: str = ""

    @property
    def actor(self) -> str:
        r = self.expected or self.got
        return r.actor if r else ""

    def lines(self) -> list[str]:
        """Human-readable report: the revision, both versions, and the field differences."""
        def one(r: Record | None) -> str:
            if r is None:
                return "(nothing)"
            return f"{r.type} {r.key} by {r.actor} at t={r.time:g}s"

        out = [f"diverged at revision {self.revision}" + (f": {self.reason}" if self.reason else "")]
        out.append(f"  recorded: {one(self.expected)}")
        out.append(f"  replayed: {one(self.got)}")
        if self.expected is not None and self.got is not None and self.expected.key == self.got.key:
            for c in diff_objects(self.expected.object, self.got.object)[:20]:
                out.append(f"    {c}")
        if self.note:
            out.append(f"note: {self.note}")
        return out


@dataclass
class ReplayResult:
    """Outcome of :func:`replay`: ``records`` verified, ``divergence`` (None: identical), the cluster."""

    records: int
    divergence: Divergence | None
    cluster: Any = None

    @property
    def identical(self) -> bool:
        return self.divergence is None


class _Stop(BaseException):
    """Raised from the compare listener to end the run at the first divergence (a
    BaseException so components' own ``except Exception`` retries cannot swallow it)."""


def _same(a: Record, b: Record) -> str:
    """'' if the records match, else what differs."""
    if a.type != b.type or a.key != b.key:
        return "a different write"
    if a.actor != b.actor:
        return f"actor {b.actor} instead of {a.actor}"
    if a.time != b.time:
        return f"at t={b.time:g}s instead of t={a.time:g}s"
    if a.raw() != b.raw():
        return "a different object"
    return ""


# ---------------------------------------------------------------------- re-issuing inputs
_SERVER_SET = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields",
               "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")


def _info_of(key: str, api: Any = None):
    """The resource of a store key; with ``api``, a custom resource of its CRDs too (in its
    storage version)."""
    from ..api.resources import lookup

    res = key.split("/")[2]
    found = [i for i in lookup(res) if i.qualified == res]
    if not found and api is not None and hasattr(api, "custom"):
        found = [api.custom.storage_info(i) for i in api.custom.lookup(res) if i.qualified == res]
    if not found:
        raise ReplayError(f"{key}: unknown resource {res!r}")
    return found[0]


def _writer_entry(prev: dict[str, Any] | None, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The managedFields entry this write added or changed (None if none did)."""
    before = {(e.get("manager"), e.get("operation"), e.get("subresource")): e
              for e in ((prev or {}).get("metadata") or {}).get("managedFields") or ()}
    changed = []
    for e in (obj.get("metadata") or {}).get("managedFields") or ():
        k = (e.get("manager"), e.get("operation"), e.get("subresource"))
        if before.get(k) != e:
            changed.append((k not in before, before.get(k, {}).get("time") != e.get("time"), e))
    if not changed:
        return None
    # a new entry, else one whose time moved, else the first changed (fields taken away)
    return max(changed, key=lambda c: (c[0], c[1]))[2] if any(c[0] or c[1] for c in changed) else changed[0][2]


def _ctx_for(actor: str):
    from ..api.apiserver import RequestContext
    from ..api.auth import SYSTEM_MASTERS, admin, user

    name = actor.split(":", 1)[1]
    u = admin() if name == admin().name else user(name, SYSTEM_MASTERS)
    return RequestContext(user=u, actor=actor)


def _strip_allocated(obj: dict[str, Any]) -> dict[str, Any]:
    """A Service without what the API server allocates (ClusterIP, NodePorts)."""
    spec = dict(obj.get("spec") or {})
    for k in ("clusterIP", "clusterIPs", "healthCheckNodePort"):
        spec.pop(k, None)
    if spec.get("ports"):
        spec["ports"] = [{k: v for k, v in p.items() if k != "nodePort"} for p in spec["ports"]]
    return {**obj, "spec": spec}


def _unselected(job: dict[str, Any], uid: str) -> dict[str, Any]:
    """A Job without the selector and pod-template labels the server generated from its
    uid and name (:func:`~k8semu.api.defaults.job_prepare_for_create`): what a client that
    left them to the server sent (``job`` itself with ``spec.manualSelector``)."""
    spec = dict(job.get("spec") or {})
    if spec.get("manualSelector"):
        return job
    name = (job.get("metadata") or {}).get("name", "")
    generated = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                 "controller-uid": uid, "job-name": name}
    selector = dict(spec.get("selector") or {})
    match = {k: v for k, v in (selector.get("matchLabels") or {}).items()
             if not (k == "batch.kubernetes.io/controller-uid" and v == uid)}
    selector.pop("matchLabels", None)
    if match:
        selector["matchLabels"] = match
    spec.pop("selector", None)
    if selector:
        spec["selector"] = selector
    template = dict(spec.get("template") or {})
    tmeta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (tmeta.pop("labels", None) or {}).items() if generated.get(k) != v}
    if labels:
        tmeta["labels"] = labels
    spec["template"] = {**template, "metadata": tmeta}
    return {**job, "spec": spec}


def _no_rv(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}}


def _first_match(api: Any, want: dict[str, Any], attempts: list[Callable[[bool], Any]]) -> None:
    """Dry-run each way of making the request; make for real the first whose result is the
    recorded object byte for byte (key order included), else the first equal to it, else
    the first the server accepts, else the first one (the RNG is restored between tries)."""
    import orjson

    from ..api.errors import StatusError

    target = _no_rv(want)
    exact = orjson.dumps(target)
    state = api.rng.getstate()
    chosen = accepted = None
    for attempt in attempts:
        try:
            got = attempt(True)
            accepted = accepted or attempt
        except StatusError:
            got = None
        api.rng.setstate(state)
        if isinstance(got, dict) and _no_rv(got) == target:
            if orjson.dumps(_no_rv(got)) == exact:
                chosen = attempt
                break
            chosen = chosen or attempt
    (chosen or accepted or attempts[0])(False)


def _versions(api: Any, info: Any, entry: dict[str, Any] | None) -> list[Any]:
    """The infos a request for ``info``'s resource may have been made through: a custom
    resource's object is stored in its storage version whatever version the client used (its
    managedFields entry names that one: tried first), so each served version is a candidate;
    a built-in resource has one."""
    custom = getattr(api, "custom", None)
    if custom is None or not hasattr(info, "storage_version"):
        return [info]
    served = [i for i in custom.infos() if i.qualified == info.qualified]
    used = (entry or {}).get("apiVersion")
    out: dict[str, Any] = {}
    for i in [*(i for i in served if i.api_version == used), info, *served]:
        out.setdefault(i.api_version, i)
    return list(out.values())


def _stored_as(info: Any, obj: Any) -> Any:
    """A write's answer as the store holds it: a custom object read back through the version
    it was written in, in ``info``'s (its storage version; only ``apiVersion`` differs)."""
    if isinstance(obj, dict) and hasattr(info, "storage_version") and obj.get("kind") == info.kind:
        return {**obj, "apiVersion": info.api_version}
    return obj


def reissue(api: Any, rec: Record, prev: Record | None) -> None:
    """Make the API request that produced input ``rec`` (see the module docstring).

    Where the original request is ambiguous (did the user set the Service's
    ClusterIP, or did the server allocate it? did the client send
    managedFields?), each candidate is dry-run first and the one that
    reproduces the recorded object is made.

    Raises:
        StatusError: the API refused it; ReplayError: an unknown resource.
    """
    info = _info_of(rec.key, api)
    obj = rec.object
    meta = obj.get("metadata") or {}
    parts = rec.key.split("/")
    ns = parts[3] if len(parts) == 5 else None
    name = parts[-1]
    ctx = _ctx_for(rec.actor)
    old = prev.object if prev is not None and prev.type != DELETED else None
    entry = _writer_entry(old, obj)
    manager = entry.get("manager") if entry else None
    if rec.type == ADDED:
        body_meta = {k: v for k, v in meta.items() if k not in _SERVER_SET}
        gen = meta.get("generateName")
        if gen and name.startswith(gen) and len(name) == len(gen) + 5:
            body_meta.pop("name", None)
        body = {**obj, "metadata": body_meta}
        bodies = [_strip_allocated(body), body] if info.kind == "Service" else [body]
        # The server adds the uid, and then what it defaults (a Namespace's name label…), after
        # the keys the client sent, and fills in place a ``creationTimestamp: null`` that
        # kubectl's generated objects (create deployment, create namespace…) carry: the
        # metadata as sent is what precedes the uid. (Sent as recorded instead, the object is
        # the same but its keys come in another order.)
        keys = list(meta)
        if "uid" in keys:
            sent = {k: None if k == "creationTimestamp" else meta[k] for k in keys[:keys.index("uid")]
                    if k in body_meta or k == "creationTimestamp"}
            if list(sent) != list(body_meta):
                bodies += [{**b, "metadata": sent} for b in bodies]
            if info.kind == "Job":
                bodies.append(_unselected({**body, "metadata": sent}, meta["uid"]))

        def create(via: Any, b: dict[str, Any], dry: bool) -> Any:
            return _stored_as(info, api.create(via, {**b, "apiVersion": via.api_version}, namespace=ns, ctx=ctx,
                                               field_manager=manager, dry_run=dry))

        _first_match(api, obj, [(lambda dry, v=v, b=b: create(v, b, dry))
                                for v in _versions(api, info, entry) for b in bodies])
        return
    deleting = rec.type == DELETED or (meta.get("deletionTimestamp") and not (old or {}).get(
        "metadata", {}).get("deletionTimestamp"))
    if deleting:
        fins = meta.get("finalizers") or []
        policy = "Foreground" if "foregroundDeletion" in fins else "Orphan" if "orphan" in fins else None
        grace = meta.get("deletionGracePeriodSeconds")
        api.delete(info, name, namespace=ns, ctx=ctx, grace_period_seconds=grace, propagation_policy=policy)
        return
    sub = (entry or {}).get("subresource") or ""
    if sub == "scale":
        api.update_scale(info, name, int((obj.get("spec") or {}).get("replicas") or 0), namespace=ns,
                         ctx=ctx, field_manager=manager)
        return
    body = _no_rv(obj)
    no_mf = {**body, "metadata": {k: v for k, v in body["metadata"].items() if k != "managedFields"}}
    _first_match(api, obj, [
        (lambda dry, v=v, b=b: _stored_as(info, api.update(v, {**b, "apiVersion": v.api_version}, namespace=ns,
                                                           subresource=sub, ctx=ctx, field_manager=manager,
                                                           dry_run=dry)))
        for v in _versions(api, info, entry) for b in (body, no_mf)])


def _raw_apply(log: EventLog, rec: Record) -> None:
    """Re-apply a write verbatim (for writes recorded outside any session)."""
    if rec.type == ADDED:
        log.create(rec.key, rec.object, rec.actor)
    elif rec.type == MODIFIED:
        log.update(rec.key, rec.object, rec.actor)
    else:
        log.delete(rec.key, rec.actor, obj=rec.object)


# ---------------------------------------------------------------------- the replay
def _reset_listeners(log: EventLog, keep: Callable[[Record], None]) -> None:
    # A reopened cluster has a fresh API server; drop the listeners of the previous
    # session's one (its RBAC cache) so they do not pile up.
    for fn in list(log._listeners):  # noqa: SLF001 - the store has no public "listeners"
        if fn is not keep:
            log.remove_listener(fn)


def run_session_like(cluster: Any, session_start: dict[str, Any], end_t: float | None,
                     body: Callable[[Any], Any], *, stop_at: float | None = None) -> bool:
    """Run the components as :func:`k8semu.cli.session.run_session` did for a session
    whose start mark is ``session_start``: ``body(rt)``, then settle (with the recorded
    limit) or run for the recorded duration. Returns ``settled``.

    ``stop_at``: the virtual time an interrupted session (Ctrl-C; its end mark has
    ``"interrupted": true``) stopped at — the CLI stops between two instants, after every
    write of the last one, so stopping the replay at that time ends it at the same record.
    """
    from ..sim.components import default_factories
    from ..sim.runtime import run_cluster

    async def main(rt: Any) -> bool:
        if stop_at is None:
            return await session(rt)
        with trio.move_on_at(stop_at):
            return await session(rt)
        return False

    async def session(rt: Any) -> bool:
        await body(rt)
        if "for" in session_start:
            if end_t is not None:
                # as the CLI's ``rt.advance(for)``, even for 0 s: what the instant's writes set off
                # (a kubelet that ``node start`` booted registering its Node) still runs
                await rt.advance(max(end_t - rt.now, 0.0))
            elif end_t is None:
                await rt.advance(float(session_start["for"]))
            return True
        if session_start.get("settle", True):
            return await rt.settle(limit=float(session_start.get("limit", 600.0)))
        return True

    return run_cluster(cluster, main, default_factories(cluster))


def replay(log: EventLog, *, until: int | None = None, skip: frozenset[int] = frozenset(),
           on_session: Callable[[int, Session], None] | None = None) -> ReplayResult:
    """Re-execute ``log`` on a fresh in-memory cluster and compare every record.

    Args:
        log: the recorded log (e.g. :func:`~k8semu.timeline.view.open_log`).
        until: stop once this revision is verified (the cluster then holds more
            records only if that revision is inside a session; see :func:`write_log`).
        skip: input revisions not to re-issue (for :func:`fork`; comparison is then off).
        on_session: progress callback ``(index, session)``.

    A session stopped by Ctrl-C or SIGTERM (end mark ``"interrupted": true``) is run to
    the virtual time it reached; a truncated one (:attr:`Session.truncated`: killed
    outright, so without an end mark, or cut by :func:`write_log`) until it has written
    its last recorded revision, so the sessions after it start from the same state.

    Returns:
        :class:`ReplayResult`; ``cluster`` is the replayed :class:`~k8semu.sim.cluster.Cluster`.

    Raises:
        ReplayError: the log has no session marks (written before sessions were
            recorded), was imported (use :func:`~k8semu.timeline.importers.reenact`), or
            holds before ``until`` a session run by ``k8semu serve`` or one stopped by a
            signal in the middle of a virtual instant, or a command's wait of an unknown kind.
    """
    import trio

    from ..sim.cluster import Cluster

    if log.header.get("source"):
        raise ReplayError("this log was imported from another recording: use reenact (k8semu replay does "
                          "this automatically) rather than record-by-record verification")
    sessions = sessions_of(log)
    if not sessions and log.revision:
        raise ReplayError("the log has no session marks (it was written before k8semu recorded sessions), "
                          "so it cannot be re-executed; history, diff and --at still work on it")
    limit = log.revision if until is None else until
    served = next((s for s in sessions if s.start.get("serve") and s.start_rev < limit), None)
    if served is not None:
        raise ReplayError(f"revision {served.start_rev}: a session run by k8semu serve ran in real time and "
                          f"cannot be re-executed; replay until {served.start_rev} verifies what came before")
    mid = next((s for s in sessions if s.end is not None and s.end.get("mid_instant") and s.start_rev < limit),
               None)
    if mid is not None:
        raise ReplayError(f"revision {mid.start_rev}: a session stopped by a signal in the middle of a virtual "
                          f"instant (where it stopped depended on the wall clock) cannot be re-executed; "
                          f"replay until {mid.start_rev} verifies what came before")
    for w in (w for s in sessions for w in s.waits):
        if w.get("op") not in _WAITS:
            raise ReplayError(f"revision {w['rev']}: a command's wait of an unknown kind {w.get('op')!r} "
                              "(a log from a newer k8semu?)")
    stop_at = log.revision if until is None else until
    seed = int(log.header.get("seed", 0))
    config = dict(log.header.get("cluster") or {})
    verify = not skip
    # "cut": the revision a truncated session (killed, or cut by write_log) stops at, once verified
    state: dict[str, Any] = {"div": None, "limit": sessions[0].start_rev if sessions else log.revision,
                             "cut": None}

    def compare(rec: Record) -> None:
        if not verify:
            return
        if state["div"] is not None:
            raise _Stop()
        if rec.revision > state["limit"] or rec.revision > log.revision:
            state["div"] = Divergence(rec.revision, None, rec, "an extra write the log does not have")
            raise _Stop()
        want = log.record(rec.revision)
        why = _same(want, rec)
        if why:
            state["div"] = Divergence(rec.revision, want, rec, why)
            raise _Stop()
        if state["cut"] is not None and rec.revision >= state["cut"]:
            # the recorded session wrote nothing more: stop right after this record, so
            # that the next session starts from exactly the recorded state
            state["cut"] = -1  # (and refuse any later write: see guarded_clock)
            raise _Stop()

    # the CSR signer's CA: the one beside the recorded cluster file (outside the log), if any
    source = getattr(log, "file_path", None)
    pki = Path(source).parent / "pki" if source else None
    pki_folder = pki if pki is not None and pki.is_dir() else None

    # bootstrap: the header alone decides it
    cluster = Cluster.create(None, seed=seed, config=config)
    cluster.pki_folder = pki_folder
    rlog = cluster.log
    rlog.add_listener(compare)
    for rec in rlog.records(0):
        try:
            compare(rec)
        except _Stop:
            break
    if state["div"] is None and verify and rlog.revision < state["limit"] and rlog.revision < stop_at:
        r = rlog.revision + 1
        state["div"] = Divergence(r, log.record(r), None, "bootstrap wrote fewer records")
    for i, s in enumerate(sessions):
        if state["div"] is not None or rlog.revision >= stop_at:
            break
        # writes recorded between sessions are re-applied verbatim
        if rlog.revision < s.start_rev:
            state["limit"] = s.start_rev
            for rec in log.records(rlog.revision):
                if rec.revision > s.start_rev:
                    break
                try:
                    _raw_apply(rlog, rec)
                except _Stop:
                    break
            if state["div"] is not None:
                break
        if on_session:
            on_session(i, s)
        rlog.mark(s.start)  # the replayed log carries the same session marks
        end_rev = s.last_rev
        state["limit"] = end_rev if verify else 1 << 62
        truncated = verify and s.truncated
        how = s.start.get("rng", "reopen")
        if how == "reopen" or (how == "create" and i > 0):
            _reset_listeners(rlog, compare)
            cluster = Cluster(rlog, seed, config)
            cluster.pki_folder = pki_folder
        inputs = [r for r in s.inputs if r.revision not in skip]

        async def issue(rt: Any, rec: Record) -> None:
            # A recorded wait puts the log right before the input; without one (a log from
            # before waits were recorded), wait here until the components have written
            # everything before it.
            if verify and rlog.revision < rec.revision - 1:
                await rt.until(lambda r=rec: rlog.revision >= r.revision - 1,
                               limit=max(rec.time - rt.now, 0.0) + 60.0)
            if verify and rlog.revision != rec.revision - 1:
                r = rlog.revision + 1
                state["div"] = Divergence(r, log.record(r), None,
                                          "the components stopped short of the next input")
                raise _Stop()
            if rt.now < rec.time:
                await trio.sleep_until(rec.time)
            from ..api.errors import StatusError

            try:
                reissue(cluster.api, rec, log.get(rec.key, rec.revision - 1) if rec.revision > 1 else None)
            except StatusError as e:
                if verify:
                    state["div"] = Divergence(rec.revision, rec, None, f"the request was refused: {e}")
                    raise _Stop() from None

        async def body(rt: Any, inputs: list[Record] = inputs, waits: list[dict[str, Any]] = s.waits) -> None:
            todo = list(inputs)
            for w in waits:  # the command's requests, then its wait, as it made them
                while todo and todo[0].revision <= w["rev"]:
                    await issue(rt, todo.pop(0))
                await wait_again(rt, w)
                if verify and (rlog.revision < w["rev"] or abs(rt.now - float(w["t"])) > 1e-6):
                    r = rlog.revision + 1
                    why = ("the components stopped short of where the command's wait ended"
                           if rlog.revision < w["rev"] else
                           f"the command's wait ended at t={rt.now:g}s instead of t={float(w['t']):g}s")
                    state["div"] = Divergence(r, log.record(r) if r <= log.revision else None, None, why)
                    raise _Stop()
                rlog.mark(w)  # the replayed log carries the same wait marks
            for rec in todo:
                await issue(rt, rec)

        # A truncated session (killed: no end mark; or cut by write_log) is run as it would
        # have gone on, and stopped once it has written its last recorded revision.
        end_t = float(s.end["t"]) if s.end is not None and not truncated else None
        stop = end_t if s.end is not None and s.end.get("interrupted") else None
        if not (truncated and rlog.revision >= end_rev):  # (a truncated session that wrote nothing)
            state["cut"] = end_rev if truncated else None
            clock = rlog.clock

            def guarded_clock(clock: Callable[[], float] = clock) -> float:
                # Once a truncated session has written its last revision, the components'
                # tasks already resumed in the same batch could still write before Trio
                # cancels them; the store reads the clock to stamp a record before
                # appending it, so a write fails here, leaving the log as recorded.
                if state["cut"] == -1:
                    raise _Stop()
                return clock()

            rlog.clock = guarded_clock
            try:
                run_session_like(cluster, s.start, end_t, body, stop_at=stop)
            except BaseException as e:  # noqa: BLE001 - unwrap the nursery's exception group
                if not _only_stop(e):
                    raise
            finally:
                state["cut"] = None
                rlog.clock = clock
        if truncated and state["div"] is None:
            # the recorded wait marks up to where it stopped, for a log written from this replay
            for w in s.waits:
                if w["rev"] <= rlog.revision and not any(m is w for m in rlog.marks):
                    rlog.mark(w)
        if s.end is not None and state["div"] is None:
            rlog.mark(s.end)
        if state["div"] is None and verify and rlog.revision < end_rev:
            r = rlog.revision + 1
            state["div"] = Divergence(r, log.record(r), None, "the replay wrote fewer records in this session")
    if state["div"] is None and verify and rlog.revision < min(stop_at, log.revision):
        # trailing writes outside any session
        state["limit"] = log.revision
        for rec in log.records(rlog.revision):
            if rec.revision > stop_at:
                break
            try:
                _raw_apply(rlog, rec)
            except _Stop:
                break
    rlog.remove_listener(compare)
    div = state["div"]
    if div is not None and until is not None and div.revision > until:
        div = None
    if div is not None:
        div.note = _killed_note(sessions, div.revision)
    verified = min(rlog.revision, stop_at) if div is None else div.revision - 1
    return ReplayResult(verified, div, cluster)


def _killed_note(sessions: list[Session], revision: int) -> str:
    """Why a divergence at ``revision`` may be no fault of the components: it lies in a
    session killed outright (no end mark) after its command's last recorded request and
    wait, where the command may have been waiting; that wait was never recorded (its mark
    is written when it ends), so a replay cannot make it again (:class:`ClientWaits`)."""
    s = next((s for s in sessions if s.start_rev < revision <= s.last_rev), None)
    if s is None or s.end is not None:
        return ""
    last = max([r.revision for r in s.inputs] + [int(w["rev"]) for w in s.waits] + [s.start_rev])
    if revision <= last:
        return ""
    return (f"revision {revision} comes after the last recorded request and wait of a session killed outright "
            f"(started at revision {s.start_rev}, no end mark); if its command was waiting then (drain, wait, "
            f"rollout status, delete), that wait was not recorded and cannot be made again")


def _only_stop(e: BaseException) -> bool:
    if isinstance(e, _Stop):
        return True
    if isinstance(e, BaseExceptionGroup):
        return all(_only_stop(x) for x in e.exceptions)
    return False


# ---------------------------------------------------------------------- output files
class OutputError(ValueError):
    """An output path that cannot, or must not, be written: one line naming it."""


def check_output(path: str | os.PathLike[str], *, inputs: tuple[str | os.PathLike[str], ...] = (),
                 force: bool = False) -> Path:
    """Check that a new file may be written at ``path`` (the one place every command that
    writes a log with ``--out`` checks it; :class:`atomic_output` checks it too).

    Refused, whatever ``force`` says: a directory; a path whose directory does not exist
    (none is created) or cannot be written; one of ``inputs`` itself (the same file, through any link); a
    cluster log whose writer lock (``PATH.lock``, :func:`k8semu.cli.session.lock_cluster`)
    another open holds — tested without waiting — since the holder's later writes would
    be lost. Refused unless ``force``: any other existing file.

    Returns:
        ``Path(path)``.

    Raises:
        OutputError: one line, e.g. ``out.log exists; pass --force to overwrite it``.
    """
    import fcntl

    from ..cli.session import lock_holder, lock_path

    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{p} is a directory: give the path of a file to write")
    parent = p.parent
    if not parent.is_dir():
        raise OutputError(f"{parent} is not a directory" if parent.exists() else f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {p}: permission denied")
    if p.exists():
        for src in inputs:
            try:
                same = os.path.samefile(p, src)
            except OSError:
                same = False
            if same:
                which = "" if os.path.normpath(p) == os.path.normpath(src) else f" ({src})"
                raise OutputError(f"{p} is the input file itself{which}: write the output elsewhere")
    try:
        fd = os.open(lock_path(p), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        fd = -1  # no lock file: no k8semu command has this cluster open
    if fd >= 0:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            holder = lock_holder(p)
            who = (f"k8semu (pid {holder['pid']}: {holder.get('command', '')})" if holder
                   else "another k8semu command")
            raise OutputError(f"{p} is a cluster log in use by {who}: its writes would be lost; "
                              "write the output elsewhere") from None
        finally:
            os.close(fd)
    if p.exists() and not force:
        raise OutputError(f"{p} exists; pass --force to overwrite it")
    return p


class atomic_output:
    """Write a file via a temporary sibling, renamed into place only on success.

    ``with atomic_output(path) as tmp: ...`` — on an exception the temporary
    file is removed and ``path`` is untouched (no half-written output). An
    existing file at ``path`` is replaced, but :func:`check_output` (with
    ``force``) is made before writing and again before the rename: a directory,
    a missing directory (none is created) or a cluster log another k8semu
    command holds open is an :class:`OutputError`, and nothing is left behind.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __enter__(self) -> Path:
        check_output(self.path, force=True)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        except OSError as e:  # e.g. a read-only directory: name the output, not the temporary file
            raise OutputError(f"cannot write {self.path}: {(e.strerror or str(e)).lower()}") from None
        os.close(fd)
        os.unlink(tmp)
        self.tmp = Path(tmp)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                check_output(self.path, force=True)  # a command may have opened it meanwhile
                os.replace(self.tmp, self.path)
            except OSError as e:
                self.tmp.unlink(missing_ok=True)
                raise OutputError(f"cannot write {self.path}: {(e.strerror or str(e)).lower()}") from None
            except BaseException:
                self.tmp.unlink(missing_ok=True)
                raise
            with contextlib.suppress(OSError):  # the replaced file's snapshot: junk now (always ignored)
                snapshot_path(self.path).unlink(missing_ok=True)
        elif self.tmp.exists():
            self.tmp.unlink()


def _waiting_at(marks: list[dict[str, Any]], start: dict[str, Any], rev: int) -> dict[str, Any] | None:
    """The wait the command of the session that ``start`` opens was making at revision
    ``rev``: its first wait mark after ``rev`` (or the ``"waiting"`` of an end mark that cut
    it after ``rev``); None if it had ended, or made no more waits."""
    i = next(i for i, m in enumerate(marks) if m is start)
    for m in marks[i + 1:]:
        if m["rev"] <= rev and m.get("event") == "wait":
            continue
        if m.get("event") == "wait":
            return m
        if m.get("event") == "end" and m["rev"] > rev:
            return m.get("waiting")
        return None
    return None


def write_log(log: EventLog, path: str | os.PathLike[str], until: int | None = None,
              header: dict[str, Any] | None = None) -> int:
    """Write ``log``'s records (up to ``until``) and session marks to a new log file at ``path``.

    A session cut by ``until`` gets an end mark at that revision, ``{"type":"SESSION",
    "event":"end","rev":UNTIL,"t":…,"settled":false,"cut":true}``, with, when the
    command was waiting at that point, that wait's mark as ``"waiting"`` (it ended after
    the cut; a replay must make it to reproduce the order of the components' writes);
    :func:`replay` runs such a session up to that revision. Returns the number of records
    written. The file is written atomically (:class:`atomic_output`: an existing file is
    replaced).

    Raises:
        OutputError: ``path`` cannot be written (see :func:`check_output`).
    """
    hi = log.revision if until is None else until
    hdr = {k: v for k, v in (header or log.header).items() if k not in ("format", "version")}
    marks = [m for m in log.marks if m["rev"] <= hi]
    bounds = [m for m in marks if m.get("event") in ("start", "end")]  # a session's wait marks come between
    if bounds and bounds[-1].get("event") == "start" and hi < log.revision:
        t = log.record(hi).time if hi else 0.0
        end = {"type": "SESSION", "event": "end", "rev": hi, "t": t, "settled": False, "cut": True}
        waiting = _waiting_at(log.marks, bounds[-1], hi)
        if waiting is not None:
            end["waiting"] = waiting
        marks.append(end)
    n = 0
    with atomic_output(path) as tmp:
        w = LogWriter(tmp, hdr, sync="none")
        try:
            mi = 0
            while mi < len(marks) and marks[mi]["rev"] <= 0:
                w.append_line(marks[mi])
                mi += 1
            for rec in log.records(log.compact_revision):
                if rec.revision > hi:
                    break
                w.append(rec)
                n += 1
                while mi < len(marks) and marks[mi]["rev"] <= rec.revision:
                    w.append_line(marks[mi])
                    mi += 1
            while mi < len(marks):
                w.append_line(marks[mi])
                mi += 1
        finally:
            w.close()
    return n


# ---------------------------------------------------------------------- fork
class ForkRefused(ReplayError):
    """Manifests given to :func:`fork` that the forked cluster refused; nothing was written.

    ``str()`` is one line (``2 manifest documents refused: nothing written to NEW.log``);
    ``lines`` has one line per refused document, naming its file and the error
    (``bad.yaml: The ConfigMap "Bad_Name" is invalid: metadata.name: …``).
    """

    def __init__(self, lines: list[str], out: str | os.PathLike[str]) -> None:
        n = len(lines)
        super().__init__(f"{n} manifest document{'s' if n != 1 else ''} refused: nothing written to {out}")
        self.lines = lines


def _refusal(source: str, err: Exception) -> str:
    """One line for a manifest document the forked cluster refused: its file and the error
    (the API server's error as ``k8semu apply`` prints it, its lines joined)."""
    from ..api.errors import StatusError
    from ..cli.output import server_error

    text = server_error(err) if isinstance(err, StatusError) else str(err)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = lines[0] + (" " + "; ".join(line.removeprefix("* ") for line in lines[1:]) if len(lines) > 1 else "")
    return text if f'"{source}"' in text else f"{source}: {text}"


def fork(log: EventLog, at: int, out: str | os.PathLike[str], *, manifests: list[str] = (),
         skip: frozenset[int] = frozenset()) -> tuple[ReplayResult, int]:
    """Replay ``log`` up to revision ``at`` (verified), then continue differently into ``out``.

    At ``at``: a new session applies ``manifests`` (as ``k8semu apply -f``)
    and re-issues the cut session's remaining inputs, ending as the cut session
    did (settling, or at its recorded end time when it ran for a fixed duration,
    as ``advance 5m``); then every later
    recorded session is run again with its inputs (minus the revisions in
    ``skip``: e.g. drop a recorded fault), ending as it ended (settle, or run
    to the same virtual time). Recorded inputs the forked cluster refuses are
    skipped; a manifest document it refuses is an error (:class:`ForkRefused`,
    nothing written). ``out`` is an ordinary cluster log (with session marks),
    written atomically (an existing file is replaced); compare the timelines
    with ``k8semu diff``.

    Returns:
        (the verification of the prefix, the number of records in ``out``; 0 and
        nothing written when the prefix diverged).

    Raises:
        PointError: ``at`` outside the log. ManifestError: a manifest that cannot be
        read (checked first: nothing runs). ReplayError: ``at`` inside the bootstrap
        (before the first session), or a ``skip`` revision that is not a recorded input
        after ``at`` (both checked first); otherwise as :func:`replay`.
        ForkRefused: the forked cluster refused manifest documents. OutputError:
        ``out`` cannot be written (:func:`check_output`).
    """
    from ..api.errors import StatusError
    from ..api.manifest import ManifestError, load_manifests, resource_for
    from ..cli.commands.apply import apply_one
    from ..sim.cluster import Cluster

    if at < 0 or at > log.revision:
        raise PointError(f"revision {at} is outside the log (1..{log.revision})")
    docs = [d for m in manifests for d in load_manifests(m)]
    sessions = [s for s in sessions_of(log)]
    boot = sessions[0].start_rev if sessions else log.revision
    if at < boot:
        raise ReplayError(f"revision {at} is inside the cluster's bootstrap (revisions 1..{boot}, written before "
                          f"any command ran): fork at {boot} or later")
    after = sorted(r.revision for s in sessions for r in s.inputs if r.revision > at)
    for r in sorted(skip):
        if r not in after:
            shown = ", ".join(map(str, after[:10])) + (", …" if len(after) > 10 else "")
            raise ReplayError(f"--skip {r}: revision {r} is not a recorded input after revision {at} "
                              + (f"(those are: {shown})" if after else "(there is none)"))
    prefix = replay(log, until=at)
    if not prefix.identical:
        return prefix, 0
    pending = [r for s in sessions for r in s.inputs if r.revision > at and r.revision not in skip]
    later = [s for s in sessions if s.start_rev >= at]
    refused: list[str] = []
    with atomic_output(out) as tmp:
        n = write_log(prefix.cluster.log, tmp, until=at, header=log.header)
        cluster = Cluster.open(tmp)
        try:
            def open_session(argv: list[str], start: dict[str, Any]) -> None:
                cluster.log.mark({"type": "SESSION", "event": "start", "rev": cluster.log.revision,
                                  "t": cluster.time, "argv": argv,
                                  **{k: start[k] for k in ("settle", "limit", "for") if k in start}})

            def close_session(ok: bool) -> None:
                cluster.log.mark({"type": "SESSION", "event": "end", "rev": cluster.log.revision,
                                  "t": cluster.time, "settled": ok})

            def issue(api: Any, recs: list[Record]) -> None:
                for rec in recs:
                    cur = cluster.log.get(rec.key)
                    try:
                        reissue(api, rec, cur if cur is not None else None)
                    except (StatusError, ReplayError):
                        continue

            cut = [r for r in pending if not any(s.start_rev < r.revision <= s.last_rev for s in later)]
            # The new session ends as the session it cuts would have: a run of a fixed
            # duration (``advance``, ``--for``) runs to the recorded end; else it settles.
            within = next((s for s in sessions if s.start_rev < at <= s.last_rev), None)
            start: dict[str, Any] = {"settle": True, "limit": 600.0}
            first_end: float | None = None
            if (within is not None and "for" in within.start and within.end is not None
                    and not within.end.get("interrupted")):
                first_end = max(float(within.end["t"]), cluster.time)
                start = {"for": first_end - cluster.time}
            open_session(["fork", "--at", str(at)] + [f"-f={m}" for m in manifests], start)

            async def first(rt: Any) -> None:
                for d in docs:
                    try:
                        info = resource_for(d)
                        meta = d.obj.get("metadata") or {}
                        ns = (meta.get("namespace") or "default") if info.namespaced else None
                        apply_one(cluster.api, info, d.obj, ns, server_side=False, force=False, dry=False)
                    except (StatusError, ManifestError) as e:
                        refused.append(_refusal(d.source, e))
                issue(cluster.api, cut)

            close_session(run_session_like(cluster, start, first_end, first))
            if refused:
                raise ForkRefused(refused, out)  # the temporary file is removed: nothing written
            for s in later:
                cluster.close()
                cluster = Cluster.open(tmp)
                recs = [r for r in s.inputs if r.revision not in skip]
                open_session(list(s.start.get("argv") or []), s.start)
                duration = (float(s.end["t"]) - float(s.start["t"])) if s.end is not None else None

                async def body(rt: Any, recs: list[Record] = recs) -> None:
                    issue(cluster.api, recs)

                end_t = cluster.time + duration if duration is not None and "for" in s.start else None
                stop = cluster.time + duration if duration is not None and s.end.get("interrupted") else None
                close_session(run_session_like(cluster, s.start, end_t, body, stop_at=stop))
            n = cluster.log.revision
        finally:
            cluster.close()
    return prefix, n
