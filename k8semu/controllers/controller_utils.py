"""Helpers shared by the workload controllers, after upstream's
``pkg/controller/controller_utils.go`` and ``controller_ref_manager.go``.

Design
======

Everything here is pure (no API calls) except :func:`claim_objects`, which
issues the adopt / release patches upstream's ``ControllerRefManager`` does.

- **Pod-template hash** (:func:`compute_hash`): FNV-32a of the template, then
  of the collision count (8 bytes, little-endian uint32 in the first four),
  rendered as the decimal ``Sum32`` passed through kube's ``SafeEncodeString``
  (each character mapped into ``bcdfghjklmnpqrstvwxz2456789``). Upstream feeds
  FNV with go-spew's ``%#v`` dump of the Go ``PodTemplateSpec`` struct, which
  depends on Go type layouts this emulator does not have; here FNV is fed the
  template's canonical JSON (sorted keys, no whitespace, UTF-8). The
  arithmetic, alphabet, length and collision behaviour are upstream's; the
  exact value for a given template differs from a real cluster's.
- **Expectations** (:class:`ControllerExpectations`): upstream's
  ``UIDTrackingControllerExpectations`` — per controller key, how many creations
  and which pod deletions (by ``namespace/name``) the informer still has to
  show; a controller does not manage replicas until they are satisfied or
  5 minutes (virtual) old.
- **Deletion ranking** (:func:`rank_pods_for_deletion`): ``ActivePodsWithRanks``
  with the v1.3x default feature gates (``PodDeletionCost`` and
  ``LogarithmicScaleDown`` on); :func:`sort_active_pods` is plain ``ActivePods``.
- **Slow start** (:func:`slow_start_batch`): batches 1, 2, 4, … stopping at the
  first batch with an error.

Times are virtual seconds; RFC 3339 timestamps are turned into virtual
seconds with the API server's epoch (:func:`to_seconds`).
"""

from __future__ import annotations

import functools
import math
from datetime import datetime
from typing import Any, Callable, Iterable

import orjson

from ..api import errors
from ..api.meta import DEFAULT_EPOCH, controller_of, parse_time
from ..api.pods import is_pod_ready, pod_condition
from ..api.selectors import MapSelectorIndex
from ..client.informer import EventHandler, meta_namespace_key

__all__ = [
    "BURST_REPLICAS",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "EXPECTATIONS_TIMEOUT",
    "POD_DELETION_COST_ANNOTATION",
    "fnv32a",
    "TriggerTimeTracker",
    "REVISION_HASH_LABEL",
    "new_controller_revision",
    "safe_encode_string",
    "compute_hash",
    "ControllerExpectations",
    "is_pod_active",
    "filter_active_pods",
    "is_pod_available",
    "pod_ready_time",
    "sort_active_pods",
    "rank_pods_for_deletion",
    "slow_start_batch",
    "new_controller_ref",
    "adopt_patch",
    "release_patch",
    "claim_objects",
    "to_seconds",
    "pod_key",
    "namespace_terminating",
]

#: Upstream's ``BurstReplicas``: the most pods one sync creates or deletes.
BURST_REPLICAS = 500
#: ``SlowStartInitialBatchSize``.
SLOW_START_INITIAL_BATCH_SIZE = 1
#: ``ExpectationsTimeout``: 5 minutes, in virtual seconds.
EXPECTATIONS_TIMEOUT = 300.0
#: Annotation read by the deletion ranking (``PodDeletionCost`` gate, on by default).
POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"

Obj = dict[str, Any]

