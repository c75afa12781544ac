"""The event log behaves as etcd does for kube-apiserver: revisions, MVCC reads,
compare-and-swap, watches, compaction, and a file that reopens to the same state."""

from __future__ import annotations

import orjson
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

from k8semu.store import (
    Bookmark,
    Compacted,
    EventLog,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    LogFormatError,
    RevisionMismatch,
)


def pod(name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


KEY = "/registry/pods/default/web-1"


def test_revisions_start_at_one_and_stamp_resource_version():
    log = EventLog()
    r1 = log.create(KEY, pod("web-1"), "user:admin")
    r2 = log.create("/registry/pods/default/web-2", pod("web-2"), "user:admin")
    assert (r1.revision, r2.revision, log.revision) == (1, 2, 2)
    assert r1.object["metadata"]["resourceVersion"] == "1"
    assert (r1.create_revision, r1.version) == (1, 1)


def test_update_bumps_version_and_keeps_create_revision():
    log = EventLog()
    log.create(KEY, pod("web-1"), "user:admin")
    r = log.update(KEY, pod("web-1", spec={"nodeName": "node-1"}), "kube-scheduler", expect_revision=1)
    assert (r.revision, r.create_revision, r.version, r.actor) == (2, 1, 2, "kube-scheduler")
    assert log.get(KEY).object["spec"] == {"nodeName": "node-1"}
    assert "spec" not in log.get(KEY, revision=1).object


def test_compare_and_swap_rejects_a_stale_revision():
    log = EventLog()
    log.create(KEY, pod("web-1"), "a")
    log.update(KEY, pod("web-1", x=1), "a")
    with pytest.raises(RevisionMismatch) as e:
        log.update(KEY, pod("web-1", x=2), "b", expect_revision=1)
    assert e.value.current.revision == 2
    assert log.revision == 2


def test_create_if_absent_and_missing_keys():
    log = EventLog()
    log.create(KEY, pod("web-1"), "a")
    with pytest.raises(KeyExists):
        log.create(KEY, pod("web-1"), "a")
    with pytest.raises(KeyNotFound):
        log.update("/registry/pods/default/nope", pod("nope"), "a")
    with pytest.raises(KeyNotFound):
        log.delete("/registry/pods/default/nope", "a")


def test_delete_records_last_state_and_recreate_restarts_version():
    log = EventLog()
    log.create(KEY, pod("web-1", spec={"a": 1}), "a")
    d = log.delete(KEY, "kubelet/node-1")
    assert d.type == "DELETED" and d.object["spec"] == {"a": 1}
    assert d.object["metadata"]["resourceVersion"] == "2"
    assert log.get(KEY) is None and log.get(KEY, 1) is not None
    r = log.create(KEY, pod("web-1"), "a")
    assert (r.create_revision, r.version) == (3, 1)


def test_range_by_prefix_at_head_and_in_the_past_with_paging():
    log = EventLog()
    for i in range(5):
        log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "a")
    log.create("/registry/pods/kube-system/q", pod("q"), "a")
    log.create("/registry/podtemplates/default/t", pod("t"), "a")
    log.delete("/registry/pods/default/p0", "a")
    assert [r.key.rsplit("/", 1)[1] for r in log.range("/registry/pods/default/")] == ["p1", "p2", "p3", "p4"]
    assert len(log.range("/registry/pods/")) == 5
    assert len(log.range("/registry/pods/default/", revision=5)) == 5
    page = log.range("/registry/pods/default/", limit=2)
    assert [r.key[-2:] for r in page] == ["p1", "p2"]
    rest = log.range("/registry/pods/default/", start_after=page[-1].key)
    assert [r.key[-2:] for r in rest] == ["p3", "p4"]


def test_reads_outside_the_retained_window_fail():
    log = EventLog()
    for i in range(4):
        log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "a")
    log.compact(3)
    with pytest.raises(Compacted) as e:
        log.get(KEY, revision=2)
    assert str(e.value) == "too old resource version: 2 (3)"
    with pytest.raises(FutureRevision):
        log.range("/registry/pods/", revision=9)
    # the state at the compact revision stays readable
    assert len(log.range("/registry/pods/", revision=3)) == 3


