"""Events expire as kube-apiserver's ``--event-ttl`` (1h) makes them: etcd deletes each Event
one TTL after its last write (k8semu.sim.eventttl)."""

from __future__ import annotations

import re

import trio

from k8semu.api.apiserver import MERGE_PATCH, RequestContext
from k8semu.sim.eventttl import ACTOR, COMPONENT, DEFAULT_EVENT_TTL, EventTTL
from k8semu.client.events import NORMAL, WARNING, EventRecorder
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

NS = "default"
POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": NS, "uid": "pod-uid"}}


def _event(name, reason="Tested", count=1):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": NS},
            "involvedObject": {"kind": "Pod", "namespace": NS, "name": "p", "uid": "pod-uid", "apiVersion": "v1"},
            "reason": reason, "message": "hello", "type": NORMAL, "count": count,
            "source": {"component": "test"}}


def _new_event(name):
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": NS},
            "eventTime": "2025-01-01T00:00:00.000000Z", "reportingController": "example.com/test",
            "reportingInstance": "test-1", "action": "Testing", "reason": "Tested", "type": "Normal",
            "note": "hello", "regarding": {"kind": "Pod", "namespace": NS, "name": "p", "apiVersion": "v1"}}


def _names(api, resource="events"):
    return sorted(e["metadata"]["name"] for e in api.list(resource, namespace=NS)["items"])


def _ttl_only(cluster, ttl=DEFAULT_EVENT_TTL):
    """Only the expiry component (the rest of the cluster would only add heartbeats)."""
    return {COMPONENT: lambda: EventTTL(cluster.api, ttl)}


def test_an_event_is_gone_one_hour_after_its_write_and_not_before():
    c = Cluster.create(seed=1)
    api = c.api
    seen = {}

    async def body(rt):
        await rt.advance(7)
        api.create("events", _event("a"), namespace=NS)
        await rt.advance(3599)  # 59m59s after the write
        seen["59m59s"] = _names(api)
        await rt.advance(2)  # 1h00m01s after it
        seen["1h00m01s"] = _names(api)

    run_cluster(c, body, _ttl_only(c))
    assert seen == {"59m59s": ["a"], "1h00m01s": []}
    added, gone = c.log.history(f"/registry/events/{NS}/a")
    # etcd's lease expiry: a DELETED record of its own, at exactly the write's time + 1h, carrying
    # the Event's last state with the deletion's resourceVersion
    assert (gone.type, gone.actor, gone.time) == ("DELETED", ACTOR, added.time + 3600)
    assert gone.revision == c.log.revision
    assert gone.object["metadata"]["resourceVersion"] == str(gone.revision)
    assert {k: v for k, v in gone.object.items() if k != "metadata"} == \
        {k: v for k, v in added.object.items() if k != "metadata"}
    assert not ACTOR.startswith("user:")  # not an input: a replay writes it again


def test_each_write_renews_the_ttl_a_repeated_event_lives_an_hour_from_its_last_bump():
    c = Cluster.create(seed=1)
    api = c.api
    seen = {}

    async def body(rt):
        api.create("events", _event("a"), namespace=NS)
        api.create("events", _event("b"), namespace=NS)
        await rt.advance(1800)
        api.patch("events", "a", {"count": 2}, MERGE_PATCH, namespace=NS)  # the correlator's bump
        await rt.advance(1800 - 1)
        seen["b lives"] = _names(api)
        await rt.advance(2)  # b: 1h since its only write; a: 30 min since its bump
        seen["b gone"] = _names(api)
        await rt.advance(1800 - 2 - 1)
        seen["a lives"] = _names(api)
        await rt.advance(2)
        seen["a gone"] = _names(api)

    run_cluster(c, body, _ttl_only(c))
    assert seen == {"b lives": ["a", "b"], "b gone": ["a"], "a lives": ["a"], "a gone": []}
    hist = c.log.history(f"/registry/events/{NS}/a")
    assert [r.type for r in hist] == ["ADDED", "MODIFIED", "DELETED"]
    assert hist[2].time == hist[1].time + 3600 and hist[2].object["count"] == 2


