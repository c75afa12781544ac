"""``kubectl exec`` in process: the behaviour model's exec, the pods/exec WebSocket (v5 / v4 channel
protocols) through the ASGI app, SPDY/3.1 through ``k8semu.server.upgrade`` on a real socket, and
``k8semu exec``. (The real kubectl against ``k8semu serve``: tests/test_kubectl_exec.py.)
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import shutil

import h11
import orjson
import pytest
import trio

from conftest import one_node_cluster

from k8semu.api import auth
from k8semu.cli.main import main
from k8semu.node import behaviour
from k8semu.server import remotecommand, spdy
from k8semu.server.app import APIApp
from k8semu.server.pki import parse_token_file
from k8semu.server.run import hypercorn_config
from k8semu.server.upgrade import serve
from k8semu.sim.cluster import Cluster

ADMIN = "admin-token"
JANE = "jane-token"


# ---------------------------------------------------------------------------- the behaviour model's exec

def _container(**extra):
    return behaviour.build_program(
        {"name": "main", "image": "busybox", "command": ["sleep", "3600"], "env": [{"name": "FOO", "value": "bar"}],
         **extra},
        env=None, files={"/etc/cfg/greeting": "hello\n", "/opt/run.sh": "#!/bin/sh\necho script $1\nexit 4\n"},
    ).start(0.0)


def _exec(run, argv, stdin=""):
    """(status, stdout, stderr, virtual time it ended) of exec'ing ``argv``, or ("waits", …)."""
    out, err = [], []
    gen = behaviour.exec_command(run, argv, out.append, err.append, stdin)
    try:
        while True:
            if next(gen) == math.inf:
                return "waits", "".join(out), "".join(err), run.now
    except StopIteration as stop:
        return stop.value, "".join(out), "".join(err), run.now


class _OpenStdin:
    """A stdin that has not ended and has nothing yet."""

    def read_all(self):
        return None

    def read_line(self):
        return None


def test_exec_runs_the_command_in_the_containers_environment_and_files():
    run = _container()
    run.advance(100.0)
    assert _exec(run, ["echo", "hi"]) == (0, "hi\n", "", 100.0)
    assert _exec(run, ["printenv", "FOO"])[:3] == (0, "bar\n", "")
    assert _exec(run, ["cat", "/etc/cfg/greeting"])[:3] == (0, "hello\n", "")
    assert _exec(run, ["sh", "-c", "echo out; echo err >&2; exit 3"])[:3] == (3, "out\n", "err\n")
    assert _exec(run, ["/opt/run.sh", "x"])[:3] == (4, "script x\n", "")
    # virtual time: the process sleeps, `date` reads the clock it was resumed at
    assert _exec(run, ["sh", "-c", "sleep 5; date +%S"]) == (0, "45\n", "", 105.0)
    # stdin: all of it, or an open stdin the command waits on
    assert _exec(run, ["cat"], "abc\n")[:3] == (0, "abc\n", "")
    assert _exec(run, ["sh"], "echo a; exit 2\n")[:3] == (2, "a\n", "")
    assert _exec(run, ["cat"], _OpenStdin())[0] == "waits"
    # files written by an exec stay in the run
    assert _exec(run, ["sh", "-c", "echo x > /tmp/f"])[0] == 0 and run.fs["/tmp/f"] == "x\n"
    assert run.exited is None  # the container itself goes on


def test_missing_programs_fail_as_a_container_without_the_binary():
    run = _container()
    with pytest.raises(behaviour.ExecNotFound, match=r'^exec: "foo": executable file not found in \$PATH$'):
        behaviour.exec_command(run, ["foo"], print, print)
    with pytest.raises(behaviour.ExecNotFound, match=r'^exec: "/bin/foo": stat /bin/foo: no such file or directory$'):
        behaviour.exec_command(run, ["/bin/foo"], print, print)
    # inside a shell: busybox's message, status 127
    assert _exec(run, ["sh", "-c", "foo; echo $?"])[:3] == (0, "127\n", "sh: foo: not found\n")
    # a known program run in a way the model cannot interpret ends at once
    assert _exec(run, ["python", "manage.py", "migrate"])[:3] == (0, "", "")
    assert _exec(run, ["/bin/sh", "-c", "echo ok"])[:3] == (0, "ok\n", "")


