"""``k8semu top pods|nodes``: what ``kubectl top`` prints, from the emulated metrics-server.

The figures are metrics-server's view of the emulated usage
(:func:`k8semu.node.metrics.scrape`, the same that ``k8semu serve`` answers
``kubectl top`` with on ``metrics.k8s.io/v1beta1``): a container's usage is
what its behaviour program reports (``UsageChanged`` effects of
:mod:`k8semu.node.behaviour`), scraped every 15 s, CPU averaged over the
window; a pod shows once its containers have run for a whole window; a node's
usage is the sum over its pods, and a node whose machine is stopped (``k8semu
node stop``: no kubelet answers the scrape) has no metrics, nor have its pods.
Percentages are of the node's allocatable, as kubectl computes them (columns
``CPU(%)`` / ``MEMORY(%)`` as kubectl 1.33 names them). CPU
prints as millicores (``5m``), memory as MiB (``12Mi``); a node without
metrics prints ``<unknown>`` in every column after its name, after the others,
as kubectl's ``printMissingMetricsNodeLine``; with no node metrics at all,
``error: metrics not available yet``; a named node without them,
``Error from server (NotFound): nodemetrics.metrics.k8s.io "NAME" not found``
(``podmetrics.metrics.k8s.io "NS/NAME"`` for a pod). When no pod has metrics,
kubectl's ``verifyEmptyMetrics``: ``error: Metrics not available for pod
NS/NAME, age: 8m20s`` for a pod older than 2 minutes, else ``error: metrics
not available yet``, and ``No resources found in NS namespace.`` without pods.

``--field-selector`` (pods) takes what metrics-server does, ``metadata.name`` and
``metadata.namespace``; any other field is its 400, ``Error from server (BadRequest):
"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"``
(as kubectl 1.33 prints it; :func:`k8semu.server.metrics.list_selectors`).

``--sort-by=cpu|memory`` (kubectl's ``PodMetricsSorter`` / ``NodeMetricsSorter``) orders the
rows by usage, largest first: CPU by millicores, memory by the metrics object's bytes; rows
with equal usage keep the default order (namespace, name), and nodes without metrics stay
last. Any other value is kubectl's ``error: --sort-by accepts only cpu or memory``; a NAME with
a selector, ``error: only one of NAME or selector can be provided`` (nodes: ``… or --selector …``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api.meta import parse_time
from ...api.quantity import parse_quantity
from ..durations import go_duration
from ..output import die
from ..parser import GoBool
from ..printing import tabwrite
from ..session import open_cluster_at
from ..targets import intermixed


_METRICS_CREATION_DELAY = 120.0  # seconds: kubectl top's metricsCreationDelay


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("top", help="show emulated CPU/memory usage (as kubectl top)")
    intermixed(t)
    t.add_argument("what", choices=["pods", "pod", "po", "nodes", "node", "no"])
    t.add_argument("name", nargs="?")
    t.add_argument("-n", "--namespace", default="default")
    t.add_argument("-A", "--all-namespaces", action="store_true")
    t.add_argument("-l", "--selector")
    t.add_argument("--no-headers", action="store_true")
    t.add_argument("--sort-by", default="", metavar="cpu|memory",
                   help="sort by usage, largest first (as kubectl top --sort-by)")
    t.add_argument("--field-selector",
                   help="pods: field selector on metadata.name / metadata.namespace (as metrics-server's)")
    t.add_argument("--containers", action=GoBool, default=False, help="pods: one line per container")
    t.add_argument("--sum", action=GoBool, default=False, help="pods: a last line with the total usage")
    t.add_argument("--show-capacity", action=GoBool, default=False,
                   help="nodes: percentages of the capacity instead of the allocatable")
    t.add_argument("--use-protocol-buffers", action=GoBool, default=True,
                   help="accepted as kubectl's (how metrics are fetched); the output is the same")
    from ...timeline.view import add_at_argument

    add_at_argument(t)
    t.set_defaults(func=run)


def _scrape(cluster: Any) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """metrics-server's node and pod metrics now (virtual time ``cluster.time``)."""
    from ...node.metrics import MetricsServer, scrape
    from ...sim.components import stopped_nodes

    api = cluster.api
    return scrape(MetricsServer(api.epoch), api.list("nodes")["items"], api.list("pods")["items"],
                  cluster.time, stopped_nodes(cluster))


def _sorted_rows(rows: list[tuple[tuple[int, int], list[str]]], sort_by: str) -> list[list[str]]:
    """The cells of ``(usage, cells)`` rows, by ``--sort-by`` (CPU millicores or memory bytes, largest
    first, as kubectl's metrics sorters compare them; a stable sort, so ties keep the given order)."""
    if sort_by:
        key = 0 if sort_by == "cpu" else 1
        rows = sorted(rows, key=lambda r: -r[0][key])
    return [cells for _, cells in rows]


def _write(lines: list[list[str]]) -> None:
    # kubectl's metrics printer ends every cell, the last one included, with a tab
    sys.stdout.write(tabwrite("".join("".join(c + "\t" for c in line) + "\n" for line in lines),
                              minwidth=6, padding=3))


