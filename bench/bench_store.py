#!/usr/bin/env python
"""Benchmark k8semu's event log (``k8semu.store.EventLog``) against a real etcd.

What it measures (each number is the median of ``--reps`` repetitions):

1. ``appends``: appends/s of ~1 KiB Pod-like objects — creates of distinct
   keys, then compare-and-swap updates (``expect_revision``) of the same keys —
   in memory, and to a file with ``sync`` = ``none`` / ``flush`` / ``fsync``.
2. ``range``: ``range("/registry/pods/ns-3/")`` over 100k pods in 10
   namespaces, at the head and at an old revision: reads/s and µs per item.
3. ``watch``: 100 trio tasks each iterating ``log.watch(prefix, after=...)``
   and receiving every one of N writes: deliveries/s and the time until the
   last watcher has every event.
4. ``reopen``: ``EventLog.open`` of a 1,000,000-record log file (built once
   and cached under ``bench/out/``), each open in a fresh subprocess, with the
   peak RSS of that process: the whole file read (``snapshot=False``), then
   the time to write its snapshot (``EventLog.write_snapshot``, beside it),
   then the open from that snapshot, and the first read of every live object
   it leaves in the file.
5. ``etcd``: a real ``etcd`` (Debian's etcd-server, 3.4) on 127.0.0.1 with free
   ports and a temporary data dir on the same filesystem as the log files;
   one client (``aetcd``, asyncio gRPC) makes the same puts (same keys, same
   values) sequentially while one watch receives all of them; then the same
   sequence as Kubernetes writes it (txn create-if-absent / CAS on
   mod_revision). etcd is stopped and its data dir removed in ``finally``.

Wall-clock timing (``time.perf_counter``) is used here on purpose: this is a
benchmark, not part of the emulator. The workload itself is deterministic
(fixed names, a seeded ``random.Random`` for the reopen mix).

Usage::

    python bench/bench_store.py              # full sizes (several minutes)
    python bench/bench_store.py --quick      # smoke run (well under a minute)
    python bench/bench_store.py --only appends,etcd --markdown

Never collected by the test suite (pytest's ``testpaths`` is ``tests``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime
import gc
import io
import json
import os
import platform
import pstats
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import orjson

from k8semu.store import EventLog

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
NAMESPACES = 10
ETCD_INSTALL = "apt-get install -y etcd-server"

FULL = dict(
    ops=40_000,  # appends per repetition (half creates, half CAS updates)
    fsync_ops=10_000,
    etcd_ops=40_000,  # the same sequence as `ops` (same keys, same values)
    range_objects=100_000,
    range_updates=50_000,
    range_reads=30,
    watchers=100,
    watch_writes=10_000,
    reopen_records=1_000_000,
    reopen_keys=100_000,
)
QUICK = dict(
    ops=4_000,
    fsync_ops=1_000,
    etcd_ops=4_000,
    range_objects=10_000,
    range_updates=5_000,
    range_reads=10,
    watchers=20,
    watch_writes=1_000,
    reopen_records=20_000,
    reopen_keys=2_000,
)


# ---------------------------------------------------------------------- objects
def make_pod(i: int, gen: int = 0) -> tuple[str, dict[str, Any]]:
    """A Pod-like wire object (~1 KiB of JSON) and its key; ``gen`` varies the status."""
    ns = f"ns-{i % NAMESPACES}"
    rs = f"web-{(i // NAMESPACES) % 97:02d}-6d4cf56db6"
    name = f"{rs}-{i:07d}"
    node = f"node-{i % 50}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{rs}-",
            "namespace": ns,
            "uid": f"{i:08x}-5c1e-4d2a-9b7f-{gen:012x}",
            "creationTimestamp": "2024-05-01T12:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "6d4cf56db6"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": "0b6f2a3e-8d5c-4e1f-a7b9-3c2d1e0f4a5b",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "registry.k8s.io/nginx:1.25.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"cpu": "500m", "memory": "256Mi"},
                    },
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default",
            "nodeName": node,
        },
        "status": {
            "phase": "Running" if gen else "Pending",
            "conditions": [
                {"type": "Ready", "status": "True" if gen else "False",
                 "lastTransitionTime": f"2024-05-01T12:{gen % 60:02d}:00Z"},
                {"type": "PodScheduled", "status": "True",
                 "lastTransitionTime": "2024-05-01T12:00:00Z"},
            ],
            "podIP": f"10.244.{(i // 250) % 256}.{i % 250}",
        },
    }
    return f"/registry/pods/{ns}/{name}", pod


def append_workload(n: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``n`` ops: ``n//2`` creates of distinct keys, then CAS updates of those keys in order."""
    creates = n // 2
    ops = []
    for i in range(creates):
        key, pod = make_pod(i)
        ops.append(("create", key, pod))
    for j in range(n - creates):
        key, pod = make_pod(j % creates, gen=1 + j // creates)
        ops.append(("update", key, pod))
    return ops


# ---------------------------------------------------------------------- helpers
def median(xs: list[float]) -> float:
    return statistics.median(xs)


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    etcd = shutil.which("etcd")
    etcd_version = "not installed"
    if etcd:
        out = subprocess.run([etcd, "--version"], capture_output=True, text=True).stdout
        etcd_version = out.splitlines()[0] if out else "?"
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{mem_gib:.0f} GiB",
        "python": platform.python_version(),
        "os": platform.platform(),
        "etcd": etcd_version,
    }


