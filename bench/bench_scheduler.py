"""kube-scheduler throughput, measured the way upstream's scheduler_perf measures it.

Upstream (``test/integration/scheduler_perf``, ``config/performance-config.yaml``)
creates ``initNodes`` nodes from ``node-default.yaml`` (capacity — and so,
after API defaulting, allocatable — ``cpu: 4``, ``memory: 32Gi``,
``pods: 110``), lets the scheduler place ``initPods`` pods, then creates
``measurePods`` pods and reports SchedulingThroughput (pods bound per second)
while they are scheduled. The workloads here use upstream's pod templates:

* ``basic`` (SchedulingBasic): ``pod-default.yaml``, one container requesting
  ``100m`` cpu / ``500Mi`` memory;
* ``anti`` (SchedulingPodAntiAffinity): label ``color: green`` and a required
  pod anti-affinity term selecting ``color: green`` with topology
  ``kubernetes.io/hostname`` over namespaces ``sched-0`` (init pods) and
  ``sched-1`` (measured pods) — at most one such pod per node;
* ``spread`` (TopologySpreading): nodes labelled
  ``topology.kubernetes.io/zone`` ``moon-1/2/3``, init pods from
  ``pod-default.yaml``, measured pods labelled ``color: blue`` with a
  ``DoNotSchedule`` zone constraint (``maxSkew: 5``) selecting ``color: blue``.

Every node carries ``kubernetes.io/hostname: <name>`` as a kubelet would set it.

The core number uses the pure library, no API server: pods are added to a
:class:`~k8semu.scheduler.SchedulingQueue`; each measured cycle is ``pop`` →
:meth:`Framework.schedule_one` on :meth:`Cache.snapshot` → ``assume_pod`` →
Reserve / Permit / PreBind / Bind (the Binding object) → ``finish_binding``.
Init pods go through the same loop, untimed. The informer's later
confirmation of each binding (``Cache.add_pod``) is not part of the core loop
(upstream runs it on another goroutine); the end-to-end number includes it.

The end-to-end number (``--e2e``) runs :class:`k8semu.scheduler.scheduler.Scheduler`
against a real in-memory cluster (API server, event log, informers, events,
``pods/binding``) in virtual time and times, in wall-clock seconds, from the
creation of the first measured pod until every measured pod is bound.

Usage::

    python bench/bench_scheduler.py                      # everything, markdown tables
    python bench/bench_scheduler.py --only basic --sizes 5000x10000
    python bench/bench_scheduler.py --profile basic:5000x1000   # cProfile of the measured loop
    python bench/bench_scheduler.py --e2e-only

``--prefix N`` measures only the first N measured pods of workloads bigger than
N and extrapolates the total time from the prefix rate (reported as such).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# measure this checkout's k8semu, whatever an editable install elsewhere points at
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from k8semu.scheduler import Cache, SchedulingQueue, new_frameworks  # noqa: E402

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = ("moon-1", "moon-2", "moon-3")


# --------------------------------------------------------------------------- templates

def make_node(i: int, zone: str | None = None) -> dict[str, Any]:
    """A node as ``node-default.yaml`` (+ the hostname label, + a zone for TopologySpreading)."""
    name = f"scheduler-perf-{i:05d}"
    labels = {HOSTNAME: name}
    if zone is not None:
        labels[ZONE] = zone
    res = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"node-uid-{i}", "labels": labels},
            "spec": {},
            "status": {"capacity": dict(res), "allocatable": dict(res),
                       "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}}


def _container() -> dict[str, Any]:
    r = {"cpu": "100m", "memory": "500Mi"}
    return {"name": "pause", "image": "registry.k8s.io/pause:3.10", "ports": [{"containerPort": 80}],
            "resources": {"limits": dict(r), "requests": dict(r)}}


def pod_default(name: str, ns: str) -> dict[str, Any]:
    """``pod-default.yaml``."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"},
            "spec": {"containers": [_container()], "schedulerName": "default-scheduler", "priority": 0}}