def test_a_shell_session_keeps_its_state_between_lines():
    run = _container()
    out, err = [], []
    s = behaviour.ShellSession(run, "sh", out.append, err.append, env={"TERM": "xterm"})
    assert behaviour.ShellSession.wanted(["sh"]) and behaviour.ShellSession.wanted(["/bin/bash", "-l"])
    assert not behaviour.ShellSession.wanted(["sh", "-c", "x"]) and not behaviour.ShellSession.wanted(["sh", "f.sh"])
    assert s.prompt() == "/ # " and s.prompt(continuation=True) == "> "

    def line(text):
        gen = s.run_text(text)
        with contextlib.suppress(StopIteration):
            while True:
                next(gen)

    line("cd /etc; X=42; export Y=1\n")
    assert s.prompt() == "/etc # "
    assert s.incomplete("if true; then\n") and s.incomplete("echo 'a\n") and s.incomplete("echo a |\n")
    assert not s.incomplete("echo a\n") and not s.incomplete("fi\n")
    line("if [ $X = 42 ]; then\necho inside $PWD; fi\n")
    line("printenv TERM Y\n")
    line("fi\n")
    line("false\n")
    assert s.status == 1 and s.exit_code is None
    line("exit 5\n")
    assert s.exit_code == 5
    assert "".join(out) == "inside /etc\nxterm\n1\n"
    assert "".join(err) == "sh: syntax error: unexpected 'fi'\n"
    bash = behaviour.ShellSession(_container(), "bash", print, print)
    assert bash.prompt() == "root@localhost:/# "


# ---------------------------------------------------------------------------- the API app

BOX = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box"},
       "spec": {"nodeName": "node-1", "containers": [
           {"name": "main", "image": "busybox", "command": ["sleep", "3600"], "env": [{"name": "FOO", "value": "bar"}]},
           {"name": "side", "image": "nginx:1.30-alpine"}]}}


@pytest.fixture
def app():
    cluster = Cluster.create()
    tokens = {ADMIN: auth.admin(), **parse_token_file(f'{JANE},jane,1001,"dev"\n')}
    app = APIApp(cluster.api, tokens)
    _running(app.api, BOX)
    _running(app.api, {**BOX, "metadata": {"name": "stopped"}}, stopped=("main",))
    _running(app.api, {**BOX, "metadata": {"name": "pending"}, "spec": {**BOX["spec"], "nodeName": ""}})
    return app


def _running(api, pod, stopped=()):
    created = api.create("pods", pod, namespace="default")
    now = api.timestamp()
    statuses = [{"name": c["name"], "ready": c["name"] not in stopped, "restartCount": 0, "image": c["image"],
                 "imageID": "", "containerID": f"containerd://{i}" * 8,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
                 if c["name"] in stopped else {"running": {"startedAt": now}}}
                for i, c in enumerate(pod["spec"]["containers"])]
    return api.update("pods", {**created, "status": {"phase": "Running", "containerStatuses": statuses}},
                      namespace="default", subresource="status")


def _query(*command, container="main", stdin=False, tty=False):
    parts = [("command", c) for c in command] + [("container", container), ("stdin", str(stdin).lower()),
                                                 ("stdout", "true"), ("stderr", "true"), ("tty", str(tty).lower())]
    from urllib.parse import urlencode

    return urlencode(parts).encode()


class WS:
    """The client end of an exec WebSocket into the ASGI app."""

    def __init__(self, app, nursery, query, *, pod="box", token=ADMIN, subprotocols=(remotecommand.V5,)):
        self.to_app_w, self.to_app_r = trio.open_memory_channel(1000)
        self.from_app_w, self.from_app_r = trio.open_memory_channel(1000)
        headers = [(b"authorization", f"Bearer {token}".encode())]
        scope = {"type": "websocket", "path": f"/api/v1/namespaces/default/pods/{pod}/exec", "query_string": query,
                 "headers": headers, "subprotocols": list(subprotocols), "extensions": {"websocket.http.response": {}}}
        nursery.start_soon(app, scope, self.to_app_r.receive, self.from_app_w.send)

    async def open(self):
        await self.to_app_w.send({"type": "websocket.connect"})
        msg = await self.from_app_r.receive()
        if msg["type"] == "websocket.accept":
            return msg
        body = (await self.from_app_r.receive())["body"]
        ctype = dict(msg["headers"])[b"content-type"]
        return msg["status"], orjson.loads(body) if ctype == b"application/json" else body.decode()

    async def send(self, channel, data=b""):
        await self.to_app_w.send({"type": "websocket.receive", "bytes": bytes([channel]) + data})

    async def until_close(self):
        """{channel: bytes} of everything until the server closes; the first message separately."""
        got, first = {}, None
        while True:
            msg = await self.from_app_r.receive()
            if msg["type"] == "websocket.close":
                assert msg["code"] == 1000
                return first, got
            data = msg["bytes"]
            first = data if first is None else first
            got[data[0]] = got.get(data[0], b"") + data[1:]


