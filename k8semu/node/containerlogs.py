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
"""

from __future__ import annotations

from urllib.parse import quote

from typing import Any, Mapping

from ..api import errors
from ..api.humanize import parse_timestamp

__all__ = ["log_window"]

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

    def window(term: Mapping[str, Any]) -> tuple[float, float]:
        return seconds(term.get("startedAt")), seconds(term.get("finishedAt"))

    last = (st.get("lastState") or {}).get("terminated")
    state = st.get("state") or {}
    if previous:
        if not last or not last.get("containerID"):
            raise errors.BadRequest(f'previous terminated container "{cname}" in pod "{name}" not found')
        return window(last)
    if "running" in state:
        return seconds((state["running"] or {}).get("startedAt")), None
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