def pod_anti_affinity(name: str, ns: str) -> dict[str, Any]:
    """``pod-with-pod-anti-affinity.yaml``."""
    p = pod_default(name, ns)
    p["metadata"]["labels"] = {"color": "green"}
    p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME,
         "namespaces": ["sched-1", "sched-0"]}]}}
    return p


def pod_topology_spreading(name: str, ns: str) -> dict[str, Any]:
    """``pod-with-topology-spreading.yaml``."""
    p = pod_default(name, ns)
    p["metadata"]["labels"] = {"color": "blue"}
    p["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"color": "blue"}}}]
    return p


@dataclass(frozen=True)
class Workload:
    name: str            # basic | anti | spread
    nodes: int
    init_pods: int
    measure_pods: int

    @property
    def label(self) -> str:
        return f"{self.name}:{self.nodes}x{self.measure_pods}"

    def node_list(self) -> list[dict[str, Any]]:
        zoned = self.name == "spread"
        return [make_node(i, ZONES[i % len(ZONES)] if zoned else None) for i in range(self.nodes)]

    def init_list(self) -> list[dict[str, Any]]:
        if self.name == "anti":
            return [pod_anti_affinity(f"init-{i}", "sched-0") for i in range(self.init_pods)]
        return [pod_default(f"init-{i}", "default") for i in range(self.init_pods)]

    def measure_list(self, n: int | None = None) -> list[dict[str, Any]]:
        n = self.measure_pods if n is None else n
        if self.name == "anti":
            return [pod_anti_affinity(f"pod-{i}", "sched-1") for i in range(n)]
        if self.name == "spread":
            return [pod_topology_spreading(f"pod-{i}", "default") for i in range(n)]
        return [pod_default(f"pod-{i}", "default") for i in range(n)]


# Init pod counts follow upstream's params where upstream has the size; anti-affinity is
# limited to one pod per node by its own rule, so its sizes are upstream's (500: 100 + 400,
# 5000: 1000 + 1000) plus the largest that fits 5,000 nodes (1000 + 4000).
WORKLOADS: dict[str, list[Workload]] = {
    "basic": [Workload("basic", 500, 500, 1000), Workload("basic", 5000, 1000, 10000),
              Workload("basic", 5000, 1000, 50000)],
    "anti": [Workload("anti", 500, 100, 400), Workload("anti", 5000, 1000, 1000),
             Workload("anti", 5000, 1000, 4000)],
    "spread": [Workload("spread", 500, 1000, 1000), Workload("spread", 5000, 5000, 10000),
               Workload("spread", 5000, 5000, 50000)],
}


# --------------------------------------------------------------------------- the core loop

class Harness:
    """Cache + queue + default framework wired as :mod:`k8semu.scheduler` documents."""

    def __init__(self, nodes: list[dict[str, Any]], seed: int = 0) -> None:
        self.cache = Cache()
        for n in nodes:
            self.cache.add_node(n)
        for ns in ("default", "sched-0", "sched-1"):
            self.cache.upsert_object({"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}})
        self.fw = new_frameworks(None)["default-scheduler"]
        self.queue = SchedulingQueue(self.fw.queue_sort_less(), self.fw.run_pre_enqueue)
        self.rng = random.Random(seed)
        self.now = 0.0
        self.placements: dict[str, str] = {}
        self.failed = 0

    def add(self, pods: list[dict[str, Any]]) -> None:
        for p in pods:
            self.queue.add(p, self.now)

    def run(self, limit: int | None = None) -> int:
        """Schedule queued pods (at most ``limit``); returns how many cycles ran."""
        cache, fw, queue, rng = self.cache, self.fw, self.queue, self.rng
        n = 0
        while limit is None or n < limit:
            qpi = queue.pop(self.now)
            if qpi is None:
                break
            n += 1
            pod = qpi.pod
            result = fw.schedule_one(pod, cache.snapshot(), rng, nominator=queue)
            host = result.suggested_host
            if host is None:
                self.failed += 1
                queue.done(pod)
                continue
            assumed = {**pod, "spec": {**pod["spec"], "nodeName": host}}
            cache.assume_pod(assumed)
            state = result.state
            for step in (fw.run_reserve, fw.run_permit, fw.run_pre_bind):
                if step(state, pod, host) is not None:
                    raise RuntimeError(f"{step.__name__} failed")
            _binding, st = fw.run_bind(state, pod, host)
            if st is not None:
                raise RuntimeError("bind failed")
            cache.finish_binding(assumed, self.now)
            queue.done(pod)
            fw.run_post_bind(state, pod, host)
            self.placements[pod["metadata"]["name"]] = host
        return n


def run_core(w: Workload, prefix: int | None = None, profile: bool = False,
             seed: int = 0) -> dict[str, Any]:
    """One run of ``w``; returns the measured numbers."""
    t0 = time.perf_counter()
    h = Harness(w.node_list(), seed)
    h.add(w.init_list())
    h.run()
    setup = time.perf_counter() - t0
    measured = w.measure_pods if prefix is None else min(prefix, w.measure_pods)
    h.add(w.measure_list(measured))
    prof = cProfile.Profile() if profile else None
    t1, c1 = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.enable()
    done = h.run()
    if prof is not None:
        prof.disable()
    elapsed = time.perf_counter() - t1
    cpu = time.process_time() - c1
    out = {"workload": w.label, "nodes": w.nodes, "init_pods": w.init_pods, "measure_pods": w.measure_pods,
           "measured": done, "failed": h.failed, "seconds": elapsed, "pods_per_s": done / elapsed,
           "cpu_seconds": cpu, "pods_per_cpu_s": done / cpu,
           "setup_seconds": setup, "extrapolated": measured < w.measure_pods}
    if out["extrapolated"]:
        out["extrapolated_total_seconds"] = w.measure_pods * elapsed / done
    if prof is not None:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
        out["profile"] = s.getvalue()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
        out["profile_cumulative"] = s.getvalue()
    return out


# --------------------------------------------------------------------------- end to end

def run_e2e(nodes: int = 500, init_pods: int = 500, measure_pods: int = 1000, seed: int = 0) -> dict[str, Any]:
    """SchedulingBasic through the API server and the Scheduler component (wall-clock timed)."""
    import trio

    from k8semu.scheduler.scheduler import Scheduler
    from k8semu.sim.cluster import Cluster
    from k8semu.sim.runtime import run_cluster

    cluster = Cluster.create(seed=seed)
    api = cluster.api
    out: dict[str, Any] = {}

    def bound(prefix: str) -> int:
        return sum(1 for p in api.list("pods", namespace="default")["items"]
                   if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName"))

    async def body(rt: Any) -> None:
        for i in range(nodes):
            n = make_node(i)
            del n["metadata"]["uid"]
            api.create("nodes", n)
        for i in range(init_pods):
            p = pod_default(f"init-{i}", "default")
            del p["metadata"]["uid"]
            api.create("pods", p, namespace="default")
        await rt.until(lambda: bound("init-") == init_pods, limit=3600)
        await trio.testing.wait_all_tasks_blocked()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(measure_pods):
            p = pod_default(f"pod-{i}", "default")
            del p["metadata"]["uid"]
            api.create("pods", p, namespace="default")
        ok = await rt.until(lambda: bound("pod-") == measure_pods, limit=3600, step=5.0)
        out["seconds"] = time.perf_counter() - t0
        out["cpu_seconds"] = time.process_time() - c0
        out["ok"] = ok

    run_cluster(cluster, body, {"default-scheduler": lambda: Scheduler(api)})
    out.update(workload=f"e2e basic:{nodes}x{measure_pods}", nodes=nodes, init_pods=init_pods,
               measure_pods=measure_pods, pods_per_s=measure_pods / out["seconds"],
               pods_per_cpu_s=measure_pods / out["cpu_seconds"])
    return out


# --------------------------------------------------------------------------- reporting

def machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem} RAM, Python {platform.python_version()}, "
            f"{platform.platform()}")


def parse_sizes(s: str | None) -> set[str] | None:
    return None if not s else set(s.split(","))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="basic,anti,spread", help="workloads: basic,anti,spread")
    ap.add_argument("--sizes", default=None, help="e.g. 500x1000,5000x10000 (nodes x measured pods)")
    ap.add_argument("--reps", type=int, default=3, help="runs per workload with ≤ 1,000 measured pods (median)")
    ap.add_argument("--big-reps", type=int, default=1, help="runs per bigger workload")
    ap.add_argument("--prefix", type=int, default=None, help="measure only the first N pods of bigger workloads")
    ap.add_argument("--profile", default=None, help="cProfile one workload, e.g. basic:5000x1000")
    ap.add_argument("--e2e", action=argparse.BooleanOptionalAction, default=True,
                    help="also the end-to-end number through the API (500 nodes)")
    ap.add_argument("--e2e-only", action="store_true")
    ap.add_argument("--json", default=None, help="write raw numbers here")
    args = ap.parse_args(argv)

    print(f"date: {datetime.date.today().isoformat()}")
    print(f"machine: {machine()}")
    print(f"command: python {' '.join(sys.argv)}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    sys.stdout.flush()

    if args.profile:
        name, size = args.profile.split(":")
        n, m = (int(x) for x in size.split("x"))
        base = next((w for w in WORKLOADS[name] if w.nodes == n), WORKLOADS[name][0])
        w = Workload(name, n, base.init_pods, m)
        r = run_core(w, profile=True)
        print(f"{w.label}: {r['pods_per_s']:.1f} pods/s (profiled, so slower)")
        print(r["profile"])
        print(r["profile_cumulative"])
        return 0

    results: list[dict[str, Any]] = []
    sizes = parse_sizes(args.sizes)
    if not args.e2e_only:
        print("\n| workload | nodes | init pods | measured pods | runs (pods/s) | median pods/s "
              "| pods per CPU-second | CPU ms/pod |")
        print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
        for name in args.only.split(","):
            for w in WORKLOADS[name]:
                if sizes is not None and f"{w.nodes}x{w.measure_pods}" not in sizes:
                    continue
                reps = args.reps if w.measure_pods <= 1000 else args.big_reps
                prefix = args.prefix if args.prefix and w.measure_pods > args.prefix else None
                runs = [run_core(w, prefix=prefix) for _ in range(reps)]
                rates = [r["pods_per_s"] for r in runs]
                med = statistics.median(rates)
                cpu_med = statistics.median(r["pods_per_cpu_s"] for r in runs)
                note = ""
                if prefix is not None:
                    tot = statistics.median(r["extrapolated_total_seconds"] for r in runs)
                    note = f" (first {prefix:,} measured; all {w.measure_pods:,} ≈ {tot:.0f} s extrapolated)"
                fails = sum(r["failed"] for r in runs)
                if fails:
                    note += f" ({fails} unschedulable)"
                print(f"| {name} | {w.nodes:,} | {w.init_pods:,} | {w.measure_pods:,}{note} | "
                      f"{', '.join(f'{x:.0f}' for x in rates)} | {med:.1f} | {cpu_med:.1f} | {1000 / cpu_med:.2f} |")
                sys.stdout.flush()
                results.append({"workload": w.label, "runs": runs, "median_pods_per_s": med,
                                "median_pods_per_cpu_s": cpu_med})
    if args.e2e or args.e2e_only:
        reps = max(1, min(args.reps, 3))
        e2e = [run_e2e() for _ in range(reps)]
        med = statistics.median(r["pods_per_s"] for r in e2e)
        cpu_med = statistics.median(r["pods_per_cpu_s"] for r in e2e)
        print(f"\nend to end (Scheduler component + API server, basic 500 nodes, 500 init + 1,000 measured): "
              f"runs {', '.join(format(r['pods_per_s'], '.0f') for r in e2e)} pods/s, median {med:.1f} pods/s, "
              f"{cpu_med:.1f} pods per CPU-second")
        results.append({"workload": "e2e", "runs": e2e, "median_pods_per_s": med})
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in r.items()} for r in results], f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
