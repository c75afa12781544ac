#!/usr/bin/env python
"""Benchmark time travel and replay (``k8semu.timeline``).

What it measures, on a store log (default: bench_store.py's cached
``bench/out/reopen-1000000r-100000k.log``, else the 20,000-record one):

1. ``open``: ``open_log`` (``EventLog.open(read_only=True)``) of the file — the one
   full pass; every later query uses the store's per-key index.
2. ``state``: the cluster at a random revision — ``state_at`` (an APIServer
   over a view whose head is that revision) plus one ``get`` — and a LIST of
   one namespace's pods at that revision (median of 50 / 5 random revisions).
3. ``history``: ``object_history`` of a random key (readable diffs included).
4. ``bisect``: ``bisect_log`` of a field condition over the whole log.
5. ``replay``: ``replay`` of a CLI-recorded log (apply, scale, node stop,
   advance 2m): records re-executed and verified per wall second — bound by
   the emulation itself; and the verification pass alone (compare every
   record of the big log with itself) per second.

Wall-clock timing (``time.perf_counter``) is used on purpose: this is a benchmark.
Usage: ``python bench/bench_timeline.py [--log PATH] [--markdown]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.25"}]
"""


def timed(fn, n: int = 1) -> tuple[float, object]:
    out = None
    runs = []
    for _ in range(n):
        # the previous run's result is freed before the clock starts, not inside the next run
        # (a LIST's 10,000 pods are hundreds of thousands of objects: ~10 % of the LIST's own time)
        out = None
        t = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs), out


def main() -> None:
    from k8semu.cli.main import main as k8semu
    from k8semu.timeline import object_history, open_log, replay, state_at
    from k8semu.timeline.bisect import bisect_log, parse_condition
    from k8semu.timeline.rerun import _same

    ap = argparse.ArgumentParser()
    ap.add_argument("--log")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    path = Path(a.log) if a.log else next(
        (p for p in (BENCH / "out" / "reopen-1000000r-100000k.log", BENCH / "out" / "reopen-20000r-2000k.log")
         if p.exists()), None)
    rows = []
    if path is not None:
        t_open, log = timed(lambda: open_log(path))
        rng = random.Random(7)
        head = log.revision
        keys = list(log.keys("/registry/pods/"))
        revs = [rng.randint(1, head) for _ in range(50)]
        ks = [rng.choice(keys) for _ in range(50)]

        def one_state():
            r, key = revs.pop(), ks.pop()
            api = state_at(log, r)
            ns, name = key.split("/")[3:5]
            try:
                api.get("pods", name, namespace=ns)
            except Exception:  # noqa: BLE001 - absent at that revision is fine
                pass

        t_state, _ = timed(one_state, 50)
        ns = keys[0].split("/")[3]
        t_list, _ = timed(lambda: state_at(log, rng.randint(head // 2, head)).list("pods", namespace=ns), 5)
        n_items = len(state_at(log, head).list("pods", namespace=ns)["items"])
        hist_keys = [rng.choice(keys) for _ in range(50)]
        t_hist, _ = timed(lambda: object_history(log, hist_keys.pop()), 50)
        key = rng.choice(keys)
        ns_, name = key.split("/")[3:5]
        # (resourceVersion is a string in the schema: compared as text, it holds from the key's last
        # write on, as ">=" did before conditions were checked against the schema)
        cond = parse_condition(f'pod/{name} .metadata.resourceVersion=="{log.history(key)[-1].revision}"', ns_)
        t_bisect, res = timed(lambda: bisect_log(log, cond), 5)
        recs = log.records(0)
        t_cmp, _ = timed(lambda: sum(1 for r in recs if _same(r, r)))
        rows += [
            (f"open_log ({head:,} records, {len(log):,} live keys, {path.stat().st_size >> 20} MiB)",
             f"{t_open:.1f} s", "—"),
            ("state at a random revision + get one object (median of 50)", f"{t_state * 1e3:.2f} ms", "< 100 ms"),
            (f"state at a random revision: LIST one namespace's pods ({n_items:,} items, median of 5)",
             f"{t_list * 1e3:.0f} ms", "< 100 ms"),
            ("one object's history with diffs (median of 50)", f"{t_hist * 1e3:.2f} ms", "< 50 ms"),
            (f"bisect a field condition ({res.checks} state reconstructions, median of 5)",
             f"{t_bisect * 1e3:.2f} ms", "< 5 s"),
            ("verification pass alone (compare every record)", f"{len(recs) / t_cmp:,.0f} records/s", "≥ 50,000/s"),
        ]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "web.yaml").write_text(WEB)
        c = str(Path(d) / "c.log")
        for argv in (["apply", "-f", str(Path(d) / "web.yaml"), "-q"], ["scale", "deploy", "web", "--replicas", "9"],
                     ["node", "stop", "node-1"], ["advance", "2m"]):
            k8semu(["--cluster", c, *argv])
        small = open_log(c)
        t_replay, res = timed(lambda: replay(small))
        assert res.identical, res.divergence.lines()
        rows.append((f"replay (re-execute + verify) a CLI log of {small.revision} records",
                     f"{small.revision / t_replay:,.0f} records/s ({t_replay:.2f} s)", "≥ 50,000/s"))
    width = max(len(r[0]) for r in rows)
    if a.markdown:
        print("| measurement | result | target |\n| --- | ---: | ---: |")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} |")
    else:
        for r in rows:
            print(f"{r[0]:<{width}}  {r[1]:>28}  {r[2]}")


if __name__ == "__main__":
    main()
