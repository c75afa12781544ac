"""Repeated events fold into one Event across commands, as a component that kept running would.

Each k8semu command starts the components afresh, so the event correlator's memory
(:class:`k8semu.client.events.EventRecorder`) must come from the cluster: on a key's
first emission the recorder finds the Event its earlier life wrote and patches its
``count`` and ``lastTimestamp`` instead of creating a second row.
"""

from __future__ import annotations

import re


ROW = re.compile(r"  (Normal|Warning)\s+(\w+)\s+(\S+(?: \(x(\d+) over \S+\))?)\s+(\S+)\s+(.*)")


def _event_rows(k, *target):
    rc, out, err = k("describe", *target)
    assert (rc, err) == (0, [])
    rows = out[out.index("Events:") + 3:]
    parsed = [ROW.fullmatch(line) for line in rows]
    assert all(parsed), rows
    return [(m[1], m[2], int(m[4] or 1), m[6]) for m in parsed]


def _names(k, pod):
    return sorted(e["metadata"]["name"] for e in k.objects("events") if e["involvedObject"]["name"] == pod)


def test_a_crash_loops_events_stay_one_row_each_across_commands(kf):
    before = {(t, r, msg): n for t, r, n, msg in _event_rows(kf, "pod", "crasher")}
    too_big = _names(kf, "too-big")
    for _ in range(3):
        assert kf("advance", "2m")[0] == 0
    rows = _event_rows(kf, "pod", "crasher")
    keys = [(t, r, msg) for t, r, _, msg in rows]
    assert len(keys) == len(set(keys)), rows  # before: BackOff 6m49s (x4 …), BackOff 5m27s (x2 …), BackOff 5m23s…
    after = {(t, r, msg): n for t, r, n, msg in rows}
    backoff = next(key for key in after if key[1] == "BackOff")
    assert backoff in before
    # the repeats of the three commands counted on the first row; the crasher has long used up its
    # spam-filter burst (25 events per source+object, then one every 5 minutes, client-go's
    # EventSourceObjectSpamFilter), so only the occurrences that got a token were written
    assert after[backoff] > before[backoff]
    created = ("Normal", "Created", "Created container: app")
    assert after[created] > before[created]
    # the same Event objects: one per key, named for its first occurrence
    events = [e for e in kf.objects("events") if e["involvedObject"]["name"] == "crasher"]
    assert sorted(e["count"] for e in events if e["reason"] == "BackOff") == [after[backoff]]
    # the scheduler's too (events.k8s.io, client-go's tools/events): its retries of a pod that fits
    # nowhere are isomorphic once the pod's version stays the same (the first try's status write
    # made a new one), so the second Event took the repeats as a series: written when it began
    # (count 2), then kept in the recorder's cache until its timers write it; no new Event per command
    failed = [row for row in _event_rows(kf, "pod", "too-big") if row[1] == "FailedScheduling"]
    assert [n for _, _, n, _ in failed] == [1, 2], failed
    assert _names(kf, "too-big") == too_big
    rc, out, _ = kf("replay", str(kf.path))
    assert rc == 0 and out[0].startswith("identical (")


def test_a_repeat_after_the_aggregation_window_is_a_new_event(kf):
    """Past 10 minutes since the last one, a repeat starts a new Event, in one command or across two."""
    assert kf("node", "stop", "node-1")[0] == 0
    assert kf("advance", "1m")[0] == 0
    assert kf("node", "start", "node-1")[0] == 0
    assert kf("advance", "11m")[0] == 0
    assert kf("node", "stop", "node-1")[0] == 0
    assert kf("advance", "1m")[0] == 0
    rows = _event_rows(kf, "node", "node-1")
    not_ready = [r for r in rows if r[1] == "NodeNotReady"]
    assert len(not_ready) == 2 and all(n == 1 for _, _, n, _ in not_ready), rows
