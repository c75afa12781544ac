"""Recording Events: core/v1 ones as client-go's ``record.EventRecorder``
(:class:`EventRecorder`), events.k8s.io/v1 ones as its ``tools/events``
recorder (:class:`EventsV1Recorder`, the scheduler's).

An event is named ``<object name>.<hex of the event's Unix time in ns>`` in the
object's namespace (``default`` for cluster-scoped objects), with
``involvedObject``, ``reason``, ``message``, ``type`` (Normal / Warning),
``source`` (component, host), ``firstTimestamp`` / ``lastTimestamp`` and
``count``, ``eventTime: null``, ``reportingComponent`` / ``reportingInstance``
(the component and host; both ``""`` on an aggregate event), as the API
server stores a ``corev1.Event``: ``involvedObject`` holds only the reference
fields that are set (``omitempty``: a kubelet's Node has no ``apiVersion`` nor
``resourceVersion``, a cluster-scoped object no ``namespace``), the unset times
are ``null`` (a struct is never omitted). Every event goes through client-go's
``EventCorrelator`` (tools/record/events_cache.go, ``NewEventCorrelator`` with
its defaults, as kubelets and the controller managers run it), in this order:

1. **EventAggregator** (``EventAggregatorByReasonFunc``): events that differ only
   in their message (same source, involved object, type and reason) are
   *similar*; an LRU cache (4096 entries) holds, per such group, the set of the
   distinct messages seen and when the last one came. A group silent for more
   than 600 s (``maxIntervalInSeconds``) starts afresh; once the set holds 10
   (``maxEvents``) messages, the event is replaced by an aggregate one, message
   ``(combined from similar events): <its message>``
   (``EventAggregatorByReasonMessageFunc``), keyed by the group, and one message
   leaves the set (upstream's ``PopAny`` takes any; here the oldest, so that runs
   are deterministic). So a ReplicaSet whose pods are refused shows 9
   ``FailedCreate`` events naming each pod, then one ``(combined from similar
   events): Error creating: …`` whose count grows and whose message follows the
   latest refusal.
2. **EventLogger**: repeats of a key (the full event key — source, involved
   object with its fieldPath, type, reason, message — or the group's for an
   aggregate event) are folded into the first Event: ``count`` + 1,
   ``lastTimestamp`` moved (and, for an aggregate, ``message`` set to the
   latest), hence ``kubectl describe``'s ``(x4 over 2m)``. The count goes up
   even for an occurrence the spam filter then drops, so the next one written
   carries them all. (Unlike upstream, whose LRU folds for as long as it holds
   the key, a repeat more than 10 minutes after the key's last occurrence
   starts a new Event here.)
3. **EventSourceObjectSpamFilter**: a token bucket per source and involved
   object (``getSpamKey``: component, host, kind, namespace, name, uid,
   apiVersion — not the reason), burst 25, refilled at ``1/300`` per second
   (one event every 5 minutes, upstream's float32 ``defaultSpamQPS``), in an
   LRU cache of 4096 buckets, as ``golang.org/x/time/rate`` keeps it: the
   bucket starts full, an accepted event takes a token, a refused one changes
   nothing. An event over it is not written (``Skip``). A pod crash-looping for
   hours therefore gets one write every 5 minutes, with counts that jump.

A write that patches an Event which is gone (or was never written, its first
occurrence having been dropped) creates it instead, with the logger's name,
count and firstTimestamp, as ``recordEvent`` does after a 404.

Clocks are the virtual clock; nothing is random. The scheduler
(``default-scheduler``) does not record through this: it uses client-go's
events.k8s.io recorder (``tools/events``), :class:`EventsV1Recorder` below.

The correlator's memory lasts as long as the component's process; here each
command starts the components afresh, so on an object's first event in a
recorder's life the store is read for what the correlator would hold (the
Events named after the object, see :meth:`EventRecorder._read_earlier`): the
Event each key folds into, each group's messages, and each bucket's tokens
(replayed from the writes of its Events), so a component carried on from an
earlier command goes on as one that never stopped. Each restored entry is used
once (later the recorder's own memory holds it). The lookup reads the log at
the current revision, so it is as deterministic as the rest.

events.k8s.io (``tools/events``)
================================

kube-scheduler records through ``events.NewEventBroadcasterAdapter``, which
picks the events.k8s.io/v1 API, and ``NewRecorder(scheme, "default-scheduler")``
(reporting instance ``default-scheduler-<hostname>``). Its ``Eventf(regarding,
related, type, reason, action, note)`` makes an ``eventsv1.Event`` named
``<regarding name>.<hex of Unix ns>`` (namespace ``default`` for a
cluster-scoped object) with ``eventTime`` (a MicroTime: ``…T00:00:05.123456Z``),
``reportingController``, ``reportingInstance``, ``action``, ``reason``,
``regarding`` (``reference.GetReference``: resourceVersion included),
``related``, ``note``, ``type``. The API server stores it as every Event, so
read as core/v1 (what this module writes, and what ``kubectl get events`` and
``describe`` read) it has ``message`` (the note), ``involvedObject``,
``source: {}``, ``firstTimestamp: null``, ``lastTimestamp: null``, no
``count``, ``action``, ``reportingComponent`` / ``reportingInstance``;
kubectl shows its ``eventTime`` where ``lastTimestamp`` is unset.

Its broadcaster (``eventBroadcasterImpl.recordToSink``) has no aggregator nor
spam filter; it keeps a cache of *isomorphic* events, keyed by type, action,
reason, reporting controller and instance, ``regarding`` (the whole reference,
resourceVersion included) and ``related`` — not the note:

- the first one is created;
- the second is written as a patch setting ``series: {count: 2,
  lastObservedTime}`` on the first Event (its note stays the first one's);
- later ones only bump the cached series (``count`` + 1, ``lastObservedTime``
  now), written by two timers started with the broadcaster: ``finishSeries``
  every 6 minutes writes each series last observed more than 6 minutes before
  and forgets it, and forgets a singleton whose ``eventTime`` is that old;
  ``refreshExistingEventSeries`` every 30 minutes writes every series. The
  timers tick at whole multiples of 6 and 30 minutes of virtual time, as for
  a scheduler started with the cluster; the component calls
  :meth:`EventsV1Recorder.tick` when :meth:`EventsV1Recorder.next_tick` is due.
- a series whose Event is gone (a 404 on the patch) creates it again, with its
  first name and ``eventTime`` and the series.

As for :class:`EventRecorder`, a recorder's first event about an object in a
later command reads the cache its earlier life left from the store (the
scheduler's Events named after the object, each key's latest, kept if no
``finishSeries`` tick would have forgotten it since); what such a cache held
and had not written yet (a series' count past its last write) is not in the
store, and is lost as in a restarted scheduler.
"""

