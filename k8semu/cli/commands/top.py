"""``k8semu top pods|nodes``: emulated resource usage (kubectl top's columns).

There is no metrics-server: a container's usage is what its behaviour program
reports (``UsageChanged`` effects of :mod:`k8semu.node.behaviour`), replayed
from the container's start to now. A node's usage is the sum over its running
pods; percentages are of the node's allocatable, as kubectl computes them.
CPU prints as millicores (``5m``), memory as MiB (``12Mi``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Mapping

from ...api.humanize import parse_timestamp
from ...api.quantity import parse_quantity
from ..output import die
from ..printing import tabwrite
from ..session import open_cluster_at


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("top", help="show emulated CPU/memory usage (as kubectl top)")
    t.add_argument("what", choices=["pods", "pod", "po", "nodes", "node", "no"])
    t.add_argument("name", nargs="?")
    t.add_argument("-n", "--namespace", default="default")
    t.add_argument("-A", "--all-namespaces", action="store_true")
    t.add_argument("-l", "--selector")
    t.add_argument("--no-headers", action="store_true")
    from ...timeline.view import add_at_argument

    add_at_argument(t)
    t.set_defaults(func=run)


def pod_usage(pod: Mapping[str, Any], epoch: Any, now: float) -> tuple[int, int] | None:
    """``(cpu millicores, memory bytes)`` of a running pod now, or None when nothing runs."""
    from ...node import behaviour

    status = pod.get("status") or {}
    specs = {c["name"]: c for c in (pod.get("spec") or {}).get("containers") or ()}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    cpu = mem = 0
    running = False
    for st in status.get("containerStatuses") or ():
        started = ((st.get("state") or {}).get("running") or {}).get("startedAt")
        spec = specs.get(st.get("name"))
        if not started or spec is None:
            continue
        running = True
        t0 = (parse_timestamp(started) - epoch).total_seconds()
        try:
            run = behaviour.build_program(spec, annotations).start(t0)
        except ValueError:
            continue
        last = None
        for eff in run.advance(now):
            if type(eff).__name__ == "UsageChanged":
                last = eff
        if last is not None:
            cpu += last.cpu_millis
            mem += last.memory_bytes
    return (cpu, mem) if running else None


def _write(lines: list[list[str]]) -> None:
    # kubectl's metrics printer ends every cell, the last one included, with a tab
    sys.stdout.write(tabwrite("".join("".join(c + "\t" for c in line) + "\n" for line in lines),
                              minwidth=6, padding=3))


def run(args: argparse.Namespace) -> int:
    cluster = open_cluster_at(args)
    api, epoch, now = cluster.api, cluster.api.epoch, cluster.time
    if args.what in ("pods", "pod", "po"):
        ns = None if args.all_namespaces else args.namespace
        pods = api.list("pods", namespace=ns, label_selector=args.selector)["items"]
        if args.name:
            pods = [p for p in pods if p["metadata"]["name"] == args.name]
        rows = []
        for p in pods:
            u = pod_usage(p, epoch, now)
            if u is None:
                continue
            cells = [p["metadata"]["name"], f"{u[0]}m", f"{u[1] // (1024 * 1024)}Mi"]
            rows.append(([p["metadata"]["namespace"]] if args.all_namespaces else []) + cells)
        cluster.close()
        if not rows:
            if args.name:
                return die(f'Metrics not available for pod {args.namespace}/{args.name}, age: unknown')
            print("No resources found" if args.all_namespaces else
                  f"No resources found in {args.namespace} namespace.", file=sys.stderr)
            return 0
        header = (["NAMESPACE"] if args.all_namespaces else []) + ["NAME", "CPU(cores)", "MEMORY(bytes)"]
        _write(([] if args.no_headers else [header]) + rows)
        return 0
    nodes = api.list("nodes", label_selector=args.selector)["items"]
    if args.name:
        nodes = [n for n in nodes if n["metadata"]["name"] == args.name]
    pods = api.list("pods")["items"]
    rows = []
    for n in nodes:
        name = n["metadata"]["name"]
        cpu = mem = 0
        for p in pods:
            if (p.get("spec") or {}).get("nodeName") == name:
                u = pod_usage(p, epoch, now)
                if u:
                    cpu, mem = cpu + u[0], mem + u[1]
        alloc = (n.get("status") or {}).get("allocatable") or {}
        acpu = parse_quantity(alloc.get("cpu", "0")).milli_value()
        amem = parse_quantity(alloc.get("memory", "0")).int_value()
        rows.append([name, f"{cpu}m", f"{int(cpu / acpu * 100) if acpu else 0}%",
                     f"{mem // (1024 * 1024)}Mi", f"{int(mem / amem * 100) if amem else 0}%"])
    cluster.close()
    if not rows:
        print("No resources found", file=sys.stderr)
        return 0
    header = ["NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%"]
    _write(([] if args.no_headers else [header]) + rows)
    return 0