def fmt(x: float, unit: str = "") -> str:
    if x >= 100:
        s = f"{x:,.0f}"
    elif x >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    return s + unit


class Tmp:
    """A scratch dir under bench/out (same filesystem as the cached log), removed on exit."""

    def __enter__(self) -> Path:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="tmp-", dir=OUT_DIR))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


# ---------------------------------------------------------------------- 1. appends
def run_appends(log: EventLog, ops: list[tuple[str, str, dict[str, Any]]]) -> float:
    """Apply ``ops``; returns seconds (file closed/flushed inside the timing)."""
    revs: dict[str, int] = {}
    create, update = log.create, log.update
    t0 = time.perf_counter()
    for op, key, obj in ops:
        if op == "create":
            revs[key] = create(key, obj, "bench").revision
        else:
            revs[key] = update(key, obj, "bench", expect_revision=revs[key]).revision
    log.close()
    return time.perf_counter() - t0


def bench_appends(cfg: dict[str, int], reps: int) -> dict[str, Any]:
    """Appends/s per store mode; modes take turns within each repetition so noise hits all alike."""
    ops = append_workload(cfg["ops"])
    fsync_ops = append_workload(cfg["fsync_ops"])
    sizes = [len(orjson.dumps(o)) for _, _, o in ops]
    modes = ("memory", "none", "flush", "fsync")
    rates: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(reps):
        for mode in modes:
            work = fsync_ops if mode == "fsync" else ops
            gc.collect()
            with Tmp() as d:
                log = EventLog() if mode == "memory" else EventLog(path=d / "a.log", sync=mode)
                rates[mode].append(len(work) / run_appends(log, work))
    res: dict[str, Any] = {"obj_bytes": statistics.mean(sizes), "modes": {}}
    for mode in modes:
        n = cfg["fsync_ops"] if mode == "fsync" else cfg["ops"]
        res["modes"][mode] = {"rate": median(rates[mode]), "runs": rates[mode], "n": n}
        print(f"  appends {mode:7s}: {fmt(median(rates[mode]))}/s  "
              f"(runs: {', '.join(fmt(r) for r in rates[mode])})", flush=True)
    return res


def profile_appends(cfg: dict[str, int], mode: str = "flush", top: int = 14) -> str:
    """cProfile of the append path (``mode``), top functions by own time."""
    ops = append_workload(cfg["ops"])
    with Tmp() as d:
        log = EventLog() if mode == "memory" else EventLog(path=d / "p.log", sync=mode)
        pr = cProfile.Profile()
        pr.enable()
        run_appends(log, ops)
        pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