# --------------------------------------------------------------------------- hashing

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes, h: int = _FNV32_OFFSET) -> int:
    """FNV-1a 32-bit of ``data`` continuing from state ``h`` (Go's ``hash/fnv.New32a``)."""
    for b in data:
        h = ((h ^ b) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    """kube's ``rand.SafeEncodeString``: each character ``c`` becomes
    ``alphanums[ord(c) % 27]`` (so digits give ``4 5 6 7 8 9 b c d f``)."""
    return "".join(_SAFE_ALPHANUMS[ord(c) % len(_SAFE_ALPHANUMS)] for c in s)


def compute_hash(template: Obj, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a pod template, as upstream's ``ComputeHash``.

    Args:
        template: a wire-form ``PodTemplateSpec`` dict.
        collision_count: the Deployment's ``status.collisionCount`` or None.
    Returns:
        up to 10 characters from the safe alphabet (``5d4f8b7c96``).

    See the module docstring for how the hashed bytes differ from upstream's.
    """
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a((int(collision_count) & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4, h)
    return safe_encode_string(str(h))


# --------------------------------------------------------------------------- expectations


class _Expectation:
    __slots__ = ("add", "dele", "timestamp")

    def __init__(self, add: int, dele: int, timestamp: float) -> None:
        self.add = add
        self.dele = dele
        self.timestamp = timestamp


class ControllerExpectations:
    """Pending creations/deletions per controller key (``namespace/name``),
    as upstream's ``UIDTrackingControllerExpectations``.

    All times are virtual seconds; ``ttl`` defaults to 5 minutes.
    """

    def __init__(self, ttl: float = EXPECTATIONS_TIMEOUT) -> None:
        self.ttl = ttl
        self._exp: dict[str, _Expectation] = {}
        self._deleting: dict[str, dict[str, None]] = {}

    def get(self, key: str) -> tuple[int, int] | None:
        """(pending adds, pending deletes) or None when nothing is recorded."""
        e = self._exp.get(key)
        return None if e is None else (e.add, e.dele)

    def satisfied(self, key: str, now: float) -> bool:
        """``SatisfiedExpectations``: True when nothing is recorded, everything
        expected was observed, or the record is older than the TTL."""
        e = self._exp.get(key)
        if e is None:
            return True
        if e.add <= 0 and e.dele <= 0:
            return True
        return now - e.timestamp > self.ttl

    def set(self, key: str, add: int, dele: int, now: float) -> None:
        """``SetExpectations``: replace the record for ``key``."""
        self._exp[key] = _Expectation(add, dele, now)

    def expect_creations(self, key: str, adds: int, now: float) -> None:
        """Expect ``adds`` pod creations to be observed for ``key``."""
        self.set(key, adds, 0, now)

    def expect_deletions(self, key: str, pod_keys: Iterable[str], now: float) -> None:
        """Expect the deletion of these pods (``namespace/name`` keys) for ``key``."""
        keys = dict.fromkeys(pod_keys)
        self._deleting[key] = keys
        self.set(key, 0, len(keys), now)

    def lower(self, key: str, add: int, dele: int) -> None:
        """``LowerExpectations``: count observations (no-op without a record)."""
        e = self._exp.get(key)
        if e is not None:
            e.add -= add
            e.dele -= dele

    def creation_observed(self, key: str) -> None:
        """One expected creation was seen (or will never happen)."""
        self.lower(key, 1, 0)

    def deletion_observed(self, key: str, pod: str) -> None:
        """The deletion of pod ``pod`` (``namespace/name``) was seen; counted once."""
        tracked = self._deleting.get(key)
        if tracked is not None and pod in tracked:
            del tracked[pod]
            self.lower(key, 0, 1)

    def delete(self, key: str) -> None:
        """Forget ``key`` (its controller is gone)."""
        self._exp.pop(key, None)
        self._deleting.pop(key, None)


# --------------------------------------------------------------------------- pods


def to_seconds(stamp: str | None, epoch: datetime = DEFAULT_EPOCH) -> float | None:
    """Virtual seconds of an RFC 3339 timestamp (None for a missing one)."""
    if not stamp:
        return None
    return parse_time(epoch, stamp)


def pod_key(pod: Obj) -> str:
    """``namespace/name`` of a pod (``controller.PodKey``)."""
    m = pod.get("metadata") or {}
    return f"{m.get('namespace')}/{m.get('name')}"


def is_pod_active(pod: Obj) -> bool:
    """``IsPodActive``: not Succeeded, not Failed, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def filter_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    """``FilterActivePods``: the active pods, order kept."""
    return [p for p in pods if is_pod_active(p)]


def pod_ready_time(pod: Obj, epoch: datetime = DEFAULT_EPOCH) -> float | None:
    """When a ready pod's Ready condition last turned True (virtual seconds), else None."""
    if not is_pod_ready(pod):
        return None
    c = pod_condition(pod, "Ready") or {}
    return to_seconds(c.get("lastTransitionTime"), epoch)


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float, epoch: datetime = DEFAULT_EPOCH) -> bool:
    """``podutil.IsPodAvailable``: ready, and ready for more than ``min_ready_seconds``."""
    if not is_pod_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    t = pod_ready_time(pod, epoch)
    return t is not None and t + min_ready_seconds < now


_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _deletion_cost(pod: Obj) -> int:
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST_ANNOTATION)
    try:
        return int(v) if v is not None else 0
    except ValueError:
        return 0


