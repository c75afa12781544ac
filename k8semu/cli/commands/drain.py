"""``k8semu drain NODE``: kubectl drain — cordon, then evict every pod, in virtual time.

kubectl's flow (``pkg/drain`` and ``cmd/drain``):

1. cordon each node (``node/node-1 cordoned``);
2. list the pods bound to the node (``spec.nodeName=NODE``, every
   namespace, ``--pod-selector``) and run kubectl's filters in order —
   DaemonSet pods (an error without ``--ignore-daemonsets``, else skipped
   with a warning), mirror pods (skipped), pods with ``emptyDir`` volumes (an
   error without ``--delete-emptydir-data``), pods with no controller (an
   error without ``--force``); finished pods always go. Errors stop the
   drain before anything is evicted: ``error: unable to drain node "node-1"
   due to error: cannot delete DaemonSet-managed Pods (use
   --ignore-daemonsets to ignore): kube-system/x, continuing command...``,
   the pending nodes, and the error again;
3. evict each pod through ``pods/eviction`` (``evicting pod default/web-x``);
   a 429 (a PodDisruptionBudget) is retried every 5 virtual seconds,
   printing ``error when evicting pods/"web-x" -n "default" (will retry
   after 5s): Cannot evict pod as it would violate the pod's disruption
   budget.``; then each pod is polled every second until it is gone (or
   replaced by a new UID): ``pod/web-x evicted``;
4. ``node/node-1 drained``, or after ``--timeout`` ``drain did not complete
   within 30s``.

``--dry-run=client`` sends nothing: ``node/node-1 cordoned (dry run)``, the
filters as above, ``evicting pod default/web-x (dry run)`` for each pod that
would go and ``node/node-1 drained (dry run)``. ``--dry-run=server`` sends the
cordon patch and each eviction with ``dryRun=All`` (``… (server dry run)``;
a 429 is retried as above) and waits for no pod, since none goes. Either way
the log is left as it was.

Eviction attempts and polls run in pod-list order at whole virtual seconds,
so the output is reproducible (kubectl's server dry run prints its evictions
in whatever order its goroutines run). Then the cluster settles (or runs ``--for``).
Each second waited is recorded in the log
(:class:`~k8semu.timeline.rerun.ClientWaits`), so ``k8semu replay`` waits
the same way and the session replays identically.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.meta import controller_of
from ...timeline.rerun import ClientWaits
from ..durations import parse_duration
from ..output import add_dry_run_flag, dry_run_strategy, dry_run_suffix, server_error
from ..parser import GoBool
from ..session import WAIT_LIMIT
from ..targets import add_run_flags, run_write
from ..durations import go_duration
from .nodes import cordon, node_targets

DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

RETRY_SECONDS = 5


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("drain", help="cordon nodes and evict their pods (as kubectl drain)")
    d.add_argument("nodes", nargs="*", metavar="NODE")
    d.add_argument("-l", "--selector", help="label selector of the nodes")
    d.add_argument("--pod-selector", help="only pods matching this label selector")
    d.add_argument("--ignore-daemonsets", action="store_true", help="skip DaemonSet-managed pods")
    d.add_argument("--delete-emptydir-data", action="store_true", help="evict pods with emptyDir volumes")
    d.add_argument("--force", action="store_true", help="also evict pods that declare no controller")
    d.add_argument("--grace-period", type=int, default=-1, help="seconds given to each pod (-1: its own)")
    d.add_argument("--timeout", default="0s", help="give up after this long in virtual time (0: 1h)")
    d.add_argument("--disable-eviction", action=GoBool, default=False,
                   help="delete the pods instead of evicting them (PodDisruptionBudgets do not apply)")
    d.add_argument("--skip-wait-for-delete-timeout", type=int, default=0, metavar="SECONDS",
                   help="do not wait for a pod whose deletion began more than SECONDS ago")
    d.add_argument("--chunk-size", type=int, default=500,
                   help="accepted as kubectl's (list in chunks of this size); the output is the same")
    add_dry_run_flag(d)
    add_run_flags(d)
    d.set_defaults(func=run)


def _done(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_delete_status(api: Any, pod: dict[str, Any], args: argparse.Namespace) -> tuple[bool, str, str]:
    """kubectl's filter chain for one pod: ``(delete, "okay"|"skip"|"warning"|"error", message)``.

    As upstream, the chain stops at the first filter that keeps the pod, and a
    later filter's verdict replaces an earlier warning.
    """
    status = (True, "okay", "")
    for f in (_daemonset_filter, _mirror_filter, _local_storage_filter, _unreplicated_filter):
        status = f(api, pod, args)
        if not status[0]:
            break
    return status


def _daemonset_filter(api, pod, args):
    ref = controller_of(pod)
    if ref is None or ref.get("kind") != "DaemonSet" or _done(pod):
        return True, "okay", ""
    try:
        api.get("daemonsets", ref["name"], namespace=pod["metadata"]["namespace"])
    except errors.StatusError as e:
        if isinstance(e, errors.NotFound) and args.force:
            return True, "warning", e.message
        return False, "error", e.message
    if not args.ignore_daemonsets:
        return False, "error", DAEMONSET_FATAL
    return False, "warning", DAEMONSET_WARNING


def _mirror_filter(api, pod, args):
    if MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}):
        return False, "skip", ""
    return True, "okay", ""


def _local_storage_filter(api, pod, args):
    if not any("emptyDir" in v for v in (pod.get("spec") or {}).get("volumes") or ()) or _done(pod):
        return True, "okay", ""
    if not args.delete_emptydir_data:
        return False, "error", LOCAL_STORAGE_FATAL
    return True, "warning", LOCAL_STORAGE_WARNING


def _unreplicated_filter(api, pod, args):
    if _done(pod) or controller_of(pod) is not None:
        return True, "okay", ""
    if args.force:
        return True, "warning", UNMANAGED_WARNING
    return False, "error", UNMANAGED_FATAL


def _grouped(items: list[tuple[dict[str, Any], tuple[bool, str, str]]], kind: str) -> list[tuple[str, str]]:
    """(message, "ns/a, ns/b") for the statuses of ``kind``, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for pod, (_, reason, msg) in items:
        if reason == kind:
            m = pod["metadata"]
            groups.setdefault(msg or "unexpected error", []).append(f"{m['namespace']}/{m['name']}")
    return [(msg, ", ".join(pods)) for msg, pods in groups.items()]


