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

__all__ = ["cluster_path", "open_cluster", "run_session", "SETTLE_LIMIT"]

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