def _max_restarts(pod: Obj) -> tuple[int, int]:
    status = pod.get("status") or {}
    regular = max((cs.get("restartCount") or 0 for cs in status.get("containerStatuses") or ()), default=0)
    sidecars = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
                if c.get("restartPolicy") == "Always"}
    sidecar = max((cs.get("restartCount") or 0 for cs in status.get("initContainerStatuses") or ()
                   if cs.get("name") in sidecars), default=0)
    return regular, sidecar


def _log_rank(t: float, now: float) -> int:
    d = (now - t) * 1e9  # Go durations are nanoseconds
    return int(math.log2(d)) if d > 0 else -1


def _uid(pod: Obj) -> str:
    return (pod.get("metadata") or {}).get("uid") or ""


def _ranked_less(a: Obj, b: Obj, ra: int, rb: int, now: float | None, epoch: datetime) -> bool:
    """``ActivePodsWithRanks.Less`` with PodDeletionCost and LogarithmicScaleDown on."""
    na = (a.get("spec") or {}).get("nodeName") or ""
    nb = (b.get("spec") or {}).get("nodeName") or ""
    if na != nb and (not na or not nb):  # 1. unassigned < assigned
        return not na
    pa = _PHASE_ORDINAL.get((a.get("status") or {}).get("phase"), 0)
    pb = _PHASE_ORDINAL.get((b.get("status") or {}).get("phase"), 0)
    if pa != pb:  # 2. Pending < Unknown < Running
        return pa < pb
    ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
    if ready_a != ready_b:  # 3. not ready < ready
        return not ready_a
    ca, cb = _deletion_cost(a), _deletion_cost(b)
    if ca != cb:  # 4. lower deletion cost first
        return ca < cb
    if ra != rb:  # 5. more co-located pods first
        return ra > rb
    if ready_a and ready_b:  # 6. ready more recently first (log2 buckets)
        ta, tb = pod_ready_time(a, epoch), pod_ready_time(b, epoch)
        if ta != tb:
            if now is None or ta is None or tb is None:
                return _after_or_zero(ta, tb)
            diff = _log_rank(ta, now) - _log_rank(tb, now)
            return _uid(a) < _uid(b) if diff == 0 else diff < 0
    (ga, sa), (gb, sb) = _max_restarts(a), _max_restarts(b)
    if ga != gb:  # 7. more restarts first
        return ga > gb
    if sa != sb:
        return sa > sb
    ta = to_seconds((a.get("metadata") or {}).get("creationTimestamp"), epoch)
    tb = to_seconds((b.get("metadata") or {}).get("creationTimestamp"), epoch)
    if ta != tb:  # 8. newer first (log2 buckets)
        if now is None or ta is None or tb is None:
            return _after_or_zero(ta, tb)
        diff = _log_rank(ta, now) - _log_rank(tb, now)
        return _uid(a) < _uid(b) if diff == 0 else diff < 0
    return False


def rank_pods_for_deletion(pods: list[Obj], ranks: list[int], now: float | None,
                           epoch: datetime = DEFAULT_EPOCH) -> list[Obj]:
    """Pods ordered most-deletable first, as ``sort.Sort(ActivePodsWithRanks)``.

    Args:
        pods: active pods.
        ranks: per pod, how many related active pods share its node (higher
            goes first); same length as ``pods``.
        now: virtual seconds (None disables the logarithmic buckets).
    Returns:
        a new list; ties keep the input order.
    """
    order = list(range(len(pods)))

    def cmp(i: int, j: int) -> int:
        if _ranked_less(pods[i], pods[j], ranks[i], ranks[j], now, epoch):
            return -1
        if _ranked_less(pods[j], pods[i], ranks[j], ranks[i], now, epoch):
            return 1
        return 0

    order.sort(key=functools.cmp_to_key(cmp))
    return [pods[i] for i in order]


def sort_active_pods(pods: list[Obj], epoch: datetime = DEFAULT_EPOCH) -> list[Obj]:
    """``ActivePods`` order (no ranks, no buckets): unassigned < assigned,
    Pending < Unknown < Running, not ready < ready, ready more recently first,
    more restarts first, newer first."""
    return rank_pods_for_deletion(pods, [0] * len(pods), None, epoch)


# --------------------------------------------------------------------------- batching


