"""``k8semu cluster create|info|delete``: the cluster file itself.

``cluster create`` makes one control-plane node (tainted
``node-role.kubernetes.io/control-plane:NoSchedule``, so ordinary pods do not
land there) plus ``--nodes N`` workers (default 3), or the nodes of
``--config FILE``, and says so: ``cluster created: 1 control-plane node, 3
workers (".k8semu/cluster.log", seed 0)``. It runs the cluster's first virtual
instant, in which the kubelets register their Nodes, so ``get nodes`` lists them
at once (Ready), as a new kind or kubeadm cluster shows them; the system pods
start with the next command that runs the cluster.

``--storage local-path`` (or ``storage: local-path`` in the ``--config`` file; the flag
wins) makes the cluster as kind's: a default StorageClass ``standard`` and the
local-path-provisioner in ``local-path-storage``, so claims (a StatefulSet's
``volumeClaimTemplates``) get volumes; the default, ``none``, leaves it as kubeadm does,
with no StorageClass.
"""

from __future__ import annotations

import argparse

from ...sim.cluster import Cluster
from ...store.logfile import FORMAT
from ...store.snapshot import snapshot_path
from ...sim.config import ClusterConfig
from ..durations import go_duration
from ..output import die
from ..session import (PathError, run_session, check_cluster_path, cluster_label, cluster_os_error, cluster_path,
                       lock_cluster, open_cluster)


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("cluster", help="create, inspect or delete the cluster file",
                       description="create, inspect or delete the cluster file. 'cluster create' makes one "
                                   "control-plane node (tainted NoSchedule: ordinary pods do not run there) "
                                   "plus --nodes N worker nodes (default 3), or the nodes of --config FILE.")
    c.add_argument("action", choices=["create", "info", "delete"])
    c.add_argument("--seed", type=int, default=0, help="seed of the cluster's randomness (default 0)")
    c.add_argument("--nodes", type=int, metavar="N",
                   help="number of worker nodes (default 3); a control-plane node is always added, "
                        "so the cluster has N+1 nodes")
    c.add_argument("--config", help="cluster configuration file (YAML: nodes, sizes, labels, taints)")
    c.add_argument("--storage", choices=["none", "local-path"], default=None,
                   help="default StorageClass and provisioner: none (as kubeadm, the default) or local-path "
                        "(as kind: StorageClass 'standard', rancher.io/local-path)")
    c.add_argument("--bare", action="store_true",
                   help="no kubeadm addons (CoreDNS, kube-proxy DaemonSet, static pods, leader election): faster")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = cluster_path(args)
    check_cluster_path(args, path)  # a directory, a special file, a path under a file: one line, nothing made
    if args.action == "create":
        if path.exists():
            return die(f'a cluster already exists at "{path}"')
        if args.config:
            config = ClusterConfig.load(args.config)
        else:
            if args.nodes is not None and args.nodes < 0:
                return die(f"--nodes must be 0 or more (worker nodes), not {args.nodes}")
            config = ClusterConfig.default(3 if args.nodes is None else args.nodes)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = lock_cluster(path)  # ClusterBusy (serve) is main()'s one-line error
        except OSError as e:
            raise cluster_os_error(args, path, e) from None
        try:
            if path.exists():  # created while this waited for the lock
                return die(f'a cluster already exists at "{path}"')
            # a snapshot left by a log removed by hand caches another log: not this new one's
            snapshot_path(path).unlink(missing_ok=True)
            Cluster.create(path, seed=args.seed, config=config, kubeadm_addons=not args.bare,
                           storage=getattr(args, "storage", None)).close()
        except OSError as e:
            raise cluster_os_error(args, path, e) from None
        finally:
            lock.release()
        # the first instant: the kubelets register their Nodes, as a new cluster shows them
        cluster = open_cluster(args)
        try:
            async def body(rt) -> None:
                return None

            run_session(cluster, body, settle=False, run_for=0.0)
        finally:
            cluster.close()
        print(f'cluster created: {_node_counts(config.nodes)} ("{path}", seed {args.seed})')
        return 0
    if args.action == "delete":
        if not path.exists():
            return die(f'no cluster at "{path}"')
        try:
            _check_is_a_log(args, path)
            lock = lock_cluster(path)  # not while a command writes to it or serve serves it
            try:
                path.unlink()
                snapshot_path(path).unlink(missing_ok=True)  # the log's snapshot sidecar goes with it
            finally:
                lock.release()
        except OSError as e:
            raise cluster_os_error(args, path, e) from None
        print(f'cluster at "{path}" deleted')
        return 0
    cluster = open_cluster(args, read_only=True)
    log = cluster.log
    print(f"cluster:   {path}")
    print(f"seed:      {cluster.seed}")
    print(f"nodes:     {', '.join(n.name for n in cluster.nodes.nodes)}")
    print(f"revision:  {log.revision}")
    # virtual time since the cluster started, to the millisecond; after a long while (serve jumps the
    # clock to the wall clock's time) also in days, as ages are printed
    t = round(cluster.time, 3)
    print(f"time:      {go_duration(t)}" + (f" ({human_duration(t)})" if t >= 86400 else ""))
    print(f"objects:   {len(log)}")
    cluster.close()
    return 0


def _check_is_a_log(args: argparse.Namespace, path) -> None:
    """``cluster delete`` removes a k8semu log only (or an empty file), never another file
    ``--cluster`` names by mistake (``--cluster ~/.bashrc``): its first line must be a log's header.

    Raises:
        PathError: ``--cluster PATH: not a k8semu log (no "format": "k8semu-log" header): not deleted``.
        OSError: the file cannot be read.
    """
    import orjson

    with open(path, "rb") as f:
        first = f.readline(1 << 16)
    if not first:
        return
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise PathError(f'{cluster_label(args, path)}: not a k8semu log (no "format": "{FORMAT}" header): '
                        f'not deleted')


def _node_counts(nodes) -> str:
    """``1 control-plane node, 3 workers``: how many nodes of each role (both always named)."""
    planes = sum(1 for n in nodes if n.role == "control-plane")
    workers = len(nodes) - planes
    return (f"{planes} control-plane node{'s' if planes != 1 else ''}, "
            f"{workers} worker{'s' if workers != 1 else ''}")
