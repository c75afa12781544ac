"""The kubelet of one node: registration, heartbeats, and the pod lifecycle.

One :class:`Kubelet` component per node (actor ``kubelet/<node>``, user
``system:node:<node>``). It mirrors upstream's kubelet (v1.33):

**Node.** A fresh kubelet process registers its Node on start (capacity =
allocatable, as kind nodes show; labels, taints, addresses, ``nodeInfo`` with
IDs derived from the node name; MemoryPressure/DiskPressure/PIDPressure False
and Ready True with upstream's reasons and messages), creating it if missing,
and its Lease in ``kube-node-lease``. As upstream (``registerWithAPIServer``
stops once ``registrationCompleted``) it registers once per process: if the
Node is deleted later, status updates fail with "not found" and the Node is
not recreated, nor its Lease (the Lease's owner reference needs the Node;
the garbage collector deletes the old one with the Node), until the kubelet
restarts. A kubelet built with ``fresh=False`` carries on the kubelet of an
earlier session of the same cluster (:mod:`k8semu.sim.components`): it
creates no Node and records no ``Starting`` event. A separate heartbeat task
renews the Lease every 10 s (``renewTime`` as MicroTime,
``leaseDurationSeconds: 40``) and re-posts the node status when it changed
(e.g. new images) or every 5 minutes (``nodeStatusReportFrequency``).
Heartbeats are not "significant work" for :meth:`Runtime.settle`.

**Pods.** The kubelet watches pods with ``spec.nodeName=<node>``. Each pod has
a :class:`PodWorker` that follows the kubelet's pod sync
(``SyncPod``/``computePodActions``), on virtual time:

1. admission (``OutOfcpu`` / ``OutOfmemory`` / ``OutOfpods`` → phase Failed);
2. the pod's volumes (:mod:`k8semu.node.volumes`): a ConfigMap/Secret that
   does not exist keeps the pod in ContainerCreating, with ``FailedMount``
   events and retries on the volume manager's back-off;
3. the sandbox and an IP from the node's podCIDR (:mod:`k8semu.node.cni`);
4. init containers in order (each must exit 0; sidecars — init containers
   with ``restartPolicy: Always`` — start in order and are not waited for);
5. the regular containers; each start pulls per ``imagePullPolicy`` through
   the node's serialized puller and image cache, makes the container's
   environment (:mod:`k8semu.node.envvars`; a missing ConfigMap, Secret or key
   is ``CreateContainerConfigError`` with a ``Failed`` event, retried every
   10 s) and mounts (the pod's volume contents, shared by its containers),
   then Created/Started; a ``postStart`` exec hook runs in the container
   (:mod:`k8semu.node.behaviour`) and, when it fails, gives a
   ``FailedPostStartHook`` event and the container is killed (``Killing:
   FailedPostStartHook``) and restarted (deviation: the status shows the
   container running while a slow hook still runs);
6. probes (startup, liveness, readiness; an exec probe's output is the text
   of its ``Unhealthy`` event) on a ticker per container, created
   with the pod worker (first tick at admission, then every ``periodSeconds``;
   ticks before ``startedAt + initialDelaySeconds`` are skipped);
7. restarts per ``restartPolicy`` with the CrashLoopBackOff back-off
   (``flowcontrol.Backoff``: 10 s doubling to 300 s, keyed on the container's
   finish time; the first restart is immediate; reset when a container ran
   for 10 minutes) and image-pull back-off the same way;
8. status: one ``pods/status`` update per change, computed by
   :mod:`k8semu.node.status`;
9. in-place resize (``pods/NAME/resize``, :mod:`k8semu.api.podresize`), as the 1.33
   kubelet's ``handlePodResourcesResize``/``canResizePod``: when a container's ``resources``
   in the spec differ from what the kubelet allocated, a resize needing more than the node's
   allocatable is ``PodResizePending`` reason ``Infeasible`` (``Node didn't have enough
   capacity: cpu, requested: 5000, capacity: 3800``: millicores, or bytes for memory), one
   that does not fit beside the other pods' allocations ``PodResizePending`` reason
   ``Deferred`` (admission's message, ``Node didn't have enough resource: cpu, requested:
   …, used: …, capacity: …``) and is retried when the pods' allocations change; otherwise it
   is allocated and actuated, with
   ``PodResizeInProgress`` until the runtime applied it (:data:`RESIZE_ACTUATION_DELAY`
   virtual seconds, or the restart of a container whose ``resizePolicy`` says
   ``RestartContainer`` for a changed resource: ``Killing`` ``Container app resize requires
   restart``, restarted at once, ``restartCount`` + 1); then ``containerStatuses[].resources``
   shows the new values. 1.33 records no resize events. Every running resizable container's
   status carries ``resources`` (the applied requests and limits), as 1.33's; its
   ``allocatedResources`` stays unset (``InPlacePodVerticalScalingAllocatedStatus`` is off);
10. graceful termination on ``deletionTimestamp``: ``Killing`` events,
   SIGTERM, SIGKILL when the grace period ends, sidecars last; then the
   terminal status, ``delete(grace_period_seconds=0)`` and the IP released.

**Static pods.** The control-plane node's kubelet runs kubeadm's static
pods (:mod:`k8semu.node.static_pods`), creating their mirror pods in the API;
``hostNetwork`` pods get the node's address instead of a CNI one.

**Restarts.** A fresh kubelet rebuilds its runtime state from the pods'
status and its Node's image list (as the real one does from CRI): running
containers keep running from their recorded ``startedAt``; what they did
while the kubelet was down (exits) is replayed at the times it happened.

Settle: :meth:`Kubelet.next_wakeup` reports only predicted state changes
(a container that will exit, a pull that will finish, a back-off expiry, a
grace period end, a probe tick that may flip a result), never heartbeats or
probe ticks that only confirm the current result. The kubelet's own loop
wakes at the earliest time any worker has scheduled, significant or not
(:meth:`PodWorker.next_due`, remembered per worker until the worker changes,
so a pass costs nothing for the pods that have nothing due).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
import trio

from ..api import errors
from ..api.auth import node as node_user
from ..api.meta import format_micro_time, parse_time
from ..api.pods import qos_class
from ..api.podresize import semantic_equal
from ..api.quantity import bytes_value, cpu_millis
from ..api.tokens import token_signer
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler
from . import inputs
from . import status as podstatus
from . import volumes as podvolumes
from .cni import HostLocalIPAM, RangeFull
from .envvars import APISource, EnvError
from .runtime import Container, ContainerRuntime, Image, PullOutcome, normalize_image

__all__ = ["Kubelet", "PodWorker", "KUBELET_VERSION", "CONTAINER_RUNTIME_VERSION",
           "LEASE_DURATION", "LEASE_RENEW_INTERVAL", "NODE_STATUS_REPORT_FREQUENCY",
           "BACKOFF_INITIAL", "BACKOFF_MAX", "node_object"]

Obj = dict[str, Any]

KUBELET_VERSION = "v1.33.1"
CONTAINER_RUNTIME_VERSION = "containerd://2.0.3"
OS_IMAGE = "Debian GNU/Linux 12 (bookworm)"
KERNEL_VERSION = "6.8.0-1021-azure"
LEASE_DURATION = 40
LEASE_RENEW_INTERVAL = 10.0
NODE_STATUS_UPDATE_FREQUENCY = 10.0
NODE_STATUS_REPORT_FREQUENCY = 300.0
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
IMAGE_BACKOFF_RESYNC = 1.0  # the pod worker's quick retry after ErrImagePull shows ImagePullBackOff
#: the pod worker's ``backOffPeriod``: a sync that failed (CreateContainerConfigError) is retried after it
CONFIG_ERROR_RESYNC = podvolumes.POD_WORKER_BACKOFF
#: virtual seconds from a resize's allocation to the runtime having applied it in place (the
#: kubelet's next look at the runtime, a PLEG relist period): ``PodResizeInProgress`` meanwhile
RESIZE_ACTUATION_DELAY = 1.0
_RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")
_EPS = 1e-9
_MAX_SPINS = 32
_STALE = object()  # PodWorker.next_due: not computed since the worker last changed
# a Slot's kind -> the pod spec list its container is in (for events' fieldPath)
_SPEC_LISTS = {"init": "initContainers", "sidecar": "initContainers", "regular": "containers",
               "ephemeral": "ephemeralContainers"}


# --------------------------------------------------------------------------- node object

def _ki(q: str) -> str:
    return f"{bytes_value(q) // 1024}Ki"


def _hex_id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]


def _uuid(*parts: str) -> str:
    h = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _node_conditions(stamp: str, old: list[Obj] | None = None) -> list[Obj]:
    want = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    prev = {c.get("type"): c for c in old or ()}
    out = []
    for type_, st, reason, msg in want:
        p = prev.get(type_)
        ltt = p["lastTransitionTime"] if p and p.get("status") == st and p.get("lastTransitionTime") else stamp
        out.append({"type": type_, "status": st, "lastHeartbeatTime": stamp, "lastTransitionTime": ltt,
                    "reason": reason, "message": msg})
    return out


def node_object(cfg: Any, stamp: str, images: list[Obj] | None = None) -> Obj:
    """The Node a kubelet registers for node config ``cfg`` (a
    :class:`~k8semu.sim.config.NodeConfig`) at time ``stamp`` (RFC 3339)."""
    cap = {
        "cpu": str(cfg.cpu),
        "ephemeral-storage": _ki(cfg.ephemeral_storage),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": _ki(cfg.memory),
        "pods": str(cfg.pods),
    }
    spec: Obj = {}
    taints = cfg.node_taints()
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": cfg.name,
            "labels": cfg.node_labels(),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
        "status": {
            "capacity": cap,
            "allocatable": dict(cap),
            "conditions": _node_conditions(stamp),
            "addresses": [{"type": "InternalIP", "address": cfg.internal_ip},
                          {"type": "Hostname", "address": cfg.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _hex_id("machine", cfg.name),
                "systemUUID": _uuid("system", cfg.name),
                "bootID": _uuid("boot", cfg.name),
                "kernelVersion": KERNEL_VERSION,
                "osImage": OS_IMAGE,
                "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",  # deprecated, no longer reported; Go still encodes the ""
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": list(images or []),
        },
    }


# --------------------------------------------------------------------------- back-off

@attrs.define
class Backoff:
    """One entry of client-go's ``flowcontrol.Backoff`` (no jitter): the current
    delay and when it was last updated. Expires (resets to the initial delay)
    when the event comes more than twice the maximum after the last update."""

    delay: float = 0.0
    last_update: float = -1e18

    def next(self, event_time: float, now: float) -> None:
        if self.delay == 0.0 or event_time - self.last_update > 2 * BACKOFF_MAX:
            self.delay = BACKOFF_INITIAL
        else:
            self.delay = min(self.delay * 2, BACKOFF_MAX)
        self.last_update = now

    def in_backoff_since(self, event_time: float, now: float) -> bool:
        if self.delay == 0.0 or event_time - self.last_update > 2 * BACKOFF_MAX:
            return False
        return now - event_time < self.delay - _EPS

    def in_backoff_since_update(self, now: float) -> bool:
        return self.delay > 0 and now - self.last_update < self.delay - _EPS


def _go_duration(seconds: float) -> str:
    """Go's ``time.Duration`` string for whole/fractional seconds: ``10s``, ``5m0s``, ``2.5s``."""
    s = round(seconds, 9)
    if s < 60:
        if s == int(s):
            return f"{int(s)}s"
        if s < 1:
            return f"{round(s * 1000, 6):g}ms"
        return f"{s:g}s"
    m, sec = divmod(int(s), 60)
    h, m = divmod(m, 60)
    rest = s - int(s)
    secs = f"{sec + rest:g}s"
    return f"{h}h{m}m{secs}" if h else f"{m}m{secs}"


