"""Which run of a container ``logs`` reads: the kubelet's choice, shared by ``k8semu logs`` and ``serve``.

Mirrors upstream's ``Kubelet.validateContainerLogStatus`` (pkg/kubelet/kubelet_pods.go),
which picks the container instance whose log file is served from the container's
status, in this order:

- ``previous``: ``lastState.terminated`` (with a container ID), else
  ``previous terminated container "c" in pod "p" not found``;
- ``state.running``: the running instance;
- ``state.terminated``: that instance; one with no container ID (the next one
  never started) falls back to ``lastState.terminated``, else ``container "c"
  in pod "p" is terminated``;
- ``lastState.terminated``: a container waiting to be restarted (``CrashLoopBackOff``,
  or any other waiting reason after it once ran) serves its last run's log;
- ``state.waiting`` with no earlier run: ``container "c" in pod "p" is waiting
  to start: <reason>`` — ``image can't be pulled`` for ``ErrImagePull``,
  ``trying and failing to pull image`` for ``ImagePullBackOff``, the reason
  itself otherwise (``ContainerCreating``, ``PodInitializing``,
  ``CreateContainerConfigError``, …);
- a status with no state at all: ``… is waiting to start - no logs yet``;
- no status for the container: ``container "c" in pod "p" is not available``.

Before the kubelet is asked, kube-apiserver's ``LogLocation``
(pkg/registry/core/pod/strategy.go) answers a pod with no ``spec.nodeName``
with an empty location, which its ``LocationStreamer`` serves as an empty body
(200, no lines): :func:`log_window` returns ``None`` then.

The query's ``PodLogOptions`` (:func:`log_options`) are validated as kube-apiserver's
``ValidatePodLogOptions`` does, then applied as the kubelet's ``ReadLogs``: ``tailLines``
first, then ``sinceSeconds``/``sinceTime`` (lines stamped at or after ``now - sinceSeconds``
in the cluster's virtual time), then ``limitBytes`` cuts the output (timestamps included;
a followed log ends once the budget is spent) (:class:`LogOptions`, :class:`LimitedWriter`).
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import quote

import attrs

from ..api import errors
from ..api.humanize import parse_timestamp

__all__ = ["log_window", "log_run", "kubelet_log_url", "log_options", "LogOptions"]

# upstream's images.ErrImagePull / ErrImagePullBackOff and the kubelet's words for them
_PULL_MESSAGES = {"ErrImagePull": "image can't be pulled",
                  "ImagePullBackOff": "trying and failing to pull image"}


def log_window(pod: Mapping[str, Any], cname: str, previous: bool,
               epoch: Any) -> tuple[float, float | None] | None:
    """``(start, end)`` in virtual seconds (from ``epoch``) of the run whose log is served.

    ``end`` is ``None`` while that run is still running (the log grows until
    now). ``None`` for a pod not yet bound to a node (the API server's empty
    log). ``cname`` must already be one of the pod's containers (the API
    server's ``container x is not valid for pod y`` comes first).

    Raises:
        errors.BadRequest: the kubelet's refusals listed in the module docstring,
            with upstream's messages.
    """
    run = log_run(pod, cname, previous, epoch)
    return None if run is None else (run[0], run[1])


def log_run(pod: Mapping[str, Any], cname: str, previous: bool,
            epoch: Any) -> tuple[float, float | None, str] | None:
    """:func:`log_window` with the run's container ID (``containerd://…``, "" when unknown) third."""
    name = pod["metadata"]["name"]
    if not (pod.get("spec") or {}).get("nodeName"):
        return None
    status = pod.get("status") or {}
    statuses = (list(status.get("containerStatuses") or []) + list(status.get("initContainerStatuses") or [])
                + list(status.get("ephemeralContainerStatuses") or []))
    st = next((s for s in statuses if s.get("name") == cname), None)
    if st is None:
        raise errors.BadRequest(f'container "{cname}" in pod "{name}" is not available')

    def seconds(ts: str | None) -> float:
        t = parse_timestamp(ts)
        return 0.0 if t is None else (t - epoch).total_seconds()

    def window(term: Mapping[str, Any]) -> tuple[float, float, str]:
        return seconds(term.get("startedAt")), seconds(term.get("finishedAt")), str(term.get("containerID") or "")

    last = (st.get("lastState") or {}).get("terminated")
    state = st.get("state") or {}
    if previous:
        if not last or not last.get("containerID"):
            raise errors.BadRequest(f'previous terminated container "{cname}" in pod "{name}" not found')
        return window(last)
    if "running" in state:
        return seconds((state["running"] or {}).get("startedAt")), None, str(st.get("containerID") or "")
    if "terminated" in state:
        term = state["terminated"] or {}
        if term.get("containerID"):
            return window(term)
        if last and last.get("containerID"):
            return window(last)
        raise errors.BadRequest(f'container "{cname}" in pod "{name}" is terminated')
    if last:
        if not last.get("containerID"):
            raise errors.BadRequest(f'container "{cname}" in pod "{name}" is terminated')
        return window(last)
    if "waiting" in state:
        reason = (state["waiting"] or {}).get("reason") or ""
        raise errors.BadRequest(
            f'container "{cname}" in pod "{name}" is waiting to start: {_PULL_MESSAGES.get(reason, reason)}')
    raise errors.BadRequest(f'container "{cname}" in pod "{name}" is waiting to start - no logs yet')


