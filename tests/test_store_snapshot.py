"""Snapshots (``<log>.snap``): an open from one gives exactly the log a full open gives,
and a snapshot that does not match the file is never trusted."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import k8semu.store.log as store_log
from k8semu.store import Compacted, EventLog, LogFormatError
from k8semu.store.record import Record
from k8semu.store import snapshot as snapshots
from k8semu.store.snapshot import snapshot_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_automatic_snapshots(monkeypatch):
    """Snapshots are written where a test says (``write_snapshot``, or a threshold it sets)."""
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 10**9)
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_BYTES", 10**12)


def pod(name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


def event(name: str, reason: str) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "reason": reason, "involvedObject": {"kind": "Pod", "name": name.split(".")[0]}}


def write_some(log: EventLog, n: int, start: int = 0) -> None:
    """A deterministic mix of creates, updates, deletes and re-creates, Events, marks."""
    for i in range(start, start + n):
        key = f"/registry/pods/default/p{i % 7}"
        cur = log.get(key)
        if cur is None:
            log.create(key, pod(f"p{i % 7}", v=i, tags=["a", i]), f"user:u{i % 3}")
        elif i % 5 == 0:
            log.delete(key, "kube-controller-manager")
        else:
            log.update(key, pod(f"p{i % 7}", v=i, spec={"nodeName": f"node-{i % 2}"}), "kube-scheduler",
                       expect_revision=cur.revision)
        if i % 4 == 0:
            log.create(f"/registry/events/default/p{i % 7}.{i}", event(f"p{i % 7}.{i}", "Scheduled"), "kubelet/n1")
        if i % 9 == 0:
            log.mark({"type": "SESSION", "event": "wait", "rev": log.revision, "t": float(i), "op": "advance",
                      "argv": ("get", "pods")})  # a tuple: the file (and so an open) has a list


def new_log(path: Path, n: int = 60) -> EventLog:
    t = iter(range(100_000))
    log = EventLog(clock=lambda: float(next(t)) / 4, path=path, header={"seed": 7, "cluster": {"nodes": 2}})
    write_some(log, n)
    return log


def state(log: EventLog) -> dict:
    """Everything a reader of the log can see (objects decoded)."""
    def rec(r):
        return (r.revision, r.time, type(r.time), r.type, r.key, r.actor, r.create_revision, r.version, r.raw(),
                r.object)

    history, by_resource = log._indexes()
    return {
        "revision": log.revision,
        "compact": log.compact_revision,
        "header": log.header,
        "marks": log.marks,
        "torn": log.torn_line,
        "records": [rec(r) for r in log.records(log.compact_revision)],
        "history": {k: [rec(r) for r in h] for k, h in history.items()},
        "by_resource": {k: [r.revision for r in v] for k, v in by_resource.items()},
        "live": {k: rec(r) for k, r in log._live.items()},
        "last_change": {res: log.last_change(res) for res in ("pods", "events", "services")},
        "mark_revs": list(log._mark_revs),
    }


def both(path: Path) -> tuple[EventLog, EventLog]:
    """The log opened without and with its snapshot (read-only)."""
    return EventLog.open(path, read_only=True, snapshot=False), EventLog.open(path, read_only=True)


def test_open_from_a_snapshot_is_the_same_log(tmp_path):
    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.snapshot_min_records = 0
    log.close()
    assert snapshot_path(path).exists() and snapshot_path(path).name == "cluster.log.snap"
    full, snap = both(path)
    assert full.snapshot_revision is None and snap.snapshot_revision == full.revision
    assert state(snap) == state(full)
    assert state(snap)["marks"][0]["argv"] == ["get", "pods"]
    # reads in the past, and a superseded version read back from the file
    for rev in (1, 10, full.revision // 2):
        assert [r.object for r in snap.range("/registry/", rev)] == [r.object for r in full.range("/registry/", rev)]


def test_live_objects_are_read_from_the_log_on_first_use(tmp_path):
    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.write_snapshot()
    log.close()
    seen = []
    snap = EventLog.open(path, on_decode=seen.append, read_only=True)
    assert snap.snapshot_revision == snap.revision
    live = [r for r in snap._live.values() if r.key.startswith("/registry/pods/")]
    assert live and not any(r.decoded for r in live) and not seen
    obj = live[0].object
    assert live[0].decoded and seen == [obj] and live[0].object is obj  # kept, as an open keeps it
    ev = next(r for r in snap._live.values() if r.key.startswith("/registry/events/"))
    assert b'"Scheduled"' in ev.raw() and ev._raw is None and ev._obj is None  # a cold one stays in the file


def test_a_writer_continues_from_a_snapshot(tmp_path):
    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.write_snapshot()
    covered = log.revision
    log.close()
    again = EventLog.open(path)
    assert again.snapshot_revision == again.revision == covered
    write_some(again, 40, start=60)  # supersedes live records restored from the snapshot
    again.compact(again.revision - 10)
    before = snapshot_path(path).read_bytes()
    again.close()
    assert snapshot_path(path).read_bytes() == before  # not due: the old one stays, stale
    full, snap = both(path)
    assert snap.snapshot_revision == covered < full.revision  # the tail after it is parsed
    assert state(snap) == state(full)
    with pytest.raises(Compacted):
        snap.get("/registry/pods/default/p1", 2)


def test_compaction_covered_by_the_snapshot(tmp_path):
    path = tmp_path / "cluster.log"
    log = new_log(path, 80)
    log.compact(50)
    write_some(log, 30, start=80)
    log.compact(log.revision)  # every record compacted: the table ends before the head
    log.write_snapshot()
    write_some(log, 10, start=110)
    log.close()
    full, snap = both(path)
    assert snap.snapshot_revision is not None and state(snap) == state(full)
    # and a later compaction in the tail
    again = EventLog.open(path)
    write_some(again, 10, start=120)
    again.compact(again.revision - 3)
    again.close()
    full, snap = both(path)
    assert snap.snapshot_revision is not None and state(snap) == state(full)


def test_close_writes_a_snapshot_only_when_due_and_never_touches_the_log(tmp_path, monkeypatch):
    path = tmp_path / "cluster.log"
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 20_000)
    new_log(path, 30).close()
    assert not snapshot_path(path).exists()  # 30 records: not worth one
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 20)
    data = path.read_bytes()
    ro = EventLog.open(path, read_only=True)
    ro.close()
    assert not snapshot_path(path).exists()  # a read-only open never writes
    rw = EventLog.open(path)
    rw.close()
    assert snapshot_path(path).exists() and path.read_bytes() == data
    assert not list(tmp_path.glob("*.tmp*"))
    snap = EventLog.open(path)
    assert snap.snapshot_revision == snap.revision
    write_some(snap, 5, start=30)
    before = snapshot_path(path).read_bytes()
    snap.close()
    assert snapshot_path(path).read_bytes() == before  # 5 more records: not due yet


def test_a_temporary_file_gets_no_snapshot_when_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 0)
    path = tmp_path / ".fork.log.x1y2.tmp"  # written, then renamed (replay --out, import)
    new_log(path, 10).close()
    assert not snapshot_path(path).exists()


def test_memory_only_compaction_writes_no_snapshot(tmp_path):
    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.compact(log.revision - 5, persist=False)
    assert log.write_snapshot() is None
    log.snapshot_min_records = 0
    log.close()
    assert not snapshot_path(path).exists()


def test_a_log_appended_to_by_another_log_object_gets_no_snapshot(tmp_path):
    path = tmp_path / "cluster.log"
    new_log(path, 10).close()
    other = EventLog(path=path)  # appends to a file it did not read: memory is not the file
    other.snapshot_min_records = 0
    assert other.write_snapshot() is None
    other.close()
    assert not snapshot_path(path).exists()


def _snapshotted(tmp_path, n=60) -> Path:
    path = tmp_path / "cluster.log"
    log = new_log(path, n)
    log.write_snapshot()
    log.close()
    return path


def test_a_truncated_log_ignores_the_snapshot(tmp_path):
    path = _snapshotted(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-10]))  # shorter than the snapshot covers
    full, snap = both(path)
    assert snap.snapshot_revision is None and state(snap) == state(full)
    # cut and appended to again past the snapshot's length: its end no longer matches
    log = EventLog.open(path)
    write_some(log, 30, start=200)
    log.close()
    full, snap = both(path)
    assert snap.snapshot_revision is None and state(snap) == state(full)


def test_a_torn_line_after_the_snapshot_is_handled_as_before(tmp_path):
    path = _snapshotted(tmp_path)
    log = EventLog.open(path)
    log.create("/registry/pods/default/late", pod("late"), "a")
    log.create("/registry/pods/default/later", pod("later"), "a")
    log.close()
    data = path.read_bytes()
    path.write_bytes(data[:-20])  # a crash mid-append
    full, snap = both(path)
    assert snap.snapshot_revision is not None and snap.torn_line == full.torn_line is not None
    assert state(snap) == state(full)
    again = EventLog.open(path)  # a writer cuts the torn line
    assert again.snapshot_revision is not None and again.torn_line == full.torn_line
    again.close()
    assert EventLog.open(path, read_only=True).torn_line is None


def test_damage_after_the_snapshot_names_the_same_line(tmp_path):
    path = _snapshotted(tmp_path)
    log = EventLog.open(path)
    write_some(log, 20, start=60)
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[[i for i, line in enumerate(lines) if line.startswith(b'{"rev":')][-5]]
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError) as full:
        EventLog.open(path, snapshot=False)
    with pytest.raises(LogFormatError) as snap:
        EventLog.open(path)
    assert str(snap.value) == str(full.value) and "does not follow" in str(full.value)


@pytest.mark.parametrize("edit", ["garbage", "same-length", "missing-line"])
def test_a_log_edited_under_the_snapshot_ignores_it(tmp_path, edit):
    path = _snapshotted(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    if edit == "garbage":
        lines[5] = lines[5][:30] + b"#garbage" + lines[5][30:]
    elif edit == "same-length":  # an actor changed in place: same length, still a valid log
        i = next(i for i, line in enumerate(lines) if b'"actor":"kube-scheduler"' in line)
        lines[i] = lines[i].replace(b'"actor":"kube-scheduler"', b'"actor":"kube-schedulex"')
    else:
        del lines[[i for i, line in enumerate(lines) if line.startswith(b'{"rev":')][3]]
    path.write_bytes(b"".join(lines))
    if edit == "same-length":
        full, snap = both(path)
        assert snap.snapshot_revision is None and state(snap) == state(full)
        assert "kube-schedulex" in {r.actor for r in snap.records()}
        return
    with pytest.raises(LogFormatError) as full:
        EventLog.open(path, snapshot=False)
    with pytest.raises(LogFormatError) as snap:
        EventLog.open(path)
    assert str(snap.value) == str(full.value)


def test_a_long_prefix_is_fingerprinted_by_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "_FULL_CHECK", 2048)
    monkeypatch.setattr(snapshots, "_SAMPLE", 128)
    monkeypatch.setattr(snapshots, "_END", 1024)
    path = _snapshotted(tmp_path, 200)
    assert len(snapshots._spans(path.stat().st_size, 100)) == snapshots._SAMPLES + 2
    assert EventLog.open(path, read_only=True).snapshot_revision is not None
    data = bytearray(path.read_bytes())
    i = data.rindex(b'"actor":"kube-scheduler"')  # inside the last KiB, which is always checked
    data[i + 9] = ord("K")
    path.write_bytes(bytes(data))
    full, snap = both(path)
    assert snap.snapshot_revision is None and state(snap) == state(full)


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "bit-flip", "other-version", "extra"])
def test_a_damaged_snapshot_is_ignored(tmp_path, monkeypatch, damage):
    if damage == "other-version":
        monkeypatch.setattr(snapshots, "VERSION", 99)  # written by another k8semu
    path = _snapshotted(tmp_path)
    monkeypatch.undo()
    snap_file = snapshot_path(path)
    data = snap_file.read_bytes()
    if damage == "empty":
        data = b""
    elif damage == "garbage":
        data = bytes(range(256)) * 10
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "bit-flip":
        data = bytearray(data)
        data[len(data) - 40] ^= 0x10
        data = bytes(data)
    elif damage == "extra":
        data += b"\0"
    snap_file.write_bytes(data)
    full, snap = both(path)
    assert snap.snapshot_revision is None and state(snap) == state(full)


def test_another_logs_snapshot_is_used_only_for_a_common_prefix(tmp_path):
    (tmp_path / "a").mkdir()
    a = _snapshotted(tmp_path / "a")
    for name, first in (("longer", False), ("other", True)):
        (tmp_path / name).mkdir()
        b = tmp_path / name / "cluster.log"
        t = iter(range(100_000))
        log = EventLog(clock=lambda: float(next(t)) / 4, path=b, header={"seed": 7, "cluster": {"nodes": 2}})
        if first:
            log.create("/registry/pods/default/only-in-b", pod("only-in-b"), "a")
        write_some(log, 60)
        log.create("/registry/pods/default/last", pod("last"), "a")
        log.close()
        snapshot_path(b).write_bytes(snapshot_path(a).read_bytes())
        full, snap = both(b)
        # the same writes, then one more: a's snapshot is of a prefix of b; else it is not
        assert snap.snapshot_revision == (None if first else EventLog.open(a, read_only=True).revision)
        assert state(snap) == state(full)


def test_snapshot_bytes_are_a_function_of_the_log(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    log = new_log(a)
    log.compact(20)
    log.close()
    b.write_bytes(a.read_bytes())
    for p in (a, b):  # a: opened without a snapshot; b: the same bytes, opened from one
        log = EventLog.open(p)
        if p == b:
            log.write_snapshot()
            log.close()
            log = EventLog.open(p)
            assert log.snapshot_revision is not None
        log.write_snapshot()
        log.close()
    assert snapshot_path(a).read_bytes() == snapshot_path(b).read_bytes()
    assert snapshot_path(a).read_bytes().startswith(snapshots.MAGIC)


def test_cli_commands_work_with_a_snapshot(tmp_path, monkeypatch, capsys):
    from k8semu.cli.main import main

    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 0)
    path = tmp_path / "cluster.log"
    assert main(["--cluster", str(path), "cluster", "create", "--nodes", "2", "--bare"]) == 0
    assert snapshot_path(path).exists()
    web = ROOT / "manifests" / "web.yaml"
    assert main(["--cluster", str(path), "apply", "-q", "-f", str(web), "--for", "20s"]) == 0
    log = EventLog.open(path, read_only=True)
    assert log.snapshot_revision == log.revision  # the apply's close wrote a new one
    capsys.readouterr()
    assert main(["--cluster", str(path), "get", "deployment", "web", "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert orjson.loads(out)["metadata"]["name"] == "web"
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 10**9)
    assert main(["--cluster", str(path), "scale", "deployment", "web", "--replicas=3", "--for", "10s"]) == 0
    log = EventLog.open(path, read_only=True)
    assert log.snapshot_revision is not None and log.snapshot_revision < log.revision  # stale: tail read
    capsys.readouterr()
    assert main(["--cluster", str(path), "get", "deployment", "web", "-o", "json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["spec"]["replicas"] == 3
    full, snap = both(path)
    assert state(snap) == state(full)
    full.close(), snap.close()
    assert main(["--cluster", str(path), "cluster", "delete"]) == 0
    assert not path.exists() and not snapshot_path(path).exists()  # no sidecar left behind


def test_line_numbers_after_a_snapshot_of_a_log_not_starting_at_revision_1(tmp_path):
    path = tmp_path / "cluster.log"
    log = EventLog(path=path, header={"seed": 1})
    for i in range(10):
        log.create(f"/registry/configmaps/default/c{i}", {"metadata": {"name": f"c{i}"}}, "a")
    write_some(log, 30)
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"".join(lines[11:]))  # as a log written from a compacted one starts
    log = EventLog.open(path)
    assert log.records(log.compact_revision)[0].revision == 11
    log.write_snapshot()
    write_some(log, 20, start=30)
    log.close()
    assert EventLog.open(path, read_only=True).snapshot_revision is not None
    lines = path.read_bytes().splitlines(keepends=True)
    i = [i for i, line in enumerate(lines) if line.startswith(b'{"rev":')][-3]
    lines[i] = lines[i][:-3] + b"#\n"  # a damaged line in the tail
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError) as full:
        EventLog.open(path, snapshot=False)
    with pytest.raises(LogFormatError) as snap:
        EventLog.open(path)
    assert str(snap.value) == str(full.value) and full.value.line == i + 1


def test_a_command_that_writes_finds_damage_the_snapshot_did_not_see(tmp_path, monkeypatch):
    """A long log's fingerprint samples the prefix, so a same-length edit can slip past it; a
    read-write open then still reports the damaged live object as a full open would (its line,
    before anything is written), not as a traceback from a component halfway through a command."""
    path = tmp_path / "cluster.log"
    victim = _slip_damage_past(path, monkeypatch, 1, b"[")  # just inside the object's opening brace
    before = path.read_bytes()
    with pytest.raises(LogFormatError) as full:
        EventLog.open(path, read_only=True, snapshot=False)
    with pytest.raises(LogFormatError) as e:
        EventLog.open(path)
    assert e.value.line == full.value.line and "damaged" in e.value.what and victim.key in e.value.what
    assert path.read_bytes() == before


def _slip_damage_past(path: Path, monkeypatch, at: int, byte: bytes) -> Record:
    """Write ``path`` with a snapshot, then a same-length edit inside a live pod's object that
    the (narrowed) fingerprint does not see; returns the damaged live record (as a full open has it)."""
    monkeypatch.setattr(snapshots, "_spans", lambda size, header_len: [(0, header_len), (size - 1, size)])
    log = new_log(path)
    log.write_snapshot()
    log.close()
    victim = next(r for r in EventLog.open(path, read_only=True, snapshot=False)._live.values()
                  if r.key.startswith("/registry/pods/"))
    data = bytearray(path.read_bytes())
    at += victim.location >> 32
    data[at:at + 1] = byte
    path.write_bytes(bytes(data))
    assert EventLog.open(path, read_only=True).snapshot_revision is not None  # the edit slipped past
    return victim


@pytest.mark.parametrize("at, byte", [(1, b"["), (0, b"X")])  # not JSON / not even framed as an object
def test_damage_found_through_a_snapshot_is_reported_as_a_full_open_reports_it(tmp_path, monkeypatch, at, byte):
    """A read-write open from a snapshot says exactly what a full open says of a damaged live
    object (file, line, message); a read-only one, which finds it when the object is first read,
    names the file and the revision (``k8semu get`` prints that as its one-line error)."""
    path = tmp_path / "cluster.log"
    victim = _slip_damage_past(path, monkeypatch, at, byte)
    before = path.read_bytes()
    with pytest.raises(LogFormatError) as full:
        EventLog.open(path, read_only=True, snapshot=False)
    with pytest.raises(LogFormatError) as snap:
        EventLog.open(path)
    assert str(snap.value) == str(full.value)
    ro = EventLog.open(path, read_only=True)
    with pytest.raises(ValueError) as e:
        ro.get(victim.key).object
    assert str(e.value).startswith(f"{path}: event log revision {victim.revision} ({victim.key}): damaged object")
    assert "\n" not in str(e.value)
    assert path.read_bytes() == before


def test_a_symlinked_log_shares_its_targets_snapshot(tmp_path):
    """Opened by a symlink, a log's snapshot sits beside the file itself (as its lock does): one
    cache whatever the name, and ``cluster delete`` of the file leaves no sidecar behind."""
    from k8semu.cli.main import main

    real = tmp_path / "real.log"
    log = new_log(real)
    log.close()
    link = tmp_path / "link.log"
    link.symlink_to(real)
    assert snapshot_path(link) == snapshot_path(real) == tmp_path / "real.log.snap"
    log = EventLog.open(link)
    log.write_snapshot()
    log.close()
    assert not (tmp_path / "link.log.snap").exists() and snapshot_path(real).exists()
    full, snap = both(real)
    assert snap.snapshot_revision == full.revision and state(snap) == state(full)
    assert EventLog.open(link, read_only=True).snapshot_revision == full.revision
    assert main(["--cluster", str(real), "cluster", "delete"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.log", "real.log.lock"]


def test_cluster_create_drops_a_snapshot_left_by_a_log_removed_by_hand(tmp_path):
    from k8semu.cli.main import main

    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.write_snapshot()
    log.close()
    path.unlink()  # rm cluster.log: its snapshot stays
    assert main(["--cluster", str(path), "cluster", "create", "--nodes", "1", "--bare"]) == 0
    assert not snapshot_path(path).exists()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_snapshot_path_that_is_no_regular_file_is_ignored(tmp_path, kind):
    """A FIFO at ``<log>.snap`` made every open hang (reading it waits for a writer); a directory
    there is not a snapshot either. Both are ignored, and a due writer closes without one, or
    replaces the FIFO, leaving nothing else behind."""
    import os

    path = tmp_path / "cluster.log"
    log = new_log(path)
    log.close()
    snap = snapshot_path(path)
    os.mkfifo(snap) if kind == "fifo" else snap.mkdir()
    full, opened = both(path)
    assert opened.snapshot_revision is None and state(opened) == state(full)
    log = EventLog.open(path)
    log.snapshot_min_records = 0
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.log", "cluster.log.snap"]
    if kind == "fifo":
        assert EventLog.open(path, read_only=True).snapshot_revision == full.revision


def test_writing_a_snapshot_removes_those_a_killed_writer_left(tmp_path):
    """``kill -9`` while a snapshot is written leaves ``<log>.snap.tmp<pid>``; the next one
    written removes it (and leaves that of a process still alive)."""
    import os
    import subprocess

    path = tmp_path / "cluster.log"
    log = new_log(path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    junk = tmp_path / f"cluster.log.snap.tmp{dead.pid}"
    junk.write_bytes(b"half a snapshot")
    alive = tmp_path / f"cluster.log.snap.tmp{os.getppid()}"
    alive.write_bytes(b"being written")
    other = tmp_path / "cluster.log.snap.tmpfoo"
    other.write_bytes(b"not ours")
    log.write_snapshot()
    log.close()
    assert not junk.exists() and alive.exists() and other.exists()


def test_objects_past_4_gib_of_the_log_have_their_places_in_a_snapshot():
    """A location is ``offset << 32 | length``: one int64 column overflowed past 2 GiB of the log,
    so a 150,000-pod cluster's log (3.7 GB) silently never got a snapshot."""
    locs = [0 << 32 | 1, (3 << 30) << 32 | 2_000, (5 << 30) << 32 | 1_500_000, (1 << 40) << 32 | 7]
    offsets, lengths = snapshots.location_columns(locs)
    assert list(snapshots.locations(offsets, lengths)) == locs