async def _exec_ws(app, query, **kw):
    async with trio.open_nursery() as nursery:
        ws = WS(app, nursery, query, **kw)
        accept = await ws.open()
        assert accept == {"type": "websocket.accept", "subprotocol": (kw.get("subprotocols") or [remotecommand.V5])[0]}
        first, got = await ws.until_close()
        return first, got.get(1, b""), got.get(2, b""), orjson.loads(got[3])


async def test_websocket_v5_runs_the_command_and_reports_the_exit_code(app):
    first, out, err, status = await _exec_ws(app, _query("sh", "-c", "echo $FOO; echo oops >&2"))
    assert first == b"\x01"  # the empty message on the lowest writable channel comes first
    assert (out, err, status) == (b"bar\n", b"oops\n", {"metadata": {}, "status": "Success"})
    _, out, _, status = await _exec_ws(app, _query("sh", "-c", "exit 3"))
    assert status == {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                      "message": "command terminated with non-zero exit code: command terminated with exit code 3",
                      "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}
    # v4 is the kubelet's own server: its message names the command
    _, _, _, status = await _exec_ws(app, _query("sh", "-c", "exit 3"), subprotocols=(remotecommand.V4,))
    assert status["message"] == "command terminated with non-zero exit code: error executing command " \
                                "[sh -c exit 3], exit code 3"


async def test_websocket_missing_program_and_stopped_container(app):
    _, _, _, status = await _exec_ws(app, _query("foo"))
    msg = re.sub(r'"[0-9a-f]{64}"', '"ID"', status["message"])
    assert msg == ('Internal error occurred: Internal error occurred: error executing command in container: failed '
                   'to exec in container: failed to start exec "ID": OCI runtime exec failed: exec failed: unable to '
                   'start container process: exec: "foo": executable file not found in $PATH: unknown')
    assert status["reason"] == "InternalError" and status["code"] == 500
    _, _, _, status = await _exec_ws(app, _query("foo"), subprotocols=(remotecommand.V4,))
    assert status["message"].startswith("Internal error occurred: error executing command in container: ")
    # not running: the translator reports the kubelet's refusal on the error channel (v5) ...
    _, _, _, status = await _exec_ws(app, _query("ls"), pod="stopped")
    assert status["message"] == 'Internal error occurred: unable to upgrade connection: container not found ("main")'
    # ... the kubelet's own WebSocket server refuses the handshake (v4)
    async with trio.open_nursery() as nursery:
        got = await WS(app, nursery, _query("ls"), pod="stopped", subprotocols=(remotecommand.V4,)).open()
    assert got == (500, 'container not found ("main")')


async def test_websocket_refusals_before_the_upgrade(app):
    async with trio.open_nursery() as nursery:
        code, st = await WS(app, nursery, _query("ls", container="bogus")).open()
        assert (code, st["message"]) == (400, "container bogus is not valid for pod box")
        code, st = await WS(app, nursery, _query("ls", container="")).open()
        assert (code, st["message"]) == (400, "a container name must be specified for pod box, "
                                              "choose one of: [main side]")
        code, st = await WS(app, nursery, _query("ls"), pod="nope").open()
        assert (code, st["message"]) == (404, 'pods "nope" not found')
        code, st = await WS(app, nursery, _query("ls"), pod="pending").open()
        assert (code, st["message"]) == (400, "pod pending does not have a host assigned")
        code, st = await WS(app, nursery, _query("ls"), token=JANE).open()
        assert (code, st["message"]) == (403, 'pods "box" is forbidden: User "jane" cannot create resource '
                                              '"pods/exec" in API group "" in the namespace "default"')
        code, st = await WS(app, nursery, _query("ls"), subprotocols=("channel.k8s.io",)).open()
        assert code == 400 and "v5.channel.k8s.io" in st["message"]


async def test_websocket_stdin_runs_a_shell_line_by_line_and_ends_with_close(app):
    async with trio.open_nursery() as nursery:
        ws = WS(app, nursery, _query("sh", stdin=True))
        await ws.open()
        assert await ws.from_app_r.receive() == {"type": "websocket.send", "bytes": b"\x01"}
        await ws.send(0, b"X=4")
        await ws.send(0, b"2; echo $X\n")
        assert await ws.from_app_r.receive() == {"type": "websocket.send", "bytes": b"\x0142\n"}
        await ws.send(0, b"false\n")
        await ws.send(255, b"\x00")  # v5 CLOSE of stdin: the shell ends with the last status
        _, got = await ws.until_close()
        assert orjson.loads(got[3])["details"]["causes"] == [{"reason": "ExitCode", "message": "1"}]
    async with trio.open_nursery() as nursery:  # a command reading stdin gets all of it once it ends
        ws = WS(app, nursery, _query("sh", "-c", "echo first; cat; echo last", stdin=True))
        await ws.open()
        await ws.send(0, b"a\n")
        await ws.send(0, b"b\n")
        await ws.send(255, b"\x00")
        _, got = await ws.until_close()
        assert got[1] == b"first\na\nb\nlast\n" and orjson.loads(got[3])["status"] == "Success"


async def test_websocket_terminal_echoes_prompts_and_interrupts(app):
    async with trio.open_nursery() as nursery:
        ws = WS(app, nursery, _query("sh", stdin=True, tty=True))
        await ws.open()
        seen = b""

        async def expect(tail):  # typing ahead is echoed at once, as a terminal does: wait for the prompt
            nonlocal seen
            while not seen.endswith(tail):
                seen += (await ws.from_app_r.receive())["bytes"][1:]

        await expect(b"/ # ")
        await ws.send(4, b'{"Width":80,"Height":24}')  # resize: read and ignored
        await ws.send(0, b"echo hix\x7f\r")
        await expect(b"hi\r\n/ # ")
        await ws.send(0, b"sleep 1000\r")
        await expect(b"sleep 1000\r\n")
        await ws.send(0, b"\x03")
        await expect(b"^C\r\n/ # ")
        await ws.send(0, b"exit 7\r")
        _, got = await ws.until_close()
    assert seen + got[1] == b"/ # echo hix\b \b\r\nhi\r\n/ # sleep 1000\r\n^C\r\n/ # exit 7\r\n"
    assert 2 not in got and orjson.loads(got[3])["details"]["causes"][0]["message"] == "7"


async def test_plain_http_to_exec_needs_an_upgrade(app):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/api/v1/namespaces/default/pods/box/exec",
             "query_string": _query("ls"), "headers": [(b"authorization", f"Bearer {ADMIN}".encode())]}
    async def send(msg):
        sent.append(msg)

    await app(scope, receive, send)
    assert sent[0]["status"] == 400 and orjson.loads(sent[1]["body"])["message"] == "Upgrade request required"


