"""The horizontal pod autoscaler controller (autoscaling/v2), as upstream's ``pkg/controller/podautoscaler``.

Actor and event source ``horizontal-pod-autoscaler``. Every HorizontalPodAutoscaler
is reconciled every sync period (15 s, ``--horizontal-pod-autoscaler-sync-period``;
a new one first 15 s after it is seen, as upstream's fixed-interval queue does):

1. read the target's scale subresource (``FailedGetScale`` otherwise); the
   first reading is also the first stabilisation recommendation;
2. if ``spec.replicas`` is 0 autoscaling is off (``ScalingDisabled``); outside
   ``[minReplicas, maxReplicas]`` the count is brought back in range;
3. otherwise each metric proposes a count and the largest wins. Resource and
   ContainerResource metrics come from metrics-server's view of the pods
   (a ``metrics`` object with ``pods_metrics(pods, now)``, see
   :class:`k8semu.node.metrics.MetricsServer`); the replica calculator is
   upstream's: ``ceil(ready pods × current / target)``, nothing within the
   tolerance (10 %), pending / failed / deleting pods ignored, CPU samples of
   pods still initialising treated as unready, and missing or unready pods
   counted conservatively (100 % on a scale-down, 0 % on a scale-up) with
   no change when that flips the direction. Pods, Object and External metrics
   need a custom or external metrics API, which this cluster does not serve;
4. the proposal is stabilised and rate-limited: with ``spec.behavior`` by the
   scale-up / scale-down rules (windows, ``Pods`` / ``Percent`` policies per
   period, ``selectPolicy``); without it by the legacy rules (a 5-minute
   scale-down window, at most ``max(2 × current, 4)`` on a scale-up);
5. a changed count is written through ``<target>/scale``
   (``SuccessfulRescale`` ``New size: 4; reason: cpu resource utilization
   (percentage of request) above target``), and the status
   (``currentReplicas``, ``desiredReplicas``, ``currentMetrics``,
   ``lastScaleTime``, conditions AbleToScale / ScalingActive /
   ScalingLimited with upstream's reasons and messages) is written when it
   changed.

The arithmetic is in pure functions (:func:`resource_replicas`,
:func:`plain_replicas`, :func:`stabilize_with_behavior`,
:func:`limit_with_behavior`, :func:`stabilize_legacy`,
:func:`limit_legacy`, :func:`reconcile`) that take the cached objects,
the in-memory history (:class:`AutoscalerState`) and ``now``.

Settling: a sync that only confirms the current count is not "real work";
:meth:`HorizontalController.next_wakeup` reports the next sync only for an
autoscaler not yet synced, or whose last sync wanted a different count than
the target has (held back by a stabilisation window or a rate limit).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable, Mapping

import attrs

from ..api import errors
from ..api.meta import format_time, parse_time
from ..api.pods import pod_condition
from ..api.quantity import DECIMAL_SI, Quantity, parse_quantity
from ..api.resources import NoKindMatch, by_kind
from ..api.selectors import parse_label_selector
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler

__all__ = [
    "HorizontalController", "AutoscalerState", "Decision", "MetricError", "reconcile",
    "resource_replicas", "plain_replicas", "group_pods", "pod_requests",
    "stabilize_with_behavior", "limit_with_behavior", "stabilize_legacy", "limit_legacy",
    "SYNC_PERIOD", "DOWNSCALE_STABILIZATION", "TOLERANCE", "CPU_INITIALIZATION_PERIOD",
    "INITIAL_READINESS_DELAY",
]

Obj = dict[str, Any]

SYNC_PERIOD = 15.0                # --horizontal-pod-autoscaler-sync-period
DOWNSCALE_STABILIZATION = 300.0   # --horizontal-pod-autoscaler-downscale-stabilization
TOLERANCE = 0.1                   # --horizontal-pod-autoscaler-tolerance
CPU_INITIALIZATION_PERIOD = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
INITIAL_READINESS_DELAY = 30.0    # --horizontal-pod-autoscaler-initial-readiness-delay
_SCALE_UP_LIMIT_FACTOR = 2.0
_SCALE_UP_LIMIT_MINIMUM = 4.0


class MetricError(Exception):
    """A metric that could not be evaluated; ``str()`` is upstream's error text.

    ``reason``/``detail``: the Warning event the controller records for it (set where a whole
    metric spec fails: ``FailedGetResourceMetric``, ``FailedGetPodsMetric``, …).
    """

    def __init__(self, message: str, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.reason, self.detail = reason, detail


# metric source type -> (what is fetched, API named in the error, event reason)
_CUSTOM_METRICS = {
    "Pods": ("pods", "custom", "FailedGetPodsMetric"),
    "Object": ("object", "custom", "FailedGetObjectMetric"),
    "External": ("external", "external", "FailedGetExternalMetric"),
}


@attrs.define
class AutoscalerState:
    """What the controller remembers about one autoscaler between syncs (lost on restart, as upstream).

    Attributes:
        recommendations: ``(replicas, time)`` unstabilised recommendations.
        scale_up_events / scale_down_events: ``(replica change, time)`` of past rescales.
    """

    recommendations: list[tuple[int, float]] = attrs.field(factory=list)
    scale_up_events: list[tuple[int, float]] = attrs.field(factory=list)
    scale_down_events: list[tuple[int, float]] = attrs.field(factory=list)


@attrs.frozen
class Decision:
    """The outcome of one reconcile.

    Attributes:
        status: the autoscaler's new ``status`` (wire form).
        rescale_to: the count to write to the target's scale, or None.
        events: ``(type, reason, message)`` to record, in order.
        held: the metrics ask for a different count than the target will have
            (a stabilisation window or rate limit holds it back).
    """

    status: Obj
    rescale_to: int | None
    events: tuple[tuple[str, str, str], ...]
    held: bool = False


# --------------------------------------------------------------------------- replica calculator

def _tolerances(hpa: Mapping[str, Any], default: float) -> tuple[float, float]:
    """(scale-down, scale-up) tolerance: ``behavior.*.tolerance`` or the controller's default."""
    behavior = (hpa.get("spec") or {}).get("behavior") or {}
    out = []
    for key in ("scaleDown", "scaleUp"):
        t = (behavior.get(key) or {}).get("tolerance")
        out.append(float(parse_quantity(t).value) if t is not None else default)
    return out[0], out[1]


