"""Several processes on one cluster file, Ctrl-C, and logs written by ``k8semu serve``.

- Writers take turns: each holds the cluster's lock (``cluster.log.lock``)
  from opening the log to closing it; a second one waits and says so once;
  ``k8semu serve`` holds it for its life and writing commands fail at once
  while it does; read-only commands read a consistent prefix meanwhile.
- SIGINT/SIGTERM stops a session cleanly: exit 130/143, one line, an end
  mark saying where, and ``k8semu replay`` re-runs the session to that point.
- A log ``k8semu serve`` wrote has session marks; replay says in one line
  why it cannot re-execute them; bisect and the other readers work on it.

The processes are real subprocesses (``python -m k8semu.cli.main``); every
wait polls the file or the process and ends as soon as what it waits for
happens (a generous deadline only guards against a hang).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from k8semu.cli import session
from k8semu.cli.durations import parse_duration
from k8semu.cli.main import main
from k8semu.store import EventLog
from k8semu.timeline import ReplayError, open_log, replay, sessions_of

ROOT = Path(__file__).resolve().parents[1]
WEB = str(ROOT / "manifests" / "web.yaml")
LOOPER = """\
apiVersion: v1
kind: Pod
metadata: {name: looper}
spec:
  containers:
  - {name: c, image: "busybox:1.37", command: [sh, -c, "while true; do echo tick; sleep 5; done"]}
"""
DEADLINE = 60.0  # seconds: only a hang reaches it
INTERRUPTED = re.compile(r"^k8semu: interrupted at (\S+) \(revision (\d+)\)$")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A bare 3-worker cluster with manifests/web.yaml applied and settled."""
    path = tmp_path_factory.mktemp("lab") / "cluster.log"
    assert main(["--cluster", str(path), "cluster", "create", "--bare"]) == 0
    assert main(["--cluster", str(path), "apply", "-f", WEB, "-q"]) == 0
    return path


@pytest.fixture
def cluster(lab, tmp_path, capsys) -> Path:
    """A fresh copy of the lab cluster (no lock file: nobody holds it)."""
    path = tmp_path / "cluster.log"
    shutil.copy(lab, path)
    capsys.readouterr()
    return path