# ---------------------------------------------------------------------- 2. range
def bench_range(cfg: dict[str, int], reps: int) -> dict[str, Any]:
    n, upd = cfg["range_objects"], cfg["range_updates"]
    with Tmp() as d:
        # file-backed (sync none) so superseded records hold bytes only, as after a real run
        log = EventLog(path=d / "r.log", sync="none")
        for i in range(n):
            key, pod = make_pod(i)
            log.create(key, pod, "bench")
        old_rev = log.revision
        for j in range(upd):
            key, pod = make_pod(j % n, gen=1)
            log.update(key, pod, "bench")
        prefix = "/registry/pods/ns-3/"
        out: dict[str, Any] = {"objects": n, "updates": upd, "old_rev": old_rev,
                               "head_rev": log.revision}
        for label, rev in (("head", None), ("old", old_rev)):
            for decode in (False, True):
                per_rep = []
                items = 0
                for _ in range(reps):
                    gc.collect()
                    t0 = time.perf_counter()
                    for _ in range(cfg["range_reads"]):
                        recs = log.range(prefix, rev)
                        if decode:
                            for r in recs:
                                r.object
                    per_rep.append((time.perf_counter() - t0) / cfg["range_reads"])
                    items = len(recs)
                secs = median(per_rep)
                name = f"{label}{'+decode' if decode else ''}"
                out[name] = {"reads_s": 1 / secs, "us_item": secs / items * 1e6, "items": items}
                print(f"  range {name:12s}: {fmt(1 / secs)} reads/s, {secs / items * 1e6:.3f} µs/item "
                      f"({items} items)", flush=True)
        log.close()
    return out


# ---------------------------------------------------------------------- 3. watch
def bench_watch(cfg: dict[str, int], reps: int) -> dict[str, Any]:
    import trio

    nw, nwrites = cfg["watchers"], cfg["watch_writes"]
    ops = append_workload(nwrites)

    async def one(yield_each_write: bool) -> tuple[float, float]:
        log = EventLog()
        start = log.revision
        done_at: list[float] = []
        t0 = 0.0

        async def watcher() -> None:
            got = 0
            async for rec in log.watch("/registry/pods/", after=start):
                got += 1
                if got == nwrites:
                    done_at.append(time.perf_counter())
                    return

        async with trio.open_nursery() as nursery:
            for _ in range(nw):
                nursery.start_soon(watcher)
            await trio.testing.wait_all_tasks_blocked()
            revs: dict[str, int] = {}
            t0 = time.perf_counter()
            for op, key, obj in ops:
                if op == "create":
                    revs[key] = log.create(key, obj, "bench").revision
                else:
                    revs[key] = log.update(key, obj, "bench", expect_revision=revs[key]).revision
                if yield_each_write:
                    await trio.lowlevel.checkpoint()
            t_writes = time.perf_counter()
        assert len(done_at) == nw
        return max(done_at) - t0, t_writes - t0

    out: dict[str, Any] = {"watchers": nw, "writes": nwrites}
    import trio.testing  # noqa: F401

    for mode, yielding in (("per-write", True), ("burst", False)):
        totals, writes = [], []
        for _ in range(reps):
            gc.collect()
            total, w = trio.run(one, yielding)
            totals.append(total)
            writes.append(w)
        t = median(totals)
        out[mode] = {"last_watcher_s": t, "deliveries_s": nw * nwrites / t, "writes_s": median(writes)}
        print(f"  watch {mode:9s}: {fmt(nw * nwrites / t)} deliveries/s, last watcher done after "
              f"{t * 1000:.0f} ms ({nw}×{nwrites})", flush=True)
    return out


# ---------------------------------------------------------------------- 4. reopen
def reopen_path(cfg: dict[str, int]) -> Path:
    return OUT_DIR / f"reopen-{cfg['reopen_records']}r-{cfg['reopen_keys']}k.log"


