"""HTTP/2 as client-go uses it against ``k8semu serve`` (k8semu.server.http2): requests multiplexed
on one connection, watches ended by RST_STREAM, flow control, HEAD, TLS with ALPN ``h2``, and
GOAWAY on shutdown, over a real loopback socket with the ``h2`` library as the client."""

from __future__ import annotations

import socket
import ssl

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import orjson
import pytest
import trio
import trio.testing

from k8semu.api import auth
from k8semu.server.app import APIApp
from k8semu.server.pki import load_credentials
from k8semu.server.run import hypercorn_config
from k8semu.server.upgrade import serve
from k8semu.sim.cluster import Cluster

ADMIN = "admin-token"
CMS = "/api/v1/namespaces/default/configmaps"


async def _start(nursery, creds=None, keep_alive=None):
    cluster = Cluster.create()
    app = APIApp(cluster.api, {ADMIN: auth.admin()})
    stop = trio.Event()
    cfg = hypercorn_config("127.0.0.1", 0, creds, 1.0)
    if keep_alive is not None:
        cfg.keep_alive_timeout = keep_alive

    async def trigger():
        await stop.wait()
        app.shutting_down.set()  # as serve_api: open watches end now

    done = trio.Event()

    async def run(task_status):
        try:
            await serve(app, cfg, raw_upgrade=app.raw_upgrade, shutdown_trigger=trigger, task_status=task_status)
        finally:
            done.set()

    urls = await nursery.start(run)
    return int(urls[0].rsplit(":", 1)[1]), stop, done


@pytest.fixture
async def server(nursery):
    return await _start(nursery)


class H2Client:
    """A minimal HTTP/2 client: requests are streams, a reader task collects the responses."""

    def __init__(self, stream, *, window: int | None = None, scheme: str = "http") -> None:
        self.stream = stream
        self.scheme = scheme
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
            self.conn.increment_flow_control_window(window)
        self.lock = trio.StrictFIFOLock()
        self.responses: dict[int, dict] = {}
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.closed = trio.Event()
        self.changed = trio.Event()
        self.holding = False  # True: received data is not acknowledged (the server's window closes)
        self.held: list[tuple[int, int]] = []

    async def flush(self) -> None:
        async with self.lock:
            data = self.conn.data_to_send()
            if data:
                await self.stream.send_all(data)

    async def request(self, method: str, path: str, body: bytes = b"", *, end: bool = True) -> int:
        sid = self.conn.get_next_available_stream_id()
        self.responses[sid] = {"status": None, "headers": {}, "body": bytearray(), "ended": trio.Event(),
                               "reset": None}
        headers = [(b":method", method.encode()), (b":path", path.encode()), (b":scheme", self.scheme.encode()),
                   (b":authority", b"127.0.0.1"), (b"authorization", f"Bearer {ADMIN}".encode()),
                   (b"accept", b"application/json")]
        if body:
            headers.append((b"content-type", b"application/json"))
        self.conn.send_headers(sid, headers, end_stream=end and not body)
        while body:  # as the server's window allows (the reader must be running for a long body)
            n = min(len(body), self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if n <= 0:
                await self.flush()
                await self.until(lambda: self.conn.local_flow_control_window(sid) > 0)
                continue
            chunk, body = body[:n], body[n:]
            self.conn.send_data(sid, chunk, end_stream=end and not body)
        await self.flush()
        return sid

    async def release(self) -> None:
        """Acknowledge the data held back: WINDOW_UPDATEs."""
        self.holding = False
        for length, sid in self.held:
            self.conn.acknowledge_received_data(length, sid)
        self.held = []
        await self.flush()

    async def reset(self, sid: int) -> None:
        self.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        await self.flush()

    async def run(self) -> None:
        try:
            while True:
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    return
                for ev in self.conn.receive_data(data):
                    r = self.responses.get(getattr(ev, "stream_id", None) or 0)
                    if isinstance(ev, h2.events.ResponseReceived) and r:
                        r["headers"] = dict(ev.headers)
                        r["status"] = int(r["headers"][b":status"])
                    elif isinstance(ev, h2.events.DataReceived):
                        if self.holding:
                            self.held.append((ev.flow_controlled_length, ev.stream_id))
                        else:
                            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                        if r:
                            r["body"] += ev.data
                    elif isinstance(ev, h2.events.StreamEnded) and r:
                        r["ended"].set()
                    elif isinstance(ev, h2.events.StreamReset) and r:
                        r["reset"] = ev.error_code
                        r["ended"].set()
                    elif isinstance(ev, h2.events.ConnectionTerminated):
                        self.goaway = ev
                        if ev.error_code == 0:
                            # as Go's client: a graceful GOAWAY leaves the open streams running (h2
                            # alone would refuse to send their WINDOW_UPDATEs)
                            self.conn.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
                self.changed.set()
                self.changed = trio.Event()
                await self.flush()
        finally:
            for r in self.responses.values():
                r["ended"].set()
            self.closed.set()
            self.changed.set()

    async def response(self, sid: int) -> tuple[int, dict, bytes]:
        r = self.responses[sid]
        with trio.fail_after(10):
            await r["ended"].wait()
        assert r["reset"] is None, f"stream {sid} reset: {r['reset']}"
        return r["status"], r["headers"], bytes(r["body"])

    async def until(self, predicate) -> None:
        with trio.fail_after(10):
            while not predicate():
                assert not self.closed.is_set(), "the connection closed"
                await self.changed.wait()


async def _connect(port: int, nursery, *, rcvbuf: int | None = None, **kw) -> H2Client:
    """An h2c (prior knowledge) connection; ``rcvbuf`` shrinks the client socket's receive buffer."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    await sock.connect(("127.0.0.1", port))
    client = H2Client(trio.SocketStream(sock), **kw)
    await client.flush()
    return client


def _tasks() -> int:
    """How many Trio tasks exist (a stream's server-side task ending shows here)."""
    n, todo = 0, [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        n += 1
        for child in task.child_nurseries:
            todo.extend(child.child_tasks)
    return n


def _cm(name: str, size: int = 10) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * size}})