def kubelet_log_url(pod: Mapping[str, Any], container: str, params: Mapping[str, str]) -> str:
    """The kubelet URL kube-apiserver proxies ``pods/log`` to (``LogLocation``):
    ``https://NODE:10250/containerLogs/NS/POD/CONTAINER`` with ``params`` (``follow``,
    ``previous``, ``tailLines``, ``timestamps``…) encoded in key order, as Go's ``url.Values``."""
    meta = pod.get("metadata") or {}
    url = (f"https://{(pod.get('spec') or {}).get('nodeName')}:10250/containerLogs/"
           f"{meta.get('namespace')}/{meta.get('name')}/{container}")
    if params:
        url += "?" + "&".join(f"{k}={quote(str(params[k]), safe='')}" for k in sorted(params))
    return url


@attrs.frozen
class LogOptions:
    """The kubelet's ``LogOptions`` (pkg/kubelet/kuberuntime/logs ``NewLogOptions``) from a
    ``pods/log`` query: ``tail`` lines (None: all), ``since`` in virtual seconds (None: from the
    start; lines stamped at or after it are kept), ``limit`` bytes (None: no limit)."""

    tail: int | None = None
    since: float | None = None
    limit: int | None = None

    def select(self, lines: list[tuple[float, bytes]]) -> list[bytes]:
        """The lines (virtual time, encoded line) the kubelet writes, in order, as ``ReadLogs``:
        the last ``tail`` of them, then those not before ``since``; :class:`LimitedWriter` cuts."""
        if self.tail is not None:
            lines = lines[len(lines) - self.tail:] if self.tail > 0 else []
        if self.since is not None:
            lines = [(t, b) for t, b in lines if t >= self.since]
        return [b for _, b in lines]


class LimitedWriter:
    """The kubelet's ``logWriter`` byte budget (``limitBytes``): a line longer than what is left is
    cut, and nothing is written once the budget is spent (:attr:`done`)."""

    def __init__(self, limit: int | None) -> None:
        self.remain = limit

    @property
    def done(self) -> bool:
        return self.remain is not None and self.remain <= 0

    def cut(self, lines: list[bytes]) -> bytes:
        data = b"".join(lines)
        if self.remain is None:
            return data
        data = data[:max(self.remain, 0)]
        self.remain -= len(data)
        return data


_RFC3339 = "2006-01-02T15:04:05Z07:00"


def log_options(query: Mapping[str, str], name: str, now: float, epoch: Any) -> LogOptions:
    """Decode and validate ``PodLogOptions`` from a ``pods/log`` query, as kube-apiserver does
    (``ValidatePodLogOptions``, pkg/apis/core/validation), then make the kubelet's options at
    virtual time ``now`` (``NewLogOptions``: ``since`` is ``now - sinceSeconds``, or ``sinceTime``).

    Raises:
        errors.BadRequest: a parameter that does not decode (``sinceSeconds=x``, a ``sinceTime``
            that is not RFC 3339).
        errors.Invalid: 422 ``PodLogOptions "NAME" is invalid: …``: ``tailLines: Invalid value:
            -1: must be greater than or equal to 0``, ``limitBytes: Invalid value: 0: must be
            greater than 0``, ``sinceSeconds: Invalid value: 0: must be greater than 0``, and
            ``: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified``.
    """
    from datetime import datetime

    def integer(key: str) -> int | None:
        v = query.get(key)
        if v in (None, ""):
            return None
        try:
            return int(v)
        except ValueError:
            raise errors.BadRequest(f'{key}: Invalid value: "{v}": must be an integer') from None

    tail, limit, since_seconds = integer("tailLines"), integer("limitBytes"), integer("sinceSeconds")
    since_time = None
    raw = query.get("sinceTime")
    if raw:
        try:
            since_time = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
            if since_time.tzinfo is None or "T" not in raw.upper():
                raise ValueError(raw)
        except ValueError:
            raise errors.BadRequest(f'parsing time "{raw}" as "{_RFC3339}": cannot parse "{raw}" as '
                                    f'"2006"') from None
    errs: list[errors.FieldError] = []
    if tail is not None and tail < 0:
        errs.append(errors.FieldError.invalid("tailLines", tail, "must be greater than or equal to 0"))
    if limit is not None and limit < 1:
        errs.append(errors.FieldError.invalid("limitBytes", limit, "must be greater than 0"))
    if since_seconds is not None and since_time is not None:
        errs.append(errors.FieldError.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif since_seconds is not None and since_seconds < 1:
        errs.append(errors.FieldError.invalid("sinceSeconds", since_seconds, "must be greater than 0"))
    if errs:
        raise errors.Invalid("PodLogOptions", "", name, errs)
    since = None
    if since_seconds is not None:
        since = now - since_seconds
    if since_time is not None:
        st = (since_time - epoch).total_seconds()
        since = st if since is None else max(since, st)
    return LogOptions(tail, since, limit)
