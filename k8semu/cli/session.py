"""Opening the cluster file and running its components for one command.

Every ``k8semu`` command is a short session: open the cluster's log (creating
a default cluster first where the command may), start every component in
virtual time (:func:`~k8semu.sim.runtime.run_cluster` with
:func:`~k8semu.sim.components.default_factories`), do the command's work as
the user ``kubernetes-admin``, let the cluster settle (or run for
``--for``), and close the log. Nothing outlives the process but the log.

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

__all__ = ["cluster_path", "open_cluster", "open_cluster_at", "run_session", "SETTLE_LIMIT"]

T = TypeVar("T")

#: How long (virtual seconds) a command waits for the cluster to settle before reporting.
SETTLE_LIMIT = 600.0


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

    Returns:
        ``(body's result, settled)`` — ``settled`` is False when ``limit`` ran out first.
    """
    from ..sim.components import default_factories

    log = cluster.log
    mode: dict = {"settle": settle, "limit": limit} if run_for is None else {"for": run_for}
    # how the API server's RNG was seeded: "reopen" (from seed and this revision),
    # "create" (the cluster was created by this command) or "continue" (an earlier session)
    rng = "continue" if getattr(cluster, "sessions_run", 0) else getattr(cluster, "opened_as", "reopen")
    cluster.sessions_run = getattr(cluster, "sessions_run", 0) + 1
    log.mark({"type": "SESSION", "event": "start", "rev": log.revision, "t": cluster.time,
              "argv": [os.path.basename(sys.argv[0])] + list(sys.argv[1:]), "rng": rng, **mode})

    async def main(rt: Runtime) -> tuple[T, bool]:
        result = await body(rt)
        ok = True
        if run_for is not None:
            await rt.advance(run_for)
        elif settle:
            ok = await rt.settle(limit=limit)
        return result, ok

    result, ok = run_cluster(cluster, main, default_factories(cluster))
    log.mark({"type": "SESSION", "event": "end", "rev": log.revision, "t": cluster.time, "settled": ok})
    return result, ok
