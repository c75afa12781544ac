"""The container runtime of one node (containerd behind CRI), on virtual time.

What the kubelet asks of CRI, as plain Python bookkeeping:

- **sandboxes**: one per pod (the ``pause`` container holding the network
  namespace), with the pod's IP from CNI;
- **images**: a per-node cache (what ``crictl images`` lists); pulls are
  *serialized* as the kubelet's default ``serializeImagePulls: true``: a pull
  starts when the previous one finished, so a pull's time "including waiting"
  can exceed its own duration;
- **containers**: created, started, exited; each runs a *program* from
  :mod:`k8semu.node.behaviour` (``sleep 30``, ``sh -c`` scripts, scripted
  annotations) that says, in virtual time, when it logs, exits, changes
  memory use or probe answers.

IDs are deterministic: a container's ID is the SHA-256 of node, pod UID,
container name and attempt (64 hex digits, as containerd's), so the same
inputs give the same ``containerID: containerd://…`` in the log.

The behaviour module is used through a thin adapter (:func:`normalize_effect`
and the methods here), so the kubelet only sees :class:`Effect` values, plus
two answers upstream's CRI gives the kubelet: an exec probe's output
(:meth:`ContainerRuntime.probe_output`, for the ``Unhealthy`` event) and
whether a ``postStart`` exec hook failed (:meth:`ContainerRuntime.post_start_failed`).
Image sizes are containerd's: the compressed size of the image.
"""

from __future__ import annotations

import functools
import hashlib
import math
from datetime import datetime, timedelta
from typing import Any

import attrs

__all__ = [
    "Image", "ImageCache", "NODE_STATUS_MAX_IMAGES", "MAX_NAMES_PER_IMAGE", "PullOutcome", "Container", "Sandbox", "ContainerRuntime",
    "normalize_image", "image_repo", "container_id", "Effect", "normalize_effect", "behaviour_module",
    "open_stdin", "container_stdin", "record_files", "container_files",
]


# --------------------------------------------------------------------------- images

@functools.lru_cache(maxsize=4096)
def normalize_image(image: str) -> str:
    """containerd's normalized reference: ``nginx:1.30`` -> ``docker.io/library/nginx:1.30``;
    no tag means ``:latest``. A pure function of ``image`` (remembered)."""
    name, digest = (image.split("@", 1) + [""])[:2]
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}"
    last = name.rsplit("/", 1)[-1]
    if digest:
        return f"{name}@{digest}"
    if ":" not in last:
        name += ":latest"
    return name


def image_repo(image: str) -> str:
    """The repository part of a normalized reference (no tag, no digest)."""
    ref = normalize_image(image).split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}"


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def container_id(*parts: Any) -> str:
    """A deterministic 64-hex-digit ID from ``parts`` (node, pod uid, name, attempt)."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


@attrs.define
class Image:
    """One image on the node: ``ref`` (normalized tag), ``image_id`` (repo digest), size in bytes."""

    ref: str
    image_id: str
    size: int


@attrs.define
class PullOutcome:
    """What one pull gave: ok, or an error reason/message; ``duration`` is the pull's own
    virtual seconds, ``waited`` also counts the time queued behind earlier pulls."""

    ok: bool
    image: Image | None
    reason: str
    message: str
    duration: float
    waited: float
    done_at: float


#: Virtual seconds a pull takes when the image's content is already in containerd's store: the tag
#: is resolved against the registry (one manifest request), nothing is downloaded.
REPULL_SECONDS = 0.25

#: The kubelet's ``nodeStatusMaxImages`` default: how many images ``status.images`` lists.
NODE_STATUS_MAX_IMAGES = 50
#: Upstream's ``MaxNamesPerImageInNodeStatus``: names listed per image.
MAX_NAMES_PER_IMAGE = 5


class ImageCache:
    """The node's images (``crictl images``), by normalized reference."""

    def __init__(self) -> None:
        self._images: dict[str, Image] = {}

    def get(self, image: str) -> Image | None:
        return self._images.get(normalize_image(image))

    def add(self, img: Image) -> None:
        self._images[img.ref] = img

    def node_images(self) -> list[dict[str, Any]]:
        """``status.images`` of the Node, as the kubelet's ``Images`` status setter lists them.

        One entry per image (by repo digest): ``names`` is the repo digest then
        the tags (``[docker.io/library/nginx@sha256:…, docker.io/library/nginx:1.30]``,
        at most :data:`MAX_NAMES_PER_IMAGE`), ``sizeBytes`` its size in bytes;
        largest first (ties by name), at most :data:`NODE_STATUS_MAX_IMAGES`.
        """
        by_id: dict[str, dict[str, Any]] = {}
        for ref in sorted(self._images):
            img = self._images[ref]
            entry = by_id.setdefault(img.image_id, {"names": [img.image_id], "sizeBytes": img.size})
            entry["names"].append(ref)
            entry["sizeBytes"] = max(entry["sizeBytes"], img.size)
        for entry in by_id.values():
            del entry["names"][MAX_NAMES_PER_IMAGE:]
        out = sorted(by_id.values(), key=lambda e: (-e["sizeBytes"], e["names"][0]))
        return out[:NODE_STATUS_MAX_IMAGES]