async def test_get_and_post_multiplexed_on_one_connection(server, nursery):
    port, _, _ = server
    c = await _connect(port, nursery)
    nursery.start_soon(c.run)
    post = await c.request("POST", CMS, _cm("a"))
    status, headers, body = await c.response(post)
    assert status == 201 and headers[b"content-type"] == b"application/json"
    assert orjson.loads(body)["data"] == {"k": "v" * 10}
    get, missing = await c.request("GET", f"{CMS}/a"), await c.request("GET", f"{CMS}/nope")
    status, _, body = await c.response(get)
    assert status == 200 and orjson.loads(body)["metadata"]["name"] == "a"
    status, _, body = await c.response(missing)
    assert status == 404 and orjson.loads(body)["message"] == 'configmaps "nope" not found'


async def test_tls_with_alpn_h2_and_head(nursery, tmp_path):
    creds = load_credentials(tmp_path / "pki")
    port, _, _ = await _start(nursery, creds)
    ctx = ssl.create_default_context(cafile=str(creds.ca_cert))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    tls = trio.SSLStream(await trio.open_tcp_stream("127.0.0.1", port), ctx, server_hostname="127.0.0.1")
    await tls.do_handshake()
    assert tls.selected_alpn_protocol() == "h2"
    c = H2Client(tls, scheme="https")
    await c.flush()
    nursery.start_soon(c.run)
    get, head = await c.request("GET", "/api/v1/namespaces"), await c.request("HEAD", "/api/v1/namespaces")
    status, get_headers, body = await c.response(get)
    assert status == 200 and orjson.loads(body)["kind"] == "NamespaceList"
    status, head_headers, head_body = await c.response(head)
    assert (status, head_body) == (200, b"")
    assert head_headers[b"content-length"] == get_headers[b"content-length"] == str(len(body)).encode()
    status, _, body = await c.response(await c.request("HEAD", "/healthz"))
    assert (status, body) == (200, b"")


async def test_response_larger_than_the_initial_window(server, nursery):
    port, _, _ = server
    c = await _connect(port, nursery)  # the default 65,535-byte windows: WINDOW_UPDATEs needed
    nursery.start_soon(c.run)
    for i in range(3):
        assert (await c.response(await c.request("POST", CMS, _cm(f"big-{i}", 60_000))))[0] == 201
    status, _, body = await c.response(await c.request("GET", CMS))
    assert status == 200 and len(body) > 180_000
    assert [o["data"]["k"] for o in orjson.loads(body)["items"] if o["metadata"]["name"].startswith("big-")] \
        == ["v" * 60_000] * 3


