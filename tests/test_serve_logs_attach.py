"""``k8semu serve``: the pods/log options the kubelet honours, ``attach`` reaching the container's
own stdin, and ``tar`` for ``kubectl cp`` — in process and in virtual time.

Upstream behaviour mirrored:

* ``sinceSeconds`` / ``sinceTime`` / ``limitBytes`` on ``GET pods/NAME/log``: kube-apiserver's
  ``ValidatePodLogOptions`` (422 ``PodLogOptions "p" is invalid: …``), then the kubelet's
  ``ReadLogs``: lines stamped at/after ``now - sinceSeconds`` (the cluster's clock) or
  ``sinceTime``, output cut at ``limitBytes`` bytes.
* ``stdin: true, stdinOnce: true`` (``kubectl run -i``): what the attached client writes reaches
  the container's main process; the stdin closes when that client's input ends, so a shell
  exits; ``exit 3`` ends the container with exit code 3; what the shell printed is in its log.
* ``kubectl cp``: ``tar cf - PATH`` in the container (from the pod), ``tar xmf - -C DIR`` (to it).
"""

from __future__ import annotations

import io
import math
import tarfile
from datetime import timedelta

import orjson
import pytest
import trio

from k8semu.api import auth
from k8semu.node import behaviour, runtime
from k8semu.server import remotecommand
from k8semu.server.app import APIApp
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

ADMIN = "admin-token"


async def call(app, method, path):
    """One request through the ASGI app: (status, body bytes)."""
    path, _, qs = path.partition("?")
    scope = {"type": "http", "method": method, "path": path, "query_string": qs.encode(),
             "headers": [(b"authorization", f"Bearer {ADMIN}".encode()), (b"accept", b"application/json")]}
    sent, done = [], False

    async def receive():
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await trio.sleep_forever()

    async def send(msg):
        sent.append(msg)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


# ---------------------------------------------------------------------------- logs

@pytest.fixture
def ticking():
    """(app, cluster): pod ``p`` on a node, its container printing ``line N`` every virtual second
    since it started at t0; the clock 10 s later."""
    cluster = Cluster.create()
    api = cluster.api
    app = APIApp(api, {ADMIN: auth.admin()})
    api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"containers": [{"name": "c", "image": "busybox", "command": [
                            "sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"]}]}},
               namespace="default")
    api.bind("p", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                   "target": {"kind": "Node", "name": "n1"}}, namespace="default")
    pod = api.get("pods", "p", namespace="default")
    cs = {"name": "c", "ready": True, "restartCount": 0, "image": "busybox", "imageID": "",
          "containerID": "containerd://" + "ab" * 32, "state": {"running": {"startedAt": api.timestamp()}}}
    api.update("pods", {**pod, "status": {"phase": "Running", "containerStatuses": [cs]}},
               namespace="default", subresource="status")
    cluster.clock.jump(10)
    return app, cluster


LOG = "/api/v1/namespaces/default/pods/p/log"