def _within(ratio: float, tol: tuple[float, float]) -> bool:
    return 1.0 - tol[0] <= ratio <= 1.0 + tol[1]


def pod_requests(pods: Iterable[Mapping[str, Any]], resource: str, container: str | None = None) -> dict[str, int]:
    """Each pod's request for ``resource`` in milli-units (containers and sidecars, or only ``container``).

    Raises:
        MetricError: a container has no request (``missing request for cpu in container app of Pod web-x``).
    """
    out: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or ()) + [
            c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
        total = 0
        for c in containers:
            if container is not None and c.get("name") != container:
                continue
            req = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if req is None:
                raise MetricError(f"missing request for {resource} in container {c.get('name')} "
                                  f"of Pod {pod['metadata']['name']}")
            total += parse_quantity(req).milli_value()
        out[pod["metadata"]["name"]] = total
    return out


def group_pods(pods: Iterable[Mapping[str, Any]], metrics: Mapping[str, Any], resource: str, now: float, epoch: Any,
               *, cpu_init: float = CPU_INITIALIZATION_PERIOD, readiness_delay: float = INITIAL_READINESS_DELAY,
               ) -> tuple[int, list[str], list[str], list[str]]:
    """upstream's ``groupPods``: (ready count, unready, missing, ignored pod names).

    ``metrics`` maps pod name -> an object with ``timestamp`` and ``window``
    (virtual seconds). Deleting, failed and pending pods are ignored; pods
    without metrics are missing; for CPU, a pod is unready when it has no
    Ready condition or start time, when within ``cpu_init`` of its start it is
    not Ready or its sample predates one window after its last readiness
    change, or after that when it is not Ready and never was.
    """
    ready, unready, missing, ignored = 0, [], [], []
    for pod in pods:
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase == "Failed" or phase == "Pending" or not phase:
            ignored.append(name)
            continue
        m = metrics.get(name)
        if m is None:
            missing.append(name)
            continue
        if resource == "cpu":
            cond = pod_condition(pod, "Ready")
            start = (pod.get("status") or {}).get("startTime")
            if cond is None or not start:
                unready.append(name)
                continue
            started = parse_time(epoch, start)
            changed = parse_time(epoch, cond["lastTransitionTime"]) if cond.get("lastTransitionTime") else started
            if started + cpu_init > now:
                bad = cond.get("status") == "False" or m.timestamp < changed + m.window
            else:
                bad = cond.get("status") == "False" and started + readiness_delay > changed
            if bad:
                unready.append(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def _utilization_ratio(values: Mapping[str, int], requests: Mapping[str, int], target: int) -> tuple[float, int, int]:
    total = req = n = 0
    for name, v in values.items():
        if name not in requests:
            continue
        total += v
        req += requests[name]
        n += 1
    if req == 0:
        raise MetricError("no metrics returned matched known pods")
    util = (total * 100) // req
    return util / target, util, total // n


def resource_replicas(current: int, target_util: int, pods: list[Obj], values: Mapping[str, int],
                      metrics: Mapping[str, Any], resource: str, now: float, epoch: Any,
                      tolerance: tuple[float, float] = (TOLERANCE, TOLERANCE), container: str | None = None,
                      ) -> tuple[int, int, int]:
    """upstream's ``GetResourceReplicas``: (replicas, utilisation %, average raw usage in milli-units).

    Args:
        values: pod name -> usage in milli-units (from the metrics).
        metrics: pod name -> the pod's metrics (``timestamp``, ``window``), for :func:`group_pods`.

    Raises:
        MetricError: no pods, no usable metrics, or a missing request.
    """
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, now, epoch)
    vals = {k: v for k, v in values.items() if k not in ignored and k not in unready}
    if not vals:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    requests = pod_requests(pods, resource, container)
    ratio, util, raw = _utilization_ratio(vals, requests, target_util)
    up_with_unready = bool(unready) and ratio > 1.0
    if not up_with_unready and not missing:
        if _within(ratio, tolerance):
            return current, util, raw
        return math.ceil(ratio * ready), util, raw
    if missing:
        if ratio < 1.0:
            fallback = max(100, target_util)
            for name in missing:
                vals[name] = requests[name] * fallback // 100
        elif ratio > 1.0:
            for name in missing:
                vals[name] = 0
    if up_with_unready:
        for name in unready:
            vals[name] = 0
    new_ratio, _, _ = _utilization_ratio(vals, requests, target_util)
    if _within(new_ratio, tolerance) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, util, raw
    replicas = math.ceil(new_ratio * len(vals))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, util, raw
    return replicas, util, raw


def plain_replicas(current: int, target_value: int, pods: list[Obj], values: Mapping[str, int],
                   metrics: Mapping[str, Any], resource: str, now: float, epoch: Any,
                   tolerance: tuple[float, float] = (TOLERANCE, TOLERANCE)) -> tuple[int, int]:
    """upstream's ``calcPlainMetricReplicas`` (an ``AverageValue`` target): (replicas, average usage, milli-units).

    Raises:
        MetricError: no pods or no usable metrics.
    """
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, now, epoch)
    vals = {k: v for k, v in values.items() if k not in ignored and k not in unready}
    if not vals:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")

    def ratio_of(vs: Mapping[str, int]) -> tuple[float, int]:
        usage = sum(vs.values()) // len(vs)
        return usage / target_value, usage

    ratio, usage = ratio_of(vals)
    up_with_unready = bool(unready) and ratio > 1.0
    if not up_with_unready and not missing:
        if _within(ratio, tolerance):
            return current, usage
        return math.ceil(ratio * ready), usage
    for name in missing:
        vals[name] = target_value if ratio < 1.0 else 0
    if up_with_unready:
        for name in unready:
            vals[name] = 0
    new_ratio, _ = ratio_of(vals)
    if _within(new_ratio, tolerance) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, usage
    replicas = math.ceil(new_ratio * len(vals))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, usage
    return replicas, usage