def k8semu(path: Path, *argv: str, **kw) -> subprocess.Popen:
    """``k8semu --cluster PATH ARGV…`` as a subprocess (stdout and stderr piped, text)."""
    return subprocess.Popen([sys.executable, "-m", "k8semu.cli.main", "--cluster", str(path), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=path.parent, **kw)


def wait_until(predicate, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def lines_after(path: Path, offset: int) -> list[dict]:
    """The complete lines of the log after byte ``offset``, parsed (a line being written is left out)."""
    data = path.read_bytes()[offset:]
    return [orjson.loads(line) for line in data.split(b"\n")[:-1]]


def started_and_ran(path: Path, offset: int, seconds: float) -> bool:
    """A session started after ``offset`` and its records have reached ``seconds`` past its start."""
    entries = lines_after(path, offset)
    starts = [e for e in entries if e.get("type") == "SESSION" and e.get("event") == "start"]
    if not starts:
        return False
    return any("key" in e and e["t"] >= starts[0]["t"] + seconds for e in entries)


# ---------------------------------------------------------------------- one writer at a time
def test_writers_wait_for_each_other_and_the_log_stays_whole(cluster, monkeypatch, tmp_path):
    job = str(ROOT / "manifests" / "job.yaml")
    # this test process holds the lock first, as a command would, so all three have to wait
    monkeypatch.setattr(session, "command_line", ["--cluster", str(cluster), "apply", "-f", "web.yaml"])
    held = session.lock_cluster(cluster)
    assert json.loads(session.lock_path(cluster).read_text()) == {
        "pid": os.getpid(), "command": "apply -f web.yaml", "serve": False}
    procs = [k8semu(cluster, "scale", "deployment", "web", "--replicas=5"),
             k8semu(cluster, "apply", "-f", job, "-q"),
             k8semu(cluster, "advance", "5m")]
    waiting = f"waiting for k8semu (pid {os.getpid()}: apply -f web.yaml) to finish with {cluster}"
    errs = ["" for _ in procs]
    try:
        for i, p in enumerate(procs):
            errs[i] = p.stderr.readline()  # the first thing each says is that it waits
            assert errs[i] == waiting + "\n"
        head = EventLog.open(cluster, read_only=True).revision
    finally:
        held.release()
    outs = []
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=DEADLINE)
        outs.append(out)
        errs[i] += err
        assert p.returncode == 0, errs[i]
    assert outs[0] == "deployment.apps/web scaled\n"
    assert outs[1] == "job.batch/countdown created\n"
    assert outs[2].startswith("advanced 5m0s: virtual time is now ")
    # each said once that it waited (for the test, or for one of the others)
    for err in errs:
        assert len([line for line in err.splitlines() if line.startswith("waiting for k8semu (pid ")]) == 1, err
    # the log reads back whole: three sessions one after the other, each starting where the last ended
    log = EventLog.open(cluster, read_only=True, verify=True)
    assert log.torn_line is None
    mine = [s for s in sessions_of(log) if s.start_rev >= head]
    assert len(mine) == 3
    for before, after in zip(mine, mine[1:]):
        assert before.end is not None and before.end_rev == after.start_rev
    assert mine[-1].end_rev == log.revision
    dep = log.get("/registry/deployments.apps/default/web").object
    assert dep["spec"]["replicas"] == 5
    assert log.get("/registry/jobs.batch/default/countdown") is not None
    # and nobody holds the lock any more: the next command runs at once
    assert session.lock_path(cluster).read_text() == ""
    assert main(["--cluster", str(cluster), "get", "deployment", "web", "-o", "name"]) == 0


def test_a_writing_command_waits_for_the_lock_and_reads_what_the_holder_wrote(cluster, capsys, monkeypatch):
    # in one process a lock is shared by its opens (flock would wait for itself); another process waits
    held = session.lock_cluster(cluster)
    again = session.lock_cluster(cluster)
    again.release()
    assert json.loads(session.lock_path(cluster).read_text())["pid"] == os.getpid()
    p = k8semu(cluster, "label", "deployment", "web", "tier=front")
    try:
        assert p.stderr.readline().startswith(f"waiting for k8semu (pid {os.getpid()}: ")
        # what the holder writes meanwhile is there for the waiter: it opens the log once it has the lock
        assert main(["--cluster", str(cluster), "scale", "deployment", "web", "--replicas", "3"]) == 0
    finally:
        held.release()
    out, err = p.communicate(timeout=DEADLINE)
    assert (p.returncode, out, err) == (0, "deployment.apps/web labeled\n", "")
    log = EventLog.open(cluster, read_only=True)
    dep = log.get("/registry/deployments.apps/default/web").object
    assert dep["spec"]["replicas"] == 3 and dep["metadata"]["labels"]["tier"] == "front"


def test_read_only_commands_read_a_consistent_prefix_while_a_writer_appends(cluster, capsys):
    writer = k8semu(cluster, "advance", "2h")
    try:
        start = cluster.stat().st_size
        wait_until(lambda: cluster.stat().st_size > start + 20_000, "the writer to append")
        # a last line cut in the middle, as a reader may find one being written, is dropped silently
        torn = cluster.parent / "torn.log"
        data = cluster.read_bytes()
        torn.write_bytes(data[:data.rindex(b"\n", 0, len(data) - 1) + 1] + b'{"rev":99999,"t":1.0,"type":"MOD')
        for path, argv in ((cluster, ["get", "deployment", "web"]), (cluster, ["timeline", "--limit", "1"]),
                           (cluster, ["history", "deployment/web"]), (cluster, ["get", "nodes", "--at", "60s"]),
                           (torn, ["get", "deployment", "web"]), (torn, ["events"])):
            capsys.readouterr()
            assert main(["--cluster", str(path), *argv]) == 0, argv
            out, err = capsys.readouterr()
            assert out and err == "", (argv, err)
        # no revision is missing or repeated in any snapshot taken meanwhile
        for _ in range(5):
            log = EventLog.open(cluster, read_only=True)
            assert log.revision == len(log.records(0)) and log.revision >= 121
    finally:
        writer.send_signal(signal.SIGINT)
        writer.communicate(timeout=DEADLINE)
    assert writer.returncode == 130


# ---------------------------------------------------------------------- Ctrl-C
def interrupt(path: Path, argv: list[str], *, after: float, sig: int = signal.SIGINT) -> tuple[int, str, str]:
    """Run ``k8semu ARGV`` and send it ``sig`` once its session's records are ``after`` virtual
    seconds past the session's start; returns (exit code, stdout, stderr)."""
    offset = path.stat().st_size
    p = k8semu(path, *argv)
    try:
        wait_until(lambda: p.poll() is not None or started_and_ran(path, offset, after), "the session to run")
        p.send_signal(sig)
        out, err = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()  # by pid: only the process this test started
            p.wait()
    return p.returncode, out, err


def end_mark(path: Path) -> dict:
    last = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return orjson.loads(last)


def test_ctrl_c_stops_advance_cleanly_and_replay_reaches_the_same_point(cluster, capsys):
    code, out, err = interrupt(cluster, ["advance", "6h"], after=90)
    assert code == 130 and out == ""
    assert len(err.splitlines()) == 1, err
    m = INTERRUPTED.match(err.strip())
    assert m, err
    when, rev = parse_duration(m.group(1)), int(m.group(2))
    end = end_mark(cluster)  # the log ends with the session's end mark, which says where it stopped
    assert end["type"] == "SESSION" and end["event"] == "end"
    assert end["interrupted"] is True and end["signal"] == "SIGINT" and end["settled"] is False
    assert end["rev"] == rev and end["t"] == pytest.approx(when, abs=1e-6)
    log = open_log(cluster)
    assert log.torn_line is None and log.revision == rev
    session_ = sessions_of(log)[-1]
    assert session_.start["for"] == 21600.0 and session_.end == end
    assert 90 <= end["t"] - session_.start["t"] < 21600
    assert log.record(rev).time < end["t"]  # it stopped between two instants, after every write of the last
    # the session is re-executed to exactly that point, record by record
    result = replay(log)
    assert result.identical, result.divergence.lines()
    assert result.records == rev
    # and the cluster goes on from there
    assert main(["--cluster", str(cluster), "advance", "10s"]) == 0
    assert open_log(cluster).revision > rev


def test_sigterm_stops_a_session_the_same_way_with_143(cluster):
    code, out, err = interrupt(cluster, ["advance", "6h"], after=30, sig=signal.SIGTERM)
    assert (code, out) == (143, "") and INTERRUPTED.match(err.strip()) and len(err.splitlines()) == 1
    end = end_mark(cluster)
    assert end["interrupted"] is True and end["signal"] == "SIGTERM"
    assert EventLog.open(cluster, read_only=True, verify=True).revision == end["rev"]


def test_ctrl_c_while_apply_settles_keeps_what_it_applied(cluster):
    (cluster.parent / "looper.yaml").write_text(LOOPER)  # a pod that never lets the cluster settle
    code, out, err = interrupt(cluster, ["apply", "-f", "looper.yaml"], after=60)
    assert code == 130
    assert out == "pod/looper created\n"  # what it did before; no summary, no traceback
    assert len(err.splitlines()) == 1 and INTERRUPTED.match(err.strip()), err
    end = end_mark(cluster)
    assert end["interrupted"] is True and end["settled"] is False
    log = open_log(cluster)
    start = sessions_of(log)[-1].start
    assert start["settle"] is True and 60 <= end["t"] - start["t"] < 600
    assert log.get("/registry/pods/default/looper") is not None
    assert main(["--cluster", str(cluster), "delete", "pod", "looper", "--wait=false"]) == 0


def test_replay_stops_an_interrupted_settle_session_where_it_stopped(cluster):
    (cluster.parent / "looper.yaml").write_text(LOOPER)
    code, _, _ = interrupt(cluster, ["apply", "-f", "looper.yaml"], after=60)
    assert code == 130
    result = replay(open_log(cluster))
    assert result.identical, result.divergence.lines()


# ---------------------------------------------------------------------- k8semu serve
def test_serve_holds_the_cluster_and_its_log_is_marked(cluster, capsys):
    kubeconfig = cluster.parent / "kubeconfig"
    before = open_log(cluster).revision
    srv = k8semu(cluster, "serve", "--port", "0", "--insecure-http", "--speed", "20",
                 "--kubeconfig", str(kubeconfig))
    try:
        line = srv.stdout.readline()
        assert line == f"export KUBECONFIG={kubeconfig}\n", srv.stderr.read() if not line else line
        assert json.loads(session.lock_path(cluster).read_text()) == {
            "pid": srv.pid, "command": f"serve --port 0 --insecure-http --speed 20 --kubeconfig {kubeconfig}",
            "serve": True, "kubeconfig": str(kubeconfig)}
        # a writing command fails at once, in one line, and writes nothing
        w = k8semu(cluster, "scale", "deployment", "web", "--replicas=5")
        out, err = w.communicate(timeout=DEADLINE)
        assert (w.returncode, out) == (1, "")
        assert err == (f"error: {cluster} is being served by k8semu serve (pid {srv.pid}): use kubectl with its "
                       f"kubeconfig (export KUBECONFIG={kubeconfig}), or stop the server first\n")
        # a write through the server: what kubectl scale sends
        config = kubeconfig.read_text()
        server = re.search(r"server: (\S+)", config).group(1)
        token = re.search(r"token: (\S+)", config).group(1)
        req = urllib.request.Request(
            f"{server}/apis/apps/v1/namespaces/default/deployments/web/scale", method="PATCH",
            data=b'{"spec":{"replicas":3}}',
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200
        # read-only commands work meanwhile, on what the server has written so far
        wait_until(lambda: open_log(cluster).get("/registry/deployments.apps/default/web")
                   .object["status"].get("readyReplicas") == 3, "the third replica")
        for argv in (["get", "deployment", "web"], ["history", "deployment/web"],
                     ["get", "deployment", "web", "--at", str(before)]):
            capsys.readouterr()
            assert main(["--cluster", str(cluster), *argv]) == 0
            assert capsys.readouterr().err == ""
    finally:
        srv.send_signal(signal.SIGINT)
        srv.communicate(timeout=DEADLINE)
    assert srv.returncode == 0
    log = open_log(cluster)
    assert log.torn_line is None
    served = sessions_of(log)[-1]
    assert served.start["serve"] is True and served.start["speed"] == 20.0 and served.start_rev == before
    assert served.end is not None and served.end["serve"] is True and served.end_rev == log.revision
    assert served.end["t"] >= served.start["t"]
    head = log.revision
    # replay says in one line why it cannot re-execute it, and what works
    capsys.readouterr()
    assert main(["replay", str(cluster)]) == 1
    assert capsys.readouterr().err == (
        f"error: the log holds a session run by k8semu serve (revisions {before + 1}..{head}), which ran in "
        f"real time and cannot be re-executed; replay --until {before} verifies what came before; history, "
        f"diff, --at, timeline and bisect work on it\n")
    assert main(["replay", str(cluster), "--fork-at", "100", "--out", str(cluster.parent / "f.log")]) == 1
    assert "cannot be re-executed" in capsys.readouterr().err
    assert not (cluster.parent / "f.log").exists()
    assert main(["replay", str(cluster), "--until", str(before)]) == 0
    assert capsys.readouterr().out.startswith(f"identical ({before} records) up to revision {before}")
    # bisect reads the served revisions
    assert main(["bisect", str(cluster), "--until", "deployment/web .spec.replicas>=3"]) == 0
    out = capsys.readouterr().out
    found = int(re.search(r"first holds at revision (\d+)", out).group(1))
    assert before < found <= head and "MODIFIED deployment.apps/web by user:kubernetes-admin" in out
    assert main(["--cluster", str(cluster), "diff", "--from", str(before), "--to", str(head), "--brief"]) == 0
    # and once it stopped, commands write again
    assert main(["--cluster", str(cluster), "advance", "5s"]) == 0


def test_serve_waits_for_a_writer_and_a_second_serve_fails(cluster, monkeypatch):
    monkeypatch.setattr(session, "command_line", ["serve"])
    held = session.lock_cluster(cluster, serve=True)  # this process plays the server
    try:
        p = k8semu(cluster, "serve", "--port", "0", "--insecure-http")
        out, err = p.communicate(timeout=DEADLINE)
        assert (p.returncode, out) == (1, "")
        assert err == (f"error: {cluster} is being served by k8semu serve (pid {os.getpid()}): use kubectl with "
                       f"its kubeconfig (the kubeconfig it wrote), or stop the server first\n")
    finally:
        held.release()


def test_a_signal_during_a_long_virtual_instant_stops_it_within_the_grace(cluster):
    """3,000 replicas are all created at one virtual instant, which takes longer than the
    grace a signal gives it: the session stops in the middle, says so, and replay verifies
    the log up to that command instead of repeating a wall-clock-dependent stop."""
    (cluster.parent / "big.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big}\nspec:\n  replicas: 3000\n"
        "  selector: {matchLabels: {app: big}}\n  template:\n    metadata: {labels: {app: big}}\n"
        "    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n")
    offset = cluster.stat().st_size
    p = k8semu(cluster, "apply", "-f", "big.yaml")
    try:
        wait_until(lambda: p.poll() is not None or b'"/registry/pods/default/big-' in cluster.read_bytes()[offset:],
                   "the pods to be created")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143, err
    lines = err.splitlines()
    assert lines[0].startswith("k8semu: virtual instant ") and "stopping in the middle of it" in lines[0]
    assert INTERRUPTED.match(lines[-1]) and len(lines) == 2
    end = end_mark(cluster)
    assert end["interrupted"] is True and end["mid_instant"] is True and end["signal"] == "SIGTERM"
    log = open_log(cluster)
    assert log.torn_line is None and log.revision == end["rev"]
    start = sessions_of(log)[-1].start_rev
    with pytest.raises(ReplayError, match=f"revision {start}: a session stopped by a signal in the middle"):
        replay(log)
    assert replay(log, until=start).identical
