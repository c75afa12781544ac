"""The TTL-after-finished controller, as kube-controller-manager's
``ttl-after-finished-controller`` (pkg/controller/ttlafterfinished).

Design
======

It watches Jobs. A Job with ``spec.ttlSecondsAfterFinished`` and a ``Complete``
or ``Failed`` condition expires ``ttl`` seconds after that condition's
``lastTransitionTime`` (:func:`expire_at`). Until then the key waits in the
workqueue (``add_after``, a scheduled wake-up in virtual time). When it is
due, the controller re-reads the Job from the API server (the cache may be
stale, and the user may have changed the TTL), then deletes it with
``propagationPolicy: Background`` and ``uid`` + ``resourceVersion``
preconditions, so a Job changed in between is not deleted by mistake; the
garbage collector removes its pods. Upstream records no events here.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.meta import parse_time
from ..client.component import Component
from ..client.informer import EventHandler, meta_namespace_key

__all__ = ["TTLAfterFinishedController", "expire_at", "finish_time"]

Obj = dict[str, Any]


def finish_time(job: Obj, epoch) -> float | None:
    """Virtual seconds of the Job's ``Complete``/``Failed`` (True) condition transition, or None."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            stamp = c.get("lastTransitionTime")
            return parse_time(epoch, stamp) if stamp else None
    return None


def expire_at(job: Obj, epoch) -> float | None:
    """When a finished Job with ``ttlSecondsAfterFinished`` is to be deleted
    (virtual seconds), or None when it has no TTL or has not finished."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or (job.get("metadata") or {}).get("deletionTimestamp"):
        return None
    done = finish_time(job, epoch)
    if done is None:
        return None
    return done + int(ttl)


class TTLAfterFinishedController(Component):
    """Deletes finished Jobs ``ttlSecondsAfterFinished`` after they finished
    (actor ``ttl-after-finished-controller``)."""

    name = "ttl-after-finished-controller"

    def __init__(self, api, name: str | None = None, user=None) -> None:
        super().__init__(api, name, user)
        self.jobs = self.informer("jobs.batch")
        self.q = self.queue()
        self.jobs.add_event_handler(EventHandler(on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _enqueue(self, job: Obj) -> None:
        if expire_at(job, self.api.epoch) is not None:
            self.q.add(meta_namespace_key(job))

    def sync(self, key: str) -> None:
        """Delete the Job ``namespace/name`` if its TTL has run out; else wait for it."""
        ns, name = key.split("/", 1)
        job = self.jobs.indexer.get_by(ns, name)
        if job is None or not self._due(key, job):
            return
        try:
            fresh = self.api.get("jobs.batch", name, namespace=ns, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self._due(key, fresh):
            return
        meta = fresh["metadata"]
        try:
            self.api.delete("jobs.batch", name, namespace=ns, ctx=self.ctx, propagation_policy="Background",
                            preconditions={"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")})
        except errors.NotFound:
            pass

    def _due(self, key: str, job: Obj) -> bool:
        at = expire_at(job, self.api.epoch)
        if at is None:
            return False
        now = self.api.now
        if now < at:
            self.q.add_after(key, at - now)
            return False
        return True