# --------------------------------------------------------------------------- stabilisation and rate limits

def stabilize_legacy(state: AutoscalerState, desired: int, now: float,
                     window: float = DOWNSCALE_STABILIZATION) -> int:
    """``stabilizeRecommendation`` (no ``behavior``): the highest recommendation of the window;
    records ``desired`` (reusing the slot of one that fell out of the window)."""
    best = desired
    old = None
    for i, (rec, t) in enumerate(state.recommendations):
        if t < now - window:
            old = i
        elif rec > best:
            best = rec
    if old is not None:
        state.recommendations[old] = (desired, now)
    else:
        state.recommendations.append((desired, now))
    return best


def limit_legacy(current: int, desired: int, min_replicas: int, max_replicas: int) -> tuple[int, str, str]:
    """``convertDesiredReplicasWithRules``: clamp to [min, min(max, max(2×current, 4))]; returns
    (count, ScalingLimited reason, message)."""
    scale_up_limit = int(max(_SCALE_UP_LIMIT_FACTOR * current, _SCALE_UP_LIMIT_MINIMUM))
    if max_replicas > scale_up_limit:
        maximum, reason, msg = scale_up_limit, "ScaleUpLimit", \
            "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum, reason, msg = max_replicas, "TooManyReplicas", \
            "the desired replica count is more than the maximum replica count"
    if desired < min_replicas:
        return min_replicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > maximum:
        return maximum, reason, msg
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def stabilize_with_behavior(state: AutoscalerState, current: int, desired: int, up_window: float,
                            down_window: float, now: float) -> tuple[int, str, str]:
    """``stabilizeRecommendationWithBehaviors``: the current count brought within [lowest
    recommendation of the scale-up window, highest of the scale-down window]; records ``desired``.
    Returns (count, AbleToScale reason, message) for when the count differs from ``desired``."""
    up_rec = down_rec = desired
    old = None
    up_cut, down_cut = now - up_window, now - down_window
    for i, (rec, t) in enumerate(state.recommendations):
        if t > up_cut:
            up_rec = min(rec, up_rec)
        if t > down_cut:
            down_rec = max(rec, down_rec)
        if t < up_cut and t < down_cut:
            old = i
    recommendation = max(current, up_rec)
    recommendation = min(recommendation, down_rec)
    if old is not None:
        state.recommendations[old] = (desired, now)
    else:
        state.recommendations.append((desired, now))
    if desired >= current:
        return recommendation, "ScaleUpStabilized", \
            "recent recommendations were lower than current one, applying the lowest recent recommendation"
    return recommendation, "ScaleDownStabilized", \
        "recent recommendations were higher than current one, applying the highest recent recommendation"