# --------------------------------------------------------------------------- probes

_PROBE_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1,
                   "successThreshold": 1, "failureThreshold": 3}


@attrs.define
class ProbeWorker:
    """A prober worker for one (container, probe kind): its ticker and result.

    ``result``: True (Success) / False (Failure) / None (Unknown, startup's initial).
    """

    kind: str
    spec: Obj
    next_at: float
    result: bool | None
    streak_value: bool | None = None
    streak: int = 0

    def param(self, key: str) -> int:
        v = self.spec.get(key)
        return _PROBE_DEFAULTS[key] if v is None else int(v)


def _initial_result(kind: str) -> bool | None:
    return {"readiness": False, "liveness": True, "startup": None}[kind]


def _probe_message(kind: str, probe: Obj, pod_ip: str, output: str = "") -> str:
    """The text after ``… probe failed: ``; for an ``exec`` probe the command's output as the
    runtime returned it (upstream's exec prober puts it in the event as it is)."""
    if "exec" in probe:
        return output
    if "httpGet" in probe:
        return "HTTP probe failed with statuscode: 503"
    if "tcpSocket" in probe:
        port = probe["tcpSocket"].get("port")
        return f"dial tcp {pod_ip}:{port}: connect: connection refused"
    if "grpc" in probe:
        return 'service unhealthy (responded with "NOT_SERVING")'
    return ""


# --------------------------------------------------------------------------- pod worker

@attrs.define(eq=False)
class Slot:
    """One container of the pod across its restarts (kind: init / sidecar / regular /
    ephemeral)."""

    spec: Obj
    kind: str
    restart_count: int = 0
    current: Container | None = None
    last_term: Obj | None = None
    waiting: tuple[str, str] | None = None
    pull: PullOutcome | None = None
    pull_backoff: Backoff = attrs.field(factory=Backoff)
    crash_backoff: Backoff = attrs.field(factory=Backoff)
    backoff_reported: float | None = None
    image: Image | None = None
    done: bool = False
    started: bool = False
    ready: bool = False
    probes: dict[str, ProbeWorker] = attrs.field(factory=dict)
    resync_at: float | None = None
    kill_at: float | None = None
    #: killed for a resize whose ``resizePolicy`` is ``RestartContainer``: started again at once
    resize_restart: bool = False

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def is_init(self) -> bool:
        """An init container, restartable (a sidecar) or not."""
        return self.kind in ("init", "sidecar")

    @property
    def field_path(self) -> str:
        return f"spec.{_SPEC_LISTS[self.kind]}{{{self.name}}}"


