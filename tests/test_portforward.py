"""Port-forward (k8semu.server.spdy, k8semu.server.portforward, behaviour.http_answer), in process.

The session tests drive the ASGI app with a ``websocket`` scope and a tiny
SPDY/3.1 client written here (on the module's own frame codec), splitting the
byte stream at odd places so WebSocket message boundaries never match frames.
"""

from __future__ import annotations

import zlib

import orjson
import pytest
import trio

from k8semu.api import auth
from k8semu.node import behaviour
from k8semu.server import portforward, spdy
from k8semu.server.app import APIApp
from k8semu.server.pki import parse_token_file
from k8semu.sim.cluster import Cluster

ADMIN = "admin-token"
JANE = "jane-token"


# ---------------------------------------------------------------------------- framing

def test_dictionary_is_the_spdy3_constant():
    d = spdy.DICTIONARY
    assert len(d) == 1423 and zlib.adler32(d) == 0xE3C6A7C2
    assert d.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head") and d.endswith(b",*,enq=0.")


FRAMES = [
    spdy.SynStream(1, (("streamtype", "error"), ("port", "80"), ("requestid", "0")), priority=3),
    spdy.SynStream(3, (("streamtype", "data"), ("port", "80"), ("requestid", "0")), fin=True, unidirectional=True),
    spdy.SynReply(1),
    spdy.SynReply(3, (("a", "1"), ("a", "2"), ("b", "")), fin=True),
    spdy.Headers(5, (("x", "y"),)),
    spdy.DataFrame(1, b"hello"),
    spdy.DataFrame(3, b"", fin=True),
    spdy.RstStream(7, spdy.CANCEL),
    spdy.Settings(((spdy.SETTINGS_INITIAL_WINDOW_SIZE, 0, 1 << 20), (4, 1, 100)), clear=True),
    spdy.Ping(1),
    spdy.GoAway(9, 0),
    spdy.WindowUpdate(0, 32768),
    spdy.WindowUpdate(3, 5),
]


def test_frames_round_trip_fed_one_byte_at_a_time():
    enc, dec = spdy.FrameEncoder(), spdy.FrameDecoder()
    wire = b"".join(enc.encode(f) for f in FRAMES)
    got = []
    for i in range(len(wire)):
        got += dec.feed(wire[i:i + 1])
    assert got == FRAMES
    # control frames carry version 3; a data frame's first bit is clear
    assert wire[:4] == b"\x80\x03\x00\x01"
    assert spdy.FrameEncoder().encode(spdy.DataFrame(5, b"ab", fin=True)) == b"\x00\x00\x00\x05\x01\x00\x00\x02ab"


def test_header_blocks_share_one_compression_context_per_direction():
    enc = spdy.FrameEncoder()
    a = enc.encode(spdy.SynStream(1, (("streamtype", "error"), ("port", "80"))))
    b = enc.encode(spdy.SynStream(3, (("streamtype", "error"), ("port", "80"))))
    assert len(b) < len(a)  # the second block refers back to the first
    assert spdy.FrameDecoder().feed(a + b)[1].headers == (("streamtype", "error"), ("port", "80"))
    with pytest.raises(spdy.ProtocolError):
        spdy.FrameDecoder().feed(b)  # without the first block's context it does not decompress
    with pytest.raises(spdy.ProtocolError):
        spdy.FrameDecoder().feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # SPDY/2


# ---------------------------------------------------------------------------- a session on a pipe

async def _pipe_session(on_stream, nursery):
    """(session, send-to-server, channel of bytes from the server)."""
    to_server_w, to_server_r = trio.open_memory_channel(100)
    from_server_w, from_server_r = trio.open_memory_channel(100)
    session = spdy.Session(from_server_w.send, on_stream)

    async def receive():
        return await to_server_r.receive()

    nursery.start_soon(session.run, receive)
    return session, to_server_w, from_server_r


async def _frames(chan, dec, n):
    out = []
    while len(out) < n:
        out += dec.feed(await chan.receive())
    return out