def test_a_long_run_leaves_a_snapshot_even_if_it_is_killed(tmp_path, monkeypatch):
    """A command killed outright never closes its log: snapshots are also written while it
    writes (every ``snapshot_every_records``), so the next open still parses only a tail
    (the (c) benchmark's killed apply left a 1.36 M-record log without one: 31 s to open)."""
    monkeypatch.setattr(store_log, "SNAPSHOT_EVERY_RECORDS", 25)
    path = tmp_path / "cluster.log"
    log = new_log(path, n=60)  # never closed: as if killed
    log._writer.flush()
    full, snap = both(path)
    assert snap.snapshot_revision is not None and 25 <= snap.snapshot_revision < full.revision
    assert state(snap) == state(full)


def test_a_read_only_open_asked_to_writes_the_snapshot_a_writer_could_not(tmp_path, monkeypatch):
    # a `serve` compacts its memory, so it leaves no snapshot: the CLI's next read parses the
    # whole log once, and leaves one for the reads after it
    path = tmp_path / "cluster.log"
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 20)
    log = new_log(path, 60)
    log.compact(10, persist=False)
    log.close()
    assert not snapshot_path(path).exists()
    data = path.read_bytes()
    ro = EventLog.open(path, read_only=True)
    ro.snapshot_on_close = True
    assert ro.snapshot_revision is None
    ro.close()
    assert snapshot_path(path).exists() and path.read_bytes() == data
    full, snap = both(path)
    assert snap.snapshot_revision == full.revision and state(snap) == state(full)


