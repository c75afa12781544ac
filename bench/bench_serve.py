"""Load bench for ``k8semu serve``: request latency on loopback at a fixed request rate.

Starts ``k8semu serve`` (a fresh cluster in ``bench/out/serve/``, plain HTTP
with ``--insecure-http`` so the numbers are the server's, not TLS's; ``--https``
for serve's default HTTPS, HTTP/1.1 over TLS with the kubeconfig's CA), then
drives it open-loop: requests are due at a fixed rate (``--rate``, default
100/s) and handed to a pool of ``--clients`` keep-alive HTTP/1.1 connections
(default 50). Latency is measured from when a request was *due* to when its
response was fully read, so queueing behind a slow server counts.

Two phases of ``--seconds`` each (default 20):

* ``read``  — alternating ``GET`` of one ConfigMap and ``LIST`` of a namespace's
  50 ConfigMaps;
* ``write`` — alternating ``POST`` of a new ConfigMap and a merge ``PATCH`` of
  an existing one (every write is appended to the cluster log and flushed).

Latencies are also broken down per kind of request (``GET`` one, ``LIST``,
``POST``, ``PATCH``), since the SLO differs (1 s single-object and mutating,
5 s for a namespace ``LIST``).

``--watches N`` opens N watch streams on the namespace's ConfigMaps (from the
``resourceVersion`` of a ``LIST``) before the write phase, then checks that
every watch got every write's event exactly once and in ``resourceVersion``
order (lost / duplicated / reordered counts) and reports the delivery latency
from the write's response to the event's arrival.

``--soak SECONDS`` runs one mixed phase instead (``GET`` one, ``LIST``, merge
``PATCH``, and a ``POST``/``DELETE`` pair, so the number of live objects stays
bounded) while sampling the server's RSS (``VmRSS``) every ``--rss-every``
seconds (default 10), and reports the series and its least-squares slope in
MiB per minute over the second half of the run.

``--profile FILE`` runs the server under ``cProfile`` (stopped with SIGINT, so
the profile is written); ``--phases read`` / ``write`` runs only one phase.

Usage::

    python bench/bench_serve.py                    # 100 req/s, 50 clients, 2 x 20 s
    python bench/bench_serve.py --rate 1000 --seconds 10 --markdown
    python bench/bench_serve.py --watches 1000 --phases write --seconds 20 --markdown
    python bench/bench_serve.py --soak 600 --markdown

The HTTP client is a few lines over ``trio`` streams (no third-party client),
so its own overhead is small and the same for every request.
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from typing import Any
from array import array
from pathlib import Path

import orjson
import trio

OUT = Path(__file__).resolve().parent / "out" / "serve"
NS = "bench"
SERVER: subprocess.Popen | None = None  # the server process
TLS: ssl.SSLContext | None = None  # with --https: trusts the cluster's CA, offers HTTP/1.1 only
TLS_CA = ""  # the cluster CA (PEM), with --https / --h2
H2: "H2Conn | None" = None  # with --h2: the one multiplexed connection every worker shares
READERS: trio.Nursery | None = None  # where --h2's connection reader runs


async def connect(port: int) -> trio.abc.Stream:
    """A connection to the server on loopback (TLS with ``--https``)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    if TLS is None:
        return stream
    tls = trio.SSLStream(stream, TLS, server_hostname="127.0.0.1")
    await tls.do_handshake()
    return tls