async def test_session_pings_resets_and_honours_the_peers_window():
    sent = trio.Event()

    async def on_stream(stream):
        await stream.reply()
        await stream.send_all(b"x" * 25)
        await stream.close()
        sent.set()

    enc, dec = spdy.FrameEncoder(), spdy.FrameDecoder()
    async with trio.open_nursery() as nursery:
        session, w, r = await _pipe_session(on_stream, nursery)
        await w.send(enc.encode(spdy.Ping(1)) + enc.encode(spdy.Ping(2)))
        assert await _frames(r, dec, 1) == [spdy.Ping(1)]  # the client's (odd) ping is echoed, not ours
        await w.send(enc.encode(spdy.DataFrame(9, b"?")))
        assert await _frames(r, dec, 1) == [spdy.RstStream(9, spdy.INVALID_STREAM)]
        await w.send(enc.encode(spdy.Settings(((spdy.SETTINGS_INITIAL_WINDOW_SIZE, 0, 10),))))
        await w.send(enc.encode(spdy.SynStream(1)))
        got = await _frames(r, dec, 2)
        assert got == [spdy.SynReply(1), spdy.DataFrame(1, b"x" * 10)]
        await w.send(enc.encode(spdy.WindowUpdate(1, 10)))
        assert await _frames(r, dec, 1) == [spdy.DataFrame(1, b"x" * 10)]
        assert not sent.is_set()
        await w.send(enc.encode(spdy.WindowUpdate(1, 100)))
        assert await _frames(r, dec, 2) == [spdy.DataFrame(1, b"x" * 5), spdy.DataFrame(1, b"", fin=True)]
        await sent.wait()
        await w.send(enc.encode(spdy.SynStream(1)))  # not increasing
        assert await _frames(r, dec, 1) == [spdy.RstStream(1, spdy.PROTOCOL_ERROR)]
        await w.send(b"")
    assert session.closed


async def test_session_sends_window_updates_for_consumed_data():
    got = []

    async def on_stream(stream):
        await stream.reply()
        while data := await stream.receive_some():
            got.append(data)

    enc, dec = spdy.FrameEncoder(), spdy.FrameDecoder()
    async with trio.open_nursery() as nursery:
        _, w, r = await _pipe_session(on_stream, nursery)
        await w.send(enc.encode(spdy.SynStream(1)))
        assert await _frames(r, dec, 1) == [spdy.SynReply(1)]
        for _ in range(5):
            await w.send(enc.encode(spdy.DataFrame(1, b"y" * 10000)))
        updates = await _frames(r, dec, 2)
        assert sorted(updates, key=lambda f: f.stream_id) == [spdy.WindowUpdate(0, updates[0].delta),
                                                              spdy.WindowUpdate(1, updates[0].delta)]
        assert updates[0].delta >= spdy.DEFAULT_WINDOW // 2
        await w.send(b"")
    assert sum(map(len, got)) >= 40000


# ---------------------------------------------------------------------------- HTTP answers

def _run(container, annotations=None, at=30.0, start=0.0):
    run = behaviour.build_program(container, annotations).start(start)
    run.advance(at)
    return run


