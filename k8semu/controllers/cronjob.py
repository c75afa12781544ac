"""The CronJob controller, as kube-controller-manager's ``cronjob-controller``
(pkg/controller/cronjob, the v2 controller of v1.3x).

Design
======

Time: the schedule runs on the cluster's virtual clock mapped to wall time
through the cluster epoch (``api.epoch + api.now`` seconds), in the zone of
``spec.timeZone`` or a ``TZ=`` / ``CRON_TZ=`` schedule prefix (UTC
otherwise). Cron expressions are evaluated with the ``croniter`` library;
``@every <duration>`` (robfig/cron's constant delay) is computed here.

A sync (:meth:`CronJobController.sync`) does what upstream's ``sync`` does:

1. reconcile ``status.active`` with the Jobs the CronJob controls (finished
   ones leave it with ``SawCompletedJob``, vanished ones with ``MissingJob``;
   ``lastSuccessfulTime`` follows completed Jobs);
2. unless suspended, find the most recent unmet schedule time
   (:func:`most_recent_schedule`); if one is due and within
   ``startingDeadlineSeconds``, honour ``concurrencyPolicy`` (Forbid skips,
   Replace deletes the running Jobs) and create the Job
   ``<cronjob>-<scheduled time in minutes since the Unix epoch>``;
3. delete the oldest finished Jobs beyond the history limits;
4. write status, and requeue at the next schedule time + 100 ms with the
   workqueue's ``add_after`` (a scheduled wake-up, so :meth:`Runtime.settle`
   never waits past the next run).

Jobs come from the informer, as upstream's ``getJobsToBeReconciled`` reads the
Job lister. Upstream a sync takes milliseconds of API round trips, long enough
for the watch to deliver the DELETE of a Job the sync itself removed before the
next sync of the same CronJob starts; in virtual time the next sync can start
at once, before the Jobs informer has caught up. So a Job this controller
deleted (and that is gone, not merely terminating) is left out of the Jobs a
sync looks at until the informer reports its deletion: the history-limit
cleanup deletes each old Job once (one ``SuccessfulDelete``), never a second
time into a ``NotFound`` (upstream's ``deleteJob`` would report that as a
``FailedDelete`` Warning, as this one still does for any failed delete).

The schedule arithmetic (:func:`parse_schedule`, :func:`most_recent_schedule`,
:func:`job_name`, :func:`job_from_template`) is pure.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

from ..api import errors
from ..api.meta import controller_of, copy_object, parse_time
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler, meta_namespace_key

__all__ = [
    "CronJobController",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "Schedule",
    "parse_schedule",
    "most_recent_schedule",
    "job_name",
    "job_from_template",
]

Obj = dict[str, Any]

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
#: Upstream requeues this long after the next schedule time.
NEXT_SCHEDULE_DELTA = 0.1
#: More missed start times than this draws a ``TooManyMissedTimes`` warning.
MANY_MISSED = 100

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class Schedule:
    """A parsed cron schedule: ``next(dt)`` is the first activation strictly after ``dt``.

    Attributes:
        expr: the five-field expression (descriptors expanded), or None for ``@every``.
        every: the ``@every`` delay in seconds, or None.
        tz: the zone activations are computed in.
    """

    def __init__(self, expr: str | None, every: float | None, tz: ZoneInfo | timezone) -> None:
        self.expr = expr
        self.every = every
        self.tz = tz

    def next(self, dt: datetime) -> datetime:
        """The first activation after ``dt`` (an aware datetime), in :attr:`tz`."""
        dt = dt.astimezone(self.tz)
        if self.every is not None:
            # robfig/cron ConstantDelaySchedule: add the delay, drop sub-second parts
            return (dt + timedelta(seconds=self.every)).replace(microsecond=0)
        return croniter(self.expr, dt.replace(microsecond=0)).get_next(datetime)


def parse_schedule(schedule: str, time_zone: str | None = None) -> Schedule:
    """Parse ``spec.schedule`` (with an optional ``TZ=``/``CRON_TZ=`` prefix) as
    robfig/cron's ``ParseStandard``; ``time_zone`` is ``spec.timeZone``.

    Raises:
        ValueError: an unparseable schedule or unknown zone.
    """
    tz: ZoneInfo | timezone = timezone.utc
    if time_zone:
        tz = ZoneInfo(time_zone)
    text = schedule.strip()
    if text.startswith("TZ=") or text.startswith("CRON_TZ="):
        zone, _, text = text.partition(" ")
        tz = ZoneInfo(zone.split("=", 1)[1])
        text = text.strip()
    if text.startswith("@every "):
        dur = text[len("@every "):].strip()
        total, pos = 0.0, 0
        for m in _DURATION_PART.finditer(dur):
            if m.start() != pos:
                raise ValueError(f'failed to parse duration {text}: time: invalid duration "{dur}"')
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos != len(dur) or not dur:
            raise ValueError(f'failed to parse duration {text}: time: invalid duration "{dur}"')
        return Schedule(None, max(1.0, float(int(total))), tz)
    expr = _DESCRIPTORS.get(text, text).replace("?", "*")
    if len(expr.split()) != 5 or not croniter.is_valid(expr):
        raise ValueError(f"unparseable schedule: {schedule}")
    return Schedule(expr, None, tz)


def _wall(epoch: datetime, t: float) -> datetime:
    return epoch + timedelta(seconds=t)


def _virtual(epoch: datetime, dt: datetime) -> float:
    return (dt - epoch).total_seconds()


def most_recent_schedule(sched: Schedule, earliest: datetime, now: datetime) -> tuple[datetime | None, int]:
    """The latest activation in ``(earliest, now]`` and roughly how many were
    missed (upstream's ``mostRecentScheduleTime``: 0 none, 1 one, else the
    estimate ``(now - t1) / (t2 - t1) + 1``)."""
    t1 = sched.next(earliest)
    if now < t1:
        return None, 0
    t2 = sched.next(t1)
    if now < t2:
        return t1, 1
    period = int(round((t2 - t1).total_seconds()))
    if period < 1:
        raise ValueError("time difference between two schedules is less than 1 second")
    missed = int((now - t1).total_seconds()) // period + 1
    start = t1 + timedelta(seconds=(missed - 2) * period)
    recent = None
    t = sched.next(start)
    while t <= now:
        recent = t
        t = sched.next(t)
    return recent, missed


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """``<cronjob>-<scheduled time in minutes since the Unix epoch>`` (upstream's ``getJobName``)."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def job_from_template(cj: Obj, scheduled: datetime) -> Obj:
    """The Job to create for ``scheduled``: the jobTemplate's labels, annotations
    and spec, the ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation
    (RFC 3339 in the CronJob's zone) and a controller reference to the CronJob."""
    meta = cj.get("metadata") or {}
    tmpl = copy_object((cj.get("spec") or {}).get("jobTemplate") or {})
    tmeta = tmpl.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled.isoformat().replace("+00:00", "Z")
    jmeta: Obj = {"name": job_name(meta.get("name", ""), scheduled), "namespace": meta.get("namespace")}
    if tmeta.get("labels"):
        jmeta["labels"] = dict(tmeta["labels"])
    jmeta["annotations"] = annotations
    jmeta["ownerReferences"] = [{
        "apiVersion": "batch/v1", "kind": "CronJob", "name": meta.get("name"), "uid": meta.get("uid"),
        "controller": True, "blockOwnerDeletion": True,
    }]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": jmeta, "spec": tmpl.get("spec") or {}}


def _finished_type(job: Obj) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"]
    return None


def _job_ref(job: Obj) -> Obj:
    m = job.get("metadata") or {}
    return {"kind": "Job", "namespace": m.get("namespace"), "name": m.get("name"), "uid": m.get("uid"),
            "apiVersion": "batch/v1", "resourceVersion": m.get("resourceVersion")}


def _start_time_key(job: Obj) -> tuple:
    st = (job.get("status") or {}).get("startTime")
    return (st is None, st or "", (job.get("metadata") or {}).get("name", ""))


def _rfc1123z(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%a, %d %b %Y %H:%M:%S +0000")


class CronJobController(Component):
    """kube-controller-manager's CronJob controller (actor ``cronjob-controller``).

    Events on the CronJob: ``SuccessfulCreate`` ``Created job <name>``,
    ``SawCompletedJob`` ``Saw completed job: <name>, status: Complete``,
    ``SuccessfulDelete`` ``Deleted job <name>``, ``JobAlreadyActive``,
    ``MissingJob``, Warning ``MissSchedule``, ``TooManyMissedTimes``,
    ``UnparseableSchedule``, ``UnknownTimeZone``.
    """

    name = "cronjob-controller"

    def __init__(self, api, name: str | None = None, user=None) -> None:
        super().__init__(api, name, user)
        self.cronjobs = self.informer("cronjobs.batch")
        self.jobs = self.informer("jobs.batch", indexers={"cronjob": _owner_index})
        self.q = self.queue()
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self._written: dict[str, Obj] = {}
        #: uids of Jobs this controller deleted (and that are gone) whose deletion the Jobs
        #: informer has not delivered yet: hidden from syncs until it does (see the module doc)
        self._deleted_jobs: dict[str, None] = {}
        self.cronjobs.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n), on_delete=self._enqueue))
        self.jobs.add_event_handler(EventHandler(
            on_add=self._job_changed, on_update=lambda o, n: self._job_changed(n), on_delete=self._job_deleted))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _enqueue(self, cj: Obj) -> None:
        self.q.add(meta_namespace_key(cj))

    def _job_changed(self, job: Obj) -> None:
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.q.add(f"{(job.get('metadata') or {}).get('namespace')}/{ref.get('name')}")

    def _job_deleted(self, job: Obj) -> None:
        self._deleted_jobs.pop((job.get("metadata") or {}).get("uid", ""), None)
        self._job_changed(job)

    def _current(self, key: str) -> Obj | None:
        ns, name = key.split("/", 1)
        cj = self.cronjobs.indexer.get_by(ns, name)
        w = self._written.get(key)
        if cj is not None and w is not None and w["metadata"].get("uid") == cj["metadata"].get("uid") and \
                int(w["metadata"]["resourceVersion"]) > int(cj["metadata"].get("resourceVersion") or 0):
            return w
        return cj

    def sync(self, key: str) -> None:
        """Reconcile one CronJob (``namespace/name``) and requeue it at its next schedule."""
        cj = self._current(key)
        if cj is None:
            self._written.pop(key, None)
            return
        jobs = [j for j in self.jobs.indexer.by_index("cronjob", cj["metadata"].get("uid", ""))
                if j["metadata"].get("uid") not in self._deleted_jobs]
        status = copy_object(cj.get("status") or {})
        requeue, changed = self._sync_cronjob(cj, status, jobs)
        if self._cleanup(cj, status, jobs):
            changed = True
        if changed:
            st = {k: v for k, v in status.items() if v not in (None, [])}
            out = self.api.update("cronjobs.batch", {**cj, "status": st}, subresource="status", ctx=self.ctx,
                                  field_validation="Ignore")
            self._written[key] = out
        if requeue is not None:
            self.q.add_after(key, max(0.0, requeue))

    def _sync_cronjob(self, cj: Obj, status: Obj, jobs: list[Obj]) -> tuple[float | None, bool]:
        api, epoch = self.api, self.api.epoch
        spec = cj.get("spec") or {}
        meta = cj.get("metadata") or {}
        changed = False
        active = list(status.get("active") or [])
        active_uids = {a.get("uid") for a in active}
        by_uid = {j["metadata"].get("uid"): j for j in jobs}
        for j in jobs:
            jm = j["metadata"]
            found = jm.get("uid") in active_uids
            done = _finished_type(j)
            if not found and done is None:
                # our status may be stale: ask the API server, as upstream does
                try:
                    fresh = api.get("cronjobs.batch", meta.get("name"), namespace=meta.get("namespace"), ctx=self.ctx)
                except errors.NotFound:
                    fresh = cj
                if any(a.get("uid") == jm.get("uid") for a in (fresh.get("status") or {}).get("active") or ()):
                    active.append(next(a for a in fresh["status"]["active"] if a.get("uid") == jm.get("uid")))
                    active_uids.add(jm.get("uid"))
                    continue
                self.recorder.event(cj, WARNING, "UnexpectedJob",
                                    f"Saw a job that the controller did not create or forgot: {jm.get('name')}")
            elif found and done is not None:
                active = [a for a in active if a.get("uid") != jm.get("uid")]
                self.recorder.event(cj, NORMAL, "SawCompletedJob",
                                    f"Saw completed job: {jm.get('name')}, status: {done}")
                changed = True
            elif done == "Complete":
                ct = (j.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if ct and (last is None or parse_time(epoch, ct) > parse_time(epoch, last)):
                    status["lastSuccessfulTime"] = ct
                    changed = True
        for ref in list(active):
            if ref.get("uid") in by_uid:
                continue
            try:
                api.get("jobs.batch", ref.get("name"), namespace=ref.get("namespace"), ctx=self.ctx)
            except errors.NotFound:
                self.recorder.event(cj, NORMAL, "MissingJob", f"Active job went missing: {ref.get('name')}")
                active = [a for a in active if a.get("uid") != ref.get("uid")]
                changed = True
        status["active"] = active
        if meta.get("deletionTimestamp"):
            return None, changed
        tz = spec.get("timeZone")
        if tz is not None:
            try:
                ZoneInfo(tz)
            except Exception as exc:  # noqa: BLE001 - any zone load failure
                self.recorder.event(cj, WARNING, "UnknownTimeZone", f'invalid timeZone: "{tz}": {exc}')
                return None, changed
        if spec.get("suspend"):
            return None, changed
        schedule = spec.get("schedule") or ""
        if "TZ" in schedule:
            self.recorder.event(
                cj, WARNING, "UnsupportedSchedule",
                f'CRON_TZ or TZ used in schedule "{schedule}" is not officially supported, see '
                "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
        try:
            sched = parse_schedule(schedule, None if "TZ" in schedule else tz)
        except (ValueError, KeyError) as exc:
            self.recorder.event(cj, WARNING, "UnparseableSchedule", f'unparseable schedule: "{schedule}" : {exc}')
            return None, changed
        now_v = api.now
        now = _wall(epoch, now_v)
        created = _wall(epoch, parse_time(epoch, meta["creationTimestamp"]))
        last = status.get("lastScheduleTime")
        earliest = _wall(epoch, parse_time(epoch, last)) if last else created
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            sched_deadline = now - timedelta(seconds=int(deadline))
            if sched_deadline > earliest:
                earliest = sched_deadline

        def next_run() -> float:
            # upstream's nextScheduleTimeDuration: after the most recent activation
            # since lastScheduleTime (or creation), ignoring startingDeadlineSeconds
            last_s = status.get("lastScheduleTime")
            base = _wall(epoch, parse_time(epoch, last_s)) if last_s else created
            recent, _ = most_recent_schedule(sched, base, now)
            return _virtual(epoch, sched.next(recent or base)) + NEXT_SCHEDULE_DELTA - now_v

        try:
            scheduled, missed = most_recent_schedule(sched, earliest, now)
        except ValueError as exc:
            self.recorder.event(cj, WARNING, "InvalidSchedule", f"invalid schedule: {schedule} : {exc}")
            return None, changed
        if scheduled is None:
            return next_run(), changed
        if missed > MANY_MISSED:
            self.recorder.event(cj, WARNING, "TooManyMissedTimes",
                                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                                "or check clock skew")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self.recorder.event(cj, WARNING, "MissSchedule",
                                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}")
            return next_run(), changed
        name = job_name(meta.get("name", ""), scheduled)
        sched_stamp = api.timestamp(_virtual(epoch, scheduled))
        if any(a.get("name") == name for a in active) or status.get("lastScheduleTime") == sched_stamp:
            return next_run(), changed
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            self.recorder.event(cj, NORMAL, "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is "
                                "Forbid")
            return next_run(), changed
        if policy == "Replace":
            for ref in list(active):
                if self._delete_job(cj, ref.get("namespace"), ref.get("name"), ref.get("uid")):
                    active = [a for a in active if a.get("uid") != ref.get("uid")]
                    changed = True
            status["active"] = active
        body = job_from_template(cj, scheduled.astimezone(sched.tz))
        try:
            job = api.create("jobs.batch", body, namespace=meta.get("namespace"), ctx=self.ctx,
                             field_validation="Ignore")
            self.recorder.event(cj, NORMAL, "SuccessfulCreate", f"Created job {name}")
        except errors.AlreadyExists:
            job = api.get("jobs.batch", name, namespace=meta.get("namespace"), ctx=self.ctx)
            ref = controller_of(job)
            if ref is None or ref.get("uid") != meta.get("uid") or \
                    any(a.get("uid") == job["metadata"].get("uid") for a in active):
                return None, changed
        except errors.StatusError as exc:
            self.recorder.event(cj, WARNING, "FailedCreate", f"Error creating job: {exc}")
            raise
        status["active"] = active + [_job_ref(job)]
        status["lastScheduleTime"] = sched_stamp
        return next_run(), True

    def _delete_job(self, cj: Obj, namespace: str, name: str, uid: str | None) -> bool:
        """Upstream's ``deleteJob``: delete with Background propagation; ``SuccessfulDelete``
        ``Deleted job <name>``, or on any error Warning ``FailedDelete`` ``Deleted job: <err>``."""
        try:
            out = self.api.delete("jobs.batch", name, namespace=namespace, ctx=self.ctx,
                                  propagation_policy="Background")
        except errors.StatusError as exc:
            self.recorder.event(cj, WARNING, "FailedDelete", f"Deleted job: {exc}")
            return False
        if uid and not (out.get("metadata") or {}).get("deletionTimestamp"):
            self._deleted_jobs[uid] = None  # gone: the informer's copy is stale until its DELETE arrives
        self.recorder.event(cj, NORMAL, "SuccessfulDelete", f"Deleted job {name}")
        return True

    def _cleanup(self, cj: Obj, status: Obj, jobs: list[Obj]) -> bool:
        """Delete the oldest finished Jobs beyond the history limits (by start time)."""
        spec = cj.get("spec") or {}
        changed = False
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit")),
                            ("Failed", spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            done = sorted((j for j in jobs if _finished_type(j) == kind), key=_start_time_key)
            for j in done[:max(0, len(done) - int(limit))]:
                jm = j["metadata"]
                if self._delete_job(cj, jm.get("namespace"), jm.get("name"), jm.get("uid")):
                    status["active"] = [a for a in status.get("active") or [] if a.get("uid") != jm.get("uid")]
                    changed = True
        return changed


def _owner_index(job: Obj) -> list[str]:
    ref = controller_of(job)
    return [ref.get("uid", "")] if ref is not None and ref.get("kind") == "CronJob" else []