def build_reopen_log(cfg: dict[str, int]) -> Path:
    """Build (once) a log of ``reopen_records`` records over ~``reopen_keys`` keys."""
    path = reopen_path(cfg)
    want = {"bench": "reopen", "records": cfg["reopen_records"], "keys": cfg["reopen_keys"], "v": 2}
    if path.exists():
        try:
            with open(path, "rb") as f:
                hdr = orjson.loads(f.readline())
            if hdr.get("seed") == want:
                return path
        except (OSError, orjson.JSONDecodeError):
            pass
        path.unlink()
    Path(str(path) + ".snap").unlink(missing_ok=True)
    print(f"  building {path.name} (cached for later runs) ...", flush=True)
    t0 = time.perf_counter()
    tmp = path.with_suffix(".partial")
    tmp.unlink(missing_ok=True)
    rng = random.Random(7)
    log = EventLog(path=tmp, header={"seed": want}, sync="none")
    nkeys = cfg["reopen_keys"]
    live: dict[int, int] = {}  # key index -> revision
    gen = 0
    for i in range(nkeys):
        key, pod = make_pod(i)
        live[i] = log.create(key, pod, "bench").revision
    dead: list[int] = []
    while log.revision < cfg["reopen_records"]:
        gen += 1
        r = rng.random()
        if r < 0.05 and dead:  # re-create a deleted key
            i = dead.pop(rng.randrange(len(dead)))
            key, pod = make_pod(i, gen)
            live[i] = log.create(key, pod, "bench").revision
        elif r < 0.10 and len(live) > nkeys // 2:  # delete
            i = rng.randrange(nkeys)
            if i in live:
                key, _ = make_pod(i)
                log.delete(key, "bench", expect_revision=live.pop(i))
                dead.append(i)
        else:  # modify
            i = rng.randrange(nkeys)
            if i in live:
                key, pod = make_pod(i, gen)
                live[i] = log.update(key, pod, "bench", expect_revision=live[i]).revision
    log.close()
    tmp.rename(path)
    print(f"  built in {time.perf_counter() - t0:.0f} s, {path.stat().st_size / 2**20:.0f} MiB", flush=True)
    return path