# --------------------------------------------------------------------------- behaviour adapter

def behaviour_module() -> Any:
    """:mod:`k8semu.node.behaviour` (what each container does)."""
    from . import behaviour

    return behaviour


@attrs.frozen
class Effect:
    """One thing a running program did, normalized.

    ``kind``: ``exit`` (``code``, ``reason``), ``log`` (``text``), ``ready`` /
    ``live`` (``value``), ``usage`` (``memory`` bytes, ``cpu`` millicores).
    """

    kind: str
    t: float
    code: int = 0
    reason: str = ""
    text: str = ""
    value: bool = True
    memory: int | None = None
    cpu: int | None = None


def _first(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
        if isinstance(obj, dict) and n in obj:
            return obj[n]
    return default


def normalize_effect(e: Any) -> Effect:
    """Map a behaviour effect (``Exited``, ``LogLine``, ``ReadinessChanged``,
    ``LivenessChanged``, ``UsageChanged``) to an :class:`Effect`."""
    if isinstance(e, Effect):
        return e
    name = type(e).__name__
    t = float(_first(e, "t", "time", "at", default=0.0))
    if name == "Exited":
        return Effect("exit", t, code=int(_first(e, "code", "exit_code", default=0)),
                      reason=_first(e, "reason", default="") or "")
    if name == "LogLine":
        return Effect("log", t, text=str(_first(e, "text", "line", "message", default="")))
    if name == "ReadinessChanged":
        return Effect("ready", t, value=bool(_first(e, "ok", "ready", "value", default=True)))
    if name == "LivenessChanged":
        return Effect("live", t, value=bool(_first(e, "ok", "alive", "live", "value", default=True)))
    if name == "StartupChanged":
        return Effect("startup", t, value=bool(_first(e, "ok", "value", default=True)))
    if name == "UsageChanged":
        mem = _first(e, "memory_bytes", "memory", "mem")
        cpu = _first(e, "cpu_millis", "cpu", "cpu_millicores")
        if mem is not None and not isinstance(mem, int):
            from ..api.quantity import bytes_value

            mem = bytes_value(str(mem))
        return Effect("usage", t, memory=mem, cpu=cpu if isinstance(cpu, int) or cpu is None else None)
    return Effect("other", t)


# --------------------------------------------------------------------------- attached stdin

#: The stdin of each running container with ``stdin: true`` (a
#: :class:`~k8semu.node.behaviour.StdinFeed`), by container ID (64 hex digits), as the runtime
#: keeps it open for ``attach``: what ``k8semu serve``'s attach writes there reaches the
#: container's main process, and every rebuild of the container (``logs``, ``exec``, ``attach``)
#: in the same process reads it too. Not in the event log: a command reading the cluster file
#: later replays the container without it (its shell then waits for input, as it did before).
_STDIN: dict[str, Any] = {}
_STDIN_MAX = 512  # feeds kept (the oldest go first)
#: Whether the kubelet's runs poll an attached stdin (see ``StdinFeed.poll``); None: when the
#: clock runs in real time (``k8semu serve``), so settling in virtual time is not kept busy.
STDIN_POLL: bool | None = None


def _live_clock() -> bool:
    if STDIN_POLL is not None:
        return STDIN_POLL
    try:
        import trio

        clock = trio.lowlevel.current_clock()
    except RuntimeError:  # not in trio.run
        return False
    return getattr(clock, "is_virtual", True) is False


def open_stdin(cid: str, *, tty: bool = False) -> Any:
    """A fresh, open stdin for the container ``cid`` starting now (replacing any earlier one:
    IDs are per node, pod and attempt, and another cluster in this process may reuse them)."""
    feed = behaviour_module().StdinFeed(tty=tty, poll=_live_clock())
    _STDIN.pop(cid, None)
    _STDIN[cid] = feed
    while len(_STDIN) > _STDIN_MAX:
        del _STDIN[next(iter(_STDIN))]
    return feed


def container_stdin(cid: str | None) -> Any:
    """The stdin feed of the container with ID ``cid`` (``containerd://`` prefix allowed), or None."""
    if not cid:
        return None
    return _STDIN.get(cid.rsplit("://", 1)[-1])


#: Files that ``kubectl cp`` (``tar x`` in an exec) put into a running container, by container
#: ID: (path, text; None for a directory), in order. Every later exec/attach in this process
#: rebuilds the container with them (the main process and the log replay do not see them).
_FILES: dict[str, list[tuple[str, str | None]]] = {}


def record_files(cid: str | None, items: list[tuple[str, str | None]]) -> None:
    """Keep what an exec extracted into the container ``cid`` (see :data:`_FILES`)."""
    if cid and items:
        key = cid.rsplit("://", 1)[-1]
        _FILES.setdefault(key, []).extend(items)
        while len(_FILES) > _STDIN_MAX:
            del _FILES[next(iter(_FILES))]


def container_files(cid: str | None) -> list[tuple[str, str | None]]:
    """What execs extracted into the container ``cid`` so far (:func:`record_files`)."""
    return list(_FILES.get((cid or "").rsplit("://", 1)[-1], ())) if cid else []


# --------------------------------------------------------------------------- containers

@attrs.define
class Sandbox:
    """A pod sandbox (``pause`` container): its ID and the pod's IP."""

    id: str
    pod_uid: str
    ip: str
    created_at: float


@attrs.define(eq=False)
class Container:
    """One container instance (one attempt of a pod's container).

    ``state``: ``created``, ``running`` or ``exited``. Times are virtual seconds.
    """

    id: str
    name: str
    pod_uid: str
    attempt: int
    image: str
    image_id: str
    state: str = "created"
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    run: Any = None
    memory_limit: int | None = None
    memory: int | None = None
    ready_hint: bool | None = None
    live_hint: bool | None = None
    logs: list[tuple[float, str]] = attrs.field(factory=list)
    stopping: bool = False
    post_start_reported: bool = False
    #: the spec's ``stdin`` / ``tty``: the runtime keeps the container's stdin open for attach
    stdin: bool = False
    tty: bool = False

    @property
    def running(self) -> bool:
        return self.state == "running"


class ContainerRuntime:
    """containerd for one node: sandboxes, an image cache, containers.

    Args:
        node: the node name (part of every ID).
        behaviour: the behaviour module (default :func:`behaviour_module`).
        pull_scale: multiplies every image's pull duration (the cluster's ``imagePullSeconds`` knob
            is handed in already as a scale, 1.0 = the behaviour's own durations).
    """

    def __init__(self, node: str, behaviour: Any = None, pull_scale: float = 1.0,
                 epoch: datetime | None = None) -> None:
        self.node = node
        self.behaviour = behaviour or behaviour_module()
        self.pull_scale = pull_scale
        self.epoch = epoch
        self.images = ImageCache()
        self.sandboxes: dict[str, Sandbox] = {}
        self.containers: dict[str, Container] = {}
        self._puller_free_at = 0.0
        self._fetched: dict[str, float] = {}  # image ref -> virtual time its content is in the store

    # ---------------------------------------------------------------- sandboxes
    def run_pod_sandbox(self, pod_uid: str, ip: str, now: float) -> Sandbox:
        """RunPodSandbox: the pod's pause container and network namespace."""
        sb = self.sandboxes.get(pod_uid)
        if sb is None:
            sb = Sandbox(container_id(self.node, pod_uid, "POD", 0), pod_uid, ip, now)
            self.sandboxes[pod_uid] = sb
        return sb

    def remove_pod_sandbox(self, pod_uid: str) -> None:
        """StopPodSandbox + RemovePodSandbox; the pod's containers go with it."""
        self.sandboxes.pop(pod_uid, None)
        for cid in [c for c, ctr in self.containers.items() if ctr.pod_uid == pod_uid]:
            del self.containers[cid]

    # ---------------------------------------------------------------- images
    def pull_image(self, image: str, now: float) -> PullOutcome:
        """PullImage, serialized behind earlier pulls (``serializeImagePulls``).

        Pods that start together with the same missing image each queue a pull,
        as upstream's kubelet does; once an earlier pull has fetched the image's
        content, a later pull of it only resolves the tag (:data:`REPULL_SECONDS`),
        as containerd does for content already in its store (so does a pull of a
        cached image, ``imagePullPolicy: Always``).

        The outcome's ``done_at`` is when the pull ends; the image joins the
        cache only when the caller calls :meth:`finish_pull` then. ``message``
        is the CRI error (``rpc error: code = NotFound desc = …``) on failure.
        """
        res = self.behaviour.image_pull_result(image)
        start = max(now, self._puller_free_at)
        ref = (res.ref or normalize_image(image)) if res.ok else ""
        if res.ok and (self.images.get(ref) is not None or self._fetched.get(ref, math.inf) <= start):
            duration = REPULL_SECONDS * self.pull_scale  # the content is in the store: resolve the tag only
        else:
            duration = float(res.duration) * self.pull_scale
        done = start + duration
        self._puller_free_at = done
        img = None
        message = res.message or ""
        prefix = f'Failed to pull image "{image}": '
        if message.startswith(prefix):
            message = message[len(prefix):]
        if res.ok:
            self._fetched.setdefault(ref, done)
            img = Image(ref, res.image_id or f"{image_repo(image)}@{_digest(ref)}", int(res.size or 0))
        return PullOutcome(bool(res.ok), img, res.reason or "ErrImagePull", message, duration, done - now, done)

    def known_image(self, ref: str, image_id: str, size: int = 0) -> Image:
        """An image already in the node's store, as a restarted kubelet finds it (CRI ``ListImages``).

        containerd keeps its images, and their sizes, across kubelet restarts;
        the emulated store is rebuilt from the API instead (the pods'
        ``imageID`` and the Node's ``status.images``), where the size may be
        missing. A missing (0) size is what pulling ``ref`` gives
        (``behaviour.image_pull_result(ref).size``, the same for every pull),
        so ``status.images`` never reports ``sizeBytes: 0`` for a pulled image.

        Args:
            ref: normalized reference (``docker.io/library/nginx:1.30``).
            image_id: repo digest (``docker.io/library/nginx@sha256:…``).
            size: size in bytes if known, else 0.
        """
        if size <= 0:
            res = self.behaviour.image_pull_result(ref)
            size = int(res.size or 0) if res.ok else 0
        return Image(ref, image_id, size)

    def invalid_image(self, image: str) -> str | None:
        """The kubelet's message when ``image`` cannot even be parsed, else None."""
        res = self.behaviour.image_pull_result(image)
        return res.message if res.reason == "InvalidImageName" else None

    def finish_pull(self, outcome: PullOutcome) -> None:
        if outcome.ok and outcome.image is not None:
            self.images.add(outcome.image)

    # ---------------------------------------------------------------- containers
    def create_container(self, pod: dict[str, Any], spec: dict[str, Any], attempt: int,
                         image: Image | None, now: float, *, env: Any = None, mounts: Any = ()) -> Container:
        """CreateContainer: a new instance of ``spec`` with its program (not yet started).

        ``env`` is the kubelet's resolved environment (a
        :class:`~k8semu.node.behaviour.ResolvedEnv`) and ``mounts`` the container's
        volume mounts (:class:`~k8semu.node.behaviour.Mount`); see :mod:`k8semu.node.inputs`.

        Raises:
            ValueError: the container's behaviour script is invalid (the kubelet
                reports ``CreateContainerError`` with the message).
        """
        program = self._program(pod, spec, env, mounts)
        uid = pod["metadata"]["uid"]
        cid = container_id(self.node, uid, spec["name"], attempt)
        c = Container(
            cid, spec["name"], uid, attempt,
            image.ref if image else normalize_image(spec.get("image", "")),
            image.image_id if image else "",
            memory_limit=program.memory_limit,
        )
        c.run = program
        c.stdin, c.tty = bool(spec.get("stdin")), bool(spec.get("tty"))
        self.containers[cid] = c
        return c

    def _program(self, pod: dict[str, Any], spec: dict[str, Any], env: Any = None, mounts: Any = ()) -> Any:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if env is None and not mounts:
            return self.behaviour.build_program(spec, annotations)
        return self.behaviour.build_program(spec, annotations, env, mounts=mounts)

    def _wall_clock(self) -> Any:
        epoch = self.epoch
        if epoch is None:
            return None
        return lambda t: epoch + timedelta(seconds=t)

    def start_container(self, c: Container, now: float) -> None:
        """StartContainer: the program begins at ``now``."""
        program = c.run
        _FILES.pop(c.id, None)  # a new instance starts from its image (IDs may be reused: see open_stdin)
        feed = open_stdin(c.id, tty=c.tty) if c.stdin else None
        c.run = program.start(now, wall_clock=self._wall_clock(), stdin=feed)
        c.state = "running"
        c.started_at = now

    def adopt(self, pod: dict[str, Any], spec: dict[str, Any], c: Container, started_at: float, *,
              env: Any = None, mounts: Any = ()) -> None:
        """Re-attach a container that kept running while the kubelet was down: its
        program (with the ``env`` and ``mounts`` it was created with) restarts from
        ``started_at`` and catches up on the next :meth:`advance`."""
        c.run = self._program(pod, spec, env, mounts)
        c.memory_limit = c.run.memory_limit
        c.stdin, c.tty = bool(spec.get("stdin")), bool(spec.get("tty"))
        self.start_container(c, started_at)
        c.post_start_reported = True  # the kubelet that started it handled its postStart hook
        self.containers[c.id] = c

    def next_event_time(self, c: Container) -> float | None:
        """When the container's program does something next (None: nothing planned)."""
        if not c.running or c.run is None:
            return None
        t = c.run.next_event_time()
        return None if t is None else float(t)

    def advance(self, c: Container, until: float) -> list[Effect]:
        """Run the program to ``until``; apply exits (``OOMKilled`` included) and return the effects."""
        if not c.running or c.run is None:
            return []
        return self._apply(c, c.run.advance(until))

    def _apply(self, c: Container, raw: list[Any]) -> list[Effect]:
        out = []
        for r in raw:
            e = normalize_effect(r)
            if e.kind == "usage" and e.memory is not None:
                c.memory = e.memory
            elif e.kind == "log":
                c.logs.append((e.t, e.text))
            elif e.kind == "exit" and c.running:
                self._exit(c, e.t, e.code, e.reason or ("Completed" if e.code == 0 else "Error"))
            out.append(e)
        return out

    def probe(self, c: Container, kind: str, probe: dict[str, Any], now: float) -> bool:
        """The program's answer to a ``startup``/``liveness``/``readiness`` probe at ``now``."""
        if not c.running or c.run is None:
            return False
        return bool(c.run.probe(kind, probe, now))

    @staticmethod
    def probe_output(c: Container) -> str:
        """What the last :meth:`probe`'s ``exec`` command wrote (stdout then stderr, as ``ExecSync``
        returns it to the kubelet's exec prober); empty for other probes."""
        return str(getattr(c.run, "probe_output", "") or "")

    @staticmethod
    def post_start_failed(c: Container) -> bool:
        """True once, when the container's ``postStart`` exec hook has ended with a non-zero status
        (the kubelet then reports ``FailedPostStartHook`` and kills the container). A hook still
        running, a successful one, or none: False."""
        result = getattr(c.run, "post_start_result", None)
        if result is None or c.post_start_reported:
            return False
        c.post_start_reported = True
        return result[0] != 0

    def signal_term(self, c: Container, now: float) -> None:
        """SIGTERM: the container exits now, later (see :meth:`next_event_time`), or never."""
        if c.running and c.run is not None:
            c.stopping = True
            self._apply(c, c.run.terminate(now))

    def kill(self, c: Container, now: float) -> None:
        """SIGKILL (grace period over): exit 137 ``Error``."""
        if c.running:
            if c.run is not None:
                self._apply(c, c.run.kill(now))
            if c.running:
                self._exit(c, now, 137, "Error")

    @staticmethod
    def _exit(c: Container, t: float, code: int, reason: str) -> None:
        c.state = "exited"
        c.finished_at = t
        c.exit_code = code
        c.reason = reason
