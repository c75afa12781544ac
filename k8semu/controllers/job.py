"""The Job controller, as kube-controller-manager's ``job-controller``
(pkg/controller/job, v1.3x with the v1.31+ defaults: pod replacement policy,
success policy, backoff limit per index, delayed terminal conditions).

Design
======

One worker syncs one Job key at a time. A sync reads the Job and its pods
from the informer caches and does what upstream's ``syncJob`` does, in its
order:

1. count: ``succeeded`` / ``failed`` = status counters + pods that finished
   since (still carrying the ``batch.kubernetes.io/job-tracking`` finalizer)
   + ``status.uncountedTerminatedPods``; Indexed jobs count
   ``completedIndexes`` instead;
2. decide whether the Job has finished (pod failure policy ``FailJob``,
   ``BackoffLimitExceeded``, ``DeadlineExceeded``, ``MaxFailedIndexesExceeded``
   / ``FailedIndexes``, success policy), deleting the active pods if so;
3. otherwise manage pods (:func:`manage_pods`): delete surplus or, after the
   pod-failure back-off (10 s doubling, capped at 6 min), create missing ones;
4. track: put finished pods' UIDs in ``uncountedTerminatedPods`` (first
   status write, with the interim ``FailureTarget`` / ``SuccessCriteriaMet``
   condition), remove their tracking finalizers, move them to the counters,
   and — once nothing is uncounted or terminating — add ``Failed`` /
   ``Complete`` (second status write) and record the event.

The decisions are pure functions over wire-form dicts (:func:`match_pod_failure_policy`,
:func:`parse_indexes`, :func:`format_indexes`, :func:`backoff_remaining`,
:func:`manage_pods`, :func:`finished_condition`); :class:`JobController`
only reads caches and makes the API calls.

Like client-go's expectations, the controller remembers pods it created or
deleted and finalizers it removed until its caches show them, so a stale
cache never makes it create twice or count a pod twice; and it reads its own
status writes back when the Job cache is behind them.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..api import errors
from ..api.apiserver import STRATEGIC_MERGE_PATCH
from ..api.meta import controller_of, copy_object, parse_time
from ..api.pods import is_pod_ready, pod_condition
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler, meta_namespace_key

__all__ = [
    "JobController",
    "JOB_TRACKING_FINALIZER",
    "COMPLETION_INDEX_KEY",
    "parse_indexes",
    "format_indexes",
    "with_indexes",
    "match_pod_failure_policy",
    "is_pod_failed",
    "backoff_remaining",
    "manage_pods",
    "pod_from_job_template",
    "is_job_finished",
]

Obj = dict[str, Any]
Intervals = list[tuple[int, int]]

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"

#: Pod failure back-off: 10 s, doubling per consecutive failure, capped at 6 minutes.
POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 360.0
#: Pod events are batched: the Job is synced this long after a pod change.
SYNC_BATCH_PERIOD = 1.0
#: Upstream's cap on pod creations / deletions per sync.
MAX_POD_CREATE_DELETE_PER_SYNC = 500
#: Upstream's cap on UIDs in ``uncountedTerminatedPods`` per sync.
MAX_UNCOUNTED_PODS = 500
_MAX_GENERATED_NAME_LENGTH = 58


# --------------------------------------------------------------------------- indexes


def parse_indexes(text: str | None, completions: int) -> Intervals:
    """Parse ``"0-2,4"`` into ordered intervals ``[(0, 2), (4, 4)]``, dropping
    indexes ``>= completions`` and corrupt parts (upstream's ``parseIndexesFromString``)."""
    out: Intervals = []
    if not text:
        return out
    for part in text.split(","):
        bounds = part.split("-")
        try:
            first = int(bounds[0])
            last = int(bounds[1]) if len(bounds) > 1 else first
        except ValueError:
            continue
        if first >= completions:
            break
        last = min(last, completions - 1)
        if out and out[-1][1] == first - 1:
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def format_indexes(intervals: Intervals) -> str:
    """``status.completedIndexes`` text: ranges of three or more as ``a-b``, two
    neighbours as ``a,b`` (``"0-2,4,5"``), as upstream's ``orderedIntervals.String``."""
    parts = []
    for first, last in intervals:
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts.append(f"{first},{last}")
        else:
            parts.append(f"{first}-{last}")
    return ",".join(parts)


def with_indexes(intervals: Intervals, indexes: Iterable[int]) -> Intervals:
    """The union of ``intervals`` and ``indexes``, merged and ordered."""
    points = sorted({i for a, b in intervals for i in range(a, b + 1)} | set(indexes))
    out: Intervals = []
    for i in points:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _total(intervals: Intervals) -> int:
    return sum(b - a + 1 for a, b in intervals)


def _has(intervals: Intervals, ix: int) -> bool:
    return any(a <= ix <= b for a, b in intervals)


def completion_index(pod: Obj) -> int:
    """The pod's ``batch.kubernetes.io/job-completion-index`` annotation, or -1."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX_KEY)
    try:
        ix = int(value)
    except (TypeError, ValueError):
        return -1
    return ix if ix >= 0 else -1


def _int_annotation(pod: Obj, key: str) -> int:
    try:
        v = int(((pod.get("metadata") or {}).get("annotations") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0
    return v if 0 <= v <= 2**31 - 1 else 0


# --------------------------------------------------------------------------- pods


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def has_tracking_finalizer(pod: Obj) -> bool:
    return JOB_TRACKING_FINALIZER in (_meta(pod).get("finalizers") or ())


def is_indexed(job: Obj) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def only_replace_failed_pods(job: Obj) -> bool:
    """``podReplacementPolicy: Failed`` or a pod failure policy (upstream's onlyReplaceFailedPods)."""
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Obj, job: Obj) -> bool:
    """Failed phase, or (unless only failed pods are replaced) being deleted before succeeding."""
    if _phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool(_meta(pod).get("deletionTimestamp")) and _phase(pod) != "Succeeded"


def is_active(pod: Obj) -> bool:
    """Not Succeeded/Failed and not being deleted (``controller.FilterActivePods``)."""
    return _phase(pod) not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def is_terminating(pod: Obj) -> bool:
    """Being deleted and not yet terminal (``controller.CountTerminatingPods``)."""
    return bool(_meta(pod).get("deletionTimestamp")) and _phase(pod) not in ("Succeeded", "Failed")


def is_job_finished(job: Obj) -> bool:
    """Whether the Job has a ``Complete`` or ``Failed`` condition that is True."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return True
    return False


def _condition(job: Obj, type_: str) -> Obj | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def _restart_count(pod: Obj) -> int:
    status = pod.get("status") or {}
    return sum(int(c.get("restartCount") or 0)
               for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []))


def active_pod_rank(pod: Obj) -> tuple:
    """Sort key putting the pods to delete first, as ``controller.ActivePods``:
    unscheduled < scheduled, Pending < Unknown < Running, not ready < ready,
    more restarts first, newer first."""
    meta = _meta(pod)
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(_phase(pod), 0)
    created = meta.get("creationTimestamp") or ""
    # newer first: invert the timestamp ordering by sorting on its negated characters
    return (
        1 if (pod.get("spec") or {}).get("nodeName") else 0,
        phase_rank,
        1 if is_pod_ready(pod) else 0,
        -_restart_count(pod),
        tuple(-ord(ch) for ch in created),
        meta.get("name", ""),
    )


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str | None, bool, str | None]:
    """Apply ``spec.podFailurePolicy`` to a failed pod, as upstream's ``matchPodFailurePolicy``.

    Returns ``(job failure message or None, count towards backoffLimit, matched
    action or None)``. Rules are tried in order; ``onExitCodes`` looks at
    terminated containers (then init containers) with a non-zero exit code,
    ``onPodConditions`` at the pod's conditions (type and status).
    """
    if policy is None:
        return None, True, None
    meta = _meta(pod)
    status = pod.get("status") or {}
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        matched = None
        if rule.get("onExitCodes") is not None:
            req = rule["onExitCodes"]
            for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
                term = (cs.get("state") or {}).get("terminated")
                if not term:
                    continue
                if req.get("containerName") not in (None, cs.get("name")):
                    continue
                code = int(term.get("exitCode") or 0)
                if code == 0:
                    continue
                values = req.get("values") or []
                if (req.get("operator") == "In" and code in values) or (
                        req.get("operator") == "NotIn" and code not in values):
                    matched = f"Container {cs.get('name')} for pod {meta.get('namespace')}/{meta.get('name')} " \
                              f"failed with exit code {code} matching {action} rule at index {index}"
                    break
        elif rule.get("onPodConditions") is not None:
            for cond in status.get("conditions") or ():
                if any(cond.get("type") == p.get("type") and cond.get("status") == (p.get("status") or "True")
                       for p in rule["onPodConditions"]):
                    matched = f"Pod {meta.get('namespace')}/{meta.get('name')} has condition {cond.get('type')} " \
                              f"matching {action} rule at index {index}"
                    break
        if matched is None:
            continue
        if action == "Ignore":
            return None, False, action
        if action == "Count":
            return None, True, action
        if action == "FailIndex":
            return None, True, action
        if action == "FailJob":
            return matched, True, action
    return None, True, None


def finish_time(pod: Obj, epoch) -> float:
    """Virtual seconds at which a pod finished: its containers' latest
    ``finishedAt``, else the Ready=False transition, else its deletion
    timestamp, else its creation (upstream's ``getFinishedTime``)."""
    status = pod.get("status") or {}
    times = []
    statuses = status.get("containerStatuses") or []
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        if not term or not term.get("finishedAt"):
            times = []
            break
        times.append(parse_time(epoch, term["finishedAt"]))
    if times:
        return max(times)
    ready = pod_condition(pod, "Ready")
    if ready and ready.get("status") == "False" and ready.get("lastTransitionTime") and \
            _phase(pod) in ("Succeeded", "Failed"):
        return parse_time(epoch, ready["lastTransitionTime"])
    meta = _meta(pod)
    if meta.get("deletionTimestamp"):
        return parse_time(epoch, meta["deletionTimestamp"]) - float(meta.get("deletionGracePeriodSeconds") or 0)
    return parse_time(epoch, meta.get("creationTimestamp")) if meta.get("creationTimestamp") else 0.0


def backoff_remaining(failures: int, last_failure: float | None, now: float) -> float:
    """Seconds until a replacement pod may be created after ``failures``
    consecutive failures, the last at ``last_failure`` (10 s doubling, 6 min cap)."""
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = POD_FAILURE_BACKOFF
    for _ in range(1, failures):
        delay *= 2
        if delay >= MAX_POD_FAILURE_BACKOFF:
            delay = MAX_POD_FAILURE_BACKOFF
            break
    elapsed = now - last_failure
    return 0.0 if delay < elapsed else delay - elapsed


def _new_backoff_record(record: tuple[int, float | None], succeeded: list[Obj], failed: list[Obj],
                        epoch) -> tuple[int, float | None]:
    """Upstream's ``newBackoffRecord``: a success resets the count; failures after it add up."""
    count, last = record
    failed_times = sorted(finish_time(p, epoch) for p in failed)
    if not succeeded:
        if not failed_times:
            return record
        return count + len(failed_times), failed_times[-1]
    last_success = max(finish_time(p, epoch) for p in succeeded)
    count, last = 0, None
    for t in reversed(failed_times):
        if t <= last_success:
            break
        if last is None:
            last = t
        count += 1
    return count, last


def pod_from_job_template(job: Obj, index: int | None = None, replaced: Obj | None = None) -> Obj:
    """The Pod the Job controller creates: the template with the tracking
    finalizer and a controller reference; for Indexed jobs the completion
    index annotation and label, ``JOB_COMPLETION_INDEX`` env, hostname
    ``<job>-<index>`` and generateName ``<job>-<index>-``."""
    meta = _meta(job)
    spec = job.get("spec") or {}
    tmpl = copy_object(spec.get("template") or {})
    tmeta = tmpl.get("metadata") or {}
    pspec = tmpl.get("spec") or {}
    name = meta.get("name", "")
    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    generate = f"{name}-"
    if index is not None:
        annotations[COMPLETION_INDEX_KEY] = str(index)
        labels[COMPLETION_INDEX_KEY] = str(index)
        pspec["hostname"] = f"{name}-{index}"
        suffix = f"-{index}-"
        generate = name + suffix
        if len(generate) > _MAX_GENERATED_NAME_LENGTH:
            generate = name[:_MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
        for key in ("initContainers", "containers"):
            for c in pspec.get(key) or ():
                env = c.setdefault("env", [])
                if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                    env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                        "apiVersion": "v1", "fieldPath": f"metadata.labels['{COMPLETION_INDEX_KEY}']"}}})
        if spec.get("backoffLimitPerIndex") is not None:
            fails, ignored = 0, 0
            if replaced is not None:
                fails = _int_annotation(replaced, INDEX_FAILURE_COUNT_KEY)
                ignored = _int_annotation(replaced, INDEX_IGNORED_FAILURE_COUNT_KEY)
                _, counted, _ = match_pod_failure_policy(spec.get("podFailurePolicy"), replaced)
                if counted:
                    fails += 1
                else:
                    ignored += 1
            annotations[INDEX_FAILURE_COUNT_KEY] = str(fails)
            if ignored:
                annotations[INDEX_IGNORED_FAILURE_COUNT_KEY] = str(ignored)
    elif len(generate) > _MAX_GENERATED_NAME_LENGTH:
        generate = generate[:_MAX_GENERATED_NAME_LENGTH]
    finalizers = list(tmeta.get("finalizers") or [])
    if JOB_TRACKING_FINALIZER not in finalizers:
        finalizers.append(JOB_TRACKING_FINALIZER)
    pmeta: Obj = {"generateName": generate, "namespace": meta.get("namespace")}
    if labels:
        pmeta["labels"] = labels
    if annotations:
        pmeta["annotations"] = annotations
    pmeta["finalizers"] = finalizers
    pmeta["ownerReferences"] = [{
        "apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": meta.get("uid"),
        "controller": True, "blockOwnerDeletion": True,
    }]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": pspec}