from __future__ import annotations

import math
import struct
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from typing import Any

from ..api import errors
from ..api.apiserver import MERGE_PATCH, STRATEGIC_MERGE_PATCH, APIServer, RequestContext
from ..api.meta import format_micro_time, parse_time
from ..store.log import StoreError

__all__ = ["EventRecorder", "EventsV1Recorder", "NORMAL", "WARNING", "AGGREGATE_PREFIX", "NOTE_LENGTH_LIMIT",
           "object_reference"]

NORMAL = "Normal"
WARNING = "Warning"
_AGGREGATE_WINDOW = 600.0  # seconds, upstream's default maxIntervalInSeconds (and this logger's window)
_MAX_LRU_ENTRIES = 4096  # maxLruCacheEntries
_AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
_SPAM_BURST = 25  # defaultSpamBurst
#: defaultSpamQPS = 1./300., a float32 in the filter (0.0033333334)
_SPAM_QPS = struct.unpack("f", struct.pack("f", 1.0 / 300.0))[0]
#: EventAggregatorByReasonMessageFunc's prefix
AGGREGATE_PREFIX = "(combined from similar events): "
#: the involved object's fields in upstream's event key (``getEventKey``)
_KEY_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")
#: corev1.ObjectReference's fields, in its order (all ``omitempty``)
_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
#: tools/events' broadcaster timers (``finishTime``, ``refreshTime``), in seconds
_FINISH_TIME = 360.0
_REFRESH_TIME = 1800.0
#: events.k8s.io's ``NoteLengthLimit`` (the scheduler truncates its FailedScheduling note to it)
NOTE_LENGTH_LIMIT = 1024