def slow_start_batch(count: int, initial_batch_size: int, fn: Callable[[], None]) -> tuple[int, Exception | None]:
    """``slowStartBatch``: call ``fn`` ``count`` times in batches of 1, 2, 4, …

    Every call of a batch is made; after a batch with failures, no further
    batch starts. Returns (successful calls, the first error or None).
    """
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        errs: list[Exception] = []
        for _ in range(batch):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - returned to the caller, as upstream
                errs.append(exc)
        successes += batch - len(errs)
        if errs:
            return successes, errs[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


def namespace_terminating(exc: Exception) -> bool:
    """Whether an API error is the ``NamespaceTerminating`` refusal."""
    if not isinstance(exc, errors.StatusError):
        return False
    causes = (exc.details or {}).get("causes") or ()
    return any(c.get("type") == "NamespaceTerminating" for c in causes) or \
        "because it is being terminated" in exc.message


# --------------------------------------------------------------------------- owner references


def new_controller_ref(owner: Obj) -> Obj:
    """``metav1.NewControllerRef``: an ownerReference with ``controller`` and
    ``blockOwnerDeletion`` true."""
    m = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": m["name"],
        "uid": m["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adopt_patch(owner: Obj, obj: Obj) -> Obj:
    """The strategic merge patch upstream's adopt sends (uid pinned)."""
    return {"metadata": {"ownerReferences": [new_controller_ref(owner)], "uid": obj["metadata"]["uid"]}}


def release_patch(owner: Obj, obj: Obj) -> Obj:
    """The strategic merge patch that removes ``owner``'s reference (uid pinned)."""
    return {"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": owner["metadata"]["uid"]}],
        "uid": obj["metadata"]["uid"],
    }}


def claim_objects(
    api: Any,
    ctx: Any,
    resource: str,
    owner: Obj,
    objs: Iterable[Obj],
    matches: Callable[[Obj], bool],
    can_adopt: Callable[[], None],
) -> list[Obj]:
    """``ControllerRefManager.ClaimObject`` over ``objs``: keep what ``owner``
    controls and still matches, adopt matching orphans, release what it
    controls but no longer matches. Returns the claimed objects (adopted ones
    as written), in input order.

    ``can_adopt()`` raises when adoption must not happen (upstream's
    ``RecheckDeletionTimestamp``); it is called once, before the first adoption.
    A patch that fails with NotFound (or, for a release, Invalid: the object is
    being deleted) is ignored; other API errors are raised after processing.
    """
    owner_meta = owner["metadata"]
    owner_deleting = bool(owner_meta.get("deletionTimestamp"))
    claimed: list[Obj] = []
    checked = False
    adopt_err: Exception | None = None
    first_err: Exception | None = None
    for obj in objs:
        meta = obj["metadata"]
        ref = controller_of(obj)
        if ref is not None:
            if ref.get("uid") != owner_meta["uid"]:
                continue
            if matches(obj):
                claimed.append(obj)
                continue
            if owner_deleting:
                continue
            try:
                api.patch(resource, meta["name"], release_patch(owner, obj),
                          namespace=meta.get("namespace"), ctx=ctx)
            except (errors.NotFound, errors.Invalid):
                pass
            except errors.StatusError as exc:
                first_err = first_err or exc
            continue
        if owner_deleting or not matches(obj) or meta.get("deletionTimestamp"):
            continue
        if not checked:
            checked = True
            try:
                can_adopt()
            except Exception as exc:  # noqa: BLE001
                adopt_err = exc
        if adopt_err is not None:
            first_err = first_err or adopt_err
            continue
        try:
            adopted = api.patch(resource, meta["name"], adopt_patch(owner, obj),
                                namespace=meta.get("namespace"), ctx=ctx)
        except errors.NotFound:
            continue
        except Exception as exc:  # noqa: BLE001 - upstream aggregates and returns
            first_err = first_err or exc
            continue
        claimed.append(adopted)
    if first_err is not None:
        raise first_err
    return claimed


