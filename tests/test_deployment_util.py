"""Deployment arithmetic and single reconcile steps, without Trio: the pure
helpers of ``k8semu.controllers.deployment.util`` and the strategy functions
driven through an in-memory :class:`~k8semu.controllers.deployment.sync.DeploymentClient`."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8semu.api import errors
from k8semu.api.meta import DEFAULT_EPOCH, format_time
from k8semu.controllers.deployment import rollback_patch
from k8semu.controllers.deployment import util
from k8semu.controllers.deployment.progress import sync_rollout_status
from k8semu.controllers.deployment.rolling import reconcile_new_replica_set, reconcile_old_replica_sets
from k8semu.controllers.deployment.sync import calculate_status, cleanup_deployment, get_new_replica_set, scale


# --------------------------------------------------------------------------- fenceposts


@pytest.mark.parametrize("surge,unavailable,desired,expected", [
    ("25%", "25%", 10, (3, 2)),
    ("25%", "25%", 1, (1, 0)),
    ("25%", "25%", 4, (1, 1)),
    ("0%", "0%", 10, (0, 1)),
    (0, 0, 0, (0, 1)),
    ("10%", "10%", 5, (1, 0)),
    ("50%", "50%", 3, (2, 1)),
    (2, 3, 10, (2, 3)),
    (0, "25%", 3, (0, 1)),  # unavailable rounds down to 0, then becomes 1
    ("100%", 0, 7, (7, 0)),
])
def test_resolve_fenceposts_table(surge, unavailable, desired, expected):
    assert util.resolve_fenceposts(surge, unavailable, desired) == expected


def _d(replicas=10, surge="25%", unavailable="25%", strategy="RollingUpdate", **spec):
    s = {"type": strategy}
    if strategy == "RollingUpdate":
        s["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
            "spec": {"replicas": replicas, "strategy": s, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}},
                     "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10, **spec},
            "status": {}}


def test_max_surge_and_unavailable_follow_the_strategy():
    assert (util.max_surge(_d()), util.max_unavailable(_d())) == (3, 2)
    assert util.max_unavailable(_d(replicas=3, unavailable=5)) == 3  # capped at replicas
    assert util.max_unavailable(_d(replicas=0)) == 0
    assert (util.max_surge(_d(strategy="Recreate")), util.max_unavailable(_d(strategy="Recreate"))) == (0, 0)


def test_scaled_value_errors_use_upstream_wording():
    with pytest.raises(ValueError, match="invalid value for IntOrString: invalid type: string is not a percentage"):
        util.scaled_value("5", 10, True)
    with pytest.raises(ValueError, match='invalid value for IntOrString: invalid value "x%"'):
        util.scaled_value("x%", 10, True)


@given(st.integers(0, 100), st.integers(0, 1000))
def test_percentages_round_surge_up_and_unavailable_down(pct, total):
    up = util.scaled_value(f"{pct}%", total, True)
    down = util.scaled_value(f"{pct}%", total, False)
    assert down <= pct * total / 100 <= up and up - down <= 1


# --------------------------------------------------------------------------- an in-memory client


class FakeClient:
    """In-memory DeploymentClient: ReplicaSets by name, events and requeues recorded."""

    def __init__(self, rss=(), now=100.0):
        self.now = now
        self.epoch = DEFAULT_EPOCH
        self.rss = {rs["metadata"]["name"]: rs for rs in rss}
        self.events: list[tuple[str, str, str]] = []
        self.statuses: list[dict] = []
        self.requeues: list[float] = []
        self.deleted: list[str] = []
        self._n = 0

    def create_replica_set(self, rs):
        name = rs["metadata"]["name"]
        if name in self.rss:
            raise errors.AlreadyExists.of("replicasets", "apps", name)
        self._n += 1
        rs = copy.deepcopy(rs)
        rs["metadata"].update(uid=f"rs-{self._n}", creationTimestamp=format_time(self.epoch, self.now))
        self.rss[name] = rs
        return rs

    def get_replica_set(self, namespace, name):
        return self.rss.get(name)

    def update_replica_set(self, rs):
        self.rss[rs["metadata"]["name"]] = copy.deepcopy(rs)
        return self.rss[rs["metadata"]["name"]]

    def delete_replica_set(self, rs):
        self.deleted.append(rs["metadata"]["name"])
        del self.rss[rs["metadata"]["name"]]

    def update_deployment_status(self, d):
        self.statuses.append(copy.deepcopy(d))
        return d

    def event(self, obj, type_, reason, message):
        self.events.append((type_, reason, message))

    def enqueue_after(self, d, seconds):
        self.requeues.append(seconds)

    def enqueue_rate_limited(self, d):
        self.requeues.append(0.0)


def _rs(name, replicas, available=None, created=0, revision=None, template_image="nginx:1.25", **ann):
    keys = {"desired_replicas": util.DESIRED_REPLICAS_ANNOTATION, "max_replicas": util.MAX_REPLICAS_ANNOTATION}
    annotations = {keys.get(k, k): v for k, v in ann.items()}
    if revision is not None:
        annotations[util.REVISION_ANNOTATION] = str(revision)
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1,
                         "creationTimestamp": format_time(DEFAULT_EPOCH, created), "annotations": annotations,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": "d-uid", "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"replicas": replicas,
                     "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": name}},
                                  "spec": {"containers": [{"name": "web", "image": template_image}]}}},
            "status": {"replicas": replicas, "availableReplicas": replicas if available is None else available,
                       "readyReplicas": replicas if available is None else available, "observedGeneration": 1}}


# --------------------------------------------------------------------------- reconcile steps (upstream test tables)


@pytest.mark.parametrize("d_replicas,surge,old,new,expect", [
    (10, 0, 10, 0, None),   # no room to surge
    (10, 2, 10, 0, 2),      # surge 2
    (10, 2, 5, 0, 7),       # old ones already gone: up to 7 (12 in all)
    (10, 2, 10, 2, None),   # surge used up
    (6, 2, 0, 10, 6),       # above desired: scale down at once
])
def test_reconcile_new_replica_set(d_replicas, surge, old, new, expect):
    d = _d(replicas=d_replicas, surge=surge, unavailable=0)
    old_rs, new_rs = _rs("old", old, created=0), _rs("new", new, created=10, template_image="nginx:1.26")
    c = FakeClient([old_rs, new_rs])
    scaled = reconcile_new_replica_set(c, [old_rs, new_rs], new_rs, d)
    assert scaled == (expect is not None)
    if expect is not None:
        assert c.rss["new"]["spec"]["replicas"] == expect
        verb = "up" if expect > new else "down"
        assert c.events == [("Normal", "ScalingReplicaSet", f"Scaled {verb} replica set new from {new} to {expect}")]


@pytest.mark.parametrize("d_replicas,unavailable,old,old_ready,new,new_ready,expect_old", [
    (10, 0, 10, 10, 0, 0, None),   # nothing may go unavailable
    (10, 2, 10, 10, 0, 0, 8),      # two may go
    (10, 2, 10, 8, 0, 0, 8),       # the two unhealthy ones go first, nothing more
    (10, 2, 8, 8, 5, 5, 3),        # 13 available, 8 needed: 5 old ones go
    (10, 2, 8, 8, 5, 0, None),     # new ones not available yet: wait
])
def test_reconcile_old_replica_sets(d_replicas, unavailable, old, old_ready, new, new_ready, expect_old):
    d = _d(replicas=d_replicas, surge=3, unavailable=unavailable)
    old_rs = _rs("old", old, available=old_ready, created=0)
    new_rs = _rs("new", new, available=new_ready, created=10, template_image="nginx:1.26")
    c = FakeClient([old_rs, new_rs])
    scaled = reconcile_old_replica_sets(c, [old_rs, new_rs], [old_rs], new_rs, d)
    assert scaled == (expect_old is not None)
    if expect_old is not None:
        assert c.rss["old"]["spec"]["replicas"] == expect_old


def test_stale_status_with_more_available_than_wanted_does_not_scale_up():
    d = _d(replicas=10, surge=3, unavailable=2)
    old_rs = _rs("old", 6, available=8)  # status not yet caught up with a scale-down
    new_rs = _rs("new", 7, available=5, created=10, template_image="nginx:1.26")
    c = FakeClient([old_rs, new_rs])
    assert not reconcile_old_replica_sets(c, [old_rs, new_rs], [old_rs], new_rs, d)
    assert c.rss["old"]["spec"]["replicas"] == 6 and not c.events


def test_proportional_scaling_shares_replicas_by_size():
    d = _d(replicas=20)  # was 10 with surge 3: sets annotated max-replicas 13
    old_rs = _rs("old", 8, created=0, desired_replicas="10", max_replicas="13")
    new_rs = _rs("new", 5, available=0, created=10, template_image="nginx:1.26",
                 desired_replicas="10", max_replicas="13")
    c = FakeClient([old_rs, new_rs])
    scale(c, d, new_rs, [old_rs])
    assert (c.rss["old"]["spec"]["replicas"], c.rss["new"]["spec"]["replicas"]) == (15, 10)
    assert c.rss["old"]["metadata"]["annotations"][util.DESIRED_REPLICAS_ANNOTATION] == "20"
    assert c.rss["new"]["metadata"]["annotations"][util.MAX_REPLICAS_ANNOTATION] == "25"
    assert [e[2] for e in c.events] == ["Scaled up replica set old from 8 to 15",
                                        "Scaled up replica set new from 5 to 10"]
    # scaling down to 5 (max 7): fractions round, the leftover goes to the largest
    d5 = _d(replicas=5)
    c2 = FakeClient([c.rss["old"], c.rss["new"]])
    scale(c2, d5, c2.rss["new"], [c2.rss["old"]])
    sizes = (c2.rss["old"]["spec"]["replicas"], c2.rss["new"]["spec"]["replicas"])
    assert sum(sizes) == 5 + util.max_surge(d5) and sizes == (4, 3)


def test_get_proportion_uses_max_replicas_annotation():
    d = _d(replicas=20)
    rs = _rs("a", 8, max_replicas="13")
    assert util.replica_set_fraction(rs, d) == 7  # round(8 * 25 / 13) - 8
    assert util.get_proportion(rs, d, 12, 0) == 7
    assert util.get_proportion(rs, d, 12, 10) == 2  # never more than what is left
    assert util.get_proportion(rs, d, 12, 12) == 0
    assert util.replica_set_fraction(rs, _d(replicas=0)) == -8


# --------------------------------------------------------------------------- new replica set, annotations, history


def test_new_replica_set_is_named_after_the_template_hash_and_annotated():
    from k8semu.controllers.controller_utils import compute_hash

    d = _d(replicas=4, surge=1, unavailable=0)
    d["metadata"]["annotations"] = {"team": "a", util.LAST_APPLIED_ANNOTATION: "{}"}
    old = _rs("old", 4, revision=3, template_image="nginx:1.24")
    c = FakeClient([old])
    new = get_new_replica_set(c, d, [old], [old], True)
    h = compute_hash(d["spec"]["template"])
    assert new["metadata"]["name"] == f"web-{h}"
    assert new["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": h}}
    assert new["spec"]["replicas"] == 1  # 4 + surge 1 - 4 existing
    assert new["metadata"]["annotations"] == {
        "team": "a", util.REVISION_ANNOTATION: "4",
        util.DESIRED_REPLICAS_ANNOTATION: "4", util.MAX_REPLICAS_ANNOTATION: "5"}
    assert d["metadata"]["annotations"][util.REVISION_ANNOTATION] == "4"
    prog = util.get_condition(d["status"], "Progressing")
    assert (prog["reason"], prog["message"]) == ("NewReplicaSetCreated", f'Created new replica set "web-{h}"')
    assert c.events == [("Normal", "ScalingReplicaSet", f"Scaled up replica set web-{h} from 0 to 1")]


def test_revision_history_annotation_on_rollback():
    d = _d()
    rs = _rs("back", 0, revision=1)
    assert util.set_new_replica_set_annotations(d, rs, "3", True)
    assert rs["metadata"]["annotations"][util.REVISION_ANNOTATION] == "3"
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1"
    util.set_new_replica_set_annotations(d, rs, "5", True)
    assert rs["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1,3"
    assert not util.set_new_replica_set_annotations(d, rs, "4", True)  # never lowered


def test_cleanup_keeps_history_limit_and_skips_sets_with_replicas():
    d = _d(revisionHistoryLimit=2)
    olds = [_rs(f"r{i}", 0, created=i, revision=i) for i in range(1, 6)]
    olds[1]["status"]["replicas"] = 1  # r2 still has a pod: kept
    c = FakeClient(olds)
    cleanup_deployment(c, olds, d)
    assert c.deleted == ["r1", "r3"]


def test_find_new_and_old_sets_ignore_the_hash_label():
    d = _d()
    same = _rs("same", 3, created=5)
    other = _rs("other", 2, created=1, template_image="nginx:1.24")
    assert util.find_new_replica_set(d, [other, same]) is same
    assert util.find_old_replica_sets(d, [other, same]) == ([other], [other])


# --------------------------------------------------------------------------- status and progress


def test_status_counts_and_available_condition():
    d = _d(replicas=10)
    old, new = _rs("old", 8, available=8), _rs("new", 5, available=2, template_image="nginx:1.26")
    st = calculate_status([old, new], new, d, "2025-01-01T00:01:40Z")
    assert {k: v for k, v in st.items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 13, "updatedReplicas": 5, "readyReplicas": 10,
        "availableReplicas": 10, "unavailableReplicas": 3}
    avail = util.get_condition(st, "Available")
    assert (avail["status"], avail["reason"]) == ("True", "MinimumReplicasAvailable")
    st2 = calculate_status([_rs("old", 10, available=7)], None, d, "x")
    assert util.get_condition(st2, "Available")["reason"] == "MinimumReplicasUnavailable"


def test_progress_deadline_requeue_and_timeout():
    d = _d(replicas=2, progressDeadlineSeconds=30)
    new = _rs("web-abc", 2, available=0)
    d["status"] = calculate_status([new], new, d, format_time(DEFAULT_EPOCH, 0))
    util.set_condition(d["status"], util.new_condition("Progressing", "True", util.RS_UPDATED_REASON,
                                                       'ReplicaSet "web-abc" is progressing.',
                                                       format_time(DEFAULT_EPOCH, 0)))
    c = FakeClient([new], now=10.0)
    sync_rollout_status(c, [new], new, copy.deepcopy(d))
    assert not c.statuses and c.requeues == [pytest.approx(20.001)]  # checked just after the deadline
    c = FakeClient([new], now=30.5)
    sync_rollout_status(c, [new], new, copy.deepcopy(d))
    prog = util.get_condition(c.statuses[-1]["status"], "Progressing")
    assert (prog["status"], prog["reason"], prog["message"]) == (
        "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-abc" has timed out progressing.')


def test_set_condition_keeps_transition_time_for_same_status():
    st: dict = {}
    util.set_condition(st, util.new_condition("Progressing", "True", "A", "m", "t1"))
    util.set_condition(st, util.new_condition("Progressing", "True", "A", "m2", "t2"))
    assert st["conditions"][0]["message"] == "m"  # same status and reason: unchanged
    util.set_condition(st, util.new_condition("Progressing", "True", "B", "m3", "t3"))
    assert st["conditions"][0]["lastTransitionTime"] == "t1" and st["conditions"][0]["lastUpdateTime"] == "t3"


# --------------------------------------------------------------------------- rollback


def test_rollback_patch_picks_previous_revision_and_carries_annotations():
    d = _d()
    d["metadata"]["annotations"] = {util.REVISION_ANNOTATION: "2", util.LAST_APPLIED_ANNOTATION: "{}"}
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    r1 = _rs("r1", 0, revision=1, note="old")
    r2 = _rs("r2", 10, revision=2, template_image="nginx:1.26")
    out = rollback_patch(d, [r2, r1])
    assert out["message"] == "deployment.apps/web rolled back"
    tmpl, ann = out["patch"][0], out["patch"][1]
    assert tmpl["op"] == "replace" and tmpl["path"] == "/spec/template"
    assert tmpl["value"]["metadata"]["labels"] == {"app": "web"}
    assert tmpl["value"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert ann == {"op": "replace", "path": "/metadata/annotations", "value": {
        util.LAST_APPLIED_ANNOTATION: "{}", util.REVISION_ANNOTATION: "2", "note": "old"}}
    with pytest.raises(ValueError, match='no rollout history found for deployment "web"'):
        rollback_patch(d, [r2])  # no earlier revision to go back to
