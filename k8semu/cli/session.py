"""Opening the cluster file and running its components for one command.

Every ``k8semu`` command is a short session: open the cluster's log (creating
a default cluster first where the command may), start every component in
virtual time (:func:`~k8semu.sim.runtime.run_cluster` with
:func:`~k8semu.sim.components.default_factories`), do the command's work as
the user ``kubernetes-admin``, let the cluster settle (or run for
``--for``), and close the log. Nothing outlives the process but the log.

Settling has a limit, :data:`SETTLE_LIMIT` (10 minutes of virtual time,
usually a second or two of wall time). A cluster that never settles (a
container that logs every few seconds, a probe that keeps flipping, a crash
loop whose back-off stays short) makes a command run that long; it then says
so on stderr, with what is still changing (:func:`still_changing`), e.g.
``Warning: the cluster did not settle within 10m0s of virtual time (…); still
changing: pod/looper (kubelet/node-2)``. Its exit code does not change.
``--for DURATION`` runs exactly DURATION instead.

Each session is bracketed in the log by two ``{"type":"SESSION",…}`` marks
(start: revision, virtual time, command line, how the session ends; end:
revision and virtual time reached), so ``k8semu replay`` can re-execute the
log exactly (``docs/replay.md``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from ..sim.cluster import DEFAULT_CLUSTER_PATH, Cluster
from ..sim.runtime import Runtime, run_cluster

__all__ = ["cluster_path", "open_cluster", "open_cluster_at", "run_session", "still_changing",
           "SETTLE_LIMIT", "SETTLE_HORIZON"]

T = TypeVar("T")

#: How long (virtual seconds) a command waits for the cluster to settle before reporting.
SETTLE_LIMIT = 600.0
#: Settled = no component has real work due within this many virtual seconds
#: (:meth:`k8semu.sim.runtime.Runtime.settle`'s horizon).
SETTLE_HORIZON = 30.0
#: At most this many lines of "still changing" in the not-settled warning.
_CHANGING_SHOWN = 8
#: Writes that are a living cluster's pulse, not a change: leases, events, a kubelet's own Node status.
_PULSE_RESOURCES = ("leases.coordination.k8s.io", "events", "events.events.k8s.io")


def cluster_path(args: argparse.Namespace) -> Path:
    """``--cluster``, else ``$K8SEMU_CLUSTER``, else ``./.k8semu/cluster.log``."""
    return Path(getattr(args, "cluster", None) or os.environ.get("K8SEMU_CLUSTER") or DEFAULT_CLUSTER_PATH)


def open_cluster(args: argparse.Namespace, *, create: bool = False, read_only: bool = False) -> Cluster:
    """Open the cluster file (creating a default cluster when ``create`` and it is missing).

    Raises:
        FileNotFoundError: no cluster there and ``create`` is False.
        LogFormatError: the file is damaged.
    """
    path = cluster_path(args)
    if not path.exists():
        if not create:
            raise FileNotFoundError(
                f'no cluster at "{path}": create one with "k8semu cluster create" or "k8semu apply -f FILE"'
            )
        cluster = Cluster.create(path, kubeadm_addons=True)
        cluster.opened_as = "create"  # the session's RNG continues from the bootstrap (docs/replay.md)
        return cluster
    cluster = Cluster.open(path, read_only=read_only)
    if cluster.log.torn_line:
        print(f"warning: {path}:{cluster.log.torn_line}: dropped a torn last line (an interrupted write)",
              file=sys.stderr)
    return cluster


def open_cluster_at(args: argparse.Namespace) -> Any:
    """What the read commands' ``--at`` opens: the cluster file read-only, or the cluster as it was then.

    Without ``args.at`` this is :func:`open_cluster` (read-only); with it, a
    :class:`~k8semu.timeline.view.PastCluster` at that revision or virtual time
    (:func:`~k8semu.timeline.view.resolve_point`). A point past the end of the
    log is an error instead of quietly showing the head, as etcd refuses a read
    at a future revision (``mvcc: required revision is a future revision``).

    Raises:
        PointError (a ValueError, printed as one ``error:`` line, exit 1): a
            revision outside the log (``revision 9 is outside the log (1..8)``),
            a time after its last record (``--at 1h: the log ends at revision 8
            (virtual time 4m12s)``), a negative time, or text that is neither.
        FileNotFoundError, LogFormatError: as :func:`open_cluster`.
    """
    from ..timeline.view import PastCluster, PointError, resolve_point, time_of
    from .durations import go_duration

    cluster = open_cluster(args, read_only=True)
    at = getattr(args, "at", None)
    if at in (None, ""):
        return cluster
    try:
        log = cluster.log
        rev, t = resolve_point(log, at)
        end = time_of(log, log.revision)
        if t > end + 1e-9:  # resolve_point answers a later time with the head
            raise PointError(f"--at {at}: the log ends at revision {log.revision} "
                             f"(virtual time {go_duration(end)})")
        return PastCluster(log, rev, t)
    except BaseException:
        cluster.close()
        raise


def run_session(
    cluster: Cluster,
    body: Callable[[Runtime], Awaitable[T]],
    *,
    settle: bool = True,
    run_for: float | None = None,
    limit: float = SETTLE_LIMIT,
) -> tuple[T, bool]:
    """Run ``body(runtime)`` with every component running, then settle (or run ``run_for`` seconds).

    When settling runs out of ``limit``, a warning on stderr says so and what
    is still changing (:func:`still_changing`); the exit code is the command's.

    Returns:
        ``(body's result, settled)`` — ``settled`` is False when ``limit`` ran
        out first or, with ``run_for``, when the cluster was still changing at
        the end of the run (work due within :data:`SETTLE_HORIZON`).

    Raises:
        ValueError: a negative ``run_for`` (before anything is written).
    """
    from ..sim.components import default_factories
    from .durations import go_duration

    if run_for is not None and run_for < 0:
        raise ValueError(f'invalid duration "{go_duration(run_for)}": must not be negative')
    log = cluster.log
    mode: dict = {"settle": settle, "limit": limit} if run_for is None else {"for": run_for}
    # how the API server's RNG was seeded: "reopen" (from seed and this revision),
    # "create" (the cluster was created by this command) or "continue" (an earlier session)
    rng = "continue" if getattr(cluster, "sessions_run", 0) else getattr(cluster, "opened_as", "reopen")
    cluster.sessions_run = getattr(cluster, "sessions_run", 0) + 1
    log.mark({"type": "SESSION", "event": "start", "rev": log.revision, "t": cluster.time,
              "argv": [os.path.basename(sys.argv[0])] + list(sys.argv[1:]), "rng": rng, **mode})
    changing: list[str] = []

    async def main(rt: Runtime) -> tuple[T, bool, bool]:
        result = await body(rt)
        ok = quiet = True
        if run_for is not None:
            await rt.advance(run_for)
            wake = rt.next_wakeup()
            quiet = wake is None or wake > rt.now + SETTLE_HORIZON
        elif settle:
            ok = quiet = await rt.settle(horizon=SETTLE_HORIZON, limit=limit)
            if not ok:
                changing.extend(still_changing(rt))
        return result, ok, quiet

    result, ok, quiet = run_cluster(cluster, main, default_factories(cluster))
    log.mark({"type": "SESSION", "event": "end", "rev": log.revision, "t": cluster.time, "settled": ok})
    if not ok:
        _warn_not_settled(limit, changing)
    return result, quiet


def _warn_not_settled(limit: float, changing: list[str]) -> None:
    """The stderr warning of a session whose settling ran out of ``limit``."""
    from .durations import go_duration

    head = (f"Warning: the cluster did not settle within {go_duration(limit)} of virtual time "
            f"(the limit of a command; --for DURATION runs a fixed span instead)")
    if not changing:
        print(head, file=sys.stderr)
    elif len(changing) <= 2:
        print(f"{head}; still changing: {', '.join(changing)}", file=sys.stderr)
    else:
        print(f"{head}; still changing:", file=sys.stderr)
        for line in changing[:_CHANGING_SHOWN]:
            print(f"  {line}", file=sys.stderr)
        if len(changing) > _CHANGING_SHOWN:
            print(f"  … and {len(changing) - _CHANGING_SHOWN} more", file=sys.stderr)


def still_changing(rt: Runtime, horizon: float = SETTLE_HORIZON) -> list[str]:
    """What keeps the cluster from settling, one ``what (who)`` string each, most telling first.

    Two sources, merged per object:

    - components with real work due within ``horizon`` (what
      :meth:`~k8semu.sim.runtime.Runtime.settle` waits for): for a kubelet,
      each pod whose containers, probes or back-offs are due
      (``pod/looper (kubelet/node-2)``); a component with other work due
      (``deployment-controller``: a resync, a retry) is named only when
      nothing else is found;
    - objects written during the last ``horizon`` of virtual time
      (``pod/crasher (kubelet/node-1)``), leaving out a living cluster's pulse:
      Leases, Events, and kubelets' own Node status.

    Objects outside ``default`` carry their namespace (``pod/x -n kube-system``).
    The order is deterministic: components by name, then writes oldest first.
    """
    now = rt.now
    found: dict[str, list[str]] = {}
    busy: list[str] = []

    def note(what: str, who: str) -> None:
        whos = found.setdefault(what, [])
        if who and who not in whos:
            whos.append(who)

    for name in sorted(rt.components):
        comp = rt.components[name]
        wake = comp.next_wakeup()
        if wake is None or wake > now + horizon:
            continue
        pods = []
        for worker in (getattr(comp, "workers", None) or {}).values():
            try:
                due = [t for t, significant in worker.due_times() if significant]
                meta = worker.pod["metadata"]
            except (AttributeError, KeyError, TypeError):
                continue
            if due and min(due) <= now + horizon:
                pods.append(_object_label("pods", meta.get("namespace"), meta.get("name", "")))
        for pod in sorted(pods):
            note(pod, name)
        if not pods:
            busy.append(name)
    log = rt.cluster.log
    recent = []
    rev, floor = log.revision, max(log.compact_revision, 0)
    while rev > floor and len(recent) < 5000:  # newest first, back to the start of the window
        rec = log.record(rev)
        if rec.time < now - horizon:
            break
        recent.append(rec)
        rev -= 1
    for rec in reversed(recent):
        parts = rec.key.split("/")  # "", "registry", resource, [namespace,] name
        if len(parts) < 4 or parts[2] in _PULSE_RESOURCES:
            continue
        resource, ns, name = parts[2], (parts[3] if len(parts) > 4 else None), parts[-1]
        if resource == "nodes" and rec.actor == f"kubelet/{name}":
            continue
        note(_object_label(resource, ns, name), rec.actor)
    if not found:  # a component's own timers (a resync, a retry): named only when nothing else is
        return busy
    return [f"{what} ({', '.join(whos)})" for what, whos in found.items()]


def _object_label(resource: str, namespace: str | None, name: str) -> str:
    """``pod/web-1``, ``deployment.apps/web -n team``: kubectl's TYPE/NAME (+ ``-n NS`` outside default)."""
    from ..api.resources import by_resource
    from .output import display_name

    plural, _, group = resource.partition(".")
    info = by_resource(group, plural)
    label = display_name(info, name) if info is not None else f"{resource}/{name}"
    return label if not namespace or namespace == "default" else f"{label} -n {namespace}"