class PodWorker:
    """The lifecycle of one pod on this node (see module docstring)."""

    def __init__(self, kubelet: "Kubelet", pod: Obj, now: float) -> None:
        self.k = kubelet
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.created = now
        spec = pod.get("spec") or {}
        self.slots: list[Slot] = []
        for c in spec.get("initContainers") or ():
            self.slots.append(Slot(c, "sidecar" if podstatus.is_sidecar(c) else "init"))
        for c in spec.get("containers") or ():
            self.slots.append(Slot(c, "regular"))
        self.add_ephemeral()
        self.admitted = False
        self.rejected = False
        self.ip: str | None = None
        self.sandbox = False
        self.start_time: float | None = None
        self.last_status: Obj | None = None
        self.final = False          # terminal phase written; nothing more to run
        self.failed_init = False
        self.terminating = False
        self.kill_deadline: float | None = None
        self.sidecars_signaled = False
        self.gone = False           # deleted from the API
        self._probe_ticker_origin = now
        # a claim bound to a hostPath PV (local-path's) is that directory of the node
        self.vols = podvolumes.PodVolumes(podvolumes.with_claims_resolved(pod, kubelet.api), kubelet.host_files, now)
        #: :meth:`next_due`'s answer while the worker's state is unchanged (``_STALE``: recompute)
        self._next_due: float | None | object = _STALE
        #: (``spec`` or allocation object, requests) of :meth:`requests`
        self._requests: tuple[Any, dict[str, int]] | None = None
        #: in-place resize: container name -> the ``resources`` the kubelet allocated (None
        #: before admission), and -> what the runtime applied to its running instance
        self.allocated: dict[str, Obj] | None = None
        self.actual: dict[str, Obj] = {}
        #: (reason, message, since) of ``PodResizePending``; since when ``PodResizeInProgress``
        self.resize_pending: tuple[str, str, float] | None = None
        self.resize_since: float | None = None
        #: when the runtime has applied an accepted resize in place
        self.actuate_at: float | None = None

    def add_ephemeral(self) -> None:
        """Give each ephemeral container of the pod's spec that has none a slot (``kubectl
        debug`` adds them to a running pod through ``pods/NAME/ephemeralcontainers``)."""
        have = {s.name for s in self.slots if s.kind == "ephemeral"}
        for c in (self.pod.get("spec") or {}).get("ephemeralContainers") or ():
            if c.get("name") not in have:
                self.slots.append(Slot(c, "ephemeral"))
                self._changed()

    # ---------------------------------------------------------------- helpers
    @property
    def key(self) -> str:
        m = self.pod["metadata"]
        return f"{m.get('namespace')}/{m['name']}"

    @property
    def restart_policy(self) -> str:
        return (self.pod.get("spec") or {}).get("restartPolicy", "Always")

    def format_pod(self) -> str:
        m = self.pod["metadata"]
        return f"{m['name']}_{m.get('namespace')}({self.uid})"

    def event(self, slot: Slot | None, type_: str, reason: str, message: str) -> None:
        self.k.recorder.event(self.pod, type_, reason, message, field_path=slot.field_path if slot else None)

    def containers(self) -> list[Container]:
        return [s.current for s in self.slots if s.current is not None]

    # ---------------------------------------------------------------- timing
    def due_times(self) -> list[tuple[float, bool]]:
        """(time, significant) of everything this worker has scheduled: virtual seconds, and
        whether what happens then may change the pod (see :meth:`Kubelet.next_wakeup`).

        Significance is judged now (it reads the API and asks probes); the times alone, which
        depend only on the worker's own state, are :meth:`next_due`'s.
        """
        return self._due_times(True)

    def next_due(self) -> float | None:
        """The earliest time (virtual seconds) in :meth:`due_times`, significant or not; None when
        nothing is scheduled.

        Cached: the times depend only on this worker's state (its slots, probes, containers'
        programs, volumes' retries), which changes only in :meth:`sync`, :meth:`kill_all` and
        :meth:`adopt`; each of them drops the cached value.
        """
        t = self._next_due
        if t is _STALE:
            times = self._due_times(False)
            t = self._next_due = min(t for t, _ in times) if times else None
        if self.check_due_cache:
            times = self._due_times(False)
            fresh = min(t for t, _ in times) if times else None
            assert t == fresh, f"stale next_due of {self.key}: cached {t}, fresh {fresh}"
        return t  # type: ignore[return-value]

    #: Tests set this to check every cached :meth:`next_due` against a fresh computation.
    check_due_cache = False

    def _due_times(self, significance: bool) -> list[tuple[float, bool]]:
        """:meth:`due_times`; without ``significance`` only the times are right (every entry says
        True, and the extra ticks that only a judgement of significance adds, all later than an
        entry already listed, are left out): what :meth:`next_due` needs, without running probes
        or reading the API."""
        if self.final or self.gone:
            return []
        out: list[tuple[float, bool]] = []
        rt = self.k.runtime
        for s in self.slots:
            c = s.current
            if c is not None and c.running:
                t = rt.next_event_time(c)
                if t is not None:
                    out.append((t, True))
                for p in s.probes.values():
                    if not significance:
                        out.append((p.next_at, True))
                        continue
                    significant = self._probe_significant(s, p)
                    out.append((p.next_at, significant))
                    if not significant and c.started_at is not None:
                        # a tick inside initialDelaySeconds does nothing, but the first one after
                        # the delay may (the first readiness success): it must keep the cluster
                        # from counting as settled
                        first = c.started_at + p.param("initialDelaySeconds")
                        if p.next_at < first - _EPS:
                            period = max(p.param("periodSeconds"), _EPS)
                            ticks = -(-(first - _EPS - p.next_at) // period)  # ceil
                            out.append((p.next_at + ticks * period, True))
            if s.pull is not None:
                out.append((s.pull.done_at, True))
            if s.kill_at is not None and c is not None and c.running:
                out.append((s.kill_at, True))
            if s.resync_at is not None:
                significant = True
                if significance and s.waiting and s.waiting[0] == "CreateContainerConfigError":
                    significant = self._env_error(s) is None  # only a retry that will succeed matters
                out.append((s.resync_at, significant))
            if s.pull is not None:
                continue
            if (s.waiting and s.waiting[0] == "CrashLoopBackOff" and c is not None
                    and not c.running and c.finished_at is not None):
                out.append((c.finished_at + s.crash_backoff.delay, True))
            if s.waiting and s.waiting[0] == "ImagePullBackOff":
                out.append((s.pull_backoff.last_update + s.pull_backoff.delay, True))
        if self.terminating and self.kill_deadline is not None:
            out.append((self.kill_deadline, True))
        if self.actuate_at is not None and not self.terminating:
            out.append((self.actuate_at, True))
        if self.admitted and not self.terminating and not self.vols.ready:
            out += self.vols.due(self.pod, self._source(), self._downward())
        return out

    def _changed(self) -> None:
        """The worker's state may have changed: :meth:`next_due` recomputes."""
        self._next_due = _STALE

    def _probe_significant(self, s: Slot, p: ProbeWorker) -> bool:
        c = s.current
        if c is None or not c.running:
            return False
        if c.started_at is not None and p.next_at < c.started_at + p.param("initialDelaySeconds") - _EPS:
            return False
        if p.kind != "startup" and p.result is not None and s.probes.get("startup") and not s.started:
            return False
        if p.kind == "startup" and s.started:
            return False
        if p.result is None or (p.streak_value is not None and p.streak_value != p.result):
            return True
        t = self.k.runtime.next_event_time(c)
        if t is not None and t <= p.next_at + _EPS:
            return True
        # the program does not change before the tick: the tick matters if its answer
        # differs from the recorded result (e.g. the first readiness success)
        return self.k.runtime.probe(c, p.kind, p.spec, self.k.api.now) != p.result

    # ---------------------------------------------------------------- sync
    def sync(self, now: float) -> None:
        """Bring the pod to where it should be at ``now`` (virtual seconds) and write its status
        if it changed."""
        if self.final or self.gone:
            return
        self._changed()
        try:
            self._sync(now)
        finally:
            self._changed()

    def _sync(self, now: float) -> None:
        for _ in range(_MAX_SPINS):
            self._advance(now)
            if self.pod["metadata"].get("deletionTimestamp"):
                self._terminate(now)
                if self.final or self.gone:
                    return
                break
            if not self.admitted:
                if not self._admit(now):
                    return
            if not self._mount_volumes(now):
                break
            if not self._ensure_sandbox(now):
                break
            self._handle_resize(now)
            self._run_containers(now)
            self._probe(now)
            self._run_containers(now)
            if not any((t := self.k.runtime.next_event_time(c)) is not None and t <= now + _EPS
                       for c in self.containers() if c.running):
                break
        self._write_status(now)
        if self._phase_terminal():
            self._finish_terminal(now)

    def _advance(self, now: float) -> None:
        rt = self.k.runtime
        for s in self.slots:
            c = s.current
            if c is not None and c.running:
                rt.advance(c, now)
                if c.running and rt.post_start_failed(c):
                    self._post_start_failed(s, c, now)
                if c.running and s.kill_at is not None and s.kill_at <= now + _EPS:
                    rt.kill(c, s.kill_at)

    def _post_start_failed(self, s: Slot, c: Container, now: float) -> None:
        """The container's ``postStart`` exec hook failed: as upstream's ``startContainer``, a
        ``FailedPostStartHook`` event (without the hook's output, which may hold secrets), then the
        container is killed (``Killing`` with message ``FailedPostStartHook``, the pod's grace
        period) and restarted per ``restartPolicy``."""
        self.event(s, WARNING, "FailedPostStartHook", "PostStartHook failed")
        self.event(s, NORMAL, "Killing", "FailedPostStartHook")
        self.k.runtime.signal_term(c, now)
        if c.running:
            s.kill_at = now + self._grace()
        s.ready = s.started = False

    # ---------------------------------------------------------------- admission / sandbox
    def _admit(self, now: float) -> bool:
        k = self.k
        allocatable = k.allocatable()
        # only how many there are and the sum of their requests matter: no order needed
        active = [w for w in k.workers.values() if w is not self and w.admitted and not w.final
                  and not w.rejected]
        verdict = podstatus.admit(self, active, allocatable, requests=PodWorker.requests)
        if verdict is not None:
            reason, message = verdict
            self.rejected = True
            self.event(None, WARNING, reason, message)
            status = {
                "phase": "Failed",
                "conditions": (self.pod.get("status") or {}).get("conditions") or [],
                "message": "Pod was rejected: " + message,
                "reason": reason,
                "startTime": k.api.timestamp(now),
                "qosClass": (self.pod.get("status") or {}).get("qosClass") or qos_class(self.pod),
            }
            self._put_status(status)
            self.final = True
            return False
        self.admitted = True
        self.start_time = now
        self.allocated = self._desired()
        return True

    def requests(self) -> dict[str, int]:
        """The pod's effective requests (:func:`k8semu.node.status.pod_requests`: ``cpu`` in
        millicores, ``memory`` in bytes) from its allocated resources once admitted (from its
        spec before), computed again only when the allocation (or the spec) object is
        replaced."""
        key = self.allocated if self.allocated is not None else self.pod.get("spec")
        cached = self._requests
        if cached is None or cached[0] is not key:
            pod = self.pod if self.allocated is None else self._with_resources(self.allocated)
            cached = self._requests = (key, podstatus.pod_requests(pod))
        return cached[1]

    # ---------------------------------------------------------------- in-place resize
    def _resizable(self) -> list[Slot]:
        """The slots whose resources can be resized: regular containers and sidecars."""
        return [s for s in self.slots if s.kind in ("regular", "sidecar")]

    def _desired(self) -> dict[str, Obj]:
        """Container name -> the ``resources`` the pod's spec asks for (resizable containers)."""
        spec = self.pod.get("spec") or {}
        out: dict[str, Obj] = {}
        for c in list(spec.get("initContainers") or ()) + list(spec.get("containers") or ()):
            if c in (spec.get("containers") or ()) or podstatus.is_sidecar(c):
                out[c["name"]] = c.get("resources") or {}
        return out

    def _with_resources(self, resources: dict[str, Obj]) -> Obj:
        """The pod with its containers' ``resources`` replaced by ``resources`` (by name)."""
        spec = dict(self.pod.get("spec") or {})
        for key in ("initContainers", "containers"):
            if spec.get(key):
                spec[key] = [{**c, "resources": resources[c["name"]]} if c.get("name") in resources else c
                             for c in spec[key]]
        return {**self.pod, "spec": spec}

    def _can_resize(self, desired: dict[str, Obj]) -> tuple[bool, str, str]:
        """upstream 1.33 ``canResizePod``: (fits, reason, message). More than the node's
        allocatable: ``Infeasible``; not beside the other admitted pods' allocations (their
        :meth:`requests`): ``Deferred`` with admission's message."""
        k = self.k
        allocatable = k.allocatable()
        want = podstatus.pod_requests(self._with_resources(desired))
        cpu_cap = cpu_millis(allocatable.get("cpu", "0"))
        mem_cap = bytes_value(allocatable.get("memory", "0"))
        if want["cpu"] > cpu_cap or want["memory"] > mem_cap:
            if want["memory"] > mem_cap:
                msg = f"memory, requested: {want['memory']}, capacity: {mem_cap}"
            else:
                msg = f"cpu, requested: {want['cpu']}, capacity: {cpu_cap}"
            return False, "Infeasible", "Node didn't have enough capacity: " + msg
        active = [w for w in k.ordered_workers() if w is not self and w.admitted and not w.final
                  and not w.rejected and not w.gone]
        verdict = podstatus.admit(self, active, allocatable,
                                  requests=lambda w: want if w is self else w.requests())
        if verdict is not None:
            return False, "Deferred", verdict[1]
        return True, "", ""

    def _handle_resize(self, now: float) -> None:
        """upstream ``handlePodResourcesResize``: allocate a resize that fits, else say why it is
        pending; apply an allocated one in place once :attr:`actuate_at` has come."""
        if self.allocated is None or self.terminating or (self.pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        desired = self._desired()
        if semantic_equal(desired, self.allocated):
            self.resize_pending = None
        else:
            fits, reason, message = self._can_resize(desired)
            if fits:
                self._allocate(desired, now)
            elif self.resize_pending is None or self.resize_pending[:2] != (reason, message):
                self.resize_pending = (reason, message, now)
        if self.actuate_at is not None and now >= self.actuate_at - _EPS:
            self.actuate_at = None
            for s in self._resizable():
                c = s.current
                if c is not None and c.running and not s.resize_restart:
                    self._apply_resources(s, c)
        if self.resize_since is not None and not self._resize_in_progress():
            self.resize_since = None

    def _allocate(self, desired: dict[str, Obj], now: float) -> None:
        old = self.allocated or {}
        self.allocated = desired
        self.resize_pending = None
        for s in self._resizable():
            res = desired.get(s.name) or {}
            was = old.get(s.name) or {}
            if semantic_equal(res, was):
                continue
            s.spec = {**s.spec, "resources": res}
            s.crash_backoff = Backoff()  # upstream resets the container's crash back-off
            c = s.current
            if c is None or not c.running or s.resize_restart:
                continue
            if self._needs_restart(s, res, was):
                self.event(s, NORMAL, "Killing", f"Container {s.name} resize requires restart")
                self.k.runtime.signal_term(c, now)
                if c.running:
                    s.kill_at = now + self._grace()
                s.resize_restart = True
                s.ready = s.started = False
        self.actuate_at = now + RESIZE_ACTUATION_DELAY
        if self.resize_since is None:
            self.resize_since = now

    @staticmethod
    def _needs_restart(s: Slot, new: Obj, old: Obj) -> bool:
        """Whether a changed resource's ``resizePolicy`` is ``RestartContainer``."""
        policies = {p.get("resourceName"): p.get("restartPolicy") for p in s.spec.get("resizePolicy") or ()}
        for r in ("cpu", "memory"):
            changed = any(not semantic_equal((new.get(part) or {}).get(r), (old.get(part) or {}).get(r))
                          for part in ("requests", "limits"))
            if changed and policies.get(r) == "RestartContainer":
                return True
        return False

    def _apply_resources(self, s: Slot, c: Container) -> None:
        """UpdateContainerResources: the running instance gets the allocated limits."""
        res = (self.allocated or {}).get(s.name) or {}
        self.actual[s.name] = res
        limits = res.get("limits") or {}
        mem = bytes_value(limits["memory"]) if "memory" in limits else None
        cpu = cpu_millis(limits["cpu"]) if "cpu" in limits else None
        c.memory_limit = mem
        run = c.run
        program = getattr(run, "program", None)
        if program is not None:
            try:
                run.program = attrs.evolve(program, memory_limit=mem, cpu_limit=cpu)  # type: ignore[union-attr]
            except (TypeError, AttributeError):
                pass

    def _adopt_allocation(self, st: Obj, now: float) -> None:
        """Rebuild the allocation from the recorded status (upstream keeps it in a checkpoint):
        each container's ``resources`` there, or — while ``PodResizeInProgress`` — the spec's,
        applied :data:`RESIZE_ACTUATION_DELAY` later; the spec's when none is recorded."""
        desired = self._desired()
        by_name = {c.get("name"): c for key in ("initContainerStatuses", "containerStatuses")
                   for c in st.get(key) or ()}
        in_progress = any(c.get("type") == "PodResizeInProgress" for c in st.get("conditions") or ())
        recorded = {name: by_name[name]["resources"] for name in desired
                    if name in by_name and by_name[name].get("resources") is not None}
        self.actual = {name: recorded.get(name, res) for name, res in desired.items()}
        if in_progress:
            self.allocated = desired
            self.actuate_at = now + RESIZE_ACTUATION_DELAY
            self.resize_since = now
        else:
            self.allocated = dict(self.actual)
        for cond in st.get("conditions") or ():
            if cond.get("type") == "PodResizePending":
                self.resize_pending = (cond.get("reason") or "", cond.get("message") or "",
                                       parse_time(self.k.api.epoch, cond["lastTransitionTime"])
                                       if cond.get("lastTransitionTime") else now)
        for s in self._resizable():
            if s.name in self.allocated:
                s.spec = {**s.spec, "resources": self.allocated[s.name]}

    def _resize_in_progress(self) -> bool:
        """Whether an allocated resize is not yet applied to a running resizable container."""
        if self.allocated is None:
            return False
        if self.actuate_at is not None:
            return True
        for s in self._resizable():
            c = s.current
            if c is not None and c.running and not semantic_equal(self.actual.get(s.name),
                                                                   self.allocated.get(s.name)):
                return True
        return False

    def _resize_conditions(self) -> list[Obj]:
        """``PodResizeInProgress`` then ``PodResizePending`` (status True), when they hold."""
        ts = self.k.api.timestamp
        out = []
        if self.resize_since is not None and self._resize_in_progress():
            out.append({"type": "PodResizeInProgress", "status": "True",
                        "lastProbeTime": ts(self.resize_since), "lastTransitionTime": ts(self.resize_since)})
        if self.resize_pending is not None:
            reason, message, since = self.resize_pending
            out.append({"type": "PodResizePending", "status": "True", "lastProbeTime": ts(since),
                        "lastTransitionTime": ts(since), "reason": reason, "message": message})
        return out

    def _ensure_sandbox(self, now: float) -> bool:
        if self.sandbox:
            return True
        k = self.k
        if (self.pod.get("spec") or {}).get("hostNetwork"):
            self.ip = k.cfg.internal_ip  # the node's network namespace: no CNI, the node's address
            k.runtime.run_pod_sandbox(self.uid, self.ip, now)
            self.sandbox = True
            return True
        if k.ipam is None:
            return False  # no podCIDR yet: the CNI is not ready
        try:
            self.ip = k.ipam.allocate(self.uid)
        except RangeFull as e:
            self.event(None, WARNING, "FailedCreatePodSandBox",
                       f"Failed to create pod sandbox: plugin type=\"bridge\" failed (add): {e}")
            return False
        k.runtime.run_pod_sandbox(self.uid, self.ip, now)
        self.sandbox = True
        return True

    # ---------------------------------------------------------------- volumes and environment
    def _source(self) -> APISource:
        """What the kubelet reads ConfigMaps, Secrets and Services from (the API, as the node)."""
        return APISource(self.k.api, self.k.ctx)

    def _downward(self) -> podvolumes.DownwardContext:
        k = self.k
        return podvolumes.DownwardContext([self.ip] if self.ip else [], [k.cfg.internal_ip], k.allocatable(),
                                          k.node_name, token_signer(k.api))

    def _mount_volumes(self, now: float) -> bool:
        """WaitForAttachAndMount: set up the pod's volumes (retrying failed ones with their
        back-off, ``FailedMount`` events); True once all are set up."""
        vols = self.vols
        if vols.ready:
            return True
        for message in vols.mount(now, self.pod, self._source(), self._downward()):
            self.event(None, WARNING, "FailedMount", message)
        if vols.ready:
            return True
        if now >= vols.timeout_at - _EPS:
            self.event(None, WARNING, "FailedMount", vols.timeout_message())
            vols.timeout_at = now + podvolumes.POD_WORKER_BACKOFF + podvolumes.MOUNT_TIMEOUT
        return False

    def _network(self, replay: Any = None) -> Any:
        """The cluster network for this pod's containers (:mod:`k8semu.node.podnetwork`): live, or,
        for ``replay`` (a run catching up from its start), as the cluster was at each call."""
        from .podnetwork import PastNetwork, PodNetwork

        pod = self.pod
        if self.ip and (pod.get("status") or {}).get("podIP") != self.ip:
            pod = {**pod, "status": {**(pod.get("status") or {}), "podIP": self.ip}}
        return PodNetwork(self.k.api, pod) if replay is None else PastNetwork(self.k.api, pod, replay)

    def _environment(self, s: Slot) -> Any:
        k = self.k
        return inputs.container_environment(self.pod, s.spec, self._source(), pod_ips=[self.ip] if self.ip else [],
                                            host_ips=[k.cfg.internal_ip], allocatable=k.allocatable())

    def _env_error(self, s: Slot) -> str | None:
        """Why the container's environment cannot be made now, or None."""
        try:
            self._environment(s)
        except EnvError as e:
            return str(e)
        return None

    # ---------------------------------------------------------------- containers
    def _run_containers(self, now: float) -> None:
        for s in self.slots:
            if s.kind == "regular":
                break
            if s.kind == "sidecar":
                self._keep_running(s, now)
                if not s.started:
                    return
                continue
            if s.done:
                continue
            c = s.current
            if c is None:
                self._start(s, now)
                return
            if c.running:
                return
            if c.exit_code == 0:
                s.done = True
                continue
            if self.restart_policy == "Never":
                self.failed_init = True
                return
            self._restart(s, now)
            return
        for s in self.slots:
            if s.kind != "regular":
                continue
            c = s.current
            if c is None:
                if not self._start(s, now):
                    if s.pull is not None:
                        return  # pulls block the pod worker, later containers wait
                continue
            if not c.running and s.resize_restart and not self.terminating:
                s.resize_restart = False
                self._start(s, now)
            elif not c.running and self._should_restart(c):
                self._restart(s, now)
        # ephemeral containers start once, beside the others, and are never restarted
        for s in self.slots:
            if s.kind == "ephemeral" and s.current is None and not self.terminating:
                if not self._start(s, now) and s.pull is not None:
                    return

    def _should_restart(self, c: Container) -> bool:
        if self.terminating:
            return False
        policy = self.restart_policy
        return policy == "Always" or (policy == "OnFailure" and c.exit_code != 0)

    def _keep_running(self, s: Slot, now: float) -> None:
        c = s.current
        if c is None:
            self._start(s, now)
        elif not c.running and not self.terminating:
            if s.resize_restart:
                s.resize_restart = False
                self._start(s, now)
            else:
                self._restart(s, now)

    def _restart(self, s: Slot, now: float) -> None:
        """doBackOff, then start a new instance of the container."""
        c = s.current
        assert c is not None and c.finished_at is not None
        # a pull started by this restart (imagePullPolicy Always) finishes the restart,
        # whatever the back-off says now: doBackOff was already passed when it began
        if s.pull is None and s.crash_backoff.in_backoff_since(c.finished_at, now):
            window = c.finished_at
            if s.backoff_reported != window:
                s.backoff_reported = window
                self.event(s, WARNING, "BackOff",
                           f"Back-off restarting failed container {s.name} in pod {self.format_pod()}")
            s.waiting = ("CrashLoopBackOff",
                         f"back-off {_go_duration(s.crash_backoff.delay)} restarting failed "
                         f"container={s.name} pod={self.format_pod()}")
            s.ready = s.started = False
            return
        if s.pull is None:
            s.crash_backoff.next(c.finished_at, now)
        self._start(s, now)

    def _start(self, s: Slot, now: float) -> bool:
        """EnsureImageExists, CreateContainer, StartContainer; False if not started now."""
        k = self.k
        rt = k.runtime
        image = s.spec.get("image", "")
        if s.resync_at is not None and now < s.resync_at - _EPS:
            return False  # a failed pull is reported before the back-off is
        s.resync_at = None
        if s.pull is not None:
            if now < s.pull.done_at - _EPS:
                return False
            outcome, s.pull = s.pull, None
            if not outcome.ok:
                self.event(s, WARNING, "Failed", f'Failed to pull image "{image}": {outcome.message}')
                s.pull_backoff.next(now, now)
                self.event(s, WARNING, "Failed", f"Error: {outcome.reason or 'ErrImagePull'}")
                s.waiting = (outcome.reason or "ErrImagePull", outcome.message)
                s.resync_at = now + IMAGE_BACKOFF_RESYNC
                return False
            rt.finish_pull(outcome)
            assert outcome.image is not None
            self.event(s, NORMAL, "Pulled",
                       f'Successfully pulled image "{image}" in {_go_duration(outcome.duration)} '
                       f"({_go_duration(outcome.waited)} including waiting). "
                       f"Image size: {outcome.image.size} bytes.")
            s.image = outcome.image
        else:
            policy = s.spec.get("imagePullPolicy") or (
                "Always" if normalize_image(image).endswith(":latest") else "IfNotPresent")
            cached = rt.images.get(image)
            invalid = rt.invalid_image(image)
            if invalid is not None:
                if s.waiting is None or s.waiting[0] != "InvalidImageName":
                    self.event(s, WARNING, "InspectFailed", invalid)
                    self.event(s, WARNING, "Failed", "Error: InvalidImageName")
                s.waiting = ("InvalidImageName", invalid)
                return False
            if policy == "Never" and cached is None:
                msg = f'Container image "{image}" is not present with pull policy of Never'
                if s.waiting is None or s.waiting[0] != "ErrImageNeverPull":
                    self.event(s, WARNING, "ErrImageNeverPull", msg)
                    self.event(s, WARNING, "Failed", "Error: ErrImageNeverPull")
                s.waiting = ("ErrImageNeverPull", msg)
                return False
            if policy != "Always" and cached is not None:
                self.event(s, NORMAL, "Pulled", f'Container image "{image}" already present on machine')
                s.image = cached
            else:
                if s.pull_backoff.in_backoff_since_update(now):
                    window = s.pull_backoff.last_update
                    if s.backoff_reported != window:
                        s.backoff_reported = window
                        self.event(s, NORMAL, "BackOff", f'Back-off pulling image "{image}"')
                        self.event(s, WARNING, "Failed", "Error: ImagePullBackOff")
                    s.waiting = ("ImagePullBackOff", f'Back-off pulling image "{image}"')
                    return False
                self.event(s, NORMAL, "Pulling", f'Pulling image "{image}"')
                s.pull = rt.pull_image(image, now)
                # the status keeps the last sync's error while a retry pulls (the kubelet's reason cache)
                if s.waiting is None or s.waiting[0] not in ("ErrImagePull", "ImagePullBackOff",
                                                             "CreateContainerConfigError"):
                    s.waiting = None
                if s.pull.done_at > now + _EPS:
                    return False
                return self._start(s, now)
        # generateContainerConfig: the environment, then the mounts
        try:
            env = self._environment(s)
        except EnvError as e:
            self.event(s, WARNING, "Failed", f"Error: {e}")
            s.waiting = ("CreateContainerConfigError", str(e))
            s.resync_at = now + CONFIG_ERROR_RESYNC
            return False
        self.vols.refresh(self.pod, self._source(), self._downward())
        mounts = podvolumes.container_mounts(podvolumes.with_claims_resolved(self.pod, k.api), s.spec,
                                             self.vols.stores, k.host_files, env)
        # create + start
        attempt = 0 if s.current is None else s.restart_count + 1
        prev = s.current
        try:
            c = rt.create_container(self.pod, s.spec, attempt, s.image, now, env=env, mounts=mounts)
        except ValueError as e:
            if s.waiting != ("CreateContainerError", str(e)):
                self.event(s, WARNING, "Failed", f"Error: {e}")
            s.waiting = ("CreateContainerError", str(e))
            return False
        self.event(s, NORMAL, "Created", f"Created container: {s.name}")
        rt.start_container(c, now)
        c.run.network = self._network()
        self.event(s, NORMAL, "Started", f"Started container {s.name}")
        if prev is not None:
            s.restart_count = attempt
            s.last_term = self._terminated_state(prev)
            rt.containers.pop(prev.id, None)
        s.current = c
        s.waiting = None
        s.kill_at = None
        if self.allocated is not None and s.name in self.allocated:
            self.actual[s.name] = self.allocated[s.name]  # created with the allocated resources
        self._reset_probes(s, now)
        return True

    def _terminated_state(self, c: Container) -> Obj:
        ts = self.k.api.timestamp
        return podstatus.terminated(
            c.exit_code or 0, c.reason or ("Completed" if c.exit_code == 0 else "Error"),
            ts(c.started_at) if c.started_at is not None else None,
            ts(c.finished_at) if c.finished_at is not None else None,
            f"containerd://{c.id}",
        )["terminated"]

    # ---------------------------------------------------------------- probes
    def _reset_probes(self, s: Slot, now: float) -> None:
        spec = s.spec
        kinds = [("startup", "startupProbe"), ("liveness", "livenessProbe"), ("readiness", "readinessProbe")]
        for kind, field in kinds:
            probe = spec.get(field)
            if not probe:
                s.probes.pop(kind, None)
                continue
            if s.kind == "init":
                continue
            w = s.probes.get(kind)
            if w is None:
                period = int(probe.get("periodSeconds") or 10)
                origin = self._probe_ticker_origin
                steps = max(0, -(-(now - origin - _EPS) // period))
                w = ProbeWorker(kind, probe, origin + steps * period, _initial_result(kind))
                s.probes[kind] = w
            else:
                w.result = _initial_result(kind)
                w.streak_value, w.streak = None, 0
        s.started = "startup" not in s.probes
        s.ready = s.started and "readiness" not in s.probes

    def _probe(self, now: float) -> None:
        rt = self.k.runtime
        for s in self.slots:
            for kind in ("startup", "liveness", "readiness"):
                w = s.probes.get(kind)
                if w is None:
                    continue
                while w.next_at <= now + _EPS:
                    t = w.next_at
                    w.next_at = t + w.param("periodSeconds")
                    c = s.current
                    if c is None or not c.running or c.started_at is None:
                        continue
                    if t < c.started_at + w.param("initialDelaySeconds") - _EPS:
                        continue
                    if kind == "startup" and s.started:
                        continue
                    if kind != "startup" and not s.started:
                        continue
                    ok = rt.probe(c, kind, w.spec, t)
                    self._probe_result(s, w, ok, t, rt.probe_output(c))
                    if s.current is not c or not c.running:
                        break

    def _probe_result(self, s: Slot, w: ProbeWorker, ok: bool, t: float, output: str = "") -> None:
        if w.streak_value == ok:
            w.streak += 1
        else:
            w.streak_value, w.streak = ok, 1
        if not ok:
            label = {"startup": "Startup", "liveness": "Liveness", "readiness": "Readiness"}[w.kind]
            self.event(s, WARNING, "Unhealthy",
                       f"{label} probe failed: {_probe_message(w.kind, w.spec, self.ip or '', output)}")
        threshold = w.param("successThreshold") if ok else w.param("failureThreshold")
        if w.kind in ("startup", "liveness") and ok:
            threshold = 1
        if w.streak < threshold:
            return
        w.result = ok
        if w.kind == "readiness":
            s.ready = ok and s.started
        elif w.kind == "startup" and ok:
            s.started = True
            s.ready = "readiness" not in s.probes
        elif not ok and w.kind in ("liveness", "startup"):
            self.event(s, NORMAL, "Killing",
                       f"Container {s.name} failed {w.kind} probe, will be restarted")
            c = s.current
            assert c is not None
            self.k.runtime.signal_term(c, t)
            if c.running:
                s.kill_at = t + self._grace(w.spec)
            s.ready = s.started = False

    def _grace(self, probe: Obj | None = None) -> float:
        if probe and probe.get("terminationGracePeriodSeconds") is not None:
            return float(probe["terminationGracePeriodSeconds"])
        g = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        return 30.0 if g is None else float(g)

    # ---------------------------------------------------------------- termination
    def _terminate(self, now: float) -> None:
        rt = self.k.runtime
        meta = self.pod["metadata"]
        if not self.terminating:
            self.terminating = True
            grace = meta.get("deletionGracePeriodSeconds")
            self.kill_deadline = now + (self._grace() if grace is None else float(grace))
            for s in self.slots:
                s.pull = None
                s.resync_at = None
            for s in self.slots:
                if not s.is_init and s.current is not None and s.current.running:
                    self.event(s, NORMAL, "Killing", f"Stopping container {s.name}")
                    rt.signal_term(s.current, now)
        regular_running = [s for s in self.slots if not s.is_init and s.current is not None
                           and s.current.running]
        if not regular_running and not self.sidecars_signaled:
            self.sidecars_signaled = True
            for s in reversed(self.slots):
                if s.is_init and s.current is not None and s.current.running:
                    self.event(s, NORMAL, "Killing", f"Stopping container {s.name}")
                    rt.signal_term(s.current, now)
        if self.kill_deadline is not None and now >= self.kill_deadline - _EPS:
            for s in self.slots:
                if s.current is not None and s.current.running:
                    rt.kill(s.current, now)
        if any(s.current is not None and s.current.running for s in self.slots):
            return
        for s in self.slots:
            s.ready = s.started = False
            if s.waiting and s.current is None:
                s.waiting = ("PodInitializing", "") if s.is_init else ("ContainerCreating", "")
        self._write_status(now, terminal=True)
        self._teardown()
        try:
            self.k.api.delete("pods", meta["name"], namespace=meta.get("namespace"), ctx=self.k.ctx,
                              grace_period_seconds=0, preconditions={"uid": self.uid})
        except errors.StatusError:
            pass
        self.gone = True

    def _teardown(self) -> None:
        k = self.k
        for s in self.slots:
            s.probes.clear()
        if self.sandbox:
            k.runtime.remove_pod_sandbox(self.uid)
            self.sandbox = False
        if k.ipam is not None:
            k.ipam.release(self.uid)

    def kill_all(self, now: float) -> None:
        """The pod is gone from the API (force-deleted): stop everything, release the IP."""
        self._changed()
        for s in self.slots:
            if s.current is not None and s.current.running:
                self.k.runtime.kill(s.current, now)
        self._teardown()
        self.gone = True

    def _phase_terminal(self) -> bool:
        return (self.last_status or {}).get("phase") in ("Succeeded", "Failed")

    def _finish_terminal(self, now: float) -> None:
        for s in self.slots:
            if s.current is not None and s.current.running:
                self.k.runtime.kill(s.current, now)
        self._teardown()
        self.final = True

    # ---------------------------------------------------------------- status
    def _container_status(self, s: Slot) -> Obj:
        ts = self.k.api.timestamp
        c = s.current
        image, image_id, cid = s.spec.get("image", ""), "", None
        if c is not None:
            image, image_id, cid = c.image, c.image_id, f"containerd://{c.id}"
        last = s.last_term
        if c is not None and c.running:
            st = podstatus.running(ts(c.started_at))
        elif s.waiting is not None:
            st = podstatus.waiting(*s.waiting)
            if c is not None:
                last = self._terminated_state(c)
        elif c is not None:
            st = {"terminated": self._terminated_state(c)}
        elif s.is_init or (s.kind == "regular" and any(x.is_init and not (x.done or x.started)
                                                        for x in self.slots)):
            st = podstatus.waiting("PodInitializing")
        else:
            st = podstatus.waiting("ContainerCreating")
        out: Obj = {"name": s.name, "state": st, "lastState": {"terminated": last} if last else {},
                    "ready": bool(s.ready and c is not None and c.running),
                    "restartCount": s.restart_count, "image": image, "imageID": image_id}
        if cid:
            out["containerID"] = cid
        if s.kind != "ephemeral":  # only probed containers say whether they started
            out["started"] = bool(s.started and c is not None and c.running)
        alloc = (self.allocated or {}).get(s.name) if s.kind in ("regular", "sidecar") else None
        if alloc is not None and c is not None and c.running:
            # what the runtime applied (1.33 writes no ``allocatedResources``: its gate is off)
            applied = self.actual.get(s.name, alloc)
            out["resources"] = {k: dict(v) for k, v in applied.items() if k in ("limits", "requests") and v}
        mounts = s.spec.get("volumeMounts")
        if mounts:
            out["volumeMounts"] = [_mount_status(m) for m in mounts]
        return out

    def compute_status(self, now: float, terminal: bool = False) -> Obj:
        k = self.k
        init = [self._container_status(s) for s in self.slots if s.is_init]
        regular = [self._container_status(s) for s in self.slots if s.kind == "regular"]
        old = self.last_status or self.pod.get("status") or {}
        phase = podstatus.pod_phase(self.pod, init + regular, terminal=terminal)
        if self.failed_init:
            phase = "Failed"
        if old.get("phase") in ("Succeeded", "Failed"):
            phase = old["phase"]
        conds = podstatus.conditions(self.pod, init, regular, phase, self.sandbox and not terminal)
        stamp = k.api.timestamp(now)
        old_conds = [c for c in old.get("conditions") or (self.pod.get("status") or {}).get("conditions") or []
                     if c.get("type") not in _RESIZE_CONDITIONS]
        status: Obj = {
            "phase": phase,
            # the resize conditions first, as upstream's generateAPIPodStatus
            "conditions": ([] if terminal or phase in ("Succeeded", "Failed") else self._resize_conditions())
            + podstatus.merge_conditions(old_conds, conds, stamp),
            "hostIP": k.cfg.internal_ip,
            "hostIPs": [{"ip": k.cfg.internal_ip}],
        }
        ip = self.ip or old.get("podIP")
        if ip:
            status["podIP"] = ip
            status["podIPs"] = [{"ip": ip}]
        status["startTime"] = old.get("startTime") or k.api.timestamp(self.start_time if self.start_time is not None
                                                                       else now)
        if init:
            status["initContainerStatuses"] = init
        status["containerStatuses"] = regular
        status["qosClass"] = (self.pod.get("status") or {}).get("qosClass") or qos_class(self.pod)
        ephemeral = [self._container_status(s) for s in self.slots if s.kind == "ephemeral"]
        if ephemeral:
            status["ephemeralContainerStatuses"] = ephemeral
        return status

    def _write_status(self, now: float, terminal: bool = False) -> None:
        status = self.compute_status(now, terminal)
        if self.last_status is not None and status == self.last_status:
            return
        self._put_status(status)

    def _put_status(self, status: Obj) -> None:
        k = self.k
        meta = self.pod["metadata"]
        try:
            cur = k.api.get("pods", meta["name"], namespace=meta.get("namespace"), ctx=k.ctx)
        except errors.NotFound:
            self.last_status = status
            return
        if cur["metadata"].get("uid") != self.uid:
            return
        try:
            new = k.api.update("pods", {**cur, "status": status}, namespace=meta.get("namespace"),
                               subresource="status", ctx=k.ctx)
            self.pod = new
        except errors.StatusError:
            pass
        self.last_status = status

    # ---------------------------------------------------------------- restart recovery
    def _crash_backoff_from_log(self, container: str) -> Backoff:
        """The crash back-off of ``container`` as this kubelet left it: each restart recorded in
        the pod's history (a new ``restartCount`` with the crashed instance's ``finishedAt`` and
        the new one's ``startedAt``) replayed through :meth:`Backoff.next`, as the restarts did.

        Each ``k8semu`` command runs a new kubelet object, but the cluster's kubelet carries on
        (see :mod:`k8semu.sim.components`): without this a crash-looping container restarted
        at 10 s, 20 s, 40 s... again after every command instead of every 5 minutes."""
        epoch = self.k.api.epoch
        restarts: dict[int, tuple[float, float]] = {}
        for rec in self.k.api.log.history(f"/registry/pods/{self.key}"):
            if rec.type == "DELETED":
                continue
            st = rec.object.get("status") or {}
            for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
                if cs.get("name") != container:
                    continue
                n = int(cs.get("restartCount") or 0)
                finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
                state = cs.get("state") or {}
                started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
                if n and n not in restarts and finished and started:
                    restarts[n] = (parse_time(epoch, finished), parse_time(epoch, started))
        backoff = Backoff()
        for n in sorted(restarts):
            backoff.next(*restarts[n])
        return backoff

    def adopt(self, now: float) -> None:
        """Rebuild state from the pod's recorded status (a kubelet restart)."""
        self._changed()
        k = self.k
        st = self.pod.get("status") or {}
        self.last_status = st
        if st.get("phase") in ("Succeeded", "Failed"):
            self.admitted = True
            self.final = True
            return
        if not st.get("startTime"):
            return
        self.admitted = True
        self._adopt_allocation(st, now)
        epoch = k.api.epoch
        self.start_time = parse_time(epoch, st["startTime"])
        self._probe_ticker_origin = self.start_time
        if st.get("podIP"):
            self.vols.mounted.update(str(v.get("name")) for v in self.vols.volumes)  # it had its sandbox
            self.ip = st["podIP"]
            if k.ipam is not None:
                k.ipam.reserve(self.ip, self.uid)
            k.runtime.run_pod_sandbox(self.uid, self.ip, self.start_time)
            self.sandbox = True
        by_name = {c.get("name"): c for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
                   for c in st.get(key) or ()}
        rt = k.runtime
        for s in self.slots:
            cs = by_name.get(s.name)
            if cs is None:
                continue
            s.restart_count = int(cs.get("restartCount") or 0)
            s.last_term = (cs.get("lastState") or {}).get("terminated")
            if s.restart_count:
                s.crash_backoff = self._crash_backoff_from_log(s.name)
            if cs.get("imageID"):
                ref = cs.get("image") or normalize_image(s.spec.get("image", ""))
                cached = rt.images.get(ref)
                s.image = (cached if cached is not None and cached.image_id == cs["imageID"]
                           else rt.known_image(ref, cs["imageID"]))
                if rt.images.get(s.image.ref) is None:
                    rt.images.add(s.image)
            state = cs.get("state") or {}
            cid = (cs.get("containerID") or "").removeprefix("containerd://")
            if "running" in state and cid:
                c = Container(cid, s.name, self.uid, s.restart_count, s.image.ref if s.image else "",
                              s.image.image_id if s.image else "")
                started = parse_time(epoch, state["running"]["startedAt"])
                env, mounts = inputs.replay_inputs(k.api, self.pod, s.spec, started)
                try:
                    rt.adopt(self.pod, s.spec, c, started, env=env, mounts=mounts)
                except ValueError:
                    continue
                c.run.network = self._network(c.run)  # catching up from its start: the cluster as it was
                s.current = c
                self._reset_probes(s, started)
                s.started = bool(cs.get("started"))
                s.ready = bool(cs.get("ready"))
                for w in s.probes.values():
                    if w.kind == "readiness":
                        w.result = s.ready
                    elif w.kind == "startup":
                        w.result = True if s.started else None
                    w.streak_value, w.streak = w.result, 0
                    period = w.param("periodSeconds")
                    steps = max(0, -(-(now - self._probe_ticker_origin - _EPS) // period))
                    w.next_at = self._probe_ticker_origin + steps * period
            elif "terminated" in state:
                term = state["terminated"]
                c = Container(cid or term.get("containerID", "").removeprefix("containerd://"), s.name,
                              self.uid, s.restart_count, s.image.ref if s.image else "",
                              s.image.image_id if s.image else "", state="exited",
                              started_at=parse_time(epoch, term["startedAt"]) if term.get("startedAt") else None,
                              finished_at=parse_time(epoch, term["finishedAt"]) if term.get("finishedAt") else now,
                              exit_code=int(term.get("exitCode") or 0), reason=term.get("reason") or "")
                s.current = c
                if s.kind == "init" and c.exit_code == 0:
                    s.done = True
            elif "waiting" in state and s.last_term:
                # exited and waiting to be restarted: lastState is that exited instance
                lt = s.last_term
                s.current = Container(
                    (lt.get("containerID") or cid).removeprefix("containerd://"), s.name, self.uid,
                    s.restart_count, s.image.ref if s.image else "", s.image.image_id if s.image else "",
                    state="exited",
                    started_at=parse_time(epoch, lt["startedAt"]) if lt.get("startedAt") else None,
                    finished_at=parse_time(epoch, lt["finishedAt"]) if lt.get("finishedAt") else now,
                    exit_code=int(lt.get("exitCode") or 0), reason=lt.get("reason") or "")
                s.last_term = None
                w = state["waiting"]
                s.waiting = (w.get("reason", ""), w.get("message", ""))
            elif "waiting" in state:
                w = state["waiting"]
                if w.get("reason") not in ("ContainerCreating", "PodInitializing"):
                    s.waiting = (w.get("reason", ""), w.get("message", ""))


# --------------------------------------------------------------------------- the kubelet

class Kubelet(Component):
    """The kubelet of one node (see module docstring).

    Args:
        api: the API server.
        node_cfg: the node's :class:`~k8semu.sim.config.NodeConfig`.
        behaviour: the behaviour module (default: :mod:`k8semu.node.behaviour`).
        pull_scale: multiplies image pull durations.
        fresh: a new kubelet process (default), which registers its Node on start,
            creating it if missing; False: the same process carrying on from an
            earlier session, which never creates the Node (see module docstring).
    """

    def __init__(self, api: Any, node_cfg: Any, *, behaviour: Any = None, pull_scale: float = 1.0,
                 static_pods: bool = True, cluster_cidr: str | None = None, fresh: bool = True) -> None:
        super().__init__(api, f"kubelet/{node_cfg.name}", node_user(node_cfg.name))
        self.cfg = node_cfg
        self.node_name = node_cfg.name
        self.recorder = EventRecorder(api, self.ctx, "kubelet", host=node_cfg.name)
        self.runtime = ContainerRuntime(node_cfg.name, behaviour, pull_scale, epoch=api.epoch)
        #: the node's own files, as hostPath volumes see them
        self.host_files = podvolumes.HostFiles(node_cfg.name, _hex_id("machine", node_cfg.name))
        self.ipam: HostLocalIPAM | None = None
        self.workers: dict[str, PodWorker] = {}
        self._dirty: dict[str, None] = {}
        self._wake = trio.Event()
        self._node_uid: str | None = None
        self.fresh = fresh
        self._last_report = -1e18
        self._last_node_status: Obj | None = None
        self._started = False
        #: the admitted pods' allocations when the deferred resizes were last looked at
        self._resize_fingerprint: Any = None
        from .static_pods import StaticPodSource

        # the "file" source: kubeadm's static pods (none in a cluster made without kubeadm's addons)
        self.static_pods = StaticPodSource(self, None if static_pods else [], cluster_cidr=cluster_cidr)
        self.pods = self.informer("pods", field_selector=f"spec.nodeName={node_cfg.name}",
                                  indexers={"uid": _uid_index})
        self.nodes = self.informer("nodes", field_selector=f"metadata.name={node_cfg.name}")
        self.pods.add_event_handler(EventHandler(self._on_add, self._on_update, self._on_delete))
        self.nodes.add_event_handler(EventHandler(lambda o: self._on_node(o), lambda _o, n: self._on_node(n)))

    # ---------------------------------------------------------------- handlers
    def _kick(self) -> None:
        self._wake.set()

    def _on_add(self, pod: Obj) -> None:
        self._dirty[pod["metadata"]["uid"]] = None
        self._kick()

    def _on_update(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            self._on_delete(old)
        self._on_add(new)

    def _on_delete(self, pod: Obj) -> None:
        uid = pod["metadata"].get("uid")
        self._dirty[uid] = None
        self._kick()

    def _on_node(self, node: Obj) -> None:
        cidr = (node.get("spec") or {}).get("podCIDR")
        if cidr and (self.ipam is None or str(self.ipam.network) != cidr):
            self.ipam = HostLocalIPAM(cidr)
            for w in self.ordered_workers():
                if w.ip:
                    self.ipam.reserve(w.ip, w.uid)
            for uid in self.workers:
                self._dirty[uid] = None
        self._kick()

    # ---------------------------------------------------------------- helpers
    def ordered_workers(self) -> list[PodWorker]:
        """The pod workers oldest pod first (creation time, then ``namespace/name``; ties keep
        the order the workers were made in)."""
        return sorted(self.workers.values(), key=_worker_order)

    def allocatable(self) -> Obj:
        node = self.nodes.indexer.get(self.node_name)
        if node is not None:
            return (node.get("status") or {}).get("allocatable") or {}
        return node_object(self.cfg, "")["status"]["allocatable"]

    def next_wakeup(self) -> float | None:
        if not self._started:
            return None
        if self._dirty:
            return self.api.now
        times = [t for w in self.workers.values() for t, sig in w.due_times() if sig]
        return min(times) if times else None

    def _next_any(self) -> float | None:
        times = [t for w in self.workers.values() if (t := w.next_due()) is not None]
        return min(times) if times else None

    # ---------------------------------------------------------------- node
    def _register(self) -> None:
        """On start: register the Node (a fresh process) or pick up the existing one.

        A fresh kubelet creates a missing Node and records ``Starting`` (plus the
        condition events for a new Node); one carrying on from an earlier session
        leaves a deleted Node deleted, as upstream's kubelet, which registers once
        per process. Either way it reloads its image cache from the Node's
        ``status.images`` and posts its status.
        """
        api, now = self.api, self.api.now
        stamp = api.timestamp(now)
        try:
            node = api.get("nodes", self.node_name, ctx=self.ctx)
        except errors.NotFound:
            if not self.fresh:
                return  # registered by this process before; the Node was deleted since
            node = api.create("nodes", node_object(self.cfg, stamp, self.runtime.images.node_images()),
                              ctx=self.ctx)
            ref = {"kind": "Node", "metadata": {"name": self.node_name, "uid": self.node_name}}
            self.recorder.event(ref, NORMAL, "Starting", "Starting kubelet.")
            for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"):
                self.recorder.event(ref, NORMAL, reason, f"Node {self.node_name} status is now: {reason}")
            self.recorder.event(ref, NORMAL, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
            self.recorder.event(ref, NORMAL, "NodeReady", f"Node {self.node_name} status is now: NodeReady")
            self._last_report = now
            self._last_node_status = node.get("status")
        else:
            if self.fresh:
                ref = {"kind": "Node", "metadata": {"name": self.node_name, "uid": self.node_name}}
                self.recorder.event(ref, NORMAL, "Starting", "Starting kubelet.")
            for img in (node.get("status") or {}).get("images") or ():
                names = img.get("names") or []
                digest = next((n for n in names if "@" in n), None)
                for n in names:
                    if "@" not in n and digest:
                        self.runtime.images.add(self.runtime.known_image(n, digest, int(img.get("sizeBytes") or 0)))
            self._last_node_status = node.get("status")
            self._post_node_status(force=False)
        self._node_uid = node["metadata"]["uid"]
        self._on_node(node)

    def _node_status(self, old: Obj, stamp: str) -> Obj:
        fresh = node_object(self.cfg, stamp, self.runtime.images.node_images())["status"]
        fresh["conditions"] = _node_conditions(stamp, old.get("conditions"))
        return fresh

    def _post_node_status(self, force: bool) -> None:
        """Update the Node's status when it changed, every 5 minutes, or when ``force``d.

        A deleted Node is not re-registered (upstream's ``tryUpdateNodeStatus``
        fails with "error getting node ... not found" until the kubelet restarts).
        """
        api, now = self.api, self.api.now
        try:
            node = api.get("nodes", self.node_name, ctx=self.ctx)
        except errors.NotFound:
            return
        old = node.get("status") or {}
        new = self._node_status(old, api.timestamp(now))
        changed = _strip_heartbeats(new) != _strip_heartbeats(old)
        if not changed and not force and now - self._last_report < NODE_STATUS_REPORT_FREQUENCY - _EPS:
            return
        try:
            api.update("nodes", {**node, "status": new}, subresource="status", ctx=self.ctx)
            self._last_report = now
        except errors.StatusError:
            pass

    def _renew_lease(self) -> None:
        api = self.api
        now = api.now
        micro = format_micro_time(api.epoch, now)
        try:
            lease = api.get("leases.coordination.k8s.io", self.node_name, namespace="kube-node-lease", ctx=self.ctx)
        except errors.NotFound:
            # upstream's setNodeOwnerFunc: a new Lease is owned by the Node; without the Node
            # (deleted while this kubelet runs) the Lease is not created this time
            try:
                node = api.get("nodes", self.node_name, ctx=self.ctx)
            except errors.NotFound:
                return
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.node_name, "namespace": "kube-node-lease",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                                                  "uid": node["metadata"]["uid"]}]},
                "spec": {"holderIdentity": self.node_name, "leaseDurationSeconds": LEASE_DURATION,
                         "renewTime": micro},
            }
            try:
                api.create("leases.coordination.k8s.io", body, namespace="kube-node-lease", ctx=self.ctx)
            except errors.StatusError:
                pass
            return
        spec = {**(lease.get("spec") or {}), "holderIdentity": self.node_name,
                "leaseDurationSeconds": LEASE_DURATION, "renewTime": micro}
        try:
            api.update("leases.coordination.k8s.io", {**lease, "spec": spec}, namespace="kube-node-lease",
                       ctx=self.ctx)
        except errors.StatusError:
            pass

    async def _heartbeat(self) -> None:
        next_lease = self.api.now + LEASE_RENEW_INTERVAL
        next_status = self.api.now + NODE_STATUS_UPDATE_FREQUENCY
        while True:
            await trio.sleep_until(min(next_lease, next_status))
            await self.gate()
            now = self.api.now
            if now >= next_lease - _EPS:
                self._renew_lease()
                next_lease = now + LEASE_RENEW_INTERVAL
            if now >= next_status - _EPS:
                self._post_node_status(force=False)
                next_status = now + NODE_STATUS_UPDATE_FREQUENCY

    # ---------------------------------------------------------------- main loop
    async def main(self) -> None:
        self._register()
        self._renew_lease()
        self._recover()
        self._started = True
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._heartbeat)
            await self._loop()

    def _recover(self) -> None:
        now = self.api.now
        pods = sorted(self.pods.indexer.list(),
                      key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
        ips = []
        for pod in pods:
            w = PodWorker(self, pod, now)
            self.workers[w.uid] = w
            w.adopt(now)
            if w.ip and not w.final:
                ips.append((pod["metadata"].get("creationTimestamp") or "", w.ip, w.uid))
            self._dirty[w.uid] = None
        if self.ipam is not None and ips:
            _, ip, uid = max(ips)
            self.ipam.reserve(ip, uid, last=True)

    async def _loop(self) -> None:
        while True:
            await self.gate()
            now = self.api.now
            self._sync_due(now)
            nxt = self._next_any()
            if self._dirty:
                await trio.lowlevel.checkpoint()
                continue
            with trio.move_on_at(nxt if nxt is not None else float("inf")):
                await self._wake.wait()
            self._wake = trio.Event()

    def _sync_due(self, now: float) -> None:
        self.static_pods.sync(now)
        dirty, self._dirty = self._dirty, {}
        for uid in list(dirty):
            self._apply_cache(uid, now)
        limit = now + _EPS
        # the due workers in ordered_workers' order (a stable sort of a subsequence is the
        # subsequence of the stable sort)
        due = sorted((w for w in self.workers.values()
                      if w.uid in dirty or ((t := w.next_due()) is not None and t <= limit)),
                     key=_worker_order)
        for w in due:
            w.sync(now)
        for uid in [u for u, w in self.workers.items() if w.gone]:
            del self.workers[uid]
        self._retry_deferred_resizes()

    def _retry_deferred_resizes(self) -> None:
        """Deferred resizes are tried again when the admitted pods' allocations change (a pod
        gone or finished, another resize), as upstream's kubelet retries pending resizes."""
        if not any(w.resize_pending is not None for w in self.workers.values()):
            deferred = []  # the common case, without sorting the workers on every wake
        else:
            deferred = [w for w in self.ordered_workers()
                        if w.resize_pending is not None and w.resize_pending[0] == "Deferred" and not w.final]
        if not deferred:
            self._resize_fingerprint = None
            return
        fingerprint = tuple((w.uid, tuple(sorted(w.requests().items()))) for w in self.ordered_workers()
                            if w.admitted and not w.final and not w.rejected and not w.gone)
        if fingerprint != self._resize_fingerprint:
            if self._resize_fingerprint is not None:
                for w in deferred:
                    self._dirty[w.uid] = None
                self._kick()
            self._resize_fingerprint = fingerprint

    def _apply_cache(self, uid: str, now: float) -> None:
        pod = next(iter(self.pods.indexer.by_index("uid", uid)), None)
        w = self.workers.get(uid)
        if pod is None:
            if w is not None and not w.gone:
                if not w.final and w.admitted and not w.rejected:
                    for s in w.slots:
                        if s.current is not None and s.current.running:
                            w.event(s, NORMAL, "Killing", f"Stopping container {s.name}")
                w.kill_all(now)
            return
        if w is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                w = PodWorker(self, pod, now)
                w.adopt(now)
                self.workers[uid] = w
                return
            w = PodWorker(self, pod, now)
            self.workers[uid] = w
        else:
            w.pod = pod
            w.add_ephemeral()


def _mount_status(mount: Obj) -> Obj:
    """A container's ``volumeMounts`` entry as the 1.33 kubelet reports it in the container's
    status (RecursiveReadOnlyMounts, on by default): name, path, and for a read-only mount
    ``recursiveReadOnly`` — ``Enabled`` when asked for (``Enabled``/``IfPossible``: containerd 2
    supports it), else ``Disabled``."""
    out: Obj = {"name": mount.get("name"), "mountPath": mount.get("mountPath")}
    if mount.get("readOnly"):
        out["readOnly"] = True
        out["recursiveReadOnly"] = ("Enabled" if mount.get("recursiveReadOnly") in ("Enabled", "IfPossible")
                                    else "Disabled")
    return out


def _worker_order(w: PodWorker) -> tuple[str, str]:
    """Sort key of :meth:`Kubelet.ordered_workers`."""
    meta = w.pod["metadata"]
    return meta.get("creationTimestamp") or "", f"{meta.get('namespace')}/{meta['name']}"


def _strip_heartbeats(status: Obj) -> Obj:
    out = dict(status)
    out["conditions"] = [{k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                         for c in status.get("conditions") or ()]
    return out


def _uid_index(pod: Obj) -> list[str]:
    """Index function: the pod's uid (the kubelet's pod workers are keyed by it)."""
    return [(pod.get("metadata") or {}).get("uid") or ""]