def test_compaction_keeps_current_state_and_drops_old_versions():
    log = EventLog()
    log.create(KEY, pod("web-1", v=1), "a")
    log.update(KEY, pod("web-1", v=2), "a")
    log.create("/registry/pods/default/gone", pod("gone"), "a")
    log.delete("/registry/pods/default/gone", "a")
    log.update(KEY, pod("web-1", v=3), "a")
    log.compact(4)
    assert log.get(KEY).object["v"] == 3
    assert log.get(KEY, 4).object["v"] == 2
    assert [r.revision for r in log.history(KEY)] == [2, 5]
    assert log.history("/registry/pods/default/gone") == []
    with pytest.raises(Compacted):
        log.watch("/registry/pods/", after=3)


async def test_watch_delivers_every_later_event_once_in_order():
    log = EventLog()
    log.create("/registry/pods/default/a", pod("a"), "x")
    seen: dict[int, list[int]] = {}

    async def consume(n: int, after: int, count: int):
        got = []
        async with log.watch("/registry/pods/", after=after) as w:
            async for rec in w:
                got.append(rec.revision)
                if len(got) == count:
                    break
        seen[n] = got

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume, 0, 0, 11)
        nursery.start_soon(consume, 1, 1, 10)
        await trio.sleep(0)
        for i in range(10):
            log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "x")
            log.create(f"/registry/configmaps/default/c{i}", {"metadata": {"name": f"c{i}"}}, "x")
            if i % 3 == 0:
                await trio.sleep(0)
    assert seen[0] == [1] + list(range(2, 22, 2))
    assert seen[1] == list(range(2, 22, 2))


async def test_watch_resumes_from_any_revision_and_respects_prefix():
    log = EventLog()
    for i in range(6):
        log.create(f"/registry/pods/ns{i % 2}/p{i}", pod(f"p{i}"), "x")
    w = log.watch("/registry/pods/ns1/", after=2)
    assert [r.revision for r in w.poll()] == [4, 6]


async def test_watch_bookmark_carries_progress():
    log = EventLog()
    w = log.watch("/registry/pods/", after=0, bookmarks=True)
    log.create("/registry/configmaps/default/c", {"metadata": {"name": "c"}}, "x")
    w.request_bookmark()
    item = await w.__anext__()
    assert isinstance(item, Bookmark) and item.revision == 1


async def test_lagging_watch_gets_expired_after_compaction():
    log = EventLog()
    w = log.watch("/registry/pods/", after=0)
    for i in range(3):
        log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "x")
    log.compact(2)
    with pytest.raises(Compacted):
        await w.__anext__()


# ---------------------------------------------------------------- persistence


def test_reopen_rebuilds_the_same_state(tmp_path):
    path = tmp_path / "cluster.log"
    t = iter(range(100))
    log = EventLog(clock=lambda: float(next(t)), path=path, header={"seed": 7})
    log.create(KEY, pod("web-1"), "user:admin")
    log.update(KEY, pod("web-1", spec={"nodeName": "n1"}), "kube-scheduler")
    log.create("/registry/pods/default/x", pod("x"), "a")
    log.delete("/registry/pods/default/x", "a")
    log.close()
    again = EventLog.open(path)
    assert again.header["seed"] == 7 and again.header["version"] == 1
    assert again.revision == 4
    assert again.get(KEY).object == log.get(KEY).object
    assert again.get(KEY).time == 1.0 and again.get(KEY).actor == "kube-scheduler"
    assert (again.get(KEY).create_revision, again.get(KEY).version) == (1, 2)
    assert again.get("/registry/pods/default/x", 3) is not None
    # and it keeps appending to the same file
    again.create("/registry/pods/default/y", pod("y"), "a")
    again.close()
    assert EventLog.open(path).revision == 5