def _change_in_period(period: float, events: list[tuple[int, float]], now: float) -> int:
    return sum(change for change, t in events if t > now - period)


def _scale_limit(current: int, rules: Mapping[str, Any], state: AutoscalerState, now: float, up: bool) -> int:
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    # scaling up, "Min" picks the smallest proposal; scaling down, the largest (the smallest change)
    pick_min = (select == "Min") if up else (select != "Min")
    result = None
    for policy in rules.get("policies") or ():
        period = float(policy.get("periodSeconds") or 0)
        added = _change_in_period(period, state.scale_up_events, now)
        deleted = _change_in_period(period, state.scale_down_events, now)
        start = current - added + deleted
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value if up else start - value
        elif up:
            proposed = math.ceil(start * (1 + value / 100))
        else:
            proposed = int(start * (1 - value / 100))
        result = proposed if result is None else (min(result, proposed) if pick_min else max(result, proposed))
    if result is None:
        return (2 ** 31 - 1) if up and not pick_min else current if up else 0
    return result


def limit_with_behavior(state: AutoscalerState, current: int, desired: int, min_replicas: int, max_replicas: int,
                        behavior: Mapping[str, Any], now: float) -> tuple[int, str, str]:
    """``convertDesiredReplicasWithBehaviorRate``: apply the scale-up / scale-down policies of
    ``behavior`` over the recorded scale events; returns (count, ScalingLimited reason, message)."""
    if desired > current:
        limit = max(_scale_limit(current, behavior.get("scaleUp") or {}, state, now, True), current)
        if max_replicas > limit:
            maximum, reason, msg = limit, "ScaleUpLimit", \
                "the desired replica count is increasing faster than the maximum scale rate"
        else:
            maximum, reason, msg = max_replicas, "TooManyReplicas", \
                "the desired replica count is more than the maximum replica count"
        if desired > maximum:
            return maximum, reason, msg
    elif desired < current:
        limit = min(_scale_limit(current, behavior.get("scaleDown") or {}, state, now, False), current)
        if min_replicas < limit:
            minimum, reason, msg = limit, "ScaleDownLimit", \
                "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            minimum, reason, msg = min_replicas, "TooFewReplicas", \
                "the desired replica count is less than the minimum replica count"
        if desired < minimum:
            return minimum, reason, msg
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def _longest_period(rules: Mapping[str, Any] | None) -> float:
    return max((float(p.get("periodSeconds") or 0) for p in (rules or {}).get("policies") or ()), default=0.0)