def manage_pods(job: Obj, active: list[Obj], pods: list[Obj], succeeded: int, succeeded_indexes: Intervals,
                failed_indexes: Intervals | None, terminating: int) -> tuple[list[Obj], list[int | None]]:
    """Upstream's ``manageJob`` decision for a running, not suspended Job.

    Returns ``(pods to delete, pods to create)``: at most one of the two is
    non-empty (deletion wins); a creation is a completion index (Indexed) or
    None. The back-off check is the caller's.
    """
    spec = job.get("spec") or {}
    parallelism = int(spec.get("parallelism") or 0)
    completions = spec.get("completions")
    n_active = len(active)
    if completions is None:
        want = n_active if succeeded > 0 else parallelism
    else:
        want = max(0, min(int(completions) - succeeded, parallelism))
    rm_at_least = max(0, n_active - want)
    to_delete: list[Obj] = []
    left = list(active)
    if is_indexed(job):
        to_delete, left = _duplicate_index_pods(active, int(completions or 0))
    if len(to_delete) < rm_at_least:
        left = sorted(left, key=active_pod_rank)
        to_delete += left[:rm_at_least - len(to_delete)]
    if to_delete:
        return to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC], []
    diff = want - (terminating if only_replace_failed_pods(job) else 0) - n_active
    if diff <= 0:
        return [], []
    diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
    if not is_indexed(job):
        return [], [None] * diff
    non_pending = with_indexes(succeeded_indexes, [completion_index(p) for p in active if completion_index(p) >= 0])
    if only_replace_failed_pods(job):
        non_pending = with_indexes(non_pending, [completion_index(p) for p in pods
                                                 if is_terminating(p) and completion_index(p) >= 0])
    if failed_indexes:
        non_pending = with_indexes(non_pending, [i for a, b in failed_indexes for i in range(a, b + 1)])
    out: list[int | None] = []
    for ix in range(int(completions or 0)):
        if len(out) >= diff:
            break
        if not _has(non_pending, ix):
            out.append(ix)
    return [], out


