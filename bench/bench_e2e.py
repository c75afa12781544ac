#!/usr/bin/env python
"""End-to-end scale benchmark: ``k8semu apply`` of many Deployments on many nodes.

Everything a user's ``apply`` runs is measured together: the API server and
its event log, the Deployment and ReplicaSet controllers, the scheduler, one
kubelet and one kube-proxy per node, the EndpointSlice/Endpoints
controllers, all in virtual time until the cluster settles.

Scenarios (the issue's sizes; every Deployment has a ClusterIP Service):

=====  =======  ===========  ========  =========
name   nodes    Deployments  replicas  pods
=====  =======  ===========  ========  =========
a      100      50           20        1,000
b      1,000    300          100       30,000
c      5,000    1,500        100       150,000
=====  =======  ===========  ========  =========

Each scenario, in fresh processes (so peak RSS is the scenario's own):

1. ``k8semu cluster create --nodes N`` (timed apart from the apply).
2. ``k8semu apply -f manifests.yaml -q`` (one generated file), with a wall
   time limit (``--limit``, default 600 s). Peak RSS is sampled from
   ``/proc/PID/status`` (``VmHWM``) while it runs. When the limit is hit the
   process is killed; the log (flushed after every append) keeps whatever
   had happened, and step 3 measures progress from it.
3. In a fresh process: ``Cluster.open`` of the resulting log (timed, with its
   peak RSS), then the count of pods Running and Ready, Deployments
   available, the log's records (revision) and bytes.

Reported: wall seconds to convergence (or to the limit), pods running per
wall second, records and bytes of log per pod, peak RSS, time to open the log,
and — when the limit was hit — a linear extrapolation of the time to run
every pod at the rate seen (optimistic if the rate falls as the cluster grows).

``--profile`` runs the apply under cProfile and prints the top functions by
own time and by cumulative time.

Usage::

    python bench/bench_e2e.py --scenarios a --markdown
    python bench/bench_e2e.py --scenarios a --profile
    python bench/bench_e2e.py --scenarios b,c --limit 600 --json bench/out/e2e.json

Wall-clock timing (``time.perf_counter``) is used on purpose: this is a
benchmark, not part of the emulator. Scratch files go to ``bench/out/e2e/``.
Never collected by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out" / "e2e"

SCENARIOS: dict[str, dict[str, int]] = {
    "a": {"nodes": 100, "deployments": 50, "replicas": 20},
    "b": {"nodes": 1000, "deployments": 300, "replicas": 100},
    "c": {"nodes": 5000, "deployments": 1500, "replicas": 100},
    # a smoke size for trying the script
    "tiny": {"nodes": 10, "deployments": 5, "replicas": 4},
    # a mid size to profile the per-node fan-out
    "m": {"nodes": 250, "deployments": 25, "replicas": 40},
}


def manifests(deployments: int, replicas: int) -> str:
    """``deployments`` Deployments (``app-0000`` …) of ``replicas`` pause pods, each with a Service."""
    docs = []
    for i in range(deployments):
        name = f"app-{i:04d}"
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: main
        image: registry.k8s.io/pause:3.10
        ports: [{{containerPort: 8080}}]
        resources:
          requests: {{cpu: 10m, memory: 16Mi}}
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector: {{app: {name}}}
  ports: [{{port: 80, targetPort: 8080}}]
""")
    return "---\n".join(docs)


def _vmhwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_measured(argv: list[str], limit: float | None) -> dict[str, Any]:
    """Run ``argv``; returns wall seconds, exit code, whether it was killed at ``limit``, peak RSS (GiB)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            v = _vmhwm_kib(proc.pid)
            if v:
                peak[0] = max(peak[0], v)
            done.wait(0.25)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    killed = False
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        v = _vmhwm_kib(proc.pid)
        if v:
            peak[0] = max(peak[0], v)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        killed = True
    wall = time.perf_counter() - started
    done.set()
    t.join()
    return {"wall": wall, "rc": proc.returncode, "killed": killed, "peak_gib": peak[0] / 2**20,
            "stdout": out, "stderr": err}


_INSPECT = r"""
import json, sys, time, resource
t = time.perf_counter()
from k8semu.sim.cluster import Cluster
c = Cluster.open(sys.argv[1], read_only=True)
open_s = time.perf_counter() - t
pods = c.api.list("pods", namespace="default")["items"]
running = ready = 0
for p in pods:
    st = p.get("status") or {}
    if st.get("phase") == "Running":
        running += 1
        if any(x.get("type") == "Ready" and x.get("status") == "True" for x in st.get("conditions") or []):
            ready += 1
deps = c.api.list("deployments", namespace="default")["items"]
avail = sum(1 for d in deps if (d.get("status") or {}).get("availableReplicas", 0) >= d["spec"]["replicas"])
slices = c.api.list("endpointslices", namespace="default")["items"]
endpoints = sum(1 for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))
print(json.dumps({"open_s": open_s, "open_peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "pods": len(pods), "running": running, "ready": ready, "deployments": len(deps),
                  "available": avail, "ready_endpoints": endpoints, "revision": c.log.revision,
                  "virtual_s": c.time}))
"""


# cProfile of the apply that survives the time limit: SIGALRM (or SIGTERM) dumps the stats and exits.
_PROFILED = r"""
import cProfile, os, signal, sys
out, limit = sys.argv[1], float(sys.argv[2])
prof = cProfile.Profile()
def stop(signum, frame):
    prof.disable()
    prof.dump_stats(out)
    os._exit(3)