class DrainError(Exception):
    """Why one node could not be drained; ``lines`` are the errors kubectl ends with."""

    def __init__(self, text: str, lines: list[str]) -> None:
        super().__init__(text)
        self.lines = lines


async def drain_node(api: Any, rt: Any, node: str, args: argparse.Namespace, timeout: float,
                     dry_run: str = "none") -> None:
    """Evict every pod of ``node`` as kubectl drain, printing its lines; the waits
    between polls are recorded (:class:`~k8semu.timeline.rerun.ClientWaits`).
    ``dry_run``: ``client`` evicts nothing, ``server`` evicts with ``dryRun`` and waits for no pod.

    Raises:
        DrainError: filter errors, a failed eviction, or the timeout.
    """
    listed = api.list("pods", field_selector=f"spec.nodeName={node}", label_selector=args.pod_selector or None)
    items = [(p, pod_delete_status(api, p, args)) for p in listed["items"]]
    errs = [f"cannot delete {msg}: {pods}" for msg, pods in _grouped(items, "error")]
    if errs:
        text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        raise DrainError(text, [f"error: {e}" for e in errs])
    warnings = "; ".join(f"{msg}: {pods}" for msg, pods in _grouped(items, "warning"))
    if warnings:
        print(f"Warning: {warnings}", file=sys.stderr)
    pods = [p for p, status in items if status[0]]
    suffix = dry_run_suffix(dry_run)
    if dry_run == "client":
        for pod in pods:
            print(f"evicting pod {pod['metadata']['namespace']}/{pod['metadata']['name']}{suffix}")
        return
    eviction: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction"}
    if args.grace_period >= 0:
        eviction["deleteOptions"] = {"gracePeriodSeconds": args.grace_period}
    waits = ClientWaits(rt)
    start = rt.now
    retry_at: dict[int, float] = {i: start for i in range(len(pods))}  # pods still to evict
    waiting: dict[int, str] = {}  # pods evicted, uid to wait for
    deleting = bool(getattr(args, "disable_eviction", False))
    skip_after = getattr(args, "skip_wait_for_delete_timeout", 0) or 0
    if deleting:  # kubectl's deletePods: every DELETE first, then the wait (a server dry run waits forever)
        for i, pod in enumerate(pods):
            m = pod["metadata"]
            try:
                api.delete("pods", m["name"], namespace=m["namespace"], dry_run=dry_run == "server",
                           grace_period_seconds=args.grace_period if args.grace_period >= 0 else None)
            except errors.NotFound:
                pass
            except errors.StatusError as e:
                raise DrainError(e.message, [server_error(e)]) from None
            waiting[i] = m["uid"]
        retry_at = {}
    while True:
        for i, pod in enumerate(pods):
            m = pod["metadata"]
            if i in retry_at and rt.now >= retry_at[i]:
                print(f"evicting pod {m['namespace']}/{m['name']}{suffix}")
                try:
                    api.evict(m["name"], {**eviction, "metadata": {"name": m["name"], "namespace": m["namespace"]}},
                              namespace=m["namespace"], dry_run=dry_run == "server")
                except errors.TooManyRequests as e:
                    print(f'error when evicting pods/"{m["name"]}" -n "{m["namespace"]}" (will retry after '
                          f'{RETRY_SECONDS}s): {e.message}', file=sys.stderr)
                    retry_at[i] = rt.now + RETRY_SECONDS
                    continue
                except errors.NotFound:
                    del retry_at[i]
                    continue
                except errors.StatusError as e:
                    msg = f'error when evicting pods/"{m["name"]}" -n "{m["namespace"]}": {e.message}'
                    raise DrainError(msg, [f"error: {msg}"]) from None
                del retry_at[i]
                if dry_run == "none":
                    waiting[i] = m["uid"]
            elif i in waiting:
                try:
                    now_pod = api.get("pods", m["name"], namespace=m["namespace"])
                    gone = now_pod["metadata"]["uid"] != waiting[i]
                except errors.NotFound:
                    now_pod, gone = None, True
                if gone:
                    print(f"pod/{m['name']} {'deleted' if deleting else 'evicted'}")
                    del waiting[i]
                elif skip_after > 0 and _deleting_for(api, now_pod, rt.now) > skip_after:
                    print(f'pod "{m["name"]}" has DeletionTimestamp older than {skip_after} seconds, skipping')
                    del waiting[i]
        if not retry_at and not waiting:
            return
        if rt.now - start >= timeout:
            msg = f"drain did not complete within {go_duration(timeout)}"
            left = [pods[i]["metadata"]["name"] for i in sorted({*retry_at, *waiting})]
            print(f'There are pending pods in node "{node}" when an error occurred: {msg}', file=sys.stderr)
            for name in left:
                print(f"pod/{name}", file=sys.stderr)
            raise DrainError(msg, [f"error: {msg}"])
        await waits.advance(1.0)