class TriggerTimeTracker:
    """Upstream ``TriggerTimeTracker``: the ``last-change-trigger-time`` of a sync is the
    earliest trigger time that changed since the previous sync of that Service (a
    Service's is its creationTimestamp, a pod's its Ready condition's lastTransitionTime)."""

    def __init__(self) -> None:
        self._state: dict[str, tuple[str, dict[str, str]]] = {}

    def compute(self, svc: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
        """Record the current trigger times; return the earliest changed one (RFC 3339) or None."""
        key = meta_namespace_key(svc)
        svc_t = (svc.get("metadata") or {}).get("creationTimestamp") or ""
        prev = self._state.get(key)
        changed = [svc_t] if svc_t and (prev is None or prev[0] != svc_t) else []
        now: dict[str, str] = {}
        for pod in pods:
            cond = pod_condition(pod, "Ready")
            t = (cond or {}).get("lastTransitionTime") or ""
            pk = meta_namespace_key(pod)
            now[pk] = t
            if t and (prev is None or prev[1].get(pk) != t):
                changed.append(t)
        self._state[key] = (svc_t, now)
        return min(changed) if changed else None

    def forget(self, key: str) -> None:
        self._state.pop(key, None)


class ServiceMemberships:
    """Which Services select which pods, for the Endpoints and EndpointSlice controllers
    (upstream's ``GetPodServiceMemberships`` / ``GetServicesToUpdateOnPodChange``).

    Fed by the controller's Service informer (it registers its own handler);
    lookups go through a :class:`~k8semu.api.selectors.MapSelectorIndex`, so a
    pod event costs the Services filed under the pod's labels, not every
    Service of its namespace. Keys are ``namespace/name``.
    """

    def __init__(self, services: Any) -> None:
        self.index = MapSelectorIndex()
        services.add_event_handler(EventHandler(
            on_add=self._set, on_update=lambda old, new: self._set(new), on_delete=self._forget))

    def _set(self, svc: Obj) -> None:
        meta = svc.get("metadata") or {}
        self.index.set(meta_namespace_key(svc), meta.get("namespace") or "", (svc.get("spec") or {}).get("selector"))

    def _forget(self, svc: Obj) -> None:
        self.index.discard(meta_namespace_key(svc))

    def of_pod(self, pod: Obj) -> list[str]:
        """Keys (sorted) of the Services whose selector matches the pod's labels."""
        meta = pod.get("metadata") or {}
        return self.index.matching(meta.get("namespace") or "", meta.get("labels"))

    def to_update_on_pod_change(self, old: Obj, new: Obj) -> list[str]:
        """The Services to sync after a pod update, as upstream: none when neither the pod's
        endpoint (deletionTimestamp, readiness, pod IPs) nor its membership (labels,
        hostname, subdomain) changed; both sides' Services when the endpoint changed;
        those it joined or left when only the membership did."""
        if old is new:  # the same version (upstream compares resourceVersions)
            return []
        pod_changed, labels_changed = _pod_endpoints_changed(old, new)
        if not pod_changed and not labels_changed:
            return []
        now = self.of_pod(new)
        if not labels_changed:
            return now
        before = self.of_pod(old)
        if pod_changed:
            return list(dict.fromkeys(now + before))
        return [k for k in now if k not in before] + [k for k in before if k not in now]


def _pod_endpoints_changed(old: Obj, new: Obj) -> tuple[bool, bool]:
    """Upstream ``podEndpointsChanged``: (the endpoint changed, the membership may have)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    os_, ns_ = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = ((om.get("labels") or {}) != (nm.get("labels") or {})
                      or os_.get("hostname") != ns_.get("hostname") or os_.get("subdomain") != ns_.get("subdomain"))
    # upstream compares the deletionTimestamp pointers: two decoded versions differ whenever one is set
    if om.get("deletionTimestamp") is not None or nm.get("deletionTimestamp") is not None:
        return True, labels_changed
    if is_pod_ready(old) != is_pod_ready(new):
        return True, labels_changed
    old_ips = [p.get("ip") for p in (old.get("status") or {}).get("podIPs") or ()]
    new_ips = [p.get("ip") for p in (new.get("status") or {}).get("podIPs") or ()]
    return old_ips != new_ips, labels_changed


#: the label naming a pod's ControllerRevision (DaemonSet, StatefulSet)
REVISION_HASH_LABEL = "controller-revision-hash"


def new_controller_revision(owner: dict[str, Any], name: str, hash_label: str, data: Any,
                            revision: int) -> dict[str, Any]:
    """A ControllerRevision of ``owner`` (as upstream's ``history.NewControllerRevision``):
    the template's labels plus ``controller-revision-hash``, a controller reference, ``data``."""
    meta = owner.get("metadata") or {}
    labels = dict((((owner.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[REVISION_HASH_LABEL] = hash_label
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": meta.get("namespace"), "labels": labels,
                         "ownerReferences": [new_controller_ref(owner)]},
            "data": data, "revision": revision}