def test_http_answers_per_image():
    a = behaviour.http_answer(_run({"name": "n", "image": "nginx:1.27.3-alpine"}), 80, 30.0)
    assert a.status == 200 and b"<h1>Welcome to nginx!</h1>" in a.body and len(a.body) == 615
    assert dict(a.headers)["Server"] == "nginx/1.27.3" and dict(a.headers)["Content-Length"] == "615"
    assert dict(a.headers)["Date"] == "Wed, 01 Jan 2025 00:00:30 GMT"
    assert dict(behaviour.http_answer(_run({"name": "n", "image": "nginx"}), 80, 30.0).headers)["Server"] == "nginx/1.29.8"  # latest, as its log says
    a = behaviour.http_answer(_run({"name": "n", "image": "nginx:1.30"}), 80, 30.0, target="/missing")
    assert a.status == 404 and b"<center>nginx/1.30.0</center>" in a.body
    assert behaviour.http_answer(_run({"name": "n", "image": "nginx"}), 80, 30.0, method="HEAD").body == b""
    a = behaviour.http_answer(_run({"name": "h", "image": "httpd:2.4"}), 80, 30.0)
    assert a.body == b"<html><body><h1>It works!</h1></body></html>\n"
    assert dict(a.headers)["Server"] == "Apache/2.4 (Unix)"
    a = behaviour.http_answer(_run({"name": "app", "image": "example.com/app:v1"}), 8080, 30.0, target="/hi")
    assert a.status == 200 and a.body == b"app: GET /hi answered on port 8080\n"
    a = behaviour.http_answer(_run({"name": "l", "image": "registry.k8s.io/e2e-test-images/agnhost:2.40",
                                    "args": ["liveness"]}), 8080, 30.0)
    assert a.status == 500


def test_ports_nothing_listens_on_are_refused():
    nginx = _run({"name": "n", "image": "nginx", "ports": [{"containerPort": 80}]})
    for port in (81, 8080):
        with pytest.raises(ConnectionRefusedError):
            behaviour.http_answer(nginx, port, 30.0)
    with pytest.raises(ConnectionRefusedError):  # nginx without declared ports listens on 80 only
        behaviour.http_answer(_run({"name": "n", "image": "nginx"}), 8080, 30.0)
    with pytest.raises(ConnectionRefusedError):  # sleep serves nothing
        behaviour.http_answer(_run({"name": "s", "image": "busybox", "command": ["sleep", "3600"]}), 80, 30.0)
    with pytest.raises(ConnectionRefusedError):  # not started yet
        behaviour.http_answer(_run({"name": "n", "image": "nginx"}, start=40.0, at=30.0), 80, 30.0)
    tcp_only = _run({"name": "t", "image": "busybox"}, {"k8semu.io/behaviour": "serve tcp"})
    assert behaviour.http_answer(tcp_only, 80, 30.0) is None


# ---------------------------------------------------------------------------- through the ASGI app

NGINX_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
             "spec": {"containers": [{"name": "nginx", "image": "nginx:1.30-alpine",
                                      "ports": [{"containerPort": 80}]}]}}


@pytest.fixture
def app():
    cluster = Cluster.create()
    tokens = {ADMIN: auth.admin(), **parse_token_file(f'{JANE},jane,1001,"dev"\n')}
    return APIApp(cluster.api, tokens)


def _start(api, pod, *, running=True):
    created = api.create("pods", pod, namespace="default")
    if running:
        c = pod["spec"]["containers"][0]
        status = {"phase": "Running", "containerStatuses": [{
            "name": c["name"], "ready": True, "restartCount": 0, "image": c["image"], "imageID": "",
            "state": {"running": {"startedAt": api.timestamp()}}}]}
        created = api.update("pods", {**created, "status": status}, namespace="default", subresource="status")
    return created