def object_reference(obj: dict[str, Any], field_path: str | None = None) -> dict[str, Any]:
    """``reference.GetReference`` (``GetPartialReference`` with ``field_path``) as the API server
    stores it: kind, namespace, name, uid, apiVersion, resourceVersion, fieldPath, the empty ones
    left out (``omitempty``). ``obj`` is an object (its ``metadata``) or a reference already."""
    meta = obj.get("metadata")
    if meta is None:  # already an ObjectReference
        ref = {f: obj.get(f) for f in _REF_FIELDS}
    else:
        ref = {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name"),
               "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion"),
               "resourceVersion": meta.get("resourceVersion"), "fieldPath": None}
    if field_path:
        ref["fieldPath"] = field_path
    return {f: v for f, v in ref.items() if v not in (None, "")}


def _ref_key(ref: dict[str, Any] | None) -> tuple:
    """A reference as Go compares the struct (every field; unset ones empty)."""
    ref = ref or {}
    return tuple(ref.get(f) or "" for f in _REF_FIELDS)


def _event_key(inv: dict[str, Any], type_: Any, reason: Any, message: Any) -> tuple:
    """Upstream's event key but the source: the involved object's key fields, type, reason, message."""
    return tuple(inv.get(f) or "" for f in _KEY_FIELDS) + (type_ or "", reason or "", message or "")


def _object_key(inv: dict[str, Any]) -> tuple:
    """``getSpamKey`` but the source: kind, namespace, name, uid, apiVersion of the involved object."""
    return (inv.get("kind") or "", inv.get("namespace") or "", inv.get("name") or "",
            inv.get("uid") or "", inv.get("apiVersion") or "")


class _LRU(OrderedDict):
    """groupcache's ``lru.Cache``: a get or add makes the key the newest; past ``size`` the oldest goes."""

    def __init__(self, size: int = _MAX_LRU_ENTRIES) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def add(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)


class _Earlier:
    """What an earlier life of the component left in the store about the objects of one name
    (see :meth:`EventRecorder._read_earlier`); each entry is taken (popped) once."""

    __slots__ = ("seen", "groups", "buckets")

    def __init__(self) -> None:
        #: logger key -> (name, namespace, count, last seen, first nanos, firstTimestamp)
        self.seen: dict[tuple, tuple] = {}
        #: aggregate key -> [messages (insertion-ordered dict), last seen]
        self.groups: dict[tuple, list] = {}
        #: object key -> [tokens, last accepted]
        self.buckets: dict[tuple, list] = {}


_NOTHING = _Earlier()  # shared "no earlier Events" (its dicts stay empty: only popped from)