def run(args: argparse.Namespace) -> int:
    sort_by = getattr(args, "sort_by", "") or ""
    if sort_by not in ("", "cpu", "memory"):  # kubectl's Validate, before anything is fetched
        return die("--sort-by accepts only cpu or memory")
    field_selector = getattr(args, "field_selector", None) or None
    pods_wanted = args.what in ("pods", "pod", "po")
    if args.name and pods_wanted and (args.selector or field_selector):  # kubectl's Validate
        return die("only one of NAME or selector can be provided")
    if args.name and not pods_wanted and args.selector:
        return die("only one of NAME or --selector can be provided")
    if field_selector and pods_wanted:
        # kubectl parses the selector, then metrics-server takes only metadata.name/metadata.namespace
        from ...api import errors
        from ...api.selectors import parse_field_selector
        from ...server.metrics import PODS, list_selectors
        from ..output import server_error

        try:
            parse_field_selector(field_selector)
        except ValueError as e:
            return die(str(e))
        try:
            list_selectors(PODS, {"fieldSelector": field_selector})
        except errors.StatusError as e:
            print(server_error(e), file=sys.stderr)
            return 1
    cluster = open_cluster_at(args)
    api = cluster.api
    if args.what in ("pods", "pod", "po"):
        ns = None if args.all_namespaces else args.namespace
        pods = api.list("pods", namespace=ns, label_selector=args.selector,
                        field_selector=field_selector)["items"]
        if args.name:
            pods = [p for p in pods if p["metadata"]["name"] == args.name]
        _, pod_metrics = _scrape(cluster)
        rows = []
        containers = getattr(args, "containers", False)
        total_cpu = total_mem = 0
        for p in pods:
            m = pod_metrics.get((p["metadata"]["namespace"], p["metadata"]["name"]))
            if m is None:
                continue
            # the PodMetrics object's quantities: nanocores, Ki
            mem = sum(c.memory_bytes // 1024 for c in m.containers) * 1024
            total_cpu, total_mem = total_cpu + m.cpu_millis, total_mem + mem
            first = [p["metadata"]["namespace"]] if args.all_namespaces else []
            if containers:  # kubectl's printContainers: one line per container, after the pod's name
                lines = [first + [p["metadata"]["name"], c.name, f"{c.cpu_millis}m",
                                  f"{(c.memory_bytes // 1024 * 1024) // (1024 * 1024)}Mi"] for c in m.containers]
            else:
                lines = [first + [p["metadata"]["name"], f"{m.cpu_millis}m", f"{mem // (1024 * 1024)}Mi"]]
            rows.append(((m.cpu_millis, mem), lines))
        rows = [line for lines in _sorted_rows(rows, sort_by) for line in lines]
        if rows and getattr(args, "sum", False):  # kubectl's printPodResourcesSum
            blank = [""] * (len(rows[0]) - 2)
            rows += [blank + ["________", "________"], blank + [f"{total_cpu}m", f"{total_mem // (1024 * 1024)}Mi"]]
        now = cluster.time
        cluster.close()
        if args.name and not rows:  # kubectl gets the one PodMetrics: metrics-server's 404s
            missing = f'pod "{args.name}"' if not pods else \
                f'podmetrics.metrics.k8s.io "{args.namespace}/{args.name}"'
            print(f"Error from server (NotFound): {missing} not found", file=sys.stderr)
            return 1
        if not rows:
            # kubectl's verifyEmptyMetrics: a pod older than 2 minutes should have had metrics by now
            for p in pods:
                age = now - parse_time(api.epoch, p["metadata"]["creationTimestamp"])
                if age > _METRICS_CREATION_DELAY:
                    meta = p["metadata"]
                    return die(f"Metrics not available for pod {meta['namespace']}/{meta['name']}, "
                               f"age: {go_duration(age)}")
            if pods:
                return die("metrics not available yet")
            print("No resources found" if args.all_namespaces else
                  f"No resources found in {args.namespace} namespace.", file=sys.stderr)
            return 0
        header = ((["NAMESPACE"] if args.all_namespaces else []) + (["POD"] if containers else [])
                  + ["NAME", "CPU(cores)", "MEMORY(bytes)"])
        _write(([] if args.no_headers else [header]) + rows)
        return 0
    nodes = api.list("nodes", label_selector=args.selector)["items"]
    if args.name:
        nodes = [n for n in nodes if n["metadata"]["name"] == args.name]
    node_metrics, _ = _scrape(cluster)
    cluster.close()
    if args.name and not nodes:
        print(f'Error from server (NotFound): node "{args.name}" not found', file=sys.stderr)
        return 1
    if args.name and args.name not in node_metrics:
        print(f'Error from server (NotFound): nodemetrics.metrics.k8s.io "{args.name}" not found', file=sys.stderr)
        return 1
    if not any(n["metadata"]["name"] in node_metrics for n in nodes):
        return die("metrics not available yet")
    rows, missing = [], []
    for n in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = n["metadata"]["name"]
        m = node_metrics.get(name)
        if m is None:  # kubectl's printMissingMetricsNodeLine, after the others
            missing.append([name] + ["<unknown>"] * 4)
            continue
        mem = m.memory_bytes // 1024 * 1024  # the NodeMetrics object's Ki
        alloc = (n.get("status") or {}).get("capacity" if getattr(args, "show_capacity", False) else "allocatable") or {}
        acpu = parse_quantity(alloc.get("cpu", "0")).milli_value()
        amem = parse_quantity(alloc.get("memory", "0")).int_value()
        rows.append(((m.cpu_millis, mem),
                     [name, f"{m.cpu_millis}m", f"{int(m.cpu_millis / acpu * 100) if acpu else 0}%",
                      f"{mem // (1024 * 1024)}Mi", f"{int(mem / amem * 100) if amem else 0}%"]))
    rows = _sorted_rows(rows, sort_by) + missing
    header = ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]  # kubectl 1.33's
    _write(([] if args.no_headers else [header]) + rows)
    return 0
