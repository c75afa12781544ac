"""Pure Deployment arithmetic and bookkeeping, after upstream's
``pkg/controller/deployment/util/deployment_util.go``.

Nothing here talks to the API server. Objects are wire-form dicts; functions
documented as *setting* something mutate the dict they are given, and are
only called on the controller's own deep copies (as upstream mutates its
``DeepCopy``). Everything else is read-only.

Units: replica counts are ints, times are virtual seconds, timestamps RFC 3339.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from ...api.meta import DEFAULT_EPOCH, format_time
from ..controller_utils import to_seconds

__all__ = [
    "REVISION_ANNOTATION", "REVISION_HISTORY_ANNOTATION", "DESIRED_REPLICAS_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION", "LAST_APPLIED_ANNOTATION", "ROLLBACK_TO_ANNOTATION",
    "DEFAULT_UNIQUE_LABEL_KEY", "RESTARTED_AT_ANNOTATION", "ANNOTATIONS_TO_SKIP",
    "MAX_REV_HISTORY_LENGTH_IN_CHARS",
    "NEW_RS_REASON", "FOUND_NEW_RS_REASON", "RS_UPDATED_REASON", "NEW_RS_AVAILABLE_REASON",
    "TIMED_OUT_REASON", "PAUSED_REASON", "RESUMED_REASON", "FAILED_RS_CREATE_REASON",
    "MIN_AVAILABLE_REASON", "MIN_UNAVAILABLE_REASON",
    "scaled_value", "resolve_fenceposts", "max_surge", "max_unavailable", "is_rolling_update",
    "replicas", "revision", "max_revision", "new_rs_new_replicas", "get_proportion",
    "replica_set_fraction", "set_new_replica_set_annotations", "set_replicas_annotations",
    "replicas_annotations_need_update", "set_deployment_revision", "equal_ignore_hash",
    "find_new_replica_set", "find_old_replica_sets", "find_active_or_latest", "is_saturated",
    "filter_active_replica_sets", "deployment_complete", "deployment_progressing",
    "deployment_timed_out", "has_progress_deadline", "has_revision_history_limit",
    "get_condition", "new_condition", "set_condition", "remove_condition",
    "by_creation", "by_revision", "by_size_newer", "by_size_older",
    "replica_count", "actual_replica_count", "ready_replica_count", "available_replica_count", "stamp",
]

Obj = dict[str, Any]

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO_ANNOTATION = "deprecated.deployment.rollback.to"
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
DEFAULT_UNIQUE_LABEL_KEY = "pod-template-hash"
#: Deployment annotations never copied to its ReplicaSets (``annotationsToSkip``).
ANNOTATIONS_TO_SKIP = frozenset({
    LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION,
})
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000
_MAX_INT32 = 2**31 - 1

NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
MIN_AVAILABLE_REASON = "MinimumReplicasAvailable"
MIN_UNAVAILABLE_REASON = "MinimumReplicasUnavailable"


# --------------------------------------------------------------------------- counts


def replicas(obj: Obj | None) -> int:
    """``*spec.replicas`` (1 when unset, as defaulting would make it)."""
    if obj is None:
        return 0
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def _status(obj: Obj | None, field: str) -> int:
    return int(((obj or {}).get("status") or {}).get(field) or 0)


def replica_count(rss: Iterable[Obj | None]) -> int:
    """``GetReplicaCountForReplicaSets``: sum of ``spec.replicas``."""
    return sum(replicas(rs) for rs in rss if rs is not None)


def actual_replica_count(rss: Iterable[Obj | None]) -> int:
    """``GetActualReplicaCountForReplicaSets``: sum of ``status.replicas``."""
    return sum(_status(rs, "replicas") for rs in rss if rs is not None)


def ready_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``status.readyReplicas``."""
    return sum(_status(rs, "readyReplicas") for rs in rss if rs is not None)