def _vm_hwm_kib() -> int:
    """This process's peak RSS in KiB (``VmHWM``; unlike ``ru_maxrss`` it is not carried over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reopen_child(path: str, mode: str = "full") -> None:
    """Run in a fresh process: time one open, report seconds and peak RSS as JSON.

    ``mode``: ``full`` reads the whole file (``snapshot=False``); ``write`` does that
    read-write and then times ``write_snapshot()``; ``snapshot`` opens from the
    snapshot and then also times the first read of every live object (decoded from
    the file on first use; an Event's bytes), with the collector paused as the API
    server's LISTs do: what a full open does at once, the open from the snapshot on
    demand.

    ``ru_maxrss`` (getrusage) is reported too, but on Linux it keeps the
    parent's peak across fork+exec, so it is only meaningful when larger
    than the parent's; ``VmHWM`` of the child's own address space is the
    number reported as peak RSS.
    """
    from k8semu.store import collector_paused

    base = _vm_hwm_kib()
    t0 = time.perf_counter()
    log = EventLog.open(path, read_only=mode != "write", snapshot=mode == "snapshot")
    secs = time.perf_counter() - t0
    out = {"seconds": secs, "peak_rss_kib": _vm_hwm_kib(), "base_rss_kib": base,
           "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           "revision": log.revision, "live": len(log), "snapshot_revision": log.snapshot_revision}
    if mode == "write":
        t0 = time.perf_counter()
        snap = log.write_snapshot()
        out["write_seconds"] = time.perf_counter() - t0
        out["snapshot_mib"] = snap.stat().st_size / 2**20
        out["write_peak_rss_kib"] = _vm_hwm_kib()
        log.close()
    elif mode == "snapshot":
        from k8semu.store.log import COLD_RESOURCES

        cold = tuple(f"/registry/{r}/" for r in COLD_RESOURCES)
        t0 = time.perf_counter()
        with collector_paused():  # what a full open holds: the objects, and the Events' bytes
            for rec in log._live.values():
                rec.raw() if rec.key.startswith(cold) else rec.object
        out["touch_seconds"] = time.perf_counter() - t0
        out["touch_peak_rss_kib"] = _vm_hwm_kib()
    print(json.dumps(out))


def _reopen_runs(path: Path, mode: str, reps: int) -> list[dict[str, Any]]:
    runs = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, __file__, "--_reopen-child", str(path), "--_reopen-mode", mode],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
        r = runs[-1]
        extra = ""
        if mode == "write":
            extra = f", snapshot written in {r['write_seconds']:.2f} s ({r['snapshot_mib']:.0f} MiB)"
        elif mode == "snapshot":
            extra = f", then every live object read in {r['touch_seconds']:.2f} s"
        print(f"  reopen ({mode}): {r['seconds']:.2f} s, peak RSS {r['peak_rss_kib'] / 2**20:.2f} GiB{extra}",
              flush=True)
    return runs


def bench_reopen(cfg: dict[str, int], reps: int) -> dict[str, Any]:
    path = Path(cfg["reopen_log"]) if cfg.get("reopen_log") else build_reopen_log(cfg)
    runs = _reopen_runs(path, "full", reps)
    writes = _reopen_runs(path, "write", reps)
    snaps = _reopen_runs(path, "snapshot", reps)
    if any(r["snapshot_revision"] != r["revision"] for r in snaps):
        raise SystemExit("reopen: the snapshot was not used")
    return {
        "records": runs[0]["revision"],
        "live": runs[0]["live"],
        "file_mib": path.stat().st_size / 2**20,
        "seconds": median([r["seconds"] for r in runs]),
        "runs": [r["seconds"] for r in runs],
        "peak_rss_gib": median([r["peak_rss_kib"] for r in runs]) / 2**20,
        "base_rss_mib": median([r["base_rss_kib"] for r in runs]) / 2**10,
        "ru_maxrss_gib": median([r["ru_maxrss_kib"] for r in runs]) / 2**20,
        "write_seconds": median([r["write_seconds"] for r in writes]),
        "snapshot_mib": writes[0]["snapshot_mib"],
        "snapshot_seconds": median([r["seconds"] for r in snaps]),
        "snapshot_runs": [r["seconds"] for r in snaps],
        "snapshot_peak_rss_gib": median([r["peak_rss_kib"] for r in snaps]) / 2**20,
        "touch_seconds": median([r["touch_seconds"] for r in snaps]),
        "touch_peak_rss_gib": median([r["touch_peak_rss_kib"] for r in snaps]) / 2**20,
    }


# ---------------------------------------------------------------------- 5. etcd
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EtcdServer:
    """A throwaway single-member etcd on 127.0.0.1; stopped and its data dir removed on exit."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def __enter__(self) -> "EtcdServer":
        self.dir = Path(tempfile.mkdtemp(prefix="etcd-", dir=self.base))
        self.port, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer}"
        self.log = open(self.dir / "etcd.log", "wb")
        self.proc: subprocess.Popen | None = None
        try:
            self.proc = subprocess.Popen(
                ["etcd", "--name", "bench", "--data-dir", str(self.dir / "data"),
                 "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                 "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                 "--initial-cluster", f"bench={peer_url}", "--log-level", "error"],
                stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 30
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"etcd exited ({self.proc.returncode}); see {self.dir}/etcd.log")
                try:
                    with urllib.request.urlopen(f"{client_url}/health", timeout=1) as r:
                        if json.loads(r.read()).get("health") == "true":
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("etcd did not become healthy within 30 s")
                time.sleep(0.1)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)