def test_a_watch_sees_the_expiry_as_deleted():
    c = Cluster.create(seed=1)
    api = c.api
    got = []

    async def body(rt):
        api.create("events", _event("a"), namespace=NS)
        stream = await api.watch("events", namespace=NS, resource_version=str(c.log.revision))

        async def follow():
            async for ev in stream:
                got.append((ev.type, ev.object["metadata"]["name"], ev.revision, ev.time))

        async with trio.open_nursery() as n:
            n.start_soon(follow)
            await rt.advance(3601)
            n.cancel_scope.cancel()

    run_cluster(c, body, _ttl_only(c))
    gone = c.log.history(f"/registry/events/{NS}/a")[-1]
    assert got == [("DELETED", "a", gone.revision, gone.time)]


def test_events_k8s_io_events_expire_too():
    c = Cluster.create(seed=1)
    api = c.api
    seen = {}

    async def body(rt):
        api.create("events.events.k8s.io", _new_event("n"), namespace=NS)
        await rt.advance(3599)
        seen["before"] = _names(api, "events.events.k8s.io")
        await rt.advance(2)
        seen["after"] = _names(api, "events.events.k8s.io")

    run_cluster(c, body, _ttl_only(c))
    assert seen == {"before": ["n"], "after": []}
    assert c.log.history(f"/registry/events.events.k8s.io/{NS}/n")[-1].actor == ACTOR


def test_an_expiry_does_not_hold_up_settling():
    # an expiry is the store keeping itself, not the cluster converging: settle returns at once,
    # even with one due within its horizon, and the Event goes when time reaches it
    c = Cluster.create(seed=1)
    api = c.api
    seen = {}

    async def body(rt):
        api.create("events", _event("a"), namespace=NS)
        await rt.advance(50)
        start = rt.now
        assert rt.components[COMPONENT].next_expiry() == 60.0
        assert await rt.settle(horizon=30.0)
        seen["settled after"] = rt.now - start
        seen["still there"] = _names(api)
        await rt.advance(11)
        seen["later"] = _names(api)

    run_cluster(c, body, _ttl_only(c, ttl=60))
    assert seen == {"settled after": 0.0, "still there": ["a"], "later": []}


def test_a_later_session_expires_what_an_earlier_one_wrote_and_what_is_overdue_at_once():
    c = Cluster.create(seed=1)
    api = c.api
    seen = {}

    async def first(rt):
        api.create("events", _event("old"), namespace=NS)
        await rt.advance(600)
        api.create("events", _event("young"), namespace=NS)
        await rt.advance(60)

    run_cluster(c, first, _ttl_only(c))
    # between sessions, no time passes; then a session starts 1h after "old" was written
    c.time = 3600 + 30  # (as serve's clock catching up with the wall clock)

    async def second(rt):
        await trio.sleep(0)
        await rt.quiet()
        seen["at start"] = _names(api)
        await rt.advance(600 - 30 - 1)
        seen["young lives"] = _names(api)
        await rt.advance(2)
        seen["young gone"] = _names(api)

    run_cluster(c, second, _ttl_only(c))
    assert seen == {"at start": ["young"], "young lives": ["young"], "young gone": []}
    old = c.log.history(f"/registry/events/{NS}/old")[-1]
    assert (old.type, old.time) == ("DELETED", 3630.0)  # overdue: at once
    young = c.log.history(f"/registry/events/{NS}/young")[-1]
    assert (young.type, young.time) == ("DELETED", 600 + 3600.0)


def test_events_due_at_one_instant_go_in_write_order_and_deleted_ones_are_skipped():
    c = Cluster.create(seed=1)
    api = c.api
    order = []

    async def body(rt):
        for name in ("z", "m", "a", "gone"):
            api.create("events", _event(name), namespace=NS)
        api.delete("events", "gone", namespace=NS)
        api.create("events", _event("gone"), namespace=NS)  # another object by that name, later
        c.log.add_listener(lambda r: order.append(r.key.rsplit("/", 1)[1]) if r.actor == ACTOR else None)
        await rt.advance(3601)
        assert rt.components[COMPONENT].expired == 4

    run_cluster(c, body, _ttl_only(c))
    assert order == ["z", "m", "a", "gone"]
    assert [r.actor for r in c.log.history(f"/registry/events/{NS}/gone")] == \
        ["user:kubernetes-admin", "user:kubernetes-admin", "user:kubernetes-admin", ACTOR]