def available_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``status.availableReplicas``."""
    return sum(_status(rs, "availableReplicas") for rs in rss if rs is not None)


def filter_active_replica_sets(rss: Iterable[Obj | None]) -> list[Obj]:
    """``FilterActiveReplicaSets``: sets with ``spec.replicas > 0``."""
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


# --------------------------------------------------------------------------- fenceposts


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total``
    rounded up or down.

    Raises:
        ValueError: ``invalid value for IntOrString: ...`` (upstream's message).
    """
    if isinstance(value, bool):
        raise ValueError("invalid value for IntOrString: invalid type: neither int nor percentage")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if not value.endswith("%"):
            raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
        try:
            pct = int(value[:-1])
        except ValueError:
            raise ValueError(f'invalid value for IntOrString: invalid value "{value}": '
                             f'strconv.Atoi: parsing "{value[:-1]}": invalid syntax') from None
        num = pct * total
        return -(-num // 100) if round_up else num // 100
    raise ValueError("invalid value for IntOrString: invalid type: neither int nor percentage")


def resolve_fenceposts(surge: int | str | None, unavailable: int | str | None, desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: (maxSurge rounded up, maxUnavailable rounded down)
    of ``desired``; when both come to 0, maxUnavailable becomes 1."""
    s = scaled_value(0 if surge is None else surge, desired, True)
    u = scaled_value(0 if unavailable is None else unavailable, desired, False)
    if s == 0 and u == 0:
        u = 1
    return s, u


def is_rolling_update(d: Obj) -> bool:
    """Whether the strategy is RollingUpdate."""
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def _rolling(d: Obj) -> Obj:
    return ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}


def max_surge(d: Obj) -> int:
    """``MaxSurge``: 0 unless RollingUpdate."""
    if not is_rolling_update(d):
        return 0
    ru = _rolling(d)
    return resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), replicas(d))[0]


def max_unavailable(d: Obj) -> int:
    """``MaxUnavailable``: 0 unless RollingUpdate with replicas > 0; at most ``replicas``."""
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    ru = _rolling(d)
    u = resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), replicas(d))[1]
    return min(u, replicas(d))


def new_rs_new_replicas(d: Obj, all_rss: list[Obj | None], new_rs: Obj) -> int:
    """``NewRSNewReplicas``: the size the new ReplicaSet may grow to now
    (RollingUpdate: up to ``replicas + maxSurge`` pods in all; Recreate: ``replicas``).

    Raises:
        ValueError: an unknown strategy type (``deployment type X isn't supported``).
    """
    typ = ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate")
    if typ == "RollingUpdate":
        surge = scaled_value(_rolling(d).get("maxSurge", 0), replicas(d), True)
        current = replica_count(all_rss)
        max_total = replicas(d) + surge
        if current >= max_total:
            return replicas(new_rs)
        up = min(max_total - current, replicas(d) - replicas(new_rs))
        return replicas(new_rs) + up
    if typ == "Recreate":
        return replicas(d)
    raise ValueError(f"deployment type {typ} isn't supported")


# --------------------------------------------------------------------------- annotations


def _annotations(obj: Obj) -> Obj:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _int_annotation(rs: Obj, key: str) -> int | None:
    v = _annotations(rs).get(key)
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        return None


def revision(obj: Obj) -> int:
    """``Revision``: the revision annotation as an int (0 when absent).

    Raises:
        ValueError: a non-integer annotation.
    """
    v = _annotations(obj).get(REVISION_ANNOTATION)
    return int(v) if v else 0


def max_revision(rss: Iterable[Obj]) -> int:
    """``MaxRevision``: the largest parseable revision (0 if none)."""
    best = 0
    for rs in rss:
        try:
            best = max(best, revision(rs))
        except ValueError:
            continue
    return best


def set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
    """Set ``desired-replicas`` / ``max-replicas`` on ``rs`` (mutated); True if changed."""
    ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for k, v in ((DESIRED_REPLICAS_ANNOTATION, desired), (MAX_REPLICAS_ANNOTATION, max_replicas)):
        if ann.get(k) != str(v):
            ann[k] = str(v)
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    """Whether :func:`set_replicas_annotations` would change anything."""
    ann = _annotations(rs)
    return ann.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or ann.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas)


def set_new_replica_set_annotations(d: Obj, rs: Obj, new_revision: str, exists: bool,
                                    limit: int = MAX_REV_HISTORY_LENGTH_IN_CHARS) -> bool:
    """``SetNewReplicaSetAnnotations`` on ``rs`` (mutated): copy the
    deployment's annotations (but :data:`ANNOTATIONS_TO_SKIP`), raise the
    revision to ``new_revision`` if it is lower — keeping the old one in
    ``revision-history`` (comma list, at most ``limit`` characters) — and, for
    a set about to be created, the replicas annotations. True if changed."""
    ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for k, v in sorted(_annotations(d).items()):
        if k in ANNOTATIONS_TO_SKIP or ann.get(k) == v:
            continue
        ann[k] = v
        changed = True
    had = REVISION_ANNOTATION in ann
    old_rev = ann.get(REVISION_ANNOTATION, "")
    try:
        old_int = int(old_rev) if old_rev != "" else 0
    except ValueError:
        return False
    try:
        new_int = int(new_revision)
    except ValueError:
        return False
    if old_int < new_int:
        ann[REVISION_ANNOTATION] = new_revision
        changed = True
        if had:
            history = ann.get(REVISION_HISTORY_ANNOTATION, "")
            olds = history.split(",")
            if not olds[0]:
                ann[REVISION_HISTORY_ANNOTATION] = old_rev
            else:
                total = len(history) + len(old_rev) + 1
                start = 0
                while total > limit and start < len(olds):
                    total -= len(olds[start]) + 1
                    start += 1
                if total <= limit:
                    ann[REVISION_HISTORY_ANNOTATION] = ",".join(olds[start:] + [old_rev])
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def set_deployment_revision(d: Obj, rev: str) -> bool:
    """``SetDeploymentRevision`` on ``d`` (mutated); True if changed."""
    ann = d.setdefault("metadata", {}).setdefault("annotations", {})
    if ann.get(REVISION_ANNOTATION) != rev:
        ann[REVISION_ANNOTATION] = rev
        return True
    return False


# --------------------------------------------------------------------------- finding sets


def _strip_empty(v: Any) -> Any:
    """Semantic equality as apimachinery's: nil and empty maps/slices are equal."""
    if isinstance(v, dict):
        out = {k: _strip_empty(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x not in (None, {}, [])}
    if isinstance(v, list):
        return [_strip_empty(x) for x in v]
    return v


def _without_hash(template: Obj) -> Obj:
    meta = dict(template.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels.pop(DEFAULT_UNIQUE_LABEL_KEY, None)
    meta["labels"] = labels
    return _strip_empty({**template, "metadata": meta})


def equal_ignore_hash(t1: Obj | None, t2: Obj | None) -> bool:
    """``EqualIgnoreHash``: templates equal once ``pod-template-hash`` labels are removed."""
    return _without_hash(t1 or {}) == _without_hash(t2 or {})


def _created(rs: Obj) -> tuple[float, str]:
    m = rs.get("metadata") or {}
    t = to_seconds(m.get("creationTimestamp"))
    return (float("-inf") if t is None else t, m.get("name") or "")


def by_creation(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    return sorted(rss, key=_created)


def by_revision(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByRevision``: lowest revision first, ties by creation."""
    def key(rs: Obj) -> tuple[int, tuple[float, str]]:
        try:
            r = revision(rs)
        except ValueError:
            r = 0
        return r, _created(rs)
    return sorted(rss, key=key)


def by_size_newer(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeNewer``: largest first; equal sizes newest first."""
    ordered = sorted(rss, key=_created, reverse=True)
    return sorted(ordered, key=lambda rs: -replicas(rs))


def by_size_older(rss: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeOlder``: largest first; equal sizes oldest first."""
    return sorted(by_creation(rss), key=lambda rs: -replicas(rs))


def find_new_replica_set(d: Obj, rss: list[Obj]) -> Obj | None:
    """``FindNewReplicaSet``: the oldest set whose template equals the deployment's."""
    tmpl = (d.get("spec") or {}).get("template")
    for rs in by_creation(rss):
        if equal_ignore_hash((rs.get("spec") or {}).get("template"), tmpl):
            return rs
    return None


def find_old_replica_sets(d: Obj, rss: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``FindOldReplicaSets``: (old sets with replicas > 0, all old sets)."""
    new = find_new_replica_set(d, rss)
    new_uid = new["metadata"]["uid"] if new is not None else None
    all_old = [rs for rs in rss if new_uid is None or rs["metadata"].get("uid") != new_uid]
    return [rs for rs in all_old if replicas(rs) != 0], all_old


def find_active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    """``FindActiveOrLatest``: the only active set; with none active, the new set
    or else the newest old one; None when several are active."""
    if new_rs is None and not old_rss:
        return None
    olds = list(reversed(by_creation(old_rss)))
    active = filter_active_replica_sets(olds + [new_rs])
    if not active:
        return new_rs if new_rs is not None else olds[0]
    if len(active) == 1:
        return active[0]
    return None


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """``IsSaturated``: the set has (and is annotated for) all replicas, all available."""
    if rs is None:
        return False
    desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
    if desired is None:
        return False
    return replicas(rs) == replicas(d) and desired == replicas(d) and _status(rs, "availableReplicas") == replicas(d)


def replica_set_fraction(rs: Obj, d: Obj) -> int:
    """``getReplicaSetFraction``: how much ``rs`` grows (or shrinks) in a proportional scale."""
    if replicas(d) == 0:
        return -replicas(rs)
    d_max = replicas(d) + max_surge(d)
    before = _int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if before is None or before == 0:
        annotated = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
        before = annotated if annotated is not None else _status(d, "replicas")
    if before == 0:
        return 0
    size = replicas(rs) * d_max / before
    return int(size + 0.5) - replicas(rs)  # integer.RoundToInt32 (size >= 0)


def get_proportion(rs: Obj | None, d: Obj, to_add: int, added: int) -> int:
    """``GetProportion``: replicas ``rs`` gets of ``to_add`` (``added`` already handed out)."""
    if rs is None or replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# --------------------------------------------------------------------------- conditions & progress


def get_condition(status: Obj | None, type_: str) -> Obj | None:
    """The condition of ``type_`` in a status dict, or None."""
    for c in (status or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def new_condition(type_: str, status: str, reason: str, message: str, stamp: str) -> Obj:
    """``NewDeploymentCondition`` at ``stamp`` (both times)."""
    return {"type": type_, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: Obj, cond: Obj) -> None:
    """``SetDeploymentCondition`` on ``status`` (mutated): no-op for the same
    status and reason; keeps lastTransitionTime when only the reason changes;
    the condition moves to the end."""
    cur = get_condition(status, cond["type"])
    if cur is not None and cur.get("status") == cond["status"] and cur.get("reason") == cond["reason"]:
        return
    if cur is not None and cur.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": cur.get("lastTransitionTime")}
    rest = [c for c in status.get("conditions") or () if c.get("type") != cond["type"]]
    status["conditions"] = rest + [cond]


def remove_condition(status: Obj, type_: str) -> None:
    """``RemoveDeploymentCondition`` on ``status`` (mutated)."""
    rest = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if rest:
        status["conditions"] = rest
    else:
        status.pop("conditions", None)


def has_progress_deadline(d: Obj) -> bool:
    """``progressDeadlineSeconds`` set and not MaxInt32."""
    p = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return p is not None and p != _MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    """``revisionHistoryLimit`` set and not MaxInt32."""
    p = (d.get("spec") or {}).get("revisionHistoryLimit")
    return p is not None and p != _MAX_INT32


def deployment_complete(d: Obj, status: Obj) -> bool:
    """``DeploymentComplete``: every replica updated and available, generation observed."""
    n = replicas(d)
    return (int(status.get("updatedReplicas") or 0) == n and int(status.get("replicas") or 0) == n
            and int(status.get("availableReplicas") or 0) == n
            and int(status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation") or 0))


def deployment_progressing(d: Obj, status: Obj) -> bool:
    """``DeploymentProgressing``: more updated / ready / available replicas, or fewer old ones."""
    old = d.get("status") or {}

    def g(s: Obj, k: str) -> int:
        return int(s.get(k) or 0)

    old_old = g(old, "replicas") - g(old, "updatedReplicas")
    new_old = g(status, "replicas") - g(status, "updatedReplicas")
    return (g(status, "updatedReplicas") > g(old, "updatedReplicas") or new_old < old_old
            or g(status, "readyReplicas") > g(old, "readyReplicas")
            or g(status, "availableReplicas") > g(old, "availableReplicas"))


def deployment_timed_out(d: Obj, status: Obj, now: float, epoch: datetime = DEFAULT_EPOCH) -> bool:
    """``DeploymentTimedOut``: the Progressing condition was last updated more
    than ``progressDeadlineSeconds`` before ``now`` (virtual seconds)."""
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    since = to_seconds(cond.get("lastUpdateTime"), epoch)
    if since is None:
        return False
    return since + int(d["spec"]["progressDeadlineSeconds"]) < now


def stamp(now: float, epoch: datetime = DEFAULT_EPOCH) -> str:
    """RFC 3339 for virtual ``now``."""
    return format_time(epoch, now)
