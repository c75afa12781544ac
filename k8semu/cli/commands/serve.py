"""``k8semu serve``: the cluster as a kube-apiserver that the real kubectl talks to.

One process runs every component of the cluster (as every other command
does, :func:`k8semu.sim.runtime.run_cluster`), but on a real-time clock
(``--speed`` virtual seconds per wall second) and with an HTTPS server on
127.0.0.1 (:mod:`k8semu.server`). It writes a kubeconfig (server URL, the
cluster CA, the admin bearer token) and prints ``export KUBECONFIG=…``.
Ctrl-C (SIGINT) or SIGTERM stops it: open watches end, the components stop,
and the log is closed with every acknowledged write in it (the log flushes
each write before the API answers).

The server holds the cluster's writer lock for its whole life
(:func:`k8semu.cli.session.lock_cluster`, recording its kubeconfig): a
``k8semu`` command that would write to the log meanwhile fails at once,
telling the user to use kubectl; read-only commands (``get``, ``history``,
``--at``…) work on the log as it is being written. What it serves is one
session in the log, bracketed by ``{"type":"SESSION",…,"serve":true}`` marks
(start: revision, virtual time, ``speed``; end: revision and virtual time
reached). It ran in real time, so ``k8semu replay`` cannot re-execute it;
history, diff, ``--at``, timeline and bisect read it as any other session.

Timestamps are the cluster's epoch plus its virtual time, and kubectl computes
the ages it prints (``describe``'s and ``events``' columns) against the wall
clock. So a cluster that ``serve`` creates starts its clock at the wall
clock's time, and when ``serve`` continues a cluster whose clock is behind the
wall clock (it was created by the CLI, whose clusters start at a fixed epoch
for reproducible logs, or was last served a while ago), its clock first jumps
to the wall clock: the cluster was off meanwhile, as a real one switched off
and on again. Nothing runs in the gap; as after a control-plane restart, nodes
get a full ``node-monitor-grace-period`` from then on before going Unknown.
The start mark records the jump (``"resumed_from"``). At ``--speed`` other
than 1 the cluster's clock then runs away from the wall clock again. A
cluster whose kubelets never ran (made by ``k8semu cluster create``) is first
booted at its own time, settling as any command's first session would
(:func:`boot_before_catching_up`), so its Nodes are as old as its namespaces.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import trio

from ...api.humanize import human_duration
from ..durations import parse_duration
from ..session import cluster_path, open_cluster

__all__ = ["register", "run"]

DEFAULT_KUBECONFIG = Path(".k8semu") / "kubeconfig"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the cluster's API over HTTPS for kubectl and client libraries")
    p.add_argument("--port", type=int, default=6443, help="port on 127.0.0.1 (0: any free port; default 6443)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="virtual seconds per wall second (default 1: real time)")
    p.add_argument("--kubeconfig", default=None,
                   help=f"where to write the kubeconfig (default ./{DEFAULT_KUBECONFIG})")
    p.add_argument("--insecure-http", action="store_true", help="plain HTTP instead of HTTPS (loopback only)")
    p.add_argument("--etcd-compaction-interval", default="5m", metavar="DURATION",
                   help="every DURATION of virtual time, forget (in memory) the history older than the "
                        "previous interval's revision, as kube-apiserver compacts etcd; the cluster file "
                        "keeps all of it for --at, history and replay (default 5m; 0 never compacts)")
    p.add_argument("--token-file", default=None,
                   help='more users: a kube-apiserver --token-auth-file CSV (token,user,uid,"group1,group2")')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...sim.components import default_factories
    from ...sim.runtime import run_cluster
    from ...server.pki import admin_user, kubeconfig_text, load_credentials, parse_token_file
    from ...server.run import serve_api

    if args.speed <= 0:
        raise ValueError(f"--speed must be positive, got {args.speed}")
    compaction_interval = parse_duration(args.etcd_compaction_interval)
    if compaction_interval < 0:
        raise ValueError(f"--etcd-compaction-interval must not be negative, got {args.etcd_compaction_interval}")
    tokens = {}
    if args.token_file:
        tokens.update(parse_token_file(Path(args.token_file).read_text()))
    path = cluster_path(args)
    kubeconfig = Path(args.kubeconfig or DEFAULT_KUBECONFIG).absolute()
    wall = datetime.now(timezone.utc)  # serve runs in real time: the wall clock is its input
    cluster = open_cluster(args, create=True, serve={"kubeconfig": str(kubeconfig)},
                           epoch=wall.strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        creds = load_credentials(path.parent / "pki")
    except BaseException:
        cluster.close()
        raise
    tokens[creds.admin_token] = admin_user()
    try:
        booted = boot_before_catching_up(cluster, wall)
    except BaseException:
        cluster.close()
        raise
    resumed_from = catch_up_with_wall_clock(cluster, wall)
    started_at = cluster.time  # the virtual time the session starts at (the clock runs from here)
    cluster.clock.set_speed(args.speed)
    if resumed_from is not None:
        print(f"k8semu: the cluster was off for {human_duration(started_at - resumed_from)}: its clock "
              f"jumped to the wall clock's time", file=sys.stderr)

    async def body(rt) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async def stop() -> None:
                async for _ in signals:
                    return

            async with trio.open_nursery() as background:
                if compaction_interval:
                    background.start_soon(compact_periodically, cluster.log, compaction_interval)
                async with trio.open_nursery() as nursery:
                    url = await nursery.start(lambda task_status: serve_api(
                        cluster.api, tokens, port=args.port, creds=None if args.insecure_http else creds,
                        speed=args.speed, shutdown_trigger=stop, task_status=task_status))
                    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
                    kubeconfig.write_text(kubeconfig_text(url, creds.admin_token,
                                                          None if args.insecure_http else creds.ca_cert))
                    os.chmod(kubeconfig, 0o600)
                    print(f"k8semu: serving {path} on {url} (speed {args.speed:g}x); Ctrl-C stops",
                          file=sys.stderr)
                    print(f"export KUBECONFIG={kubeconfig}", flush=True)
                background.cancel_scope.cancel()  # the server stopped

    log = cluster.log
    try:
        log.mark({"type": "SESSION", "event": "start", "rev": log.revision, "t": started_at,
                  "argv": [os.path.basename(sys.argv[0])] + list(sys.argv[1:]),
                  "rng": "continue" if booted else getattr(cluster, "opened_as", "reopen"), "serve": True,
                  "speed": args.speed,
                  **({"resumed_from": resumed_from} if resumed_from is not None else {})})
        try:
            run_cluster(cluster, body, default_factories(cluster))
        finally:
            log.mark({"type": "SESSION", "event": "end", "rev": log.revision, "t": cluster.time, "serve": True})
    finally:
        cluster.close()
    print("k8semu: stopped", file=sys.stderr)
    return 0


def boot_before_catching_up(cluster, wall: datetime) -> bool:
    """Boot a cluster whose kubelets never ran at its own time, before its clock jumps.

    ``k8semu cluster create`` makes the control plane's objects (namespaces,
    ``svc/kubernetes``…) at the cluster's epoch but runs no component, so no
    kubelet has registered its Node yet. Were ``serve`` to jump the clock
    first, every Node (and kube-system's pods) would be created at the wall
    clock's time, seconds old beside namespaces hundreds of days old — unlike a
    real cluster, whose kubelets register within seconds of its API server and
    whose Nodes keep their ``creationTimestamp`` across kubelet and machine
    restarts (the kubelet creates its Node only when it does not exist). So
    such a cluster first runs, in virtual time, until it settles, as the first
    session of any ``k8semu`` command would: an ordinary settling session in
    the log (replayable; its start mark's ``argv`` is serve's, ``"boot":
    true``). Only then does the clock catch up. Returns whether it ran.

    Nothing happens when the clock is not behind the wall clock (a cluster
    ``serve`` just created starts at the wall clock's time) or when any kubelet
    has registered before (existing Nodes keep their creation time anyway).
    """
    from ...sim.components import default_factories, kubelet_registered
    from ...sim.runtime import run_cluster
    from ..session import SETTLE_HORIZON, SETTLE_LIMIT

    behind = int((wall - (cluster.api.epoch + timedelta(seconds=cluster.time))).total_seconds())
    nodes = [n.name for n in cluster.nodes.nodes]
    if behind < 1 or not nodes or any(kubelet_registered(cluster, n) for n in nodes):
        return False
    log = cluster.log
    log.mark({"type": "SESSION", "event": "start", "rev": log.revision, "t": cluster.time,
              "argv": [os.path.basename(sys.argv[0])] + list(sys.argv[1:]),
              "rng": getattr(cluster, "opened_as", "reopen"), "settle": True, "limit": SETTLE_LIMIT,
              "boot": True})
    cluster.sessions_run = getattr(cluster, "sessions_run", 0) + 1

    async def settle(rt) -> bool:
        return await rt.settle(horizon=SETTLE_HORIZON, limit=SETTLE_LIMIT)

    ok = run_cluster(cluster, settle, default_factories(cluster))
    log.mark({"type": "SESSION", "event": "end", "rev": log.revision, "t": cluster.time, "settled": ok})
    return True


def catch_up_with_wall_clock(cluster, wall: datetime) -> float | None:
    """Jump ``cluster``'s virtual clock to ``wall`` (whole seconds) if it is behind by a
    second or more, noting the new time in :attr:`Cluster.resumed_at`; returns the
    virtual time it was at, or None (see the module docstring)."""
    behind = int((wall - (cluster.api.epoch + timedelta(seconds=cluster.time))).total_seconds())
    if behind < 1:
        return None
    was = cluster.time
    cluster.clock.jump(float(behind))
    cluster.resumed_at = cluster.time
    return was


async def compact_periodically(log, interval: float) -> None:
    """Every ``interval`` virtual seconds, compact ``log``'s memory to the revision
    seen one interval earlier, as kube-apiserver's compactor does with etcd
    (``--etcd-compaction-interval``, 5 minutes): watches and reads stay
    possible from at least one interval back, older ones get 410 Expired, and a
    long-running server's memory stops growing with its history. The file is
    not compacted (``persist=False``)."""
    previous = log.revision
    while True:
        await trio.sleep(interval)
        if previous > log.compact_revision:
            log.compact(previous, persist=False)
        previous = log.revision
