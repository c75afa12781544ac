"""A LIST at a past revision returns exactly the objects of that revision.

``EventLog.range(prefix, revision=R)`` and the read-only API server over a past
revision (``state_at(log, R).list``, what ``k8semu get --at`` uses) are checked
against a model of the writes: keys deleted and created again, a revision between
two versions of a key, keys created after the revision, compaction boundaries, and
writes and compactions made after a past read (histories that grew, or were cut and
grew back to the same length, since).
"""

from __future__ import annotations

import random

import pytest

from k8semu.store import Compacted, EventLog
from k8semu.timeline import open_log, state_at


def pod(ns: str, name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, **extra}


def key(ns: str, name: str) -> str:
    return f"/registry/pods/{ns}/{name}"


class Model:
    """What the log should hold: every write, and the state at any revision by replaying them."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, str, dict | None]] = []  # (revision, key, object or None if deleted)

    def note(self, rec, deleted: bool = False) -> None:
        obj = None if deleted else rec.object
        self.writes.append((rec.revision, rec.key, obj))

    def state(self, revision: int, prefix: str = "/registry/") -> list[tuple[str, dict]]:
        state: dict[str, dict] = {}
        for rev, k, obj in self.writes:
            if rev > revision:
                break
            if obj is None:
                state.pop(k, None)
            else:
                state[k] = obj
        return sorted((k, o) for k, o in state.items() if k.startswith(prefix))


def random_writes(log: EventLog, model: Model, n: int, seed: int) -> None:
    """``n`` creates, updates and deletes over two namespaces, keys often deleted and created again."""
    rng = random.Random(seed)
    names = [f"p{i:02d}" for i in range(12)]
    for step in range(n):
        ns, name = rng.choice(("a", "b")), rng.choice(names)
        k = key(ns, name)
        if log.get(k) is None:
            model.note(log.create(k, pod(ns, name, step=step), "t"))
        elif rng.random() < 0.25:
            model.note(log.delete(k, "t", obj=pod(ns, name, step=step, gone=True)), deleted=True)
        else:
            model.note(log.update(k, pod(ns, name, step=step, data="x" * rng.randint(0, 40)), "t"))


def as_pairs(recs) -> list[tuple[str, dict]]:
    return [(r.key, r.object) for r in recs]


@pytest.fixture(params=["memory", "file", "reopened"])
def written(request, tmp_path):
    """A log of 160 random writes (in memory, with a file, or reopened read-only from that file,
    where every superseded version is read back from the file) and the model of its writes."""
    path = tmp_path / "c.log"
    log = EventLog() if request.param == "memory" else EventLog(path=path)
    model = Model()
    random_writes(log, model, 160, seed=5)
    if request.param == "reopened":
        log.close()
        log = open_log(path)
    yield log, model
    log.close()


def test_range_at_every_past_revision_is_the_state_then(written):
    log, model = written
    for rev in range(1, log.revision + 1):
        for prefix in ("/registry/pods/a/", "/registry/pods/b/", "/registry/"):
            assert as_pairs(log.range(prefix, rev)) == model.state(rev, prefix), (rev, prefix)


def test_list_at_a_past_revision_returns_that_revisions_objects(written):
    log, model = written
    for rev in (1, 7, 40, 81, 123, log.revision - 1, log.revision):
        items = state_at(log, rev).list("pods", namespace="a")["items"]
        assert items == [o for _, o in model.state(rev, "/registry/pods/a/")], rev
        everything = state_at(log, rev).list("pods")["items"]
        assert everything == [o for _, o in model.state(rev, "/registry/pods/")], rev


def test_paging_through_a_past_revision_gives_the_whole_list(written):
    log, model = written
    rev = 90
    api = state_at(log, rev)
    got, cont = [], None
    while True:
        page = api.list("pods", limit=3, continue_=cont)
        got += page["items"]
        cont = page["metadata"].get("continue")
        if not cont:
            break
    assert got == [o for _, o in model.state(rev, "/registry/pods/")]
    start = log.range("/registry/pods/", rev)[4].key
    assert as_pairs(log.range("/registry/pods/", rev, start_after=start, limit=5)) == \
        [p for p in model.state(rev, "/registry/pods/") if p[0] > start][:5]


def test_deleted_then_recreated_key_between_versions_and_later_keys(tmp_path):
    path = tmp_path / "c.log"
    log = EventLog(path=path)
    k, other = key("a", "web"), key("a", "later")
    log.create(k, pod("a", "web", v=1), "t")                     # 1
    log.update(k, pod("a", "web", v=2), "t")                     # 2
    log.create(key("a", "filler"), pod("a", "filler"), "t")      # 3
    log.delete(k, "t")                                           # 4
    log.create(k, pod("a", "web", v=3), "t")                     # 5: the same key, created again
    log.update(key("a", "filler"), pod("a", "filler", n=1), "t")  # 6
    log.create(other, pod("a", "later"), "t")                    # 7
    log.update(k, pod("a", "web", v=4), "t")                     # 8
    log.close()
    for log in (open_log(path), EventLog.open(path)):
        def web(rev):
            recs = [r for r in log.range("/registry/pods/a/", rev) if r.key == k]
            return [(r.revision, r.create_revision, r.version, r.object.get("v")) for r in recs]

        assert web(1) == [(1, 1, 1, 1)]
        assert web(3) == [(2, 1, 2, 2)]        # between two versions: the older one
        assert web(4) == []                    # deleted then
        assert web(5) == web(7) == [(5, 5, 1, 3)]  # created again: a new object, a new create_revision
        assert web(8) == [(8, 5, 2, 4)]
        for rev in range(1, 7):                # created after the revision: absent
            assert other not in [r.key for r in log.range("/registry/pods/a/", rev)]
        assert [o["metadata"]["name"] for o in state_at(log, 4).list("pods", namespace="a")["items"]] == ["filler"]
        assert [o["metadata"]["resourceVersion"] for o in state_at(log, 7).list("pods", namespace="a")["items"]] \
            == ["6", "7", "5"]
        log.close()


@pytest.mark.parametrize("persist", [True, False])
def test_compaction_boundary_and_reads_after_it(tmp_path, persist):
    log = EventLog(path=tmp_path / "c.log")
    model = Model()
    random_writes(log, model, 120, seed=11)
    for rev in range(1, log.revision + 1, 7):  # past reads before the compaction
        assert as_pairs(log.range("/registry/", rev)) == model.state(rev)
    at = 60
    log.compact(at, persist=persist)
    assert as_pairs(log.range("/registry/", at)) == model.state(at)  # the state at the boundary stays
    # (time given: the record written at the compact revision itself is gone, so is its time)
    assert state_at(log, at, time=0.0).list("pods")["items"] == [o for _, o in model.state(at, "/registry/pods/")]
    with pytest.raises(Compacted):
        log.range("/registry/", at - 1)
    random_writes(log, model, 80, seed=12)  # histories grow again after the compaction
    for rev in range(at, log.revision + 1):
        assert as_pairs(log.range("/registry/", rev)) == model.state(rev), rev
    log.compact(150, persist=persist)
    for rev in range(150, log.revision + 1):
        assert as_pairs(log.range("/registry/", rev)) == model.state(rev), rev
    log.close()


def test_a_history_of_the_same_length_after_compaction_is_read_anew():
    log = EventLog()
    k = key("a", "web")
    log.create(k, pod("a", "web", v=1), "t")   # 1
    log.update(k, pod("a", "web", v=2), "t")   # 2
    log.update(k, pod("a", "web", v=3), "t")   # 3
    assert log.range("/registry/pods/a/", 2)[0].object["v"] == 2  # three versions read
    log.compact(2)                            # keeps versions 2 and 3
    log.update(k, pod("a", "web", v=4), "t")   # 4: three versions again, not the same three
    assert [r.revision for r in log.history(k)] == [2, 3, 4]
    assert [r.object["v"] for r in log.range("/registry/pods/a/", 3)] == [3]
    assert [r.object["v"] for r in log.range("/registry/pods/a/", 2)] == [2]
    assert [r.object["v"] for r in log.range("/registry/pods/a/", 4)] == [4]


def test_writes_after_a_past_read_are_seen_by_later_past_reads(written):
    log, model = written  # (a log opened read-only still takes writes in memory)
    mid = log.revision // 2
    before = as_pairs(log.range("/registry/", mid))
    random_writes(log, model, 60, seed=99)  # grows the histories read above
    assert as_pairs(log.range("/registry/", mid)) == before == model.state(mid)
    for rev in range(mid, log.revision):
        assert as_pairs(log.range("/registry/", rev)) == model.state(rev), rev
