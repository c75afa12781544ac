"""Load bench for ``k8semu serve``: request latency on loopback at a fixed request rate.

Starts ``k8semu serve`` (a fresh cluster in ``bench/out/serve/``, plain HTTP
with ``--insecure-http`` so the numbers are the server's, not TLS's), then
drives it open-loop: requests are due at a fixed rate (``--rate``, default
100/s) and handed to a pool of ``--clients`` keep-alive HTTP/1.1 connections
(default 50). Latency is measured from when a request was *due* to when its
response was fully read, so queueing behind a slow server counts.

Two phases of ``--seconds`` each (default 20):

* ``read``  — alternating ``GET`` of one ConfigMap and ``LIST`` of a namespace's
  50 ConfigMaps;
* ``write`` — alternating ``POST`` of a new ConfigMap and a merge ``PATCH`` of
  an existing one (every write is appended to the cluster log and flushed).

Usage::

    python bench/bench_serve.py                    # 100 req/s, 50 clients, 2 x 20 s
    python bench/bench_serve.py --rate 1000 --seconds 10 --markdown

The HTTP client is a few lines over ``trio`` streams (no third-party client),
so its own overhead is small and the same for every request.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import trio

OUT = Path(__file__).resolve().parent / "out" / "serve"
NS = "bench"


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.stream: trio.SocketStream | None = None
        self.buf = b""

    async def request(self, method: str, path: str, body: bytes = b"", ctype: str = "application/json") -> int:
        if self.stream is None:
            self.stream = await trio.open_tcp_stream(self.host, self.port)
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
        self.buf = self.buf[length:]
        return status

    async def _recv(self) -> bytes:
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("server closed the connection")
        return data


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


async def phase(name: str, port: int, token: str, rate: float, seconds: float, clients: int,
                make_request) -> dict:
    """Run one open-loop phase; returns latency stats in milliseconds."""
    send, recv = trio.open_memory_channel(10_000)
    lat: list[float] = []
    errors: dict[int, int] = {}

    async def worker() -> None:
        conn = Conn("127.0.0.1", port, token)
        async for due, i in recv:
            method, path, body, ctype = make_request(i)
            code = await conn.request(method, path, body, ctype)
            lat.append((time.perf_counter() - due) * 1000)
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
    return {"phase": name, "requests": len(lat), "achieved_rps": len(lat) / elapsed,
            "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90), "p99_ms": percentile(lat, 99),
            "max_ms": max(lat) if lat else float("nan"), "errors": errors}


def cm(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
                         "data": {"key": "value" * 20}})


async def bench(port: int, token: str, args) -> list[dict]:
    base = f"/api/v1/namespaces/{NS}/configmaps"
    setup = Conn("127.0.0.1", port, token)
    ns = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    await setup.request("POST", "/api/v1/namespaces", ns)
    for i in range(50):
        await setup.request("POST", base, cm(f"seed-{i}"))

    def reads(i: int):
        if i % 2:
            return "GET", f"{base}?limit=500", b"", "application/json"
        return "GET", f"{base}/seed-{i % 50}", b"", "application/json"

    def writes(i: int):
        if i % 2:
            patch = orjson.dumps({"data": {"n": str(i)}})
            return "PATCH", f"{base}/seed-{i % 50}", patch, "application/merge-patch+json"
        return "POST", base, cm(f"w-{i}"), "application/json"

    out = [await phase("read (GET one / LIST 50)", port, token, args.rate, args.seconds, args.clients, reads)]
    out.append(await phase("write (POST / merge PATCH)", port, token, args.rate, args.seconds, args.clients, writes))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=100.0, help="requests per second (default 100)")
    p.add_argument("--clients", type=int, default=50, help="concurrent keep-alive connections (default 50)")
    p.add_argument("--seconds", type=float, default=20.0, help="seconds per phase (default 20)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args()

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    cmd = [sys.executable, "-m", "k8semu.cli.main", "--cluster", str(OUT / "cluster.log"), "serve",
           "--port", "0", "--insecure-http", "--kubeconfig", str(OUT / "kubeconfig")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line: list[str] = []
        t = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        t.start()
        t.join(60)
        if not line or not line[0].startswith("export KUBECONFIG="):
            raise SystemExit(f"serve did not start: {proc.stderr.read()[-2000:]}")
        text = (OUT / "kubeconfig").read_text()
        server = next(x.split("server: ")[1] for x in text.splitlines() if "server: " in x)
        token = next(x.split("token: ")[1] for x in text.splitlines() if "token: " in x)
        port = int(server.rsplit(":", 1)[1])
        results = trio.run(bench, port, token, args)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    if args.markdown:
        print(f"rate {args.rate:g} req/s, {args.clients} clients, {args.seconds:g} s per phase, "
              f"plain HTTP on loopback, {os.cpu_count()} CPUs\n")
        print("| phase | requests | achieved req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in results:
            print(f"| {r['phase']} | {r['requests']} | {r['achieved_rps']:.0f} | {r['p50_ms']:.1f} | "
                  f"{r['p90_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} | {r['errors'] or '-'} |")
    else:
        for r in results:
            print(orjson.dumps(r).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