class EventRecorder:
    """Writes Events for one component, through client-go's EventCorrelator (see the module).

    Args:
        api: the API server.
        ctx: the component's request context.
        component: ``source.component`` / ``reportingComponent`` (``kubelet``,
            ``default-scheduler``, ``deployment-controller``…).
        host: ``source.host`` (the node name for kubelets), or None.
        correlate: run the aggregator and spam filter (client-go's ``tools/record``, the
            default); False: only fold repeats into ``count``.
    """

    def __init__(self, api: APIServer, ctx: RequestContext, component: str, host: str | None = None,
                 correlate: bool = True) -> None:
        self.api = api
        self.ctx = ctx
        self.component = component
        self.host = host
        self.correlate = correlate
        # the EventLogger: logger key -> (name or None, namespace, count, last seen, first nanos, firstTimestamp)
        self._seen: _LRU = _LRU()
        # the EventAggregator: aggregate key -> [messages (dict, oldest first), last seen]
        self._groups: _LRU = _LRU()
        # the spam filter: object key -> [tokens, time of the last accepted event]
        self._buckets: _LRU = _LRU()
        # (namespace, object name) -> what an earlier life of this component wrote (see _read_earlier)
        self._earlier: dict[tuple[str, str], _Earlier] = {}
        self._names = _FreeNames(api)

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str,
              field_path: str | None = None) -> dict[str, Any] | None:
        """Record an event about ``obj``; returns the Event written (or None when the spam
        filter dropped it, or on failure)."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        ref = object_reference(obj, field_path)
        now = self.api.now
        stamp = self.api.timestamp(now)
        okey = _object_key(ref)
        aggregated = False
        if self.correlate:
            # 1. EventAggregator.EventAggregate
            akey = okey + (type_ or "", reason or "")
            group = self._groups.lookup(akey)
            if group is None:
                group = self._earlier_of(ns, meta.get("name")).groups.pop(akey, None)
            if group is None or now - group[1] > _AGGREGATE_WINDOW:
                group = [{}, now]
            group[0][message or ""] = None
            group[1] = now
            self._groups.add(akey, group)
            if len(group[0]) >= _AGGREGATE_MAX_EVENTS:
                del group[0][next(iter(group[0]))]  # PopAny, made deterministic: the oldest
                aggregated = True
                message = AGGREGATE_PREFIX + (message or "")
                key: tuple = akey
        if not aggregated:
            key = okey + (field_path or "", type_ or "", reason or "", message or "")
        # 2. eventLogger.eventObserve
        seen = self._seen.lookup(key)
        if seen is None:
            seen = self._earlier_of(ns, meta.get("name")).seen.pop(key, None)
        if seen is not None and now - seen[3] <= _AGGREGATE_WINDOW:
            name, _, count, _, first_nanos, first_stamp = seen
            count += 1
        else:
            name, count, first_stamp = None, 1, stamp
            first_nanos = int(round((self.api.epoch.timestamp() + now) * 1e9))
        self._seen.add(key, (name, ns, count, now, first_nanos, first_stamp))
        # 3. EventSourceObjectSpamFilter.Filter
        if self.correlate and not self._accept(okey, ns, meta.get("name"), now):
            return None
        try:
            if name is not None:
                patch: dict[str, Any] = {"count": count, "lastTimestamp": stamp}
                if aggregated:
                    patch["message"] = message
                try:
                    ev = self.api.patch("events", name, patch, MERGE_PATCH, namespace=ns, ctx=self.ctx,
                                        field_validation="Ignore")
                    return ev
                except errors.NotFound:
                    pass  # gone: created again, as recordEvent does after a 404
            source = {"component": self.component}
            if self.host:
                source["host"] = self.host
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "", "namespace": ns},
                "involvedObject": ref,
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": first_stamp,
                "lastTimestamp": stamp,
                "count": count,
                "type": type_,
                "eventTime": None,
                # upstream's aggregate event is a fresh v1.Event without the reporting fields
                "reportingComponent": "" if aggregated else self.component,
                "reportingInstance": "" if aggregated else (self.host or ""),
            }
            for f in ("reason", "message", "type"):  # omitempty
                if not body[f]:
                    del body[f]
            # Upstream's names are unique through the nanosecond clock; in virtual time many
            # events about one object share an instant, so the next free nanosecond is taken
            # (looked up in the store, not found by failing creates: a burst of pods at one
            # instant made ~40,000 such failed creates, and dropped events after 8 of them).
            base = meta.get("name")
            if name is not None:
                body["metadata"]["name"] = name  # the logger's name: that of the first occurrence
                try:
                    ev = self.api.create("events", body, namespace=ns, ctx=self.ctx, field_validation="Ignore")
                    self._seen.add(key, (name, ns, count, now, first_nanos, first_stamp))
                    return ev
                except errors.StatusError:
                    return None  # AlreadyExists…: rejected, not retried (recordEvent)
            nanos = self._free_nanos(ns, base, first_nanos)
            body["metadata"]["name"] = f"{base}.{nanos:x}"
            ev = self.api.create("events", body, namespace=ns, ctx=self.ctx, field_validation="Ignore")
            self._seen.add(key, (ev["metadata"]["name"], ns, count, now, first_nanos, first_stamp))
            return ev
        except errors.StatusError:
            return None  # events are best effort, as upstream's recorder

    def _accept(self, okey: tuple, ns: str, name: str, now: float) -> bool:
        """The spam filter's ``TryAccept`` for the object's bucket (``rate.Limiter.AllowN(now, 1)``)."""
        bucket = self._buckets.lookup(okey)
        if bucket is None:
            bucket = self._earlier_of(ns, name).buckets.pop(okey, None) or [float(_SPAM_BURST), now]
        tokens = min(float(_SPAM_BURST), bucket[0] + max(0.0, now - bucket[1]) * _SPAM_QPS)
        ok = tokens >= 1.0
        if ok:
            bucket[0], bucket[1] = tokens - 1.0, now
        self._buckets.add(okey, bucket)
        return ok

    def _earlier_of(self, ns: str, name: str) -> _Earlier:
        """What an earlier life of this component wrote about the objects named ``name`` in ``ns``."""
        earlier = self._earlier.get((ns, name))
        if earlier is None:
            earlier = self._earlier[(ns, name)] = self._read_earlier(ns, name)
        return earlier

    def _read_earlier(self, ns: str, name: str) -> _Earlier:
        """The correlator's state as an earlier life of this component would have left it,
        from this source's Events about objects named ``name`` in ``ns``.

        - the logger: by key (upstream's ``getEventKey``, source left out; an aggregate
          Event by its group), the Event seen last within the window, as
          ``(name, namespace, count, last seen, first nanos, firstTimestamp)``;
        - the aggregator: per group (object, type, reason) seen within the window, the
          messages of its single Events, oldest first (9 at most once it aggregated), and
          when the group was last seen;
        - the spam filter: per object, the bucket replayed from its Events' writes (the
          create at its record's creation, the later ones at its last write: the log's
          head has no finer history), starting full ``burst / qps`` seconds back.

        Events are named ``<object name>.<hex>``, so an object's are one key range of the
        store (read directly: it stands in for the component's memory, not for a request
        it would send), read once per object and recorder.
        """
        now = self.api.now
        floor = now - _AGGREGATE_WINDOW
        spam_floor = now - _SPAM_BURST / _SPAM_QPS
        log = self.api.log
        out: _Earlier | None = None
        writes: dict[tuple, list[float]] = {}
        for rec in log.range(f"/registry/events/{ns}/{name}."):
            ev = rec.object
            source = ev.get("source") or {}
            if (source.get("component") or "") != self.component or (source.get("host") or "") != (self.host or ""):
                continue
            stamp = ev.get("lastTimestamp") or ev.get("firstTimestamp")
            if not stamp:
                continue
            if out is None:
                out = _Earlier()
            inv = ev.get("involvedObject") or {}
            okey = _object_key(inv)
            if self.correlate and rec.time >= spam_floor:
                try:
                    created = log.record(rec.create_revision).time
                except StoreError:
                    created = rec.time
                times = writes.setdefault(okey, [])
                times.append(created)
                times.extend([rec.time] * (rec.version - 1))
            last = parse_time(self.api.epoch, stamp)
            if last < floor:
                continue
            message = ev.get("message") or ""
            akey = okey + (ev.get("type") or "", ev.get("reason") or "")
            combined = message.startswith(AGGREGATE_PREFIX)
            key = akey if combined else _event_key(inv, ev.get("type"), ev.get("reason"), message)
            first = ev.get("firstTimestamp") or stamp
            first_nanos = int(round((self.api.epoch.timestamp() + parse_time(self.api.epoch, first)) * 1e9))
            seen = out.seen.get(key)
            if seen is None or last >= seen[3]:
                out.seen[key] = (ev["metadata"]["name"], ns, int(ev.get("count") or 1), last, first_nanos, first)
            group = out.groups.setdefault(akey, [[], last, False])
            group[1] = max(group[1], last)
            if combined:
                group[2] = True
            else:
                group[0].append((last, message))
        if out is None:
            return _NOTHING
        groups = {}
        for akey, (singles, last, combined) in out.groups.items():
            messages = [m for _, m in sorted(singles)][-(_AGGREGATE_MAX_EVENTS - 1):]
            groups[akey] = [dict.fromkeys(messages), last]
        out.groups = groups
        for okey, times in writes.items():
            times.sort()
            tokens, prev = float(_SPAM_BURST), times[0]
            for t in times:
                tokens = max(0.0, min(float(_SPAM_BURST), tokens + (t - prev) * _SPAM_QPS) - 1.0)
                prev = t
            out.buckets[okey] = [tokens, prev]
        return out

    def _free_nanos(self, ns: str, name: str, nanos: int) -> int:
        return self._names.free(ns, name, nanos)


class _FreeNames:
    """Free Event names at one instant, for one recorder (see :meth:`free`)."""

    def __init__(self, api: APIServer) -> None:
        self.api = api
        # names this recorder took at the current instant: (namespace, object name) -> next nanos
        self._taken_at: int | None = None
        self._taken: dict[tuple[str, str], int] = {}

    def free(self, ns: str, name: str, nanos: int) -> int:
        """The first ``n >= nanos`` such that no Event ``<name>.<hex n>`` exists in ``ns``
        (the search resumes where this recorder's last one for the same instant ended)."""
        if self._taken_at != nanos:
            self._taken_at, self._taken = nanos, {}
        log, prefix = self.api.log, f"/registry/events/{ns}/{name}."
        n = self._taken.get((ns, name), nanos)
        while log.get(f"{prefix}{n:x}") is not None:
            n += 1
        self._taken[(ns, name)] = n + 1
        return n


class _Isomorphic:
    """One entry of the tools/events broadcaster's cache: its Event's name and note (the rest is
    in the key), when it was first seen, and its series, if a repeat came."""

    __slots__ = ("name", "namespace", "note", "event_time", "stamp", "count", "last", "written")

    def __init__(self, name: str, namespace: str, note: str, event_time: float, stamp: str,
                 count: int | None = None, last: float | None = None) -> None:
        self.name, self.namespace, self.note = name, namespace, note
        self.event_time, self.stamp = event_time, stamp  # eventTime: virtual seconds, MicroTime
        self.count = count  # the series' count, or None: a singleton
        self.last = last  # the series' lastObservedTime
        self.written = (count, last)  # the series as the store has it

    @property
    def activity(self) -> float:
        return self.event_time if self.last is None else self.last


def _forgotten_at(activity: float) -> float:
    """The ``finishSeries`` tick (a multiple of 6 minutes) that forgets an entry last active at
    ``activity``: the first one at which it is more than 6 minutes old."""
    return (math.floor((activity + _FINISH_TIME) / _FINISH_TIME) + 1) * _FINISH_TIME


class EventsV1Recorder:
    """client-go's ``tools/events`` recorder and broadcaster (events.k8s.io/v1), as kube-scheduler
    runs them (see the module): Events with ``eventTime``, ``action``, the reporting controller and
    instance, repeats as a ``series``.

    Args:
        api: the API server.
        ctx: the component's request context.
        controller: ``reportingController`` (``default-scheduler``).
        instance: ``reportingInstance`` (``default-scheduler-<hostname>``).
    """

    def __init__(self, api: APIServer, ctx: RequestContext, controller: str, instance: str) -> None:
        self.api = api
        self.ctx = ctx
        self.controller = controller
        self.instance = instance
        #: the broadcaster's eventCache: isomorphic key -> entry (insertion-ordered: the timers'
        #: walks are deterministic, where upstream's map order is not)
        self._cache: dict[tuple, _Isomorphic] = {}
        #: the entries whose series the store does not have as it stands (the timers write them)
        self._dirty: dict[tuple, _Isomorphic] = {}
        # (namespace, object name) -> the cache an earlier life left for that object's Events
        self._earlier: dict[tuple[str, str], dict[tuple, _Isomorphic]] = {}
        self._names = _FreeNames(api)
        #: the timers have ticked up to here (an earlier life ticked before)
        self._ticked = api.now

    # ------------------------------------------------------------------ Eventf
    def eventf(self, regarding: dict[str, Any], related: dict[str, Any] | None, type_: str, reason: str,
               action: str, note: str) -> dict[str, Any] | None:
        """``Eventf(regarding, related, type, reason, action, note)``; returns the Event written
        (None when only the cached series changed, or on failure)."""
        self.tick()
        now = self.api.now
        ref = object_reference(regarding)
        ns, name = ref.get("namespace") or "default", ref.get("name") or ""
        key = (type_ or "", action or "", reason or "", self.controller, self.instance, _ref_key(ref),
               _ref_key(object_reference(related) if related is not None else None))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._earlier_of(ns, name).pop(key, None)
            if entry is not None:
                self._cache[key] = entry
        if entry is not None:  # isomorphic
            if entry.count is not None:
                entry.count, entry.last = entry.count + 1, now
                self._dirty[key] = entry
                return None  # written by the timers
            entry.count, entry.last = 2, now
            return self._record(key, entry)
        # one instant for the name and eventTime (upstream reads the clock twice, a few ns apart)
        nanos = self._names.free(ns, name, int(self.api.epoch.timestamp()) * 10**9 + round(now * 1e9))
        stamp = (datetime.fromtimestamp(nanos // 10**9, timezone.utc)
                 + timedelta(microseconds=nanos // 1000 % 10**6)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        entry = self._cache[key] = _Isomorphic(f"{name}.{nanos:x}", ns, note or "", now, stamp)
        return self._record(key, entry)

    def _body(self, key: tuple, entry: _Isomorphic) -> dict[str, Any]:
        """The Event as created, read as core/v1 (what the API server stores)."""
        type_, action, reason, controller, instance, ref, rel = key
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": entry.name, "namespace": entry.namespace},
            "involvedObject": {f: v for f, v in zip(_REF_FIELDS, ref) if v},
            "reason": reason,
            "message": entry.note,
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
            "type": type_,
            "eventTime": entry.stamp,
            "action": action,
            "related": {f: v for f, v in zip(_REF_FIELDS, rel) if v},
            "reportingComponent": controller,
            "reportingInstance": instance,
        }
        for f in ("reason", "message", "type", "action", "related"):  # omitempty
            if not body[f]:
                del body[f]
        return body

    def _record(self, key: tuple, entry: _Isomorphic) -> dict[str, Any] | None:
        """``recordEvent``: create a singleton; patch a series onto its Event (created, with the
        series, when it is gone). Rejections are not retried (best effort)."""
        self._dirty.pop(key, None)
        ns = entry.namespace
        try:
            if entry.count is None:
                return self.api.create("events", self._body(key, entry), namespace=ns, ctx=self.ctx,
                                       field_validation="Ignore")
            series = {"count": entry.count, "lastObservedTime": format_micro_time(self.api.epoch, entry.last)}
            for _ in range(2):
                try:
                    ev = self.api.patch("events", entry.name, {"series": series}, STRATEGIC_MERGE_PATCH,
                                        namespace=ns, ctx=self.ctx, field_validation="Ignore")
                except errors.NotFound:  # gone (expired): created again, with the series
                    try:
                        ev = self.api.create("events", self._body(key, entry) | {"series": series}, namespace=ns,
                                             ctx=self.ctx, field_validation="Ignore")
                    except errors.AlreadyExists:
                        continue  # created meanwhile: retried
                entry.written = (entry.count, entry.last)
                return ev
        except errors.StatusError:
            pass
        if entry.count is not None:
            self._dirty[key] = entry  # the timers try again
        return None

    # ------------------------------------------------------------------ the timers
    def next_tick(self) -> float | None:
        """When the broadcaster's timers next write something (a series the store does not have
        as it stands), or None. Forgetting entries writes nothing: :meth:`tick` does it when
        next called."""
        if not self._dirty:
            return None
        refresh = (math.floor(self._ticked / _REFRESH_TIME) + 1) * _REFRESH_TIME
        return min(refresh, min(_forgotten_at(e.activity) for e in self._dirty.values()))

    def tick(self) -> None:
        """Run the timers' ticks due by now, each as of its own time: ``finishSeries`` every 6
        minutes, then, every 30, ``refreshExistingEventSeries``."""
        now = self.api.now
        while self._cache:
            t = (math.floor(self._ticked / _FINISH_TIME) + 1) * _FINISH_TIME
            if t > now:
                break
            self._ticked = t
            for key, e in list(self._cache.items()):  # finishSeries
                if e.last is not None:
                    if e.last < t - _FINISH_TIME:
                        if key in self._dirty:
                            self._record(key, e)
                            self._dirty.pop(key, None)  # written or rejected: forgotten alike
                        del self._cache[key]
                elif e.event_time < t - _FINISH_TIME:
                    del self._cache[key]
            if t % _REFRESH_TIME == 0:  # refreshExistingEventSeries (a series as written: a no-op)
                for key, e in list(self._dirty.items()):
                    self._record(key, e)
        self._ticked = max(self._ticked, now)

    # ------------------------------------------------------------------ an earlier life
    def _earlier_of(self, ns: str, name: str) -> dict[tuple, _Isomorphic]:
        earlier = self._earlier.get((ns, name))
        if earlier is None:
            earlier = self._earlier[(ns, name)] = self._read_earlier(ns, name)
        return earlier

    def _read_earlier(self, ns: str, name: str) -> dict[tuple, _Isomorphic]:
        """The cache entries an earlier life of this recorder would still hold for the objects
        named ``name`` in ``ns``: its Events there (this controller and instance, an
        ``eventTime``), by key the latest, unless a ``finishSeries`` tick would have forgotten
        it by now. Read from the store directly: it stands in for the process's memory."""
        now, epoch = self.api.now, self.api.epoch
        out: dict[tuple, _Isomorphic] = {}
        for rec in self.api.log.range(f"/registry/events/{ns}/{name}."):
            ev = rec.object
            if (ev.get("reportingComponent") != self.controller or ev.get("reportingInstance") != self.instance
                    or not ev.get("eventTime") or (ev.get("source") or {}).get("component")):
                continue
            series = ev.get("series") or {}
            count, last = series.get("count"), series.get("lastObservedTime")
            entry = _Isomorphic(ev["metadata"]["name"], ns, ev.get("message") or "",
                                parse_time(epoch, ev["eventTime"]), ev["eventTime"])
            if count and last:
                entry.count, entry.last = int(count), parse_time(epoch, last)
                entry.written = (entry.count, entry.last)
            if _forgotten_at(entry.activity) <= now:
                continue
            key = (ev.get("type") or "", ev.get("action") or "", ev.get("reason") or "", self.controller,
                   self.instance, _ref_key(ev.get("involvedObject")), _ref_key(ev.get("related")))
            other = out.get(key)
            if other is None or entry.activity >= other.activity:
                out[key] = entry
        return out or _NO_ENTRIES


_NO_ENTRIES: dict[tuple, _Isomorphic] = {}  # shared "no earlier entries" (only popped from)