signal.signal(signal.SIGALRM, stop)
signal.signal(signal.SIGTERM, stop)
signal.setitimer(signal.ITIMER_REAL, limit)
from k8semu.cli.main import main
prof.enable()
rc = main(sys.argv[3:])
prof.disable()
prof.dump_stats(out)
sys.exit(rc)
"""


def inspect(path: Path) -> dict[str, Any]:
    """Open the log in a fresh process: open time, its peak RSS, and the cluster's state."""
    r = subprocess.run([sys.executable, "-c", _INSPECT, str(path)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def scenario(name: str, limit: float, profile: bool) -> dict[str, Any]:
    s = SCENARIOS[name]
    work = OUT / name
    work.mkdir(parents=True, exist_ok=True)
    log = work / "cluster.log"
    mf = work / "manifests.yaml"
    mf.write_text(manifests(s["deployments"], s["replicas"]))
    for p in (log,):
        if p.exists():
            p.unlink()
    k8s = [sys.executable, "-m", "k8semu.cli.main", "--cluster", str(log)]
    create = run_measured(k8s + ["cluster", "create", "--nodes", str(s["nodes"])], None)
    if create["rc"] != 0:
        raise SystemExit(f"cluster create failed: {create['stderr']}")
    base = inspect(log)
    base_bytes = log.stat().st_size
    argv = k8s + ["apply", "-f", str(mf), "-q"]
    prof = work / "apply.prof"
    if profile:
        if prof.exists():
            prof.unlink()
        argv = [sys.executable, "-c", _PROFILED, str(prof), str(limit), "--cluster", str(log),
                "apply", "-f", str(mf), "-q"]
    print(f"[{name}] {s['nodes']} nodes, {s['deployments']} x {s['replicas']} pods: applying "
          f"(limit {limit:g}s{', cProfile' if profile else ''}) ...", file=sys.stderr, flush=True)
    run = run_measured(argv, limit + 60 if profile else limit)
    if profile and run["rc"] == 3:
        run["killed"] = True
    if run["rc"] not in (0, -signal.SIGKILL) and not run["killed"]:
        print(run["stderr"][-3000:], file=sys.stderr)
    state = inspect(log)
    pods = s["deployments"] * s["replicas"]
    records = state["revision"] - base["revision"]
    nbytes = log.stat().st_size - base_bytes
    rate = state["running"] / run["wall"] if run["wall"] else 0.0
    result = {
        "scenario": name, **s, "pods_total": pods,
        "create_wall_s": create["wall"],
        "apply_wall_s": run["wall"], "killed_at_limit": run["killed"], "apply_rc": run["rc"],
        "converged": state["available"] == s["deployments"] and state["ready"] == pods,
        "running": state["running"], "ready": state["ready"], "available_deployments": state["available"],
        "ready_endpoints": state["ready_endpoints"], "virtual_s": state["virtual_s"],
        "pods_per_wall_s": rate,
        "extrapolated_wall_s": (pods / rate if rate else None) if run["killed"] else None,
        "records": records, "bytes": nbytes,
        "records_per_pod": records / max(state["pods"], 1), "bytes_per_pod": nbytes / max(state["pods"], 1),
        "apply_peak_rss_gib": run["peak_gib"],
        "open_s": state["open_s"], "open_peak_rss_gib": state["open_peak_gib"],
        "stderr_tail": run["stderr"][-500:],
    }
    if profile and prof.exists():
        result["profile"] = profile_text(prof)
    print(json.dumps({k: v for k, v in result.items() if k != "profile"}), file=sys.stderr, flush=True)
    return result


def profile_text(path: Path, top: int = 25) -> str:
    import io

    buf = io.StringIO()
    st = pstats.Stats(str(path), stream=buf)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def markdown(results: list[dict[str, Any]], limit: float) -> str:
    def gib(x: float) -> str:
        return f"{x:.2f} GiB"

    lines = [
        "| scenario | nodes | pods | apply wall | converged | running | pods/s | records/pod | bytes/pod | peak RSS | open log | open RSS |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        wall = f"{r['apply_wall_s']:.1f} s" + (" (limit)" if r["killed_at_limit"] else "")
        lines.append(
            f"| {r['scenario']} | {r['nodes']:,} | {r['pods_total']:,} | {wall} | "
            f"{'yes' if r['converged'] else 'no'} | {r['running']:,} | {r['pods_per_wall_s']:.1f} | "
            f"{r['records_per_pod']:.1f} | {r['bytes_per_pod']:,.0f} | {gib(r['apply_peak_rss_gib'])} | "
            f"{r['open_s']:.2f} s | {gib(r['open_peak_rss_gib'])} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="a", help="comma-separated: a,b,c,tiny (default a)")
    ap.add_argument("--limit", type=float, default=600.0, help="wall seconds allowed per apply (default 600)")
    ap.add_argument("--profile", action="store_true", help="run the apply under cProfile")
    ap.add_argument("--size", metavar="N,D,R", help="define scenario 'custom': N nodes, D Deployments x R replicas")
    ap.add_argument("--markdown", action="store_true", help="print a results table")
    ap.add_argument("--json", help="write raw results here")
    args = ap.parse_args()
    if args.size:
        n, d, r = (int(x) for x in args.size.split(","))
        SCENARIOS["custom"] = {"nodes": n, "deployments": d, "replicas": r}
    print(f"# {platform.python_version()} on {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}",
          file=sys.stderr)
    results = [scenario(n.strip(), args.limit, args.profile) for n in args.scenarios.split(",") if n.strip()]
    for r in results:
        if "profile" in r:
            print(f"## cProfile of scenario {r['scenario']}\n{r['profile']}")
    if args.markdown:
        print(markdown(results, args.limit))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