def test_log_file_is_one_json_record_per_line(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path, header={"seed": 1})
    log.create(KEY, pod("web-1"), "user:admin")
    log.close()
    lines = path.read_bytes().splitlines()
    header, rec = (orjson.loads(line) for line in lines)
    assert header == {"format": "k8semu-log", "version": 1, "seed": 1}
    assert rec["rev"] == 1 and rec["type"] == "ADDED" and rec["key"] == KEY
    assert rec["actor"] == "user:admin" and rec["obj"]["metadata"]["resourceVersion"] == "1"


def test_torn_last_line_is_reported_and_dropped(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create(KEY, pod("web-1"), "a")
    log.create("/registry/pods/default/b", pod("b"), "a")
    log.close()
    data = path.read_bytes()
    path.write_bytes(data[:-20])  # crash mid-append
    again = EventLog.open(path)
    assert again.torn_line == 3 and again.revision == 1
    again.create("/registry/pods/default/c", pod("c"), "a")
    again.close()
    final = EventLog.open(path)
    assert final.torn_line is None and final.revision == 2


def test_damage_in_the_middle_names_the_line(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    for i in range(3):
        log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "a")
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2][:30] + b"#garbage" + lines[2][30:]
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError) as e:
        EventLog.open(path)
    assert e.value.line == 3 and str(e.value).startswith(f"{path}:3: damaged line")


def test_an_edited_key_is_reported_at_its_own_line(tmp_path):
    # a byte changed in an ADDED record's key files the object under a neighbouring key;
    # the damage is that line (2), not the later update that finds nothing (line 4)
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create("/registry/pods/default/web", pod("web"), "a")
    log.create("/registry/pods/default/other", pod("other"), "a")
    log.update("/registry/pods/default/web", {**pod("web"), "spec": {"nodeName": "n1"}}, "a")
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"key":"/registry/pods/default/web"', b'"key":"/registry/pods/default/wec"')
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError) as e:
        EventLog.open(path)
    assert str(e.value) == (f"{path}:2: damaged line: key /registry/pods/default/wec is not its object's key "
                            "(pod default/web)")


def test_missing_revision_is_damage(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    for i in range(3):
        log.create(f"/registry/pods/default/p{i}", pod(f"p{i}"), "a")
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[2]
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError, match=r":3: revision 3 does not follow 1"):
        EventLog.open(path)


def test_newer_format_version_is_refused(tmp_path):
    path = tmp_path / "c.log"
    path.write_bytes(b'{"format":"k8semu-log","version":99}\n')
    with pytest.raises(LogFormatError, match="newer than this k8semu reads"):
        EventLog.open(path)


def test_not_a_log(tmp_path):
    path = tmp_path / "c.log"
    path.write_text("apiVersion: v1\n")
    with pytest.raises(LogFormatError, match=":1: header is not JSON"):
        EventLog.open(path)