def server_stderr() -> str:
    """The end of the server's stderr (kept in a file: a pipe nobody reads would block it when full)."""
    try:
        return (OUT / "serve.stderr").read_text(errors="replace")[-2000:]
    except OSError:
        return ""


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.stream: trio.abc.Stream | None = None
        self.buf = b""

    async def request(self, method: str, path: str, body: bytes = b"", ctype: str = "application/json",
                      *, want_body: bool = False):
        """The status code (and the body with ``want_body``)."""
        if self.stream is None:
            self.stream = await connect(self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Accept: application/json\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n")
        await self.stream.send_all(head.encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self.buf += await self._recv()
        head_b, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head_b.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        while len(self.buf) < length:
            self.buf += await self._recv()
        data, self.buf = self.buf[:length], self.buf[length:]
        return (status, data) if want_body else status

    async def _recv(self) -> bytes:
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("server closed the connection")
        return data


class H2Conn:
    """Requests multiplexed as HTTP/2 streams over one TLS connection (ALPN ``h2``), as client-go
    sends them (``--h2``); the same ``request`` as :class:`Conn`. Frames with the ``h2`` library."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.stream: trio.abc.Stream | None = None
        self.conn: Any = None
        self.lock = trio.Lock()
        self.pending: dict[int, list[Any]] = {}  # stream id -> [done event, status, body chunks]
        self.opening: trio.Event | None = None

    async def _open(self) -> None:
        import h2.config
        import h2.connection

        ctx = ssl.create_default_context(cadata=TLS_CA)
        ctx.set_alpn_protocols(["h2"])
        tcp = await trio.open_tcp_stream("127.0.0.1", self.port)
        self.stream = trio.SSLStream(tcp, ctx, server_hostname="127.0.0.1")
        await self.stream.do_handshake()
        assert self.stream.selected_alpn_protocol() == "h2", "the server did not choose h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
        self.conn.increment_flow_control_window(1 << 24)
        await self.stream.send_all(self.conn.data_to_send())

    async def reader(self) -> None:
        import h2.events

        while True:
            data = await self.stream.receive_some(65536)
            if not data:
                for entry in self.pending.values():
                    entry[0].set()
                return
            for ev in self.conn.receive_data(data):
                entry = self.pending.get(getattr(ev, "stream_id", 0))
                if isinstance(ev, h2.events.ResponseReceived) and entry:
                    entry[1] = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    if entry:
                        entry[2].append(ev.data)
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)) and entry:
                    entry[0].set()
            out = self.conn.data_to_send()
            if out:
                async with self.lock:
                    await self.stream.send_all(out)

    async def request(self, method: str, path: str, body: bytes = b"", ctype: str = "application/json",
                      *, want_body: bool = False):
        if self.opening is None:
            self.opening = trio.Event()
            await self._open()
            READERS.start_soon(self.reader)
            self.opening.set()
        await self.opening.wait()
        entry = [trio.Event(), 0, []]
        async with self.lock:
            sid = self.conn.get_next_available_stream_id()
            self.pending[sid] = entry
            self.conn.send_headers(sid, [(":method", method), (":path", path), (":scheme", "https"),
                                         (":authority", "127.0.0.1"), ("authorization", f"Bearer {self.token}"),
                                         ("accept", "application/json"), ("content-type", ctype)],
                                   end_stream=not body)
            if body:
                self.conn.send_data(sid, body, end_stream=True)
            await self.stream.send_all(self.conn.data_to_send())
        await entry[0].wait()
        del self.pending[sid]
        if not entry[1]:
            raise ConnectionError("the HTTP/2 connection closed")
        return (entry[1], b"".join(entry[2])) if want_body else entry[1]


def percentile(values, p: float) -> float:
    if not len(values):
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def stats(lat) -> dict:
    return {"requests": len(lat), "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90),
            "p99_ms": percentile(lat, 99), "max_ms": max(lat) if len(lat) else float("nan")}


def _rv(data: bytes) -> int | None:
    """The ``metadata.resourceVersion`` of a JSON object (the first one in it; enough for a ConfigMap)."""
    i = data.find(b'"resourceVersion":"')
    if i < 0:
        return None
    i += 19
    return int(data[i:data.index(b'"', i)])


async def phase(name: str, port: int, token: str, rate: float, seconds: float, clients: int,
                make_request, on_response=None) -> dict:
    """Run one open-loop phase; returns latency stats in milliseconds (overall and per kind).

    ``make_request(i)`` gives ``(method, path, body, content type[, kind])``; with
    ``on_response``, it is called as ``on_response(i, status, body, time)`` for every response.
    """
    send, recv = trio.open_memory_channel(10_000)
    lat: list[float] = []
    by_kind: dict[str, list[float]] = {}
    errors: dict[int, int] = {}

    async def worker() -> None:
        conn = H2 or Conn("127.0.0.1", port, token)
        async for due, i in recv:
            req = make_request(i)
            method, path, body, ctype = req[:4]
            kind = req[4] if len(req) > 4 else method
            try:
                if on_response is None:
                    code, data = await conn.request(method, path, body, ctype), b""
                else:
                    code, data = await conn.request(method, path, body, ctype, want_body=True)
            except (ConnectionError, OSError, trio.BrokenResourceError) as e:
                # the server closed a keep-alive connection: counted, then a new connection
                if SERVER is not None and SERVER.poll() is not None:
                    raise SystemExit(f"the server exited with {SERVER.returncode}: {server_stderr()}") from e
                conn = H2 or Conn("127.0.0.1", port, token)
                errors["conn closed"] = errors.get("conn closed", 0) + 1
                continue
            now = time.perf_counter()
            if on_response is not None:
                on_response(i, code, data, now)
            ms = (now - due) * 1000
            lat.append(ms)
            by_kind.setdefault(kind, []).append(ms)
            if code >= 300:
                errors[code] = errors.get(code, 0) + 1

    total = int(rate * seconds)
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(clients):
            nursery.start_soon(worker)
        async with send:
            for i in range(total):
                due = start + i / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    await trio.sleep(delay)
                await send.send((due, i))
    elapsed = time.perf_counter() - start
    return {"phase": name, **stats(lat), "achieved_rps": len(lat) / elapsed, "errors": errors,
            "kinds": {k: stats(v) for k, v in by_kind.items()}}


def cm(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
                         "data": {"key": "value" * 20}})


BASE = f"/api/v1/namespaces/{NS}/configmaps"


def reads(i: int):
    if i % 2:
        return "GET", f"{BASE}?limit=500", b"", "application/json", "LIST 50"
    return "GET", f"{BASE}/seed-{i % 50}", b"", "application/json", "GET one"


def writes(i: int):
    if i % 2:
        patch = orjson.dumps({"data": {"n": str(i)}})
        return "PATCH", f"{BASE}/seed-{i % 50}", patch, "application/merge-patch+json", "PATCH"
    return "POST", BASE, cm(f"w-{i}"), "application/json", "POST"


def mixed(i: int):
    """GET one, LIST, merge PATCH, then POST or DELETE of ``soak-<n % 100>`` (live objects stay bounded)."""
    k = i % 4
    if k == 0:
        return "GET", f"{BASE}/seed-{i // 4 % 50}", b"", "application/json", "GET one"
    if k == 1:
        return "GET", f"{BASE}?limit=500", b"", "application/json", "LIST 50"
    if k == 2:
        patch = orjson.dumps({"data": {"n": str(i)}})
        return "PATCH", f"{BASE}/seed-{i // 4 % 50}", patch, "application/merge-patch+json", "PATCH"
    n = i // 4
    name = f"soak-{n // 2 % 100}"
    if n % 2 == 0:
        return "POST", BASE, cm(name), "application/json", "POST"
    return "DELETE", f"{BASE}/{name}", b"", "application/json", "DELETE"


# ---------------------------------------------------------------------- watches
class WatchStream:
    """One ``?watch=true`` stream: chunked framing undone as bytes arrive, each event's
    ``resourceVersion`` and arrival time kept (a cheap scan, no JSON decoding)."""

    def __init__(self) -> None:
        self.rvs = array("q")
        self.times = array("d")
        self.types = bytearray()  # b"A"dded / b"M"odified / b"D"eleted / other
        self.raw = b""  # undecoded chunked bytes
        self.payload = b""  # decoded, up to an incomplete line
        self.established = trio.Event()
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        self.raw += data
        raw = self.raw
        pos = 0
        out = []
        while True:
            j = raw.find(b"\r\n", pos)
            if j < 0:
                break
            size = int(raw[pos:j].split(b";", 1)[0], 16)
            if len(raw) < j + 2 + size + 2:
                break
            out.append(raw[j + 2:j + 2 + size])
            pos = j + 2 + size + 2
            if size == 0:
                break
        self.raw = raw[pos:]
        if not out:
            return
        payload = self.payload + b"".join(out)
        lines = payload.split(b"\n")
        self.payload = lines.pop()
        for line in lines:
            if not line:
                continue
            rv = _rv(line)
            if rv is None:  # ERROR / BOOKMARK without one
                self.error = line[:200].decode(errors="replace")
                continue
            self.rvs.append(rv)
            self.times.append(now)
            self.types.append(line[9] if line.startswith(b'{"type":"') else 63)

    async def run(self, port: int, token: str, path: str) -> None:
        stream = await connect(port)
        async with stream:
            await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                                  f"Accept: application/json\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                data = await stream.receive_some(65536)
                if not data:
                    self.error = "closed before the response"
                    self.established.set()
                    return
                buf += data
            head, rest = buf.split(b"\r\n\r\n", 1)
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                self.error = f"HTTP {status}"
            self.established.set()
            if rest:
                self.feed(rest, time.perf_counter())
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                self.feed(data, time.perf_counter())


def check_watches(watches: list[WatchStream], expected: dict[int, tuple[float, int]]) -> dict:
    """Lost / duplicated / reordered / unexpected event counts over all watches, and the delivery
    latency (event arrival minus the write's response) percentiles in ms."""
    lost = dup = reordered = unexpected = wrong_type = 0
    lat = array("d")
    complete = 0
    for w in watches:
        seen: set[int] = set()
        last = -1
        for rv, t, ty in zip(w.rvs, w.times, w.types):
            if rv in seen:
                dup += 1
                continue
            seen.add(rv)
            if rv < last:
                reordered += 1
            last = max(last, rv)
            want = expected.get(rv)
            if want is None:
                unexpected += 1
                continue
            lat.append((t - want[0]) * 1000)
            if ty != want[1]:
                wrong_type += 1
        missing = sum(1 for rv in expected if rv not in seen)
        lost += missing
        complete += missing == 0
    return {"watches": len(watches), "writes": len(expected), "events": sum(len(w.rvs) for w in watches),
            "complete": complete, "lost": lost, "duplicated": dup, "reordered": reordered,
            "unexpected": unexpected, "wrong_type": wrong_type,
            "errors": sum(1 for w in watches if w.error), "first_error": next((w.error for w in watches if w.error), None),
            "delivery": stats(lat)}


async def write_phase_with_watches(port: int, token: str, args) -> list[dict]:
    setup = Conn("127.0.0.1", port, token)
    code, data = await setup.request("GET", f"{BASE}?limit=500", want_body=True)
    rv = orjson.loads(data)["metadata"]["resourceVersion"]
    path = f"{BASE}?watch=true&resourceVersion={rv}&allowWatchBookmarks=false&timeoutSeconds=3600"
    watches = [WatchStream() for _ in range(args.watches)]
    expected: dict[int, tuple[float, int]] = {}

    def on_response(i: int, status: int, body: bytes, now: float) -> None:
        if status < 300:
            got = _rv(body)
            if got is not None:
                expected[got] = (now, ord("A") if i % 2 == 0 else ord("M"))

    out = []
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()
        limit = trio.CapacityLimiter(50)  # do not overflow the listen backlog

        async def open_one(w: WatchStream) -> None:
            async with limit:
                nursery.start_soon(w.run, port, token, path)
                with trio.move_on_after(60):
                    await w.established.wait()

        async with trio.open_nursery() as opening:
            for w in watches:
                opening.start_soon(open_one, w)
        established = sum(1 for w in watches if w.established.is_set() and not w.error)
        open_s = time.perf_counter() - t0
        r = await phase(f"write (POST / merge PATCH), {args.watches} watches", port, token, args.rate,
                        args.seconds, args.clients, writes, on_response)
        out.append(r)
        # drain: wait until every watch has the newest write (or give up)
        newest = max(expected) if expected else 0
        t1 = time.perf_counter()
        deadline = t1 + args.drain
        while time.perf_counter() < deadline:
            if all(len(w.rvs) and w.rvs[-1] >= newest for w in watches):
                break
            await trio.sleep(0.2)
        drain_s = time.perf_counter() - t1
        await trio.sleep(0.5)  # anything late (duplicates) still counts
        nursery.cancel_scope.cancel()
    res = check_watches(watches, expected)
    res.update(phase="watch delivery", established=established, open_s=open_s, drain_s=drain_s)
    out.append(res)
    return out


# ---------------------------------------------------------------------- soak
def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def slope_mib_per_min(series: list[tuple[float, int]]) -> float:
    pts = series[len(series) // 2:]
    if len(pts) < 2:
        return float("nan")
    xs = [t / 60 for t, _ in pts]
    ys = [k / 1024 for _, k in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


async def soak(port: int, token: str, args, pid: int) -> list[dict]:
    series: list[tuple[float, int]] = []
    out = []
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()

        async def sample() -> None:
            while True:
                series.append((time.perf_counter() - t0, rss_kib(pid)))
                await trio.sleep(args.rss_every)

        nursery.start_soon(sample)
        out.append(await phase("soak (GET / LIST / PATCH / POST+DELETE)", port, token, args.rate, args.soak,
                               args.clients, mixed))
        series.append((time.perf_counter() - t0, rss_kib(pid)))
        nursery.cancel_scope.cancel()
    out.append({"phase": "rss", "series": series, "slope_mib_per_min": slope_mib_per_min(series)})
    return out


# ---------------------------------------------------------------------- driver
async def bench(port: int, token: str, args, pid: int) -> list[dict]:
    """The phases (or the soak), with a nursery for ``--h2``'s connection reader."""
    global READERS
    async with trio.open_nursery() as nursery:
        READERS = nursery
        out = await _bench(port, token, args, pid)
        nursery.cancel_scope.cancel()
    return out


async def _bench(port: int, token: str, args, pid: int) -> list[dict]:
    setup = Conn("127.0.0.1", port, token)
    ns = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    await setup.request("POST", "/api/v1/namespaces", ns)
    for i in range(50):
        await setup.request("POST", BASE, cm(f"seed-{i}"))
    if args.soak:
        return await soak(port, token, args, pid)
    out = []
    phases = args.phases.split(",")
    if "read" in phases:
        cpu = cpu_seconds(pid)
        out.append(await phase("read (GET one / LIST 50)", port, token, args.rate, args.seconds, args.clients, reads))
        out[-1]["server_cpu_ms"] = (cpu_seconds(pid) - cpu) * 1000 / max(1, out[-1]["requests"])
    if "write" in phases:
        cpu = cpu_seconds(pid)
        if args.watches:
            out += await write_phase_with_watches(port, token, args)
        else:
            out.append(await phase("write (POST / merge PATCH)", port, token, args.rate, args.seconds,
                                   args.clients, writes))
        runs = [r for r in out if r.get("phase", "").startswith("write")]
        runs[-1]["server_cpu_ms"] = (cpu_seconds(pid) - cpu) * 1000 / max(1, runs[-1]["requests"])
    return out


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far (``/proc/PID/stat``), in seconds: the server's cost
    per request, which the machine's other load does not inflate as it does latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(v: float) -> str:
    return f"{v:.1f}"


def print_markdown(args, results: list[dict]) -> None:
    what = f"soak {args.soak:g} s" if args.soak else f"{args.seconds:g} s per phase"
    print(f"rate {args.rate:g} req/s, {args.clients} clients, {what}, "
          f"{'HTTP/2 over TLS, one connection' if args.h2 else 'HTTPS (HTTP/1.1 over TLS)' if args.https else 'plain HTTP'} on loopback, {os.cpu_count()} CPUs\n")
    runs = [r for r in results if "achieved_rps" in r]
    print("| phase | requests | achieved req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | server CPU ms/req |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in runs:
        cpu = f"{r['server_cpu_ms']:.2f}" if "server_cpu_ms" in r else "-"
        print(f"| {r['phase']} | {r['requests']} | {r['achieved_rps']:.0f} | {_ms(r['p50_ms'])} | "
              f"{_ms(r['p90_ms'])} | {_ms(r['p99_ms'])} | {_ms(r['max_ms'])} | {r['errors'] or '-'} | {cpu} |")
    print("\nper kind of request:\n")
    print("| phase | kind | requests | p50 ms | p90 ms | p99 ms | max ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in runs:
        for k, s in r["kinds"].items():
            print(f"| {r['phase']} | {k} | {s['requests']} | {_ms(s['p50_ms'])} | {_ms(s['p90_ms'])} | "
                  f"{_ms(s['p99_ms'])} | {_ms(s['max_ms'])} |")
    for r in results:
        if r["phase"] == "watch delivery":
            d = r["delivery"]
            print(f"\nwatches: {r['established']}/{r['watches']} established in {r['open_s']:.1f} s; "
                  f"drained {r['drain_s']:.1f} s after the last write\n")
            print("| watches | writes | events received | complete watches | lost | duplicated | reordered | "
                  "unexpected | wrong type | stream errors | delivery p50 ms | p90 ms | p99 ms | max ms |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            print(f"| {r['watches']} | {r['writes']} | {r['events']} | {r['complete']} | {r['lost']} | "
                  f"{r['duplicated']} | {r['reordered']} | {r['unexpected']} | {r['wrong_type']} | {r['errors']} | "
                  f"{_ms(d['p50_ms'])} | {_ms(d['p90_ms'])} | {_ms(d['p99_ms'])} | {_ms(d['max_ms'])} |")
            if r["first_error"]:
                print(f"\nfirst stream error: `{r['first_error']}`")
        if r["phase"] == "rss":
            print(f"\nserver RSS (VmRSS), slope over the second half: **{r['slope_mib_per_min']:+.2f} MiB/min**\n")
            print("| t s | RSS MiB |")
            print("| ---: | ---: |")
            for t, k in r["series"]:
                print(f"| {t:.0f} | {k / 1024:.1f} |")


def main() -> int:
    global OUT
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=100.0, help="requests per second (default 100)")
    p.add_argument("--clients", type=int, default=50, help="concurrent keep-alive connections (default 50)")
    p.add_argument("--seconds", type=float, default=20.0, help="seconds per phase (default 20)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--phases", default="read,write", help="phases to run: read,write (default both)")
    p.add_argument("--watches", type=int, default=0,
                   help="open N watch streams for the write phase and check every event arrives once, in order")
    p.add_argument("--drain", type=float, default=120.0,
                   help="seconds to wait after the writes for watches to catch up (default 120)")
    p.add_argument("--soak", type=float, default=0.0,
                   help="instead of the phases, a mixed run of this many seconds sampling the server's RSS")
    p.add_argument("--rss-every", type=float, default=10.0, help="RSS sampling period in seconds (default 10)")
    p.add_argument("--out", type=Path, default=OUT,
                   help=f"directory for the server's cluster, kubeconfig and stderr (default {OUT}; emptied first)")
    p.add_argument("--h2", action="store_true",
                   help="HTTPS with every request an HTTP/2 stream on one connection, as client-go sends them")
    p.add_argument("--https", action="store_true",
                   help="serve's default HTTPS instead of --insecure-http (HTTP/1.1 over TLS)")
    p.add_argument("--profile", metavar="FILE", help="run the server under cProfile, writing FILE")
    p.add_argument("--etcd-compaction-interval", default="5m", metavar="DURATION",
                   help="passed to serve (default 5m, serve's own default)")
    args = p.parse_args()

    # N watches need N sockets on each side (children inherit the limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.watches + args.clients + 1024
    if soft < want and (hard == resource.RLIM_INFINITY or hard > soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))

    OUT = args.out.resolve()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    prof = ["-m", "cProfile", "-o", str(Path(args.profile).resolve())] if args.profile else []
    cmd = [sys.executable, *prof, "-m", "k8semu.cli.main", "--cluster", str(OUT / "cluster.log"), "serve",
           "--port", "0", *([] if args.https or args.h2 else ["--insecure-http"]), "--kubeconfig", str(OUT / "kubeconfig"),
           "--etcd-compaction-interval", args.etcd_compaction_interval]
    global SERVER
    errf = open(OUT / "serve.stderr", "w")
    proc = SERVER = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, text=True)
    errf.close()
    try:
        line: list[str] = []
        t = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        t.start()
        t.join(60)
        if not line or not line[0].startswith("export KUBECONFIG="):
            raise SystemExit(f"serve did not start: {server_stderr()}")
        text = (OUT / "kubeconfig").read_text()
        server = next(x.split("server: ")[1] for x in text.splitlines() if "server: " in x)
        token = next(x.split("token: ")[1] for x in text.splitlines() if "token: " in x)
        port = int(server.rsplit(":", 1)[1])
        if args.https or args.h2:
            global TLS, TLS_CA, H2
            ca = next(x.split("certificate-authority-data: ")[1] for x in text.splitlines()
                      if "certificate-authority-data: " in x)
            TLS_CA = base64.b64decode(ca).decode()
            TLS = ssl.create_default_context(cadata=TLS_CA)
            TLS.set_alpn_protocols(["http/1.1"])
            if args.h2:
                H2 = H2Conn(port, token)
        results = trio.run(bench, port, token, args, proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60 if args.profile else 20)
        except subprocess.TimeoutExpired:
            proc.kill()
    if args.markdown:
        print_markdown(args, results)
    else:
        for r in results:
            print(orjson.dumps(r).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