# ---------------------------------------------------------------------------- SPDY on a real socket

class SpdyClient:
    """client-go's side of a SPDY exec, on a plain-HTTP connection to :func:`serve`."""

    def __init__(self, stream):
        self.stream = stream
        self.enc, self.dec = spdy.FrameEncoder(), spdy.FrameDecoder()
        self.pending = []

    @classmethod
    async def connect(cls, port, query, *, pod="box", token=ADMIN, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"),
                      subresource="exec"):
        """A client after ``101``, or (status, headers, body) of a refusal."""
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        conn = h11.Connection(h11.CLIENT)
        headers = [("Host", "localhost"), ("Authorization", f"Bearer {token}"), ("Connection", "Upgrade"),
                   ("Upgrade", "SPDY/3.1"), *[("X-Stream-Protocol-Version", p) for p in protocols],
                   ("Content-Length", "0")]
        await stream.send_all(conn.send(h11.Request(method="POST", headers=headers,
                                                    target=f"/api/v1/namespaces/default/pods/{pod}/{subresource}?"
                                                           + query.decode()))
                              + conn.send(h11.EndOfMessage()))
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
                continue
            if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
                client = cls(stream)
                client.headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                client.pending = client.dec.feed(conn.trailing_data[0])
                return client
            if isinstance(event, h11.Response):
                response, body = event, b""
                while not isinstance(event := conn.next_event(), h11.EndOfMessage):
                    if event is h11.NEED_DATA:
                        conn.receive_data(await stream.receive_some(65536))
                    else:
                        body += event.data
                await stream.aclose()
                return response.status_code, {k.decode().lower(): v.decode() for k, v in response.headers}, body

    async def frame(self):
        while not self.pending:
            data = await self.stream.receive_some(65536)
            assert data, "connection closed"
            self.pending += self.dec.feed(data)
        return self.pending.pop(0)

    async def write(self, *frames):
        await self.stream.send_all(b"".join(self.enc.encode(f) for f in frames))

    async def run(self, kinds=("error", "stdout", "stderr"), stdin=None):
        """Open the streams, send ``stdin`` (then FIN), read until GOAWAY: {kind: bytes}."""
        ids = {kind: 2 * i + 1 for i, kind in enumerate(kinds)}
        await self.write(*[spdy.SynStream(sid, (("streamtype", kind),)) for kind, sid in ids.items()])
        if stdin is not None:
            await self.write(spdy.DataFrame(ids["stdin"], stdin, fin=True))
        by_id = {sid: kind for kind, sid in ids.items()}
        got, replies = {k: b"" for k in kinds}, set()
        while True:
            f = await self.frame()
            if isinstance(f, spdy.SynReply):
                replies.add(f.stream_id)
            elif isinstance(f, spdy.DataFrame):
                got[by_id[f.stream_id]] += f.data
            elif isinstance(f, spdy.GoAway):
                assert replies == set(by_id)
                await self.stream.aclose()
                return got