class Tunnel:
    """The client end of a port-forward WebSocket into the ASGI app, speaking SPDY/3.1."""

    def __init__(self, app, nursery, path="/api/v1/namespaces/default/pods/web/portforward", *, token=ADMIN,
                 subprotocols=(portforward.TUNNEL_PROTOCOL,)):
        self.to_app_w, self.to_app_r = trio.open_memory_channel(1000)
        self.from_app_w, self.from_app_r = trio.open_memory_channel(1000)
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        scope = {"type": "websocket", "path": path, "query_string": b"", "headers": headers,
                 "subprotocols": list(subprotocols), "extensions": {"websocket.http.response": {}}}
        nursery.start_soon(app, scope, self.to_app_r.receive, self.from_app_w.send)
        self.enc, self.dec = spdy.FrameEncoder(), spdy.FrameDecoder()
        self.pending: list = []
        self.next_id = 1

    async def open(self):
        """The app's first answer: the accept message, or (status, Status body) of a rejection."""
        await self.to_app_w.send({"type": "websocket.connect"})
        msg = await self.from_app_r.receive()
        if msg["type"] == "websocket.accept":
            return msg
        body = (await self.from_app_r.receive())["body"]
        return msg["status"], orjson.loads(body)

    async def write(self, *frames):
        wire = b"".join(self.enc.encode(f) for f in frames)
        for i in range(0, len(wire), 7):  # 7-byte WebSocket messages: boundaries never match frames
            await self.to_app_w.send({"type": "websocket.receive", "bytes": wire[i:i + 7]})

    async def frame(self):
        while not self.pending:
            msg = await self.from_app_r.receive()
            assert msg["type"] == "websocket.send"
            self.pending += self.dec.feed(msg["bytes"])
        return self.pending.pop(0)

    async def forward(self, port, payload: bytes, request_id=0):
        """kubectl's dance for one connection; returns (data bytes, error bytes)."""
        err_id, data_id = self.next_id, self.next_id + 2
        self.next_id += 4
        hs = (("port", str(port)), ("requestid", str(request_id)))
        await self.write(spdy.SynStream(err_id, (("streamtype", "error"), *hs)), spdy.DataFrame(err_id, fin=True))
        await self.write(spdy.SynStream(data_id, (("streamtype", "data"), *hs)), spdy.DataFrame(data_id, payload))
        data, error, fins, replies = b"", b"", set(), set()
        while fins != {err_id, data_id}:
            f = await self.frame()
            if isinstance(f, spdy.SynReply):
                replies.add(f.stream_id)
            elif isinstance(f, spdy.DataFrame):
                assert f.stream_id in replies
                if f.stream_id == data_id:
                    data += f.data
                else:
                    error += f.data
                if f.fin:
                    fins.add(f.stream_id)
        return data, error

    async def close(self):
        await self.to_app_w.send({"type": "websocket.disconnect", "code": 1000})


GET = b"GET / HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"


async def test_forwarding_to_nginx_over_the_websocket_tunnel(app):
    _start(app.api, NGINX_POD)
    async with trio.open_nursery() as nursery:
        t = Tunnel(app, nursery)
        assert (await t.open()) == {"type": "websocket.accept", "subprotocol": "SPDY/3.1+portforward.k8s.io"}
        await t.write(spdy.Ping(1))
        assert await t.frame() == spdy.Ping(1)
        # keep-alive: two requests on one connection; the client's FIN ends it
        err_id, data_id = 1, 3
        t.next_id = 5
        hs = (("port", "80"), ("requestid", "0"))
        await t.write(spdy.SynStream(err_id, (("streamtype", "error"), *hs)), spdy.DataFrame(err_id, fin=True),
                      spdy.SynStream(data_id, (("streamtype", "data"), *hs)), spdy.DataFrame(data_id, GET + GET),
                      spdy.DataFrame(data_id, fin=True))
        data = b""
        fins = set()
        while fins != {1, 3}:
            f = await t.frame()
            if isinstance(f, spdy.DataFrame):
                data += f.data if f.stream_id == data_id else b""
                assert f.stream_id == data_id or not f.data
                fins |= {f.stream_id} if f.fin else set()
        assert data.count(b"HTTP/1.1 200 OK\r\n") == 2 and data.count(b"<h1>Welcome to nginx!</h1>") == 2
        assert b"Server: nginx/1.30.0\r\n" in data and b"Content-Length: 615\r\n" in data

        # Connection: close ends the connection after one answer
        data, error = await t.forward(80, b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1)
        assert data.startswith(b"HTTP/1.1 404 Not Found\r\n") and error == b""

        # a port nothing listens on: upstream's message on the error stream
        data, error = await t.forward(81, GET, 2)
        target = portforward.PodTarget(app.api, app.api.get("pods", "web", namespace="default"))
        assert data == b""
        assert error.decode() == (
            f"error forwarding port 81 to pod {target.sandbox_id}, uid : failed to execute portforward in network "
            f'namespace "{target.netns}": failed to connect to localhost:81 inside namespace "{target.sandbox_id}", '
            "IPv4: dial tcp4 127.0.0.1:81: connect: connection refused "
            "IPv6 dial tcp6 [::1]:81: connect: connection refused ")
        assert len(target.sandbox_id) == 64 and target.netns.startswith("/var/run/netns/cni-")

        # not HTTP: nginx answers 400
        data, _ = await t.forward(80, b"\x16\x03\x01 not http\r\n\r\n", 3)
        assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n")

        # a large upload is consumed with WINDOW_UPDATEs, then answered
        body = b"z" * 50000
        req = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\nConnection: close\r\n\r\n" + body
        hs = (("port", "80"), ("requestid", "4"))
        await t.write(spdy.SynStream(t.next_id, (("streamtype", "error"), *hs)), spdy.DataFrame(t.next_id, fin=True),
                      spdy.SynStream(t.next_id + 2, (("streamtype", "data"), *hs)),
                      *[spdy.DataFrame(t.next_id + 2, req[i:i + 4096]) for i in range(0, len(req), 4096)])
        seen = []
        while not any(isinstance(f, spdy.DataFrame) and f.fin and f.stream_id == t.next_id + 2 for f in seen):
            seen.append(await t.frame())
        assert {f.stream_id for f in seen if isinstance(f, spdy.WindowUpdate)} == {0, t.next_id + 2}

        # bad stream headers: reset
        await t.write(spdy.SynStream(101, (("streamtype", "data"), ("port", "http"), ("requestid", "9"))))
        assert await t.frame() == spdy.RstStream(101, spdy.CANCEL)
        await t.close()


