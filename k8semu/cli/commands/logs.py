"""``k8semu logs``: a container's log lines, derived (the kubelet keeps no state between commands).

A container's output is a pure function of its spec and when it started: the
lines are replayed from its behaviour program
(:func:`k8semu.node.behaviour.build_program` ``(...).start(startedAt).advance(end)``,
keeping the ``LogLine`` effects), from ``state.running.startedAt`` to now, or
for ``--previous`` over ``lastState.terminated``'s run; which run is the
kubelet's choice (:func:`k8semu.node.containerlogs.log_window`: a container
waiting in ``CrashLoopBackOff`` serves its last terminated run). Errors and
messages are kubectl's (``container "x" in pod "y" is waiting to start: ContainerCreating``,
``Defaulted container "a" out of: a, b``, ``Found 2 pods, using pod/web-…``).
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import Any, Mapping

from ...api import errors
from ..output import die, server_error
from ..session import open_cluster
from .get import UnknownType, resolve_types

__all__ = ["register", "container_log_lines"]


def register(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("logs", help="print a container's logs (as kubectl logs)")
    lg.add_argument("target", metavar="POD|TYPE/NAME")
    lg.add_argument("-n", "--namespace", default="default")
    lg.add_argument("-c", "--container")
    lg.add_argument("-p", "--previous", action="store_true")
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


def pod_for(api: Any, target: str, ns: str, *, announce: bool = False) -> dict[str, Any]:
    """The pod ``target`` names: ``NAME``, ``pod/NAME`` or a workload's first pod (by name), as
    kubectl's ``AttachablePodForObject`` (for ``logs`` and ``exec``). ``announce``: say on stderr
    which of several pods was taken (``logs`` does, ``exec`` does not).

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
    pods = sorted(api.list("pods", namespace=ns, label_selector=selector or None)["items"],
                  key=lambda p: p["metadata"]["name"])
    if not pods:
        raise ValueError("timed out waiting for the condition")
    if announce and len(pods) > 1:
        print(f"Found {len(pods)} pods, using pod/{pods[0]['metadata']['name']}", file=sys.stderr)
    return pods[0]


def run(args: argparse.Namespace) -> int:
    cluster = open_cluster(args, read_only=True)
    api = cluster.api
    try:
        pod = pod_for(api, args.target, args.namespace, announce=True)
    except UnknownType as e:
        return die(str(e))
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
