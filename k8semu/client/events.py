"""Recording core/v1 Events, as client-go's ``record.EventRecorder``.

An event is named ``<object name>.<hex of the event's Unix time in ns>`` in the
object's namespace (``default`` for cluster-scoped objects), with
``involvedObject``, ``reason``, ``message``, ``type`` (Normal / Warning),
``source`` (component, host), ``firstTimestamp`` / ``lastTimestamp`` and
``count``. Every event goes through client-go's ``EventCorrelator``
(tools/record/events_cache.go, ``NewEventCorrelator`` with its defaults, as
kubelets and the controller managers run it), in this order:

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
(``default-scheduler``) records through the events.k8s.io API
(``tools/events``), which has no aggregator nor spam filter: its recorder only
deduplicates (``correlate=False``).

The correlator's memory lasts as long as the component's process; here each
command starts the components afresh, so on an object's first event in a
recorder's life the store is read for what the correlator would hold (the
Events named after the object, see :meth:`EventRecorder._read_earlier`): the
Event each key folds into, each group's messages, and each bucket's tokens
(replayed from the writes of its Events), so a component carried on from an
earlier command goes on as one that never stopped. Each restored entry is used
once (later the recorder's own memory holds it). The lookup reads the log at
the current revision, so it is as deterministic as the rest.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import Any

from ..api import errors
from ..api.apiserver import MERGE_PATCH, APIServer, RequestContext
from ..api.meta import parse_time
from ..store.log import StoreError

__all__ = ["EventRecorder", "NORMAL", "WARNING", "AGGREGATE_PREFIX"]

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
#: components whose upstream recorder is tools/events (events.k8s.io): no aggregator, no spam filter
_NEW_EVENTS_API = frozenset({"default-scheduler"})
#: the involved object's fields in upstream's event key (``getEventKey``)
_KEY_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")


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
        correlate: run the aggregator and spam filter (client-go's ``tools/record``);
            default: all components but the scheduler, which uses ``tools/events``.
    """

    def __init__(self, api: APIServer, ctx: RequestContext, component: str, host: str | None = None,
                 correlate: bool | None = None) -> None:
        self.api = api
        self.ctx = ctx
        self.component = component
        self.host = host
        self.correlate = component not in _NEW_EVENTS_API if correlate is None else correlate
        # the EventLogger: logger key -> (name or None, namespace, count, last seen, first nanos, firstTimestamp)
        self._seen: _LRU = _LRU()
        # the EventAggregator: aggregate key -> [messages (dict, oldest first), last seen]
        self._groups: _LRU = _LRU()
        # the spam filter: object key -> [tokens, time of the last accepted event]
        self._buckets: _LRU = _LRU()
        # (namespace, object name) -> what an earlier life of this component wrote (see _read_earlier)
        self._earlier: dict[tuple[str, str], _Earlier] = {}
        # names this recorder took at the current instant: (namespace, object name) -> next nanos
        self._taken_at: int | None = None
        self._taken: dict[tuple[str, str], int] = {}

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str,
              field_path: str | None = None) -> dict[str, Any] | None:
        """Record an event about ``obj``; returns the Event written (or None when the spam
        filter dropped it, or on failure)."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        ref = {
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": obj.get("apiVersion"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        if not ref["namespace"]:
            del ref["namespace"]
        if field_path:
            ref["fieldPath"] = field_path
        now = self.api.now
        stamp = self.api.timestamp(now)
        okey = _object_key(ref)
        aggregated = False
        if self.correlate:
            # 1. EventAggregator.EventAggregate
            akey = okey + (type_ or "", reason or "")
            group = self._groups.lookup(akey)
            if group is None:
                group = self._earlier_of(ns, ref["name"]).groups.pop(akey, None)
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
            seen = self._earlier_of(ns, ref["name"]).seen.pop(key, None)
        if seen is not None and now - seen[3] <= _AGGREGATE_WINDOW:
            name, _, count, _, first_nanos, first_stamp = seen
            count += 1
        else:
            name, count, first_stamp = None, 1, stamp
            first_nanos = int(round((self.api.epoch.timestamp() + now) * 1e9))
        self._seen.add(key, (name, ns, count, now, first_nanos, first_stamp))
        # 3. EventSourceObjectSpamFilter.Filter
        if self.correlate and not self._accept(okey, ns, ref["name"], now):
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