def record_scale_event(state: AutoscalerState, behavior: Mapping[str, Any] | None, before: int, after: int,
                       now: float) -> None:
    """``storeScaleEvent``: remember a rescale for the rate policies (only with ``behavior``),
    forgetting events older than the longest policy period."""
    if not behavior:
        return
    if after > before:
        keep = _longest_period(behavior.get("scaleUp"))
        state.scale_up_events = [e for e in state.scale_up_events if e[1] > now - keep] + [(after - before, now)]
    elif after < before:
        keep = _longest_period(behavior.get("scaleDown"))
        state.scale_down_events = [e for e in state.scale_down_events if e[1] > now - keep] + [(before - after, now)]


# --------------------------------------------------------------------------- the reconcile

def _set_condition(conds: list[Obj], type_: str, status: str, reason: str, message: str, stamp: str) -> list[Obj]:
    """``setCondition``: replace (keeping ``lastTransitionTime`` when the status is unchanged) or append."""
    out = []
    found = False
    for c in conds:
        if c.get("type") == type_:
            found = True
            ltt = c.get("lastTransitionTime") if c.get("status") == status and c.get("lastTransitionTime") else stamp
            c = {"type": type_, "status": status, "lastTransitionTime": ltt, "reason": reason, "message": message}
        out.append(c)
    if not found:
        out.append({"type": type_, "status": status, "lastTransitionTime": stamp, "reason": reason,
                    "message": message})
    return out


def _milli_quantity(milli: int) -> str:
    return str(Quantity(Fraction(milli, 1000), DECIMAL_SI))