def _duplicate_index_pods(pods: list[Obj], completions: int) -> tuple[list[Obj], list[Obj]]:
    by_index: dict[int, list[Obj]] = {}
    rm: list[Obj] = []
    for p in pods:
        ix = completion_index(p)
        if ix < 0 or ix >= completions:
            rm.append(p)
        else:
            by_index.setdefault(ix, []).append(p)
    left = []
    for ix in sorted(by_index):
        group = sorted(by_index[ix], key=active_pod_rank)
        rm += group[:-1]
        left.append(group[-1])
    return rm, left


def _past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(_restart_count(p) for p in pods if _phase(p) in ("Running", "Pending"))
    limit = int(spec.get("backoffLimit") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit


def _match_success_policy(policy: Obj | None, completions: int, succeeded: Intervals) -> str | None:
    if not policy or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue
            have = sum(1 for a, b in required for i in range(a, b + 1) if _has(succeeded, i))
            if have == _total(required) or (count is not None and have >= int(count)):
                return f"Matched rules at index {index}"
        elif count is not None and _total(succeeded) >= int(count):
            return f"Matched rules at index {index}"
    return None


def _is_index_failed(job: Obj, pod: Obj) -> bool:
    spec = job.get("spec") or {}
    counted = False
    if is_pod_failed(pod, job):
        if spec.get("podFailurePolicy") is not None:
            _, counted, action = match_pod_failure_policy(spec["podFailurePolicy"], pod)
            if action == "FailIndex":
                return True
        else:
            counted = True
    return counted and _int_annotation(pod, INDEX_FAILURE_COUNT_KEY) >= int(spec.get("backoffLimitPerIndex") or 0)


def _new_condition(type_: str, reason: str, message: str, stamp: str, status: str = "True") -> Obj:
    return {"type": type_, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def _ensure_condition(conds: list[Obj], type_: str, status: str, reason: str, message: str,
                      stamp: str) -> tuple[list[Obj], bool]:
    for i, c in enumerate(conds):
        if c.get("type") == type_:
            if c.get("status") != status or c.get("reason") != reason or c.get("message") != message:
                conds = list(conds)
                conds[i] = _new_condition(type_, reason, message, stamp, status)
                return conds, True
            return conds, False
    if status != "False":
        return conds + [_new_condition(type_, reason, message, stamp, status)], True
    return conds, False


# --------------------------------------------------------------------------- controller


class _Expectations:
    """What this controller did that its caches have not shown yet, per Job key:
    pod names created, pod UIDs deleted, pod UIDs whose finalizer was removed."""

    def __init__(self) -> None:
        self.creates: dict[str, dict[str, None]] = {}
        self.deletes: dict[str, dict[str, None]] = {}
        self.rm_finalizers: dict[str, dict[str, None]] = {}

    def satisfied(self, key: str) -> bool:
        return not self.creates.get(key) and not self.deletes.get(key)

    def forget(self, key: str) -> None:
        for d in (self.creates, self.deletes, self.rm_finalizers):
            d.pop(key, None)


class JobController(Component):
    """kube-controller-manager's Job controller (actor ``job-controller``).

    Watches Jobs and Pods; pod changes sync their Job after
    :data:`SYNC_BATCH_PERIOD` (1 s), Job changes at once. Events:
    ``SuccessfulCreate`` ``Created pod: <name>``, ``SuccessfulDelete``,
    ``Completed`` ``Job completed``, Warning ``<reason>`` ``<message>`` when
    it fails (``BackoffLimitExceeded`` ``Job has reached the specified backoff
    limit``, ``DeadlineExceeded`` ``Job was active longer than specified
    deadline``…), ``Suspended`` / ``Resumed``.
    """

    name = "job-controller"

    def __init__(self, api, name: str | None = None, user=None) -> None:
        super().__init__(api, name, user)
        self.jobs = self.informer("jobs.batch")
        self.pods = self.informer("pods", indexers={"job": _owner_job_index})
        self.q = self.queue()
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.exp = _Expectations()
        self._backoff: dict[str, tuple[int, float | None]] = {}
        self._written: dict[str, Obj] = {}
        self._deleted_uids: dict[str, str] = {}
        self.jobs.add_event_handler(EventHandler(on_add=self._job_added, on_update=self._job_updated,
                                                 on_delete=self._job_deleted))
        self.pods.add_event_handler(EventHandler(on_add=self._pod_added, on_update=self._pod_updated,
                                                 on_delete=self._pod_deleted))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    # ---- event handlers (only enqueue)
    def _job_added(self, job: Obj) -> None:
        self.q.add(meta_namespace_key(job))

    def _job_updated(self, old: Obj, new: Obj) -> None:
        key = meta_namespace_key(new)
        self.q.add(key)

    def _job_deleted(self, job: Obj) -> None:
        key = meta_namespace_key(job)
        self._deleted_uids[key] = _meta(job).get("uid", "")
        self.q.add(key)

    @staticmethod
    def _job_key(pod: Obj) -> str | None:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "Job":
            return None
        return f"{_meta(pod).get('namespace')}/{ref.get('name')}"

    def _pod_added(self, pod: Obj) -> None:
        key = self._job_key(pod)
        if key is None:
            return
        self.exp.creates.get(key, {}).pop(_meta(pod).get("name", ""), None)
        if _meta(pod).get("deletionTimestamp"):
            self.exp.deletes.get(key, {}).pop(_meta(pod).get("uid", ""), None)
        self.q.add_after(key, SYNC_BATCH_PERIOD)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        key = self._job_key(new)
        if key is None:
            return
        uid = _meta(new).get("uid", "")
        if _meta(new).get("deletionTimestamp"):
            self.exp.deletes.get(key, {}).pop(uid, None)
        if not has_tracking_finalizer(new):
            self.exp.rm_finalizers.get(key, {}).pop(uid, None)
        self.q.add_after(key, SYNC_BATCH_PERIOD)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._job_key(pod)
        if key is None:
            return
        uid = _meta(pod).get("uid", "")
        self.exp.deletes.get(key, {}).pop(uid, None)
        self.exp.rm_finalizers.get(key, {}).pop(uid, None)
        self.q.add_after(key, SYNC_BATCH_PERIOD)

    # ---- sync
    def _current_job(self, key: str) -> Obj | None:
        ns, name = key.split("/", 1)
        job = self.jobs.indexer.get_by(ns, name)
        written = self._written.get(key)
        if job is None:
            return None
        if written is not None and _meta(written).get("uid") == _meta(job).get("uid") and \
                int(_meta(written).get("resourceVersion") or 0) > int(_meta(job).get("resourceVersion") or 0):
            return written
        return job

    def sync(self, key: str) -> None:
        """Reconcile one Job (``namespace/name``), as upstream's ``syncJob``."""
        job = self._current_job(key)
        if job is None:
            self._cleanup_deleted(key)
            return
        if is_job_finished(job):
            self._backoff.pop(key, None)
            return
        if (job.get("spec") or {}).get("managedBy") not in (None, "kubernetes.io/job-controller"):
            return
        api, ctx = self.api, self.ctx
        now = api.now
        spec = job.get("spec") or {}
        status = copy_object(job.get("status") or {})
        uncounted = status.get("uncountedTerminatedPods") or {}
        status["uncountedTerminatedPods"] = {k: list(v) for k, v in uncounted.items() if v}
        unc_succ = set(uncounted.get("succeeded") or ())
        unc_fail = set(uncounted.get("failed") or ())
        satisfied = self.exp.satisfied(key)
        expected_rm = self.exp.rm_finalizers.setdefault(key, {})
        uid = _meta(job).get("uid")
        pods = [p for p in self.pods.indexer.by_index("job", uid or "")]
        pods = sorted(pods, key=lambda p: _meta(p).get("name", ""))
        active = [p for p in pods if is_active(p)]
        ready = sum(1 for p in active if is_pod_ready(p))
        terminating = sum(1 for p in pods if is_terminating(p))
        policy = spec.get("podFailurePolicy")
        indexed = is_indexed(job)
        completions = spec.get("completions")

        def valid(p: Obj, uncounted_set: set[str]) -> bool:
            puid = _meta(p).get("uid", "")
            if not has_tracking_finalizer(p) or puid in uncounted_set or puid in expected_rm:
                return False
            if indexed:
                ix = completion_index(p)
                return 0 <= ix < int(completions or 0)
            return True

        new_succeeded = [p for p in pods if valid(p, unc_succ) and _phase(p) == "Succeeded"]
        new_failed = [p for p in pods if valid(p, unc_fail) and is_pod_failed(p, job)]
        succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(unc_succ)
        counted_new_failed = sum(1 for p in new_failed if match_pod_failure_policy(policy, p)[1])
        failed = int(status.get("failed") or 0) + counted_new_failed + len(unc_fail)
        suspended = bool(spec.get("suspend"))
        if not status.get("startTime") and not suspended:
            status["startTime"] = api.timestamp(now)
        backoff = _new_backoff_record(self._backoff.get(key, (0, None)), new_succeeded, new_failed, api.epoch)
        stamp = api.timestamp(now)

        # -- has the Job finished?
        finished: Obj | None = None
        scm = _condition(job, "SuccessCriteriaMet")
        if scm is not None and scm.get("status") == "True":
            finished = scm
        if finished is None:
            ft = _condition(job, "FailureTarget")
            if ft is not None and ft.get("status") == "True":
                finished = _new_condition("Failed", ft.get("reason", ""), ft.get("message", ""), stamp)
            elif policy is not None:
                for p in pods:
                    if is_pod_failed(p, job):
                        msg = match_pod_failure_policy(policy, p)[0]
                        if msg is not None:
                            finished = _new_condition("FailureTarget", "PodFailurePolicy", msg, stamp)
                            break
        if finished is None:
            if failed > int(spec.get("backoffLimit") or 0) or _past_backoff_limit_on_failure(job, pods):
                finished = _new_condition("FailureTarget", "BackoffLimitExceeded",
                                          "Job has reached the specified backoff limit", stamp)
            elif spec.get("activeDeadlineSeconds") is not None and not suspended and status.get("startTime"):
                elapsed = now - parse_time(api.epoch, status["startTime"])
                allowed = float(spec["activeDeadlineSeconds"])
                if elapsed >= allowed:
                    finished = _new_condition("FailureTarget", "DeadlineExceeded",
                                              "Job was active longer than specified deadline", stamp)
                else:
                    self.q.add_after(key, allowed - elapsed)
        prev_indexes: Intervals = []
        succeeded_indexes: Intervals = []
        failed_indexes: Intervals | None = None
        delayed: dict[int, Obj] = {}
        if indexed:
            comp = int(completions or 0)
            prev_indexes = parse_indexes(status.get("completedIndexes"), comp)
            succeeded_indexes = with_indexes(prev_indexes, [
                completion_index(p) for p in pods
                if _phase(p) == "Succeeded" and 0 <= completion_index(p) < comp and has_tracking_finalizer(p)])
            succeeded = _total(succeeded_indexes)
            if spec.get("backoffLimitPerIndex") is not None:
                failed_indexes = with_indexes(parse_indexes(status.get("failedIndexes"), comp), [
                    completion_index(p) for p in pods
                    if 0 <= completion_index(p) < comp and has_tracking_finalizer(p) and _is_index_failed(job, p)])
                if finished is None:
                    mfi = spec.get("maxFailedIndexes")
                    if mfi is not None and _total(failed_indexes) > int(mfi):
                        finished = _new_condition("FailureTarget", "MaxFailedIndexesExceeded",
                                                  "Job has exceeded the specified maximal number of failed indexes",
                                                  stamp)
                    elif _total(failed_indexes) > 0 and _total(failed_indexes) + succeeded >= comp:
                        finished = _new_condition("FailureTarget", "FailedIndexes", "Job has failed indexes", stamp)
                active_ix = {completion_index(p) for p in active}
                for p in pods:
                    ix = completion_index(p)
                    if not valid(p, set()) or not is_pod_failed(p, job) or ix >= comp:
                        continue
                    if _has(succeeded_indexes, ix) or _has(failed_indexes, ix) or ix in active_ix:
                        continue
                    prev = delayed.get(ix)
                    if prev is None or (
                            _int_annotation(prev, INDEX_FAILURE_COUNT_KEY) + _int_annotation(
                                prev, INDEX_IGNORED_FAILURE_COUNT_KEY)
                            <= _int_annotation(p, INDEX_FAILURE_COUNT_KEY) + _int_annotation(
                                p, INDEX_IGNORED_FAILURE_COUNT_KEY)
                            and finish_time(p, api.epoch) >= finish_time(prev, api.epoch)):
                        delayed[ix] = p
            if finished is None:
                msg = _match_success_policy(spec.get("successPolicy"), comp, succeeded_indexes)
                if msg is not None:
                    finished = _new_condition("SuccessCriteriaMet", "SuccessPolicy", msg, stamp)

        n_active = len(active)
        conditions = list(status.get("conditions") or [])
        suspend_changed = False
        errs: list[Exception] = []
        if finished is not None:
            deleted, deleted_ready = 0, 0
            for p in active:
                try:
                    api.delete("pods", _meta(p)["name"], namespace=_meta(p).get("namespace"), ctx=ctx)
                except errors.NotFound:
                    pass
                except errors.StatusError as exc:
                    errs.append(exc)
                    continue
                deleted += 1
                deleted_ready += 1 if is_pod_ready(p) else 0
            if deleted != n_active or not satisfied:
                finished = None
            n_active -= deleted
            terminating += deleted
            ready -= deleted_ready
        else:
            if satisfied and not _meta(job).get("deletionTimestamp"):
                n_active, terminating, ready = self._manage(key, job, pods, active, succeeded, succeeded_indexes,
                                                            failed_indexes, terminating, ready, backoff, delayed,
                                                            errs)
                called = True
            else:
                called = False
            done = (succeeded > 0 and n_active == 0) if completions is None else \
                (succeeded >= int(completions) and n_active == 0)
            if done:
                finished = _new_condition("SuccessCriteriaMet", "CompletionsReached",
                                          "Reached expected number of succeeded pods", stamp)
            elif called:
                if suspended:
                    conditions, suspend_changed = _ensure_condition(conditions, "Suspended", "True", "JobSuspended",
                                                                    "Job suspended", stamp)
                    if suspend_changed:
                        self.recorder.event(job, NORMAL, "Suspended", "Job suspended")
                else:
                    conditions, suspend_changed = _ensure_condition(conditions, "Suspended", "False", "JobResumed",
                                                                    "Job resumed", stamp)
                    if suspend_changed:
                        self.recorder.event(job, NORMAL, "Resumed", "Job resumed")
                        status["startTime"] = stamp
        status["conditions"] = conditions
        needs_flush = suspend_changed or n_active != int(status.get("active") or 0) or \
            ready != status.get("ready") or terminating != status.get("terminating")
        status["active"] = n_active
        status["ready"] = ready
        status["terminating"] = terminating
        self._track(key, job, status, pods, finished, needs_flush, prev_indexes, succeeded_indexes,
                    failed_indexes, delayed, expected_rm, terminating, backoff)
        if errs:
            raise errs[0]

    def _manage(self, key, job, pods, active, succeeded, succeeded_indexes, failed_indexes, terminating, ready,
                backoff, delayed, errs) -> tuple[int, int, int]:
        api, ctx = self.api, self.ctx
        spec = job.get("spec") or {}
        n_active = len(active)
        if spec.get("suspend"):
            to_delete, to_create = sorted(active, key=active_pod_rank), []
        else:
            to_delete, to_create = manage_pods(job, active, pods, succeeded, succeeded_indexes, failed_indexes,
                                               terminating)
        if to_delete:
            removed, removed_ready = self._delete_job_pods(key, job, to_delete, errs)
            return n_active - removed, terminating + removed, ready - removed_ready
        if not to_create:
            return n_active, terminating, ready
        if spec.get("backoffLimitPerIndex") is None:
            remaining = backoff_remaining(backoff[0], backoff[1], api.now)
            if remaining > 0:
                self.q.add_after(key, remaining)
                return n_active, terminating, ready
        else:
            now_ix, wait = [], None
            for ix in to_create:
                rec = delayed.get(ix)
                rem = 0.0
                if rec is not None:
                    fails = _int_annotation(rec, INDEX_FAILURE_COUNT_KEY) + 1
                    rem = backoff_remaining(fails, finish_time(rec, api.epoch), api.now)
                if rem == 0:
                    now_ix.append(ix)
                elif wait is None or rem < wait:
                    wait = rem
            if not now_ix:
                if wait:
                    self.q.add_after(key, wait)
                return n_active, terminating, ready
            to_create = now_ix
        created = self.exp.creates.setdefault(key, {})
        for ix in to_create:
            pod = pod_from_job_template(job, ix, delayed.get(ix) if ix is not None else None)
            try:
                out = api.create("pods", pod, namespace=_meta(job).get("namespace"), ctx=ctx,
                                 field_validation="Ignore")
            except errors.StatusError as exc:
                self.recorder.event(job, WARNING, "FailedCreate", f"Error creating: {exc}")
                errs.append(exc)
                break
            created[_meta(out)["name"]] = None
            n_active += 1
            self.recorder.event(job, NORMAL, "SuccessfulCreate", f"Created pod: {_meta(out)['name']}")
        return n_active, terminating, ready

    def _delete_job_pods(self, key: str, job: Obj, pods: list[Obj], errs: list) -> tuple[int, int]:
        removed = removed_ready = 0
        deletes = self.exp.deletes.setdefault(key, {})
        for p in pods:
            meta = _meta(p)
            try:
                if has_tracking_finalizer(p):
                    self._remove_finalizer(p)
                api_obj = self.api.delete("pods", meta["name"], namespace=meta.get("namespace"), ctx=self.ctx)
                if _meta(api_obj).get("deletionTimestamp"):
                    deletes[meta.get("uid", "")] = None
            except errors.NotFound:
                pass
            except errors.StatusError as exc:
                errs.append(exc)
                continue
            removed += 1
            removed_ready += 1 if is_pod_ready(p) else 0
            self.recorder.event(job, NORMAL, "SuccessfulDelete", f"Deleted pod: {meta['name']}")
        return removed, removed_ready

    def _remove_finalizer(self, pod: Obj) -> None:
        meta = _meta(pod)
        self.api.patch("pods", meta["name"],
                       {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}},
                       STRATEGIC_MERGE_PATCH, namespace=meta.get("namespace"), ctx=self.ctx)

    def _write_status(self, key: str, job: Obj, status: Obj) -> Obj:
        st = dict(status)
        unc = {k: v for k, v in (st.get("uncountedTerminatedPods") or {}).items() if v}
        st["uncountedTerminatedPods"] = unc
        if not st.get("conditions"):
            st.pop("conditions", None)
        out = self.api.update("jobs.batch", {**job, "status": st}, subresource="status", ctx=self.ctx,
                              field_validation="Ignore")
        self._written[key] = out
        return out

    def _track(self, key, job, status, pods, finished, needs_flush, prev_indexes, succeeded_indexes,
               failed_indexes, delayed, expected_rm, terminating, backoff) -> None:
        """Upstream's ``trackJobStatusAndRemoveFinalizers``."""
        spec = job.get("spec") or {}
        policy = spec.get("podFailurePolicy")
        indexed = is_indexed(job)
        completions = int(spec.get("completions") or 0)
        unc = status["uncountedTerminatedPods"]
        unc_succ = list(unc.get("succeeded") or [])
        unc_fail = list(unc.get("failed") or [])
        with_finalizer = {_meta(p).get("uid") for p in pods
                          if has_tracking_finalizer(p) and _meta(p).get("uid") not in expected_rm}

        def clean() -> bool:
            nonlocal unc_succ, unc_fail
            changed = False
            keep = [u for u in unc_succ if u in with_finalizer]
            if len(keep) != len(unc_succ):
                status["succeeded"] = int(status.get("succeeded") or 0) + len(unc_succ) - len(keep)
                unc_succ, changed = keep, True
            keep = [u for u in unc_fail if u in with_finalizer]
            if len(keep) != len(unc_fail):
                status["failed"] = int(status.get("failed") or 0) + len(unc_fail) - len(keep)
                unc_fail, changed = keep, True
            return changed

        if clean():
            needs_flush = True
        to_remove: list[Obj] = []
        new_indexes: list[int] = []
        finishing_failed = finished is not None and finished.get("type") != "SuccessCriteriaMet"
        ordered = sorted(pods, key=completion_index) if indexed else pods
        for p in ordered:
            puid = _meta(p).get("uid")
            if not has_tracking_finalizer(p) or puid in expected_rm:
                continue
            failed_now = is_pod_failed(p, job)
            if not (_meta(job).get("deletionTimestamp") or finished is not None or _phase(p) == "Succeeded"):
                if not failed_now:
                    continue
                ix = completion_index(p)
                if spec.get("backoffLimitPerIndex") is not None and ix >= 0 and \
                        delayed.get(ix) is not None and _meta(delayed[ix]).get("uid") == puid:
                    continue
            to_remove.append(p)
            if _phase(p) == "Succeeded" and puid not in unc_fail:
                if indexed:
                    ix = completion_index(p)
                    if 0 <= ix < completions and not _has(prev_indexes, ix):
                        new_indexes.append(ix)
                        needs_flush = True
                elif puid not in unc_succ:
                    unc_succ.append(puid)
                    needs_flush = True
            elif failed_now or finishing_failed:
                ix = completion_index(p)
                if puid not in unc_fail and (not indexed or 0 <= ix < completions):
                    if match_pod_failure_policy(policy, p)[1]:
                        unc_fail.append(puid)
                        needs_flush = True
            if len(new_indexes) + len(unc_succ) + len(unc_fail) >= MAX_UNCOUNTED_PODS:
                break
        if indexed:
            succeeded_indexes = with_indexes(succeeded_indexes, new_indexes)
            text = format_indexes(succeeded_indexes)
            if text != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["succeeded"] = _total(succeeded_indexes)
            status["completedIndexes"] = text
            if failed_indexes is not None:
                ftext = format_indexes(failed_indexes)
                if status.get("failedIndexes") != ftext:
                    status["failedIndexes"] = ftext
                    needs_flush = True
        stamp = self.api.timestamp()
        if finished is not None and finished["type"] == "FailureTarget":
            status["conditions"] = list(status.get("conditions") or []) + [finished]
            needs_flush = True
            finished = _new_condition("Failed", finished["reason"], finished["message"], stamp)
        if finished is not None and finished["type"] == "SuccessCriteriaMet":
            if _condition({"status": status}, "SuccessCriteriaMet") is None:
                status["conditions"] = list(status.get("conditions") or []) + [finished]
                needs_flush = True
            finished = _new_condition("Complete", finished["reason"], finished["message"], stamp)
        status["uncountedTerminatedPods"] = {"succeeded": unc_succ, "failed": unc_fail}
        if needs_flush:
            job = self._write_status(key, job, status)
            self._backoff[key] = backoff
            needs_flush = False
        rm_err: Exception | None = None
        if to_remove:
            expected = self.exp.rm_finalizers.setdefault(key, {})
            for p in to_remove:
                puid = _meta(p).get("uid")
                expected[puid] = None
                try:
                    self._remove_finalizer(p)
                except errors.NotFound:
                    pass
                except errors.StatusError as exc:
                    expected.pop(puid, None)
                    rm_err = exc
                    continue
                with_finalizer.discard(puid)
        if clean():
            needs_flush = True
        status["uncountedTerminatedPods"] = {"succeeded": unc_succ, "failed": unc_fail}
        if rm_err is not None:
            if needs_flush:
                self._write_status(key, job, status)
            raise rm_err
        job_finished = False
        if finished is not None and not unc_succ and not unc_fail and terminating == 0:
            conds, _ = _ensure_condition(list(status.get("conditions") or []), finished["type"], "True",
                                         finished["reason"], finished["message"], stamp)
            status["conditions"] = conds
            if finished["type"] == "Complete":
                status["completionTime"] = finished["lastTransitionTime"]
            job_finished = True
            needs_flush = True
        if needs_flush:
            job = self._write_status(key, job, status)
            if job_finished:
                if finished["type"] == "Complete":
                    if spec.get("completions") is not None and int(status.get("succeeded") or 0) > completions:
                        self.recorder.event(job, WARNING, "TooManySucceededPods",
                                            "Too many succeeded pods running after completion count reached")
                    self.recorder.event(job, NORMAL, "Completed", "Job completed")
                else:
                    self.recorder.event(job, WARNING, finished["reason"], finished["message"])

    def _cleanup_deleted(self, key: str) -> None:
        """The Job is gone: forget it, and release its pods' tracking finalizers."""
        self.exp.forget(key)
        self._backoff.pop(key, None)
        self._written.pop(key, None)
        uid = self._deleted_uids.pop(key, None)
        if not uid:
            return
        for p in self.pods.indexer.by_index("job", uid):
            if has_tracking_finalizer(p):
                try:
                    self._remove_finalizer(p)
                except errors.NotFound:
                    pass


def _owner_job_index(pod: Obj) -> list[str]:
    ref = controller_of(pod)
    return [ref.get("uid", "")] if ref is not None and ref.get("kind") == "Job" else []
