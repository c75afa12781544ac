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
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping

from ...api import errors
from ...api.pods import is_pod_ready
from ..durations import parse_rfc3339
from ..output import die, server_error
from ..parser import GoBool, GoDuration
from ..session import open_cluster
from .get import UnknownType, no_resources_message, resolve_types

__all__ = ["register", "container_log_lines", "pod_for", "by_logging_less", "active_pods_less", "first_pod"]


def register(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("logs", help="print a container's logs (as kubectl logs)")
    lg.add_argument("target", nargs="*", metavar="POD|TYPE/NAME [CONTAINER]")
    lg.add_argument("-n", "--namespace", default="default")
    lg.add_argument("-c", "--container")
    lg.add_argument("-l", "--selector", default="", help="the pods of this label selector (10 lines each by default)")
    lg.add_argument("-p", "--previous", action=GoBool, default=False)
    lg.add_argument("-f", "--follow", action=GoBool, default=False,
                    help="accepted as kubectl's; the cluster does not run between k8semu commands, so this "
                         "prints the log up to the cluster's virtual now and returns, as kubectl -f does once "
                         "the stream ends (advance virtual time with `k8semu advance`, or follow live with "
                         "`kubectl logs -f` against `k8semu serve`)")
    lg.add_argument("--tail", type=int, default=None, help="the last N lines (default all; 10 with -l)")
    lg.add_argument("--timestamps", action=GoBool, default=False)
    lg.add_argument("--all-containers", action=GoBool, default=False, help="every container of the pods")
    lg.add_argument("--all-pods", action=GoBool, default=False,
                    help="every pod of TYPE/NAME, not one of them (implies --prefix)")
    lg.add_argument("--prefix", action=GoBool, default=False, help="begin each line with [pod/NAME/CONTAINER]")
    lg.add_argument("--since", action=GoDuration, default=0.0, metavar="DURATION",
                    help="only lines written in the last DURATION of virtual time")
    lg.add_argument("--since-time", default="", metavar="RFC3339", help="only lines written at or after this time")
    lg.add_argument("--limit-bytes", type=int, default=0, help="at most this many bytes of each log")
    lg.add_argument("--ignore-errors", action=GoBool, default=False,
                    help="print a log's error as a line and go on with the next one")
    lg.add_argument("--max-log-requests", type=int, default=5,
                    help="with -f: the most logs followed at once (default 5)")
    lg.add_argument("--pod-running-timeout", action=GoDuration, default=20.0, metavar="DURATION",
                    help="accepted as kubectl's: the cluster does not run while logs reads it, so nothing waits")
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
    if api is not None:
        from ...node.podnetwork import PastNetwork

        run.network = PastNetwork(api, pod, run)  # its wget/curl/nslookup as the kubelet's run had them
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


#: kubectl's usage error of ``logs`` without a pod (``logsUsageErrStr``), then cobra's hint.
_USAGE = ("expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
          "POD or TYPE/NAME is a required argument for the logs command")


def _usage_error(message: str) -> int:
    """cobra's ``UsageErrorf`` as kubectl logs prints it; exit 1."""
    print(f"error: {message}\nSee 'kubectl logs -h' for help and examples", file=sys.stderr)
    return 1


def all_container_names(pod: Mapping[str, Any]) -> str:
    """podcmd's ``AllContainerNames``: the containers, then ephemeral ones ``(ephem)``, then
    init ones ``(init)``, comma-separated."""
    spec = pod.get("spec") or {}
    return ", ".join([c["name"] for c in spec.get("containers") or ()]
                     + [f"{c['name']} (ephem)" for c in spec.get("ephemeralContainers") or ()]
                     + [f"{c['name']} (init)" for c in spec.get("initContainers") or ()])


def _container_specs(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return {c["name"]: c for key in ("containers", "initContainers", "ephemeralContainers")
            for c in spec.get(key) or ()}


def containers_to_read(pod: Mapping[str, Any], container: str | None, all_containers: bool) -> list[str]:
    """The containers of ``pod`` whose logs are asked for, as kubectl's ``LogsForObject``:
    every one (init, regular, ephemeral) with ``--all-containers``; else ``-c``, the
    ``kubectl.kubernetes.io/default-container`` annotation's (``Default container name "x" not
    found in pod y`` on stderr when it names none), or the first (saying ``Defaulted container
    "a" out of: a, b, c (init)`` when there are others).

    Raises:
        ValueError: ``container x is not valid for pod y``.
    """
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if all_containers:
        return [c["name"] for key in ("initContainers", "containers", "ephemeralContainers")
                for c in spec.get(key) or ()]
    specs = _container_specs(pod)
    name = container
    if not name:
        default = (meta.get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
        if default:
            if default in specs:
                name = default
            else:
                print(f'Default container name "{default}" not found in pod {meta.get("name")}', file=sys.stderr)
    if not name:
        name = (spec.get("containers") or [{}])[0].get("name", "")
        if len(spec.get("containers") or ()) > 1 or spec.get("initContainers") or spec.get("ephemeralContainers"):
            print(f'Defaulted container "{name}" out of: {all_container_names(pod)}', file=sys.stderr)
    if name not in specs:
        raise ValueError(f"container {name} is not valid for pod {meta.get('name')}")
    return [name]


def _log_query(args: argparse.Namespace, since_time: datetime | None) -> dict[str, str]:
    """The ``pods/log`` query kubectl sends for the flags (``PodLogOptions``)."""
    q: dict[str, str] = {}
    if args.follow:
        q["follow"] = "true"
    if args.previous:
        q["previous"] = "true"
    if args.timestamps:
        q["timestamps"] = "true"
    if args.since:
        q["sinceSeconds"] = str(int(args.since + (0.5 if args.since > 0 else -0.5)))  # Go's Round
    if since_time is not None:
        q["sinceTime"] = since_time.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if args.tail is None and args.selector:
        q["tailLines"] = "10"  # kubectl's default with a selector
    elif args.tail is not None and args.tail != -1:
        q["tailLines"] = str(args.tail)
    if args.limit_bytes:
        q["limitBytes"] = str(args.limit_bytes)
    return q


def read_log(api: Any, pod: Mapping[str, Any], name: str, query: Mapping[str, str], now: float) -> str:
    """The text ``GET pods/NAME/log?container=…`` answers for one container, as the API server
    and the kubelet serve it: the run the kubelet chooses, its lines (stamped with
    ``timestamps``), the last ``tailLines``, those at or after ``sinceSeconds``/``sinceTime``,
    cut at ``limitBytes``; empty for a pod not bound to a node.

    Raises:
        StatusError: the server's refusals (an invalid option, the container waiting to start,
            no previous run, the node unreachable).
    """
    from ...node.containerlogs import LimitedWriter, kubelet_log_url, log_options, log_window
    from ...sim.components import kubelet_unreachable

    epoch = api.epoch
    pod_name = pod["metadata"]["name"]
    opts = log_options(query, pod_name, now, epoch)
    if (dial := kubelet_unreachable(api, pod)) is not None:  # its machine is stopped
        params = {k: v for k, v in query.items() if k in ("follow", "previous", "timestamps", "tailLines",
                                                           "sinceSeconds", "sinceTime", "limitBytes")}
        raise errors.UnknownError(f'Get "{kubelet_log_url(pod, name, params)}": {dial}')
    window = log_window(pod, name, query.get("previous") == "true", epoch)  # the kubelet's choice of run
    if window is None:  # not bound to a node yet: the API server serves an empty log
        return ""
    start, end = window
    lines = container_log_lines(pod, _container_specs(pod)[name], start or 0.0, end if end is not None else now,
                                epoch, api)
    out = []
    for t, text in lines:
        if query.get("timestamps") == "true":
            stamp = (epoch + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{round((t % 1) * 1e9):09d}Z"
            text = f"{stamp} {text}"
        out.append((t, (text + "\n").encode()))
    return LimitedWriter(opts.limit).cut(opts.select(out)).decode("utf-8", "replace")


def _prefixed(text: str, prefix: str) -> str:
    """kubectl's prefixing writer: ``prefix`` before each line (also a last one without newline)."""
    if not prefix or not text:
        return text
    lines = text.split("\n")
    last = lines.pop()  # "" when the text ends with a newline
    return "".join(f"{prefix}{line}\n" for line in lines) + (prefix + last if last else "")


def _pods(api: Any, args: argparse.Namespace, target: str | None) -> list[dict[str, Any]] | int:
    """The pods whose logs are read (or the exit code of a failure, already printed)."""
    if args.selector:
        pods = list(api.list("pods", namespace=args.namespace, label_selector=args.selector)["items"])
        if not pods:
            print(no_resources_message(args.namespace, False), file=sys.stderr)
        return pods
    assert target is not None
    try:
        if args.all_pods and "/" in target and resolve_types(target.split("/", 1)[0])[0].kind != "Pod":
            return pods_of(api, target, args.namespace)
        return [pod_for(api, target, args.namespace, for_logs=True)]
    except UnknownType as e:
        return die(str(e))
    except errors.NotFound as e:
        # kubectl logs wraps the builder's NotFound in words of its own (lower-case "error from
        # server", the namespace appended): error: error from server (NotFound): pods "x" not
        # found in namespace "default"
        return die(f'error from server (NotFound): {e.message} in namespace "{args.namespace}"')


def pods_of(api: Any, target: str, ns: str) -> list[dict[str, Any]]:
    """``--all-pods``: every pod of the workload ``target`` names (its selector's), in the order
    kubectl sorts them for logs (:func:`by_logging_less`).

    Raises:
        StatusError: the workload does not exist; ValueError: it has no pod.
    """
    from ...api.selectors import selector_from_label_selector

    kind, name = target.split("/", 1)
    obj = api.get(resolve_types(kind)[0], name, namespace=ns)
    sel = (obj.get("spec") or {}).get("selector")
    selector = str(selector_from_label_selector(sel)) if sel and ("matchLabels" in sel or "matchExpressions" in sel) \
        else ",".join(f"{k}={v}" for k, v in sorted((sel or {}).items()))
    pods = api.list("pods", namespace=ns, label_selector=selector or None)["items"]
    if not pods:
        raise ValueError("timed out waiting for the condition")
    cmp = functools.cmp_to_key(lambda a, b: -1 if by_logging_less(a, b) else 1 if by_logging_less(b, a) else 0)
    return sorted(pods, key=cmp)


def run(args: argparse.Namespace) -> int:
    # kubectl's Complete: the arguments, the options, the pods; then Validate; then the logs
    positional = list(args.target)
    if not positional and not args.selector or len(positional) > 2:
        return _usage_error(_USAGE)
    if len(positional) == 1 and args.selector:
        return _usage_error("only a selector (-l) or a POD name is allowed")
    container = args.container
    if len(positional) == 2:
        container = positional[1]
    prefix = args.prefix or args.all_pods
    since_time = None
    if args.since_time:
        try:
            since_time = parse_rfc3339(args.since_time)
        except ValueError as e:
            return die(str(e))
    cluster = open_cluster(args, read_only=True)
    try:
        api = cluster.api
        try:
            pods = _pods(api, args, positional[0] if positional else None)
        except errors.StatusError as e:
            print(server_error(e), file=sys.stderr)
            return 1
        if isinstance(pods, int):
            return pods
        if args.since_time and args.since:
            return die("at most one of `sinceTime` or `sinceSeconds` may be specified")
        if args.all_containers and container:
            return die(f"--all-containers=true should not be specified with container name {container}")
        if args.container is not None and len(positional) == 2:
            return die("only one of -c or an inline [CONTAINER] arg is allowed")
        if args.limit_bytes < 0:
            return die("--limit-bytes must be greater than 0")
        if args.since < 0:
            return die("--since must be greater than 0")
        if args.tail is not None and args.tail < -1:
            return die("--tail must be greater than or equal to -1")
        requests: list[tuple[dict[str, Any], str]] = []
        for pod in pods:
            try:
                requests += [(pod, name) for name in containers_to_read(pod, container, args.all_containers)]
            except ValueError as e:
                return die(str(e))
        if args.follow and len(requests) > 1 and len(requests) > args.max_log_requests:
            return die(f"you are attempting to follow {len(requests)} log streams, but maximum allowed concurrency "
                       f"is {args.max_log_requests}, use --max-log-requests to increase the limit")
        query = _log_query(args, since_time)
        for pod, name in requests:
            try:
                text = read_log(api, pod, name, {**query, "container": name}, cluster.time)
            except errors.StatusError as e:
                if not args.ignore_errors:
                    print(server_error(e), file=sys.stderr)
                    return 1
                print(f"error: {e.message}")
                continue
            sys.stdout.write(_prefixed(text, f"[pod/{pod['metadata']['name']}/{name}] " if prefix else ""))
        return 0
    finally:
        cluster.close()