async def etcd_run(port: int, ops: list[tuple[str, str, dict[str, Any]]], txn: bool) -> dict[str, float]:
    """One client, sequential writes; one prefix watch that must receive all of them."""
    import aetcd

    values = [(k.encode(), orjson.dumps(o)) for _, k, o in ops]
    n = len(values)
    async with aetcd.Client(host="127.0.0.1", port=port) as client:
        watch = await client.watch_prefix(b"/registry/pods/")
        got = 0
        last_event = 0.0

        async def consume() -> None:
            nonlocal got, last_event
            async for _ev in watch:
                got += 1
                if got == n:
                    last_event = time.perf_counter()
                    return

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.2)  # let the watch register before the first put
        tx = client.transactions
        revs: dict[bytes, int] = {}
        t0 = time.perf_counter()
        if not txn:
            put = client.put
            for k, v in values:
                await put(k, v)
        else:
            for (op, _, _), (k, v) in zip(ops, values):
                cmp = tx.create(k) == 0 if op == "create" else tx.mod(k) == revs[k]
                ok, resp = await client.transaction(compare=[cmp], success=[tx.put(k, v)], failure=[])
                if not ok:
                    raise RuntimeError(f"etcd txn failed for {k!r}")
                revs[k] = resp[0].response_put.header.revision
        t_puts = time.perf_counter() - t0
        await asyncio.wait_for(task, timeout=120)
        await watch.cancel()
    return {"rate": n / t_puts, "watch_all_s": last_event - t0, "puts_s": t_puts}


def bench_etcd(cfg: dict[str, int], reps: int) -> dict[str, Any] | None:
    if shutil.which("etcd") is None:
        print(f"  etcd is not on PATH: install it with `{ETCD_INSTALL}` (skipping the etcd comparison)")
        return None
    import importlib.util

    if importlib.util.find_spec("aetcd") is None:
        print("  aetcd is not installed: `pip install -r bench/requirements.txt` (skipping etcd)")
        return None
    ops = append_workload(cfg["etcd_ops"])
    out: dict[str, Any] = {"ops": len(ops)}
    for label, txn in (("put", False), ("txn", True)):
        runs = []
        for _ in range(reps):
            with Tmp() as base, EtcdServer(base) as etcd:
                runs.append(asyncio.run(etcd_run(etcd.port, ops, txn)))
            print(f"  etcd {label}: {fmt(runs[-1]['rate'])}/s, watch had all {len(ops)} after "
                  f"{runs[-1]['watch_all_s']:.2f} s", flush=True)
        out[label] = {
            "rate": median([r["rate"] for r in runs]),
            "runs": [r["rate"] for r in runs],
            "watch_all_s": median([r["watch_all_s"] for r in runs]),
        }
    return out


