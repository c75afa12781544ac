"""What a container gets besides its spec: its environment and its volume mounts.

The kubelet makes both when it creates a container (:func:`container_environment`,
:class:`~k8semu.node.volumes.PodVolumes`); its behaviour program
(:mod:`k8semu.node.behaviour`) then runs with them, so ``printenv``, ``$(VAR)``
in ``command``/``args``, ``cat /etc/config/key`` and files shared through an
``emptyDir`` behave as in a real container.

Everything that *replays* a container later — ``k8semu logs``, the logs and
port-forward endpoints of ``k8semu serve``, a restarted kubelet re-attaching a
running container — must run the program with the same inputs, or it would
print other output. :func:`replay_program` rebuilds them from the event log:
it finds the pod status write that first recorded the container's start
(``startedAt``), reads the cluster as it was just before that write (the
kubelet made the environment then), and re-runs the init containers that
completed before the container started, so an ``emptyDir`` holds what they
wrote. What it cannot rebuild: files written concurrently by other running
containers (sidecars), by earlier runs of a restarted container, or by other
pods through a ``hostPath``; history compacted away (the current state is
used then).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..api import errors
from ..api.meta import parse_time
from ..api.tokens import token_signer
from . import behaviour
from .behaviour import Mount, ResolvedEnv
from .envvars import APISource, EnvError, Source, make_environment, pod_hostname
from .volumes import DownwardContext, HostFiles, PodVolumes, container_mounts

__all__ = ["container_environment", "start_record", "replay_inputs", "replay_program", "host_files_for"]

Obj = dict[str, Any]


def container_environment(pod: Mapping[str, Any], container: Mapping[str, Any], source: Source, *,
                          pod_ips: list[str] | None = None, host_ips: list[str] | None = None,
                          allocatable: Mapping[str, Any] | None = None) -> ResolvedEnv:
    """The container's whole environment, as its processes see it: the kubelet's variables
    (:func:`k8semu.node.envvars.make_environment`) with what the runtime adds: ``HOSTNAME`` (from
    the pod's hostname; ``$(HOSTNAME)`` in ``command``/``args`` stays as written, as upstream),
    the image's ``Env`` under the container's variables, ``TERM`` for a ``tty`` and runc's ``HOME``
    for the container's (else the pod's) ``runAsUser`` (:func:`k8semu.node.behaviour.process_env`).

    Raises:
        EnvError: as :func:`~k8semu.node.envvars.make_environment` (CreateContainerConfigError).
    """
    kubelet = make_environment(pod, container, source, pod_ips=pod_ips, host_ips=host_ips, allocatable=allocatable)
    # containerd's HOSTNAME is not known to $(VAR) expansion of command/args
    runtime = frozenset() if "HOSTNAME" in kubelet else frozenset({"HOSTNAME"})
    env = ResolvedEnv({"HOSTNAME": pod_hostname(pod)} | kubelet.own, kubelet.shared, runtime)
    return behaviour.process_env(container, env, pod=pod)


def host_files_for(node: Mapping[str, Any] | None, node_name: str) -> HostFiles:
    """A fresh :class:`HostFiles` for the node (its ``machineID`` from the Node's ``nodeInfo``)."""
    info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
    return HostFiles(node_name, str(info.get("machineID") or ""))


def _statuses(pod: Mapping[str, Any]) -> list[Obj]:
    st = pod.get("status") or {}
    return list(st.get("initContainerStatuses") or []) + list(st.get("containerStatuses") or [])


def _started_in(status: Mapping[str, Any], name: str, stamp: str) -> bool:
    for cs in _statuses({"status": status}):
        if cs.get("name") != name:
            continue
        for state in (cs.get("state") or {}, cs.get("lastState") or {}):
            for kind in ("running", "terminated"):
                if (state.get(kind) or {}).get("startedAt") == stamp:
                    return True
    return False


def start_record(api: Any, pod: Mapping[str, Any], name: str, started: float) -> Any:
    """The first retained write of ``pod`` whose status shows container ``name`` started at
    ``started`` (virtual seconds, as ``startedAt`` records it), or None."""
    log = getattr(api, "log", None)
    if log is None:
        return None
    meta = pod.get("metadata") or {}
    try:
        key = api.resource("pods").key(meta.get("namespace") or "default", meta.get("name", ""))
        stamp = api.timestamp(started)
    except Exception:  # noqa: BLE001 - an API without these cannot replay history
        return None
    uid = meta.get("uid")
    for rec in log.history(key):
        if not str(rec.actor).startswith("kubelet/"):
            continue
        obj = rec.object
        if (obj.get("metadata") or {}).get("uid") != uid:
            continue
        if _started_in(obj.get("status") or {}, name, stamp):
            return rec
    return None


class _Replay:
    """The cluster as one container of one pod saw it when it was created."""

    def __init__(self, api: Any, pod: Mapping[str, Any], name: str, started: float) -> None:
        rec = start_record(api, pod, name, started)
        self.pod: Mapping[str, Any] = rec.object if rec is not None else pod
        self.source = APISource(api, revision=rec.revision - 1 if rec is not None else None)
        st = self.pod.get("status") or {}
        node_name = str((self.pod.get("spec") or {}).get("nodeName") or "")
        node = self.source.node(node_name) if node_name else None
        self.node_name = node_name
        self.node = node
        self.ctx = DownwardContext(
            [ip.get("ip") for ip in st.get("podIPs") or [] if ip.get("ip")] or ([st["podIP"]] if st.get("podIP") else []),
            [ip.get("ip") for ip in st.get("hostIPs") or [] if ip.get("ip")] or ([st["hostIP"]] if st.get("hostIP") else []),
            ((node or {}).get("status") or {}).get("allocatable") or {}, node_name, token_signer(api))

    def env(self, container: Mapping[str, Any]) -> ResolvedEnv | None:
        try:
            return container_environment(self.pod, container, self.source, pod_ips=self.ctx.pod_ips,
                                         host_ips=self.ctx.host_ips, allocatable=self.ctx.allocatable)
        except EnvError:
            return None


def _earlier_init_runs(pod: Mapping[str, Any], container: Mapping[str, Any], started: float,
                       epoch: Any) -> list[tuple[Obj, float, float]]:
    """(spec, started, finished) of the non-sidecar init containers before ``container`` that
    completed before it started (their last recorded run)."""
    spec = pod.get("spec") or {}
    by_name = {cs.get("name"): cs for cs in (pod.get("status") or {}).get("initContainerStatuses") or []}
    out = []
    for c in spec.get("initContainers") or []:
        if c is container or c.get("name") == container.get("name"):
            break
        if c.get("restartPolicy") == "Always":
            continue
        cs = by_name.get(c.get("name")) or {}
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if not term or not term.get("startedAt") or not term.get("finishedAt"):
            continue
        t0, t1 = parse_time(epoch, term["startedAt"]), parse_time(epoch, term["finishedAt"])
        if t1 <= started + 1e-9:
            out.append((c, t0, t1))
    return out


def replay_inputs(api: Any, pod: Mapping[str, Any], container: Mapping[str, Any],
                  started: float) -> tuple[ResolvedEnv | None, list[Mount]]:
    """The environment (None when it cannot be made) and mounts ``container`` of ``pod`` had
    when it started at ``started`` (see the module docstring)."""
    rep = _Replay(api, pod, str(container.get("name") or ""), started)
    host = host_files_for(rep.node, rep.node_name)
    vols = PodVolumes(rep.pod, host)
    vols.refresh(rep.pod, rep.source, rep.ctx)
    for v in vols.volumes:  # what set-up creates on the node (FileOrCreate, DirectoryOrCreate)
        hp = v.get("hostPath")
        if hp is not None and host.check(str(hp.get("path") or "/"), hp.get("type")) is None:
            host.set_up(str(hp.get("path") or "/"), hp.get("type"))
    epoch = getattr(api, "epoch", None)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if epoch is not None:
        for init, t0, t1 in _earlier_init_runs(pod, container, started, epoch):
            init_env = _Replay(api, pod, str(init.get("name") or ""), t0).env(init)
            try:
                program = behaviour.build_program(init, annotations, init_env,
                                                  mounts=container_mounts(rep.pod, init, vols.stores, host, init_env))
            except ValueError:
                continue
            program.start(t0, wall_clock=lambda t: epoch + timedelta(seconds=t)).advance(t1)
    env = rep.env(container)
    return env, container_mounts(rep.pod, container, vols.stores, host, env)


def replay_program(api: Any, pod: Mapping[str, Any], container: Mapping[str, Any], started: float) -> Any:
    """:func:`k8semu.node.behaviour.build_program` for ``container`` of ``pod`` with the inputs it
    had when it started at ``started`` (virtual seconds).

    Raises:
        ValueError: as ``build_program`` (an invalid behaviour script).
    """
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        env, mounts = replay_inputs(api, pod, container, started)
    except errors.StatusError:  # e.g. the reader may not read Secrets: run without the inputs
        env, mounts = None, []
    return behaviour.build_program(container, annotations, env, mounts=mounts)