@pytest.fixture
async def port(app, nursery):
    stop = trio.Event()
    urls = await nursery.start(lambda task_status: serve(app, hypercorn_config("127.0.0.1", 0, None, 1.0),
                                                         raw_upgrade=app.raw_upgrade, shutdown_trigger=stop.wait,
                                                         task_status=task_status))
    yield int(urls[0].rsplit(":", 1)[1])
    stop.set()


async def test_spdy_exec_through_the_upgrade_front(app, port):
    client = await SpdyClient.connect(port, _query("sh", "-c", "echo $FOO; echo e >&2; exit 3"))
    assert client.headers["upgrade"] == "SPDY/3.1" and client.headers["x-stream-protocol-version"] == "v4.channel.k8s.io"
    got = await client.run()
    assert got["stdout"] == b"bar\n" and got["stderr"] == b"e\n"
    assert orjson.loads(got["error"]) == {
        "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
        "message": "command terminated with non-zero exit code: error executing command [sh -c echo $FOO; "
                   "echo e >&2; exit 3], exit code 3",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}
    client = await SpdyClient.connect(port, _query("cat", stdin=True))
    got = await client.run(("error", "stdin", "stdout", "stderr"), stdin=b"piped\n")
    assert got["stdout"] == b"piped\n" and orjson.loads(got["error"])["status"] == "Success"


async def test_spdy_refusals_are_plain_responses(app, port):
    code, headers, body = await SpdyClient.connect(port, _query("ls"), pod="stopped")
    assert (code, body) == (500, b'container not found ("main")')  # kubectl: unable to upgrade connection: …
    code, headers, body = await SpdyClient.connect(port, _query("ls", container="bogus"))
    assert code == 400 and orjson.loads(body)["message"] == "container bogus is not valid for pod box"
    code, headers, body = await SpdyClient.connect(port, _query("ls"), token="bogus")
    assert code == 401 and orjson.loads(body)["reason"] == "Unauthorized"
    code, headers, body = await SpdyClient.connect(port, _query("ls"), protocols=("v3.channel.k8s.io",))
    assert code == 403 and headers["x-accepted-stream-protocol-versions"] == "v4.channel.k8s.io"
    assert body == (b"unable to upgrade: unable to negotiate protocol: client supports [v3.channel.k8s.io], "
                    b"server accepts [v4.channel.k8s.io]")


async def test_the_front_serves_keep_alive_requests_and_spdy_upgrades(app, port):
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        # two requests on one keep-alive connection, the first one read by the front
        await stream.send_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"ok"):
            data += await stream.receive_some(65536)
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b'"gitVersion":"v1.33.1"' in data
    # a SPDY upgrade of port-forward is taken by the front too (kubectl <= 1.30 port-forward)
    client = await SpdyClient.connect(port, b"", protocols=("portforward.k8s.io",), subresource="portforward")
    assert not isinstance(client, tuple) and client.headers["x-stream-protocol-version"] == "portforward.k8s.io"
    await client.stream.aclose()


# ---------------------------------------------------------------------------- k8semu exec