async def test_rejections_before_the_upgrade(app):
    api = app.api
    _start(api, {**NGINX_POD, "metadata": {"name": "pending"}}, running=False)
    _start(api, NGINX_POD)
    base = "/api/v1/namespaces/default/pods/"
    async with trio.open_nursery() as nursery:
        code, st = await Tunnel(app, nursery, base + "pending/portforward").open()
        assert code == 400 and st["reason"] == "BadRequest"
        assert st["message"] == "unable to forward port because pod is not running. Current status=Pending"
        code, st = await Tunnel(app, nursery, base + "nope/portforward").open()
        assert code == 404 and st["message"] == 'pods "nope" not found'
        code, st = await Tunnel(app, nursery, base + "web/portforward", token=JANE).open()
        assert code == 403 and st["message"] == ('pods "web" is forbidden: User "jane" cannot create resource '
                                                 '"pods/portforward" in API group "" in the namespace "default"')
        code, st = await Tunnel(app, nursery, base + "web/portforward", token="bogus").open()
        assert code == 401
        # exec is served too (no longer a 404); this pod is not scheduled
        code, st = await Tunnel(app, nursery, base + "web/exec").open()
        assert code == 400 and st["message"] == "pod web does not have a host assigned"
        code, st = await Tunnel(app, nursery, base + "web/portforward", subprotocols=("v4.channel.k8s.io",)).open()
        assert code == 400 and "SPDY/3.1+portforward.k8s.io" in st["message"]


async def test_a_spdy_upgrade_reaching_the_asgi_app_gets_a_clear_400(app):
    _start(app.api, NGINX_POD)
    headers = [(b"authorization", f"Bearer {ADMIN}".encode()), (b"connection", b"Upgrade"),
               (b"upgrade", b"SPDY/3.1"), (b"x-stream-protocol-version", b"portforward.k8s.io")]
    scope = {"type": "http", "method": "POST", "path": "/api/v1/namespaces/default/pods/web/portforward",
             "query_string": b"", "headers": headers}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg):
        sent.append(msg)

    await app(scope, receive, send)
    assert sent[0]["status"] == 400  # served by server.upgrade before the ASGI app, never here
    st = orjson.loads(sent[1]["body"])
    assert st["message"] == portforward.SPDY_UNSUPPORTED