def test_compaction_survives_reopen(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    for i in range(4):
        log.update(KEY, pod("w", v=i), "a") if i else log.create(KEY, pod("w", v=0), "a")
    log.compact(3)
    log.close()
    again = EventLog.open(path)
    assert again.compact_revision == 3 and again.get(KEY, 3).object["v"] == 2
    with pytest.raises(Compacted):
        again.get(KEY, 2)


# ---------------------------------------------------------------- model-based


NAMES = st.sampled_from(["/registry/pods/a/x", "/registry/pods/a/y", "/registry/pods/b/x", "/registry/services/a/x"])
PREFIXES = st.sampled_from(["/registry/", "/registry/pods/", "/registry/pods/a/", "/registry/services/"])


class StoreModel(RuleBasedStateMachine):
    """The store against a model: a list of full states, one per revision."""

    watches = Bundle("watches")

    def __init__(self):
        super().__init__()
        self.tmp = None

    @initialize(use_file=st.booleans())
    def setup(self, use_file):
        import tempfile
        from pathlib import Path

        self.path = Path(tempfile.mkdtemp()) / "c.log" if use_file else None
        self.log = EventLog(path=self.path)
        self.states: list[dict[str, tuple[int, dict]]] = [{}]  # revision -> key -> (version, obj)
        self.events: list[tuple[int, str, str]] = []  # (rev, type, key)
        self.compacted = 0
        self.n = 0

    def _head(self):
        return self.states[-1]

    def _obj(self, key):
        self.n += 1
        return {"metadata": {"name": key.rsplit("/", 1)[1]}, "n": self.n}

    @rule(key=NAMES)
    def create(self, key):
        head = dict(self._head())
        if key in head:
            with pytest.raises(KeyExists):
                self.log.create(key, self._obj(key), "t")
            return
        rec = self.log.create(key, self._obj(key), "t")
        head[key] = (1, rec.object)
        self.states.append(head)
        self.events.append((rec.revision, "ADDED", key))

    @rule(key=NAMES, stale=st.booleans())
    def update(self, key, stale):
        head = dict(self._head())
        if key not in head:
            with pytest.raises(KeyNotFound):
                self.log.update(key, self._obj(key), "t")
            return
        cur = self.log.get(key)
        if stale:
            with pytest.raises(RevisionMismatch):
                self.log.update(key, self._obj(key), "t", expect_revision=cur.revision - 1)
            return
        rec = self.log.update(key, self._obj(key), "t", expect_revision=cur.revision)
        head[key] = (head[key][0] + 1, rec.object)
        self.states.append(head)
        self.events.append((rec.revision, "MODIFIED", key))

    @rule(key=NAMES)
    def delete(self, key):
        head = dict(self._head())
        if key not in head:
            return
        rec = self.log.delete(key, "t")
        del head[key]
        self.states.append(head)
        self.events.append((rec.revision, "DELETED", key))

    @precondition(lambda self: len(self.states) > 1)
    @rule(data=st.data())
    def compact(self, data):
        rev = data.draw(st.integers(self.compacted, len(self.states) - 1))
        self.log.compact(rev)
        self.compacted = rev

    @precondition(lambda self: self.path is not None)
    @rule()
    def reopen(self):
        self.log.close()
        self.log = EventLog.open(self.path)

    @rule(target=watches, prefix=PREFIXES, data=st.data())
    def start_watch(self, prefix, data):
        after = data.draw(st.integers(self.compacted, len(self.states) - 1))
        return (self.log.watch(prefix, after=after), prefix, after, self.log)

    @rule(w=consumes(watches))
    def drain_watch(self, w):
        watch, prefix, after, log = w
        if log is not self.log:
            return  # its log was closed by a reopen
        try:
            got = [(r.revision, r.type, r.key) for r in watch.poll()]
        except Compacted:
            assert watch.progress < self.compacted
            return
        want = [e for e in self.events if e[0] > after and e[2].startswith(prefix)]
        assert got == want  # ordered, unique, complete

    @invariant()
    def reads_match_the_model(self):
        if not hasattr(self, "log"):
            return
        assert self.log.revision == len(self.states) - 1
        for rev in sorted({self.compacted, len(self.states) - 1, (self.compacted + len(self.states)) // 2}):
            state = self.states[rev]
            got = {r.key: (r.version, r.object) for r in self.log.range("/registry/", revision=rev)}
            assert got == state
            for key in ["/registry/pods/a/x", "/registry/services/a/x"]:
                rec = self.log.get(key, revision=rev)
                assert (rec.object if rec else None) == (state[key][1] if key in state else None)


TestStoreModel = StoreModel.TestCase
TestStoreModel.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_damage_inside_a_live_object_is_found_at_open(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create(KEY, pod("web-1"), "a")
    log.create("/registry/pods/default/b", pod("b"), "a")
    log.compact(1)
    log.create("/registry/pods/default/c", pod("c"), "a")
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[3].startswith(b'{"type":"COMPACT"')
    lines[4] = lines[4].replace(b'"kind":"Pod"', b'"kind":Pod"')  # revision 3, line 5
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError) as e:
        EventLog.open(path)
    assert e.value.line == 5 and "object of /registry/pods/default/c is not JSON" in str(e.value)


def test_damage_inside_a_superseded_object_is_reported_when_read(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create(KEY, pod("web-1", v=1), "a")
    log.update(KEY, pod("web-1", v=2), "a")
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"kind":"Pod"', b'"kind":Pod"')
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogFormatError):
        EventLog.open(path, verify=True)
    log = EventLog.open(path)  # fast open: the live version is fine
    assert log.get(KEY).object["v"] == 2
    with pytest.raises(ValueError, match="event log revision 1 .*damaged object"):
        log.get(KEY, revision=1).object


# ---------------------------------------------------------------- indexed watches

def _node_of(rec) -> str:
    return (rec.object.get("spec") or {}).get("nodeName") or ""


_WRITES = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["", "node-1", "node-2", "delete"])),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(first=_WRITES, second=_WRITES)
def test_indexed_watch_gets_exactly_the_records_of_its_value(first, second):
    """A watch indexed on spec.nodeName=node-1 (a kubelet's) delivers, in order, exactly the
    records whose new or replaced version is on node-1 — whether they were written before
    the watch started (caught up from history) or after (pushed by the writer)."""
    log = EventLog()
    log.add_watch_index("pods", "spec.nodeName", _node_of)

    def write(ops):
        for name, node in ops:
            key = f"/registry/pods/default/{name}"
            cur = log.get(key)
            if node == "delete":
                if cur is not None:
                    log.delete(key, "a")
            elif cur is None:
                log.create(key, pod(name, spec={"nodeName": node}), "a")
            else:
                log.update(key, pod(name, spec={"nodeName": node}), "a")

    write(first)
    start = log.revision // 2
    indexed = log.watch("/registry/pods/", after=start, index=("spec.nodeName", "node-1"))
    write(second)
    expected = []
    for rec in log.records(start, "/registry/pods/"):
        prev = log.get(rec.key, rec.revision - 1) if rec.type != "ADDED" else None
        if _node_of(rec) == "node-1" or (prev is not None and _node_of(prev) == "node-1"):
            expected.append(rec.revision)
    assert [r.revision for r in indexed.poll()] == expected
    indexed.stop()


def test_memory_only_compaction_keeps_the_file_whole(tmp_path):
    # serve's periodic compaction: old revisions are gone for this process (410), the file keeps them
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create(KEY, pod("web-1", v=0), actor="t")
    for v in range(1, 5):
        log.update(KEY, pod("web-1", v=v), actor="t")
    log.compact(4, persist=False)
    with pytest.raises(Compacted):
        log.get(KEY, 2)
    assert log.get(KEY).object["v"] == 4
    log.close()
    again = EventLog.open(path)
    assert again.compact_revision == 0 and again.get(KEY, 2).object["v"] == 1


async def test_serve_compacts_to_the_previous_interval_revision(autojump_clock):
    from k8semu.cli.commands.serve import compact_periodically

    log = EventLog()
    log.create(KEY, pod("web-1", v=0), actor="t")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(compact_periodically, log, 300.0)
        await trio.sleep(1)
        log.update(KEY, pod("web-1", v=1), actor="t")  # revision 2
        await trio.sleep(300)  # first tick at 300 s: compacts to revision 1, seen at the start
        assert log.compact_revision == 1
        log.update(KEY, pod("web-1", v=2), actor="t")  # revision 3
        await trio.sleep(300)  # second tick: to revision 2, the head at the first tick
        assert log.compact_revision == 2 and log.get(KEY, 2).object["v"] == 1
        with pytest.raises(Compacted):
            log.get(KEY, 1)
        nursery.cancel_scope.cancel()


# ---------------------------------------------------------------- history kept in the file, not in memory

@pytest.mark.parametrize("sync", ["none", "flush"])
def test_superseded_versions_are_read_back_from_the_file(tmp_path, sync):
    path = tmp_path / "c.log"
    log = EventLog(path=path, sync=sync)
    log.create(KEY, pod("web-1", v=1), "a")
    log.update(KEY, pod("web-1", v=2), "a")
    log.delete(KEY, "a")
    first, second, tomb = log.history(KEY)
    # a written record keeps neither bytes nor (once superseded) its object in memory
    assert all(r._raw is None for r in (first, second, tomb))
    assert first._obj is None and second._obj is None
    assert [r.object["v"] for r in (first, second, tomb)] == [1, 2, 2]
    assert log.get(KEY, revision=1).object["metadata"]["resourceVersion"] == "1"
    assert first.raw() == orjson.dumps(first.object)
    log.close()
    again = EventLog.open(path)
    assert [r.object["v"] for r in again.history(KEY)] == [1, 2, 2]
    again.create(KEY, pod("web-1", v=3), "a")  # appends after the reopen are located too
    again.update(KEY, pod("web-1", v=4), "a")
    assert again.get(KEY, revision=4).object["v"] == 3 and again.get(KEY).object["v"] == 4


def test_json_bytes_kept_by_the_log_are_exactly_their_length():
    import sys

    log = EventLog()
    rec = log.create(KEY, pod("web-1", spec={"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(50)]}), "a")
    raw = rec.raw()
    assert sys.getsizeof(raw) - len(raw) < 64  # orjson's own buffer is up to 2.5x the JSON


def test_reading_in_blocks_finds_every_line_and_a_torn_tail(tmp_path, monkeypatch):
    import k8semu.store.logfile as logfile

    path = tmp_path / "c.log"
    log = EventLog(path=path)
    for i in range(40):
        log.create(f"/registry/pods/default/p{i:02d}", pod(f"p{i:02d}", data="x" * (i * 7)), "a")
    log.close()
    monkeypatch.setattr(logfile, "_BLOCK", 97)  # lines straddle every block boundary
    again = EventLog.open(path)
    assert again.revision == 40 and again.torn_line is None
    assert [r.object["data"] for r in again.range("/registry/pods/default/")] == ["x" * (i * 7) for i in range(40)]
    path.write_bytes(path.read_bytes()[:-15])
    torn = EventLog.open(path, read_only=True)
    assert torn.revision == 39 and torn.torn_line == 41


def test_a_file_changed_under_an_open_log_is_reported_by_revision(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create(KEY, pod("web-1", v=1), "a")
    log.update(KEY, pod("web-1", v=2), "a")
    log.close()
    again = EventLog.open(path, read_only=True)
    path.write_bytes(path.read_bytes()[:200])  # another program truncates it
    with pytest.raises(ValueError, match="event log revision 1: its object is no longer at byte"):
        again.get(KEY, revision=1).object


def test_live_events_stay_in_the_file_until_read(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web-1.1", "namespace": "default"},
          "reason": "Scheduled"}
    rec = log.create("/registry/events/default/web-1.1", ev, "default-scheduler")
    live_pod = log.create(KEY, pod("web-1"), "a")
    # Events are cold, other objects are not; not even their bytes stay in memory (~8 KB a pod)
    assert rec._obj is None and rec._raw is None and live_pod._obj is not None
    assert log.get("/registry/events/default/web-1.1").object["reason"] == "Scheduled"
    log.close()
    again = EventLog.open(path)
    cold = again.get("/registry/events/default/web-1.1")
    assert cold._obj is None and cold._raw is None
    assert [r.object["reason"] for r in again.range("/registry/events/")] == ["Scheduled"]


def test_last_change_names_the_latest_write_per_resource_also_after_a_reopen(tmp_path):
    """``last_change`` stamps caches of what the components derive from a resource (the
    kubelets' Service environment): after a reopen it must still name the latest write, or a
    read of the past would be served the head's value."""
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    log.create("/registry/services/default/a", {"metadata": {"name": "a"}}, "user:x")
    log.create("/registry/pods/default/p", {"metadata": {"name": "p"}}, "user:x")
    log.create("/registry/services/default/b", {"metadata": {"name": "b"}}, "user:x")
    log.delete("/registry/pods/default/p", "user:x")
    assert (log.last_change("services"), log.last_change("pods"), log.last_change("nodes")) == (3, 4, 0)
    log.close()
    again = EventLog.open(path)
    assert (again.last_change("services"), again.last_change("pods"), again.last_change("nodes")) == (3, 4, 0)
    again.update("/registry/services/default/a", {"metadata": {"name": "a", "labels": {"x": "1"}}}, "user:x")
    assert again.last_change("services") == 5
    again.close()