async def test_since_seconds_keeps_the_lines_of_the_last_seconds_of_virtual_time(ticking):
    app, cluster = ticking
    t0 = cluster.api.now - 10
    code, body = await call(app, "GET", LOG)
    assert code == 200 and body.decode().splitlines() == [f"line {i}" for i in range(11)]
    code, body = await call(app, "GET", LOG + "?sinceSeconds=3")  # lines at now-3 .. now: 7, 8, 9, 10
    assert code == 200 and body == b"line 7\nline 8\nline 9\nline 10\n"
    since = (cluster.api.epoch + timedelta(seconds=t0 + 8)).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, body = await call(app, "GET", LOG + f"?sinceTime={since}")
    assert body == b"line 8\nline 9\nline 10\n"
    code, body = await call(app, "GET", LOG + "?sinceTime=2020-01-01T00:00:00Z&tailLines=2")
    assert body == b"line 9\nline 10\n"
    future = (cluster.api.epoch + timedelta(seconds=t0 + 3600)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert await call(app, "GET", LOG + f"?sinceTime={future}") == (200, b"")


async def test_limit_bytes_cuts_the_output_also_with_since_and_timestamps(ticking):
    app, _ = ticking
    assert await call(app, "GET", LOG + "?limitBytes=20") == (200, b"line 0\nline 1\nline 2")
    assert await call(app, "GET", LOG + "?limitBytes=10&sinceSeconds=2") == (200, b"line 8\nlin")
    code, body = await call(app, "GET", LOG + "?limitBytes=34&timestamps=true&tailLines=1")
    assert body == b"2025-01-01T00:00:10.000000000Z lin"  # the timestamp counts, as the kubelet's writer


async def test_follow_with_since_and_limit_bytes_ends_when_the_budget_is_spent(ticking):
    app, cluster = ticking

    async def tick():  # the cluster's clock moves on while the log is followed
        while True:
            await trio.sleep(0.05)
            cluster.clock.jump(0.5)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        with trio.fail_after(10):
            code, body = await call(app, "GET", LOG + "?follow=true&sinceSeconds=1&limitBytes=30")
        nursery.cancel_scope.cancel()
    assert code == 200 and body == b"line 9\nline 10\nline 11\nline 12"


@pytest.mark.parametrize("query, message", [
    ("sinceSeconds=0", 'PodLogOptions "p" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0'),
    ("sinceSeconds=3&sinceTime=2025-01-01T00:00:00Z",
     'PodLogOptions "p" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'),
    ("limitBytes=0", 'PodLogOptions "p" is invalid: limitBytes: Invalid value: 0: must be greater than 0'),
    ("tailLines=-1", 'PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'),
])
async def test_invalid_log_options_are_422_with_upstreams_messages(ticking, query, message):
    app, _ = ticking
    code, body = await call(app, "GET", f"{LOG}?{query}")
    status = orjson.loads(body)
    assert (code, status["reason"], status["message"]) == (422, "Invalid", message)
    code, body = await call(app, "GET", "/api/v1/namespaces/default/pods/nope/log?sinceSeconds=0")
    assert code == 422  # validated before the pod is read, as upstream's REST.Get


# ---------------------------------------------------------------------------- the container's stdin

def _shell(tty=False):
    return behaviour.build_program({"name": "c", "image": "busybox", "command": ["sh"], "stdin": True, "tty": tty})


def _run(program, feed, until):
    run = program.start(0.0, stdin=feed)
    effects = run.advance(until)
    lines = [(e.t, e.text) for e in effects if isinstance(e, behaviour.LogLine)]
    exits = [(e.t, e.code) for e in effects if isinstance(e, behaviour.Exited)]
    return run, lines, exits


def test_a_shell_on_an_attached_stdin_runs_each_line_and_exit_ends_the_container():
    feed = behaviour.StdinFeed()
    feed.append(5.1, "echo hi\nX=7\n")
    feed.append(6.0, "echo $X; exit 3\nnot run\n")
    run, lines, exits = _run(_shell(), feed, 100)
    # each chunk is read at the first poll instant after it arrived (5.25, 6.25)
    assert lines == [(5.25, "hi"), (6.25, "7")] and exits == [(6.25, 3)]
    _, again, exits_again = _run(_shell(), feed, 100)  # any rebuild with the same stdin does the same
    assert (again, exits_again) == (lines, exits)


def test_a_typed_unknown_program_is_not_found_and_the_shell_goes_on():
    """busybox's ``sh: nosuchcmd: not found`` (127) for what a user types that the image does not
    have, as exec does; the shell reads on (a regression: it was taken for the image's own server
    and blocked the shell for good)."""
    feed = behaviour.StdinFeed()
    feed.append(1.0, "echo a\nnosuchcmd\necho $?\nexit 4\n")
    run, lines, exits = _run(_shell(), feed, 100)
    assert [text for _, text in lines] == ["a", "sh: nosuchcmd: not found", "127"] and exits == [(1.25, 4)]


def test_chroot_runs_the_command_under_the_new_root():
    run = _shell().start(0.0)
    run.fs["/host/etc/hostname"] = "node-1\n"
    run.dirs.add("/host")
    assert _exec(run, ["chroot", "/host", "cat", "/etc/hostname"]) == (0, "node-1\n", "")
    assert _exec(run, ["chroot", "/host", "sh", "-c", "cd /etc && cat hostname && pwd"]) == (0, "node-1\n/etc\n", "")
    assert _exec(run, ["chroot", "/nope"]) == (
        1, "", "chroot: can't change root directory to '/nope': No such file or directory\n")


def test_end_of_input_ends_the_shell_with_the_last_status_and_a_terminal_shows_prompts():
    feed = behaviour.StdinFeed(tty=True)
    feed.append(1.0, "false\n")
    feed.close(2.0)
    run, lines, exits = _run(_shell(tty=True), feed, 10)
    assert exits == [(2.25, 1)]
    assert [text for _, text in lines] == ["/ # / # "]  # the prompts (no newline: the terminal echoes)


def test_an_open_stdin_waits_and_is_read_when_input_arrives_later():
    feed = behaviour.StdinFeed()
    run = _shell().start(0.0, stdin=feed)
    run.advance(50)
    assert run.exited is None and run.next_event_time() is None  # waits for input
    feed.append(50.0, "echo late\n")
    assert run.next_event_time() == 50.25
    assert [e.text for e in run.advance(51) if isinstance(e, behaviour.LogLine)] == ["late"]
    polling = behaviour.StdinFeed(poll=True)  # the kubelet's run looks at each poll instant
    polled = _shell().start(0.0, stdin=polling)
    polled.advance(0.0)
    assert polled.next_event_time() == 0.25


# ---------------------------------------------------------------------------- tar (kubectl cp)

def _exec(run, argv, stdin=""):
    out, err = [], []
    gen = behaviour.exec_command(run, argv, out.append, err.append, stdin)
    try:
        while True:
            assert next(gen) != math.inf
    except StopIteration as stop:
        return stop.value, "".join(out), "".join(err)


def test_tar_creates_and_extracts_archives_of_the_containers_files():
    run = behaviour.build_program({"name": "c", "image": "busybox", "command": ["sleep", "3600"]},
                                  files={"/data/a.txt": "alpha\n", "/data/sub/b.txt": "beta\n"}).start(0.0)
    code, out, err = _exec(run, ["tar", "cf", "-", "/data"])
    assert code == 0 and err == "tar: removing leading '/' from member names\n"
    with tarfile.open(fileobj=io.BytesIO(out.encode()), mode="r:") as tf:
        got = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    assert got == {"data/a.txt": b"alpha\n", "data/sub/b.txt": b"beta\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:  # what kubectl cp f.txt POD:/tmp/f.txt sends
        info = tarfile.TarInfo("f.txt")
        info.size = 6
        tf.addfile(info, io.BytesIO(b"hello\n"))
    code, _, err = _exec(run, ["tar", "-xmf", "-", "-C", "/tmp"], buf.getvalue().decode())
    assert (code, err) == (0, "") and run.extracted == [("/tmp/f.txt", "hello\n")]
    assert _exec(run, ["cat", "/tmp/f.txt"])[1] == "hello\n"
    assert _exec(run, ["tar", "cf", "-", "/nope"])[::2] == (1, "tar: /nope: No such file or directory\n")


# ---------------------------------------------------------------------------- attach, end to end in process

class WS:
    """The client end of an attach WebSocket (v5) into the ASGI app."""

    def __init__(self, app, nursery, pod, query):
        self.to_app_w, to_app_r = trio.open_memory_channel(100)
        from_app_w, self.from_app_r = trio.open_memory_channel(1000)
        scope = {"type": "websocket", "path": f"/api/v1/namespaces/default/pods/{pod}/attach",
                 "query_string": query, "headers": [(b"authorization", f"Bearer {ADMIN}".encode())],
                 "subprotocols": [remotecommand.V5], "extensions": {"websocket.http.response": {}}}
        nursery.start_soon(app, scope, to_app_r.receive, from_app_w.send)

    async def run(self, *messages):
        await self.to_app_w.send({"type": "websocket.connect"})
        assert (await self.from_app_r.receive())["type"] == "websocket.accept"
        for channel, data in messages:
            await self.to_app_w.send({"type": "websocket.receive", "bytes": bytes([channel]) + data})
        got = {}
        while (msg := await self.from_app_r.receive())["type"] != "websocket.close":
            got[msg["bytes"][0]] = got.get(msg["bytes"][0], b"") + msg["bytes"][1:]
        return got


def test_run_i_restart_never_exit_code_reaches_the_pod_and_its_log(monkeypatch):
    """``printf 'echo hi\\nexit 3\\n' | kubectl run tt -i --restart=Never -- sh``: the shell runs the
    lines, exit 3 ends the container (the kubelet reports exitCode 3, phase Failed), and ``hi`` is
    in the attach output and in the container's log."""
    monkeypatch.setattr(runtime, "STDIN_POLL", True)  # the kubelet polls the stdin, as under serve
    cluster = Cluster.create(seed=3)
    api = cluster.api
    app = APIApp(api, {ADMIN: auth.admin()})
    result = {}

    async def body(rt):
        api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tt"},
                            "spec": {"restartPolicy": "Never", "containers": [
                                {"name": "tt", "image": "busybox", "command": ["sh"],
                                 "stdin": True, "stdinOnce": True}]}}, namespace="default")
        while api.get("pods", "tt", namespace="default").get("status", {}).get("phase") != "Running":
            await trio.sleep(1)
        async with trio.open_nursery() as nursery:
            ws = WS(app, nursery, "tt", b"container=tt&stdin=true&stdout=true&stderr=true")
            with trio.fail_after(120):
                result["attach"] = await ws.run((remotecommand.STDIN, b"echo hi\nexit 3\n"),
                                                (remotecommand.CLOSE, bytes([remotecommand.STDIN])))
        while api.get("pods", "tt", namespace="default")["status"]["phase"] == "Running":
            await trio.sleep(0.25)
        result["pod"] = api.get("pods", "tt", namespace="default")
        result["log"] = await call(app, "GET", "/api/v1/namespaces/default/pods/tt/log")

    run_cluster(cluster, body, default_factories(cluster))
    assert result["attach"][remotecommand.STDOUT] == b"hi\n"
    assert orjson.loads(result["attach"][remotecommand.ERROR])["status"] == "Success"
    pod = result["pod"]
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert result["log"] == (200, b"hi\n")
