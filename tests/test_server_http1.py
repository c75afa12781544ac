"""HTTP/1.1 as clients see it from ``k8semu serve``'s own connection handler (k8semu.server.http1):
keep-alive, pipelining, ``Expect: 100-continue``, ``Connection: close``, ``HEAD``, long heads,
malformed requests and responses, h2c with prior knowledge and a graceful shutdown, over a real
loopback socket."""

from __future__ import annotations

import orjson
import pytest
import trio
import trio.testing

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
        assert first.startswith(b"HTTP/1.1 100 Continue\r\n")  # Go's status line
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


async def test_head_gets_the_get_headers_and_no_body_and_the_connection_stays_usable(server):
    port, _ = server
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("GET", "/api/v1/namespaces") + _request("HEAD", "/api/v1/namespaces")
                              + _request("HEAD", "/healthz") + _request("GET", "/healthz"))
        # a HEAD response has a Content-Length but no body: read heads as if they had none
        buf = b""
        with trio.fail_after(10):
            while buf.count(b"\r\n\r\n") < 4 or not buf.endswith(b"ok"):
                data = await stream.receive_some(65536)
                assert data, buf
                buf += data
    get_head, rest = buf.split(b"\r\n\r\n", 1)
    length = int(dict(line.lower().split(b": ", 1) for line in get_head.split(b"\r\n")[1:])[b"content-length"])
    heads = rest[length:].split(b"\r\n\r\n")
    assert heads[-1] == b"ok" and len(heads) == 4
    head_list, head_healthz, get_healthz = (dict(line.lower().split(b": ", 1) for line in h.split(b"\r\n")[1:])
                                            for h in heads[:3])
    assert heads[0].startswith(b"HTTP/1.1 200 OK\r\n") and head_list[b"content-length"] == str(length).encode()
    assert head_healthz[b"content-length"] == get_healthz[b"content-length"] == b"2"
    assert b"date" not in get_healthz  # no wall clock is read (Go would send one; clients do not need it)


async def test_request_heads_longer_than_h11s_default_are_served_as_by_go(server):
    # Go's net/http reads heads up to 1 MiB; h11's default (16 KiB) refused one that arrived in more
    # than one read (this one cannot arrive in one: the server reads 64 KiB at a time)
    port, _ = server
    big = "X-Big: " + "a" * 100_000
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("GET", "/healthz", b"", big) + _request("GET", "/healthz", b"", big))
        got = await _read_responses(stream, 2)
    assert [(status, body) for status, _, body in got] == [(b"HTTP/1.1 200 OK", b"ok")] * 2
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        # a later one longer than Go allows: 431, and the client, still sending, reads it (no RST)
        await stream.send_all(_request("GET", "/healthz") + _request("GET", "/healthz", b"",
                              "X-Big: " + "a" * (1 << 21)))
        got = await _read_responses(stream, 2)
    assert [status for status, _, _ in got] == [b"HTTP/1.1 200 OK", b"HTTP/1.1 431 Request Header Fields Too Large"]


async def test_shutdown_closes_connections_that_have_not_sent_a_request(server):
    port, stop = server
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await trio.testing.wait_all_tasks_blocked()  # the server waits for the first request
        stop.set()
        with trio.fail_after(1):  # not after the graceful timeout (2 s)
            assert await stream.receive_some(65536) == b""


async def test_responses_the_app_gets_wrong_do_not_break_the_server(nursery):
    async def app(scope, receive, send):
        await receive()
        if scope["path"] == "/nocontent":  # a body on a 204: dropped, as Go's net/http does
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b"ignored"})
        else:  # a body longer than its Content-Length: the connection closes
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
            await send({"type": "http.response.body", "body": b"too long"})

    urls = await nursery.start(lambda task_status: serve(
        app, hypercorn_config("127.0.0.1", 0, None, 1.0), raw_upgrade=lambda request: None,
        shutdown_trigger=trio.sleep_forever, task_status=task_status))
    port = int(urls[0].rsplit(":", 1)[1])
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("GET", "/nocontent") + _request("GET", "/nocontent"))
        got = await _read_responses(stream, 2)
        assert [(status, body) for status, _, body in got] == [(b"HTTP/1.1 204 No Content", b"")] * 2
        await stream.send_all(_request("GET", "/wrong"))
        with trio.fail_after(10):
            assert await stream.receive_some(65536) == b""  # closed, nothing sent


async def test_http2_with_prior_knowledge_still_reaches_hypercorn(server):
    # ``curl --http2-prior-knowledge http://…``: the preface parses as an HTTP/1.1-looking request
    import h2.connection
    import h2.events

    port, _ = server
    h2conn = h2.connection.H2Connection()
    h2conn.initiate_connection()
    h2conn.send_headers(1, [(":method", "GET"), (":path", "/version"), (":scheme", "http"), (":authority", "x"),
                            ("authorization", f"Bearer {ADMIN}")], end_stream=True)
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(h2conn.data_to_send())
        status, body, ended = None, b"", False
        with trio.fail_after(10):
            while not ended:
                data = await stream.receive_some(65536)
                assert data and not data.startswith(b"HTTP/1.1"), data[:100]
                for event in h2conn.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        status = dict(event.headers)[b":status"]
                    elif isinstance(event, h2.events.DataReceived):
                        body += event.data
                    elif isinstance(event, h2.events.StreamEnded):
                        ended = True
                await stream.send_all(h2conn.data_to_send())
    assert status == b"200" and orjson.loads(body)["major"] == "1"


async def test_a_response_begun_during_shutdown_says_connection_close(nursery):
    started, release, stop = trio.Event(), trio.Event(), trio.Event()

    async def app(scope, receive, send):
        await receive()
        started.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"done"})

    urls = await nursery.start(lambda task_status: serve(
        app, hypercorn_config("127.0.0.1", 0, None, 1.0), raw_upgrade=lambda request: None,
        shutdown_trigger=stop.wait, task_status=task_status))
    async with await trio.open_tcp_stream("127.0.0.1", int(urls[0].rsplit(":", 1)[1])) as stream:
        await stream.send_all(_request("GET", "/slow"))
        await started.wait()
        stop.set()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
        (status, headers, body), = await _read_responses(stream, 1)
        assert (status, body, headers[b"connection"]) == (b"HTTP/1.1 200 OK", b"done", b"close")
        with trio.fail_after(10):
            assert await stream.receive_some(65536) == b""



async def test_a_body_over_kube_apiservers_3_mib_limit_is_413(server):
    port, _ = server
    cm = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                       "data": {"k": "x" * (3 * 1024 * 1024)}})
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(_request("POST", "/api/v1/namespaces/default/configmaps", cm))
        (status, _, body), = await _read_responses(stream, 1)
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert orjson.loads(body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Request entity too large: limit is 3145728", "reason": "RequestEntityTooLarge", "code": 413}