async def test_watch_gets_events_and_ends_server_side_when_the_client_resets_it(server, nursery):
    port, _, _ = server
    c = await _connect(port, nursery)
    nursery.start_soon(c.run)
    status, _, body = await c.response(await c.request("GET", CMS))
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    await c.response(await c.request("GET", "/version"))
    before = _tasks()
    watch = await c.request("GET", f"{CMS}?watch=1&resourceVersion={rv}")
    await c.until(lambda: c.responses[watch]["status"] == 200)
    assert (await c.response(await c.request("POST", CMS, _cm("w"))))[0] == 201
    await c.until(lambda: b"\n" in c.responses[watch]["body"])
    event = orjson.loads(bytes(c.responses[watch]["body"]).split(b"\n")[0])
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "w")
    assert _tasks() > before
    await c.reset(watch)
    with trio.fail_after(5):
        while _tasks() > before:  # the watch's tasks end
            await trio.sleep(0.01)
    # the connection goes on serving
    assert (await c.response(await c.request("GET", "/healthz")))[:3:2] == (200, b"ok")


async def test_resetting_a_stream_whose_write_is_blocked_keeps_the_connection_intact(server, nursery):
    port, _, _ = server
    c = await _connect(port, nursery)
    nursery.start_soon(c.run)
    for i in range(2):
        assert (await c.response(await c.request("POST", CMS, _cm(f"huge-{i}", 900_000))))[0] == 201
    # a client that stops reading its socket (window wide open: only TCP holds the server back)
    c2 = await _connect(port, nursery, rcvbuf=4096, window=1 << 24)
    watch = await c2.request("GET", f"{CMS}?watch=1")  # ~1.8 MB of ADDED events
    await trio.testing.wait_all_tasks_blocked(0.1)  # the server's write is stuck in the socket
    await c2.reset(watch)
    await trio.testing.wait_all_tasks_blocked(0.1)
    get = await c2.request("GET", "/version")
    nursery.start_soon(c2.run)  # now read everything: the frames must still parse
    status, _, body = await c2.response(get)
    assert status == 200 and orjson.loads(body)["major"] == "1"


async def test_a_request_reset_before_its_body_ended_does_not_keep_the_connection_open(nursery):
    port, _, _ = await _start(nursery, keep_alive=0.3)
    c = await _connect(port, nursery)
    nursery.start_soon(c.run)
    sid = await c.request("POST", CMS, _cm("half"), end=False)
    await c.reset(sid)
    with trio.fail_after(5):  # idle: the server says GOAWAY and closes
        await c.closed.wait()
    assert c.goaway is not None and c.goaway.error_code == 0


async def test_shutdown_sends_goaway_and_running_streams_end_cleanly(server, nursery):
    port, stop, done = server
    c = await _connect(port, nursery, window=1 << 20)
    nursery.start_soon(c.run)
    status, _, body = await c.response(await c.request("GET", CMS))
    watch = await c.request("GET", f"{CMS}?watch=1&resourceVersion={orjson.loads(body)['metadata']['resourceVersion']}")
    await c.until(lambda: c.responses[watch]["status"] == 200)
    stop.set()
    status, _, body = await c.response(watch)  # END_STREAM, not a reset or a lost connection
    assert (status, body) == (200, b"")
    with trio.fail_after(5):
        await c.closed.wait()
        await done.wait()
    assert c.goaway is not None and c.goaway.error_code == 0 and c.goaway.last_stream_id == watch


async def test_shutdown_lets_a_response_waiting_for_window_finish_after_goaway(server, nursery):
    port, stop, done = server
    c = await _connect(port, nursery)  # 65,535-byte windows
    nursery.start_soon(c.run)
    for i in range(3):
        assert (await c.response(await c.request("POST", CMS, _cm(f"big-{i}", 60_000))))[0] == 201
    c.holding = True
    get = await c.request("GET", CMS)
    await trio.testing.wait_all_tasks_blocked(0.05)  # the server waits for window
    assert c.held and not c.responses[get]["ended"].is_set()
    stop.set()
    await c.until(lambda: c.goaway is not None)
    assert c.goaway.error_code == 0 and c.goaway.last_stream_id == get
    late = await c.request("GET", "/version")  # after GOAWAY: refused
    await c.release()
    status, _, body = await c.response(get)
    assert status == 200 and [o["metadata"]["name"] for o in orjson.loads(body)["items"]] == ["big-0", "big-1", "big-2"]
    await c.until(lambda: c.responses[late]["ended"].is_set())
    assert c.responses[late]["reset"] == h2.errors.ErrorCodes.REFUSED_STREAM
    with trio.fail_after(5):
        await c.closed.wait()
        await done.wait()