def test_a_read_only_open_writes_no_snapshot_of_a_file_that_grew_or_is_torn(tmp_path, monkeypatch):
    path = tmp_path / "cluster.log"
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 20)
    new_log(path, 60).close()
    snapshot_path(path).unlink(missing_ok=True)
    ro = EventLog.open(path, read_only=True)
    ro.snapshot_on_close = True
    writer = EventLog.open(path)
    writer.create("/registry/pods/default/late", pod("late"), "a")  # appended after the read
    ro.close()
    assert not snapshot_path(path).exists()
    writer.close()
    snapshot_path(path).unlink()
    path.write_bytes(path.read_bytes()[:-20])  # a torn last line: the reader read less than the file
    ro = EventLog.open(path, read_only=True)
    ro.snapshot_on_close = True
    ro.close()
    assert not snapshot_path(path).exists()


def test_the_clis_read_commands_leave_a_snapshot_when_one_is_due(k, monkeypatch):
    monkeypatch.setattr(store_log, "SNAPSHOT_MIN_RECORDS", 20)
    snapshot_path(k.path).unlink(missing_ok=True)
    data = k.path.read_bytes()
    rc, out, _ = k("get", "deployments")
    assert rc == 0 and out[1].startswith("web ")
    assert snapshot_path(k.path).exists() and k.path.read_bytes() == data
    log = EventLog.open(k.path, read_only=True)
    assert log.snapshot_revision == log.revision
