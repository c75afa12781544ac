"""What replay --until/--fork-at --out and import --out write, and what they refuse to
(k8semu.timeline.rerun.check_output); logs cut by --until/--fork-at or by kill -9 replay again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from k8semu.cli.main import main
from k8semu.timeline import open_log, sessions_of

CM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data: {k: v}
"""
# refused by the API server: an invalid name; an invalid Service (several causes)
BAD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name}
data: {k: v}
---
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: Foo, ports: [{port: 99999}]}
"""
AUDIT = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": "a1",
         "stage": "ResponseComplete", "verb": "create", "user": {"username": "alice"},
         "objectRef": {"resource": "configmaps", "namespace": "default", "name": "x", "apiVersion": "v1"},
         "responseStatus": {"code": 201}, "requestReceivedTimestamp": "2024-01-01T00:00:00.000000Z",
         "stageTimestamp": "2024-01-01T00:00:00.100000Z",
         "responseObject": {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "x", "namespace": "default"}, "data": {"a": "b"}}}
SIMKUBE = {"version": 2, "config": {}, "events": [
    {"ts": 1700000000, "applied_objs": [{"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "x", "namespace": "default"}}],
     "deleted_objs": []}]}


def k(capsys, *argv):
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *parts: str) -> bool:
    return err.startswith("error: ") and err.count("\n") == 1 and all(p in err for p in parts)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A 1-worker cluster: created, a ConfigMap applied (a session that also registers the
    node), then 10 s advanced."""
    d = tmp_path_factory.mktemp("out")
    (d / "cm.yaml").write_text(CM)
    path = d / "cluster.log"
    for argv in (["cluster", "create", "--nodes", "1", "--bare"], ["apply", "-f", d / "cm.yaml", "-q"],
                 ["advance", "10s"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    return path


@pytest.fixture
def src(recorded, tmp_path):
    """A private copy of the recorded log, with its manifests beside it."""
    p = tmp_path / "cluster.log"
    p.write_bytes(recorded.read_bytes())
    (tmp_path / "bad.yaml").write_text(BAD)
    (tmp_path / "cm.yaml").write_text(CM)
    return p


def _mid(path):
    """A revision in the middle of the first session that wrote several records, and the session."""
    s = next(s for s in sessions_of(open_log(path)) if s.last_rev - s.start_rev >= 4)
    return (s.start_rev + s.last_rev) // 2, s


def _writers(path):
    """The commands that write a log at PATH from ``src`` (and its import-source siblings)."""
    d = path.parent
    (d / "audit.jsonl").write_bytes(orjson.dumps(AUDIT) + b"\n")
    (d / "trace.json").write_bytes(orjson.dumps(SIMKUBE))
    return {
        "until": lambda src, out, *more: ["replay", src, "--until", "40", "--out", out, *more],
        "fork": lambda src, out, *more: ["replay", src, "--fork-at", "40", "--out", out, *more],
        "audit": lambda src, out, *more: ["import", "audit", d / "audit.jsonl", "--out", out, *more],
        "simkube": lambda src, out, *more: ["import", "simkube", d / "trace.json", "--out", out, *more],
    }


# ---------------------------------------------------------------------- --out: what is refused
@pytest.mark.parametrize("how", ["until", "fork", "audit", "simkube"])
def test_an_existing_file_is_kept_without_force(capsys, src, tmp_path, how):
    argv = _writers(src)[how]
    other = tmp_path / "other.log"
    other.write_bytes(b"precious\n")
    (tmp_path / "other.log.snap").write_bytes(b"the replaced log's snapshot\n")
    code, out, err = k(capsys, *argv(src, other))
    assert code == 1 and one_line_error(err, f"{other} exists; pass --force to overwrite it"), err
    assert other.read_bytes() == b"precious\n"
    code, out, err = k(capsys, *argv(src, other, "--force"))
    assert code == 0, err
    assert open_log(other).revision > 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    assert not (tmp_path / "other.log.snap").exists()  # it described the replaced file: no junk left


@pytest.mark.parametrize("how", ["until", "fork"])
def test_the_input_log_is_never_overwritten(capsys, src, tmp_path, how):
    argv = _writers(src)[how]
    before = src.read_bytes()
    link = tmp_path / "link.log"
    link.symlink_to(src)
    for out_path in (src, tmp_path / "." / "cluster.log", link):
        code, _, err = k(capsys, *argv(src, out_path, "--force"))
        assert code == 1 and one_line_error(err, "is the input file itself"), err
    assert src.read_bytes() == before


def test_the_import_source_is_never_overwritten(capsys, tmp_path):
    audit = tmp_path / "audit.jsonl"
    audit.write_bytes(orjson.dumps(AUDIT) + b"\n")
    before = audit.read_bytes()
    code, _, err = k(capsys, "import", "audit", audit, "--out", audit, "--force")
    assert code == 1 and one_line_error(err, f"{audit} is the input file itself"), err
    assert audit.read_bytes() == before


@pytest.fixture
def holder(src, tmp_path):
    """Another k8semu process holding the writer lock of a cluster log (``held.log``)."""
    held = tmp_path / "held.log"
    held.write_bytes(src.read_bytes())
    code = ("import sys\nfrom k8semu.cli import session\nsession.command_line = ['advance', '1h']\n"
            f"lock = session.lock_cluster({str(held)!r})\nprint('held', flush=True)\nsys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "held\n"
        yield held, p.pid
    finally:
        p.stdin.close()  # it lets go and ends
        p.wait(timeout=30)


@pytest.mark.parametrize("how", ["until", "fork", "audit", "simkube"])
def test_a_cluster_log_another_command_holds_is_never_overwritten(capsys, src, holder, how):
    held, pid = holder
    before = held.read_bytes()
    code, _, err = k(capsys, *_writers(src)[how](src, held, "--force"))
    assert code == 1 and one_line_error(err, f"{held} is a cluster log in use by k8semu (pid {pid}: advance 1h)")
    assert held.read_bytes() == before


@pytest.mark.parametrize("how", ["until", "fork", "audit"])
def test_a_directory_or_a_missing_directory_is_a_one_line_error(capsys, src, tmp_path, how):
    argv = _writers(src)[how]
    d = tmp_path / "dir"
    d.mkdir()
    code, _, err = k(capsys, *argv(src, d, "--force"))
    assert code == 1 and one_line_error(err, f"{d} is a directory"), err
    assert list(d.iterdir()) == [] and not list(tmp_path.glob(".*.tmp"))
    missing = tmp_path / "nonexistent-dir"
    code, _, err = k(capsys, *argv(src, missing / "x"))
    assert code == 1 and err == f"error: directory {missing} does not exist\n"
    assert not missing.exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, _, err = k(capsys, *argv(src, afile / "x"))
    assert code == 1 and err == f"error: {afile} is not a directory\n"


# ---------------------------------------------------------------------- outputs replay again
def test_until_and_fork_outputs_replay_identically(capsys, src, tmp_path):
    at, _ = _mid(src)  # inside a session: the output ends it with a "cut" end mark
    until_out, fork_out = tmp_path / "until.log", tmp_path / "fork.log"
    code, _, err = k(capsys, "replay", src, "--until", at, "--out", until_out)
    assert code == 0, err
    assert sessions_of(open_log(until_out))[-1].end["cut"] is True
    code, _, err = k(capsys, "replay", src, "--fork-at", at, "--out", fork_out, "-f", tmp_path / "cm.yaml")
    assert code == 0, err
    for path in (until_out, fork_out):
        n = open_log(path).revision
        code, out, err = k(capsys, "replay", path)
        assert code == 0 and out.startswith(f"identical ({n} records)"), (path, out, err)


def test_a_cut_during_a_commands_wait_keeps_the_wait(capsys, tmp_path):
    # drain polls its evicted pods every second; cut while it waits, the output must say
    # so (the end mark's "waiting"), or its replay would not make that wait and the
    # components would write in another order (as here with 2 workers and kubeadm's addons)
    web = Path(__file__).resolve().parents[1] / "manifests" / "web.yaml"
    path = tmp_path / "cluster.log"
    for argv in (["cluster", "create", "--nodes", "2"], ["apply", "-f", web, "-q"],
                 ["drain", "node-1", "--ignore-daemonsets"]):
        assert k(capsys, "--cluster", path, *argv)[0] == 0
    drain = sessions_of(open_log(path))[-1]
    wait = drain.waits[0]
    at = wait["rev"] - 2
    assert drain.start_rev < at
    until_out, fork_out = tmp_path / "until.log", tmp_path / "fork.log"
    assert k(capsys, "replay", path, "--until", at, "--out", until_out)[0] == 0
    assert k(capsys, "replay", path, "--fork-at", at, "--out", fork_out)[0] == 0
    for out_path in (until_out, fork_out):
        cut = next(s for s in sessions_of(open_log(out_path)) if s.start_rev == drain.start_rev)
        assert cut.end["cut"] is True and cut.end["waiting"] == wait and cut.waits == [wait]
        n = open_log(out_path).revision
        code, out, err = k(capsys, "replay", out_path)
        assert code == 0 and out.startswith(f"identical ({n} records)"), (out_path, out, err)
    # killed outright there, the drain's wait was never recorded (its mark is written when
    # it ends): the replay, if it cannot do without it, says why in its last line
    lines = path.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith(b'{"rev":') and orjson.loads(line)["rev"] <= at)
    killed = tmp_path / "killed.log"
    killed.write_bytes(b"".join(lines[:last + 1]))
    code, out, err = k(capsys, "replay", killed)
    if code != 0:
        note = out.splitlines()[-1]
        assert code == 1 and out.startswith("diverged at revision ") and note.startswith("note: revision ")
        assert f"a session killed outright (started at revision {drain.start_rev}, no end mark)" in note
        assert "that wait was not recorded and cannot be made again" in note


def test_a_session_killed_outright_replays_up_to_its_last_record(capsys, src, tmp_path):
    at, s = _mid(src)
    # kill -9 at revision `at`: the records up to it, no end mark (nor anything after)
    lines = src.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith(b'{"rev":') and orjson.loads(line)["rev"] <= at)
    killed = tmp_path / "killed.log"
    killed.write_bytes(b"".join(lines[:last + 1]))
    assert sessions_of(open_log(killed))[-1].end is None
    code, out, err = k(capsys, "replay", killed)
    assert code == 0 and out.startswith(f"identical ({at} records)"), out + err
    # the next command reopens it: the killed session ends where the next one starts
    assert k(capsys, "--cluster", killed, "advance", "5s")[0] == 0
    log = open_log(killed)
    assert [x.last_rev for x in sessions_of(log)][-2] == at
    code, out, err = k(capsys, "replay", killed)
    assert code == 0 and out.startswith(f"identical ({log.revision} records)"), out + err
    # and replay --until / --fork-at inside the killed session work too
    cut = tmp_path / "cut.log"
    code, _, err = k(capsys, "replay", killed, "--until", at - 1, "--out", cut)
    assert code == 0, err
    code, out, err = k(capsys, "replay", cut)
    assert code == 0 and out.startswith(f"identical ({at - 1} records)"), out + err


# ---------------------------------------------------------------------- --fork-at's -f and --skip
def test_fork_reports_every_refused_manifest_and_writes_nothing(capsys, src, tmp_path):
    at, _ = _mid(src)
    new = tmp_path / "new.log"
    bad = tmp_path / "bad.yaml"
    code, out, err = k(capsys, "replay", src, "--fork-at", at, "--out", new, "-f", tmp_path / "cm.yaml",
                       "-f", bad)
    lines = err.splitlines()
    assert code == 1 and len(lines) == 3, err
    assert lines[0].startswith(f'error: {bad}: The ConfigMap "Bad_Name" is invalid: metadata.name: ')
    assert lines[1].startswith(f'error: {bad}: The Service "s" is invalid: spec.type: Unsupported value: "Foo"')
    assert "spec.ports[0].port: Invalid value: 99999" in lines[1]
    assert lines[2] == f"error: 2 manifest documents refused: nothing written to {new}"
    assert "forked into" not in out
    assert not new.exists() and not list(tmp_path.glob(".*.tmp"))


def test_skip_must_name_recorded_inputs_after_the_fork_point(capsys, src, tmp_path):
    log = open_log(src)
    sessions = sessions_of(log)
    inputs = [r.revision for s in sessions for r in s.inputs]
    at = sessions[-1].start_rev  # the last input (the ConfigMap's create) comes before it
    new = tmp_path / "new.log"
    for value, want in (("abc", "--skip abc: not a revision"), ("12,x", "--skip x: not a revision"),
                        (str(inputs[-1]), f"--skip {inputs[-1]}: revision {inputs[-1]} is not a recorded "
                                          f"input after revision {at}"),
                        (str(at + 1), f"--skip {at + 1}: revision {at + 1} is not a recorded input")):
        code, _, err = k(capsys, "replay", src, "--fork-at", at, "--out", new, "--skip", value)
        assert code == 1 and one_line_error(err, want), (value, err)
        assert not new.exists()
    # from before it, the ConfigMap's create can be left out
    code, _, err = k(capsys, "replay", src, "--fork-at", sessions[0].start_rev, "--out", new, "--skip", inputs[-1])
    assert code == 0, err
    assert open_log(new).get("/registry/configmaps/default/a") is None


def test_a_fork_inside_the_bootstrap_is_a_one_line_error(capsys, src, tmp_path):
    boot = sessions_of(open_log(src))[0].start_rev
    code, _, err = k(capsys, "replay", src, "--fork-at", boot - 1, "--out", tmp_path / "new.log")
    assert code == 1 and one_line_error(err, f"revision {boot - 1} is inside the cluster's bootstrap"), err
    assert not (tmp_path / "new.log").exists()


def test_a_missing_manifest_is_a_one_line_error_and_leaves_nothing(capsys, src, tmp_path):
    new = tmp_path / "new.log"
    missing = tmp_path / "missing.yaml"
    code, _, err = k(capsys, "replay", src, "-f", missing)
    assert code == 1 and err == "error: -f needs --fork-at\n"
    code, _, err = k(capsys, "replay", src, "--fork-at", "40", "--out", new, "-f", missing)
    assert code == 1 and err == f'error: the path "{missing}" does not exist\n'
    assert not new.exists() and sorted(os.listdir(tmp_path)) == sorted(["cluster.log", "bad.yaml", "cm.yaml"])
    assert Path(src).exists()


# ------------------------------------------------------- --until / --fork-at: the rule for points
def test_until_and_fork_at_follow_the_rule_for_points(capsys, src, tmp_path):
    """An empty point, or one past the end of the log, is one error line (exit 1), as for every
    command (resolve_point, strictly): never "the whole log" nor "the head"; nothing is written."""
    from k8semu.cli.durations import go_duration
    from k8semu.timeline.view import time_of

    log = open_log(src)
    head, end = log.revision, go_duration(time_of(log, log.revision))
    new = tmp_path / "new.log"
    empty = "is empty: expected a revision or a duration (e.g. 1234 or 2m30s)"
    for argv, want in (
        (["--until", ""], f"error: --until {empty}"),
        (["--until", " "], f"error: --until {empty}"),
        (["--until", "", "--out", new], f"error: --until {empty}"),
        (["--fork-at", "", "--out", new], f"error: --fork-at {empty}"),
        (["--fork-at", "", "--out", new, "-f", tmp_path / "cm.yaml"], f"error: --fork-at {empty}"),
        (["--until", "1h"], f"error: --until 1h: the log ends at revision {head} (virtual time {end})"),
        (["--until", "1h", "--out", new], f"error: --until 1h: the log ends at revision {head} (virtual time {end})"),
        (["--fork-at", "1h", "--out", new], f"error: --fork-at 1h: the log ends at revision {head} "
                                            f"(virtual time {end})"),
        (["--until", head + 1, "--out", new], f"error: revision {head + 1} is outside the log (1..{head})"),
        (["--force"], "error: --force needs --out"),
        (["--until", "40", "--force"], "error: --force needs --out"),
    ):
        code, out, err = k(capsys, "replay", src, *argv)
        assert (code, out, err) == (1, "", want + "\n"), argv
        assert not new.exists()
    # the end itself is a point, by its time
    code, out, err = k(capsys, "replay", src, "--until", end, "--out", new)
    assert code == 0 and out.splitlines()[-1] == f"wrote {new} ({head} records, revision {head})", err
    # an imported log (re-enacted) too
    (tmp_path / "audit.jsonl").write_bytes(orjson.dumps(AUDIT) + b"\n")
    imported = tmp_path / "imported.log"
    assert k(capsys, "import", "audit", tmp_path / "audit.jsonl", "--out", imported)[0] == 0
    for value, want in (("", f"--until {empty}"), ("1h", "--until 1h: the log ends at revision 1 (virtual time ")):
        code, out, err = k(capsys, "replay", imported, "--until", value)
        assert code == 1 and out == "" and one_line_error(err, want), err