def _deleting_for(api: Any, pod: dict[str, Any] | None, now: float) -> float:
    """How long ``pod`` has been deleted (seconds since its ``deletionTimestamp``; -1: it is not)."""
    from ...api.meta import parse_time

    stamp = ((pod or {}).get("metadata") or {}).get("deletionTimestamp")
    return now - parse_time(api.epoch, stamp) if stamp else -1.0


def run(args: argparse.Namespace) -> int:
    timeout = parse_duration(args.timeout, allow_negative=False) or WAIT_LIMIT
    dry = dry_run_strategy(args.dry_run)
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        targets = node_targets(api, args.nodes, args.selector)
        for t in targets:
            try:
                print(cordon(api, t.name, True, dry_run=dry))
            except errors.StatusError as e:
                failures.append(server_error(e))
                return
        drained: set[str] = set()
        for t in targets:
            try:
                await drain_node(api, rt, t.name, args, timeout, dry)
            except DrainError as e:
                print(f'error: unable to drain node "{t.name}" due to error: {e}, continuing command...',
                      file=sys.stderr)
                pending = [x.name for x in targets if x.name not in drained]
                print("There are pending nodes to be drained:", file=sys.stderr)
                for name in pending:
                    print(f" {name}", file=sys.stderr)
                failures.extend(e.lines)
                return
            drained.add(t.name)
            print(f"node/{t.name} drained{dry_run_suffix(dry)}")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