# ---------------------------------------------------------------------- report
def report(res: dict[str, Any], markdown: bool) -> str:
    m = res["machine"]
    lines: list[str] = []
    add = lines.append
    ap, rg, wa, ro, et = (res.get(k) for k in ("appends", "range", "watch", "reopen", "etcd"))
    etcd_rate = et["put"]["rate"] if et else None
    if markdown:
        add("## Store (event log) vs etcd")
        add("")
        add(f"- Date: {res['date']}")
        add(f"- Command: `{res['command']}`")
        add(f"- Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM, Python {m['python']}, "
            f"{m['os']}; {m['etcd']}")
        add(f"- 1-minute load average: {res['load_start']:.2f} at start, {res['load_end']:.2f} at end "
            f"(other work on the machine makes the numbers noisy).")
        add(f"- Each number is the median of {res['reps']} repetitions ({res['etcd_reps']} for etcd, "
            f"{res['reopen_reps']} for reopen).")
        add("")
    if ap:
        if markdown:
            add(f"### Appends (~{ap['obj_bytes']:.0f}-byte Pod objects; half creates, half CAS updates)")
            add("")
            add("| store | ops/rep | appends/s | vs etcd put | target | met |")
            add("| --- | ---: | ---: | ---: | ---: | --- |")
        else:
            add(f"appends (~{ap['obj_bytes']:.0f} B objects)      ops/rep   appends/s  vs etcd put  target")
        targets = {"memory": 20, "none": 20, "flush": 2, "fsync": None}
        for mode, label in (("memory", "k8semu, in memory"), ("none", "k8semu, file, sync=none"),
                            ("flush", "k8semu, file, sync=flush"), ("fsync", "k8semu, file, sync=fsync")):
            d = ap["modes"][mode]
            ratio = d["rate"] / etcd_rate if etcd_rate else None
            tgt = targets[mode]
            rs = f"{ratio:.1f}×" if ratio else "n/a"
            ts = f"≥ {tgt}×" if tgt else "—"
            met = ("yes" if ratio >= tgt else "**no**") if (ratio and tgt) else "—"
            if markdown:
                add(f"| {label} | {d['n']:,} | {fmt(d['rate'])} | {rs} | {ts} | {met} |")
            else:
                add(f"  {label:32s} {d['n']:>8,} {fmt(d['rate']):>11} {rs:>11}  {ts} {met}")
        if et:
            for key, label in (("put", "etcd 3.4, 1 client, put"), ("txn", "etcd 3.4, 1 client, txn (create / CAS)")):
                d = et[key]
                r = d["rate"] / etcd_rate
                if markdown:
                    add(f"| {label} | {et['ops']:,} | {fmt(d['rate'])} | {r:.2f}× | — | — |")
                else:
                    add(f"  {label:32s} {et['ops']:>8,} {fmt(d['rate']):>11} {r:>10.2f}×")
            wl = (f"etcd: the one watch had all {et['ops']:,} events {et['put']['watch_all_s']:.2f} s after the "
                  f"first put (txn run: {et['txn']['watch_all_s']:.2f} s).")
            add("")
            add(wl)
        add("")
    if rg:
        if markdown:
            add(f"### Range `range(\"/registry/pods/ns-3/\")` ({rg['objects']:,} pods in {NAMESPACES} namespaces, "
                f"then {rg['updates']:,} updates; old revision = {rg['old_rev']:,}, head = {rg['head_rev']:,})")
            add("")
            add("| read | items | reads/s | µs/item |")
            add("| --- | ---: | ---: | ---: |")
        else:
            add(f"range over {rg['objects']:,} objects             items     reads/s     µs/item")
        for name, label in (("head", "at head"), ("head+decode", "at head, + .object of each"),
                            ("old", "at old revision"), ("old+decode", "at old revision, + .object of each")):
            d = rg[name]
            if markdown:
                add(f"| {label} | {d['items']:,} | {fmt(d['reads_s'])} | {d['us_item']:.3f} |")
            else:
                add(f"  {label:36s} {d['items']:>6,} {fmt(d['reads_s']):>10} {d['us_item']:>10.3f}")
        add("")
    if wa:
        if markdown:
            add(f"### Watch fan-out ({wa['watchers']} trio watchers × {wa['writes']:,} writes)")
            add("")
            add("| writer | deliveries/s | last watcher has all | writer done |")
            add("| --- | ---: | ---: | ---: |")
        else:
            add(f"watch fan-out {wa['watchers']}×{wa['writes']:,}            deliveries/s  last-watcher-done  writer-done")
        for name, label in (("per-write", "checkpoint after each write"), ("burst", "all writes, then yield")):
            d = wa[name]
            if markdown:
                add(f"| {label} | {fmt(d['deliveries_s'])} | {d['last_watcher_s'] * 1000:,.0f} ms | "
                    f"{d['writes_s'] * 1000:,.0f} ms |")
            else:
                add(f"  {label:32s} {fmt(d['deliveries_s']):>12} {d['last_watcher_s'] * 1000:>14,.0f} ms "
                    f"{d['writes_s'] * 1000:>8,.0f} ms")
        add("")
    if ro:
        ok = "yes" if ro["seconds"] < 10 else "**no**"
        if markdown:
            add("### Reopen (`EventLog.open`, fresh process each time)")
            add("")
            add("| records | live keys | file | open | target | met | peak RSS |")
            add("| ---: | ---: | ---: | --- | ---: | --- | ---: |")
            add(f"| {ro['records']:,} | {ro['live']:,} | {ro['file_mib']:,.0f} MiB | whole file: "
                f"{ro['seconds']:.2f} s | < 10 s | {ok} | {ro['peak_rss_gib']:.2f} GiB |")
            if "snapshot_seconds" in ro:
                add(f"| | | | from the snapshot ({ro['snapshot_mib']:.0f} MiB): {ro['snapshot_seconds']:.2f} s | "
                    f"< 5 s | {'yes' if ro['snapshot_seconds'] < 5 else '**no**'} | "
                    f"{ro['snapshot_peak_rss_gib']:.2f} GiB |")
                add("")
                add(f"Writing the snapshot: {ro['write_seconds']:.2f} s. After the open from it, the first read "
                    f"of every live object: {ro['touch_seconds']:.2f} s (peak RSS then "
                    f"{ro['touch_peak_rss_gib']:.2f} GiB).")
        else:
            add(f"reopen {ro['records']:,} records ({ro['file_mib']:,.0f} MiB, {ro['live']:,} live): "
                f"{ro['seconds']:.2f} s (target < 10 s: {ok}), peak RSS {ro['peak_rss_gib']:.2f} GiB "
                f"(interpreter alone {ro['base_rss_mib']:.0f} MiB)")
            if "snapshot_seconds" in ro:
                add(f"  from its snapshot ({ro['snapshot_mib']:.0f} MiB, written in {ro['write_seconds']:.2f} s): "
                    f"{ro['snapshot_seconds']:.2f} s, peak RSS {ro['snapshot_peak_rss_gib']:.2f} GiB; "
                    f"then every live object read in {ro['touch_seconds']:.2f} s "
                    f"(peak RSS {ro['touch_peak_rss_gib']:.2f} GiB)")
        add("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    p.add_argument("--reps", type=int, default=5, help="repetitions per measurement (median; ≥3)")
    p.add_argument("--etcd-reps", type=int, default=3, help="repetitions of the etcd runs (median)")
    p.add_argument("--reopen-reps", type=int, default=3, help="repetitions of the reopen (median)")
    p.add_argument("--reopen-log", type=Path,
                   help="reopen this log file instead of the generated one (its snapshot is written beside it)")
    p.add_argument("--only", default="appends,range,watch,reopen,etcd",
                   help="comma-separated subset of: appends,range,watch,reopen,etcd")
    p.add_argument("--markdown", action="store_true", help="also print the RESULTS.md section")
    p.add_argument("--profile", choices=["memory", "none", "flush", "fsync"],
                   help="print a cProfile of the append path in this mode and exit")
    p.add_argument("--json", type=Path, help="write raw results to this file")
    p.add_argument("--_reopen-child", dest="reopen_child", help=argparse.SUPPRESS)
    p.add_argument("--_reopen-mode", dest="reopen_mode", default="full", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.reopen_child:
        _reopen_child(args.reopen_child, args.reopen_mode)
        return 0
    cfg = dict(QUICK if args.quick else FULL)
    if args.reopen_log:
        cfg["reopen_log"] = str(args.reopen_log.resolve())
    if args.profile:
        print(profile_appends(cfg, args.profile))
        return 0
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {"appends", "range", "watch", "reopen", "etcd"}
    if unknown:
        p.error(f"unknown bench(es): {', '.join(sorted(unknown))}")

    res: dict[str, Any] = {
        "machine": machine_info(),
        "command": " ".join(["python", os.path.relpath(__file__)] + sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "reps": args.reps,
        "etcd_reps": args.etcd_reps,
        "reopen_reps": args.reopen_reps,
        "sizes": cfg,
    }
    res["load_start"] = os.getloadavg()[0]
    m = res["machine"]
    print(f"machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']}, Python {m['python']}, {m['etcd']}")
    print(f"command: {res['command']}", flush=True)
    steps: list[tuple[str, Callable[[dict[str, int], int], Any]]] = [
        ("etcd", bench_etcd), ("appends", bench_appends), ("range", bench_range),
        ("watch", bench_watch), ("reopen", bench_reopen),
    ]
    for name, fn in steps:
        if name in only:
            print(f"[{name}]", flush=True)
            reps = {"etcd": args.etcd_reps, "reopen": args.reopen_reps}.get(name, args.reps)
            res[name] = fn(cfg, reps)
    res["load_end"] = os.getloadavg()[0]
    print()
    print(report(res, markdown=False))
    if args.markdown:
        print("-" * 72)
        print(report(res, markdown=True))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