def test_the_correlator_creates_an_expired_event_again_with_its_count():
    # the recorder patches a repeated event by name; once it expired the patch is NotFound and
    # the Event is created again (recordEvent after a 404): same name, count and firstTimestamp
    c = Cluster.create(seed=1)
    api = c.api
    rec = EventRecorder(api, RequestContext(actor="kubelet/node-1"), "kubelet", host="node-1")
    seen = {}

    async def body(rt):
        first = rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")
        await rt.advance(60)
        rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")  # a bump: count 2
        await rt.advance(121)  # the TTL (120 s here) ran out 120 s after the bump
        seen["expired"] = _names(api)
        again = rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")
        seen["again"] = (again["metadata"]["name"] == first["metadata"]["name"], again["count"],
                         again["firstTimestamp"] == first["firstTimestamp"])

    run_cluster(c, body, _ttl_only(c, ttl=120))
    assert seen == {"expired": [], "again": (True, 3, True)}
    name = api.list("events", namespace=NS)["items"][0]["metadata"]["name"]
    assert [r.type for r in c.log.history(f"/registry/events/{NS}/{name}")] == \
        ["ADDED", "MODIFIED", "DELETED", "ADDED"]


def test_the_component_runs_in_every_cluster_and_deletes_in_a_full_run():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    factories = default_factories(c)
    assert COMPONENT in factories
    seen = {}

    async def body(rt):
        await rt.settle()
        seen["events"] = len(c.api.list("events", namespace=None)["items"])
        await rt.advance(3600 + 60)
        rest = c.api.list("events", namespace=None)["items"]
        # only what was written in the last hour is left
        seen["old"] = [e["metadata"]["name"] for e in rest
                       if c.log.get(f"/registry/events/{e['metadata']['namespace']}/{e['metadata']['name']}").time
                       < rt.now - 3600]

    run_cluster(c, body, factories)
    assert seen["events"] > 0 and seen["old"] == []
    assert any(r.actor == ACTOR for r in c.log.records(0, "/registry/events/"))


def _rows(k, *args):
    rc, out, err = k(*args)
    assert rc == 0, err
    return out


def test_cli_get_events_after_advance_2h_no_longer_lists_old_events(k):
    before = _rows(k, "get", "events", "-A")
    assert len(before) > 5  # the lab's scheduling, pulls, starts…
    old_names = {f"{e['metadata']['namespace']}/{e['metadata']['name']}" for e in k.objects("events", None)}
    assert _rows(k, "advance", "2h")[0].startswith("advanced 2h0m0s")
    left = {f"{e['metadata']['namespace']}/{e['metadata']['name']}" for e in k.objects("events", None)}
    assert not old_names & left
    # the lab's pods run steadily: nothing was written in the last hour, so nothing is left
    rc, out, err = k("get", "events", "-A")
    assert (rc, out, err) == (0, [], ["No resources found"])
    assert _rows(k, "events") == []
    rows = _rows(k, "timeline", "--actor", "kube-apiserver/*", "--kind", "events")
    assert rows and all(" DELETED " in r and COMPONENT in r for r in rows)
    # the deletions are outputs: a re-execution writes them again
    rc, out, _ = k("replay", str(k.path))
    assert rc == 0 and out[0].startswith("identical ("), out


def test_cli_a_living_cluster_keeps_only_the_last_hours_events(kf):
    # the failures lab keeps writing (a crash loop, a pod that fits nowhere): after 2h, what
    # `get events` lists was all seen within the hour, and nothing older is in the store
    assert _rows(kf, "advance", "2h")[0].startswith("advanced 2h0m0s")
    rows = _rows(kf, "get", "events", "-A")
    assert rows[0].split()[:3] == ["NAMESPACE", "LAST", "SEEN"] and len(rows) > 1
    for line in rows[1:]:
        seen = line.split()[1]  # kubectl's LAST SEEN: "4m27s", "59m", never "61m" or "2h"
        assert "h" not in seen and int(re.match(r"(\d+)[ms]", seen)[1]) < 60, line
    c = kf.api()
    try:
        now = c.time
        assert all(c.log.get(key).time > now - 3600 for key in c.log.keys("/registry/events/"))
        assert any(r.actor == ACTOR for r in c.log.records(0, "/registry/events/"))
    finally:
        c.close()
    rc, out, err = kf("describe", "pod", "too-big")
    assert rc == 0 and any("FailedScheduling" in line for line in out[out.index("Events:"):]), out
