"""HTTP/1.1 as clients see it from ``k8semu serve``'s own connection handler (k8semu.server.http1):
keep-alive, pipelining, ``Expect: 100-continue``, ``Connection: close``, malformed requests and
a graceful shutdown, over a real loopback socket."""

from __future__ import annotations

import orjson
import pytest
import trio

from k8semu.api import auth
from k8semu.server.app import APIApp
from k8semu.server.run import hypercorn_config
from k8semu.server.upgrade import serve
from k8semu.sim.cluster import Cluster

ADMIN = "admin-token"


@pytest.fixture
async def server(nursery):
    cluster = Cluster.create()
    app = APIApp(cluster.api, {ADMIN: auth.admin()})
    stop = trio.Event()
    urls = await nursery.start(lambda task_status: serve(
        app, hypercorn_config("127.0.0.1", 0, None, 1.0), raw_upgrade=app.raw_upgrade,
        shutdown_trigger=stop.wait, task_status=task_status))
    yield int(urls[0].rsplit(":", 1)[1]), stop


async def _read_responses(stream, count):
    """Read ``count`` complete responses (Content-Length bodies); returns [(status line, headers, body)]."""
    buf = b""
    out = []
    with trio.fail_after(10):
        while len(out) < count:
            if b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                lines = head.split(b"\r\n")
                headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
                length = int(headers.get(b"content-length", b"0"))
                if len(rest) >= length:
                    out.append((lines[0], headers, rest[:length]))
                    buf = rest[length:]
                    continue
            data = await stream.receive_some(65536)
            if not data:
                break
            buf += data
    return out


def _request(method, path, body=b"", *extra):
    lines = [f"{method} {path} HTTP/1.1", "Host: x", f"Authorization: Bearer {ADMIN}", *extra]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def test_pipelined_requests_on_one_connection_are_answered_in_order(server):
    port, _ = server
    cm = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("POST", "/api/v1/namespaces/default/configmaps", cm)
                              + _request("GET", "/api/v1/namespaces/default/configmaps/a")
                              + _request("GET", "/api/v1/namespaces/default/configmaps/nope"))
        got = await _read_responses(stream, 3)
    assert [status for status, _, _ in got] == [b"HTTP/1.1 201 Created", b"HTTP/1.1 200 OK", b"HTTP/1.1 404 Not Found"]
    assert orjson.loads(got[1][2])["data"] == {"k": "v"}
    assert orjson.loads(got[2][2])["message"] == 'configmaps "nope" not found'
    assert got[0][1][b"content-type"] == b"application/json"


async def test_expect_100_continue_is_answered_before_the_body(server):
    port, _ = server
    cm = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}})
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        head = _request("POST", "/api/v1/namespaces/default/configmaps", cm, "Expect: 100-continue")
        await stream.send_all(head[:-len(cm)])  # as curl: the head, then wait for 100 Continue
        with trio.fail_after(10):
            first = await stream.receive_some(65536)
        assert first.startswith(b"HTTP/1.1 100 ")
        await stream.send_all(cm)
        (status, _, body), = await _read_responses(stream, 1)
    assert status == b"HTTP/1.1 201 Created" and orjson.loads(body)["metadata"]["name"] == "big"


async def test_connection_close_and_malformed_requests_end_the_connection(server):
    port, _ = server
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("GET", "/version", b"", "Connection: close"))
        (status, headers, _), = await _read_responses(stream, 1)
        assert status == b"HTTP/1.1 200 OK" and headers[b"connection"] == b"close"
        with trio.fail_after(10):
            assert await stream.receive_some(65536) == b""  # the server closed it
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        # a good first request, then bytes that are not HTTP: 400 and the connection closes
        await stream.send_all(_request("GET", "/healthz") + b"NOT HTTP AT ALL\r\n\r\n")
        got = await _read_responses(stream, 2)
        assert [status.split(b" ")[1] for status, _, _ in got] == [b"200", b"400"]
        with trio.fail_after(10):
            assert await stream.receive_some(65536) == b""


async def test_shutdown_closes_idle_keep_alive_connections(server):
    port, stop = server
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("GET", "/healthz"))
        (status, _, body), = await _read_responses(stream, 1)
        assert (status, body) == (b"HTTP/1.1 200 OK", b"ok")
        stop.set()  # the connection is idle, waiting for its next request
        with trio.fail_after(10):
            assert await stream.receive_some(65536) == b""
