"""The HorizontalPodAutoscaler controller (autoscaling/v2) against emulated CPU usage: upstream's
replica arithmetic, tolerance, stabilisation windows, scaling policies, status and events."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8semu.api.apiserver import RequestContext
from k8semu.api.auth import admin
from k8semu.controllers.hpa import (AutoscalerState, limit_legacy, limit_with_behavior, resource_replicas,
                                    stabilize_legacy, stabilize_with_behavior)
from k8semu.api.defaults import _HPA_SCALE_DOWN, _HPA_SCALE_UP
from k8semu.api.meta import DEFAULT_EPOCH, format_time
from k8semu.node.metrics import MetricsServer
from k8semu.sim.cluster import Cluster
from k8semu.sim.config import ClusterConfig
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

USER = RequestContext(admin(), "kubectl")
#: Two workers and no control-plane node (no static pods): enough for the HPA, and fast.
SMALL = ClusterConfig.from_dict({"nodes": [{"count": 2, "cpu": "8"}]})


def _cluster(seed: int):
    """A small cluster and its components, without the control plane's leader election."""
    cluster = Cluster.create(seed=seed, config=SMALL)
    factories = {k: v for k, v in default_factories(cluster).items() if not k.startswith("leader-election/")}
    return cluster, factories
DEFAULT_BEHAVIOR = {"scaleUp": _HPA_SCALE_UP, "scaleDown": {**_HPA_SCALE_DOWN, "stabilizationWindowSeconds": 300}}


def _deployment(replicas: int, script: str) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "php-apache", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"run": "php-apache"}},
            "template": {
                "metadata": {"labels": {"run": "php-apache"}, "annotations": {"k8semu.io/behaviour": script}},
                "spec": {"containers": [{"name": "php-apache", "image": "registry.k8s.io/hpa-example",
                                         "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "500m"}}}]},
            },
        },
    }


def _hpa(max_replicas: int, behavior: dict | None = None) -> dict:
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
        "minReplicas": 1, "maxReplicas": max_replicas,
        "metrics": [{"type": "Resource",
                     "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "php-apache", "namespace": "default"}, "spec": spec}


def _events(cluster, reason: str) -> list[dict]:
    return sorted((e for e in cluster.api.list("events", namespace="default")["items"] if e["reason"] == reason),
                  key=lambda e: e["firstTimestamp"])


def _hpa_statuses(cluster) -> list[tuple[float, dict]]:
    return [(r.time, r.object.get("status") or {}) for r in cluster.log.records()
            if "/horizontalpodautoscalers" in r.key and r.key.endswith("/default/php-apache")
            and r.object is not None]


def test_scale_up_to_the_computed_count_then_held_by_max_replicas():
    cluster, factories = _cluster(11)
    api = cluster.api
    out = {}

    async def body(rt):
        api.create("deployments", _deployment(2, "cpu 180m\nserve"), namespace="default", ctx=USER)
        assert await rt.settle()
        await rt.advance(30)
        api.create("horizontalpodautoscalers", _hpa(4), namespace="default", ctx=USER)
        out["created"] = rt.now
        await rt.advance(14)
        out["before_first_sync"] = api.get("deployments", "php-apache", namespace="default")["spec"]["replicas"]
        await rt.advance(60)

    run_cluster(cluster, body, factories)
    assert out["before_first_sync"] == 2  # the first sync is one period (15 s) after creation
    rescales = _events(cluster, "SuccessfulRescale")
    # 2 pods at 180m of 200m = 90 % against 50 %: ceil(2 × 90 / 50) = 4
    assert [e["message"] for e in rescales] == [
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"]
    assert rescales[0]["source"] == {"component": "horizontal-pod-autoscaler"}
    assert rescales[0]["firstTimestamp"] == format_time(DEFAULT_EPOCH, out["created"] + 15)
    assert api.get("deployments", "php-apache", namespace="default")["spec"]["replicas"] == 4
    hpa = api.get("horizontalpodautoscalers", "php-apache", namespace="default")
    status = hpa["status"]
    assert status["currentReplicas"] == 4 and status["desiredReplicas"] == 4
    assert status["lastScaleTime"] == format_time(DEFAULT_EPOCH, out["created"] + 15)
    assert status["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": 90, "averageValue": "180m"}}}]
    conds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert [c["type"] for c in status["conditions"]] == ["AbleToScale", "ScalingActive", "ScalingLimited"]
    assert conds["AbleToScale"] == ("True", "ReadyForNewScale", "recommended size matches current size")
    assert conds["ScalingActive"] == ("True", "ValidMetricFound", "the HPA was able to successfully calculate a "
                                      "replica count from cpu resource utilization (percentage of request)")
    assert conds["ScalingLimited"] == ("True", "TooManyReplicas",
                                       "the desired replica count is more than the maximum replica count")


def test_scale_down_waits_for_five_minutes_of_low_usage():
    cluster, factories = _cluster(12)
    api = cluster.api

    async def body(rt):
        # four pods at 90 % of their request for their first 3 minutes, then 5 %
        api.create("deployments", _deployment(4, "cpu 180m\ncpu 10m after 3m\nserve"), namespace="default", ctx=USER)
        assert await rt.settle()
        api.create("horizontalpodautoscalers", _hpa(4), namespace="default", ctx=USER)
        await rt.advance(10 * 60)

    run_cluster(cluster, body, factories)
    # at the maximum already: the high phase changes nothing; the sync that caught two pods already low
    # (30 %: 3 pods) is the highest recommendation left in the window for 15 s before the last one ages out
    assert [e["message"] for e in _events(cluster, "SuccessfulRescale")] == [
        "New size: 3; reason: All metrics below target", "New size: 1; reason: All metrics below target"]
    statuses = _hpa_statuses(cluster)
    down_at = next(t for t, s in statuses if s.get("desiredReplicas") == 1)
    utilization = [(t, s["currentMetrics"][0]["resource"]["current"]["averageUtilization"])
                   for t, s in statuses if s.get("currentMetrics") and s["currentMetrics"][0].get("type")]
    # the first sync whose recommendation is 1 (ceil(4 × u / 50) == 1 for u ≤ 12 %)
    low_since = next(t for t, u in utilization if u <= 12)
    assert {u for t, u in utilization if t >= low_since} == {5}
    # every earlier recommendation was higher; the highest of the last 5 minutes wins until they age out
    assert down_at == low_since + 300
    assert api.get("deployments", "php-apache", namespace="default")["spec"]["replicas"] == 1
    (hpa,) = api.list("horizontalpodautoscalers", namespace="default")["items"]
    assert hpa["status"]["lastScaleTime"] == format_time(DEFAULT_EPOCH, down_at)


def test_behavior_scale_up_policy_limits_each_period():
    cluster, factories = _cluster(13)
    api = cluster.api
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                            "stabilizationWindowSeconds": 0}}

    async def body(rt):
        api.create("deployments", _deployment(1, "cpu 400m\nserve"), namespace="default", ctx=USER)
        assert await rt.settle()
        await rt.advance(30)
        api.create("horizontalpodautoscalers", _hpa(3, behavior), namespace="default", ctx=USER)
        await rt.advance(150)

    run_cluster(cluster, body, factories)
    rescales = _events(cluster, "SuccessfulRescale")
    assert [e["message"] for e in rescales] == [
        "New size: 2; reason: cpu resource utilization (percentage of request) above target",
        "New size: 3; reason: cpu resource utilization (percentage of request) above target"]
    t0, t1 = (DEFAULT_EPOCH.fromisoformat(e["firstTimestamp"].replace("Z", "+00:00")) for e in rescales)
    # one pod per 60 s: not before the first one ages out of the period (and the new pod has metrics)
    assert (t1 - t0).total_seconds() in (60, 75)