POD_YAML = """apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: "hello from a configmap"}
---
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    env: [{name: FOO, value: bar}]
    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
  - {name: side, image: "nginx:1.30-alpine"}
  volumes: [{name: cfg, configMap: {name: cfg}}]
---
apiVersion: v1
kind: Pod
metadata: {name: oneshot, annotations: {kubectl.kubernetes.io/default-container: b}}
spec:
  restartPolicy: Never
  containers:
  - {name: a, image: busybox, command: ["sh", "-c", "echo bye"]}
  - {name: b, image: busybox, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers: [{name: a, image: busybox, command: ["true"]}]
"""


@pytest.fixture(scope="module")
def exec_cluster(tmp_path_factory):
    return one_node_cluster(tmp_path_factory, "exec", POD_YAML, "30s")


@pytest.fixture
def k8semu(exec_cluster, tmp_path, capsys, monkeypatch):
    path = tmp_path / "cluster.log"
    shutil.copy(exec_cluster, path)

    def run(*args, stdin=""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        capsys.readouterr()
        rc = main(["--cluster", str(path), "exec", *args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def test_k8semu_exec_runs_commands_like_kubectl(k8semu):
    assert k8semu("box", "--", "echo", "hi") == (0, "hi\n", 'Defaulted container "main" out of: main, side\n')
    assert k8semu("box", "-c", "main", "--", "printenv", "HOSTNAME", "FOO") == (0, "box\nbar\n", "")
    assert k8semu("-c", "main", "box", "--", "cat", "/etc/cfg/greeting") == (0, "hello from a configmap", "")
    assert k8semu("box", "-c", "main", "--", "sh", "-c", "echo a; exit 3") == \
        (3, "a\n", "command terminated with exit code 3\n")
    assert k8semu("box", "-c", "side", "--", "printenv", "FOO") == (1, "", "command terminated with exit code 1\n")
    assert k8semu("oneshot", "--", "hostname") == (0, "oneshot\n", "")  # the annotation's container, silently
    assert k8semu("-i", "box", "-c", "main", "--", "sh", stdin="echo $FOO; exit 4\n") == \
        (4, "bar\n", "command terminated with exit code 4\n")
    assert k8semu("-it", "box", "-c", "main", "--", "cat", stdin="typed\n") == \
        (0, "typed\n", "Unable to use a TTY - input is not a terminal or the right kind of file\n")


def test_k8semu_exec_errors(k8semu):
    rc, out, err = k8semu("box", "-c", "main", "--", "foo")
    assert rc == 1 and out == "" and re.sub(r'"[0-9a-f]{64}"', '"ID"', err) == (
        'error: Internal error occurred: Internal error occurred: error executing command in container: failed to '
        'exec in container: failed to start exec "ID": OCI runtime exec failed: exec failed: unable to start '
        'container process: exec: "foo": executable file not found in $PATH: unknown\n')
    assert k8semu("oneshot", "-c", "a", "--", "ls") == (
        1, "", 'error: Internal error occurred: unable to upgrade connection: container not found ("a")\n')
    assert k8semu("box", "-c", "bogus", "--", "ls") == (
        1, "", "Error from server (BadRequest): container bogus is not valid for pod box\n")
    assert k8semu("nope", "--", "ls") == (1, "", 'Error from server (NotFound): pods "nope" not found\n')
    assert k8semu("done", "--", "ls") == (
        1, "", "error: cannot exec into a container in a completed pod; current phase is Succeeded\n")
    assert k8semu("box", "-c", "main") == (1, "", "error: you must specify at least one command for the container\n")
    rc, _, err = k8semu("box", "-c", "side", "--", "nginx")
    assert rc == 1 and err.startswith("error: the command is still running and would not end (nginx waits forever")


def test_id_and_whoami_follow_the_security_context(k, tmp_path):
    """The docs' security-context demo: ``runAsUser`` 1000, ``runAsGroup`` 3000, ``fsGroup`` 2000;
    containerd 2 puts the primary group first among the supplementary ones."""
    manifest = tmp_path / "sc.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: sc}\nspec:\n"
                        "  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000]}\n"
                        "  containers: [{name: c, image: busybox, command: [sleep, '3600']}]\n")
    assert k("apply", "-f", str(manifest), "-q")[0] == 0
    assert k("exec", "sc", "--", "id") == (0, ["uid=1000 gid=3000 groups=3000,4000,2000"], [])
    assert k("exec", "sc", "--", "whoami") == (
        1, [], ["whoami: unknown uid 1000", "command terminated with exit code 1"])
    assert k("exec", "deploy/web", "--", "id") == (0, ["uid=0(root) gid=0(root) groups=0(root)"], [])
