"""Recording core/v1 Events, as client-go's ``record.EventRecorder``.

An event is named ``<object name>.<hex of the event's Unix time in ns>`` in the
object's namespace (``default`` for cluster-scoped objects), with
``involvedObject``, ``reason``, ``message``, ``type`` (Normal / Warning),
``source`` (component, host), ``firstTimestamp`` / ``lastTimestamp`` and
``count``. Repeats of the same (object, type, reason, message) from the same
source within 10 minutes are folded into the first event (``count`` + 1,
``lastTimestamp`` moved), as the EventCorrelator does — which is why
``kubectl describe`` shows ``(x4 over 2m)``.

The correlator's memory lasts as long as the component's process; here each
command starts the components afresh, so on a key's first emission in a
recorder's life the Event to fold into is looked up in the store (the Events
named after the object, see :meth:`EventRecorder._existing`): a component
carried on from an earlier command folds its repeats as one that never
stopped. The lookup reads the log at the current revision, so it is as
deterministic as the rest.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import MERGE_PATCH, APIServer, RequestContext
from ..api.meta import parse_time

__all__ = ["EventRecorder", "NORMAL", "WARNING"]

NORMAL = "Normal"
WARNING = "Warning"
_AGGREGATE_WINDOW = 600.0  # seconds, upstream's default maxIntervalInSeconds
_NOTHING: dict = {}  # shared "no earlier Events" (read-only)
#: the involved object's fields in upstream's event key (``getEventKey``)
_KEY_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")


def _event_key(inv: dict[str, Any], type_: Any, reason: Any, message: Any) -> tuple:
    """Upstream's event key but the source: the involved object's key fields, type, reason, message."""
    return tuple(inv.get(f) or "" for f in _KEY_FIELDS) + (type_ or "", reason or "", message or "")


class EventRecorder:
    """Writes Events for one component.

    Args:
        api: the API server.
        ctx: the component's request context.
        component: ``source.component`` / ``reportingComponent`` (``kubelet``,
            ``default-scheduler``, ``deployment-controller``…).
        host: ``source.host`` (the node name for kubelets), or None.
    """

    def __init__(self, api: APIServer, ctx: RequestContext, component: str, host: str | None = None) -> None:
        self.api = api
        self.ctx = ctx
        self.component = component
        self.host = host
        self._seen: dict[tuple, tuple[str, str, int, float]] = {}
        # (namespace, object name) -> what an earlier life of this component wrote (see _existing)
        self._earlier: dict[tuple[str, str], dict[tuple, tuple[str, str, int, float]]] = {}
        # names this recorder took at the current instant: (namespace, object name) -> next nanos
        self._taken_at: int | None = None
        self._taken: dict[tuple[str, str], int] = {}

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str,
              field_path: str | None = None) -> dict[str, Any] | None:
        """Record an event about ``obj``; returns the Event written (or None on failure)."""
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
        key = (ref.get("uid"), ref["name"], ns, type_, reason, message, field_path)
        seen = self._seen.get(key)
        try:
            if seen is None:
                seen = self._existing(ns, ref, type_, reason, message)
            if seen is not None and now - seen[3] <= _AGGREGATE_WINDOW:
                name, _, count, _ = seen
                ev = self.api.patch("events", name, {"count": count + 1, "lastTimestamp": stamp},
                                    MERGE_PATCH, namespace=ns, ctx=self.ctx, field_validation="Ignore")
                self._seen[key] = (name, ns, count + 1, now)
                return ev
            nanos = int(round((self.api.epoch.timestamp() + now) * 1e9))
            source = {"component": self.component}
            if self.host:
                source["host"] = self.host
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{meta.get('name')}.{nanos:x}", "namespace": ns},
                "involvedObject": ref,
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
                "type": type_,
                "eventTime": None,
                "reportingComponent": self.component,
                "reportingInstance": self.host or "",
            }
            # Upstream's names are unique through the nanosecond clock; in virtual time many
            # events about one object share an instant, so the next free nanosecond is taken
            # (looked up in the store, not found by failing creates: a burst of pods at one
            # instant made ~40,000 such failed creates, and dropped events after 8 of them).
            base = meta.get("name")
            nanos = self._free_nanos(ns, base, nanos)
            body["metadata"]["name"] = f"{base}.{nanos:x}"
            ev = self.api.create("events", body, namespace=ns, ctx=self.ctx, field_validation="Ignore")
            self._seen[key] = (ev["metadata"]["name"], ns, 1, now)
            return ev
        except errors.StatusError:
            return None  # events are best effort, as upstream's recorder

    def _existing(self, ns: str, ref: dict[str, Any], type_: str, reason: str,
                  message: str) -> tuple[str, str, int, float] | None:
        """The Event an earlier life of this component wrote for the same key, as the
        correlator's cache would hold it: ``(name, namespace, count, last seen)``, or None.

        The key is upstream's ``getEventKey``: source (component, host), the involved
        object (kind, namespace, name, uid, apiVersion, fieldPath), type, reason and
        message; of several such Events seen within the aggregation window, the one seen
        last. Events are named ``<object name>.<hex>``, so an object's are one key range
        of the store (read directly: it stands in for the component's memory, not for a
        request it would send), read once per object and recorder: a DaemonSet that
        created 1,000 pods has 1,000 Events, each with its own message.
        """
        index = self._earlier.get((ns, ref["name"]))
        if index is None:
            index = self._earlier[(ns, ref["name"])] = self._read_earlier(ns, ref["name"]) or _NOTHING
        return index.get(_event_key(ref, type_, reason, message))

    def _read_earlier(self, ns: str, name: str) -> dict[tuple, tuple[str, str, int, float]]:
        """This source's Events about objects named ``name`` in ``ns`` seen within the
        aggregation window, by event key (the latest of each)."""
        floor = self.api.now - _AGGREGATE_WINDOW
        out: dict[tuple, tuple[str, str, int, float]] = {}
        for rec in self.api.log.range(f"/registry/events/{ns}/{name}."):
            ev = rec.object
            source = ev.get("source") or {}
            if (source.get("component") or "") != self.component or (source.get("host") or "") != (self.host or ""):
                continue
            stamp = ev.get("lastTimestamp") or ev.get("firstTimestamp")
            if not stamp:
                continue
            last = parse_time(self.api.epoch, stamp)
            if last < floor:
                continue
            key = _event_key(ev.get("involvedObject") or {}, ev.get("type"), ev.get("reason"), ev.get("message"))
            seen = out.get(key)
            if seen is None or last >= seen[3]:
                out[key] = (ev["metadata"]["name"], ns, int(ev.get("count") or 1), last)
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