def test_no_metrics_yet_reports_failed_get_resource_metric():
    cluster, factories = _cluster(14)
    api = cluster.api

    async def body(rt):
        api.create("horizontalpodautoscalers", _hpa(4), namespace="default", ctx=USER)
        await rt.advance(16)

    run_cluster(cluster, body, factories)
    (ev,) = _events(cluster, "FailedGetScale")
    assert ev["message"] == 'deployments.apps "php-apache" not found'
    conds = {c["type"]: c for c in api.get("horizontalpodautoscalers", "php-apache",
                                           namespace="default")["status"]["conditions"]}
    assert conds["AbleToScale"]["reason"] == "FailedGetScale"
    assert conds["AbleToScale"]["message"] == ("the HPA controller was unable to get the target's current scale: "
                                               'deployments.apps "php-apache" not found')


# --------------------------------------------------------------------------- the arithmetic, without a cluster

class _M:
    def __init__(self, t: float = 1000.0, window: float = 15.0) -> None:
        self.timestamp, self.window = t, window


def _pod(name: str, cpu: str = "100m", ready: bool = True, phase: str = "Running", start: float = 0.0) -> dict:
    ts = format_time(DEFAULT_EPOCH, start)
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, "startTime": ts,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": ts}]}}


def _calc(current, values, pods, now=1000.0):
    return resource_replicas(current, 50, pods, values, {k: _M(now - 5) for k in values}, "cpu", now, DEFAULT_EPOCH)


def test_tolerance_keeps_the_count():
    pods = [_pod("a"), _pod("b")]
    assert _calc(2, {"a": 54, "b": 54}, pods)[0] == 2     # 108 % of target: within 10 %
    assert _calc(2, {"a": 56, "b": 56}, pods)[0] == 3     # 112 %: ceil(1.12 × 2)
    assert _calc(2, {"a": 20, "b": 20}, pods) == (1, 20, 20)


