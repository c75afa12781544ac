"""``k8semu logs``: a container's log lines, derived (the kubelet keeps no state between commands).

A container's output is a pure function of its spec and when it started: the
lines are replayed from its behaviour program
(:func:`k8semu.node.behaviour.build_program` ``(...).start(startedAt).advance(end)``,
keeping the ``LogLine`` effects), from ``state.running.startedAt`` to now, or
for ``--previous`` over ``lastState.terminated``'s run; which run is the
kubelet's choice (:func:`k8semu.node.containerlogs.log_window`: a container
waiting in ``CrashLoopBackOff`` serves its last terminated run). Errors and
messages are kubectl's (``container "x" in pod "y" is waiting to start: ContainerCreating``,
``Defaulted container "a" out of: a, b``, ``Found 2 pods, using pod/web-…``,
``error: error from server (NotFound): pods "x" not found in namespace "default"``
for a missing pod or workload).

``-f``/``--follow`` is accepted but cannot wait for new lines: the CLI opens the
cluster read-only and virtual time does not move while a command runs, so the
stream "ends" at the cluster's now and ``logs -f`` prints what ``logs`` prints
(the kubelet URL in the unreachable-node error carries ``follow=true``). To see
lines appear as time passes, ``k8semu serve`` answers ``kubectl logs -f``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from ...api import errors
from ...api.pods import is_pod_ready
from ..output import die, server_error
from ..session import open_cluster
from .get import UnknownType, resolve_types

__all__ = ["register", "container_log_lines", "pod_for", "by_logging_less", "active_pods_less", "first_pod"]


def register(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("logs", help="print a container's logs (as kubectl logs)")
    lg.add_argument("target", metavar="POD|TYPE/NAME")
    lg.add_argument("-n", "--namespace", default="default")
    lg.add_argument("-c", "--container")
    lg.add_argument("-p", "--previous", action="store_true")
    lg.add_argument("-f", "--follow", action="store_true",
                    help="accepted as kubectl's; the cluster does not run between k8semu commands, so this "
                         "prints the log up to the cluster's virtual now and returns, as kubectl -f does once "
                         "the stream ends (advance virtual time with `k8semu advance`, or follow live with "
                         "`kubectl logs -f` against `k8semu serve`)")
    lg.add_argument("--tail", type=int, default=-1)
    lg.add_argument("--timestamps", action="store_true")
    lg.set_defaults(func=run)


def container_log_lines(pod: Mapping[str, Any], container: Mapping[str, Any], started: float,
                        until: float, epoch: Any = None, api: Any = None) -> list[tuple[float, str]]:
    """``(virtual time, line)`` for everything ``container`` wrote between ``started`` and ``until``.

    Replays the behaviour program the kubelet's runtime runs for it (same inputs:
    the container spec, the pod's annotations and, given ``api``, the environment
    and volume contents the kubelet gave it: :func:`k8semu.node.inputs.replay_program`),
    started at ``started``.
    """
    from ...node import behaviour, inputs

    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        if api is not None:
            program = inputs.replay_program(api, pod, container, started)
        else:
            program = behaviour.build_program(container, annotations)
    except ValueError:
        return []
    wall = (lambda t: epoch + timedelta(seconds=t)) if epoch is not None else None
    run = program.start(started, wall_clock=wall)
    out = []
    for eff in run.advance(until):
        if type(eff).__name__ == "LogLine":
            out.append((eff.t, eff.text))
    return out


def _stamp(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as a datetime; None for a missing (Go's zero) time."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    """podutils' ``afterOrZero``: ``t1`` after ``t2``, a zero time being after any other."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _ready_time(pod: Mapping[str, Any]) -> datetime | None:
    """podutils' ``podReadyTime``: when the Ready condition turned True (None unless it is True)."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            return _stamp(c.get("lastTransitionTime"))
    return None


def _max_restarts(pod: Mapping[str, Any]) -> int:
    """podutils' ``maxContainerRestarts`` (the regular containers' statuses)."""
    return max((int(cs.get("restartCount") or 0) for cs in (pod.get("status") or {}).get("containerStatuses") or ()),
               default=0)


def _node(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _phase(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def _created(pod: Mapping[str, Any]) -> datetime | None:
    return _stamp((pod.get("metadata") or {}).get("creationTimestamp"))


#: podutils' phase ranks; a phase not listed ranks 0, as a missing key of a Go map does.
_BY_LOGGING_PHASE = {"Running": 0, "Unknown": 1, "Pending": 2}
_ACTIVE_PODS_PHASE = {"Pending": 0, "Unknown": 1, "Running": 2}


def by_logging_less(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """kubectl's ``podutils.ByLogging.Less``: the pod ``kubectl logs TYPE/NAME`` prefers.

    Assigned to a node before unassigned; Running before Unknown before
    Pending (any other phase ranks as Running); Ready before not; ready for
    longer first; more restarts first; older first (a missing time last).
    """
    na, nb = _node(a), _node(b)
    if na != nb and (not na or not nb):
        return bool(na)
    pa, pb = _BY_LOGGING_PHASE.get(_phase(a), 0), _BY_LOGGING_PHASE.get(_phase(b), 0)
    if pa != pb:
        return pa < pb
    ra, rb = is_pod_ready(a), is_pod_ready(b)
    if ra != rb:
        return ra
    if ra and rb and (ta := _ready_time(a)) != (tb := _ready_time(b)):
        return _after_or_zero(tb, ta)
    if (ca := _max_restarts(a)) != (cb := _max_restarts(b)):
        return ca > cb
    if (ta := _created(a)) != (tb := _created(b)):
        return _after_or_zero(tb, ta)
    return False


def active_pods_less(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """kubectl's ``podutils.ActivePods.Less`` (the pod a controller would delete first).

    Unassigned before assigned; Pending before Unknown before Running (any
    other phase ranks as Pending); not Ready before Ready; ready more recently
    first; more restarts first; newer first (a missing time first).
    """
    na, nb = _node(a), _node(b)
    if na != nb and (not na or not nb):
        return not na
    pa, pb = _ACTIVE_PODS_PHASE.get(_phase(a), 0), _ACTIVE_PODS_PHASE.get(_phase(b), 0)
    if pa != pb:
        return pa < pb
    ra, rb = is_pod_ready(a), is_pod_ready(b)
    if ra != rb:
        return not ra
    if ra and rb and (ta := _ready_time(a)) != (tb := _ready_time(b)):
        return _after_or_zero(ta, tb)
    if (ca := _max_restarts(a)) != (cb := _max_restarts(b)):
        return ca > cb
    if (ta := _created(a)) != (tb := _created(b)):
        return _after_or_zero(ta, tb)
    return False


def first_pod(pods: list[dict[str, Any]], less: Callable[[Any, Any], bool]) -> dict[str, Any]:
    """``pods`` (in the server's list order) sorted by ``less``, as ``sort.Sort``; the first.

    Go's ``sort.Sort`` is an insertion sort up to 12 elements, so ties keep the
    list order there; beyond, this keeps them too (Go's pdqsort may not).
    """
    def cmp(a: Any, b: Any) -> int:
        return -1 if less(a, b) else 1 if less(b, a) else 0

    return sorted(pods, key=functools.cmp_to_key(cmp))[0]


def pod_for(api: Any, target: str, ns: str, *, for_logs: bool = False) -> dict[str, Any]:
    """The pod ``target`` names: ``NAME``, ``pod/NAME`` or one of a workload's pods, as kubectl
    picks it for ``exec`` or, with ``for_logs``, for ``logs`` (which says on stderr which of
    several pods it took: ``Found 3 pods, using pod/web-…``).

    A workload's pods (those its selector matches, Terminating ones included)
    are sorted as kubectl's ``GetFirstPod`` sorts them: for ``logs``
    (``LogsForObject``) by :func:`by_logging_less` — a Ready, Running pod
    on a node first, ready for longest; for ``exec`` (``AttachablePodForObject``)
    by :func:`active_pods_less` reversed — assigned, Running, Ready, ready
    longest, fewest restarts, oldest.

    Raises:
        StatusError: the pod or workload does not exist; ValueError: the workload has no pod.
    """
    if "/" not in target:
        return api.get("pods", target, namespace=ns)
    kind, name = target.split("/", 1)
    info = resolve_types(kind)[0]
    if info.kind == "Pod":
        return api.get("pods", name, namespace=ns)
    from ...api.selectors import selector_from_label_selector

    obj = api.get(info, name, namespace=ns)
    sel = (obj.get("spec") or {}).get("selector")
    selector = str(selector_from_label_selector(sel)) if sel and ("matchLabels" in sel or "matchExpressions" in sel) \
        else ",".join(f"{k}={v}" for k, v in sorted((sel or {}).items()))
    pods = api.list("pods", namespace=ns, label_selector=selector or None)["items"]
    if not pods:
        raise ValueError("timed out waiting for the condition")
    if for_logs:
        pod = first_pod(pods, by_logging_less)
    else:
        pod = first_pod(pods, lambda a, b: active_pods_less(b, a))
    if for_logs and len(pods) > 1:
        print(f"Found {len(pods)} pods, using pod/{pod['metadata']['name']}", file=sys.stderr)
    return pod


def run(args: argparse.Namespace) -> int:
    cluster = open_cluster(args, read_only=True)
    api = cluster.api
    try:
        pod = pod_for(api, args.target, args.namespace, for_logs=True)
    except UnknownType as e:
        return die(str(e))
    except errors.NotFound as e:
        # kubectl logs wraps the builder's NotFound in words of its own (lower-case "error from
        # server", the namespace appended): error: error from server (NotFound): pods "x" not
        # found in namespace "default"
        return die(f'error from server (NotFound): {e.message} in namespace "{args.namespace}"')
    except errors.StatusError as e:
        print(server_error(e), file=sys.stderr)
        return 1
    meta, spec = pod["metadata"], pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    all_specs = {c["name"]: c for c in list(spec.get("initContainers") or []) + containers}
    name = args.container
    if name is None:
        default = (meta.get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
        name = default if default in all_specs else containers[0]["name"]
        if len(containers) > 1 and default not in all_specs:
            print(f'Defaulted container "{name}" out of: {", ".join(c["name"] for c in containers)}',
                  file=sys.stderr)
    pod_name = meta["name"]
    if name not in all_specs:
        print(server_error(errors.BadRequest(
            f"container {name} is not valid for pod {pod_name}")), file=sys.stderr)
        return 1
    from ...node.containerlogs import kubelet_log_url, log_window
    from ...sim.components import kubelet_unreachable

    if (dial := kubelet_unreachable(api, pod)) is not None:  # its machine is stopped
        params = {k: v for k, v in (("follow", "true" if getattr(args, "follow", False) else None),
                                    ("previous", "true" if args.previous else None),
                                    ("timestamps", "true" if getattr(args, "timestamps", False) else None),
                                    ("tailLines", getattr(args, "tail", None))) if v not in (None, -1)}
        print(server_error(errors.UnknownError(f'Get "{kubelet_log_url(pod, name, params)}": {dial}')),
              file=sys.stderr)
        return 1
    epoch = api.epoch
    now = cluster.time
    try:
        window = log_window(pod, name, args.previous, epoch)  # the kubelet's choice of run
    except errors.StatusError as e:
        print(server_error(e), file=sys.stderr)
        return 1
    if window is None:  # not bound to a node yet: the API server serves an empty log
        cluster.close()
        return 0
    start, end = window
    lines = container_log_lines(pod, all_specs[name], start or 0.0, end if end is not None else now, epoch, api)
    if args.tail >= 0:
        lines = lines[len(lines) - args.tail:] if args.tail else []
    for t, text in lines:
        if args.timestamps:
            stamp = (epoch + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{round((t % 1) * 1e9):09d}Z"
            print(f"{stamp} {text}")
        else:
            print(text)
    cluster.close()
    return 0