def _usage_values(metrics: Mapping[str, Any], resource: str, container: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, m in metrics.items():
        cs = [c for c in m.containers if container is None or c.name == container]
        if container is not None and not cs:
            raise MetricError(f"container {container} not present in metrics for pod {m.namespace}/{name}")
        if resource == "cpu":
            out[name] = sum(c.cpu_millis for c in cs)
        elif resource == "memory":
            out[name] = sum(c.memory_bytes for c in cs) * 1000
        else:
            raise MetricError(f"unable to get metrics for resource {resource}: "
                              "no metrics returned from resource metrics API")
    return out


def _metric(spec: Mapping[str, Any], current: int, pods: list[Obj], metrics: Mapping[str, Any], hpa: Obj,
            now: float, epoch: Any, tolerance: float) -> tuple[int, str, Obj]:
    """One metric's (proposal, name, status). Raises ``MetricError`` with (reason, message) args
    set on ``.reason``."""
    kind = spec.get("type")
    if kind in ("Resource", "ContainerResource"):
        key = "resource" if kind == "Resource" else "containerResource"
        src = spec.get(key) or {}
        resource = src.get("name") or ""
        container = src.get("container") if kind == "ContainerResource" else None
        target = src.get("target") or {}
        reason = "FailedGetResourceMetric" if kind == "Resource" else "FailedGetContainerResourceMetric"
        label = "resource" if kind == "Resource" else "container resource"
        tol = _tolerances(hpa, tolerance)
        try:
            if not metrics:
                raise MetricError(f"unable to get metrics for resource {resource}: "
                                  "no metrics returned from resource metrics API")
            values = _usage_values(metrics, resource, container)
            if target.get("averageValue") is not None:
                try:
                    replicas, usage = plain_replicas(current, parse_quantity(target["averageValue"]).milli_value(),
                                                     pods, values, metrics, resource, now, epoch, tol)
                except MetricError as e:
                    raise MetricError(f"failed to get {resource} usage: {e}") from None
                current_status = {"averageValue": _milli_quantity(usage)}
                name = f"{resource} {label}"
            elif target.get("averageUtilization") is not None:
                try:
                    replicas, util, raw = resource_replicas(current, int(target["averageUtilization"]), pods, values,
                                                            metrics, resource, now, epoch, tol, container)
                except MetricError as e:
                    raise MetricError(f"failed to get {resource} utilization: {e}") from None
                current_status = {"averageUtilization": util, "averageValue": _milli_quantity(raw)}
                name = f"{resource} {label} utilization (percentage of request)"
            else:
                raise MetricError("invalid resource metric source: neither an average utilization target "
                                  "nor an average value (usage) target was set")
        except MetricError as e:
            raise MetricError(f"failed to get {resource} {label} metric value: {e}", reason, str(e)) from None
        status = {"type": kind, key: {"name": resource, "current": current_status}}
        if container is not None:
            status[key] = {"name": resource, "container": container, "current": current_status}
        return replicas, name, status
    if kind in _CUSTOM_METRICS:
        what, api, reason = _CUSTOM_METRICS[kind]
        metric = ((spec.get(what) or {}).get("metric") or {}).get("name", "")
        if kind == "External":
            metric = f"{hpa['metadata'].get('namespace')}/{metric}"
        detail = (f"unable to get {'external ' if api == 'external' else ''}metric {metric}: "
                  f"unable to fetch metrics from {api} metrics API: "
                  f"no {api} metrics API ({api}.metrics.k8s.io) registered")
        raise MetricError(f"failed to get {what} metric value: {detail}", reason, detail)
    detail = f"unknown metric source type {kind!r}"
    raise MetricError(detail, "InvalidMetricSourceType", detail)


def reconcile(hpa: Obj, scale: Obj | str, pods: list[Obj], metrics: Mapping[str, Any], state: AutoscalerState,
              now: float, epoch: Any, *, tolerance: float = TOLERANCE,
              downscale_window: float = DOWNSCALE_STABILIZATION) -> Decision:
    """One ``reconcileAutoscaler`` pass (pure but for ``state``, which it updates).

    Args:
        hpa: the autoscaler (wire form, defaulted).
        scale: the target's autoscaling/v1 Scale, or the error text of reading it.
        pods: the pods matching the scale's selector in the autoscaler's namespace.
        metrics: pod name -> :class:`~k8semu.node.metrics.PodMetrics` (``containers``,
            ``timestamp``, ``window``) for the pods that have metrics.
        state: this autoscaler's history (recommendations, scale events).
        now: virtual seconds; ``epoch`` maps them to timestamps.

    Returns:
        The :class:`Decision`; the caller writes the scale first, then the status.
    """
    spec = hpa.get("spec") or {}
    old = hpa.get("status") or {}
    stamp = format_time(epoch, now)
    conds = list(old.get("conditions") or [])
    events: list[tuple[str, str, str]] = []

    def cond(type_: str, status: str, reason: str, message: str) -> None:
        nonlocal conds
        conds = _set_condition(conds, type_, status, reason, message, stamp)

    if isinstance(scale, str):
        events.append((WARNING, "FailedGetScale", scale))
        cond("AbleToScale", "False", "FailedGetScale",
             f"the HPA controller was unable to get the target's current scale: {scale}")
        return Decision({**old, "conditions": conds}, None, tuple(events))
    cond("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale")
    current = int((scale.get("spec") or {}).get("replicas") or 0)
    if not state.recommendations:
        state.recommendations.append((current, now))
    min_replicas = spec.get("minReplicas")
    min_replicas = 1 if min_replicas is None else int(min_replicas)
    max_replicas = int(spec.get("maxReplicas") or 0)
    behavior = spec.get("behavior")
    statuses: list[Obj] = []
    desired = 0
    reason = ""
    wanted = None
    if current == 0 and min_replicas != 0:
        rescale = False
        cond("ScalingActive", "False", "ScalingDisabled",
             "scaling is disabled since the replica count of the target is zero")
    elif current > max_replicas:
        reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        rescale = True
    elif current < min_replicas:
        reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        rescale = True
    else:
        selector = (scale.get("status") or {}).get("selector") or ""
        if not selector:
            events.append((WARNING, "SelectorRequired", "selector is required"))
            cond("ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector")
            events.append((WARNING, "FailedComputeMetricsReplicas", "selector is required"))
            return Decision(_status(old, current, old.get("desiredReplicas", 0), None, conds, None),
                            None, tuple(events))
        specs = list(spec.get("metrics") or [])
        proposal, metric_name = 0, ""
        invalid, first_err = 0, None
        for m in specs:
            try:
                n, name, st = _metric(m, current, pods, metrics, hpa, now, epoch, tolerance)
            except MetricError as e:
                events.append((WARNING, e.reason, e.detail))
                statuses.append({"type": ""})
                if first_err is None:
                    first_err = e
                invalid += 1
                continue
            statuses.append(st)
            if proposal == 0 or n > proposal:
                proposal, metric_name = n, name
        if invalid and (invalid >= len(specs) or proposal < current):
            cond("ScalingActive", "False", first_err.reason,  # type: ignore[union-attr]
                 f"the HPA was unable to compute the replica count: {first_err}")
            message = f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first_err}"
            events.append((WARNING, "FailedComputeMetricsReplicas", message))
            return Decision(_status(old, current, old.get("desiredReplicas", 0), statuses, conds, None),
                            None, tuple(events))
        cond("ScalingActive", "True", "ValidMetricFound",
             f"the HPA was able to successfully calculate a replica count from {metric_name}")
        rescale_metric = ""
        if proposal > desired:
            desired, rescale_metric = proposal, metric_name
        if desired > current:
            reason = f"{rescale_metric} above target"
        if desired < current:
            reason = "All metrics below target"
        wanted = min(max(desired, min_replicas), max_replicas)
        if behavior is None:
            stabilized = stabilize_legacy(state, desired, now, downscale_window)
            if stabilized != desired:
                cond("AbleToScale", "True", "ScaleDownStabilized",
                     "recent recommendations were higher than current one, applying the highest recent recommendation")
            else:
                cond("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
            final, lreason, lmsg = limit_legacy(current, stabilized, min_replicas, max_replicas)
        else:
            up = float((behavior.get("scaleUp") or {}).get("stabilizationWindowSeconds") or 0)
            down_w = (behavior.get("scaleDown") or {}).get("stabilizationWindowSeconds")
            down = downscale_window if down_w is None else float(down_w)
            stabilized, sreason, smsg = stabilize_with_behavior(state, current, desired, up, down, now)
            if stabilized != desired:
                cond("AbleToScale", "True", sreason, smsg)
            else:
                cond("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
            final, lreason, lmsg = limit_with_behavior(state, current, stabilized, min_replicas, max_replicas,
                                                       behavior, now)
        cond("ScalingLimited", "True" if final != stabilized else "False", lreason, lmsg)
        desired = final
        rescale = desired != current
    rescale_to = None
    if rescale:
        rescale_to = desired
        cond("AbleToScale", "True", "SucceededRescale",
             f"the HPA controller was able to update the target scale to {desired}")
        events.append((NORMAL, "SuccessfulRescale", f"New size: {desired}; reason: {reason}"))
        record_scale_event(state, behavior, current, desired, now)
    else:
        desired = current
    held = wanted is not None and wanted != desired
    last_scale = stamp if rescale else old.get("lastScaleTime")
    return Decision(_status(old, current, desired, statuses, conds, last_scale), rescale_to, tuple(events), held)


def _status(old: Obj, current: int, desired: int, metrics: list[Obj] | None, conds: list[Obj],
            last_scale: str | None) -> Obj:
    out: Obj = {}
    if last_scale or old.get("lastScaleTime"):
        out["lastScaleTime"] = last_scale or old.get("lastScaleTime")
    out["currentReplicas"] = current
    out["desiredReplicas"] = desired
    if metrics:
        out["currentMetrics"] = metrics
    out["conditions"] = conds
    return out


# --------------------------------------------------------------------------- the controller

class HorizontalController(Component):
    """kube-controller-manager's HPA controller (see module docstring).

    Args:
        api: the API server.
        metrics: metrics-server's view: ``pods_metrics(pods, now) -> {pod name: PodMetrics}``
            (:class:`k8semu.node.metrics.MetricsServer`).
        sync_period / downscale_stabilization / tolerance: the controller manager's flags (seconds, ratio).
    """

    name = "horizontal-pod-autoscaler"

    def __init__(self, api: Any, metrics: Any, *, sync_period: float = SYNC_PERIOD,
                 downscale_stabilization: float = DOWNSCALE_STABILIZATION, tolerance: float = TOLERANCE) -> None:
        super().__init__(api)
        self.metrics = metrics
        self.sync_period = sync_period
        self.downscale_stabilization = downscale_stabilization
        self.tolerance = tolerance
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.hpas = self.informer("horizontalpodautoscalers")
        self.pods = self.informer("pods")
        self.q = self.queue()
        self.state: dict[str, AutoscalerState] = {}
        self._due: dict[str, float] = {}      # key -> next sync time
        self._active: dict[str, None] = {}    # keys whose next sync is real work
        self.hpas.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n, o), on_delete=self._deleted))

    def _key(self, hpa: Obj) -> str:
        m = hpa["metadata"]
        return f"{m['namespace']}/{m['name']}"

    def _enqueue(self, hpa: Obj, old: Obj | None = None) -> None:
        key = self._key(hpa)
        if old is not None and old["metadata"].get("generation") != hpa["metadata"].get("generation"):
            self._active[key] = None  # a spec change: the next sync may act on it
        if key not in self._due:
            self._due[key] = self.api.now + self.sync_period
            self._active[key] = None  # not synced yet
            self.q.add_after(key, self.sync_period)

    def _deleted(self, hpa: Obj) -> None:
        key = self._key(hpa)
        self.state.pop(key, None)
        self._active.pop(key, None)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def next_wakeup(self) -> float | None:
        """The next sync of an autoscaler with work pending (see module docstring), else None."""
        times = [self._due[k] for k in self._active if k in self._due]
        return min(times) if times else None

    def sync(self, key: str) -> None:
        """Reconcile one autoscaler and schedule its next sync one period later."""
        ns, name = key.split("/", 1)
        hpa = self.hpas.indexer.get_by(ns, name)
        if hpa is None:
            self.state.pop(key, None)
            self._due.pop(key, None)
            self._active.pop(key, None)
            return
        self._due[key] = self.api.now + self.sync_period
        self.q.add_after(key, self.sync_period)
        self._reconcile(key, hpa)

    def _reconcile(self, key: str, hpa: Obj) -> None:
        api, now = self.api, self.api.now
        ns = hpa["metadata"]["namespace"]
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        info = None
        try:
            info = by_kind(ref.get("apiVersion") or "", ref.get("kind") or "")
            scale: Obj | str = api.get_scale(info, ref.get("name") or "", namespace=ns, ctx=self.ctx)
        except NoKindMatch as e:
            scale = str(e)
        except errors.StatusError as e:
            scale = str(e)
        pods: list[Obj] = []
        metrics: dict[str, Any] = {}
        if not isinstance(scale, str) and (scale.get("status") or {}).get("selector"):
            try:
                sel = parse_label_selector(scale["status"]["selector"])
            except ValueError:
                sel = None
            if sel is not None:
                pods = [p for p in self.pods.indexer.by_index("namespace", ns)
                        if sel.matches(p["metadata"].get("labels") or {})]
                metrics = self.metrics.pods_metrics(pods, now)
        state = self.state.setdefault(key, AutoscalerState())
        decision = reconcile(hpa, scale, pods, metrics, state, now, api.epoch, tolerance=self.tolerance,
                             downscale_window=self.downscale_stabilization)
        status = decision.status
        events = list(decision.events)
        if decision.rescale_to is not None and info is not None:
            try:
                api.update_scale(info, ref["name"], decision.rescale_to, namespace=ns, ctx=self.ctx)
            except errors.StatusError as e:
                stamp = api.timestamp(now)
                reason = next((m for _, r, m in events if r == "SuccessfulRescale"), "")
                events = [ev for ev in events if ev[1] != "SuccessfulRescale"]
                events.append((WARNING, "FailedRescale", f"{reason}; error: {e}"))
                conds = _set_condition(status["conditions"], "AbleToScale", "False", "FailedUpdateScale",
                                       f"the HPA controller was unable to update the target scale: {e}", stamp)
                old = hpa.get("status") or {}
                status = {**status, "conditions": conds, "desiredReplicas": status["currentReplicas"]}
                if old.get("lastScaleTime"):
                    status["lastScaleTime"] = old["lastScaleTime"]
                else:
                    status.pop("lastScaleTime", None)
        for type_, reason, message in events:
            self.recorder.event(hpa, type_, reason, message)
        if decision.held or decision.rescale_to is not None:
            self._active[key] = None
        else:
            self._active.pop(key, None)
        if status != (hpa.get("status") or {}):
            try:
                api.update("horizontalpodautoscalers", {**hpa, "status": status}, namespace=ns,
                           subresource="status", ctx=self.ctx, field_validation="Ignore")
            except errors.StatusError:
                pass