def test_missing_pods_count_as_full_on_a_scale_down_and_empty_on_a_scale_up():
    pods = [_pod("a"), _pod("b"), _pod("c"), _pod("d")]
    # scale-down: two measured pods at 10 %, two missing counted at 100 % → ratio 1.1 → no change
    assert _calc(4, {"a": 10, "b": 10}, pods)[0] == 4
    # scale-up: two at 100 %, two missing counted at 0 % → ratio 1.0 → no change
    assert _calc(4, {"a": 100, "b": 100}, pods)[0] == 4
    # pending pods are ignored entirely
    assert _calc(3, {"a": 100, "b": 100}, [_pod("a"), _pod("b"), _pod("p", phase="Pending")])[0] == 4


def test_unready_pods_count_as_empty_on_a_scale_up():
    pods = [_pod("a"), _pod("b", ready=False, start=900.0)]
    # 'a' at 200 % (ratio 4), 'b' unready (initialising) treated as 0: ratio 2 over 2 pods → 4
    assert _calc(2, {"a": 200, "b": 200}, pods)[0] == 4


def test_legacy_rules_double_or_four_and_five_minute_window():
    assert limit_legacy(1, 10, 1, 20) == (4, "ScaleUpLimit",
                                         "the desired replica count is increasing faster than the maximum scale rate")
    assert limit_legacy(5, 30, 1, 20)[0] == 10
    assert limit_legacy(5, 0, 2, 20)[:2] == (2, "TooFewReplicas")
    s = AutoscalerState([(6, 0.0)])
    assert stabilize_legacy(s, 2, 299.0) == 6
    assert stabilize_legacy(s, 2, 301.0) == 2  # the recommendation of t=0 fell out of the window


def test_default_behavior_policies():
    s = AutoscalerState()
    # scale up: max(current + 4, current × 2) per 15 s
    assert limit_with_behavior(s, 1, 10, 1, 20, DEFAULT_BEHAVIOR, 0.0)[:2] == (5, "ScaleUpLimit")
    assert limit_with_behavior(s, 10, 30, 1, 40, DEFAULT_BEHAVIOR, 0.0)[0] == 20
    # scale down: 100 % per 15 s, i.e. straight to the recommendation
    assert limit_with_behavior(s, 10, 1, 1, 20, DEFAULT_BEHAVIOR, 0.0) == (
        1, "DesiredWithinRange", "the desired count is within the acceptable range")
    # events inside the period count against it
    s = AutoscalerState(scale_up_events=[(4, 10.0)])
    assert limit_with_behavior(s, 5, 20, 1, 40, DEFAULT_BEHAVIOR, 20.0)[0] == 5   # the period started at 1: 1 + 4
    assert limit_with_behavior(s, 5, 20, 1, 40, DEFAULT_BEHAVIOR, 26.0)[0] == 10  # a new period: 5 × 2


def test_behavior_stabilization_windows():
    s = AutoscalerState([(8, 0.0), (3, 100.0)])
    # scale-down window 300 s: the highest recent recommendation wins
    assert stabilize_with_behavior(s, 8, 2, 0.0, 300.0, 200.0) == (
        8, "ScaleDownStabilized",
        "recent recommendations were higher than current one, applying the highest recent recommendation")
    # scale-up window 60 s: the lowest recommendation of the last minute
    s = AutoscalerState([(3, 150.0)])
    assert stabilize_with_behavior(s, 2, 9, 60.0, 300.0, 200.0)[0] == 3


@given(current=st.integers(1, 50), desired=st.integers(0, 200), lo=st.integers(1, 10), span=st.integers(0, 40))
def test_behavior_limits_stay_within_min_and_max(current, desired, lo, span):
    hi = lo + span
    current = min(max(current, lo), hi)  # the reconcile brings an out-of-range count back first
    n, _, _ = limit_with_behavior(AutoscalerState(), current, max(desired, 0), lo, hi, DEFAULT_BEHAVIOR, 0.0)
    if desired > current:
        assert current <= n <= hi and n <= max(current + 4, 2 * current)
    elif desired < current:
        assert lo <= n <= current
    else:
        assert n == current


def test_custom_and_external_metrics_fail_as_without_a_metrics_adapter():
    """No custom/external metrics API is served: kube-controller-manager's events and messages."""
    from k8semu.controllers.hpa import MetricError, _metric

    hpa = {"metadata": {"name": "h", "namespace": "shop"}}
    cases = {
        "Pods": ("FailedGetPodsMetric", "failed to get pods metric value: unable to get metric rps: unable to "
                 "fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"),
        "External": ("FailedGetExternalMetric", "failed to get external metric value: unable to get external "
                     "metric shop/rps: unable to fetch metrics from external metrics API: no external metrics "
                     "API (external.metrics.k8s.io) registered"),
    }
    for kind, (reason, message) in cases.items():
        spec = {"type": kind, kind.lower(): {"metric": {"name": "rps"}}}
        with pytest.raises(MetricError) as e:
            _metric(spec, 1, [], {}, hpa, 0.0, None, 0.1)
        assert (e.value.reason, str(e.value)) == (reason, message)
        assert message.endswith(e.value.detail)
