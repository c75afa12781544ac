"""What an emulated container does: its *behaviour program*, stepped in virtual time.

k8semu runs no real processes. The kubelet/runtime asks this module what a
container would do and replays it on the virtual clock. Everything here is a
pure function of its inputs: no trio, no wall clock, no unseeded randomness.

Design
======

1. **Where the behaviour comes from** (:func:`build_program`):

   * a scripted behaviour in the pod annotation ``k8semu.io/behaviour.<container>``
     (or ``k8semu.io/behaviour`` for every container): a small line-oriented
     language, see ``docs/container-behaviour.md``. It replaces the container's
     command (``exec`` with no arguments runs the command after all);
   * otherwise the container's command line, built as the runtime does:
     ``command + args`` when ``command`` is set, else the image's ENTRYPOINT +
     ``args`` (or + the image's CMD when there are no args). The image's
     ENTRYPOINT/CMD come from a small table of well-known images
     (:data:`KNOWN_IMAGES`). Before anything else the kubelet's ``$(VAR)``
     expansion (with ``$$`` escaping) is applied to ``command`` and ``args``
     (:func:`expand_kube_vars`).

2. **Interpreting the command line.** ``argv[0]``'s base name selects a
   program: a POSIX-ish shell (``sh``/``bash``/``ash``/``dash`` ``-c``), a core
   utility (``sleep``, ``echo``, ``printf``, ``date``, ``cat``, ``tail``,
   ``touch``, ``rm``, ``ls`` (``-l`` in busybox's long format), ``test``, ``env``,
   ``seq``, busybox's ``ps`` where the image has busybox ...), or a known program
   (``nginx -T``, ``stress``, ``agnhost liveness``, ``perl -Mbignum=bpi``,
   ``python -c`` one-liners in a tiny safe subset, the database servers'
   password checks ...). Anything else is an *unknown program*: it runs until
   stopped and answers network probes, as a server would.

   The shell is a small hand-written lexer and recursive-descent parser. Words
   are lexed by hand rather than with :mod:`shlex` because expansion needs to
   know which parts were quoted (``'$A'`` vs ``"$A"``); :mod:`shlex` splits the
   behaviour-script lines. A script the parser cannot read is treated like an
   unknown program (runs until stopped), never as a crash. Unquoted ``*``,
   ``?`` and ``[`` expand to the container's paths (:meth:`_Shell.glob`).

3. **Virtual time.** Every program is a Python generator that yields the
   absolute virtual time it wants to be resumed at (``math.inf``: never, i.e.
   blocked until stopped). :class:`Run` keeps a heap of such tasks (the main
   program, ``cmd &`` background jobs) and of timers (scripted ``... after 10s``),
   ordered by ``(time, sequence)``, and turns what the program does into
   :data:`Effect` values with their virtual timestamps. A loop that runs more
   than ``MAX_STEPS_PER_INSTANT`` commands without letting time pass is a busy
   loop: it stops producing output and reports one core of CPU use.

4. **Probes** (:meth:`Run.probe`): scripted ``ready``/``live``/``started``
   overrides win; ``exec`` probes run the probe command in the container's
   in-memory file system (``cat /tmp/healthy``) and keep its output
   (:attr:`Run.probe_output`, stdout then stderr, for the kubelet's
   ``Unhealthy`` event); ``httpGet``/``tcpSocket``/``grpc``
   pass while a server-like program is running and the port is one the
   container declares (any port when it declares none).

5. **Image pulls** (:func:`image_pull_result`): reference parsing and
   normalisation like the runtime (``nginx`` -> ``docker.io/library/nginx:latest``),
   failures with the kubelet's/containerd's messages, deterministic durations
   from SHA-256 of the reference, and sizes as containerd reports them (the
   compressed size; a table of well-known images, else a plausible size from
   the reference's hash).

6. **File systems** (:func:`image_tree`): a container sees its image's base
   tree (the directories of its busybox/Alpine/Debian/Ubuntu base, the
   ``os-release`` files, nginx's ``/usr/share/nginx/html`` pages and
   configuration, the entrypoints; executables and files whose contents are
   not modelled are empty), its volume mounts and what it wrote. The base tree
   is one shared, read-only object per kind of image; each container writes
   into its own layer (:class:`_LayeredFS`, copy-on-write with whiteouts).
   What the container writes gets the virtual time as its mtime (the rest shows
   the container's start), ``ln -s`` makes symbolic links; a write into a
   directory that does not exist or onto a read-only file system (a read-only
   :class:`Mount`, ``readOnlyRootFilesystem``) fails with busybox's messages.
   ``ps`` (and ``top``) sees the container's PID namespace: its own, the pod's
   (``shareProcessNamespace``, ``/pause`` as PID 1), a debug target's or the
   node's (``hostPID``), read from the pod that :attr:`Run.network` holds, and
   the processes the run's shells started (:class:`_Proc`): an exec'd process
   takes the next PID and runc's threads the 5 after it, a shell forks every
   command that is not a builtin (the last one of ``sh -c`` is ``exec``'d in
   its place, as ash does), background jobs (``$!``), pipeline stages and
   ``$(…)``; ``$$`` is the shell's PID. PIDs are numbered when something first
   shows one. ``kill`` signals them (nginx's master reloads on ``HUP``: new
   workers), ``/proc/PID/root/…`` reads the file system of the process's
   container.

7. **Start-up output of the known images**: the images' own log lines, with
   timestamps from the container's clock and the PIDs the real processes get:
   nginx's ``docker-entrypoint.sh`` (it also runs the envsubst templates and
   reports a read-only ConfigMap ``default.conf``) and its ``[notice]`` lines,
   redis's banner (per redis version), Apache's notices (``httpd``, PHP's
   ``*-apache`` images such as the guestbook frontend), ``stress``'s
   dispatching line. nginx also logs each request :func:`http_answer` serves.

8. **Lifecycle hooks**: a ``postStart`` exec hook runs in the container at
   its start, next to the main program (:attr:`Run.post_start_result`), so a
   replay of the container (``logs``, ``exec``) sees what the hook wrote.

9. **The process environment** (:func:`process_env`, :class:`ResolvedEnv`): the
   kubelet's variables over the image config's ``Env`` (:func:`image_env`:
   ``PATH`` for every image, the official images' ``NGINX_VERSION``,
   ``REDIS_VERSION``, ``PYTHON_VERSION`` ...), in the order containerd and runc
   give them (``PATH``, ``HOSTNAME``, the image's, the container's, runc's
   ``HOME`` for the process's user: :func:`runtime_home`). The image's mapping
   is one per image, shared by its containers.

Units: seconds (virtual), millicores, bytes.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import hashlib
import heapq
import math
import posixpath
import random
import re
import shlex
from collections.abc import Callable, Generator, Iterator, Mapping, MutableMapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, Union

import attrs

from k8semu.api.humanize import parse_timestamp
from k8semu.api.meta import DEFAULT_EPOCH
from k8semu.api.quantity import bytes_value, cpu_millis

__all__ = [
    "BEHAVIOUR_ANNOTATION",
    "KNOWN_IMAGES",
    "MAX_STEPS_PER_INSTANT",
    "Effect",
    "Exited",
    "HTTPAnswer",
    "ImageInfo",
    "KnownImage",
    "LivenessChanged",
    "LogLine",
    "Mount",
    "Program",
    "PullResult",
    "ReadinessChanged",
    "ResolvedEnv",
    "Run",
    "StartupChanged",
    "UsageChanged",
    "ExecNotFound",
    "SHELLS",
    "ShellSession",
    "StdinFeed",
    "STDIN_POLL",
    "build_program",
    "container_env",
    "DEFAULT_PATH",
    "image_env",
    "process_env",
    "runtime_home",
    "exec_command",
    "expand_kube_vars",
    "http_answer",
    "non_http_reply",
    "image_pull_result",
    "normalize_image",
    "parse_duration",
]

#: Annotation prefix for scripted behaviour (``k8semu.io/behaviour.<container-name>``).
BEHAVIOUR_ANNOTATION = "k8semu.io/behaviour"

#: Commands one task may run at one virtual instant before it counts as a busy loop.
MAX_STEPS_PER_INSTANT = 10_000

#: The kubelet's exec prober keeps at most this much of a probe command's output (``maxReadLength``).
_PROBE_OUTPUT_MAX = 10 * 1024

_MiB = 1024 * 1024
_INF = math.inf

# --------------------------------------------------------------------------- effects


@attrs.frozen
class LogLine:
    """One line the container wrote (``stream`` is ``"stdout"`` or ``"stderr"``), at virtual time ``t``."""

    t: float
    text: str
    stream: str = "stdout"


@attrs.frozen
class Exited:
    """The container's main process ended at ``t`` with exit ``code``.

    ``reason`` is what ``status.containerStatuses[].state.terminated.reason``
    shows upstream: ``Completed`` (code 0), ``Error`` (any other code) or
    ``OOMKilled`` (memory above ``limits.memory``, code 137).
    """

    t: float
    code: int
    reason: str


@attrs.frozen
class ReadinessChanged:
    """A scripted readiness override (``ready true|false``) took effect at ``t``."""

    t: float
    ok: bool


@attrs.frozen
class LivenessChanged:
    """A scripted liveness override (``live true|false``) took effect at ``t``."""

    t: float
    ok: bool


@attrs.frozen
class StartupChanged:
    """A scripted startup-probe override (``started true|false``) took effect at ``t``."""

    t: float
    ok: bool


@attrs.frozen
class UsageChanged:
    """Resource use changed at ``t``: CPU in millicores (capped at ``limits.cpu``), memory in bytes."""

    t: float
    cpu_millis: int
    memory_bytes: int


Effect = Union[LogLine, Exited, ReadinessChanged, LivenessChanged, StartupChanged, UsageChanged]

# --------------------------------------------------------------------------- durations and $(VAR)

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|[smhd]?)")
_UNIT = {"": 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, *, allow_ms: bool = False) -> float:
    """Seconds of a GNU ``sleep`` interval: ``3600``, ``1.5``, ``10s``, ``5m``, ``1h``, ``2d``, ``infinity``.

    ``allow_ms`` also accepts ``500ms`` (behaviour scripts). Returns ``math.inf``
    for ``inf``/``infinity``. Raises ValueError for anything else.
    """
    t = text.strip()
    if t.lower() in ("inf", "infinity"):
        return _INF
    m = _DURATION.fullmatch(t)
    if not m or (m.group(2) == "ms" and not allow_ms):
        raise ValueError(f"invalid duration {text!r}")
    return float(m.group(1)) * _UNIT[m.group(2)]


def expand_kube_vars(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion of ``command``/``args``/env values.

    ``$(NAME)`` becomes ``env[NAME]`` when NAME is defined and stays as written
    otherwise; ``$$`` is an escaped ``$``; any other ``$`` is kept. Mirrors
    ``third_party/forked/golang/expansion`` (so ``$(date)`` reaches the shell).
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "$" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:  # incomplete reference: "$(" kept, scanning goes on after it
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            out.append(env[name] if name in env else f"$({name})")
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


class ResolvedEnv(Mapping[str, str]):
    """A container process's complete environment, read-only: the kubelet's variables (see
    :mod:`k8semu.node.envvars`) merged with what the runtime adds, as containerd and runc do.
    :func:`container_env` takes it as it is, so a variable the kubelet left out (an ``optional``
    key that does not exist) is not set at all, as in a real container.

    Layers, nothing copied per container:

    * ``own``: the container's own variables in order (``HOSTNAME`` first when the kubelet's
      runtime view made it, :func:`k8semu.node.inputs.container_environment`);
    * ``shared``: the namespace's service-link variables (one dict for every container that
      sees the same Services), minus what ``own`` overrides. With 300 Services that is ~2,400
      variables, which as a dict per container cost ~150 KB each;
    * ``image``: the image config's ``Env`` (:func:`image_env`, one read-only mapping per image,
      ``PATH`` first); the container's variables win;
    * ``tty``: the container has a terminal (``tty: true``): containerd adds ``TERM=xterm``;
    * ``home``: the ``HOME`` runc sets when nothing else did (:func:`runtime_home`);
    * ``uid``: the user the process runs as when the pod or container sets ``runAsUser``;
    * ``gid``, ``groups``: its group (``runAsGroup``) and supplementary groups (the primary
      group, then ``supplementalGroups`` and ``fsGroup``, as the kubelet and containerd 2 set
      them) when the security context names any; None and () otherwise (the image's).

    Order (what ``env`` prints): containerd starts from its default ``PATH``, adds ``TERM``
    (tty) and ``HOSTNAME``, then the image's ``Env`` and the container's variables, each
    replacing a variable of the first three in place and else appended; runc keeps the last
    of duplicates and appends ``HOME``. So: ``PATH``, ``TERM``, ``HOSTNAME``, the image's other
    variables the container does not set, ``own``, ``shared``, ``HOME``.

    ``runtime`` names the variables the container runtime adds (``HOSTNAME``): the process
    sees them, but the kubelet's ``$(VAR)`` expansion of ``command``/``args`` does not know
    them (:meth:`kubelet_vars`, which leaves out the image's and runc's variables too).
    """

    __slots__ = ("own", "shared", "runtime", "image", "tty", "home", "uid", "gid", "groups", "_len")

    def __init__(self, own: Mapping[str, str] | None = None, shared: Mapping[str, str] | None = None,
                 runtime: frozenset[str] = frozenset(), *, image: Mapping[str, str] | None = None,
                 tty: bool = False, home: str | None = None, uid: int | None = None) -> None:
        self.own: dict[str, str] = dict(own or {})
        self.shared: Mapping[str, str] = shared if shared is not None else {}
        self.runtime = runtime
        self.image: Mapping[str, str] = image if image is not None else _NO_ENV
        self.tty = tty
        self.home = home
        self.uid = uid
        self.gid: int | None = None
        self.groups: tuple[int, ...] = ()
        self._len: int | None = None

    def with_runtime(self, image: Mapping[str, str], *, tty: bool = False, home: str | None = None,
                     uid: int | None = None, gid: int | None = None,
                     groups: tuple[int, ...] = ()) -> ResolvedEnv:
        """This environment with the runtime's layers (``own`` and ``shared`` shared, not copied)."""
        out = ResolvedEnv.__new__(ResolvedEnv)
        out.own, out.shared, out.runtime = self.own, self.shared, self.runtime
        out.image, out.tty, out.home, out.uid, out._len = image, tty, home, uid, None
        out.gid, out.groups = gid, groups
        return out

    def _lead(self) -> tuple[str, ...]:
        return ("PATH", "TERM", "HOSTNAME") if self.tty else ("PATH", "HOSTNAME")

    def __getitem__(self, name: str) -> str:
        own = self.own
        if name in own:
            return own[name]
        if name in self.shared:
            return self.shared[name]
        if name in self.image:
            return self.image[name]
        if name == "TERM" and self.tty:
            return "xterm"
        if name == "HOME" and self.home is not None:
            return self.home
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return (name in self.own or name in self.shared or name in self.image
                or (name == "TERM" and self.tty) or (name == "HOME" and self.home is not None))

    def _set_by_container(self, name: str) -> bool:
        return name in self.own or name in self.shared

    @property
    def home_added(self) -> bool:
        """Whether ``HOME`` is runc's (nothing else set it): it comes last, after an exec's own
        variables (``TERM`` of ``kubectl exec -t``)."""
        return self.home is not None and "HOME" not in self.image and not self._set_by_container("HOME")

    def __iter__(self) -> Iterator[str]:
        own, shared, image = self.own, self.shared, self.image
        lead = self._lead()
        for k in lead:
            if k in self:
                yield k
        for k in image:
            if k not in own and k not in shared and k not in lead:
                yield k
        for k in own:
            if k not in lead:
                yield k
        for k in shared:
            if k not in own and k not in lead:
                yield k
        if self.home_added:
            yield "HOME"

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(1 for _ in self)
        return self._len

    def as_dict(self) -> dict[str, str]:
        """``dict(self)``, the same items in the same order, built with C-level merges (a shell
        copies the environment it starts with: 2,400 service variables one by one through
        ``__getitem__`` cost ~2 ms per container)."""
        own, shared, image = self.own, self.shared, self.image
        out = {k: self[k] for k in self._lead() if k in self}
        for k, v in image.items():
            if k not in own and k not in shared and k not in out:
                out[k] = v
        for k, v in own.items():
            if k not in out:
                out[k] = v
        out.update(shared)  # a key already placed keeps its place...
        for k in own.keys() & shared.keys():
            out[k] = own[k]  # ...and the container's own value
        if self.home_added:
            out["HOME"] = self.home  # type: ignore[assignment]
        return out

    def kubelet_vars(self) -> Mapping[str, str]:
        """The variables the kubelet's ``$(VAR)`` expansion knows: ``own`` and ``shared`` without
        the runtime's (a view, not a copy)."""
        return _KubeletVars(self)

    def __repr__(self) -> str:
        return f"ResolvedEnv({dict(self)!r})"


#: An empty, read-only environment (the image layer of a :class:`ResolvedEnv` without one).
_NO_ENV: Mapping[str, str] = MappingProxyType({})


class _KubeletVars(Mapping[str, str]):
    """:meth:`ResolvedEnv.kubelet_vars`: ``own`` then ``shared``, minus the runtime's names."""

    __slots__ = ("_env",)

    def __init__(self, env: ResolvedEnv) -> None:
        self._env = env

    def __getitem__(self, name: str) -> str:
        env = self._env
        if name in env.runtime:
            raise KeyError(name)
        if name in env.own:
            return env.own[name]
        return env.shared[name]

    def __contains__(self, name: object) -> bool:
        env = self._env
        return name not in env.runtime and (name in env.own or name in env.shared)

    def __iter__(self) -> Iterator[str]:
        env = self._env
        for k in env.own:
            if k not in env.runtime:
                yield k
        for k in env.shared:
            if k not in env.own and k not in env.runtime:
                yield k

    def __len__(self) -> int:
        return sum(1 for _ in self)


def container_env(container: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """The environment a container sees, as far as this module can tell.

    A :class:`ResolvedEnv` is the whole environment, used as it is. Otherwise:
    entries of ``container["env"]`` with ``value`` are expanded against the
    entries before them (as the kubelet does); ``valueFrom`` entries become the
    empty string; ``env`` (a partial environment, e.g. from a test) then wins
    over everything.
    """
    if isinstance(env, ResolvedEnv):
        return env  # read-only and complete: shared, not copied
    out: dict[str, str] = {}
    for entry in container.get("env") or []:
        name = entry.get("name")
        if not name:
            continue
        out[name] = expand_kube_vars(str(entry.get("value") or ""), out) if "value" in entry else ""
    if env:
        out.update(env)
    return out


def _run_as_user(spec: Mapping[str, Any] | None, field: str = "runAsUser") -> int | None:
    value = ((spec or {}).get("securityContext") or {}).get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def process_env(container: Mapping[str, Any], env: Mapping[str, str] | None = None, *,
                pod: Mapping[str, Any] | None = None) -> ResolvedEnv:
    """The environment of the container's processes: :func:`container_env` with what the runtime
    adds (the image's ``Env``, ``TERM`` for ``tty: true``, runc's ``HOME``; see :class:`ResolvedEnv`).
    The user is the container's ``runAsUser``, else the pod's (``pod``), else the image's. An
    environment that has the runtime's layers already is returned as it is."""
    base = container_env(container, env)
    if isinstance(base, ResolvedEnv):
        if base.home is not None:
            return base
        resolved = base
    else:
        resolved = ResolvedEnv(base)
    image = str(container.get("image") or "")
    pod_spec = (pod or {}).get("spec")
    uid = _run_as_user(container)
    if uid is None:
        uid = resolved.uid if resolved.uid is not None else _run_as_user(pod_spec)
    gid = _run_as_user(container, "runAsGroup")
    if gid is None:
        gid = resolved.gid if resolved.gid is not None else _run_as_user(pod_spec, "runAsGroup")
    pod_sc = (pod_spec or {}).get("securityContext") or {}
    extra = [g for g in pod_sc.get("supplementalGroups") or () if isinstance(g, int)]
    if isinstance(pod_sc.get("fsGroup"), int):
        extra.append(pod_sc["fsGroup"])
    groups = resolved.groups
    if extra or gid is not None:
        groups = tuple(dict.fromkeys([gid if gid is not None else 0, *extra]))
    return resolved.with_runtime(image_env(image), tty=bool(container.get("tty")), home=runtime_home(image, uid),
                                 uid=uid, gid=gid, groups=groups)


# --------------------------------------------------------------------------- images

_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"((?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::([\w][\w.-]{0,127}))?"
    r"(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)


@attrs.frozen
class ImageInfo:
    """A normalised image reference.

    ``repository`` is ``docker.io/library/nginx``; ``tag`` is the tag or None
    (``latest`` is applied when there is neither tag nor digest); ``ref`` is what
    the runtime reports as ``status.containerStatuses[].image``
    (``docker.io/library/nginx:latest``); ``domain`` the registry host.
    """

    repository: str
    domain: str
    path: str
    tag: str | None
    digest: str | None

    @property
    def ref(self) -> str:
        if self.digest and not self.tag:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag or 'latest'}"

    @property
    def base_name(self) -> str:
        """Last path component (``nginx``, ``busybox``, ``agnhost``): the key of :data:`KNOWN_IMAGES`."""
        return self.path.rsplit("/", 1)[-1]


def normalize_image(image: str) -> ImageInfo:
    """Parse and normalise an image reference like ``ParseNormalizedNamed`` (distribution/reference).

    Raises ValueError with the library's message: ``invalid reference format``,
    ``invalid reference format: repository name must be lowercase``,
    ``repository name must have at least one component``, ...
    """
    if re.fullmatch(r"[a-f0-9]{64}", image):
        raise ValueError(f"invalid repository name ({image}), cannot specify 64-byte hexadecimal strings")
    if not image:
        raise ValueError("repository name must have at least one component")
    name_part = image.split("@", 1)[0]
    slash = name_part.find("/")
    first = name_part[:slash] if slash >= 0 else ""
    if slash < 0 or ("." not in first and ":" not in first and first != "localhost" and first.lower() == first):
        domain, remainder = "docker.io", image
    else:
        domain, remainder = first, image[slash + 1:]
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in remainder.split("@", 1)[0].split(":", 1)[0]:
        remainder = "library/" + remainder
    repo_path = re.split(r"[:@]", remainder, maxsplit=1)[0]
    if repo_path.lower() != repo_path:
        raise ValueError("invalid reference format: repository name must be lowercase")
    m = _REFERENCE.fullmatch(f"{domain}/{remainder}")
    if not m:
        raise ValueError("invalid reference format")
    repository = m.group(1)
    if len(repository) > 255:
        raise ValueError("repository name must not be more than 255 characters")
    path = repository[len(domain) + 1:]
    return ImageInfo(repository=repository, domain=domain, path=path, tag=m.group(2), digest=m.group(3))


@attrs.frozen
class PullResult:
    """What pulling an image does, as the kubelet reports it.

    Attributes:
        image: the image as written in the container spec.
        ok: True when the pull succeeds.
        reason: None, ``ErrImagePull`` or ``InvalidImageName`` (the container's
            ``state.waiting.reason`` upstream).
        message: None or the kubelet's message (``Failed to pull image "..." ...``).
        ref: normalised reference (``docker.io/library/nginx:latest``); None if invalid.
        image_id: ``docker.io/library/nginx@sha256:<64 hex>`` (``status...imageID``); None unless ok.
        duration: virtual seconds the pull (or the failed attempt) takes.
        size: image size in bytes (0 unless ok).
    """

    image: str
    ok: bool
    reason: str | None
    message: str | None
    ref: str | None
    image_id: str | None
    duration: float
    size: int


_MISSING_TAGS = ("doesnotexist", "does-not-exist")
_MISSING_REPO_WORDS = ("non-existing", "nonexistent", "non-existent", "doesnotexist", "does-not-exist")


def _digest_int(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


@functools.lru_cache(maxsize=4096)
def image_pull_result(image: str) -> PullResult:
    """Simulate pulling ``image`` (mirrors the kubelet's image manager + containerd).

    A pure function of ``image`` (remembered: every pod start asks it again).

    * Unparsable names: ``InvalidImageName`` with ``Failed to apply default image
      tag "X": couldn't parse image name "X": invalid reference format``.
    * Tag ``doesnotexist``/``does-not-exist``/``*-invalid``: ``ErrImagePull`` with
      containerd's ``code = NotFound ... not found``.
    * A repository path containing ``non-existing``/``nonexistent``/...:
      ``pull access denied, repository does not exist or may require authorization``.
    * Registry host ``*.invalid``/``*.example``: ``dial tcp: lookup HOST: no such host``.
    * Anything else succeeds after 1-5 virtual seconds (from SHA-256 of the
      normalised reference). The size is what containerd reports: the compressed
      size of the image for linux/amd64 (busybox ~2.2 MB, ``nginx:*-alpine``
      ~21 MB, ``nginx`` ~63 MB; see :func:`_image_size`); an unknown image gets a
      plausible size from the reference's hash.
    """
    try:
        info = normalize_image(image)
    except ValueError as err:
        msg = f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": {err}'
        return PullResult(image, False, "InvalidImageName", msg, None, None, 0.0, 0)
    ref = info.ref
    h = _digest_int(ref)
    host = info.domain.split(":", 1)[0]
    prefix = f'Failed to pull image "{image}": rpc error: code = '
    unpack = f'failed to pull and unpack image "{ref}": failed to resolve reference "{ref}": '
    problem = None
    if host.endswith((".invalid", ".example")) or host in ("invalid", "example"):
        api_host = "registry-1.docker.io" if info.domain == "docker.io" else info.domain
        target = info.digest or info.tag or "latest"
        problem = (f'Unknown desc = {unpack}failed to do request: Head "https://{api_host}/v2/{info.path}'
                   f'/manifests/{target}": dial tcp: lookup {host}: no such host')
    elif info.tag and (info.tag in _MISSING_TAGS or info.tag.endswith("-invalid")):
        problem = f"NotFound desc = {unpack}{ref}: not found"
    elif any(word in info.path for word in _MISSING_REPO_WORDS):
        problem = (f"Unknown desc = {unpack}pull access denied, repository does not exist or may require "
                   "authorization: server message: insufficient_scope: authorization failed")
    if problem:
        return PullResult(image, False, "ErrImagePull", prefix + problem, ref, None,
                          0.5 + (h % 1000) / 1000, 0)
    image_id = f"{info.repository}@sha256:{hashlib.sha256(ref.encode()).hexdigest()}"
    duration = 1.0 + (h % 4000) / 1000
    size = _image_size(info)
    return PullResult(image, True, None, None, ref, image_id, duration, size)


@attrs.frozen
class KnownImage:
    """Defaults of a well-known image: its ENTRYPOINT and CMD, the main program
    its ``docker-entrypoint.sh`` prepends to flag-only arguments, and its idle usage."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    main: str | None = None
    cpu: int = 1
    memory: int = 16 * _MiB


#: Known images by their last path component (``registry.k8s.io/busybox`` is ``busybox``).
KNOWN_IMAGES: dict[str, KnownImage] = {
    "busybox": KnownImage(cmd=("sh",)),
    "alpine": KnownImage(cmd=("/bin/sh",)),
    "debian": KnownImage(cmd=("bash",)),
    "ubuntu": KnownImage(cmd=("/bin/bash",)),
    "bash": KnownImage(entrypoint=("docker-entrypoint.sh",), cmd=("bash",), main="bash"),
    "python": KnownImage(cmd=("python3",)),
    "perl": KnownImage(cmd=("perl", "-de0")),
    "hello-world": KnownImage(cmd=("/hello",)),
    "nginx": KnownImage(entrypoint=("/docker-entrypoint.sh",), cmd=("nginx", "-g", "daemon off;"),
                        main="nginx", memory=4 * _MiB),
    "nginx-slim": KnownImage(cmd=("nginx", "-g", "daemon off;"), memory=4 * _MiB),
    "httpd": KnownImage(cmd=("httpd-foreground",), memory=8 * _MiB),
    "redis": KnownImage(entrypoint=("docker-entrypoint.sh",), cmd=("redis-server",), main="redis-server",
                        cpu=2, memory=4 * _MiB),
    "postgres": KnownImage(entrypoint=("docker-entrypoint.sh",), cmd=("postgres",), main="postgres",
                           memory=40 * _MiB),
    "mysql": KnownImage(entrypoint=("docker-entrypoint.sh",), cmd=("mysqld",), main="mysqld",
                        cpu=5, memory=360 * _MiB),
    "mongo": KnownImage(entrypoint=("docker-entrypoint.sh",), cmd=("mongod",), main="mongod",
                        cpu=3, memory=80 * _MiB),
    "pause": KnownImage(entrypoint=("/pause",), cpu=0, memory=256 * 1024),
    "agnhost": KnownImage(entrypoint=("/agnhost",), cmd=("pause",)),
    "stress": KnownImage(entrypoint=("/stress",)),
    "gb-frontend": KnownImage(entrypoint=("docker-php-entrypoint",), cmd=("apache2-foreground",), memory=12 * _MiB),
}


# --------------------------------------------------------------------------- image versions, sizes, file trees


def _tag_version(tag: str | None) -> tuple[int, ...] | None:
    """The version a tag names: ``1.30-alpine`` -> (1, 30), ``v5`` -> (5,), ``latest`` -> None."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", tag or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def _full_version(tag: str | None, latest_patch: Mapping[tuple[int, ...], str], default: str) -> str:
    """``x.y.z`` for a tag: exact when the tag names a patch release, the last patch release of a
    known ``x.y`` (or ``x``) line, ``x.y.0`` otherwise; ``default`` for tags naming no version."""
    v = _tag_version(tag)
    if v is None:
        return default
    if len(v) >= 3:
        return ".".join(map(str, v[:3]))
    if v in latest_patch:
        return latest_patch[v]
    return ".".join(map(str, (v + (0, 0))[:3]))


#: Last patch release of nginx release lines (what ``nginx:1.27`` runs); ``nginx`` without a version: mainline.
_NGINX_PATCH = {(1, 9): "1.9.15", (1, 14): "1.14.2", (1, 15): "1.15.12", (1, 16): "1.16.1", (1, 17): "1.17.10",
                (1, 18): "1.18.0", (1, 19): "1.19.10", (1, 20): "1.20.2", (1, 21): "1.21.6", (1, 22): "1.22.1",
                (1, 23): "1.23.4", (1, 24): "1.24.0", (1, 25): "1.25.5", (1, 26): "1.26.3", (1, 27): "1.27.5",
                (1, 28): "1.28.0", (1, 29): "1.29.8", (1,): "1.29.8"}
_NGINX_DEFAULT = "1.29.8"
_REDIS_PATCH = {(5,): "5.0.14", (5, 0): "5.0.14", (6,): "6.2.20", (6, 0): "6.0.20", (6, 2): "6.2.20",
                (7,): "7.4.6", (7, 0): "7.0.15", (7, 2): "7.2.11", (7, 4): "7.4.6", (8,): "8.4.0",
                (8, 0): "8.0.4", (8, 2): "8.2.3", (8, 4): "8.4.0"}
_REDIS_DEFAULT = "8.4.0"
_HTTPD_PATCH = {(2,): "2.4.65", (2, 4): "2.4.65"}
_HTTPD_DEFAULT = "2.4.65"


@functools.lru_cache(maxsize=1024)
def _image_info(image: str) -> ImageInfo | None:
    """:func:`normalize_image`, or None for an invalid reference (cached: it is pure)."""
    try:
        return normalize_image(image)
    except ValueError:
        return None


def _alpine_variant(info: ImageInfo | None) -> bool:
    return info is not None and "alpine" in (info.tag or "")


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


#: Compressed linux/amd64 sizes (bytes, manifest + config + layers) of well-known images: what
#: containerd's ``ImageStatus`` reports and the kubelet prints in ``Pulled`` events
#: (``Image size: …``) and the Node's ``status.images``. Keys: last path component, then a variant.
_IMAGE_SIZES: dict[str, dict[str, int]] = {
    "busybox": {"": 2_236_931, "old": 727_869, "k8s": 1_144_547},
    "alpine": {"": 3_642_714},
    "debian": {"": 48_483_326, "slim": 28_231_553},
    "ubuntu": {"": 29_723_147},
    "bash": {"": 6_213_408},
    "python": {"": 375_431_262, "slim": 43_158_903, "alpine": 17_563_318},
    "perl": {"": 321_907_442, "slim": 38_403_215},
    "hello-world": {"": 9_814},
    "nginx": {"": 63_132_183, "alpine": 21_486_137, "old": 51_206_374, "old-alpine": 8_723_551},
    "nginx-slim": {"": 19_862_410},
    "httpd": {"": 58_174_839, "alpine": 23_036_612},
    "redis": {"": 52_437_920, "7": 40_128_513, "old": 37_825_407, "alpine": 17_164_085},
    "postgres": {"": 158_312_760, "alpine": 106_907_328},
    "mysql": {"": 171_406_655, "old": 147_613_026},
    "mongo": {"": 268_741_891},
    "agnhost": {"": 52_617_304},
    "stress": {"": 4_283_706},
    "gb-frontend": {"": 138_229_471},
    "gb-redis-follower": {"": 44_618_265},
    "hello-app": {"": 5_563_120},
    "etcd": {"": 58_938_593},
    "kube-apiserver": {"": 95_238_417},
    "kube-controller-manager": {"": 89_437_262},
    "kube-scheduler": {"": 69_962_130},
    "kube-proxy": {"": 92_731_518},
    "coredns": {"": 20_939_036},
}
#: ``registry.k8s.io/pause`` by tag (a few hundred KB).
_PAUSE_SIZES = {"3.10": 320_368, "3.9": 321_520, "3.8": 311_286, "3.7": 311_278, "3.6": 301_773,
                "3.5": 301_416, "3.2": 299_513, "3.1": 317_164, "2.0": 350_164}


def _image_size(info: ImageInfo) -> int:
    """The image's size as containerd reports it (see :data:`_IMAGE_SIZES`); for an unknown image a
    plausible one from SHA-256 of the reference: 3-30 MB for ``*alpine*`` tags, 8-160 MB otherwise
    (log-uniform), as most application images are."""
    base, tag = info.base_name, info.tag or ""
    h = _digest_int(info.ref)
    if base == "pause":
        return _PAUSE_SIZES.get(tag, 320_368)
    table = _IMAGE_SIZES.get(base)
    if table is None:
        lo, hi = (3_000_000, 30_000_000) if "alpine" in tag else (8_000_000, 160_000_000)
        return int(lo * (hi / lo) ** ((h % 1_000_003) / 1_000_003))
    v = _tag_version(tag) or ()
    variant = ""
    if base == "busybox":
        if info.domain != "docker.io":
            variant = "k8s"  # registry.k8s.io/busybox: the old uclibc image
        elif v and v < (1, 31):
            variant = "old"
    elif base == "nginx":
        old = bool(v) and v < (1, 19)
        variant = ("old-alpine" if old else "alpine") if "alpine" in tag else ("old" if old else "")
    elif base == "redis":
        variant = "alpine" if "alpine" in tag else ("old" if v and v < (7,) else ("7" if v and v < (8,) else ""))
    elif base == "mysql":
        variant = "old" if v and v < (8,) else ""
    elif "alpine" in tag:
        variant = "alpine"
    elif "slim" in tag:
        variant = "slim"
    size = table.get(variant, table[""])
    if tag not in ("", "latest") and base not in ("etcd", "coredns", "hello-world"):
        size = int(size * (0.97 + (h % 6001) / 100_000))  # releases differ by a few per cent
    return size


# ---- the image config's Env (what ``docker inspect`` shows under Config.Env)

#: containerd's default ``PATH`` (``oci.WithDefaultPathEnv``): a container's ``PATH`` unless its
#: image or spec sets another, and the ``PATH`` of an image this module does not know.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: The nginx image's package variables by release line (the line's last release, as the tag
#: ``nginx:1.27`` runs it): (NJS_VERSION, NJS_RELEASE, PKG_RELEASE, DYNPKG_RELEASE, ACME_VERSION);
#: None: that image has no such variable. Lines not listed get ``NGINX_VERSION`` only.
_NGINX_ENV = {
    (1, 16): ("0.3.8", None, "1", None, None), (1, 18): ("0.4.4", None, "2", None, None),
    (1, 19): ("0.5.3", None, "1", None, None), (1, 20): ("0.7.0", None, "1", None, None),
    (1, 21): ("0.7.3", None, "1", None, None), (1, 22): ("0.7.7", None, "1", None, None),
    (1, 23): ("0.7.11", None, "1", None, None), (1, 24): ("0.7.12", None, "1", None, None),
    (1, 25): ("0.8.4", "3", "1", None, None), (1, 26): ("0.8.9", "1", "1", "2", None),
    (1, 27): ("0.8.10", "1", "1", "1", None), (1, 28): ("0.8.10", "1", "1", "1", None),
    (1, 29): ("0.9.6", "1", "1", "1", "0.3.1"), (1, 30): ("0.9.6", "1", "1", "1", "0.3.1"),
}


def _nginx_codename(line: tuple[int, ...]) -> str:
    """The Debian release the nginx image of a release line is built on (its ``PKG_RELEASE`` suffix)."""
    if line >= (1, 29):
        return "trixie"
    if line >= (1, 25):
        return "bookworm"
    if line >= (1, 20):
        return "bullseye"
    return "buster" if line >= (1, 16) else "stretch"


def _nginx_env(version: str, alpine: bool) -> list[tuple[str, str]]:
    """The nginx image's variables after ``PATH``, in the order of its Dockerfile (the Alpine image
    is built on ``*-alpine-slim`` since 1.23, which sets the nginx package's variables first)."""
    line = _version_key(version)[:2]
    if line == (1, 14):
        if alpine:
            return [("NGINX_VERSION", version)]
        return [("NGINX_VERSION", f"{version}-1~stretch"), ("NJS_VERSION", f"{version}.0.2.6-1~stretch")]
    known = _NGINX_ENV.get(line)
    if known is None:
        return [("NGINX_VERSION", version)]
    njs, njs_release, pkg, dynpkg, acme = known
    suffix = "" if alpine else "~" + _nginx_codename(line)
    base = [("PKG_RELEASE", pkg + suffix)] + ([("DYNPKG_RELEASE", dynpkg + suffix)] if dynpkg else [])
    modules = [("NJS_VERSION", njs)] + ([("NJS_RELEASE", njs_release + suffix)] if njs_release else [])
    modules += [("ACME_VERSION", acme)] if acme else []
    if alpine and line >= (1, 23):
        return [("NGINX_VERSION", version), *base, *modules]
    return [("NGINX_VERSION", version), *modules, *base]


_HTTPD_SHA256 = {"2.4.65": "58b8be97d9940ec17f7656c0c6b9f41b618aac468b894b534148e3296c53b8b3"}
#: python's last releases the model knows, by minor version: (version, PYTHON_SHA256); plain ``python``
#: is the newest.
_PYTHON_RELEASES = {
    (3, 12): ("3.12.13", "c08bc65a81971c1dd5783182826503369466c7e67374d1646519adf05207b684"),
    (3, 13): ("3.13.15", "1e66a7945a48390ee4c2a4268a0e4185884059a13c4aab6d148aa208deea4a76"),
    (3, 14): ("3.14.7", "3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81"),
}
#: The release managers' keys the python images verify with (3.14 and later are signed with Sigstore).
_PYTHON_GPG_KEYS = {(3, 8): "E3FF2839C048B25C084DEBE9B26995E310250568",
                    (3, 9): "E3FF2839C048B25C084DEBE9B26995E310250568",
                    (3, 10): "A035C8C19219BA821ECEA86B64E628F8D684696D",
                    (3, 11): "A035C8C19219BA821ECEA86B64E628F8D684696D",
                    (3, 12): "7169605F62C751356D054A26A821E680E5FA6305",
                    (3, 13): "7169605F62C751356D054A26A821E680E5FA6305"}
#: ``PG_VERSION`` of the postgres (Debian) images the model knows, by major; plain ``postgres`` is the newest.
_POSTGRES_RELEASES = {17: "17.10-1.pgdg12+1", 18: "18.6-1.pgdg12+2"}
_MONGO_DEFAULT = ("8.2", "8.2.11")
_GOSU_VERSION = "1.19"


def _python_env(tag: str) -> list[tuple[str, str]]:
    v = _tag_version(tag) or ()
    minor = v[:2] if len(v) >= 2 else max(_PYTHON_RELEASES)
    release = _PYTHON_RELEASES.get(minor)
    version = ".".join(map(str, v[:3])) if len(v) >= 3 else (release[0] if release else None)
    out = [("PATH", "/usr/local/bin:" + DEFAULT_PATH)]
    if minor < (3, 13):
        out.append(("LANG", "C.UTF-8"))
    if minor in _PYTHON_GPG_KEYS:
        out.append(("GPG_KEY", _PYTHON_GPG_KEYS[minor]))
    if version:
        out.append(("PYTHON_VERSION", version))
        if release and release[0] == version:
            out.append(("PYTHON_SHA256", release[1]))
    return out


def _postgres_env(tag: str, alpine: bool) -> list[tuple[str, str]]:
    v = _tag_version(tag) or ()
    major = v[0] if v else max(_POSTGRES_RELEASES)
    path = DEFAULT_PATH if alpine else f"{DEFAULT_PATH}:/usr/lib/postgresql/{major}/bin"
    out = [("PATH", path)] + ([] if alpine else [("GOSU_VERSION", _GOSU_VERSION)])
    out += [("LANG", "en_US.utf8"), ("PG_MAJOR", str(major))]
    release = _POSTGRES_RELEASES.get(major)
    if release and (len(v) < 2 or release.startswith(".".join(map(str, v[:2])) + "-")):
        out.append(("PG_VERSION", release.split("-", 1)[0] if alpine else release))
    out.append(("PGDATA", f"/var/lib/postgresql/{major}/docker" if major >= 18 else "/var/lib/postgresql/data"))
    return out


def _mongo_env(tag: str) -> list[tuple[str, str]]:
    v = _tag_version(tag) or ()
    major = ".".join(map(str, v[:2])) if len(v) >= 2 else (_MONGO_DEFAULT[0] if not v else None)
    version = ".".join(map(str, v[:3])) if len(v) >= 3 else (_MONGO_DEFAULT[1] if major == _MONGO_DEFAULT[0]
                                                             else None)
    out = [("PATH", DEFAULT_PATH), ("GOSU_VERSION", _GOSU_VERSION), ("JSYAML_VERSION", "3.13.1"),
           ("JSYAML_CHECKSUM", "662e32319bdd378e91f67578e56a34954b0a2e33aca11d70ab9f4826af24b941"),
           ("MONGO_PACKAGE", "mongodb-org"), ("MONGO_REPO", "repo.mongodb.org")]
    out += [("MONGO_MAJOR", major)] if major else []
    out += [("MONGO_VERSION", version)] if version else []
    out.append(("HOME", "/data/db"))
    if major == _MONGO_DEFAULT[0]:
        out.append(("GLIBC_TUNABLES", "glibc.pthread.rseq=0"))
    return out


@functools.lru_cache(maxsize=1024)
def image_env(image: str) -> Mapping[str, str]:
    """The ``Env`` of ``image``'s config, in order, ``PATH`` first (one shared read-only mapping per
    image: containers share it, see :class:`ResolvedEnv`).

    Every image has ``PATH`` (containerd's :data:`DEFAULT_PATH` when the image sets none). The
    well-known images add theirs: nginx (``NGINX_VERSION``, ``NJS_VERSION``, ``PKG_RELEASE``, ...
    per release line and variant), redis (``REDIS_VERSION``), httpd (``HTTPD_PREFIX``,
    ``HTTPD_VERSION``, ...; ``PATH`` with ``/usr/local/apache2/bin``), python (``LANG`` before
    3.13, ``GPG_KEY`` before 3.14, ``PYTHON_VERSION``, ``PYTHON_SHA256``), postgres (``PG_MAJOR``,
    ``PGDATA``, ...), mongo (``MONGO_*``, ``HOME=/data/db``). busybox, alpine, debian and ubuntu set
    ``PATH`` only. Versions follow the tag as the image's logs do (``nginx:1.27`` runs 1.27.5); a
    per-release value the model does not know (a checksum, a package revision) is left out.
    """
    info = _image_info(image)
    base, tag = (info.base_name, info.tag or "") if info is not None else ("", "")
    alpine = "alpine" in tag
    out: list[tuple[str, str]] = [("PATH", DEFAULT_PATH)]
    if base == "nginx":
        out += _nginx_env(_full_version(tag, _NGINX_PATCH, _NGINX_DEFAULT), alpine)
    elif base == "redis":
        out.append(("REDIS_VERSION", _full_version(tag, _REDIS_PATCH, _REDIS_DEFAULT)))
    elif base == "httpd":
        version = _full_version(tag, _HTTPD_PATCH, _HTTPD_DEFAULT)
        out = [("PATH", "/usr/local/apache2/bin:" + DEFAULT_PATH), ("HTTPD_PREFIX", "/usr/local/apache2"),
               ("HTTPD_VERSION", version)]
        out += [("HTTPD_SHA256", _HTTPD_SHA256[version])] if version in _HTTPD_SHA256 else []
        out.append(("HTTPD_PATCHES", ""))
    elif base == "python":
        out = _python_env(tag)
    elif base == "postgres":
        out = _postgres_env(tag, alpine)
    elif base == "mongo":
        out = _mongo_env(tag)
    return MappingProxyType(dict(out))


# ---- base file systems of images (shared, read-only; each container writes into its own layer)


@attrs.frozen(eq=False)
class ImageTree:
    """The base file system of an image: ``files`` (path -> text) and ``dirs`` (every directory, its
    ancestors included). One instance per kind of image, shared by all its containers: a
    container's writes and deletions go to its own layer (:class:`_LayeredFS`), as with an
    overlay file system. Executables and files whose contents the model does not know are empty."""

    files: Mapping[str, str]
    dirs: frozenset[str]


def _parents(path: str) -> Iterator[str]:
    while path not in ("", "/"):
        path = path.rsplit("/", 1)[0] or "/"
        yield path


def _make_tree(dirs: str, files: Mapping[str, str] | None = None, base: ImageTree | None = None,
               empty: str = "") -> ImageTree:
    """A tree from whitespace-separated ``dirs``, ``files`` with contents and ``empty`` files (paths),
    on top of ``base``."""
    all_dirs: set[str] = set(base.dirs) if base else {"/"}
    all_files: dict[str, str] = dict(base.files) if base else {}
    for d in dirs.split():
        all_dirs.add(d)
        all_dirs.update(_parents(d))
    merged = dict(files or {}) | {p: "" for p in empty.split()}
    for p, text in merged.items():
        all_files[p] = text
        all_dirs.update(_parents(p))
    return ImageTree(MappingProxyType(all_files), frozenset(all_dirs))


_RUNTIME_DIRS = "/dev /dev/pts /dev/shm /dev/mqueue /proc /sys /etc /tmp"  # what the runtime mounts
_BUSYBOX_DIRS = ("/bin /home /lib /lib64 /root /usr /usr/sbin /var /var/spool /var/spool/mail /var/www "
                 "/etc/network /etc/network/if-down.d /etc/network/if-post-down.d /etc/network/if-pre-up.d "
                 "/etc/network/if-up.d")
_ALPINE_DIRS = (
    "/bin /home /lib /media /mnt /opt /root /run /sbin /srv /usr /var "
    "/etc/apk /etc/apk/keys /etc/apk/protected_paths.d /etc/busybox-paths.d /etc/conf.d /etc/crontabs "
    "/etc/init.d /etc/logrotate.d /etc/modprobe.d /etc/modules-load.d /etc/network/if-down.d "
    "/etc/network/if-post-down.d /etc/network/if-post-up.d /etc/network/if-pre-down.d /etc/network/if-pre-up.d "
    "/etc/network/if-up.d /etc/opt /etc/periodic/15min /etc/periodic/daily /etc/periodic/hourly "
    "/etc/periodic/monthly /etc/periodic/weekly /etc/profile.d /etc/secfixes.d /etc/ssl/certs /etc/ssl/misc "
    "/etc/ssl/private /etc/sysctl.d /etc/udhcpc /lib/apk/db /lib/apk/exec /lib/firmware /lib/modules-load.d "
    "/lib/sysctl.d /media/cdrom /media/floppy /media/usb /usr/bin /usr/lib /usr/local/bin /usr/local/lib "
    "/usr/local/share /usr/sbin /usr/share/apk /usr/share/man /usr/share/misc /usr/share/udhcpc "
    "/var/cache/apk /var/cache/misc /var/empty /var/lib/misc /var/lib/udhcpd /var/local /var/lock /var/log "
    "/var/mail /var/opt /var/run /var/spool/cron /var/tmp")
_DEBIAN_DIRS = (
    "/bin /boot /home /lib /lib64 /media /mnt /opt /root /sbin /srv /usr /var /run/lock "
    "/etc/apt/apt.conf.d /etc/apt/auth.conf.d /etc/apt/keyrings /etc/apt/preferences.d /etc/apt/sources.list.d "
    "/etc/apt/trusted.gpg.d /etc/cron.d /etc/cron.daily /etc/default /etc/dpkg /etc/init.d /etc/kernel "
    "/etc/ld.so.conf.d /etc/logrotate.d /etc/opt /etc/pam.d /etc/profile.d /etc/rc0.d /etc/security "
    "/etc/selinux /etc/skel /etc/systemd /etc/terminfo /etc/update-motd.d "
    "/usr/bin /usr/games /usr/include /usr/lib /usr/lib64 /usr/libexec /usr/local/bin /usr/local/etc "
    "/usr/local/games /usr/local/include /usr/local/lib /usr/local/man /usr/local/sbin /usr/local/share "
    "/usr/local/src /usr/sbin /usr/share/doc /usr/share/man /usr/src "
    "/var/backups /var/cache/apt /var/cache/debconf /var/lib/apt /var/lib/dpkg /var/lib/misc /var/local "
    "/var/lock /var/log/apt /var/mail /var/opt /var/run /var/spool /var/tmp")
_UBUNTU_DIRS = _DEBIAN_DIRS + " /bin.usr-is-merged /lib.usr-is-merged /sbin.usr-is-merged"
_OS_RELEASE = {
    "alpine": ('NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.22.2\nPRETTY_NAME="Alpine Linux v3.22"\n'
               'HOME_URL="https://alpinelinux.org/"\n'
               'BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"\n'),
    "bookworm": ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
                 'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\nHOME_URL="https://www.debian.org/"\n'
                 'SUPPORT_URL="https://www.debian.org/support"\nBUG_REPORT_URL="https://bugs.debian.org/"\n'),
    "trixie": ('PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nNAME="Debian GNU/Linux"\nVERSION_ID="13"\n'
               'VERSION="13 (trixie)"\nVERSION_CODENAME=trixie\nDEBIAN_VERSION_FULL=13.1\nID=debian\n'
               'HOME_URL="https://www.debian.org/"\nSUPPORT_URL="https://www.debian.org/support"\n'
               'BUG_REPORT_URL="https://bugs.debian.org/"\n'),
    "noble": ('PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
              'VERSION="24.04.3 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n'
              'HOME_URL="https://www.ubuntu.com/"\nSUPPORT_URL="https://help.ubuntu.com/"\n'
              'BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
              'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
              'UBUNTU_CODENAME=noble\nLOGO=ubuntu-logo\n'),
}
_NGINX_50X = """<!DOCTYPE html>
<html>
<head>
<title>Error</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.<br/>
Please try again later.</p>
<p>If you are the system administrator of this resource then you should check
the error log for details.</p>
<p><em>Faithfully yours, nginx.</em></p>
</body>
</html>
"""
_NGINX_HTML = "/usr/share/nginx/html"
#: ``/etc/nginx/nginx.conf`` of the official nginx images (Debian and Alpine alike).
_NGINX_CONF = """
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /var/run/nginx.pid;


events {
    worker_connections  1024;
}


http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    #tcp_nopush     on;

    keepalive_timeout  65;

    #gzip  on;

    include /etc/nginx/conf.d/*.conf;
}
"""
_NGINX_DEFAULT_CONF = "/etc/nginx/conf.d/default.conf"
_NGINX_FILES = ("/etc/nginx/conf.d/default.conf /etc/nginx/mime.types "
                "/etc/nginx/fastcgi_params /etc/nginx/scgi_params /etc/nginx/uwsgi_params /usr/sbin/nginx "
                "/usr/sbin/nginx-debug /var/log/nginx/access.log /var/log/nginx/error.log")
_NGINX_DIRS = "/etc/nginx/conf.d /etc/nginx/modules /usr/lib/nginx/modules /var/cache/nginx /usr/share/nginx/html"
#: The nginx image's ``/docker-entrypoint.d`` scripts, by the nginx version that added them.
_NGINX_SCRIPTS = (((1, 19), "10-listen-on-ipv6-by-default.sh"), ((1, 25), "15-local-resolvers.envsh"),
                  ((1, 19), "20-envsubst-on-templates.sh"), ((1, 21), "30-tune-worker-processes.sh"))
_WELCOME_FILES = {f"{_NGINX_HTML}/50x.html": _NGINX_50X,  # index.html: _NGINX_WELCOME, added below
                  "/etc/nginx/nginx.conf": _NGINX_CONF}


@functools.lru_cache(maxsize=None)
def _os_tree(os_name: str) -> ImageTree:
    if os_name == "busybox":
        return _make_tree(_RUNTIME_DIRS + " " + _BUSYBOX_DIRS, empty="/bin/busybox /bin/sh")
    if os_name == "alpine":
        return _make_tree(_RUNTIME_DIRS + " " + _ALPINE_DIRS,
                          {"/etc/os-release": _OS_RELEASE["alpine"], "/etc/alpine-release": "3.22.2\n"},
                          empty="/bin/busybox /bin/sh")
    if os_name == "noble":
        return _make_tree(_RUNTIME_DIRS + " " + _UBUNTU_DIRS, {"/etc/os-release": _OS_RELEASE["noble"],
                                                             "/etc/debian_version": "trixie/sid\n"},
                          empty="/usr/bin/bash /usr/bin/sh /usr/bin/dash")
    version = {"bookworm": "12.12\n", "trixie": "13.1\n"}[os_name]
    return _make_tree(_RUNTIME_DIRS + " " + _DEBIAN_DIRS,
                      {"/etc/os-release": _OS_RELEASE[os_name], "/etc/debian_version": version},
                      empty="/usr/bin/bash /usr/bin/sh /usr/bin/dash")


#: The file system of an image no table knows: the usual top-level directories.
_GENERIC_TREE = _make_tree(_RUNTIME_DIRS + " /bin /home /mnt /opt /root /run /srv /usr /var /var/log /var/run")


@functools.lru_cache(maxsize=None)
def _app_tree(kind: str, os_name: str, version: tuple[int, ...] = ()) -> ImageTree:
    """The tree of an application image: ``kind`` on the ``os_name`` base (cached, one per combination)."""
    base = _os_tree(os_name)
    if kind == "nginx":
        scripts = [f"/docker-entrypoint.d/{name}" for since, name in _NGINX_SCRIPTS if version >= since]
        empty = _NGINX_FILES + (" /docker-entrypoint.sh " + " ".join(scripts) if scripts else "")
        files = _WELCOME_FILES | {f"{_NGINX_HTML}/index.html": _NGINX_WELCOME}
        return _make_tree(_NGINX_DIRS + (" /docker-entrypoint.d" if scripts else ""), files, base, empty)
    if kind == "httpd":
        root = "/usr/local/apache2"
        return _make_tree(" ".join(f"{root}/{d}" for d in ("bin", "build", "cgi-bin", "conf", "error", "icons",
                                                           "include", "logs", "modules")),
                          {f"{root}/htdocs/index.html": _HTTPD_WORKS}, base,
                          f"/usr/local/bin/httpd-foreground {root}/bin/httpd {root}/conf/httpd.conf")
    if kind == "php-apache":
        return _make_tree("/etc/apache2/conf-enabled /etc/apache2/mods-enabled /etc/apache2/sites-enabled "
                          "/usr/local/etc/php/conf.d /var/www/html", None, base,
                          "/usr/local/bin/apache2-foreground /usr/local/bin/docker-php-entrypoint "
                          "/usr/local/bin/php /etc/apache2/apache2.conf")
    if kind == "redis":
        return _make_tree("/data", None, base,
                          " ".join(f"/usr/local/bin/{p}" for p in (
                              "docker-entrypoint.sh", "gosu", "redis-benchmark", "redis-check-aof",
                              "redis-check-rdb", "redis-cli", "redis-sentinel", "redis-server")))
    if kind == "postgres":
        return _make_tree("/docker-entrypoint-initdb.d /var/lib/postgresql/data /var/run/postgresql", None, base,
                          "/usr/local/bin/docker-entrypoint.sh /usr/local/bin/gosu")
    if kind == "mysql":
        return _make_tree("/docker-entrypoint-initdb.d /var/lib/mysql /var/lib/mysql-files /etc/mysql/conf.d",
                          None, base, "/usr/local/bin/docker-entrypoint.sh /usr/sbin/mysqld")
    if kind == "mongo":
        return _make_tree("/data/db /data/configdb /docker-entrypoint-initdb.d", None, base,
                          "/usr/local/bin/docker-entrypoint.sh /usr/bin/mongod /usr/bin/mongosh")
    if kind == "python":
        return _make_tree("/usr/local/lib", None, base, "/usr/local/bin/python3 /usr/local/bin/pip3")
    if kind == "perl":
        return _make_tree("/usr/local/lib/perl5", None, base, "/usr/local/bin/perl")
    if kind == "bash":
        return _make_tree("", None, base, "/usr/local/bin/bash /usr/local/bin/docker-entrypoint.sh")
    if kind == "agnhost":
        return _make_tree("", None, base, "/agnhost")
    if kind == "stress":
        return _make_tree("", None, base, "/usr/local/bin/stress")
    return base


@functools.lru_cache(maxsize=None)
def _static_binary_tree(path: str) -> ImageTree:
    """An image ``FROM scratch`` holding one static binary (``/hello``, ``/pause``)."""
    return _make_tree(_RUNTIME_DIRS, None, None, path)


@functools.lru_cache(maxsize=1024)
def image_tree(image: str) -> ImageTree:
    """The base file system of ``image`` (shared; see :class:`ImageTree`): the base OS of the image
    (busybox, Alpine, Debian, Ubuntu) with the files of its application (nginx's configuration and
    html pages, the entrypoints), or the usual top-level directories for an unknown image."""
    info = _image_info(image)
    if info is None:
        return _GENERIC_TREE
    base, tag = info.base_name, info.tag or ""
    alpine = "alpine" in tag
    v = _tag_version(tag) or ()
    if base == "busybox":
        return _os_tree("busybox")
    if base == "alpine":
        return _os_tree("alpine")
    if base == "ubuntu":
        return _os_tree("noble")
    if base == "debian":
        return _os_tree("bookworm" if tag.startswith(("12", "bookworm")) else "trixie")
    if base in ("hello-world", "pause"):
        return _static_binary_tree("/hello" if base == "hello-world" else "/pause")
    if base == "nginx":
        version = _version_key(_full_version(tag, _NGINX_PATCH, _NGINX_DEFAULT))
        os_name = "alpine" if alpine else ("trixie" if version >= (1, 29) else "bookworm")
        return _app_tree("nginx", os_name, version[:2])
    kinds = {"httpd": "httpd", "redis": "redis", "postgres": "postgres", "mysql": "mysql", "mongo": "mongo",
             "python": "python", "perl": "perl", "bash": "bash", "gb-frontend": "php-apache",
             "gb-redis-follower": "redis", "agnhost": "agnhost", "stress": "stress"}
    kind = kinds.get(base)
    if kind is None:
        return _GENERIC_TREE
    if kind in ("bash", "stress"):
        return _app_tree(kind, "alpine")
    if kind == "agnhost":
        return _app_tree(kind, "busybox")
    if kind == "mongo":
        return _app_tree(kind, "noble")
    if kind == "mysql" and not (v and v < (8,)):
        return _app_tree(kind, "bookworm")  # Oracle Linux upstream; the directories that matter are the same
    return _app_tree(kind, "alpine" if alpine else "bookworm")


# ---- the user a container's processes run as

#: Home directories of the users of the base images' ``/etc/passwd`` a pod may run as
#: (``runAsUser``), by base: root, nobody, and the users the application images add.
_HOMES = {
    "busybox": {0: "/root", 65534: "/home"},
    "alpine": {0: "/root", 65534: "/"},
    "debian": {0: "/root", 65534: "/nonexistent"},
}
#: The user each application image adds: name -> (uid, home) by base.
_APP_USERS = {"nginx": ("nginx", {"alpine": (101, "/var/cache/nginx"), "debian": (101, "/nonexistent")}),
              "redis": ("redis", {"alpine": (999, "/home/redis"), "debian": (999, "/home/redis")}),
              "postgres": ("postgres", {"alpine": (70, "/var/lib/postgresql"),
                                        "debian": (999, "/var/lib/postgresql")})}
_USER_NAMES = {0: "root", 65534: "nobody"}


def _app_user(image: str, base: str | None) -> tuple[str, int, str] | None:
    """(name, uid, home) of the user ``image``'s application runs as, if it adds one."""
    info = _image_info(image)
    app = _APP_USERS.get(info.base_name if info else "")
    if app is None or base is None:
        return None
    uid, home = app[1]["alpine" if base == "alpine" else "debian"]
    return app[0], uid, home


def _image_base(image: str) -> str | None:
    """``busybox``, ``alpine`` or ``debian`` (Ubuntu too): what the image's ``/etc/passwd`` is like;
    None for an image without one (``FROM scratch``: ``hello-world``, ``pause``)."""
    files = image_tree(image).files
    if "/etc/alpine-release" in files:
        return "alpine"
    if "/etc/debian_version" in files:
        return "debian"
    if "/bin/busybox" in files:
        return "busybox"
    info = _image_info(image)
    return None if info is not None and info.base_name in ("hello-world", "pause") else "debian"


def runtime_home(image: str, uid: int | None = None) -> str:
    """The ``HOME`` runc gives a process of ``image`` that has none: the home directory of its user
    (``uid``; None: the image's, root for the known images but ``pause``) in the image's
    ``/etc/passwd``, ``/`` when the user is not there or the image has no ``/etc/passwd``."""
    base = _image_base(image)
    if base is None:
        return "/"
    uid = 0 if uid is None else uid
    app = _app_user(image, base)
    if app is not None and uid == app[1]:
        return app[2]
    return _HOMES[base].get(uid, "/")


def _user_name(image: str, uid: int) -> str:
    """``uid`` as ``ps`` shows it: its name in ``image``'s ``/etc/passwd``, else the number."""
    app = _app_user(image, _image_base(image))
    if app is not None and uid == app[1]:
        return app[0]
    return _USER_NAMES.get(uid, str(uid))


class _LayeredFS(MutableMapping[str, str]):
    """A container's own files over its image's base files (copy-on-write): reads fall through to
    ``base``, writes go to ``own``, deleting a base file records a whiteout. The base is shared by
    every container of the image, so a container costs only what it wrote."""

    __slots__ = ("base", "own", "whiteouts")

    def __init__(self, base: Mapping[str, str], own: dict[str, str]) -> None:
        self.base = base
        self.own = own
        self.whiteouts: set[str] | None = None

    def __getitem__(self, path: str) -> str:
        own = self.own
        if path in own:
            return own[path]
        if self.whiteouts and path in self.whiteouts:
            raise KeyError(path)
        return self.base[path]

    def get(self, path: str, default: Any = None) -> Any:
        own = self.own
        if path in own:
            return own[path]
        if self.whiteouts and path in self.whiteouts:
            return default
        return self.base.get(path, default)

    def __contains__(self, path: object) -> bool:
        return path in self.own or (path in self.base and not (self.whiteouts and path in self.whiteouts))

    def __setitem__(self, path: str, text: str) -> None:
        self.own[path] = text
        if self.whiteouts:
            self.whiteouts.discard(path)

    def __delitem__(self, path: str) -> None:
        found = path in self.own
        if found:
            del self.own[path]
        if path in self.base and not (self.whiteouts and path in self.whiteouts):
            if self.whiteouts is None:
                self.whiteouts = set()
            self.whiteouts.add(path)
            found = True
        if not found:
            raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        own, gone = self.own, self.whiteouts or ()
        yield from own
        for k in self.base:
            if k not in own and k not in gone:
                yield k

    def __len__(self) -> int:
        return sum(1 for _ in self)

# --------------------------------------------------------------------------- shell: lexer and parser


class _ParseError(Exception):
    pass


_OPS = ("&&", "||", ";;", ">>", ">&", "<&", "<<", ";", "&", "|", "(", ")", ">", "<")
_REDIRECT = re.compile(r"\d*(>>|>&|<&|>|<)")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_RESERVED_END = ("then", "do", "done", "fi", "else", "elif", "}", "esac")


def _skip_dollar(src: str, i: int) -> int:
    """``src[i:]`` starts with ``$(`` or ``${``: return the index after the matching closer."""
    opener, closer = src[i + 1], ")" if src[i + 1] == "(" else "}"
    depth, j, n = 0, i + 1, len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and opener == "(":
            k = src.find("'", j + 1)
            if k < 0:
                break
            j = k + 1
            continue
        if c == '"':
            j = _skip_dquote(src, j)
            continue
        if c == "$" and j + 1 < n and src[j + 1] in "({":
            j = _skip_dollar(src, j)
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise _ParseError(f"unterminated ${opener}")


def _skip_dquote(src: str, i: int) -> int:
    j, n = i + 1, len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
        elif c == '"':
            return j + 1
        elif c == "$" and j + 1 < n and src[j + 1] in "({":
            j = _skip_dollar(src, j)
        elif c == "`":
            k = src.find("`", j + 1)
            if k < 0:
                break
            j = k + 1
        else:
            j += 1
    raise _ParseError("unterminated quoted string")


def _lex(src: str) -> list[tuple[str, str]]:
    """Tokens ``("w", raw word)``, ``("op", operator)``, ``("nl", "\\n")``; words keep their quotes."""
    toks: list[tuple[str, str]] = []
    word: list[str] = []
    i, n = 0, len(src)

    def flush() -> None:
        if word:
            toks.append(("w", "".join(word)))
            word.clear()

    while i < n:
        c = src[i]
        if c == "\\":
            if src[i + 1:i + 2] == "\n":
                i += 2
            else:
                word.append(src[i:i + 2])
                i += 2
        elif c in " \t\r":
            flush()
            i += 1
        elif c == "\n":
            flush()
            toks.append(("nl", "\n"))
            i += 1
        elif c == "#" and not word:
            while i < n and src[i] != "\n":
                i += 1
        elif c == "'":
            k = src.find("'", i + 1)
            if k < 0:
                raise _ParseError("unterminated quoted string")
            word.append(src[i:k + 1])
            i = k + 1
        elif c == '"':
            k = _skip_dquote(src, i)
            word.append(src[i:k])
            i = k
        elif c == "`":
            k = src.find("`", i + 1)
            if k < 0:
                raise _ParseError("unterminated `")
            word.append(src[i:k + 1])
            i = k + 1
        elif c == "$" and i + 1 < n and src[i + 1] in "({":
            k = _skip_dollar(src, i)
            word.append(src[i:k])
            i = k
        elif c in ";&|()<>":
            text = "".join(word)
            if c == "(" and _ASSIGN.fullmatch(text):  # bash array: name=(a b c)
                k = src.find(")", i)
                if k < 0:
                    raise _ParseError("unterminated array")
                word.append(src[i:k + 1])
                i = k + 1
                continue
            fd = ""
            if c in "<>" and text.isdigit():
                fd = text
                word.clear()
            flush()
            op = next(o for o in _OPS if src.startswith(o, i))
            toks.append(("op", fd + op))
            i += len(op)
        else:
            word.append(c)
            i += 1
    flush()
    return toks


Node = tuple  # ("list", [(node, background)]) | ("andor", first, [(op, node)]) | ("pipe", [nodes], negate)
# | ("simple", assigns, words, redirs) | ("test2", words, redirs) | ("if", [(cond, body)], else)
# | ("loop", until, cond, body) | ("for", name, words | None, body) | ("sub", list) | ("group", list)
# | ("redir", node, redirs)


class _Parser:
    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "")

    def is_word(self, *texts: str) -> bool:
        k, t = self.peek()
        return k == "w" and t in texts

    def expect_word(self, text: str) -> None:
        if not self.is_word(text):
            raise _ParseError(f"syntax error: expected {text!r}, got {self.peek()[1]!r}")
        self.i += 1

    def skip_nl(self) -> None:
        while self.peek()[0] == "nl":
            self.i += 1

    def parse(self) -> Node:
        node = self.parse_list(())
        if self.peek()[0] != "eof":
            raise _ParseError(f"syntax error: unexpected {self.peek()[1]!r}")
        return node

    def parse_list(self, stop: tuple[str, ...]) -> Node:
        items: list[tuple[Node, bool]] = []
        while True:
            self.skip_nl()
            k, t = self.peek()
            if k == "eof" or (k == "op" and t in (")", ";;")) or (k == "w" and t in stop):
                break
            node = self.parse_and_or()
            k, t = self.peek()
            background = False
            if k == "op" and t in (";", "&"):
                background = t == "&"
                self.i += 1
            elif k == "nl":
                self.i += 1
            elif not (k == "eof" or (k == "op" and t == ")") or (k == "w" and t in stop)):
                raise _ParseError(f"syntax error: unexpected {t!r}")
            items.append((node, background))
        return ("list", items)

    def parse_and_or(self) -> Node:
        first = self.parse_pipeline()
        rest = []
        while self.peek() in (("op", "&&"), ("op", "||")):
            op = self.peek()[1]
            self.i += 1
            self.skip_nl()
            rest.append((op, self.parse_pipeline()))
        return ("andor", first, rest) if rest else first

    def parse_pipeline(self) -> Node:
        negate = False
        if self.is_word("!"):
            negate = True
            self.i += 1
        cmds = [self.parse_command()]
        while self.peek() == ("op", "|"):
            self.i += 1
            self.skip_nl()
            cmds.append(self.parse_command())
        return ("pipe", cmds, negate) if negate or len(cmds) > 1 else cmds[0]

    def parse_command(self) -> Node:
        k, t = self.peek()
        node: Node | None = None
        if k == "w" and t == "if":
            node = self.parse_if()
        elif k == "w" and t in ("while", "until"):
            self.i += 1
            cond = self.parse_list(("do",))
            self.expect_word("do")
            body = self.parse_list(("done",))
            self.expect_word("done")
            node = ("loop", t == "until", cond, body)
        elif k == "w" and t == "for":
            node = self.parse_for()
        elif k == "w" and t == "{":
            self.i += 1
            body = self.parse_list(("}",))
            self.expect_word("}")
            node = ("group", body)
        elif (k, t) == ("op", "("):
            self.i += 1
            body = self.parse_list(())
            if self.peek() != ("op", ")"):
                raise _ParseError("syntax error: missing ')'")
            self.i += 1
            node = ("sub", body)
        elif k == "w" and t in _RESERVED_END:
            raise _ParseError(f"syntax error: unexpected {t!r}")
        if node is None:
            return self.parse_simple()
        redirs = self.parse_redirs()
        return ("redir", node, redirs) if redirs else node

    def parse_redirs(self) -> list[tuple[str, str]]:
        redirs = []
        while True:
            k, t = self.peek()
            if k != "op" or not _REDIRECT.fullmatch(t):
                return redirs
            self.i += 1
            k2, target = self.peek()
            if k2 != "w":
                raise _ParseError("syntax error: missing redirection target")
            self.i += 1
            redirs.append((t, target))

    def parse_simple(self) -> Node:
        assigns: list[str] = []
        words: list[str] = []
        redirs: list[tuple[str, str]] = []
        if self.is_word("[["):
            self.i += 1
            while not self.is_word("]]"):
                k, t = self.peek()
                if k in ("eof", "nl"):
                    raise _ParseError("syntax error: missing ']]'")
                words.append(t if k == "w" else "\0" + t)  # operators inside [[ ]] are marked
                self.i += 1
            if "=~" in words[:-1]:  # the regex may contain ( ) | which the lexer split off
                at = words.index("=~") + 1
                words[at:] = ["".join(w.lstrip("\0") for w in words[at:])]
            self.i += 1
            return ("test2", words, self.parse_redirs())
        while True:
            k, t = self.peek()
            if k == "op" and _REDIRECT.fullmatch(t):
                redirs.extend(self.parse_redirs())
            elif k == "w":
                if not words and _ASSIGN.match(t):
                    assigns.append(t)
                else:
                    words.append(t)
                self.i += 1
            else:
                break
        if not (assigns or words or redirs):
            raise _ParseError(f"syntax error: unexpected {self.peek()[1] or 'end of file'!r}")
        if self.peek() == ("op", "(") and len(words) == 1:
            raise _ParseError("functions are not supported")
        return ("simple", assigns, words, redirs)

    def parse_if(self) -> Node:
        clauses = []
        else_body = None
        self.expect_word("if")
        while True:
            cond = self.parse_list(("then",))
            self.expect_word("then")
            body = self.parse_list(("elif", "else", "fi"))
            clauses.append((cond, body))
            if self.is_word("elif"):
                self.i += 1
                continue
            if self.is_word("else"):
                self.i += 1
                else_body = self.parse_list(("fi",))
            self.expect_word("fi")
            return ("if", clauses, else_body)

    def parse_for(self) -> Node:
        self.i += 1
        k, name = self.peek()
        if k != "w" or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise _ParseError("syntax error: bad for loop variable")
        self.i += 1
        self.skip_nl()
        words = None
        if self.is_word("in"):
            self.i += 1
            words = []
            while self.peek()[0] == "w":
                words.append(self.peek()[1])
                self.i += 1
        if self.peek() in (("op", ";"), ("nl", "\n")):
            self.i += 1
        self.skip_nl()
        self.expect_word("do")
        body = self.parse_list(("done",))
        self.expect_word("done")
        return ("for", name, words, body)


def parse_shell(src: str, *, exit_tail: bool = False) -> Node:
    """Parse a shell script into the small AST the interpreter walks. Raises ValueError.

    Simple commands that ash runs without forking — the last command of a process's code, which
    it ``exec``s in place ("can we avoid forking?" in ``evalcommand``) — are marked: a 5th element
    True (:func:`_mark_tails`). A process's code is the code of a pipeline stage, a subshell, a
    background job and, with ``exit_tail`` (``sh -c``, ``$(…)``: ash's ``EV_EXIT``), the script
    itself."""
    tree = _parse_cached(src, exit_tail)
    if isinstance(tree, str):
        raise ValueError(tree)
    return tree


@functools.lru_cache(maxsize=1024)
def _parse_cached(src: str, exit_tail: bool = False) -> Node | str:
    # loops re-run the same $(...) substitutions; the AST is never mutated, so it can be shared
    try:
        return _mark_tails(_Parser(_lex(src)).parse(), exit_tail)
    except _ParseError as err:
        return str(err)


def _mark_tails(node: Node, tail: bool) -> Node:
    """``node`` with the simple commands ash ``exec``s without forking marked (see
    :func:`parse_shell`); ``tail``: ``node`` is the last thing its process runs (``EV_EXIT``)."""
    kind = node[0]
    if kind == "simple":
        return (*node[:4], True) if tail else node
    if kind == "list":
        items = node[1]
        return ("list", [(_mark_tails(item, bg or (tail and i == len(items) - 1)), bg)
                         for i, (item, bg) in enumerate(items)])
    if kind == "andor":
        rest = node[2]
        return ("andor", _mark_tails(node[1], False),
                [(op, _mark_tails(item, tail and i == len(rest) - 1)) for i, (op, item) in enumerate(rest)])
    if kind == "pipe":
        cmds, negate = node[1], node[2]
        forked = len(cmds) > 1  # each stage is a process of its own
        return ("pipe", [_mark_tails(c, forked or (tail and not negate)) for c in cmds], negate)
    if kind == "if":
        return ("if", [(_mark_tails(c, False), _mark_tails(b, tail)) for c, b in node[1]],
                None if node[2] is None else _mark_tails(node[2], tail))
    if kind == "loop":
        return ("loop", node[1], _mark_tails(node[2], False), _mark_tails(node[3], False))
    if kind == "for":
        return ("for", node[1], node[2], _mark_tails(node[3], False))
    if kind == "group":
        return ("group", _mark_tails(node[1], tail))
    if kind == "sub":  # a forked subshell: its last command is exec'd in it
        return ("sub", _mark_tails(node[1], True))
    if kind == "redir":  # ash evaluates a redirected compound command without EV_EXIT
        return ("redir", _mark_tails(node[1], False), node[2])
    return node


# --------------------------------------------------------------------------- interpreter plumbing


class _Exit(Exception):
    """``exit N`` (or ``set -e``) unwinding the current shell."""

    def __init__(self, code: int) -> None:
        self.code = code


class _Killed(Exception):
    """The container was killed (OOM) while a program was running."""


class _LoopCtl(Exception):
    def __init__(self, kind: str, levels: int) -> None:
        self.kind = kind
        self.levels = levels


class _Input:
    """A command's stdin: text, or ``None`` for an open stdin that never sends data."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def read_all(self) -> str | None:
        text, self.text = self.text, ("" if self.text is not None else None)
        return text

    def read_line(self) -> str | None | bool:
        """A line (without newline), ``False`` at end of input, ``None`` when it would block."""
        if self.text is None:
            return None
        if self.text == "":
            return False
        line, sep, rest = self.text.partition("\n")
        self.text = rest
        return line


#: Virtual seconds between the looks a container's main process takes at an attached stdin
#: (:class:`StdinFeed`): input is read at the first multiple of this after it arrived.
STDIN_POLL = 0.25


class StdinFeed:
    """What was written to a container's stdin (``stdin: true``) by attached clients: text chunks
    with the virtual time each arrived, and when the stdin was closed (``stdinOnce``: when the
    first attached client detached), as the runtime's attach keeps them.

    The container's main process reads it (:class:`_FeedInput`); any run of the same container
    given the same feed (the kubelet's, a replay for ``logs``, the run an ``attach`` streams from)
    reads the same text at the same virtual times: a chunk that arrived at ``t`` is seen at the
    first multiple of :data:`STDIN_POLL` (of the cluster's clock) after ``t``.
    ``poll``: a reader that has seen everything wakes at each of those instants rather than
    waiting forever (for a run whose driver cannot be woken when input arrives: the kubelet's).
    ``tty``: the container has a terminal (its shell prints prompts).
    """

    def __init__(self, *, tty: bool = False, poll: bool = False) -> None:
        self.times: list[float] = []
        self.ends: list[int] = []  # cumulative length of the text after each chunk
        self.text = ""
        self.closed_at: float | None = None
        self.tty = tty
        self.poll = poll

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def append(self, t: float, text: str) -> None:
        """Input that arrived at virtual time ``t`` (ignored once closed)."""
        if self.closed_at is not None or not text:
            return
        if self.times and t < self.times[-1]:
            t = self.times[-1]
        self.times.append(t)
        self.text += text
        self.ends.append(len(self.text))

    def close(self, t: float) -> None:
        """The stdin closed at ``t``: the reader gets end-of-file after what was written."""
        if self.closed_at is None:
            self.closed_at = max(t, self.times[-1]) if self.times else t

    def visible(self, now: float) -> int:
        """How much of :attr:`text` a reader sees at ``now`` (chunks that arrived before ``now``)."""
        import bisect

        k = bisect.bisect_left(self.times, now)
        return self.ends[k - 1] if k else 0

    def next_arrival(self, now: float) -> float | None:
        """When the first input (or the close) not yet seen at ``now`` arrived, if known."""
        import bisect

        k = bisect.bisect_left(self.times, now)
        cands = [self.times[k]] if k < len(self.times) else []
        if self.closed_at is not None and self.closed_at >= now:
            cands.append(self.closed_at)
        return min(cands) if cands else None


class _FeedInput(_Input):
    """The main process's stdin when it is attached to a :class:`StdinFeed`."""

    def __init__(self, run: Run, feed: StdinFeed) -> None:
        self.run = run
        self.feed = feed
        self.pos = 0
        self.text = None
        #: the process waits for input (see :meth:`Run._unpark`)
        self.blocked = False

    def _eof(self) -> bool:
        return self.feed.closed_at is not None and self.feed.closed_at < self.run.now

    def read_all(self) -> str | None:
        if not self._eof():
            self.blocked = True
            return None
        self.blocked = False
        text, self.pos = self.feed.text[self.pos:], len(self.feed.text)
        return text

    def read_line(self) -> str | None | bool:
        vis = self.feed.visible(self.run.now)
        i = self.feed.text.find("\n", self.pos, vis)
        if i >= 0:
            line, self.pos = self.feed.text[self.pos:i], i + 1
            self.blocked = False
            return line
        if self._eof():
            self.blocked = False
            if self.pos < len(self.feed.text):
                line, self.pos = self.feed.text[self.pos:], len(self.feed.text)
                return line
            return False
        self.blocked = True
        return None

    def wait_time(self) -> float:
        """When to look again: the first poll instant after the next known arrival (after now
        when :attr:`StdinFeed.poll`), else never (``math.inf``: until :meth:`Run._unpark`)."""
        now = self.run.now
        t = self.feed.next_arrival(now)
        if t is None:
            if not self.feed.poll or self.feed.closed:
                return _INF
            t = now
        k = math.floor(t / STDIN_POLL) + 1
        while k * STDIN_POLL <= t:
            k += 1
        return k * STDIN_POLL


@attrs.define
class _IO:
    out: Callable[[str], None]
    err: Callable[[str], None]
    inp: _Input


Gen = Generator[float, None, Any]


# The kubelet-managed /etc/hosts without the pod's own line, for programs built without the kubelet's
# mounts (the kubelet mounts the full file: k8semu.node.volumes, k8semu.node.dns.hosts_file).
_DEFAULT_HOSTS = ("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                  "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")


def _interpret_escapes(text: str) -> tuple[str, bool]:
    """``echo -e``/``printf`` escapes; returns (text, stop) where stop is set by ``\\c``."""
    out, i = [], 0
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
             "e": "\x1b", '"': '"'}
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            d = text[i + 1]
            if d == "c":
                return "".join(out), True
            if d in table:
                out.append(table[d])
                i += 2
                continue
            m = re.match(r"0?([0-7]{1,3})", text[i + 1:])
            if d in "01234567" and m:
                out.append(chr(int(m.group(1), 8)))
                i += 1 + len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out), False


def _pi(digits: int) -> str:
    """Pi to ``digits`` significant digits, rounded (what ``perl -Mbignum=bpi -le 'print bpi(N)'`` prints)."""
    digits = max(1, min(digits, 20000))
    guard = 10
    scale = 10 ** (digits + guard)

    def arctan_inv(x: int) -> int:
        total = term = scale // x
        k, sign, x2 = 1, 1, x * x
        while term:
            term //= x2
            k += 2
            sign = -sign
            total += sign * (term // k)
        return total

    pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    s = str((pi + 5 * 10 ** guard) // 10 ** (guard + 1))
    return s[0] + ("." + s[1:] if len(s) > 1 else "")


# --------------------------------------------------------------------------- python -c subset

_PY_NODES = (
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.While, ast.For, ast.Break, ast.Continue,
    ast.Pass, ast.Import, ast.ImportFrom, ast.alias, ast.Name, ast.Load, ast.Store, ast.Constant,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Attribute, ast.Subscript,
    ast.JoinedStr, ast.FormattedValue, ast.List, ast.Tuple, ast.keyword,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Not,
    ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot,
)
_PY_MODULES = ("os", "sys", "time")
_PY_FUNCS = {"print", "int", "str", "float", "len", "range", "bool", "abs", "min", "max",
             "os.environ.get", "os.getenv", "sys.exit", "time.sleep", "exit"}


class _PyExit(Exception):
    def __init__(self, code: Any) -> None:
        self.code = code


def _py_dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _py_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _py_supported(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if not isinstance(node, _PY_NODES):
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(name not in _PY_MODULES for name in names):
                return False
        if isinstance(node, ast.Call) and _py_dotted(node.func) not in _PY_FUNCS:
            return False
        if isinstance(node, ast.Attribute) and _py_dotted(node) not in _PY_FUNCS | {"os.environ"}:
            return False
    return True


# --------------------------------------------------------------------------- the shell


class _Proc:
    """A process the run's shells started: exec'd (``kubectl exec``, a ``postStart`` hook), forked
    by a shell (a command, a pipeline stage, a subshell, ``$(…)``, a background job) or an nginx
    worker a reload started. ``cmd`` is its command line as ``ps`` shows it (a forked shell's is
    its parent's until it ``exec``s). ``pid`` is None until the namespace's PIDs are numbered
    (:meth:`Run.number_pids`); till then ``ordinal`` counts the PIDs taken before it. ``owner``:
    the container whose nginx master started it (a worker after a reload), else None. ``job``:
    a background job's task, to stop it when it is killed."""

    __slots__ = ("pid", "uid", "cmd", "ordinal", "owner", "job", "parent")

    def __init__(self, uid: int, cmd: str, owner: tuple[str, str] | None = None,
                 parent: _Proc | None | bool = None) -> None:
        self.pid: int | None = None
        self.uid = uid
        self.cmd = cmd
        self.ordinal = 0
        self.owner = owner
        self.job: Gen | None = None
        #: the process that forked it (None: the container's first process; False: the runtime, for
        #: an exec'd process or a reloaded nginx worker)
        self.parent = parent


#: ash's builtins: they run in the shell's own process (everything else is forked, or exec'd as
#: the last command of a process's code); ``type`` says ``is a shell builtin`` for them.
_SHELL_BUILTINS = frozenset({
    ".", ":", "[", "[[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec",
    "exit", "export", "false", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local",
    "printf", "pwd", "read", "readonly", "return", "set", "shift", "source", "test", "times", "trap", "true",
    "type", "ulimit", "umask", "unalias", "unset", "wait",
    "declare", "typeset", "shopt", "builtin"})  # bash's, which the model lets every shell have
#: ash's special builtins (``type``: ``is a special shell builtin``).
_SPECIAL_BUILTINS = frozenset({".", ":", "break", "continue", "eval", "exec", "exit", "export", "local",
                               "readonly", "return", "set", "shift", "source", "times", "trap", "unset"})
#: Characters of a word that expands to itself (a background job's command line, :func:`_static_argv`).
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=,+@%^-]+")


def _static_argv(node: Node) -> list[str] | None:
    """The argv of a simple command whose words need no expansion (``sleep 1000``), else None."""
    if node[0] != "simple" or node[1] or not node[2] or not all(_PLAIN_WORD.fullmatch(w) for w in node[2]):
        return None
    return list(node[2])


class _Shell:
    """One shell (or subshell) context: variables, positional parameters, options."""

    def __init__(self, run: Run, *, probe: bool = False) -> None:
        self.run = run
        env = run.program.env
        self.vars: dict[str, Any] = env.as_dict() if isinstance(env, ResolvedEnv) else dict(env)
        self.params: list[str] = []
        self.arg0 = "sh"
        self.status = 0
        self.errexit = False
        self.cond = 0
        self.probe = probe
        self.in_exec = False  # a process started by exec (see exec_command), not the container's own
        #: commands typed into a shell on an attached stdin (kubectl attach / run -i / debug -i): a
        #: program the image does not have is ``not found``, as from exec, not a server started
        self.typed = False
        #: ``chroot``'s new root: absolute paths are looked up under it ("" for the container's own)
        self.root = ""
        self.session = False  # an interactive shell started by exec (ShellSession)
        #: the process the shell's code runs in now (None: the container's own first process) and
        #: the one the shell started in (``$$``: a subshell keeps its parent's)
        self.proc: _Proc | None = None
        self.root_proc: _Proc | None = None
        self.last_job: _Proc | None = None  # ``$!``

    def child(self) -> _Shell:
        sub = _Shell.__new__(_Shell)
        sub.__dict__.update(self.__dict__)
        sub.vars = dict(self.vars)
        sub.params = list(self.params)
        return sub

    # ---------------------------------------------------------------- helpers

    def step(self) -> Gen:
        """Count one command; a task that never lets time pass becomes a spinning busy loop."""
        run = self.run
        run.steps += 1
        if run.steps > MAX_STEPS_PER_INSTANT and not self.probe:
            run.set_usage(cpu=1000)
            yield _INF
        return None

    def path(self, p: str) -> str:
        cwd = str(self.vars.get("PWD") or "/")
        full = p if p.startswith("/") else cwd.rstrip("/") + "/" + p
        parts: list[str] = []
        for part in full.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
            else:
                parts.append(part)
        if self.root:
            return self.root + ("/" + "/".join(parts) if parts else "")
        return "/" + "/".join(parts)

    def logical(self, p: str) -> str:
        """:meth:`path` as the process sees it: inside a ``chroot``, without the new root."""
        full = self.path(p)
        if self.root and full.startswith(self.root):
            return full[len(self.root):] or "/"
        return full

    def read_file(self, p: str) -> str | None:
        full = self.run.resolve(self.path(p))
        if full == "/dev/null":
            return ""
        if full.startswith("/proc/") and _PROC_ROOT.match(full):
            return _proc_root_file(self, full)
        text = self.run.fs.get(full)
        if text is None and full == "/etc/hostname":  # no sandbox file given: the UTS name
            return self.hostname() + "\n"
        return text

    def is_dir(self, p: str) -> bool:
        return self.run.is_dir(self.path(p))

    def hostname(self) -> str:
        return str(self.vars.get("HOSTNAME") or self.run.program.env.get("HOSTNAME") or "localhost")

    # ---------------------------------------------------------------- processes

    def cmdline(self) -> str:
        """The command line of the process the shell runs in (what a forked child shows)."""
        if self.proc is not None:
            return self.proc.cmd
        return " ".join(_main_argv(self.run))

    def fork(self, cmd: str | None = None) -> _Proc | None:
        """A child process of the shell's (``cmd``: as it shows; default the shell's own command
        line), or None in a probe (the kubelet's probes are not processes the model numbers)."""
        if self.probe:
            return None
        return self.run.fork(self.cmdline() if cmd is None else cmd, _uid(self.run), parent=self.proc)

    def become(self, argv: list[str]) -> None:
        """``exec``: the shell's process now runs ``argv``."""
        if self.probe:
            return
        if self.proc is None:
            self.run.main_argv = list(argv)
        else:
            self.proc.cmd = " ".join(argv)

    def pid_of(self, proc: _Proc | None) -> int:
        """The PID of ``proc`` (None: the container's first process) in the container's namespace."""
        if proc is None:
            return _first_pid(self.run)
        if proc.pid is None:
            _process_table(self.run)
        return proc.pid or 0

    def var(self, name: str) -> str | None:
        if name == "?":
            return str(self.status)
        if name == "$":
            return str(self.pid_of(self.root_proc))
        if name == "!":
            return None if self.last_job is None else str(self.pid_of(self.last_job))
        if name == "#":
            return str(len(self.params))
        if name in ("@", "*"):
            return " ".join(self.params)
        if name == "0":
            return self.arg0
        if name.isdigit():
            k = int(name)
            return self.params[k - 1] if k <= len(self.params) else None
        if name == "RANDOM":
            return str(self.run.rng.randrange(32768))
        value = self.vars.get(name)
        if isinstance(value, list):
            return value[0] if value else ""
        return value

    # ---------------------------------------------------------------- expansion

    def expand_segments(self, raw: str) -> Gen:
        """Expand one raw word into segments ``(text, kind)``: kind ``lit``, ``split`` or ``break``."""
        segs: list[tuple[str, str]] = []
        i, n = 0, len(raw)
        while i < n:
            c = raw[i]
            if c == "'":
                k = raw.index("'", i + 1)
                segs.append((raw[i + 1:k], "lit"))
                i = k + 1
            elif c == '"':
                k = _skip_dquote(raw, i)
                segs.append(("", "lit"))  # "" is an (empty) field
                yield from self._expand_dquoted(raw[i + 1:k - 1], segs)
                i = k
            elif c == "\\":
                segs.append((raw[i + 1:i + 2], "lit"))
                i += 2
            elif c == "$" or c == "`":
                text, i, many = yield from self._expand_dollar(raw, i)
                if many is not None:
                    for j, item in enumerate(many):
                        if j:
                            segs.append(("", "break"))
                        segs.append((item, "split"))
                else:
                    segs.append((text, "split"))
            else:
                segs.append((c, "glob" if c in "*?[" else "lit"))  # unquoted: pathname expansion
                i += 1
        return segs

    def _expand_dquoted(self, inner: str, segs: list[tuple[str, str]]) -> Gen:
        i, n = 0, len(inner)
        while i < n:
            c = inner[i]
            if c == "\\" and i + 1 < n and inner[i + 1] in '$`"\\\n':
                segs.append((inner[i + 1] if inner[i + 1] != "\n" else "", "lit"))
                i += 2
            elif c == "$" or c == "`":
                text, i, many = yield from self._expand_dollar(inner, i, quoted=True)
                if many is not None:
                    for j, item in enumerate(many):
                        if j:
                            segs.append(("", "break"))
                        segs.append((item, "lit"))
                else:
                    segs.append((text, "lit"))
            else:
                segs.append((c, "lit"))
                i += 1

    def _expand_dollar(self, s: str, i: int, quoted: bool = False) -> Gen:
        """Expand ``$...``/backticks at ``s[i]``; returns (text, next index, list-of-fields or None)."""
        if s[i] == "`":
            k = s.index("`", i + 1)
            text = yield from self.command_substitution(s[i + 1:k])
            return text, k + 1, None
        if s.startswith("$((", i):
            k = _skip_dollar(s, i)
            expr = yield from self.expand_string(s[i + 3:k - 2])
            return str(self.arith(expr)), k, None
        if s.startswith("$(", i):
            k = _skip_dollar(s, i)
            text = yield from self.command_substitution(s[i + 2:k - 1])
            return text, k, None
        if s.startswith("${", i):
            k = _skip_dollar(s, i)
            text, many = yield from self._param(s[i + 2:k - 1])
            return text, k, many
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9?$#@*!-]", s[i + 1:])
        if not m:
            return "$", i + 1, None
        name = m.group(0)
        if name == "@" and quoted:
            return "", i + 2, list(self.params)
        return self.var(name) or "", i + 1 + len(name), None

    def _param(self, body: str) -> Gen:
        if body.startswith("#") and len(body) > 1:
            value = self.vars.get(body[1:])
            if isinstance(value, list):
                return str(len(value)), None
            return str(len(self.var(body[1:]) or "")), None
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?$#@*])(?:\[([^\]]*)\])?", body)
        if not m:
            raise _Exit(2)
        name, index = m.group(1), m.group(2)
        rest = body[m.end():]
        if index is not None:
            arr = self.vars.get(name)
            items = arr if isinstance(arr, list) else ([arr] if arr is not None else [])
            if index in ("@", "*"):
                return " ".join(items), (list(items) if index == "@" else None)
            idx = self.arith((yield from self.expand_string(index)))
            value = items[idx] if 0 <= idx < len(items) else None
        else:
            value = self.var(name)
        m2 = re.match(r"(:?)([-=+?])", rest)
        if m2:
            word = yield from self.expand_string(rest[m2.end():])
            unset = value is None or (m2.group(1) == ":" and value == "")
            op = m2.group(2)
            if op == "-":
                value = word if unset else value
            elif op == "=":
                if unset:
                    self.vars[name] = value = word
            elif op == "+":
                value = "" if unset else word
            elif op == "?" and unset:
                self.run.write("stderr", f"sh: {name}: {word or 'parameter not set'}\n")
                raise _Exit(2)
        return value or "", None

    def expand_string(self, raw: str) -> Gen:
        """Expand without field splitting (assignments, ``[[ ]]``, here-strings)."""
        segs = yield from self.expand_segments(raw)
        return "".join(text for text, kind in segs if kind != "break")

    def expand_words(self, raws: list[str]) -> Gen:
        """Expand words into fields (quote removal, parameter/command/arith expansion, field splitting)."""
        fields: list[str] = []
        cur, mask = "", ""  # mask: "g" for each unquoted glob character of cur, "l" for the others

        def emit() -> None:
            matches = self.glob(cur, mask) if "g" in mask else None
            if matches:
                fields.extend(matches)
            else:
                fields.append(cur)

        for raw in raws:
            segs = yield from self.expand_segments(raw)
            cur, mask, have = "", "", False
            for text, kind in segs:
                if kind in ("lit", "glob"):
                    cur += text
                    mask += ("g" if kind == "glob" else "l") * len(text)
                    have = True
                elif kind == "break":
                    emit()
                    cur, mask, have = "", "", False
                else:
                    for j, part in enumerate(re.split(r"[ \t\n]+", text)):
                        if j and have:
                            emit()
                            cur, mask, have = "", "", False
                        if part:
                            cur += part
                            mask += "l" * len(part)
                            have = True
            if have:
                emit()
        return fields

    def glob(self, word: str, mask: str) -> list[str]:
        """Pathname expansion of ``word`` (``mask`` marks its unquoted ``*``, ``?``, ``[``) against the
        container's files and directories: the sorted matches, or [] (the word then stays as it is)."""
        run = self.run
        results = [("/" if word.startswith("/") else "", "/" if word.startswith("/") else self.path("."))]
        start = 0
        for end in [*(i for i, ch in enumerate(word) if ch == "/"), len(word)]:
            part, pmask = word[start:end], mask[start:end]
            start = end + 1
            if not part:
                continue
            new: list[tuple[str, str]] = []
            if "g" not in pmask:
                new = [(shown + part, full.rstrip("/") + "/" + part) for shown, full in results]
            else:
                pattern = "".join(ch if m == "g" or ch not in "*?[" else f"[{ch}]" for ch, m in zip(part, pmask))
                for shown, full in results:
                    for name in sorted(run.children(full)):
                        if (not name.startswith(".") or part.startswith(".")) and fnmatch.fnmatchcase(name, pattern):
                            new.append((shown + name, full.rstrip("/") + "/" + name))
            results = [(shown + "/", full) for shown, full in new]
        return [shown.rstrip("/") or "/" for shown, full in results
                if full in run.fs or full in run.links or run.is_dir(full)] if results else []

    def command_substitution(self, src: str) -> Gen:
        if src.strip().startswith("<"):
            text = self.read_file((yield from self.expand_string(src.strip()[1:].strip())))
            return (text or "").rstrip("\n")
        buf: list[str] = []
        sub = self.child()
        io = _IO(buf.append, self.run.stderr_writer(), _Input(""))
        try:
            tree = parse_shell(src, exit_tail=True)  # a forked subshell: its last command is exec'd
        except ValueError:
            return ""
        proc = self.fork()
        if proc is not None:
            sub.proc = proc
        try:
            yield from sub.run_node(tree, io)
        except _Exit:
            pass
        finally:
            self.run.reap(proc)
        return "".join(buf).rstrip("\n")

    def arith(self, expr: str) -> int:
        text = expr.replace("&&", " and ").replace("||", " or ").strip()
        text = re.sub(r"!(?!=)", " not ", text)
        try:
            tree = ast.parse(text or "0", mode="eval")
        except SyntaxError:
            self.run.write("stderr", f"sh: arithmetic syntax error: {expr}\n")
            raise _Exit(2) from None

        def ev(node: ast.AST) -> int:
            if isinstance(node, ast.Expression):
                return ev(node.body)
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node.value
            if isinstance(node, ast.Name):
                v = self.var(node.id) or "0"
                return int(v) if re.fullmatch(r"-?\d+", v.strip()) else 0
            if isinstance(node, ast.UnaryOp):
                v = ev(node.operand)
                return {ast.USub: -v, ast.UAdd: v, ast.Not: int(not v), ast.Invert: ~v}[type(node.op)]
            if isinstance(node, ast.BoolOp):
                vals = [ev(v) for v in node.values]
                return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
            if isinstance(node, ast.Compare):
                left = ev(node.left)
                for op, right_node in zip(node.ops, node.comparators):
                    right = ev(right_node)
                    ok = {ast.Eq: left == right, ast.NotEq: left != right, ast.Lt: left < right,
                          ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right}.get(type(op))
                    if not ok:
                        return 0
                    left = right
                return 1
            if isinstance(node, ast.BinOp):
                a, b = ev(node.left), ev(node.right)
                if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
                    raise ZeroDivisionError
                if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                    return int(a / b)
                if isinstance(node.op, ast.Mod):
                    return a - b * int(a / b)
                ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.BitAnd: a & b, ast.BitOr: a | b,
                       ast.BitXor: a ^ b}
                if type(node.op) in ops:
                    return ops[type(node.op)]
            raise ValueError(expr)

        try:
            return ev(tree)
        except (ValueError, KeyError, ZeroDivisionError):
            self.run.write("stderr", f"sh: arithmetic error: {expr}\n")
            raise _Exit(2) from None

    # ---------------------------------------------------------------- execution

    def run_node(self, node: Node, io: _IO) -> Gen:
        kind = node[0]
        if kind == "list":
            status = 0
            for item, background in node[1]:
                if background:
                    self._spawn(item, io)
                    status = 0
                    continue
                status = yield from self.run_node(item, io)
                self.status = status
                if status and self.errexit and not self.cond and item[0] not in ("andor", "pipe"):
                    raise _Exit(status)
            return status
        if kind == "andor":
            status = yield from self._cond(node[1], io)
            for op, item in node[2]:
                if (op == "&&") == (status == 0):
                    status = yield from self._cond(item, io)
                    self.status = status
            return status
        if kind == "pipe":
            cmds, negate = node[1], node[2]
            inp = io.inp
            status = 0
            # ash forks every stage of a pipeline at once (``ps | grep x`` lists the grep)
            procs = [self.fork(" ".join(a) if (a := _static_argv(c)) else None) if len(cmds) > 1 else None
                     for c in cmds]
            for idx, cmd in enumerate(cmds):
                last = idx == len(cmds) - 1
                buf: list[str] = []
                stage_io = _IO(io.out if last else buf.append, io.err, inp)
                sub = self if last else self.child()
                saved, proc = sub.proc, procs[idx]
                if proc is not None:
                    sub.proc = proc
                try:
                    status = yield from sub.run_node(cmd, stage_io)
                except _Exit as e:
                    if last and len(cmds) == 1:
                        raise
                    status = e.code
                finally:
                    sub.proc = saved
                    self.run.reap(proc)
                inp = _Input("".join(buf))
            return int(not status) if negate else status
        if kind == "simple":
            return (yield from self.run_simple(node, io))
        if kind == "test2":
            yield from self.step()
            io2 = yield from self.redirect(node[2], io)
            if io2 is None:
                return 1
            words = []
            for w in node[1]:
                words.append(w if w.startswith("\0") else (yield from self.expand_string(w)))
            return self.test(words, double=True)
        if kind == "if":
            for cond, body in node[1]:
                status = yield from self._cond(cond, io)
                if status == 0:
                    return (yield from self.run_node(body, io))
            if node[2] is not None:
                return (yield from self.run_node(node[2], io))
            return 0
        if kind == "loop":
            until, cond, body = node[1], node[2], node[3]
            status = 0
            while True:
                yield from self.step()
                c = yield from self._cond(cond, io)
                if (c == 0) == until:
                    return status
                try:
                    status = yield from self.run_node(body, io)
                except _LoopCtl as ctl:
                    if ctl.levels > 1:
                        ctl.levels -= 1
                        raise
                    if ctl.kind == "break":
                        return 0
        if kind == "for":
            name, words, body = node[1], node[2], node[3]
            items = list(self.params) if words is None else (yield from self.expand_words(words))
            status = 0
            for item in items:
                yield from self.step()
                self.vars[name] = item
                try:
                    status = yield from self.run_node(body, io)
                except _LoopCtl as ctl:
                    if ctl.levels > 1:
                        ctl.levels -= 1
                        raise
                    if ctl.kind == "break":
                        break
            return status
        if kind == "group":
            return (yield from self.run_node(node[1], io))
        if kind == "sub":
            sub = self.child()
            proc = self.fork()
            if proc is not None:
                sub.proc = proc
            try:
                return (yield from sub.run_node(node[1], io))
            except _Exit as e:
                return e.code
            finally:
                self.run.reap(proc)
        if kind == "redir":
            io2 = yield from self.redirect(node[2], io)
            if io2 is None:
                return 1
            return (yield from self.run_node(node[1], io2))
        raise AssertionError(kind)

    def _cond(self, node: Node, io: _IO) -> Gen:
        self.cond += 1
        try:
            return (yield from self.run_node(node, io))
        finally:
            self.cond -= 1

    def _spawn(self, item: Node, io: _IO) -> None:
        """``item &``: a background job, a forked process of its own (``$!``)."""
        job = self.child()
        argv = _static_argv(item)
        proc = self.fork(" ".join(argv) if argv else None)
        if proc is not None:
            job.proc = proc
        gen = job._background(item, io, proc)
        if proc is not None:
            proc.job = gen
        self.last_job = proc
        self.run.spawn(gen)

    def _background(self, node: Node, io: _IO, proc: _Proc | None = None) -> Gen:
        try:
            yield from self.run_node(node, io)
        except (_Exit, _LoopCtl):
            pass
        finally:
            self.run.reap(proc)

    def redirect(self, redirs: list[tuple[str, str]], io: _IO) -> Gen:
        """Apply redirections; returns a new :class:`_IO` or None (error already reported)."""
        out, err, inp = io.out, io.err, io.inp
        for op, raw in redirs:
            target = yield from self.expand_string(raw)
            fd = op[: len(op) - len(op.lstrip("0123456789"))] or ("0" if op.lstrip("0123456789")[0] == "<" else "1")
            sym = op.lstrip("0123456789")
            if sym in (">&", "<&"):
                src = {"1": out, "2": err}.get(target)
                if src is None:
                    continue
                if fd == "1":
                    out = src
                elif fd == "2":
                    err = src
                continue
            if sym == "<":
                text = self.read_file(target)
                if text is None:
                    io.err(f"sh: can't open {target}: no such file\n")  # ash's openredirect
                    return None
                inp = _Input(text)
                continue
            writer = self._file_writer(target, append=sym == ">>", io=io)
            if writer is None:
                return None
            if fd == "1":
                out = writer
            elif fd == "2":
                err = writer
        return _IO(out, err, inp)

    def _file_writer(self, target: str, *, append: bool, io: _IO) -> Callable[[str], None] | None:
        """The writer of ``> target`` (``>> target``: ``append``), or None when the file cannot be
        created (ash's ``sh: can't create X: …`` reported, status 1)."""
        full = self.run.resolve(self.path(target))
        if full == "/dev/null":
            return lambda text: None
        if full in ("/dev/stdout", "/proc/self/fd/1", "/proc/1/fd/1", "/dev/fd/1"):
            return io.out
        if full in ("/dev/stderr", "/proc/self/fd/2", "/proc/1/fd/2", "/dev/fd/2"):
            return io.err
        error = self.create_error(full)
        if error is not None:  # ash's errmsg(): a missing directory is "nonexistent directory"
            io.err(f"sh: can't create {target}: "
                   f"{'nonexistent directory' if error.startswith('No such') else error}\n")
            return None
        run = self.run
        fs = run.fs
        if not append or full not in fs:
            fs[full] = ""
        run.mtimes[full] = run.now

        def write(text: str) -> None:
            fs[full] = fs.get(full, "") + text
            run.mtimes[full] = run.now

        return write

    def create_error(self, full: str) -> str | None:
        """Why the file ``full`` (absolute) cannot be created or written, as ``strerror`` says it
        (``No such file or directory``: its directory is missing; ``Is a directory``; ``Read-only
        file system``: :meth:`Run.read_only`), or None. An image the model does not know has
        whatever directories its programs write into."""
        run = self.run
        if full.startswith(("/proc/sys/", "/sys/")) or full == "/proc/sysrq-trigger":
            return "Read-only file system"  # runc mounts sysfs and these read-only
        if full.startswith("/proc/"):
            return "No such file or directory"  # procfs creates no files: its lookup says ENOENT
        if run.is_dir(full):
            return "Is a directory"
        if run.tree is not _GENERIC_TREE and not run.is_dir(posixpath.dirname(full)):
            return "No such file or directory"
        if run.read_only(full):
            return "Read-only file system"
        return None

    def run_simple(self, node: Node, io: _IO) -> Gen:
        assigns, raw_words, redirs = node[1], node[2], node[3]
        yield from self.step()
        argv = yield from self.expand_words(raw_words)
        values = []
        for a in assigns:
            name, _, raw = a.partition("=")
            if raw.startswith("(") and raw.endswith(")"):
                values.append((name, (yield from self.expand_words(_lex_words(raw[1:-1])))))
            else:
                values.append((name, (yield from self.expand_string(raw))))
        io2 = yield from self.redirect(redirs, io)
        if io2 is None:
            return 1
        if not argv:
            for name, value in values:
                self.vars[name] = value
            return self.status if raw_words or not assigns else 0
        tail = len(node) > 4  # the last command of its process: exec'd, not forked
        if values:  # VAR=x cmd: the command sees VAR, the shell keeps its own
            saved = dict(self.vars)
            self.vars.update(dict(values))
            try:
                return (yield from self.exec_argv(argv, io2, tail=tail))
            finally:
                self.vars = saved | {k: v for k, v in self.vars.items() if k not in dict(values)}
        return (yield from self.exec_argv(argv, io2, tail=tail))

    def exec_argv(self, argv: list[str], io: _IO, *, tail: bool = False) -> Gen:
        """Run one command line (already expanded): builtin, utility, known program or unknown program.

        A shell builtin runs in the shell's process; anything else in a forked child (a new PID),
        or, with ``tail`` (``exec``, the last command of ``sh -c``, what an entrypoint ``exec``s),
        in the shell's process, which then shows as ``argv``."""
        name = argv[0].rsplit("/", 1)[-1] if "/" in argv[0] else argv[0]
        handler = _COMMANDS.get(name)
        if handler is not None and not _installed(self, name):
            io.err(f"sh: {argv[0]}: not found\n")  # a utility this image does not have (ps without procps)
            return 127
        if handler is None:
            if (self.in_exec or self.typed) and ("/" not in argv[0] or self.read_file(argv[0]) is None):
                io.err(f"sh: {argv[0]}: not found\n")  # busybox; the image has no such program
                return 127
            handler = _unknown_program
        elif name in _SHELL_BUILTINS:
            return (yield from handler(self, argv, io))
        if tail:
            self.become(argv)
            return (yield from handler(self, argv, io))
        proc = self.fork(" ".join(argv))
        if proc is None:
            return (yield from handler(self, argv, io))
        saved, self.proc = self.proc, proc
        try:
            return (yield from handler(self, argv, io))
        finally:
            self.proc = saved
            self.run.reap(proc)

    def unknown(self, argv: list[str], io: _IO) -> Gen:
        """A program we cannot interpret: it runs until stopped, serving (exits 0 at once in a probe)."""
        if self.probe:
            return 0
        script = self.read_file(argv[0]) if "/" in argv[0] else None
        if script is not None and script.startswith("#!") and re.match(r"#!\s*\S*(sh|bash)\b", script):
            return (yield from _run_script_text(self, script, argv[0], argv[1:], io))
        if self.in_exec or self.typed:  # exec'd or typed, e.g. `python manage.py migrate`: ends at once
            return 0
        return (yield from self.serve())

    def serve(self, cpu: int | None = None, memory: int | None = None, *, term_exits: bool = True) -> Gen:
        """Block forever as a server: answers network probes and exits 0 on SIGTERM."""
        if self.probe:
            return 0
        info = self.run.program.image_defaults
        self.run.set_usage(cpu=cpu if cpu is not None else (info.cpu if info else 1),
                           memory=memory if memory is not None else (info.memory if info else 16 * _MiB))
        self.run.serving = True
        if term_exits and self.run.term_action is None:
            self.run.term_action = (0, 0.0)
        yield _INF

    # ---------------------------------------------------------------- test / [ / [[

    def test(self, words: list[str], *, double: bool) -> int:
        """Evaluate ``test``/``[``/``[[`` arguments; 0 true, 1 false, 2 error."""
        pos = 0

        def peek() -> str | None:
            return words[pos] if pos < len(words) else None

        def is_op(w: str | None, *ops: str) -> bool:
            return w is not None and (w.lstrip("\0") in ops if double else w in ops)

        def or_expr() -> bool:
            nonlocal pos
            v = and_expr()
            while is_op(peek(), "||", "-o") and (double or peek() == "-o"):
                pos += 1
                v = and_expr() or v
            return v

        def and_expr() -> bool:
            nonlocal pos
            v = unary()
            while is_op(peek(), "&&", "-a") and (double or peek() == "-a"):
                pos += 1
                v = unary() and v
            return v

        def unary() -> bool:
            nonlocal pos
            w = peek()
            if w is None:
                return False
            if w in ("!", "\0!"):
                pos += 1
                return not unary()
            if is_op(w, "(") and (double or w == "("):
                pos += 1
                v = or_expr()
                if is_op(peek(), ")"):
                    pos += 1
                return v
            nxt = words[pos + 1] if pos + 1 < len(words) else None
            if nxt is not None and nxt.lstrip("\0") in _TEST_BINARY and not nxt.startswith("\0(") \
                    and (pos + 2 < len(words)):
                left, op, right = w.lstrip("\0"), nxt.lstrip("\0"), words[pos + 2].lstrip("\0")
                pos += 3
                return self._binary(left, op, right, double)
            if w.startswith("-") and len(w) == 2 and nxt is not None and not is_op(nxt, "&&", "||", ")"):
                pos += 2
                return self._unary(w, nxt)
            pos += 1
            return w != ""

        try:
            v = or_expr()
        except ValueError:
            return 2
        return 0 if v else 1

    def _unary(self, op: str, arg: str) -> bool:
        if op == "-n":
            return arg != ""
        if op == "-z":
            return arg == ""
        if op == "-d":
            return self.is_dir(arg)
        if op in ("-e", "-r", "-w", "-x", "-a"):
            return self.read_file(arg) is not None or self.is_dir(arg)
        if op in ("-f",):
            return self.read_file(arg) is not None
        if op == "-s":
            return bool(self.read_file(arg))
        if op in ("-L", "-h", "-p", "-S", "-b", "-c", "-t"):
            return False
        raise ValueError(op)

    def _binary(self, left: str, op: str, right: str, double: bool) -> bool:
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(left, right) if double else left == right
        if op == "!=":
            return not fnmatch.fnmatchcase(left, right) if double else left != right
        if op == "=~":
            m = re.search(right, left)
            self.vars["BASH_REMATCH"] = [m.group(0), *[g or "" for g in m.groups()]] if m else []
            return m is not None
        if op in ("<", ">"):
            return left < right if op == "<" else left > right
        try:
            a, b = int(left.strip()), int(right.strip())
        except ValueError:
            self.run.write("stderr", f"sh: {left if not left.strip().lstrip('-').isdigit() else right}: bad number\n")
            raise
        return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]


_TEST_BINARY = frozenset({"=", "==", "!=", "=~", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


#: ``/proc/PID/root/…``: a file of the container the process ``PID`` of the namespace runs in.
_PROC_ROOT = re.compile(r"/proc/(self|\d+)/root(/.*)?")


def _proc_root_file(sh: _Shell, full: str) -> str | None:
    """The file ``/proc/PID/root/PATH`` names: ``PATH`` in the file system of the process's
    container (the run's own, or a rebuild of another container of the pod; upstream's "Share
    Process Namespace" reads nginx's configuration this way), None when there is no such process
    or file (``/pause``'s and the node's processes: their files are not modelled)."""
    m = _PROC_ROOT.match(full)
    assert m is not None
    run = sh.run
    pid = sh.pid_of(sh.proc) if m.group(1) == "self" else int(m.group(1))
    entry = next((e for e in _process_table(run) if e[0] == pid), None)
    if entry is None or entry[3] is None:
        return None
    _, pod, spec, start = entry[3]
    other = run if spec is None else _rebuilt_run(run, pod, spec, start)
    if other is None:
        return None
    path = posixpath.normpath(m.group(2) or "/")
    target = other.resolve(path)
    if target == "/dev/null":
        return ""
    return other.fs.get(target)


def _unknown_program(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    return (yield from sh.unknown(argv, io))


def _lex_words(src: str) -> list[str]:
    return [t for k, t in _lex(src) if k == "w"]


def _run_script_text(sh: _Shell, script: str, arg0: str, params: list[str], io: _IO, *,
                     exit_tail: bool = False) -> Gen:
    try:
        tree = parse_shell(script, exit_tail=exit_tail)
    except ValueError:
        return (yield from sh.serve())  # a script we cannot read is treated like an unknown program
    sub = sh.child()
    sub.arg0, sub.params = arg0, list(params)
    try:
        return (yield from sub.run_node(tree, io))
    except _Exit as e:
        return e.code
    except _LoopCtl:
        return 0


# --------------------------------------------------------------------------- commands

_Handler = Callable[[_Shell, list[str], _IO], Gen]
_COMMANDS: dict[str, _Handler] = {}


def _command(*names: str) -> Callable[[_Handler], _Handler]:
    def register(fn: _Handler) -> _Handler:
        for name in names:
            _COMMANDS[name] = fn
        return fn

    return register


def _done(code: int = 0) -> Gen:
    return code
    yield  # pragma: no cover - makes this a generator


@_command("sh", "bash", "ash", "dash", "ksh")
def _c_sh(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    errexit = False
    command = None
    while args and args[0].startswith(("-", "+")) and args[0] not in ("-", "--"):
        flag = args.pop(0)
        if flag.startswith("--"):
            continue
        if "e" in flag and flag.startswith("-"):
            errexit = True
        if "c" in flag:
            if not args:
                io.err(f"{argv[0]}: -c: option requires an argument\n")
                return 2
            command = args.pop(0)
    if args and args[0] == "--":
        args.pop(0)
    if command is None:
        if args:  # sh FILE [ARGS]
            text = sh.read_file(args[0])
            if text is None:
                return (yield from sh.unknown(argv, io))  # the script lives in the image
            return (yield from _run_script_text(_with(sh, errexit), text, args[0], args[1:], io))
        if isinstance(io.inp, _FeedInput):  # an attached stdin: commands run as their lines arrive
            return (yield from _feed_shell(_with(sh, errexit), argv[0], io))
        text = io.inp.read_all()
        if text is None:  # interactive shell on an open stdin: waits forever
            yield _INF
        return (yield from _run_script_text(_with(sh, errexit), text or "", argv[0], [], io))
    arg0 = args[0] if args else argv[0]
    return (yield from _run_script_text(_with(sh, errexit), command, arg0, args[1:], io, exit_tail=True))


def _shell_prompt(sh: _Shell, shell: str, continuation: bool = False) -> str:
    """A terminal shell's prompt: ``PS2`` (``> ``) or ``PS1`` — busybox/ash ``/ # ``, Debian's bash
    ``root@HOSTNAME:/# `` (root, the working directory)."""
    if continuation:
        return "> "
    cwd = sh.logical(".")
    if shell.rsplit("/", 1)[-1] == "bash":
        return f"root@{sh.hostname()}:{cwd}# "
    return f"{cwd} # "


def _feed_shell(sh: _Shell, arg0: str, io: _IO) -> Gen:
    """A shell reading its commands from an attached stdin (:class:`StdinFeed`), as ``sh`` with no
    script does: each complete command runs when its last line has arrived, in the same shell
    (variables and ``cd`` carry over); ``exit N`` ends it with N, end of input with the status
    of the last command. With a terminal it prints its prompt before each command (PS2 ``> ``
    for a continuation line). Syntax errors are busybox's (``sh: syntax error: …``, status 2)."""
    inp = io.inp
    assert isinstance(inp, _FeedInput)
    sh.arg0 = arg0
    sh.typed = True
    shell = arg0.rsplit("/", 1)[-1]
    status, text = 0, ""
    while True:
        if inp.feed.tty:
            io.out(_shell_prompt(sh, shell, continuation=bool(text)))
        while (line := inp.read_line()) is None:
            yield inp.wait_time()
        if line is False:
            return status
        text += line + "\n"
        if ShellSession.incomplete(text):
            continue
        try:
            tree = parse_shell(text)
        except ValueError as err:
            io.err(f"{shell}: {err}\n")
            status = sh.status = 2
            text = ""
            continue
        text = ""
        try:
            status = yield from sh.run_node(tree, io)
        except _Exit as e:
            return e.code
        except _LoopCtl:
            status = 0
        sh.status = status


def _with(sh: _Shell, errexit: bool) -> _Shell:
    sub = sh.child()
    sub.errexit = errexit
    sub.root_proc, sub.last_job = sh.proc, None  # a new shell: $$ is its process
    env = sh.run.program.env
    sub.vars = (env.as_dict() if isinstance(env, ResolvedEnv) else dict(env)) | {k: v for k, v in sh.vars.items()
                                           if k in sh.run.program.env or k in sh.run.exported}
    return sub


@_command("true", ":")
def _c_true(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    return (yield from _done(0))


@_command("false")
def _c_false(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    return (yield from _done(1))


@_command("exit", "return")
def _c_exit(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    code = sh.status
    if len(argv) > 1:
        try:
            code = int(argv[1]) & 255
        except ValueError:
            io.err(f"sh: exit: Illegal number: {argv[1]}\n")
            code = 2
    raise _Exit(code)
    yield  # pragma: no cover


@_command("break", "continue")
def _c_break(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    levels = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    raise _LoopCtl(argv[0], max(1, levels))
    yield  # pragma: no cover


@_command("exec")
def _c_exec(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    if len(argv) == 1:
        return 0
    status = yield from sh.exec_argv(argv[1:], io, tail=True)
    raise _Exit(status)


@_command("echo")
def _c_echo(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flag = args.pop(0)
        newline = newline and "n" not in flag
        escapes = ("e" in flag) or (escapes and "E" not in flag)
    text = " ".join(args)
    if escapes:
        text, stop = _interpret_escapes(text)
        newline = newline and not stop
    io.out(text + ("\n" if newline else ""))
    return (yield from _done(0))


_PRINTF_SPEC = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d+))?([sdiouxXfFeEgGcb%])")


@_command("printf")
def _c_printf(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    if len(argv) < 2:
        io.err("printf: usage: printf FORMAT [ARGUMENT]...\n")
        return 1
    fmt, args = argv[1], argv[2:]
    status = 0
    out: list[str] = []
    while True:
        consumed = 0

        def conv(m: re.Match[str]) -> str:
            nonlocal consumed, status
            flags, width, prec, kind = m.groups()
            if kind == "%":
                return "%"
            arg = args[consumed] if consumed < len(args) else ""
            consumed += 1
            spec = "%" + flags + width + ("." + prec if prec is not None else "")
            if kind in "diouxXc":
                try:
                    num = int(arg, 0) if arg else 0
                except ValueError:
                    io.err(f"printf: invalid number '{arg}'\n")
                    status, num = 1, 0
                if kind == "c":
                    return (spec + "s") % (arg[:1])
                return (spec + ("d" if kind in "iu" else kind)) % num
            if kind in "fFeEgG":
                try:
                    num_f = float(arg) if arg else 0.0
                except ValueError:
                    io.err(f"printf: invalid number '{arg}'\n")
                    status, num_f = 1, 0.0
                return (spec + kind) % num_f
            if kind == "b":
                return (spec + "s") % _interpret_escapes(arg)[0]
            return (spec + "s") % arg

        text, stop = _interpret_escapes(fmt)
        out.append(_PRINTF_SPEC.sub(conv, text))
        args = args[consumed:]
        if stop or not args or consumed == 0:
            break
    io.out("".join(out))
    return (yield from _done(status))


@_command("sleep")
def _c_sleep(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    if len(argv) < 2:
        io.err("sleep: missing operand\n")
        return 1
    total = 0.0
    for arg in argv[1:]:
        try:
            total += parse_duration(arg)
        except ValueError:
            io.err(f"sleep: invalid number '{arg}'\n")
            return 1
    yield sh.run.now + total
    return 0


@_command("date")
def _c_date(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    when = sh.run.wall_clock(sh.run.now)
    fmt = next((a[1:] for a in argv[1:] if a.startswith("+")), None)
    if fmt is not None:
        text = when.strftime(fmt.replace("%N", "000000000"))
    elif "-u" in argv or "-R" not in argv:
        text = f"{when:%a %b} {when.day:2d} {when:%H:%M:%S} UTC {when.year}"
    else:
        text = when.strftime("%a, %d %b %Y %H:%M:%S +0000")
    io.out(text + "\n")
    return (yield from _done(0))


def _files_or_stdin(sh: _Shell, args: list[str], io: _IO, prog: str) -> tuple[list[str | None], int]:
    if not args or args == ["-"]:
        return [io.inp.read_all()], 0
    texts: list[str | None] = []
    status = 0
    for a in args:
        text = sh.read_file(a)
        if text is None:
            io.err(f"{prog}: can't open '{a}': No such file or directory\n")
            status = 1
            continue
        texts.append(text)
    return texts, status


@_command("cat")
def _c_cat(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = [a for a in argv[1:] if not (a.startswith("-") and a != "-")]
    texts, status = _files_or_stdin(sh, args, io, "cat")
    for text in texts:
        if text is None and isinstance(io.inp, _FeedInput):  # an attached stdin: copied line by line
            while (line := io.inp.read_line()) is not False:
                if line is None:
                    yield io.inp.wait_time()
                else:
                    io.out(line + "\n")
            continue
        if text is None:  # an open stdin that never sends data: cat waits forever
            yield _INF
        io.out(text)
    return status


def _head_tail_options(args: list[str], default: int) -> tuple[tuple[str, int, str], list[str], bool]:
    """((unit ``"n"`` lines or ``"c"`` bytes, count, sign ``""``/``"+"``/``"-"`` as written),
    other arguments, follow) for ``head``/``tail``: ``-n N``, ``-nN``, ``-N``, ``-c N``, ``-cN``,
    ``--lines=N``, ``--bytes=N``, ``-f``/``-F``/``--follow``, ``-q``/``-s``/``-v``."""
    unit, n, sign, rest, follow = "n", default, "", [], False

    def count(text: str) -> tuple[int, str]:
        text = text.strip()
        sg = text[:1] if text[:1] in ("+", "-") else ""
        digits = text[len(sg):]
        return (int(digits) if digits.isdigit() else 0), sg

    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-n", "-c") and i + 1 < len(args):
            unit = a[1]
            n, sign = count(args[i + 1])
            i += 2
            continue
        m = re.fullmatch(r"-([nc])([+-]?\d+)|--(lines|bytes)=([+-]?\d+)|-(\d+)", a)
        if m:
            if m.group(5):
                unit, n, sign = "n", int(m.group(5)), ""
            else:
                unit = m.group(1) or ("n" if m.group(3) == "lines" else "c")
                n, sign = count(m.group(2) or m.group(4))
        elif a in ("-f", "-F") or a.startswith("--follow") or re.fullmatch(r"-[fFqsv]+", a):
            follow = follow or "f" in a.lower()
        else:
            rest.append(a)
        i += 1
    return (unit, n, sign), rest, follow


def _units(text: str, unit: str) -> list[str]:
    return text.splitlines(keepends=True) if unit == "n" else list(text)


def _tail_of(text: str, spec: tuple[str, int, str]) -> str:
    """``tail``: the last N lines/bytes, or from the N-th on (``+N``)."""
    unit, n, sign = spec
    parts = _units(text, unit)
    if sign == "+":
        return "".join(parts[max(0, n - 1):])
    return "".join(parts[-n:] if n else [])


def _head_of(text: str, spec: tuple[str, int, str]) -> str:
    """``head``: the first N lines/bytes, or all but the last N (``-N``)."""
    unit, n, sign = spec
    parts = _units(text, unit)
    if sign == "-":
        return "".join(parts[:-n] if n else parts)
    return "".join(parts[:n])


@_command("tail")
def _c_tail(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    spec, files, follow = _head_tail_options(argv[1:], 10)
    if follow:
        for f in files:
            text = sh.read_file(f)
            if text:
                io.out(_tail_of(text, spec))
        yield _INF
    texts, status = _files_or_stdin(sh, files, io, "tail")
    for text in texts:
        if text is None:
            yield _INF
        io.out(_tail_of(text, spec))
    return status


@_command("head")
def _c_head(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    spec, files, _ = _head_tail_options(argv[1:], 10)
    texts, status = _files_or_stdin(sh, files, io, "head")
    for text in texts:
        if text is None:
            yield _INF
        io.out(_head_of(text, spec))
    return status


@_command("rev", "wc", "sort", "uniq", "grep")
def _c_filter(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    prog = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    flags = "".join(a[1:] for a in args if a.startswith("-") and len(a) > 1)
    args = [a for a in args if not (a.startswith("-") and len(a) > 1)]
    pattern = None
    if prog == "grep":
        if not args:
            io.err("grep: missing pattern\n")
            return 2
        pattern = args.pop(0)
    texts, status = _files_or_stdin(sh, args, io, prog)
    if any(t is None for t in texts):
        yield _INF
    lines = "".join(t or "" for t in texts).splitlines()
    if prog == "rev":
        io.out("".join(line[::-1] + "\n" for line in lines))
    elif prog == "wc":
        text = "".join(t or "" for t in texts)
        counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
        chosen = [k for k in "lwc" if k in flags] or ["l", "w", "c"]
        io.out(" ".join(str(counts[k]) for k in chosen) + "\n")
    elif prog in ("sort", "uniq"):
        if prog == "sort":
            lines = sorted(lines, reverse="r" in flags)
        else:
            lines = [line for i, line in enumerate(lines) if i == 0 or lines[i - 1] != line]
        io.out("".join(line + "\n" for line in lines))
    else:
        try:
            rx = re.compile(pattern or "", re.IGNORECASE if "i" in flags else 0)
        except re.error:
            rx = re.compile(re.escape(pattern or ""))
        hits = [line for line in lines if bool(rx.search(line)) != ("v" in flags)]
        if "c" in flags:
            io.out(f"{len(hits)}\n")
        elif "q" not in flags:
            io.out("".join(line + "\n" for line in hits))
        return 0 if hits else 1
    return status


@_command("seq")
def _c_seq(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    nums = [a for a in argv[1:] if not (a.startswith("-") and not a[1:2].isdigit())]
    try:
        vals = [float(a) for a in nums]
    except ValueError:
        io.err(f"seq: invalid number '{next(a for a in nums if not re.fullmatch(r'-?[0-9.]+', a))}'\n")
        return 1
    first, inc, last = {1: (1.0, 1.0, vals[-1] if vals else 0.0), 2: (vals[0], 1.0, vals[-1]) if vals else (1, 1, 0),
                        3: tuple(vals[:3])}.get(len(vals), (1.0, 1.0, 0.0))
    out, x = [], first
    while inc and (x <= last if inc > 0 else x >= last) and len(out) < 100_000:
        out.append(str(int(x)) if x == int(x) else f"{x:g}")
        x += inc
    io.out("".join(v + "\n" for v in out))
    return (yield from _done(0))


@_command("touch", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "chmod", "chown")
def _c_files(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox's file utilities on the container's files, with their error messages (a missing
    directory, a read-only file system: :meth:`_Shell.create_error`); what they write gets the
    current virtual time as its mtime. ``ln -s`` makes a symbolic link, ``ln`` copies."""
    prog = argv[0].rsplit("/", 1)[-1]
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1)
    args = [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]
    run = sh.run
    fs, status = run.fs, 0
    if prog == "touch":
        for a in args:
            full = run.resolve(sh.path(a))
            error = None if run.is_dir(full) or full in fs else sh.create_error(full)
            if error is not None:
                io.err(f"touch: {a}: {error}\n")
                status = 1
                continue
            fs.setdefault(full, "")
            run.mtimes[full] = run.now
    elif prog == "mkdir":
        for a in args:
            full = sh.path(a)
            if "p" in flags and run.is_dir(full):
                continue
            error = "File exists" if full in fs or run.is_dir(full) else sh.create_error(full)
            if error == "No such file or directory" and "p" in flags and not full.startswith("/proc/"):
                error = "Read-only file system" if run.read_only(full) else None
            if error is not None:
                io.err(f"mkdir: can't create directory '{a}': {error}\n")
                status = 1
                continue
            made = [d for d in (full, *_parents(full)) if not run.is_dir(d)]
            run.dirs.update(made)
            run.mtimes.update(dict.fromkeys(made, run.now))
    elif prog in ("rm", "rmdir"):
        for a in args:
            full = sh.path(a)
            if full in run.links:
                del run.links[full]
                continue
            recursive = "r" in flags.lower()
            directory = full not in fs and run.is_dir(full)
            under = [k for k in fs if k.startswith(full.rstrip("/") + "/")] if recursive else []
            if full not in fs and not under and not directory:
                if "f" not in flags:
                    io.err(f"{prog}: can't remove '{a}': No such file or directory\n")
                    status = 1
                continue
            if directory and prog == "rm" and not recursive:
                io.err(f"rm: can't remove '{a}': Is a directory\n")
                status = 1
                continue
            if run.read_only(full):
                io.err(f"{prog}: can't remove '{a}': Read-only file system\n")
                status = 1
                continue
            for k in [full, *under]:
                fs.pop(k, None)
            if directory:
                run.remove_dir(full)
    elif prog in ("cp", "mv", "ln") and len(args) >= 2:
        dest = args[-1]
        for a in args[:-1]:
            into = sh.is_dir(dest)
            target = sh.path(dest + "/" + a.rsplit("/", 1)[-1]) if into else sh.path(dest)
            # the link as ln names it in its errors (busybox: concat_path_file(LINK|DIR, basename))
            shown = (dest if dest.endswith("/") else dest + "/") + a.rstrip("/").rsplit("/", 1)[-1] if into else dest
            if prog == "ln" and "s" in flags:
                text: str | None = a
            else:
                text = sh.read_file(a)
            if text is None:
                if prog == "ln":  # busybox ln: bb_simple_perror_msg(TARGET) when stat() fails
                    io.err(f"ln: {a}: No such file or directory\n")
                else:
                    io.err(f"{prog}: can't stat '{a}': No such file or directory\n")
                status = 1
                continue
            if prog == "ln" and (target in fs or target in run.links) and "f" not in flags:
                io.err(f"ln: {shown}: File exists\n")
                status = 1
                continue
            error = sh.create_error(target)
            if error is not None:
                if prog == "ln":  # link()/symlink() failed: bb_simple_perror_msg(LINK)
                    io.err(f"ln: {shown}: {error}\n")
                else:
                    verb = {"cp": "create", "mv": "rename"}[prog]
                    io.err(f"{prog}: can't {verb} '{target if prog != 'mv' else a}': {error}\n")
                status = 1
                continue
            if prog == "ln" and "s" in flags:
                fs.pop(target, None)
                run.links[target] = text
            else:
                run.links.pop(target, None)
                fs[target] = text
            run.mtimes[target] = run.mtimes.get(sh.path(a), run.started_at) if prog == "mv" else run.now
            if prog == "mv":
                fs.pop(sh.path(a), None)
    return (yield from _done(status))


#: Directories whose mode is not ``drwxr-xr-x`` (``ls -l``).
_DIR_MODES = {"/tmp": "drwxrwxrwt", "/root": "drwx------", "/proc": "dr-xr-xr-x", "/sys": "dr-xr-xr-x"}
#: Where executables live: their files are ``-rwxr-xr-x`` (so are ``*.sh`` scripts).
_BIN_DIRS = ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin")


def _group_name(image: str, gid: int) -> str:
    """``gid`` as ``ls -l`` shows it: its name in ``image``'s ``/etc/group`` (named as its user,
    but 65534, busybox's and Debian's ``nogroup``), else the number."""
    if gid == 65534:
        return "nobody" if _image_base(image) == "alpine" else "nogroup"
    return _user_name(image, gid)


def _ls_stat(run: Run, full: str) -> tuple[str, int, int, int, int, float, str | None]:
    """(mode, links, uid, gid, size, mtime, symbolic link's target or None) of the existing ``full``,
    as ``lstat`` on an overlay file system gives them: image files and the volumes' belong to
    root, what the container wrote to its user and group (as ``id`` has them); directories are
    4096 bytes (``/proc`` and ``/sys`` 0) with 2 links plus one per subdirectory."""
    mtime = run.mtimes.get(full, run.started_at)
    env = run.program.env
    uid, gid = 0, 0
    if full in run.mtimes and isinstance(env, ResolvedEnv):
        uid, gid = env.uid or 0, env.gid or 0
    target = run.links.get(full)
    if target is not None:
        return "lrwxrwxrwx", 1, uid, gid, len(target.encode()), mtime, target
    if full in run.fs:
        executable = full.startswith(tuple(d + "/" for d in _BIN_DIRS)) or full.endswith(".sh")
        return ("-rwxr-xr-x" if executable else "-rw-r--r--"), 1, uid, gid, len(run.fs[full].encode()), mtime, None
    subdirs = sum(run.is_dir(full.rstrip("/") + "/" + name) for name in run.children(full))
    size = 0 if full in ("/proc", "/sys") else 4096
    return _DIR_MODES.get(full, "drwxr-xr-x"), 2 + subdirs, uid, gid, size, mtime, None


def _ls_long(run: Run, name: str, full: str, numeric: bool) -> str:
    """One line of busybox ``ls -l`` (``display_single``): mode ``%-10s``, links ``%4lu``, user and
    group ``%-8.8s`` (numbers: ``%-8u``), size ``%9u``, then the mtime as ``ctime`` has it —
    ``Jan  1 00:00`` within six months, else ``Jan  1  2024`` — and the name (``-> target``)."""
    mode, nlink, uid, gid, size, mtime, target = _ls_stat(run, full)
    if numeric:
        owner = f"{uid:<8} {gid:<8}"
    else:
        image = run.program.image
        owner = f"{_user_name(image, uid)[:8]:<8} {_group_name(image, gid)[:8]:<8}"
    when, now = run.wall_clock(mtime), run.wall_clock(run.now)
    age = (now - when).total_seconds()
    stamp = f"{when:%H:%M}" if -15 * 60 < age < 3600 * 24 * 365 / 2 else f"{when.year:>5}"
    link = f" -> {target}" if target is not None else ""
    return f"{mode:<10} {nlink:>4} {owner} {size:>9} {when:%b} {when.day:>2} {stamp} {name}{link}\n"


def _exists(run: Run, full: str) -> bool:
    return full in run.fs or full in run.links or run.is_dir(full)


@_command("ls")
def _c_ls(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``ls``: one name a line (its output is not a terminal); ``-l`` (``-n``: numeric
    owners) the long format with a ``total`` of 1K blocks per directory; ``-a`` adds ``.``, ``..``
    and the hidden names, ``-A`` the hidden names; ``-d`` lists directories themselves; ``-1`` is
    the default. Files named on the command line come first, then each directory (``DIR:`` before
    it when there are several), as ``ls_main`` orders them."""
    opts, names = "", []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--":
            names += args
            break
        if a.startswith("-") and len(a) > 1:
            opts += a[1:]
        else:
            names.append(a)
    run, numeric = sh.run, "n" in opts
    long = "l" in opts or numeric
    follow = "L" in opts  # -L: what symbolic links point to, not the links

    def line(name: str, full: str) -> str:
        if not long:
            return name + "\n"
        return _ls_long(run, name, run.resolve(full) if follow else full, numeric)

    status, files, dirs = 0, [], []
    for a in names or ["."]:
        full = sh.path(a)
        seen = run.resolve(full) if follow else full
        if seen not in run.fs and seen not in run.links and not run.is_dir(seen):
            io.err(f"ls: {a}: No such file or directory\n")
            status = 1
            continue
        is_dir = run.is_dir(run.resolve(full) if not long or follow else full)
        (dirs if is_dir and "d" not in opts else files).append((a, full))
    out = [line(a, full) for a, full in sorted(files)]
    for a, full in sorted(dirs):
        if len(names) > 1:
            out.append(("\n" if out else "") + f"{a}:\n")
        full = run.resolve(full)
        entries = sorted(n for n in run.children(full) if not n.startswith(".") or "a" in opts or "A" in opts)
        if "a" in opts:
            entries = [".", "..", *entries]
        paths = [(n, posixpath.normpath(posixpath.join(full, n))) for n in entries]
        if follow and long:  # stat() of a dangling link fails
            dangling = [(n, p) for n, p in paths if p in run.links and not _exists(run, run.resolve(p))]
            for n, p in dangling:
                io.err(f"ls: {a.rstrip('/')}/{n}: No such file or directory\n")
                status = 1
            paths = [e for e in paths if e not in dangling]
        if long:
            blocks = sum(-(-_ls_stat(run, run.resolve(p) if follow else p)[4] // 4096) * 8
                         for n, p in paths if follow or p not in run.links)
            out.append(f"total {(blocks + 1) >> 1}\n")
        out += [line(n, p) for n, p in paths]
    io.out("".join(out))
    return (yield from _done(status))


@_command("test", "[")
def _c_test(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            io.err("[: missing ]\n")
            return 2
        args = args[:-1]
    return (yield from _done(sh.test(args, double=False)))


@_command("env", "printenv")
def _c_env(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    prog = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if prog == "env":
        assigns = []
        while args and (args[0].startswith("-") or "=" in args[0]):
            a = args.pop(0)
            if "=" in a:
                assigns.append(a.split("=", 1))
        if args:
            sub = sh.child()
            sub.vars.update(dict(assigns))
            return (yield from sub.exec_argv(args, io, tail=True))  # env execs the command
    penv = sh.run.program.env
    env = {k: sh.vars[k] for k in penv if isinstance(sh.vars.get(k), str)}
    env.update({k: v for k, v in sh.vars.items() if k in sh.run.exported and isinstance(v, str)})
    if isinstance(penv, ResolvedEnv) and penv.home_added and "HOME" in env:
        env["HOME"] = env.pop("HOME")  # runc adds it last, after an exec's own TERM
    if prog == "printenv" and args:
        missing = [a for a in args if a not in env]
        io.out("".join(env[a] + "\n" for a in args if a in env))
        return 1 if missing else 0
    io.out("".join(f"{k}={v}\n" for k, v in env.items()))
    return (yield from _done(0))


#: Utilities the model has that only some images have: busybox's applets (busybox and Alpine based
#: images); Debian-based images lack them (``ps`` comes with procps, which ``*-slim`` images omit).
_BUSYBOX_APPLETS = frozenset({"ps", "top"})


def _installed(sh: _Shell, name: str) -> bool:
    """Whether the container's image has the utility ``name`` (a busybox applet needs busybox)."""
    if name not in _BUSYBOX_APPLETS:
        return True
    fs = sh.run.fs
    return any(p in fs for p in ("/bin/busybox", f"/bin/{name}", f"/usr/bin/{name}"))


def _main_process(program: Program) -> list[str]:
    """The argv of the container's PID 1: its command line, after the official images'
    ``docker-entrypoint.sh`` exec'd the main program (:func:`_p_entrypoint`)."""
    argv = list(program.argv)
    if argv and argv[0].rsplit("/", 1)[-1] in ("docker-entrypoint.sh", "docker-php-entrypoint"):
        args = argv[1:]
        main = program.image_main
        if main and (not args or args[0].startswith("-") or args[0].endswith(".conf")):
            args = [main, *args]
        if args:
            return args
    return argv


def _main_argv(run: Run) -> list[str]:
    """The argv of the container's first process now: what it ``exec``'d last (``sh -c '…; exec
    nginx'``, the last command of ``sh -c``), else :func:`_main_process`."""
    return list(run.main_argv) if run.main_argv is not None else _main_process(run.program)


def _uid(run: Run) -> int:
    """The user the container's processes run as."""
    env = run.program.env
    return env.uid if isinstance(env, ResolvedEnv) and env.uid is not None else 0


def _processes(run: Run, *, children: bool = False) -> list[tuple[int, int, str]]:
    """(PID, uid, command line) of the container's processes the model knows, numbered from its
    PID 1: PID 1 (nginx as its master with its workers, redis-server under the name it gives
    itself and as the ``redis`` user the entrypoint switches to); with ``children`` the
    processes its shells started too (:attr:`Run.procs`, from PID 1 + :data:`_EXEC_GAP`)."""
    program = run.program
    uid = _uid(run) if isinstance(program.env, ResolvedEnv) and program.env.uid is not None else None
    argv = _main_argv(run)
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    user = 0 if uid is None else uid
    rows: list[tuple[int, int, str]]
    if name in ("nginx", "nginx-debug") and run.serving:
        app = _app_user(program.image, _image_base(program.image))
        worker = app[1] if uid is None and app is not None else user
        rows = [(1, user, "nginx: master process " + " ".join(argv)),
                *((run.nginx_worker + i, worker, "nginx: worker process") for i in range(_ONLINE_CPUS))]
    elif name == "redis-server":
        app = _app_user(program.image, _image_base(program.image))
        if uid is None and app is not None and list(program.argv) != argv:  # the entrypoint dropped root
            user = app[1]
        port = argv[argv.index("--port") + 1] if "--port" in argv[:-1] else "6379"
        rows = [(1, user, f"redis-server *:{port}")]
    else:
        rows = [(1, user, " ".join(argv))]
    if children:
        rows += [(p.pid if p.pid is not None else 1 + _EXEC_GAP + p.ordinal, p.uid, p.cmd) for p in run.procs]
    return rows


# ---- PID namespaces: what ps sees

_Row = tuple[int, int, str]  # (PID, uid, command line)
#: Whose a process is: (key (pod uid, container name), pod, container spec — None: the run's own
#: container —, when the container started).
_Owner = tuple[tuple[str, str], Any, Any, float]
_Entry = tuple[int, int, str, Union[_Owner, None]]  # (PID, uid, command line, owner)

#: The PID of a pod's first container in a shared process namespace (``shareProcessNamespace``):
#: ``/pause`` is PID 1 and the runtime's set-up takes the next ones (upstream's "Share Process
#: Namespace between Containers in a Pod" shows nginx's master as PID 8, the next container's
#: ``sh`` right after nginx's worker, and ``ps`` typed into it 6 PIDs after the ``sh``).
_SHARED_FIRST_PID = 8
#: The PIDs a process runc starts takes (a container's first process, an exec'd one): runc's
#: ``init`` becomes the process, and its Go runtime's threads take the next PIDs before it execs
#: — ``ps`` exec'd into ``sleep 3600`` is PID 7, ``ps`` typed into the docs' ``sh`` (PID 15) 21.
_EXEC_GAP = 6
#: The pause image's user (``USER 65535:65535``).
_PAUSE_UID = 65535
#: The node's own processes, as a ``hostPID`` container sees them: a kubeadm node with systemd
#: and containerd (the pods' processes follow, from :data:`_HOST_PODS_FIRST_PID`).
_NODE_PROCESSES: tuple[_Row, ...] = (
    (1, 0, "/sbin/init"),
    (2, 0, "[kthreadd]"),
    (96, 0, "/lib/systemd/systemd-journald"),
    (131, 0, "/lib/systemd/systemd-udevd"),
    (187, 0, "/usr/bin/containerd"),
    (402, 0, "/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf "
              "--kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml "
              "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"),
)
_HOST_PODS_FIRST_PID = 1000


def _running_containers(run: Run, pod: Mapping[str, Any], own: bool) -> list[tuple[float, Mapping[str, Any]]]:
    """(start, spec) of ``pod``'s containers running at the run's now, in the order they started
    (``status.*ContainerStatuses[].state.running.startedAt``, then the spec's order). ``own``: the
    pod is the run's, whose container counts from its own start."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    epoch = run.wall_clock(0.0)
    started: dict[str, float] = {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for st in status.get(key) or []:
            t = parse_timestamp(((st.get("state") or {}).get("running") or {}).get("startedAt"))
            if t is not None:
                started[str(st.get("name"))] = (t - epoch).total_seconds()
    if own:
        started[run.program.container_name] = run.started_at
    specs = [c for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or []]
    order = sorted((started[c["name"]], i) for i, c in enumerate(specs)
                   if c.get("name") in started and started[c["name"]] <= run.now)
    return [(t, specs[i]) for t, i in order]


def _rebuilt_env(run: Run, pod: Mapping[str, Any], container: Mapping[str, Any]) -> Mapping[str, str]:
    """The environment of another container of the node, made as the kubelet made it (``fieldRef``
    such as kube-proxy's ``NODE_NAME``, ConfigMap keys, service links: its ``$(VAR)`` in the
    command line) when the run sees the API server, else from its spec alone."""
    api = getattr(run.network, "api", None)
    if api is not None:
        from ..api import errors
        from .envvars import APISource, EnvError
        from .inputs import container_environment

        st = pod.get("status") or {}

        def ips(many: str, one: str) -> list[str]:
            return [str(a["ip"]) for a in st.get(many) or [] if a.get("ip")] or ([str(st[one])] if st.get(one) else [])

        try:
            return container_environment(pod, container, APISource(api), pod_ips=ips("podIPs", "podIP"),
                                         host_ips=ips("hostIPs", "hostIP"))
        except (EnvError, errors.StatusError):
            pass
    return process_env(container, pod=pod)


def _rebuilt_run(run: Run, pod: Mapping[str, Any], container: Mapping[str, Any], start: float) -> Run | None:
    """Another container of ``pod``, started at ``start``, as a run at the run's now: a rebuild of
    its program (None when it has ended or cannot run)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        other = build_program(container, annotations, _rebuilt_env(run, pod, container)).start(
            start, wall_clock=run.wall_clock)
    except ValueError:
        return None
    other.advance(run.now)
    return None if other.exited is not None else other


def _add_containers(run: Run, pod: Mapping[str, Any], members: list[tuple[float, Mapping[str, Any]]],
                    rows: list[_Row], pid: int, owners: dict[int, _Owner]) -> tuple[int, int | None]:
    """Number the processes of ``members`` ((start, spec), in order) into ``rows`` (and whose they
    are into ``owners``): the first container's PID 1 becomes ``pid``, each later one's the PID
    after the last so far. Returns the next free PID and where the run's own container starts
    (None: not among them)."""
    mine = None
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    for start, c in members:
        own = pod is getattr(run.network, "pod", None) and c.get("name") == run.program.container_name
        if own:
            mine = pid
            procs = _processes(run)
        else:
            other = _rebuilt_run(run, pod, c, start)
            procs = [] if other is None else _processes(other, children=True)
        shifted = [(p + pid - 1, u, cmd) for p, u, cmd in procs]
        owner: _Owner = ((uid, str(c.get("name") or "")), pod, None if own else c, start)
        owners.update(dict.fromkeys((p for p, _, _ in shifted), owner))
        rows += shifted
        pid = max((p for p, _, _ in shifted), default=pid - 1) + 1
    return pid, mine


def _pid_namespace(run: Run) -> tuple[list[_Row], int, dict[int, _Owner]]:
    """The processes of the container's PID namespace, by PID, the PID of its own first process and
    whose each is (the containers' processes; not ``/pause``'s or the node's). Not the processes
    the run's own shells started (:func:`_process_table` adds them).

    The pod comes from the run's :attr:`Run.network` (``pod``, and ``api`` for the node's other
    pods); without one the container is alone (PID 1). As on a containerd node:

    * ``shareProcessNamespace``: one namespace for the pod — ``/pause`` (PID 1), then every running
      container, init, regular and ephemeral, in the order they started;
    * else each container has its own, which an ephemeral container with ``targetContainerName``
      joins (``kubectl debug --target``): the target's processes (its PID 1), then the debug
      containers that target it;
    * ``hostPID``: the node's — its daemons (:data:`_NODE_PROCESSES`), then each pod of the node,
      in the order they started: its ``containerd-shim``, ``/pause`` and containers.
    """
    net = run.network
    pod = getattr(net, "pod", None)
    if not isinstance(pod, Mapping):
        rows = _processes(run)
        owner: _Owner = (("", run.program.container_name), None, None, run.started_at)
        return rows, 1, dict.fromkeys((p for p, _, _ in rows), owner)
    spec = pod.get("spec") or {}
    if spec.get("hostPID"):
        return _host_namespace(run, pod, getattr(net, "api", None))
    members = _running_containers(run, pod, own=True)
    rows: list[_Row] = []
    owners: dict[int, _Owner] = {}
    pid = 1
    if spec.get("shareProcessNamespace"):
        rows, pid = [(1, _PAUSE_UID, "/pause")], _SHARED_FIRST_PID
    else:
        targets = {c.get("name"): c.get("targetContainerName") for c in spec.get("ephemeralContainers") or []}
        target = targets.get(run.program.container_name) or run.program.container_name
        members = [(t, c) for t, c in members if c.get("name") == target or targets.get(c.get("name")) == target]
    _, mine = _add_containers(run, pod, members, rows, pid, owners)
    return sorted(rows), mine or 1, owners


def _host_namespace(run: Run, pod: Mapping[str, Any], api: Any) -> tuple[list[_Row], int, dict[int, _Owner]]:
    """:func:`_pid_namespace` of a ``hostPID`` pod's container: the node's processes."""
    from .runtime import container_id

    node = (pod.get("spec") or {}).get("nodeName") or ""
    uid = (pod.get("metadata") or {}).get("uid")
    pods = api.list("pods", field_selector=f"spec.nodeName={node}")["items"] if api is not None and node else []
    pods = [pod, *(p for p in pods if (p.get("metadata") or {}).get("uid") != uid)]
    running = []
    for p in pods:
        members = _running_containers(run, p, own=p is pod)
        if members:
            meta = p.get("metadata") or {}
            running.append(((members[0][0], meta.get("namespace") or "", meta.get("name") or ""), p, members))
    rows, pid, mine = list(_NODE_PROCESSES), _HOST_PODS_FIRST_PID, None
    owners: dict[int, _Owner] = {}
    for _, p, members in sorted(running, key=lambda e: e[0]):
        sandbox = container_id(node, (p.get("metadata") or {}).get("uid") or "", "POD", 0)
        rows += [(pid, 0, f"/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id {sandbox} "
                          "-address /run/containerd/containerd.sock"),
                 (pid + 1, _PAUSE_UID, "/pause")]
        pid, first = _add_containers(run, p, members, rows, pid + 2, owners)
        mine = first if first is not None else mine
    return sorted(rows), mine or 1, owners


def _first_pid(run: Run) -> int:
    """The PID of the container's first process in its namespace (``$$`` of its shell)."""
    if run.first_pid is None:
        run.first_pid = _pid_namespace(run)[1]
    return run.first_pid


def _process_table(run: Run) -> list[_Entry]:
    """Every process of the container's PID namespace, by PID, with whose it is: the namespace's
    (:func:`_pid_namespace`) and those the run's shells started (:attr:`Run.procs`), numbered now
    if they were not yet: the first took the PID after the namespace's last, and at least
    :data:`_EXEC_GAP` after the container's first process."""
    rows, first, owners = _pid_namespace(run)
    run.first_pid = first
    top = max((p for p, _, _ in rows), default=0)
    run.number_pids(max(first + _EXEC_GAP, top + 1))
    if run.pid_next is not None and run.pid_next <= top:  # containers started since
        run.pid_next = top + 1
    mine = owners.get(first)
    by_key = {o[0]: o for o in owners.values()}
    out: list[_Entry] = [(p, u, cmd, owners.get(p)) for p, u, cmd in rows if p not in run.gone_pids]
    out += [(p.pid or 0, p.uid, p.cmd, mine if p.owner is None else by_key.get(p.owner, mine)) for p in run.procs]
    return sorted(out, key=lambda e: e[0])


@_command("ps")
def _c_ps(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``ps``: PID, user, CPU time and command line of the processes of the container's PID
    namespace (:func:`_process_table`: its own — PID 1, nginx's workers, what its shells started
    —, a shared pod's, a debug target's or the node's), ``ps`` itself among them; options are
    accepted and ignored. Users are named as the container's image names them (nginx's ``101``
    in a busybox container)."""
    table = _process_table(sh.run)
    image = sh.run.program.image
    out = [f"{'PID':<5} {'USER':<8} {'TIME':<5} COMMAND\n"]
    out += [f"{p:>5} {_user_name(image, u):<8} {'0:00':>5} {cmd}\n" for p, u, cmd, _ in table]
    io.out("".join(out))
    return (yield from _done(0))


# ---- top


#: The node's memory as ``/proc/meminfo`` has it (kB: total, free, shared, buffers, cached): the
#: kernel's view is not namespaced, so every container of a node shows the same.
_MEMINFO = (8144576, 5613908, 3796, 137820, 1612564)
#: The virtual size (kB) of the programs ``top`` shows, by program: busybox's applets (a static
#: binary), Debian's, the servers' (master and worker), the node's daemons.
_VSZ = {"busybox": 1328, "/pause": 1020, "sh": 2576, "bash": 4380, "sleep": 2484, "nginx: master": 11476,
        "nginx: worker": 11944, "nginx: master alpine": 8084, "nginx: worker alpine": 8552,
        "redis-server": 42416, "/sbin/init": 22188, "[kthreadd]": 0, "/lib/systemd/systemd-journald": 33236,
        "/lib/systemd/systemd-udevd": 22016, "/usr/bin/containerd": 1919432, "/usr/bin/kubelet": 2012340,
        "/usr/bin/containerd-shim-runc-v2": 1238712}


def _ulltoa5(value: int, scale: str = " mgtpezy") -> str:
    """busybox's ``smart_ulltoa5``: ``value`` (kB) in five characters — ``12345``, ``1874m``, ``92.1m``."""
    idx = 0
    if value > 99999:
        value *= 10
        while True:
            value //= 1024
            idx += 1
            if value < 100000:
                break
    u, v = divmod(value, 10)
    if not idx:
        return f"{value:>5}"
    if u >= 100:
        return f"{u // 10:>3}{u % 10}{scale[idx]}"
    return f"{u:>2}.{v}{scale[idx]}"


def _vsz(entry: _Entry, image: str) -> int:
    """A process's virtual size (kB) for ``top``: by its program (see :data:`_VSZ`), busybox's for
    its applets, else a plausible size from its command line's hash."""
    cmd = entry[2]
    owner = entry[3]
    img = str((owner[2] or {}).get("image") or "") if owner is not None and owner[2] is not None else image
    alpine = _image_base(img) == "alpine" if img else False
    if cmd.startswith(("nginx: master", "nginx: worker")):
        return _VSZ[cmd[:13] + (" alpine" if alpine else "")]
    prog = cmd.split(" ", 1)[0]
    if prog in _VSZ and prog.startswith(("/", "[")):
        return _VSZ[prog]
    name = prog.rsplit("/", 1)[-1]
    tree = image_tree(img) if img else _GENERIC_TREE
    if "/bin/busybox" in tree.files and (name in _COMMANDS or name in ("sh", "ash")):
        return _VSZ["busybox"]
    if name in _VSZ:
        return _VSZ[name]
    return 4096 + _digest_int(cmd) % 60000


def _ppid(run: Run, entry: _Entry, table: list[_Entry]) -> int:
    """The parent's PID as the namespace sees it: a forked process's shell, an nginx worker's
    master, the node's daemons' init, a pod's ``/pause`` its shim; 0 for a process whose parent is
    outside the namespace (a container's first process, an exec'd one)."""
    pid, _, cmd, owner = entry
    proc = next((p for p in run.procs if p.pid == pid), None)
    if cmd == _WORKER:
        key = owner[0] if owner is not None else None
        return next((e[0] for e in table if e[3] is not None and e[3][0] == key
                     and e[2].startswith("nginx: master")), 0)
    if proc is not None:
        if proc.parent is False:
            return 0
        if proc.parent is None:
            return _first_pid(run)
        if proc.parent not in run.procs:  # an orphan: the namespace's init adopted it
            return 1
        return proc.parent.pid or 0
    if owner is None and pid > 2 and any(e[0] == 1 and e[2] == "/sbin/init" for e in table):
        return pid - 1 if cmd == "/pause" else 1  # the node's (hostPID)
    return 0


def _top_screen(sh: _Shell, batch: bool, width: int, lines: int) -> str:
    """One screen of busybox ``top``: memory, CPU and load average, then the namespace's processes
    (:func:`_process_table`) by CPU, then size; batch mode without the terminal's escapes."""
    run = sh.run
    table = _process_table(run)
    me = sh.proc.pid if sh.proc is not None else _first_pid(run)
    total, free, shared, buffers, cached = _MEMINFO
    usr = min(100, round(run.cpu / (_ONLINE_CPUS * 10)))
    load = run.cpu / 1000
    head = [f"Mem: {total - free}K used, {free}K free, {shared}K shrd, {buffers}K buff, {cached}K cached",
            f"CPU:{usr:4d}% usr   0% sys   0% nic{100 - usr:4d}% idle   0% io   0% irq   0% sirq",
            f"Load average: {load:.2f} {load:.2f} {load:.2f} 1/{180 + len(table)} {(run.pid_next or 1) - 1}"]
    image = run.program.image
    sized = [(e, _vsz(e, image)) for e in table]
    sized.sort(key=lambda ev: (-ev[1], ev[0][0]))
    rows = []
    for entry, vsz in sized:
        pid, uid, cmd, _ = entry
        state = "R  " if pid == me else ("SW " if vsz == 0 else "S  ")
        pmem = (vsz * 200 + total) // (2 * total)
        rows.append(f"{pid:>5} {_ppid(run, entry, table):>5} {_user_name(image, uid)[:8]:<8} {state}  "
                    f"{_ulltoa5(vsz)}{pmem:4d}%{pid % _ONLINE_CPUS:4d}{0:4d}% {cmd}")
    title = "  PID  PPID USER     STAT   VSZ %VSZ CPU %CPU COMMAND"
    if batch:
        return "".join(line + "\n" for line in head) + title + "".join("\n" + r for r in rows) + "\n"
    rows = rows[:max(0, lines - len(head) - 1)]
    return ("\x1b[H\x1b[J" + "".join(line[:width - 1] + "\n" for line in head) + f"\x1b[7m{title[:width]}\x1b[m"
            + "".join("\n" + r[:width] for r in rows) + "\r")


@_command("top")
def _c_top(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``top``: ``-b`` (batch: no terminal escapes, every process), ``-n COUNT`` screens
    (default: until stopped), ``-d SECONDS`` between them (default 5). The first screen comes
    after a tenth of a second (top samples the CPU times twice). PPIDs and %CPU are not modelled
    (0)."""
    batch, count, delay = False, None, 5.0
    args = argv[1:]
    while args:
        a = args.pop(0)
        if not a.startswith("-") or a == "-":
            continue
        i = 1
        while i < len(a):
            c = a[i]
            if c in "nd":
                value = a[i + 1:] or (args.pop(0) if args else "")
                try:
                    if c == "n":
                        count = int(value)
                    else:
                        delay = float(value)
                except ValueError:
                    io.err(f"top: invalid number '{value}'\n")
                    return 1
                break
            if c == "b":
                batch = True
            i += 1
    yield sh.run.now + 0.1
    while True:
        io.out(_top_screen(sh, batch, 80, 24))
        if count is not None:
            count -= 1
            if count <= 0:
                return 0
        yield sh.run.now + delay


# ---- readlink


def _canonical(run: Run, path: str, depth: int = 0) -> str | None:
    """``realpath`` of the absolute ``path`` (busybox ``readlink -f``): symbolic links followed in
    every component; all but the last must exist (None otherwise, or for a loop)."""
    if depth > 40:
        return None
    parts = [p for p in path.split("/") if p and p != "."]
    cur = "/"
    for i, part in enumerate(parts):
        if part == "..":
            cur = posixpath.dirname(cur) or "/"
            continue
        nxt = posixpath.join(cur, part)
        target = run.links.get(nxt)
        if target is not None:
            nxt = _canonical(run, target if target.startswith("/") else posixpath.join(cur, target), depth + 1)
            if nxt is None:
                return None
        if i < len(parts) - 1 and not run.is_dir(nxt):
            return None
        cur = nxt
    return cur


@_command("readlink")
def _c_readlink(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``readlink [-fnv] FILE``: a symbolic link's target (nothing and status 1 for
    anything else); ``-f`` the canonical path; ``-n`` no newline. ``/proc/self`` is the reader's
    PID, ``/proc/PID/root`` and ``/proc/PID/cwd`` of a process of the namespace ``/``."""
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1)
    names = [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]
    if len(names) != 1:
        io.err("BusyBox v1.37.0 (2024-09-26 21:31:42 UTC) multi-call binary.\n\n"
               "Usage: readlink [-fnv] FILE\n\nDisplay the value of a symlink\n\n"
               "\t-f\tCanonicalize by following all symlinks\n\t-n\tDon't add newline\n\t-v\tVerbose\n")
        return 1
    run = sh.run
    full = sh.path(names[0])
    value: str | None = None
    m = re.fullmatch(r"/proc/(self|\d+)(?:/(root|cwd))?", full)
    if m is not None:
        pid = sh.pid_of(sh.proc) if m.group(1) == "self" else int(m.group(1))
        if any(e[0] == pid for e in _process_table(run)):
            value = "/" if m.group(2) else (str(pid) if m.group(1) == "self" else None)  # /proc/8 is no link
    elif "f" in flags:
        value = _canonical(run, full)
    else:
        value = run.links.get(full)
    if value is None:
        if "v" in flags:
            io.err(f"readlink: {names[0]}: {'No such file or directory' if 'f' in flags else 'Invalid argument'}\n")
        return 1
    io.out(value + ("" if "n" in flags else "\n"))
    return (yield from _done(0))


@_command("export", "readonly", "local", "declare", "typeset")
def _c_export(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        name, eq, value = a.partition("=")
        if eq:
            sh.vars[name] = value
        sh.run.exported.add(name)
    return (yield from _done(0))


@_command("unset")
def _c_unset(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    for a in argv[1:]:
        sh.vars.pop(a, None)
    return (yield from _done(0))


@_command("set")
def _c_set(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--":
            sh.params = args
            break
        if a in ("-o", "+o") and args:
            if args.pop(0) == "errexit":
                sh.errexit = a == "-o"
        elif a.startswith("-") and "e" in a:
            sh.errexit = True
        elif a.startswith("+") and "e" in a:
            sh.errexit = False
        elif not a.startswith(("-", "+")):
            sh.params = [a, *args]
            break
    return (yield from _done(0))


@_command("shift")
def _c_shift(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    if n > len(sh.params):
        return 1
    sh.params = sh.params[n:]
    return (yield from _done(0))


@_command("cd")
def _c_cd(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    target = argv[1] if len(argv) > 1 else str(sh.vars.get("HOME") or "/root")
    sh.run.dirs.add(sh.path(target))
    sh.vars["PWD"] = sh.logical(target)
    return (yield from _done(0))


@_command("pwd")
def _c_pwd(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    io.out(sh.logical(".") + "\n")
    return (yield from _done(0))


@_command("read")
def _c_read(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    names = [a for a in argv[1:] if not a.startswith("-")] or ["REPLY"]
    line = io.inp.read_line()
    if line is None:  # open stdin that never sends a line
        yield _INF
    if line is False:
        return 1
    parts = str(line).split(None, len(names) - 1)
    for i, name in enumerate(names):
        sh.vars[name] = parts[i] if i < len(parts) else ""
    return 0


@_command("eval", ".", "source")
def _c_eval(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    if argv[0] == "eval":
        text = " ".join(argv[1:])
    else:
        text = sh.read_file(argv[1]) if len(argv) > 1 else None
        if text is None:
            io.err(f"sh: {argv[0]}: can't open '{argv[1] if len(argv) > 1 else ''}'\n")
            return 1
    try:
        tree = parse_shell(text)
    except ValueError as err:
        io.err(f"sh: {err}\n")
        return 2
    return (yield from sh.run_node(tree, io))


@_command("trap", "wait", "ulimit", "umask", "sync", "hash", "alias", "unalias", "stty", "renice",
          "ionice", "nice", "sysctl", "mount", "umount", "chgrp", "setsid", "getopts", "shopt")
def _c_noop(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    return (yield from _done(0))


#: Where busybox's applets are in Alpine (``/bin``; the others are in ``/usr/bin``, ``/sbin``, …);
#: the busybox image has every applet in ``/bin``, Debian's utilities are in ``/usr/bin``.
_ALPINE_BIN = frozenset(
    "arch ash base64 bbconfig busybox cat chattr chgrp chmod chown cp date dd df dmesg dnsdomainname "
    "dumpkmap echo egrep false fatattr fdflush fgrep fsync getopt grep gunzip gzip hostname ionice iostat "
    "ipcalc kbd_mode kill link linux32 linux64 ln login ls lsattr lzop makemime mkdir mknod mktemp more "
    "mount mountpoint mpstat mv netstat nice pidof ping ping6 pipe_progress printenv ps pwd reformime rev "
    "rm rmdir run-parts sed setpriv setserial sh sleep stat stty su sync tar touch true umount uname "
    "usleep watch zcat".split())


def _command_path(sh: _Shell, name: str) -> str | None:
    """Where ``$PATH`` finds the program ``name``: a file of the container, else where the image has
    a utility the model knows (:data:`_ALPINE_BIN`), else None."""
    for d in str(sh.vars.get("PATH") or DEFAULT_PATH).split(":"):
        if d and sh.read_file(f"{d.rstrip('/')}/{name}") is not None:
            return f"{d.rstrip('/')}/{name}"
    if name not in _COMMANDS or name in _SHELL_BUILTINS or not _installed(sh, name):
        return None
    base = _image_base(sh.run.program.image)
    if base == "alpine":
        return f"/bin/{name}" if name in _ALPINE_BIN else f"/usr/bin/{name}"
    if base == "busybox" or sh.run.tree is _GENERIC_TREE:
        return f"/bin/{name}"
    return f"/usr/bin/{name}"


@_command("type")
def _c_type(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """ash's ``type``: ``kill is a shell builtin``, ``exit is a special shell builtin``, ``ps is
    /bin/ps``, ``foo: not found`` (status 127), on stdout."""
    status = 0
    for name in argv[1:]:
        if name in _SPECIAL_BUILTINS:
            io.out(f"{name} is a special shell builtin\n")
        elif name in _SHELL_BUILTINS and (name not in ("declare", "typeset", "shopt", "builtin")
                                          or sh.arg0.rsplit("/", 1)[-1] == "bash"):
            io.out(f"{name} is a shell builtin\n")
        elif "/" in name:
            if sh.read_file(name) is None:
                io.out(f"{name}: not found\n")
                status = 127
            else:
                io.out(f"{name} is {name}\n")
        elif (where := _command_path(sh, name)) is not None:
            io.out(f"{name} is {where}\n")
        else:
            io.out(f"{name}: not found\n")
            status = 127
    return (yield from _done(status))


#: Linux's signal names, by number (busybox's ``kill -l``).
_SIGNALS = ("", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE",
            "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
            "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS")
#: Signals whose default action does not end a process (ignore, stop, continue).
_HARMLESS_SIGNALS = frozenset({0, 17, 18, 19, 20, 21, 22, 23, 28})
_HUP = 1
_WORKER = "nginx: worker process"


def _signal_number(text: str) -> int | None:
    """busybox's ``get_signum``: a number below 65, or a name with or without ``SIG``, any case."""
    if text.isdigit():
        return int(text) if int(text) < 65 else None
    name = text.upper()
    name = name[3:] if name.startswith("SIG") else name
    aliases = {"IOT": 6, "CLD": 17, "POLL": 29}
    if name in aliases:
        return aliases[name]
    return _SIGNALS.index(name) if name in _SIGNALS[1:] else None


@_command("kill")
def _c_kill(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """ash's ``kill`` builtin (busybox's ``kill_main``): ``kill [-SIG | -s SIG] PID…``, ``kill -l
    [SIG…]``. A PID of the container's namespace (:func:`_process_table`) gets the signal; ``-0``
    only checks it exists; errors as ash prints them (``sh: can't kill pid 99: No such process``),
    the status is the number of failures. What the signal does: nginx's master reloads on ``HUP``
    (new workers, new PIDs), a worker that dies is replaced by its master, a background job or a
    process of the shell's ends (``kill $$``: the shell ends, 128 + the signal); a signal to a
    container's first process changes nothing (PID 1 ignores what it has no handler for)."""
    args = argv[1:]
    signo = 15
    if args and args[0] == "-l":
        if len(args) == 1:
            io.out("".join(f"{n:2d}) {name}\n" for n, name in enumerate(_SIGNALS) if name))
            return 0
        for a in args[1:]:
            n = _signal_number(a) if not a.isdigit() else int(a) & 0x7F
            if n is None or (a.isdigit() and not 0 < n < len(_SIGNALS)):
                io.err(f"sh: unknown signal '{a}'\n")
                return 1
            io.out(f"{_SIGNALS[n]}\n" if a.isdigit() else f"{n}\n")
        return 0
    if args and args[0].startswith("-") and len(args[0]) > 1 and args[0] != "--":
        spec = args.pop(0)[1:]
        if spec == "s":
            spec = args.pop(0) if args else ""
        n = _signal_number(spec)
        if n is None:
            io.err(f"sh: bad signal name '{spec}'\n")
            return 1
        signo = n
    if args and args[0] == "--":
        args.pop(0)
    if not args:
        io.err("sh: you need to specify whom to kill\n")
        return 1
    run = sh.run
    table = _process_table(run)
    by_pid = {e[0]: e for e in table}
    me = _uid(run)
    errors = 0
    for a in args:
        try:
            pid = int(a, 10)
        except ValueError:
            io.err(f"sh: invalid number '{a}'\n")
            errors += 1
            continue
        entry = by_pid.get(pid)
        if entry is None:
            io.err(f"sh: can't kill pid {pid}: No such process\n")
            errors += 1
            continue
        if me != 0 and entry[1] != me:
            io.err(f"sh: can't kill pid {pid}: Operation not permitted\n")
            errors += 1
            continue
        if signo:
            _deliver(sh, entry, signo, table)
    return (yield from _done(errors))


def _deliver(sh: _Shell, entry: _Entry, signo: int, table: list[_Entry]) -> None:
    """What ``signo`` sent to the process ``entry`` does (see :func:`_c_kill`)."""
    run = sh.run
    pid, uid, cmd, owner = entry
    proc = next((p for p in run.procs if p.pid == pid), None)
    deadly = signo not in _HARMLESS_SIGNALS
    if cmd.startswith("nginx: master process") and owner is not None and signo == _HUP:
        # nginx re-reads its configuration: new workers, the old ones finish and exit
        workers = [e for e in table if e[3] is not None and e[3][0] == owner[0] and e[2] == _WORKER]
        for w in workers:
            _ended(run, w[0])
        for w in workers:
            run.fork(_WORKER, w[1], owner=owner[0])
        return
    if cmd == _WORKER and owner is not None and deadly:  # the master starts a new worker
        _ended(run, pid)
        run.fork(_WORKER, uid, owner=owner[0])
        return
    if proc is None or not deadly:
        return
    if proc is sh.root_proc or proc is sh.proc:  # the shell itself (kill $$)
        if sh.session and signo in (2, 3, 15):  # an interactive shell ignores these
            return
        run.reap(proc)
        raise _Exit(128 + signo)
    if proc.job is not None:
        try:
            run.stop_job(proc)
        except ValueError:  # the job is the one running this kill
            run.reap(proc)
        return
    run.reap(proc)


def _ended(run: Run, pid: int) -> None:
    """The process ``pid`` of the namespace has ended."""
    for p in run.procs:
        if p.pid == pid:
            run.reap(p)
            return
    run.gone_pids.add(pid)


@_command("killall", "pkill", "pgrep", "pidof")
def _c_pgrep(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    return (yield from _done(1))


@_command("chroot")
def _c_chroot(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """``chroot NEWROOT [COMMAND [ARG...]]``: the command (default ``$SHELL -i``, ``/bin/sh``)
    sees ``NEWROOT`` as ``/`` — ``kubectl debug node/N`` then ``chroot /host`` reads the node's
    files through the pod's ``hostPath`` mount of ``/``. Errors as busybox's."""
    if len(argv) < 2:
        io.err("BusyBox v1.37.0 (2024-09-26 21:31:42 UTC) multi-call binary.\n\n"
               "Usage: chroot NEWROOT [PROG ARGS]\n\nRun PROG with root directory set to NEWROOT\n")
        return 1
    if not sh.is_dir(argv[1]):
        io.err(f"chroot: can't change root directory to '{argv[1]}': No such file or directory\n")
        return 1
    sub = sh.child()
    sub.root = sh.path(argv[1]).rstrip("/")
    sub.vars["PWD"] = "/"
    command = argv[2:] or [str(sh.vars.get("SHELL") or "/bin/sh"), "-i"]
    return (yield from sub.exec_argv(command, io, tail=True))


@_command("hostname", "whoami", "id", "uname", "basename", "dirname", "nproc")
def _c_info(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    prog = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if prog == "hostname":
        return (yield from _c_hostname(sh, args, io))
    elif prog in ("whoami", "id"):
        env = sh.run.program.env
        uid = env.uid if isinstance(env, ResolvedEnv) and env.uid is not None else 0
        name = _user_name(sh.run.program.image, uid)
        if prog == "whoami":
            if name == str(uid):
                io.err(f"whoami: unknown uid {uid}\n")
                return 1
            text = name
        else:
            groups = env.groups if isinstance(env, ResolvedEnv) else ()
            if not groups:
                text = f"uid={uid}({name}) gid=0(root) groups=0(root)" if name != str(uid) else \
                    f"uid={uid} gid=0(root) groups=0(root)"
            else:
                gid = env.gid if env.gid is not None else 0

                def grp(g: int) -> str:
                    return "0(root)" if g == 0 else str(g)

                user = f"{uid}({name})" if name != str(uid) else str(uid)
                text = f"uid={user} gid={grp(gid)} groups={','.join(grp(g) for g in groups)}"
    elif prog == "uname":
        text = "Linux"
    elif prog == "nproc":
        limit = sh.run.program.cpu_limit
        text = str(max(1, math.ceil(limit / 1000)) if limit else _ONLINE_CPUS)
    elif not args:
        io.err(f"{prog}: missing operand\n")
        return 1
    elif prog == "basename":
        text = args[0].rstrip("/").rsplit("/", 1)[-1]
        if len(args) > 1 and text.endswith(args[1]):
            text = text[: -len(args[1])]
    else:
        head = args[0].rstrip("/").rsplit("/", 1)
        text = (head[0] or "/") if len(head) > 1 else "."
    io.out(text + "\n")
    return (yield from _done(0))


def _host_entries(sh: _Shell, name: str) -> tuple[str | None, list[str]]:
    """What the resolver finds for ``name`` in the container's ``/etc/hosts``: the canonical name
    (the first name of the first line listing ``name``) and the addresses of every line listing it."""
    canonical, addrs = None, []
    for line in (sh.read_file("/etc/hosts") or "").splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) >= 2 and name in fields[1:]:
            canonical = canonical or fields[1]
            if fields[0] not in addrs:
                addrs.append(fields[0])
    return canonical, addrs


def _c_hostname(sh: _Shell, args: list[str], io: _IO) -> Gen:
    """busybox ``hostname``: the UTS name (the pod's hostname, not ``$HOSTNAME`` as the shell may
    have changed it); ``-s`` up to the first dot, ``-f`` the canonical name the resolver finds in
    ``/etc/hosts`` (``web-0.nginx.default.svc.cluster.local`` for a pod with ``subdomain``),
    ``-d`` its domain part, ``-i`` the addresses of the name (the pod's IP); setting a name fails
    (no ``CAP_SYS_ADMIN``)."""
    name = str(sh.run.program.env.get("HOSTNAME") or sh.hostname())
    opts = ""
    rest = []
    for a in args:
        if a in ("--fqdn", "--long"):
            opts += "f"
        elif a == "--short":
            opts += "s"
        elif a == "--domain":
            opts += "d"
        elif a == "--ip-address":
            opts += "i"
        elif a.startswith("-") and len(a) > 1:
            opts += a[1:]
        else:
            rest.append(a)
    if rest and not opts:
        io.err("hostname: sethostname: Operation not permitted\n")
        return (yield from _done(1))
    if "i" in opts or "I" in opts:
        _, addrs = _host_entries(sh, name)
        if not addrs:
            io.err(f"hostname: {name}: Unknown host\n")
            return (yield from _done(1))
        io.out(" ".join(addrs) + "\n")
        return (yield from _done(0))
    fqdn = _host_entries(sh, name)[0] or name
    if "f" in opts or "F" in opts:
        text = fqdn
    elif "d" in opts:
        text = fqdn.partition(".")[2]
    elif "s" in opts:
        text = name.partition(".")[0]
    else:
        text = name
    io.out(text + "\n")
    return (yield from _done(0))


@_command("nohup", "command", "builtin", "time", "stdbuf", "tini", "dumb-init", "su-exec", "gosu")
def _c_wrapper(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    while args and args[0].startswith("-"):
        args.pop(0)
    if argv[0].rsplit("/", 1)[-1] in ("su-exec", "gosu") and args:
        args.pop(0)  # the user
    if not args:
        return 0
    # nohup, stdbuf, su-exec and gosu exec the command; command/builtin fork it as the shell would,
    # time, tini and dumb-init fork and wait for it
    execs = argv[0].rsplit("/", 1)[-1] in ("nohup", "stdbuf", "su-exec", "gosu")
    return (yield from sh.exec_argv(args, io, tail=execs))


@_command("timeout")
def _c_timeout(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = [a for a in argv[1:] if not a.startswith("-")]
    if len(args) < 2:
        io.err("timeout: missing operand\n")
        return 125
    try:
        deadline = sh.run.now + parse_duration(args[0])
    except ValueError:
        io.err(f"timeout: invalid time interval '{args[0]}'\n")
        return 125
    gen = sh.exec_argv(args[1:], io, tail=True)  # busybox's timeout execs the command (a child watches)
    try:
        while True:
            t = next(gen)
            if t > deadline:
                gen.close()
                yield deadline
                return 124
            yield t
    except StopIteration as stop:
        return stop.value or 0


@_command("ping", "dig", "host", "nc", "ncat", "mysql", "mysqladmin", "psql",
          "pg_isready", "redis-cli", "mongo", "mongosh", "xbstream", "xtrabackup", "kubectl", "git",
          "gzip", "gunzip", "sed", "awk", "cut", "tr", "xargs", "find", "apk", "apt-get", "pip", "openssl")
def _c_client(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """Network clients and one-shot tools: not emulated, they succeed quietly (``nc -l`` serves)."""
    if argv[0].rsplit("/", 1)[-1] in ("nc", "ncat") and any(a.startswith(("-l", "--listen")) for a in argv[1:]):
        return (yield from sh.serve())
    return (yield from _done(0))


# ---- network clients (wget, curl, nslookup) on the cluster network of Run.network

#: Linux gives up a TCP connect that gets no answer after its SYN retries (about 130 s).
_CONNECT_GIVES_UP = 130.0
#: The C library's resolver defaults (resolv.conf(5)): ``timeout:5`` seconds per try, ``attempts:2``.
_RESOLV_TIMEOUT, _RESOLV_ATTEMPTS = 5, 2
#: busybox nslookup's own resolver gives up on a server after this many seconds (``-timeout=``).
_NSLOOKUP_TIMEOUT = 5.0


def _network(sh: _Shell) -> Any:
    """The cluster network of the container's run (:attr:`Run.network`), for its own processes and
    those exec'd into it alike; None where the run has none (see :mod:`k8semu.node.podnetwork`)."""
    return sh.run.network


def _ip_literal(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _resolv_conf(sh: _Shell) -> tuple[list[str], list[str], int]:
    """(nameservers, search domains, ndots) of the container's ``/etc/resolv.conf``."""
    from k8semu.node.dns import parse_resolv_conf

    servers, searches, options = parse_resolv_conf(sh.read_file("/etc/resolv.conf") or "")
    ndots = 1
    for opt in options:
        if opt.startswith("ndots:") and opt[6:].isdigit():
            ndots = min(int(opt[6:]), 15)
    return servers, searches, ndots


def _resolver_wait(sh: _Shell) -> float:
    """Virtual seconds the C library's resolver waits for a nameserver that never answers before
    it gives up (glibc: ``timeout`` × ``attempts`` of ``/etc/resolv.conf``'s options, 5 s × 2 by
    default; a timeout ends the search list, as ``res_nsearch`` stops on TRY_AGAIN)."""
    from k8semu.node.dns import parse_resolv_conf

    _, _, options = parse_resolv_conf(sh.read_file("/etc/resolv.conf") or "")
    timeout, attempts = _RESOLV_TIMEOUT, _RESOLV_ATTEMPTS
    for opt in options:
        key, _, value = opt.partition(":")
        if value.isdigit() and key == "timeout":
            timeout = min(max(int(value), 1), 30)
        elif value.isdigit() and key == "attempts":
            attempts = min(max(int(value), 1), 5)
    return float(timeout * attempts)


def _getaddrinfo(sh: _Shell, name: str) -> list[str] | None:
    """The addresses the C library finds for ``name``: an IP literal is itself, then
    ``/etc/hosts``, then the cluster DNS through the search list of ``/etc/resolv.conf`` (names
    with at least ``ndots`` dots are tried as given first, the others last). [] when not found;
    None when the nameserver never answers (a NetworkPolicy drops the pod's DNS queries: the
    caller waits :func:`_resolver_wait`)."""
    if _ip_literal(name):
        return [name]
    _, addrs = _host_entries(sh, name)
    if addrs:
        return addrs
    servers, searches, ndots = _resolv_conf(sh)
    query = name.lower()
    if query.endswith("."):
        candidates = [query.rstrip(".")]
    else:
        searched = [f"{query}.{d}" for d in searches]
        candidates = [query, *searched] if query.count(".") >= ndots else [*searched, query]
    for cand in candidates:
        try:
            answer = [a for a in _network(sh).resolve(cand, servers) if _ip_literal(a)]
        except TimeoutError:
            return None
        if answer:
            return answer
    return []


def _split_url(url: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, request target, Host header) of a client's URL (``http://`` implied)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "http", url
    scheme = scheme.lower()
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    hostport, target = rest[:cut], rest[cut:] or "/"
    if target.startswith("?"):
        target = "/" + target
    hostport = hostport.rpartition("@")[2]
    port = 443 if scheme == "https" else 80
    host = hostport
    if hostport.startswith("["):
        host, _, tail = hostport[1:].partition("]")
        if tail.startswith(":") and tail[1:].isdigit():
            port = int(tail[1:])
    elif hostport.count(":") == 1:
        host, _, p = hostport.partition(":")
        if p.isdigit():
            port = int(p)
    return scheme, host, port, target, hostport


def _dial(sh: _Shell, ip: str, port: int, method: str, target: str, host: str) -> Any:
    """The answer of ``ip:port`` (see :attr:`Run.network`: an :class:`HTTPAnswer`, or the bytes a
    server that does not speak HTTP sends back), or the exception the dial raised
    (``ConnectionRefusedError``; ``TimeoutError``: nothing answers, or the connection is dropped)."""
    try:
        return _network(sh).http(ip, port, method=method, target=target, host=host)
    except (ConnectionRefusedError, TimeoutError) as e:
        return e


def _size5(n: int) -> str:
    """A byte count in five columns, with a k/M/G suffix above 99999 (busybox's and curl's meters)."""
    if n < 100000:
        return f"{n:5d}"
    for suffix in "kMGTP":
        n //= 1024
        if n < 10000:
            return f"{n:4d}{suffix}"
    return f"{n:4d}E"


def _options(args: list[str], short_values: str,
             long_values: frozenset[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """A command line's GNU-style options, read leniently (an option the tool would refuse is kept
    and ignored): ``-abc`` clusters, ``-Ovalue`` / ``-O value`` for the letters of
    ``short_values``, ``--name=value`` / ``--name value`` for the names in ``long_values``.
    Returns ([(option without dashes, value or "")], operands)."""
    opts: list[tuple[str, str]] = []
    operands: list[str] = []
    rest = list(args)
    while rest:
        a = rest.pop(0)
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in long_values and not eq:
                value = rest.pop(0) if rest else ""
            opts.append((name, value))
        elif a.startswith("-") and len(a) > 1:
            for i, ch in enumerate(a[1:], 1):
                if ch in short_values:
                    opts.append((ch, a[i + 1:] or (rest.pop(0) if rest else "")))
                    break
                opts.append((ch, ""))
        else:
            operands.append(a)
    return opts, operands


def _seconds(text: str, default: float | None) -> float | None:
    """A ``-T`` / ``--max-time`` value in seconds, or ``default`` when it is not a number."""
    return float(text) if text.replace(".", "", 1).isdigit() else default


@_command("wget")
def _c_wget(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``wget`` over the cluster network (quiet success without one): ``-q``, ``-O FILE``
    (``-`` stdout), ``--spider``, ``-T SEC``; ``Connecting to``, the progress line and busybox's
    errors on stderr; exit 1 on any failure.

    Failures, as busybox 1.37 reports them: a name that does not resolve ``bad address`` (after
    the resolver's timeout, :func:`_resolver_wait`, when the DNS queries are dropped); a refused
    connection ``can't connect to remote host (IP): Connection refused``; a dropped one (nobody
    there, a NetworkPolicy) ``download timed out`` after ``-T`` virtual seconds (900 by default,
    busybox's), or, when that is longer than the kernel's SYN retries (~130 s), ``Connection timed
    out``; a server that does not speak HTTP ``error getting response``."""
    if _network(sh) is None:
        return (yield from _done(0))
    quiet = spider = False
    out_file: str | None = None
    timeout = 900.0
    opts, urls = _options(argv[1:], "OTUYPeot", frozenset({"output-document", "timeout", "user-agent", "header",
                                                           "post-data", "tries"}))
    for name, value in opts:
        if name in ("q", "quiet"):
            quiet = True
        elif name == "spider":
            spider = True
        elif name in ("O", "output-document"):
            out_file = value
        elif name in ("T", "timeout"):
            timeout = _seconds(value, timeout)
    if not urls:
        io.err("BusyBox v1.37.0 (2024-09-26 21:31:42 UTC) multi-call binary.\n\n"
               "Usage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n"
               "\t[--post-data STR | --post-file FILE] [-Y on/off]\n"
               "\t[-P DIR] [-U AGENT] [-T SEC] URL...\n")
        return (yield from _done(1))
    status = 0
    for url in urls:
        scheme, host, port, target, hostport = _split_url(url)
        addrs = _getaddrinfo(sh, host) if host else []
        if addrs is None:
            yield sh.run.now + _resolver_wait(sh)
        if not addrs:
            io.err(f"wget: bad address '{host}'\n")
            return (yield from _done(1))
        ip = addrs[0]
        if not quiet:
            shown = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            io.err(f"Connecting to {hostport} ({shown})\n")
        answer = _dial(sh, ip, port, "HEAD" if spider else "GET", target, hostport)
        if isinstance(answer, ConnectionRefusedError):
            io.err(f"wget: can't connect to remote host ({ip}): Connection refused\n")
            return (yield from _done(1))
        if isinstance(answer, TimeoutError):
            if timeout < _CONNECT_GIVES_UP:
                yield sh.run.now + timeout
                io.err("wget: download timed out\n")
            else:
                yield sh.run.now + _CONNECT_GIVES_UP
                io.err(f"wget: can't connect to remote host ({ip}): Connection timed out\n")
            return (yield from _done(1))
        if answer is None or isinstance(answer, bytes):  # the server closed without an HTTP status line
            io.err("wget: error getting response\n")
            return (yield from _done(1))
        if not 200 <= answer.status < 300:
            io.err(f"wget: server returned error: HTTP/1.1 {answer.status} {answer.reason}\n")
            return (yield from _done(1))
        if spider:
            if not quiet:
                io.err("remote file exists\n")
            continue
        name = out_file
        if name is None:
            name = target.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "index.html"
            if sh.read_file(name) is not None:
                io.err(f"wget: can't open '{name}': File exists\n")
                return (yield from _done(1))
        body = answer.body.decode("utf-8", "replace")
        if not quiet:
            io.err("writing to stdout\n" if name == "-" else f"saving to '{name}'\n")
        if name == "-":
            io.out(body)
        elif sh.path(name) != "/dev/null":
            sh.run.fs[sh.path(name)] = body
        if not quiet:
            shown_name = name.rsplit("/", 1)[-1] if name != "-" else "-"
            io.err(f"\r{shown_name[:20]:<20}{100:4d}% |{'*' * 32}| {_size5(len(answer.body))}  0:00:00 ETA\n")
            io.err("written to stdout\n" if name == "-" else f"'{name}' saved\n")
    return (yield from _done(status))


_CURL_METER = ("  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
               "                                 Dload  Upload   Total   Spent    Left  Speed\n")


def _curl_meter_line(total: int, received: int) -> str:
    """One line of curl's progress meter; the transfer is taken to last 1 ms (the speeds)."""
    pct = 100 if total and received >= total else 0
    speed = _size5(received * 1000)
    return (f"{pct:3d} {_size5(total)}  {pct:3d} {_size5(received)}  {0:3d} {_size5(0)}  "
            f"{speed}  {_size5(0)} --:--:-- --:--:-- --:--:-- {speed}")


@_command("curl")
def _c_curl(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """curl 8 over the cluster network (quiet success without one): ``-s``, ``-S``, ``-f``,
    ``-I``, ``-i``, ``-o FILE``, ``-X METHOD``, ``-m``/``--max-time SEC``, ``--connect-timeout
    SEC``; the progress meter on stderr unless ``-s``; curl's error messages and exit codes:

    * 6 ``Could not resolve host`` (after the resolver's timeout when the DNS queries are
      dropped), or 28 ``Resolving timed out after N milliseconds`` when a timeout ends it first;
    * 7 ``Failed to connect to HOST port P after 0 ms: Couldn't connect to server`` (refused);
    * a dropped connection (nobody there, a NetworkPolicy) waits, in virtual seconds: 28
      ``Failed to connect to HOST port P after N ms: Timeout was reached`` at ``--connect-timeout``,
      28 ``Connection timed out after N milliseconds`` at ``-m``, else 7 (``Couldn't connect to
      server``) when the kernel gives up its SYN retries (~130 s, sooner than curl's 300 s);
    * 52 ``Empty reply from server`` (a server that closes without a word), 1 ``Received
      HTTP/0.9 when not allowed`` (one that answers in another protocol); 22 with ``-f``."""
    if _network(sh) is None:
        return (yield from _done(0))
    silent = show_error = fail = head = include = False
    out_file: str | None = None
    method: str | None = None
    max_time: float | None = None
    connect_timeout: float | None = None
    opts, urls = _options(argv[1:], "oXHmdAuewxrTEKbcDFQUY", frozenset({
        "output", "request", "header", "max-time", "data", "user-agent", "user", "referer", "write-out", "proxy",
        "connect-timeout", "data-raw", "data-binary", "cacert", "cert", "resolve", "retry", "url"}))
    for name, value in opts:
        if name in ("s", "silent"):
            silent = True
        elif name in ("S", "show-error"):
            show_error = True
        elif name in ("f", "fail", "fail-with-body"):
            fail = True
        elif name in ("I", "head"):
            head = True
        elif name in ("i", "include"):
            include = True
        elif name in ("o", "output"):
            out_file = value
        elif name in ("X", "request"):
            method = value
        elif name in ("m", "max-time"):
            max_time = _seconds(value, None)
        elif name == "connect-timeout":
            connect_timeout = _seconds(value, None) or None  # 0: curl's default
        elif name == "url":
            urls.append(value)
    if not urls:
        io.err("curl: try 'curl --help' or 'curl --manual' for more information\n")
        return (yield from _done(2))
    meter = not silent
    errors = not silent or show_error
    verb = method or ("HEAD" if head else "GET")

    def failure(code: int, message: str) -> int:
        if meter:
            io.err(_CURL_METER + "\r" + _curl_meter_line(0, 0) + "\n")
        if errors:
            io.err(f"curl: ({code}) {message}\n")
        return code

    for url in urls:
        scheme, host, port, target, hostport = _split_url(url)
        host_name = host
        limits = [t for t in (connect_timeout, max_time) if t is not None]
        addrs = _getaddrinfo(sh, host) if host else []
        if addrs is None:
            wait = _resolver_wait(sh)
            if limits and min(limits) < wait:
                yield sh.run.now + min(limits)
                return (yield from _done(failure(
                    28, f"Resolving timed out after {int(min(limits) * 1000)} milliseconds")))
            yield sh.run.now + wait
        if not addrs:
            return (yield from _done(failure(6, f"Could not resolve host: {host_name}")))
        answer = _dial(sh, addrs[0], port, verb, target, hostport)
        if isinstance(answer, ConnectionRefusedError):
            return (yield from _done(failure(
                7, f"Failed to connect to {host_name} port {port} after 0 ms: Couldn't connect to server")))
        if isinstance(answer, TimeoutError):
            if limits and min(limits) < _CONNECT_GIVES_UP:
                limit = min(limits)
                yield sh.run.now + limit
                if connect_timeout is not None and connect_timeout == limit:
                    message = f"Failed to connect to {host_name} port {port} after {int(limit * 1000)} ms: " \
                              "Timeout was reached"
                else:
                    message = f"Connection timed out after {int(limit * 1000)} milliseconds"
                return (yield from _done(failure(28, message)))
            yield sh.run.now + _CONNECT_GIVES_UP
            return (yield from _done(failure(
                7, f"Failed to connect to {host_name} port {port} after {int(_CONNECT_GIVES_UP * 1000)} ms: "
                   "Couldn't connect to server")))
        if answer is None or answer == b"":
            return (yield from _done(failure(52, "Empty reply from server")))
        if isinstance(answer, bytes):
            return (yield from _done(failure(1, "Received HTTP/0.9 when not allowed")))
        if fail and answer.status >= 400:
            return (yield from _done(failure(22, f"The requested URL returned error: {answer.status}")))
        head_text = "".join(f"{k}: {v}\r\n" for k, v in answer.headers)
        head_text = f"HTTP/1.1 {answer.status} {answer.reason}\r\n{head_text}\r\n"
        body = answer.body.decode("utf-8", "replace")
        text = head_text if head else (head_text + body if include else body)
        if meter:
            length = next((int(v) for k, v in answer.headers if k.lower() == "content-length"), 0)
            received = 0 if head else len(answer.body)
            io.err(_CURL_METER + "\r" + _curl_meter_line(0, 0) + "\r"
                   + _curl_meter_line(length if not head else 0, received) + "\n")
        if out_file is not None and out_file != "-":
            if sh.path(out_file) != "/dev/null":
                sh.run.fs[sh.path(out_file)] = text
        else:
            io.out(text)
    return (yield from _done(0))


@_command("nslookup")
def _c_nslookup(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``nslookup NAME [SERVER]`` against the cluster DNS (quiet success without a
    network): an A and an AAAA query for the name (a name without dots: one per search domain of
    ``/etc/resolv.conf``), answered in that order; exit 1 when one found no such name.
    When the queries are dropped (a NetworkPolicy isolating the pod's egress without allowing
    port 53 to the cluster DNS) it waits ``-timeout=SEC`` virtual seconds (busybox's 5 by
    default), prints ``;; connection timed out; no servers could be reached`` and exits 1.
    Reverse lookups of IP addresses are not emulated (quiet success)."""
    words = [a for a in argv[1:] if not a.startswith("-")]
    if _network(sh) is None or not words or _ip_literal(words[0]):
        return (yield from _done(0))
    name = words[0]
    wait = _NSLOOKUP_TIMEOUT
    for a in argv[1:]:
        if a.startswith("-timeout=") and a[9:].isdigit():
            wait = float(a[9:])
    servers, searches, _ = _resolv_conf(sh)
    if len(words) > 1:
        servers = [words[1]]
    if not servers:
        servers = ["127.0.0.1"]
    server = servers[0]
    queries = [f"{name}.{d}" for d in searches] if searches and "." not in name else [name]
    shown = f"[{server}]:53" if ":" in server else f"{server}:53"
    try:
        _network(sh).resolve(queries[0].rstrip("."), [server])
    except TimeoutError:  # no answer from the only server
        yield sh.run.now + wait
        io.out(";; connection timed out; no servers could be reached\n\n")
        return (yield from _done(1))
    out = [f"Server:\t\t{server}\nAddress:\t{shown}\n\n"]
    status = 0
    for family in (4, 6):
        for q in queries:
            answer = _network(sh).resolve(q.rstrip("."), [server])
            if not answer:
                out.append(f"** server can't find {q}: NXDOMAIN\n\n")
                status = 1
                continue
            addrs = [a for a in answer if _ip_literal(a) and (":" in a) == (family == 6)]
            if not addrs:
                out.append(f"*** Can't find {q}: No answer\n\n")
                continue
            out.append("".join(f"Name:\t{q}\nAddress: {a}\n" for a in addrs) + "\n")
    io.out("".join(out))
    return (yield from _done(status))


@_command("tar")
def _c_tar(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """busybox ``tar`` on the container's files, for ``kubectl cp``: ``tar cf - PATH…`` writes a
    ustar archive of the files (directories recursively; leading ``/`` removed from the names, as
    tar does) to stdout, ``tar xf - [-C DIR]`` (``m``, ``v``, ``o`` accepted) extracts one read
    from stdin into the container (:attr:`Run.extracted` lists what it wrote). ``t`` lists.
    File contents are text (UTF-8), as every file of the model; compressed archives are refused."""
    import io as _bytesio
    import tarfile

    args = argv[1:]
    mode, archive, chdir, names = "", None, None, []
    first = True
    while args:
        a = args.pop(0)
        if a == "-C" or a == "--directory":
            chdir = args.pop(0) if args else None
        elif a.startswith("--directory="):
            chdir = a.split("=", 1)[1]
        elif (a.startswith("-") and len(a) > 1 and not a.startswith("--")) or (first and not a.startswith("/")):
            for ch in a.lstrip("-"):
                if ch in "cxt":
                    mode = ch
                elif ch == "f":
                    archive = args.pop(0) if args else None
                elif ch == "C":
                    chdir = args.pop(0) if args else None
                elif ch in "zjJ":
                    io.err("tar: compressed archives are not supported here\n")
                    return 1
        elif a.startswith("--"):
            pass
        else:
            names.append(a)
        first = False
    if not mode:
        io.err("tar: need to specify one of -c, -t, -x\n")
        return 1
    if archive not in (None, "-"):
        io.err(f"tar: can't open '{archive}': archives are read from stdin and written to stdout here\n")
        return 1
    if mode == "c":
        buf = _bytesio.BytesIO()
        status = 0
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
            stripped = False
            for name in names:
                full = sh.path(name)
                files = []
                text = sh.read_file(name)
                if text is not None:
                    files.append((full, text))
                elif sh.is_dir(name):
                    prefix = full.rstrip("/") + "/"
                    files += sorted((p, t) for p, t in sh.run.fs.items() if p.startswith(prefix))
                else:
                    io.err(f"tar: {name}: No such file or directory\n")
                    status = 1
                    continue
                arc_root = name.lstrip("/") if name.startswith("/") else name
                if name.startswith("/") and not stripped:
                    io.err("tar: removing leading '/' from member names\n")
                    stripped = True
                if sh.is_dir(name) and text is None:
                    info = tarfile.TarInfo(arc_root.rstrip("/") or ".")
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(sh.run.now)
                    tf.addfile(info)
                for path, body in files:
                    data = body.encode()
                    rel = arc_root if path == full else arc_root.rstrip("/") + path[len(full.rstrip("/")):]
                    info = tarfile.TarInfo(rel)
                    info.size, info.mode, info.mtime = len(data), 0o644, int(sh.run.now)
                    tf.addfile(info, _bytesio.BytesIO(data))
        io.out(buf.getvalue().decode("utf-8", "replace"))
        return (yield from _done(status))
    text = io.inp.read_all()
    while text is None:  # the archive is still arriving
        yield io.inp.wait_time() if isinstance(io.inp, _FeedInput) else _INF
        text = io.inp.read_all()
    try:
        tf = tarfile.open(fileobj=_bytesio.BytesIO(text.encode()), mode="r:")
        members = tf.getmembers()
    except (tarfile.TarError, EOFError):
        io.err("tar: invalid tar magic\n")
        return 1
    if mode == "t":
        io.out("".join(m.name + "\n" for m in members))
        return (yield from _done(0))
    base = sh.path(chdir or ".")
    if chdir is not None and not sh.is_dir(chdir):
        io.err(f"tar: can't change directory to '{chdir}': No such file or directory\n")
        return 1
    for m in members:
        dest = sh.path(base.rstrip("/") + "/" + m.name)
        if m.isdir():
            sh.run.dirs.add(dest)
            sh.run.extracted.append((dest, None))
        elif m.isfile():
            f = tf.extractfile(m)
            body = (f.read() if f is not None else b"").decode("utf-8", "replace")
            sh.run.fs[dest] = body
            sh.run.extracted.append((dest, body))
    return (yield from _done(0))


# ---- known programs


@_command("hello")
def _p_hello(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    io.out("\nHello from Docker!\nThis message shows that your installation appears to be working correctly.\n")
    return (yield from _done(0))


@_command("docker-entrypoint.sh", "docker-php-entrypoint")
def _p_entrypoint(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """The official images' entrypoint: flag-only (or ``*.conf``) arguments go to the image's main
    program; nginx's runs the ``/docker-entrypoint.d`` scripts first (:func:`_nginx_configure`)."""
    args = argv[1:]
    main = sh.run.program.image_main
    if main and (not args or args[0].startswith("-") or args[0].endswith(".conf")):
        args = [main, *args]
    if not args:
        return 0
    prog = args[0].rsplit("/", 1)[-1]
    if sh.probe or sh.in_exec:  # start-up output is the container's own process's
        pass
    elif prog in ("nginx", "nginx-debug"):
        yield from _nginx_configure(sh, argv[0], io)
    elif prog == "redis-server" and _redis_version(sh.run.program) >= (8,):
        io.out("Starting Redis Server\n")
    return (yield from sh.exec_argv(args, io, tail=True))  # exec "$@"


#: CPUs a container sees (``nproc`` without a CPU limit; nginx's ``worker_processes auto``).
_ONLINE_CPUS = 2
#: The open-files limit containerd gives containers (``ulimit -n``).
_NOFILE = "1048576:1048576"


def _kernel_release() -> str:
    try:
        from .kubelet import KERNEL_VERSION
    except ImportError:  # pragma: no cover - the kubelet module is part of the package
        return "6.8.0-1021-azure"
    return KERNEL_VERSION


def _named_image(program: Program, *names: str) -> ImageInfo | None:
    """The image's reference when its name is one of ``names`` (``nginx``, ``nginx-slim``), else None."""
    info = _image_info(program.image)
    return info if info is not None and info.base_name in names else None


def _nginx_version(program: Program) -> str:
    info = _named_image(program, "nginx")
    return _full_version(info.tag if info else None, _NGINX_PATCH, _NGINX_DEFAULT)


def _nginx_gcc(version: tuple[int, ...], alpine: bool) -> str:
    """nginx's ``built by`` line of the official image (the compiler of its base release)."""
    if alpine:
        if version >= (1, 28):
            return "gcc 14.2.0 (Alpine 14.2.0) "
        if version >= (1, 27):
            return "gcc 13.2.1 20240309 (Alpine 13.2.1_git20240309) "
        if version >= (1, 25):
            return "gcc 12.2.1 20220924 (Alpine 12.2.1_git20220924-r10) "
        return "gcc 10.3.1 20211027 (Alpine 10.3.1_git20211027) "
    if version >= (1, 29):
        return "gcc 14.2.0 (Debian 14.2.0-19) "
    if version >= (1, 25):
        return "gcc 12.2.0 (Debian 12.2.0-14) "
    if version >= (1, 21):
        return "gcc 10.2.1 20210110 (Debian 10.2.1-6) "
    return "gcc 8.3.0 (Debian 8.3.0-6) "


def _mounted(run: Run, path: str) -> bool:
    """Whether ``path`` lies on a volume mount (ConfigMap and Secret volumes are read-only)."""
    return any(path == m.path or path.startswith(m.path + "/") for m in run.program.mounts)


def _nginx_configure(sh: _Shell, arg0: str, io: _IO) -> Gen:
    """The nginx image's ``docker-entrypoint.sh`` (nginx >= 1.19): it runs the scripts of
    ``/docker-entrypoint.d`` in version order and logs what it does on stdout, unless
    ``NGINX_ENTRYPOINT_QUIET_LOGS`` is set."""
    run = sh.run
    version = _version_key(_nginx_version(run.program))
    if _named_image(run.program, "nginx") is None or version < (1, 19):
        return
    run.entrypoint_ran = True
    quiet = bool(sh.vars.get("NGINX_ENTRYPOINT_QUIET_LOGS"))

    def log(text: str) -> None:
        if not quiet:
            io.out(text + "\n")

    folder = "/docker-entrypoint.d/"
    scripts = sorted((k for k in run.fs if k.startswith(folder) and "/" not in k[len(folder):]),
                     key=lambda k: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", k)])
    if not scripts:
        log(f"{arg0}: No files found in {folder}, skipping configuration")
        return
    log(f"{arg0}: {folder} is not empty, will attempt to perform configuration")
    log(f"{arg0}: Looking for shell scripts in {folder}")
    for path in scripts:
        name = path[len(folder):]
        if name.endswith(".envsh"):
            log(f"{arg0}: Sourcing {path}")
        elif name.endswith(".sh"):
            log(f"{arg0}: Launching {path}")
        else:
            log(f"{arg0}: Ignoring {path}")
            continue
        if name == "10-listen-on-ipv6-by-default.sh":
            _nginx_listen_ipv6(run, name, version, log)
        elif name == "20-envsubst-on-templates.sh":
            _nginx_envsubst(sh, name, log)
        elif name.endswith(".sh") and (text := run.fs.get(path)):  # a script of the user's (a volume)
            try:
                yield from _run_script_text(sh.child(), text, path, [], io)
            except _Exit:
                pass
    log(f"{arg0}: Configuration complete; ready for start up")


def _nginx_listen_ipv6(run: Run, me: str, version: tuple[int, ...], log: Callable[[str], None]) -> None:
    """``10-listen-on-ipv6-by-default.sh``: adds ``listen [::]:80`` to the packaged ``default.conf``
    (the pod's network namespace has IPv6); a ConfigMap mounted there is read-only."""
    conf = _NGINX_DEFAULT_CONF
    info, error = ("info: ", "info: ") if version >= (1, 21) else ("", "error: ")
    text = run.fs.get(conf)
    if text is None:
        log(f"{me}: {error}{conf} is not a file or does not exist")
    elif _mounted(run, conf):
        log(f"{me}: {error}can not modify {conf} (read-only file system?)")
    elif "listen  [::]:80;" in text:
        log(f"{me}: {info}IPv6 listen already enabled")
    elif run.fs.get("/etc/os-release") is None:
        log(f"{me}: {error}can not guess the operating system")
    else:
        log(f"{me}: {info}Getting the checksum of {conf}")
        if text != run.tree.files.get(conf):
            log(f"{me}: {info}{conf} differs from the packaged version")
        else:
            log(f"{me}: {info}Enabled listen on IPv6 in {conf}")


def _nginx_envsubst(sh: _Shell, me: str, log: Callable[[str], None]) -> None:
    """``20-envsubst-on-templates.sh``: each ``*.template`` under ``/etc/nginx/templates`` becomes a
    file of ``/etc/nginx/conf.d`` with ``$VAR`` / ``${VAR}`` of defined variables replaced."""
    run, env = sh.run, sh.run.program.env
    template_dir = env.get("NGINX_ENVSUBST_TEMPLATE_DIR") or "/etc/nginx/templates"
    suffix = env.get("NGINX_ENVSUBST_TEMPLATE_SUFFIX") or ".template"
    output_dir = env.get("NGINX_ENVSUBST_OUTPUT_DIR") or "/etc/nginx/conf.d"
    if not run.is_dir(template_dir):
        return
    if _mounted(run, output_dir):
        log(f"{me}: ERROR: {template_dir} exists, but {output_dir} is not writable")
        return
    pattern = re.compile(r"\$(\{)?(" + re.escape(env.get("NGINX_ENVSUBST_FILTER") or "") + r"\w*)(?(1)\})")
    for template in sorted(k for k in run.fs if k.startswith(template_dir + "/") and k.endswith(suffix)):
        relative = template[len(template_dir) + 1:]
        output = f"{output_dir}/{relative[:len(relative) - len(suffix)]}"
        log(f"{me}: Running envsubst on {template} to {output}")
        run.fs[output] = pattern.sub(lambda m: env[m.group(2)] if m.group(2) in env else m.group(0),
                                     run.fs.get(template) or "")


def _nginx_notices(sh: _Shell, io: _IO) -> None:
    """nginx's start-up notices on stderr (the official image logs at ``notice`` since 1.19): the
    master is PID 1; its workers' PIDs follow the processes the entrypoint ran."""
    run = sh.run
    version = _nginx_version(run.program)
    key = _version_key(version)
    info = _named_image(run.program, "nginx")
    if info is not None and key < (1, 19):
        return
    alpine = _alpine_variant(info)
    if run.entrypoint_ran:
        first = (30 if alpine else 29) if key >= (1, 25) else (32 if alpine else 31)
    else:
        first = 7
    run.nginx_worker = first
    when = f"{run.wall_clock(run.now):%Y/%m/%d %H:%M:%S}"
    lines = ['using the "epoll" event method', f"nginx/{version}", f"built by {_nginx_gcc(key, alpine)}",
             f"OS: Linux {_kernel_release()}", f"getrlimit(RLIMIT_NOFILE): {_NOFILE}", "start worker processes",
             *(f"start worker process {first + i}" for i in range(_ONLINE_CPUS))]
    io.err("".join(f"{when} [notice] 1#1: {line}\n" for line in lines))


@_command("nginx", "nginx-debug")
def _p_nginx(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    if "-t" in args or "-T" in args:
        io.err("nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
               "nginx: configuration file /etc/nginx/nginx.conf test is successful\n")
        return 0
    if "-v" in args or "-V" in args:  # the version of the image's tag (a fixed recent one for others)
        version = _nginx_version(sh.run.program)
        text = f"nginx version: nginx/{version}\n"
        if "-V" in args:
            alpine = _alpine_variant(_named_image(sh.run.program, "nginx"))
            text += f"built by {_nginx_gcc(_version_key(version), alpine)}\n"
        io.err(text)
        return 0
    if "-s" in args and not sh.probe:  # nginx -s reload: signal the master (its PID file)
        signal = args[args.index("-s") + 1] if args.index("-s") + 1 < len(args) else ""
        table = _process_table(sh.run)
        master = next((e for e in table if e[2].startswith("nginx: master") and e[3] is not None
                       and e[3][2] is None), None)
        if master is None:
            io.err('nginx: [error] open() "/var/run/nginx.pid" failed (2: No such file or directory)\n')
            return 1
        pid = sh.pid_of(sh.proc)
        io.err(f"{sh.run.wall_clock(sh.run.now):%Y/%m/%d %H:%M:%S} [notice] {pid}#{pid}: signal process started\n")
        signo = {"stop": 15, "quit": 3, "reopen": 10, "reload": _HUP}.get(signal)
        if signo == _HUP:
            _deliver(sh, master, signo, table)
        return 0
    if "-s" in args or "-h" in args:
        return 0
    if not sh.probe and not sh.in_exec:
        _nginx_notices(sh, io)
    return (yield from sh.serve())


def _redis_version(program: Program) -> tuple[int, ...]:
    info = _named_image(program, "redis")
    if info is None:
        return _version_key("6.2.22" if _named_image(program, "gb-redis-follower") else _REDIS_DEFAULT)
    return _version_key(_full_version(info.tag, _REDIS_PATCH, _REDIS_DEFAULT))


#: The modules the redis 8 images load (name, file).
_REDIS_MODULES = (("bf", "redisbloom.so"), ("search", "redisearch.so"), ("timeseries", "redistimeseries.so"),
                  ("ReJSON", "rejson.so"))


@_command("redis-server")
def _p_redis(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """``redis-server [config] [--option value …]``: the start-up log on stdout (the format of the
    image's redis version), then it serves."""
    args = argv[1:]
    if sh.probe or any(a in ("-v", "--version", "-h", "--help") for a in args):
        return 0
    if sh.in_exec:
        return (yield from sh.serve())
    run = sh.run
    v = _redis_version(run.program)
    version = ".".join(map(str, v))
    port = "6379"
    for i, a in enumerate(args[:-1]):
        if a == "--port":
            port = args[i + 1]
    when = run.wall_clock(run.now)
    stamp = f"{when:%d %b %Y %H:%M:%S}.{when.microsecond // 1000:03d}"
    note = "*" if v >= (7,) else "#"  # the level mark of the banner lines
    c = [f"{note} oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
         f"{note} Redis version={version}, bits=64, commit=00000000, modified={int(v >= (8,))}, pid=1, just started"]
    if args or v >= (8,):
        c.append(f"{note} Configuration loaded")
    else:
        c.append(f"# Warning: no config file specified, using the default config. In order to specify a config "
                 f"file use {argv[0]} /path/to/redis.conf")
    m = (["* monotonic clock: POSIX clock_gettime"] if v >= (6, 2) else []) + [
        f"* Running mode=standalone, port={port}."]
    if v >= (8,):
        m += [f"* Module '{name}' loaded from /usr/local/lib/redis/modules//{so}" for name, so in _REDIS_MODULES]
    m += [f"{note} Server initialized", "* Ready to accept connections" + (" tcp" if v >= (7, 2) else "")]
    io.out("".join(f"1:C {stamp} {line}\n" for line in c) + "".join(f"1:M {stamp} {line}\n" for line in m))
    return (yield from sh.serve())


def _pod_ip(run: Run) -> str | None:
    """The pod's IP as the container resolves its host name (the kubelet's ``/etc/hosts`` line), if known."""
    name = run.program.env.get("HOSTNAME")
    for line in (run.fs.get("/etc/hosts") or "").splitlines():
        fields = line.split()
        if len(fields) >= 2 and name and name in fields[1:] and not fields[0].startswith(("127.", "::", "fe00")):
            return fields[0]
    return None


@_command("httpd-foreground", "apache2-foreground")
def _p_apache(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """Apache in the foreground (``httpd`` image; PHP's ``*-apache`` images such as the guestbook
    frontend): its start-up notices on stderr, then it serves. The ``AH00558`` warnings name the
    pod's IP, so they appear only when the container's ``/etc/hosts`` tells it."""
    if sh.probe:
        return 0
    if sh.in_exec:
        return (yield from sh.serve())
    run = sh.run
    php = argv[0].rsplit("/", 1)[-1] == "apache2-foreground"
    when = run.wall_clock(run.now)
    stamp = f"[{when:%a %b %d %H:%M:%S}.{when.microsecond:06d} {when.year}]"
    daemon = "apache2" if php else "httpd"
    text = ""
    ip = _pod_ip(run)
    if ip:
        text += (f"AH00558: {daemon}: Could not reliably determine the server's fully qualified domain name, "
                 f"using {ip}. Set the 'ServerName' directive globally to suppress this message\n") * 2
    if php:
        text += (f"{stamp} [mpm_prefork:notice] [pid 1] AH00163: Apache/2.4.25 (Debian) PHP/5.6.40 configured "
                 f"-- resuming normal operations\n"
                 f"{stamp} [core:notice] [pid 1] AH00094: Command line: 'apache2 -D FOREGROUND'\n")
    else:
        info = _named_image(run.program, "httpd")
        version = _full_version(info.tag if info else None, _HTTPD_PATCH, _HTTPD_DEFAULT)
        extra = "".join(f" {a}" for a in argv[1:])
        text += (f"{stamp} [mpm_event:notice] [pid 1:tid 1] AH00489: Apache/{version} (Unix) configured "
                 f"-- resuming normal operations\n"
                 f"{stamp} [core:notice] [pid 1:tid 1] AH00094: Command line: 'httpd -D FOREGROUND{extra}'\n")
    io.err(text)
    return (yield from sh.serve())


@_command("postgres")
def _p_postgres(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    env = sh.vars
    if not env.get("POSTGRES_PASSWORD") and env.get("POSTGRES_HOST_AUTH_METHOD") != "trust":
        io.err("Error: Database is uninitialized and superuser password is not specified.\n"
               "       You must specify POSTGRES_PASSWORD to a non-empty value for the\n"
               "       superuser. For example, \"-e POSTGRES_PASSWORD=password\" on \"docker run\".\n")
        return 1
    return (yield from sh.serve())


@_command("mysqld")
def _p_mysqld(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    env = sh.vars
    if not any(env.get(k) for k in ("MYSQL_ROOT_PASSWORD", "MYSQL_ALLOW_EMPTY_PASSWORD",
                                    "MYSQL_RANDOM_ROOT_PASSWORD")):
        when = sh.run.wall_clock(sh.run.now)
        io.err(f"{when:%Y-%m-%d %H:%M:%S}+00:00 [ERROR] [Entrypoint]: Database is uninitialized and password "
               "option is not specified\n"
               "    You need to specify one of the following as an environment variable:\n"
               "    - MYSQL_ROOT_PASSWORD\n    - MYSQL_ALLOW_EMPTY_PASSWORD\n    - MYSQL_RANDOM_ROOT_PASSWORD\n")
        return 1
    return (yield from sh.serve())


@_command("pause")
def _p_pause(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    sh.run.set_usage(cpu=0, memory=256 * 1024)
    if sh.run.term_action is None:
        sh.run.term_action = (0, 0.0)  # pause exits on SIGTERM
    yield _INF


@_command("agnhost")
def _p_agnhost(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    sub = argv[1] if len(argv) > 1 else ""
    if sub == "pause":
        return (yield from _p_pause(sh, argv, io))
    if sub == "liveness":  # /healthz answers 200 for 10 s, then 500 (the docs' liveness example)
        sh.run.http_fail_at = sh.run.now + 10.0
    return (yield from sh.serve())


def _stress_bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+)([bBkKmMgG]?)", text)
    if not m:
        return 256 * _MiB
    return int(m.group(1)) * {"": 1, "b": 1, "k": 1024, "m": _MiB, "g": 1024 * _MiB}[m.group(2).lower()]


@_command("stress", "stress-ng")
def _p_stress(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """``stress --vm N --vm-bytes B --cpu N`` (polinux/stress) and ``/stress -cpus N`` (vish/stress)."""
    if sh.probe:
        return 0
    args = argv[1:]

    def opt(*names: str) -> str | None:
        for i, a in enumerate(args):
            if a in names and i + 1 < len(args):
                return args[i + 1]
            for name in names:
                if a.startswith(name + "="):
                    return a.split("=", 1)[1]
        return None

    vm = int(opt("--vm", "-m") or 0)
    vm_bytes = _stress_bytes(opt("--vm-bytes") or "256M")
    cpus = int(opt("--cpu", "-c", "-cpus") or 0)
    memory = 1 * _MiB + vm * vm_bytes
    timeout = opt("--timeout", "-t")
    # polinux/stress (``stress --vm 1 …``, not vish/stress's ``-cpus``) says what it starts, as PID 1
    polinux = argv[0].rsplit("/", 1)[-1] == "stress" and any(
        a.split("=", 1)[0] in ("--vm", "-m", "--cpu", "-c", "--io", "-i", "--hdd", "-d") for a in args)
    if polinux:
        io.out(f"stress: info: [1] dispatching hogs: {cpus} cpu, {int(opt('--io', '-i') or 0)} io, {vm} vm, "
               f"{int(opt('--hdd', '-d') or 0)} hdd\n")
    start = sh.run.now
    sh.run.set_usage(cpu=0, memory=1 * _MiB)
    yield sh.run.now + 1.0  # allocating takes a moment
    sh.run.set_usage(cpu=cpus * 1000 + (1000 if vm else 0), memory=memory)
    if timeout:
        seconds = parse_duration(timeout)
        yield start + max(seconds, 1.0)
        if polinux:
            io.out(f"stress: info: [1] successful run completed in {round(seconds)}s\n")
        return 0
    yield _INF


@_command("perl")
def _p_perl(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    """``perl -Mbignum=bpi -wle 'print bpi(N)'`` prints pi (N/200 s); other one-liners exit 0 at once."""
    text = " ".join(argv[1:])
    m = re.search(r"print\s+bpi\((\d+)\)", text)
    if m:
        n = int(m.group(1))
        yield sh.run.now + n / 200
        io.out(_pi(n) + "\n")
        return 0
    if not any(a.startswith("-") and "e" in a.lower() for a in argv[1:]):
        script = io.inp.read_all()
        if script is None:
            yield _INF
    m = re.search(r"print\s+\"([^\"$@]*)\"", text)
    if m:
        io.out(_interpret_escapes(m.group(1))[0] + ("\n" if "l" in "".join(argv[1:2]) else ""))
    return 0


@_command("python", "python3", "python2")
def _p_python(sh: _Shell, argv: list[str], io: _IO) -> Gen:
    args = argv[1:]
    if "-c" in args:
        source = args[args.index("-c") + 1] if args.index("-c") + 1 < len(args) else ""
        try:
            tree = ast.parse(source)
        except SyntaxError:
            io.err("  File \"<string>\", line 1\nSyntaxError: invalid syntax\n")
            return 1
        if not _py_supported(tree):
            return (yield from sh.unknown(argv, io))
        return (yield from _PyRunner(sh, io).run(tree))
    if not args:
        if io.inp.read_all() is None:
            yield _INF
        return 0
    return (yield from sh.unknown(argv, io))


class _PyRunner:
    """Runs the safe ``python -c`` subset: env reads, prints, ``sys.exit``, ``time.sleep``, ifs and loops."""

    def __init__(self, sh: _Shell, io: _IO) -> None:
        self.sh = sh
        self.io = io
        self.names: dict[str, Any] = {}

    def run(self, tree: ast.Module) -> Gen:
        try:
            yield from self.block(tree.body)
        except _PyExit as e:
            code = e.code
            if code is None:
                return 0
            if isinstance(code, int) and not isinstance(code, bool):
                return code & 255
            self.io.err(f"{code}\n")
            return 1
        except (TypeError, ValueError, KeyError, ZeroDivisionError, NameError, IndexError, OverflowError) as err:
            self.io.err(f"Traceback (most recent call last):\n  File \"<string>\", line ?, in <module>\n"
                        f"{type(err).__name__}: {err}\n")
            return 1
        return 0

    def block(self, body: list[ast.stmt]) -> Gen:
        for stmt in body:
            yield from self.sh.step()
            yield from self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> Gen:
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)):
            return
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call) and _py_dotted(s.value.func) == "time.sleep":
                secs = float(self.expr(s.value.args[0]))
                yield self.sh.run.now + max(0.0, secs)
                return
            self.expr(s.value)
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                if not isinstance(target, ast.Name):
                    raise TypeError("unsupported assignment")
                self.names[target.id] = value
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise TypeError("unsupported assignment")
            self.names[s.target.id] = self.binop(s.op, self.names[s.target.id], self.expr(s.value))
        elif isinstance(s, ast.If):
            yield from self.block(s.body if self.expr(s.test) else s.orelse)
        elif isinstance(s, ast.While):
            while self.expr(s.test):
                yield from self.sh.step()
                try:
                    yield from self.block(s.body)
                except _LoopCtl as ctl:
                    if ctl.kind == "break":
                        break
        elif isinstance(s, ast.For):
            if not isinstance(s.target, ast.Name):
                raise TypeError("unsupported loop target")
            for item in list(self.expr(s.iter))[:100_000]:
                self.names[s.target.id] = item
                try:
                    yield from self.block(s.body)
                except _LoopCtl as ctl:
                    if ctl.kind == "break":
                        break
        elif isinstance(s, (ast.Break, ast.Continue)):
            raise _LoopCtl("break" if isinstance(s, ast.Break) else "continue", 1)

    def binop(self, op: ast.operator, a: Any, b: Any) -> Any:
        if isinstance(op, ast.Mult) and (isinstance(a, str) or isinstance(b, str)):
            if (b if isinstance(a, str) else a) > 100_000:
                raise ValueError("string too long")
        return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                ast.Div: lambda: a / b, ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}[type(op)]()

    def expr(self, e: ast.expr) -> Any:
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in self.names:
                return self.names[e.id]
            if e.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[e.id]
            raise NameError(f"name '{e.id}' is not defined")
        if isinstance(e, ast.BinOp):
            return self.binop(e.op, self.expr(e.left), self.expr(e.right))
        if isinstance(e, ast.UnaryOp):
            v = self.expr(e.operand)
            return {ast.USub: lambda: -v, ast.UAdd: lambda: +v, ast.Not: lambda: not v}[type(e.op)]()
        if isinstance(e, ast.BoolOp):
            result: Any = None
            for value in e.values:
                result = self.expr(value)
                if isinstance(e.op, ast.And) != bool(result):
                    return result
            return result
        if isinstance(e, ast.Compare):
            left = self.expr(e.left)
            for op, comp in zip(e.ops, e.comparators):
                right = self.expr(comp)
                ok = {ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right,
                      ast.Lt: lambda: left < right, ast.LtE: lambda: left <= right,
                      ast.Gt: lambda: left > right, ast.GtE: lambda: left >= right,
                      ast.In: lambda: left in right, ast.NotIn: lambda: left not in right,
                      ast.Is: lambda: left is right, ast.IsNot: lambda: left is not right}[type(op)]()
                if not ok:
                    return False
                left = right
            return True
        if isinstance(e, ast.JoinedStr):
            return "".join(str(self.expr(v.value)) if isinstance(v, ast.FormattedValue) else str(self.expr(v))
                           for v in e.values)
        if isinstance(e, (ast.List, ast.Tuple)):
            return [self.expr(v) for v in e.elts]
        if isinstance(e, ast.Subscript):
            if _py_dotted(e.value) == "os.environ":
                return self.env()[self.expr(e.slice)]
            return self.expr(e.value)[self.expr(e.slice)]
        if isinstance(e, ast.Call):
            return self.call(e)
        raise TypeError(f"unsupported expression {type(e).__name__}")

    def env(self) -> dict[str, str]:
        return {k: v for k, v in self.sh.vars.items() if isinstance(v, str)}

    def call(self, e: ast.Call) -> Any:
        name = _py_dotted(e.func)
        args = [self.expr(a) for a in e.args]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords if k.arg}
        if name == "print":
            sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
            self.io.out(str(sep).join(str(a) for a in args) + str(end))
            return None
        if name in ("sys.exit", "exit"):
            raise _PyExit(args[0] if args else None)
        if name in ("os.environ.get", "os.getenv"):
            return self.env().get(args[0], args[1] if len(args) > 1 else None)
        if name == "range":
            return range(*[int(a) for a in args])
        builtins: dict[str, Callable[..., Any]] = {"int": int, "str": str, "float": float, "len": len, "bool": bool,
                                                   "abs": abs, "min": min, "max": max}
        if name in builtins:
            return builtins[name](*args)
        raise TypeError(f"unsupported call {name}")


# --------------------------------------------------------------------------- behaviour scripts

_PROBE_KINDS = {"ready": "readiness", "live": "liveness", "started": "startup"}


@attrs.frozen
class _Directive:
    line: int
    verb: str
    args: tuple[Any, ...]
    after: float = 0.0
    duration: float | None = None


def _parse_behaviour(text: str, where: str) -> tuple[_Directive, ...]:
    """Parse a behaviour script (see docs/container-behaviour.md). Raises ValueError naming ``where`` and the line."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        def fail(problem: str) -> ValueError:
            return ValueError(f"{where} line {lineno}: {problem}: {line.strip()!r}")

        try:
            words = shlex.split(line, comments=True)
        except ValueError as err:
            raise fail(str(err)) from None
        if not words:
            continue
        verb, args = words[0], words[1:]
        after, duration = 0.0, None

        def take(keyword: str) -> float | None:
            if keyword in args:
                i = args.index(keyword)
                if i + 1 >= len(args):
                    raise fail(f"{keyword!r} needs a duration")
                try:
                    value = parse_duration(args[i + 1], allow_ms=True)
                except ValueError:
                    raise fail(f"invalid duration {args[i + 1]!r}") from None
                del args[i:i + 2]
                return value
            return None

        if verb not in ("log", "sleep", "forever", "exec"):
            after = take("after") or 0.0
        if verb in _PROBE_KINDS or verb == "serve":
            duration = take("for")
        if verb == "log":
            parsed: tuple[Any, ...] = (" ".join(args),)
        elif verb == "sleep":
            if len(args) != 1:
                raise fail("'sleep' takes one duration")
            try:
                parsed = (parse_duration(args[0], allow_ms=True),)
            except ValueError:
                raise fail(f"invalid duration {args[0]!r}") from None
        elif verb in _PROBE_KINDS:
            if len(args) != 1 or args[0] not in ("true", "false"):
                raise fail(f"{verb!r} takes true or false")
            parsed = (args[0] == "true",)
        elif verb in ("memory", "cpu"):
            if len(args) != 1:
                raise fail(f"{verb!r} takes one quantity")
            try:
                parsed = (bytes_value(args[0]) if verb == "memory" else cpu_millis(args[0]),)
            except (ValueError, TypeError):
                raise fail(f"invalid quantity {args[0]!r}") from None
        elif verb == "exit":
            if len(args) != 1 or not args[0].isdigit():
                raise fail("'exit' takes an exit code (0-255)")
            parsed = (int(args[0]) & 255,)
        elif verb == "serve":
            protocols = tuple(args) or ("http", "tcp", "grpc")
            bad = [p for p in protocols if p not in ("http", "tcp", "grpc", "none")]
            if bad:
                raise fail(f"unknown protocol {bad[0]!r} (http, tcp, grpc or none)")
            parsed = protocols
        elif verb in ("touch", "rm"):
            if not args:
                raise fail(f"{verb!r} needs a path")
            parsed = tuple(args)
        elif verb == "sigterm":
            if args == ["ignore"]:
                parsed = (None,)
            elif len(args) == 2 and args[0] == "exit" and args[1].isdigit():
                parsed = (int(args[1]) & 255,)
            else:
                raise fail("'sigterm' takes 'ignore' or 'exit CODE'")
        elif verb == "exec":
            parsed = tuple(args)
        elif verb == "forever":
            if args:
                raise fail("'forever' takes no arguments")
            parsed = ()
        else:
            raise fail(f"unknown directive {verb!r}")
        out.append(_Directive(lineno, verb, parsed, after, duration))
    return tuple(out)


def _script_main(program: Program, run: Run) -> Gen:
    sh = _Shell(run)
    run.set_usage(cpu=0, memory=1 * _MiB)
    run.term_action = (0, 0.0)
    for d in program.script or ():
        if d.verb == "log":
            run.write("stdout", d.args[0] + "\n")
        elif d.verb == "sleep":
            yield run.now + d.args[0]
        elif d.verb == "forever":
            yield _INF
        elif d.verb == "exec":
            argv = list(d.args) or list(program.argv)
            status = yield from _top(sh, argv, run)
            return status
        elif d.after and d.verb != "sigterm":  # for sigterm, "after" is the shutdown delay
            run.call_at(run.now + d.after, lambda d=d: _apply(run, d))
        else:
            _apply(run, d)
    yield _INF


def _apply(run: Run, d: _Directive) -> None:
    """Apply one (possibly delayed) behaviour directive at ``run.now``."""
    if d.verb in _PROBE_KINDS:
        run.set_override(_PROBE_KINDS[d.verb], d.args[0])
        if d.duration is not None:
            run.call_at(run.now + d.duration, lambda: run.set_override(_PROBE_KINDS[d.verb], not d.args[0]))
    elif d.verb == "memory":
        run.set_usage(memory=d.args[0])
    elif d.verb == "cpu":
        run.set_usage(cpu=d.args[0])
    elif d.verb == "exit":
        run.exit(d.args[0])
    elif d.verb == "serve":
        protocols = frozenset(p for p in d.args if p != "none")
        run.serving, run.protocols = bool(protocols), protocols or run.protocols
        if d.duration is not None:
            run.call_at(run.now + d.duration, lambda: setattr(run, "serving", not protocols))
    elif d.verb == "touch":
        for p in d.args:
            run.fs.setdefault(p, "")
    elif d.verb == "rm":
        for p in d.args:
            run.fs.pop(p, None)
    elif d.verb == "sigterm":
        run.term_action = None if d.args[0] is None else (d.args[0], d.after)


# --------------------------------------------------------------------------- programs and runs


def _top(sh: _Shell, argv: list[str], run: Run) -> Gen:
    if run.program.stdin and run.stdin_feed is not None:
        run.stdin_reader = _FeedInput(run, run.stdin_feed)
        inp: _Input = run.stdin_reader
    else:
        inp = _Input(None if run.program.stdin else "")
    io = _IO(run.stdout_writer(), run.stderr_writer(), inp)
    try:
        return (yield from sh.exec_argv(argv, io, tail=True))
    except _Exit as e:
        return e.code
    except _LoopCtl:
        return 0


def _command_main(program: Program, run: Run) -> Gen:
    run.set_usage(cpu=0, memory=1 * _MiB)
    if not program.argv:
        return (yield from _Shell(run).serve())
    return (yield from _top(_Shell(run), list(program.argv), run))


@attrs.frozen(eq=False)
class Mount:
    """A volume mounted into a container's file system, as a bind mount.

    The files under ``path`` (the ``mountPath``) are the entries of ``store``
    under ``prefix``: container path ``path + rest`` is ``store[prefix + rest]``.
    ``store`` maps absolute-looking paths (``/data.txt``, ``/etc/machine-id``) to
    file contents and is shared, not copied: what one container writes there,
    every container mounting the same store sees at once (an ``emptyDir``
    shared by init and regular containers, a ``hostPath`` on the node). A mount
    whose ``store`` holds exactly ``prefix`` is a single file (``hostPath`` of
    type ``File``, a ``subPath`` naming a key); any other mount is a directory.
    ``read_only``: writes fail with ``Read-only file system`` (a ``volumeMount`` with
    ``readOnly: true``; ConfigMap, Secret, downward API and projected volumes, which the
    kubelet always mounts read-only: both marked by :func:`k8semu.node.volumes.container_mounts`).
    """

    path: str
    store: MutableMapping[str, str]
    prefix: str = ""
    read_only: bool = False


class _MountedFS(MutableMapping[str, str]):
    """A container's file system: its own files plus its mounts (the deepest mount wins)."""

    def __init__(self, own: dict[str, str], mounts: Sequence[Mount]) -> None:
        self._own = own
        self._mounts = sorted(mounts, key=lambda m: -len(m.path))  # stable: same depth keeps spec order

    def _route(self, path: str) -> tuple[MutableMapping[str, str], str]:
        for m in self._mounts:
            if path == m.path:
                return m.store, m.prefix
            if path.startswith(m.path + "/"):
                return m.store, m.prefix + path[len(m.path):]
        return self._own, path

    def __getitem__(self, path: str) -> str:
        store, key = self._route(path)
        return store[key]

    def __setitem__(self, path: str, text: str) -> None:
        store, key = self._route(path)
        store[key] = text

    def __delitem__(self, path: str) -> None:
        store, key = self._route(path)
        del store[key]

    def _paths(self) -> list[str]:
        out = [k for k in self._own if self._route(k)[0] is self._own]
        for m in self._mounts:
            for key in list(m.store):
                if key == m.prefix:
                    full = m.path
                elif key.startswith(m.prefix + "/") or (not m.prefix and key.startswith("/")):
                    full = m.path + key[len(m.prefix):]
                else:
                    continue
                store, k = self._route(full)
                if store is m.store and k == key:
                    out.append(full)
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths())

    def __len__(self) -> int:
        return len(self._paths())


@attrs.frozen(eq=False)
class Program:
    """A container's behaviour, ready to :meth:`start`. Built by :func:`build_program`; immutable.

    Attributes:
        container_name: ``container["name"]``.
        image: the image as written.
        argv: the command line the runtime would execute (after ``$(VAR)``
            expansion); empty when unknown (unknown image, no command).
        source: ``"annotation"``, ``"command"`` (the spec's command/args) or ``"image"``
            (the image's ENTRYPOINT/CMD from :data:`KNOWN_IMAGES`, or unknown).
        script: parsed behaviour-script directives (``source == "annotation"``) or None.
        env: environment (see :func:`container_env`).
        files: initial in-memory files (path -> text).
        mounts: the container's volume mounts (:class:`Mount`), shared with other containers.
        declared_ports: ``containerPort`` values; ``port_names`` maps port names to them.
        memory_limit / cpu_limit: ``resources.limits`` in bytes / millicores, or None.
        stdin: ``container["stdin"]`` (an open stdin keeps ``sh``/``cat`` waiting).
        image_main / image_defaults: the known image's main program and defaults.
        tree: the image's base file system (:func:`image_tree`), shared by its containers.
        post_start: the ``lifecycle.postStart.exec.command`` hook, or None (see :class:`Run`).
        read_only_root: ``securityContext.readOnlyRootFilesystem``: writes outside the mounts
            (and ``/dev``) fail with ``Read-only file system``.
        mount_dirs: the ``volumeMounts`` paths (without ``subPath``): directories the runtime
            makes, even when ``mounts`` does not hold their volume.
    """

    container_name: str
    image: str
    argv: tuple[str, ...]
    source: str
    script: tuple[_Directive, ...] | None
    env: Mapping[str, str]
    files: Mapping[str, str]
    declared_ports: frozenset[int]
    port_names: Mapping[str, int]
    memory_limit: int | None
    cpu_limit: int | None
    stdin: bool
    image_main: str | None
    image_defaults: KnownImage | None
    mounts: tuple[Mount, ...] = ()
    tree: ImageTree = _GENERIC_TREE
    post_start: tuple[str, ...] | None = None
    read_only_root: bool = False
    mount_dirs: frozenset[str] = frozenset()

    def start(self, now: float, *, wall_clock: Callable[[float], datetime] | None = None,
              stdin: StdinFeed | None = None) -> Run:
        """Start the program at virtual time ``now``; see :class:`Run`.

        ``wall_clock`` maps virtual seconds to an aware UTC datetime for ``date``
        (default: ``DEFAULT_EPOCH + now``). ``stdin``: what attached clients write to the
        container's stdin (``stdin: true`` only; without it an open stdin never sends data).
        """
        return Run(self, now, wall_clock or (lambda t: DEFAULT_EPOCH + timedelta(seconds=t)), stdin=stdin)


def _limit(container: Mapping[str, Any], resource: str) -> int | None:
    value = ((container.get("resources") or {}).get("limits") or {}).get(resource)
    if value is None:
        return None
    try:
        return bytes_value(value) if resource == "memory" else cpu_millis(value)
    except (ValueError, TypeError):
        return None


def build_program(
    container: Mapping[str, Any],
    pod_annotations: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    files: Mapping[str, str] | None = None,
    mounts: Sequence[Mount] = (),
) -> Program:
    """Derive a container's behaviour program from its spec (wire form) and the pod's annotations.

    Args:
        container: a ``spec.containers[]``/``initContainers[]`` item (``name``,
            ``image``, ``command``, ``args``, ``env``, ``ports``, ``resources``, ``stdin``).
        pod_annotations: ``metadata.annotations``; ``k8semu.io/behaviour.<name>`` or
            ``k8semu.io/behaviour`` hold a behaviour script.
        env: the kubelet's resolved environment (wins over ``container["env"]``).
        files: initial files of the container's in-memory file system (e.g.
            ConfigMap volume keys, ``/etc/hosts``), path -> text.
        mounts: volumes mounted into the container (:class:`Mount`; the kubelet's
            ``emptyDir``, ``hostPath``, ConfigMap, Secret and downward API volumes). Those at a
            ``volumeMounts[].mountPath`` with ``readOnly: true`` become read-only.

    Raises:
        ValueError: the behaviour script is invalid; the message names the
            container, the annotation and the line. The kubelet reports it as
            ``CreateContainerError`` with this message.
    """
    name = str(container.get("name") or "")
    image = str(container.get("image") or "")
    full_env = process_env(container, env)
    expand_env = full_env.kubelet_vars()  # the kubelet's $(VAR): not the runtime's variables
    try:
        info = normalize_image(image)
        known = KNOWN_IMAGES.get(info.base_name)
    except ValueError:
        known = None
    command = [expand_kube_vars(str(a), expand_env) for a in container.get("command") or []]
    args = [expand_kube_vars(str(a), expand_env) for a in container.get("args") or []]
    if command:
        argv, source = command + args, "command"
    elif args:
        source = "command"
        if known is not None:
            argv = list(known.entrypoint) + args
        elif args[0].rsplit("/", 1)[-1] in _COMMANDS:  # unknown image: assume no ENTRYPOINT
            argv = args
        else:
            argv = []
    else:
        argv, source = (list(known.entrypoint + known.cmd) if known else []), "image"
    ports: dict[str, int] = {}
    declared: set[int] = set()
    for p in container.get("ports") or []:
        if isinstance(p.get("containerPort"), int):
            declared.add(p["containerPort"])
            if p.get("name"):
                ports[str(p["name"])] = p["containerPort"]
    annotations = pod_annotations or {}
    key = f"{BEHAVIOUR_ANNOTATION}.{name}"
    if key not in annotations:
        key = BEHAVIOUR_ANNOTATION
    script = None
    if key in annotations:
        script = _parse_behaviour(str(annotations[key]),
                                  f'invalid behaviour for container "{name}" (annotation {key}):')
        source = "annotation"
    hook = ((container.get("lifecycle") or {}).get("postStart") or {}).get("exec") or {}
    post_start = tuple(str(a) for a in hook.get("command") or []) or None
    volume_mounts = [(posixpath.normpath(str(vm["mountPath"])), vm) for vm in container.get("volumeMounts") or []
                     if vm.get("mountPath")]
    return Program(
        container_name=name, image=image, argv=tuple(argv), source=source, script=script,
        env=full_env, files=dict(files or {}), declared_ports=frozenset(declared), port_names=ports,
        memory_limit=_limit(container, "memory"), cpu_limit=_limit(container, "cpu"),
        stdin=bool(container.get("stdin")), image_main=known.main if known else None, image_defaults=known,
        mounts=tuple(mounts), tree=image_tree(image), post_start=post_start,
        read_only_root=bool((container.get("securityContext") or {}).get("readOnlyRootFilesystem")),
        mount_dirs=frozenset(path for path, vm in volume_mounts if not vm.get("subPath") and not vm.get("subPathExpr")),
    )


class Run:
    """One run (one container start) of a :class:`Program` in virtual time. Not thread-safe, deterministic.

    Drive it with :meth:`next_event_time` and :meth:`advance`; ask :meth:`probe`;
    stop it with :meth:`terminate` (SIGTERM) and :meth:`kill` (SIGKILL). A ``postStart``
    exec hook starts with the program, as a second task; its (status, output, end time)
    appear in ``post_start_result`` when it ends.
    Attributes of interest: ``exited`` (the :class:`Exited` effect or None),
    ``serving`` (a server-like program is listening), ``cpu``/``memory`` (current
    usage), ``fs`` (the in-memory file system; :attr:`files` is a copy).
    """

    def __init__(self, program: Program, now: float, wall_clock: Callable[[float], datetime], *,
                 stdin: StdinFeed | None = None) -> None:
        self.program = program
        #: the container's attached stdin (:class:`StdinFeed`), read by its main process
        self.stdin_feed = stdin
        self.stdin_reader: _FeedInput | None = None
        self._parked: Gen | None = None  # the main process, waiting for stdin that has not come
        #: called with (stream, text) for everything the container writes (``attach`` streams it)
        self.tap: Callable[[str, str], None] | None = None
        #: the cluster network as the container sees it, or None (not emulated: ``wget``, ``curl`` and
        #: ``nslookup`` succeed quietly). Set by whoever starts the run with cluster access (the
        #: kubelet and exec a :class:`k8semu.node.podnetwork.PodNetwork`, replays a
        #: :class:`~k8semu.node.podnetwork.PastNetwork`): ``resolve(fqdn, nameservers) -> [ip…]``
        #: (``[]``: no such name; raises ``TimeoutError`` when the query is dropped) and
        #: ``http(ip, port, method, target, host) -> HTTPAnswer | bytes`` (bytes: what a server that
        #: does not speak HTTP sends back), raising ``ConnectionRefusedError`` or ``TimeoutError``.
        #: Its ``pod`` (the pod's object) and ``api`` (to list the node's pods) tell ``ps`` which
        #: processes share the container's PID namespace (:func:`_pid_namespace`).
        self.network: Any = None
        #: (path, text; None for a directory) of what ``tar x`` wrote, in order (``kubectl cp``)
        self.extracted: list[tuple[str, str | None]] = []
        self.now = now
        self.started_at = now
        self.wall_clock = wall_clock
        own = {"/etc/hosts": _DEFAULT_HOSTS} | dict(program.files)
        self.tree = program.tree
        layered: MutableMapping[str, str] = _LayeredFS(self.tree.files, own) if self.tree.files else own
        self.fs: MutableMapping[str, str] = _MountedFS(layered, program.mounts) if program.mounts else layered
        self.dirs: set[str] = {m.path for m in program.mounts if m.prefix not in m.store}
        self.dirs.update(program.mount_dirs.difference(m.path for m in program.mounts))
        self.removed_dirs: set[str] | None = None  # base-tree directories removed (rm -r), with what is under them
        #: when the container's processes last wrote a path (virtual seconds; ``ls -l``): the others
        #: show the container's start
        self.mtimes: dict[str, float] = {}
        #: symbolic links the container's processes made (``ln -s``): path -> target as written
        self.links: dict[str, str] = {}
        #: the postStart hook's (exit status, combined output, end time) once it has ended
        self.post_start_result: tuple[int, str, float] | None = None
        self.entrypoint_ran = False  # the image's docker-entrypoint.sh configured the server (nginx PIDs)
        self.requests = 0  # connections served (nginx's connection counter)
        self.nginx_worker = 7  # PID of nginx's first worker (see _nginx_notices)
        self.probe_output = ""  # the last exec probe's combined output (see probe())
        self.exported: set[str] = set()
        #: processes the run's shells started that are running (:class:`_Proc`), in the order they
        #: started; the namespace's next PID once numbered (:meth:`number_pids`), else None and the
        #: count of PIDs taken so far; what the first process ``exec``'d last (None: its command line)
        self.procs: list[_Proc] = []
        self.pid_next: int | None = None
        self._pids_taken = 0
        self.main_argv: list[str] | None = None
        #: PIDs of other processes of the namespace that ended (nginx workers replaced by a reload)
        self.gone_pids: set[int] = set()
        self.first_pid: int | None = None  # the PID of the container's first process, once known
        self._rng: random.Random | None = None  # see rng: 2.5 KB of state, rarely needed
        self.serving = False
        self.protocols: frozenset[str] = frozenset({"http", "tcp", "grpc"})
        self.http_fail_at: float | None = None
        self.term_action: tuple[int, float] | None = None  # (exit code, delay) on SIGTERM; None: ignored
        self.cpu = 0
        self.memory = 0
        self.exited: Exited | None = None
        self.steps = 0
        self._overrides: dict[str, bool] = {}
        self._effects: list[Effect] = []
        self._heap: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self._partial = {"stdout": "", "stderr": ""}
        main = _script_main(program, self) if program.script is not None else _command_main(program, self)
        self._push(now, "main", main)
        if program.post_start:
            self._push(now, "hook", _post_start_main(program.post_start, self))

    # ---------------------------------------------------------------- public API

    @property
    def rng(self) -> random.Random:
        """The container's ``$RANDOM`` source, seeded by its name and image (made on first use)."""
        if self._rng is None:
            self._rng = random.Random(_digest_int(f"{self.program.container_name}\0{self.program.image}"))
        return self._rng

    def next_event_time(self) -> float | None:
        """Virtual time of the next thing the program does, or None (runs until stopped, or exited)."""
        self._unpark()
        if self.exited is not None or not self._heap:
            return None
        return self._heap[0][0]

    def _unpark(self) -> None:
        """The main process waits for stdin: schedule it when input has arrived meanwhile."""
        gen, reader = self._parked, self.stdin_reader
        if gen is None or reader is None or self.exited is not None:
            return
        t = reader.wait_time()
        if t < _INF:
            self._parked = None
            self._push(max(t, self.now), "main", gen)

    def advance(self, until: float) -> list[Effect]:
        """Run everything due at or before ``until``; return the effects, in time order."""
        self._unpark()
        while self._heap and self.exited is None and self._heap[0][0] <= until:
            t, _, kind, payload = heapq.heappop(self._heap)
            if t > self.now:
                self.now = t
                self.steps = 0
            try:
                if kind == "timer":
                    payload()
                else:
                    self._resume(kind, payload)
            except _Killed:
                pass
        if self.exited is None and until > self.now:
            self.now = until
            self.steps = 0
        effects, self._effects = self._effects, []
        return effects

    def probe(self, kind: str, probe_spec: Mapping[str, Any], now: float) -> bool:
        """Answer a ``readiness``/``liveness``/``startup`` probe at ``now`` (call :meth:`advance` first).

        Scripted overrides win. ``exec``: the command runs in this container's
        file system (unknown programs succeed); waiting longer than
        ``timeoutSeconds`` (default 1) fails it. ``httpGet``/``tcpSocket``/``grpc``:
        pass while a server-like program runs and the port (named ports
        resolved, as the kubelet does) is declared, or none is declared.
        ``httpGet`` needs ``serve http``, ``grpc`` needs ``serve grpc``.
        A container that has exited fails every probe.

        :attr:`probe_output` then holds what an ``exec`` probe's command wrote (stdout, then
        stderr, at most 10 KiB), which the kubelet puts into its ``Unhealthy`` event
        (``Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory``).
        """
        if kind not in ("readiness", "liveness", "startup"):
            raise ValueError(f"unknown probe kind {kind!r}")
        self.probe_output = ""
        if self.exited is not None or now < self.started_at:
            return False
        if kind in self._overrides:
            return self._overrides[kind]
        if "exec" in probe_spec:
            return self._exec_probe(probe_spec, now)
        for handler, protocol in (("httpGet", "http"), ("tcpSocket", "tcp"), ("grpc", "grpc")):
            if handler in probe_spec:
                port = self._port((probe_spec.get(handler) or {}).get("port"))
                if port is None or not self.serving:
                    return False
                if self.program.declared_ports and port not in self.program.declared_ports:
                    return False
                if protocol != "tcp" and protocol not in self.protocols:
                    return False
                if protocol == "http" and self.http_fail_at is not None and now >= self.http_fail_at:
                    return False
                return True
        return False

    def terminate(self, now: float) -> list[Effect]:
        """Deliver SIGTERM at ``now``. Servers and scripts exit (code 0); ``sleep``, ``tail -f`` and
        shells run as PID 1 ignore it, so the kubelet's SIGKILL (:meth:`kill`) after the grace period ends them."""
        effects = self.advance(now)
        if self.exited is None and self.term_action is not None:
            code, delay = self.term_action
            if delay:
                self.call_at(now + delay, lambda: self.exit(code))
            else:
                try:
                    self.exit(code)
                except _Killed:
                    pass
                effects += self._take()
        return effects

    def kill(self, now: float) -> list[Effect]:
        """SIGKILL at ``now``: exit code 137, reason ``Error``."""
        effects = self.advance(now)
        if self.exited is None:
            try:
                self.exit(137)
            except _Killed:
                pass
            effects += self._take()
        return effects

    @property
    def files(self) -> dict[str, str]:
        """A copy of the container's in-memory files (e.g. to seed the next container sharing a volume)."""
        return dict(self.fs)

    def _base_dir_visible(self, path: str) -> bool:
        removed = self.removed_dirs
        if removed and (path in removed or any(p in removed for p in _parents(path))):
            return False
        return not any(path.startswith(m.path + "/") for m in self.program.mounts)  # hidden by a mount

    def is_dir(self, path: str) -> bool:
        """Whether the absolute ``path`` is a directory: of the image (unless removed or under a
        mount), made by the container (``mkdir``), a mount point, or holding files."""
        if path in self.dirs or path == "/":
            return True
        if path in self.tree.dirs and self._base_dir_visible(path):
            return True
        prefix = path.rstrip("/") + "/"
        return any(k.startswith(prefix) for k in self.fs)

    def visible_dirs(self) -> Iterator[str]:
        """Every directory the container sees (its own, then the image's), for listings."""
        yield from self.dirs
        for d in self.tree.dirs:
            if d not in self.dirs and self._base_dir_visible(d):
                yield d

    def children(self, path: str) -> set[str]:
        """The names in the directory ``path`` (files, directories and symbolic links)."""
        prefix = path.rstrip("/") + "/"
        cut = len(prefix)
        return {k[cut:].split("/", 1)[0] for k in [*self.fs, *self.visible_dirs(), *self.links]
                if k.startswith(prefix) and len(k) > cut}

    def resolve(self, path: str) -> str:
        """The absolute ``path`` with the symbolic links (:attr:`links`) it names followed (at most 8)."""
        for _ in range(8):
            target = self.links.get(path)
            if target is None:
                break
            path = posixpath.normpath(target if target.startswith("/") else posixpath.dirname(path) + "/" + target)
        return path

    def read_only(self, path: str) -> bool:
        """Whether the absolute ``path`` is on a read-only file system: a read-only :class:`Mount`
        (the deepest holding it), else the root file system when ``readOnlyRootFilesystem`` is set
        (``/dev``, a tmpfs of the runtime's, stays writable)."""
        mounts = [m for m in self.program.mounts if path == m.path or path.startswith(m.path.rstrip("/") + "/")]
        if mounts:
            return max(mounts, key=lambda m: len(m.path)).read_only
        return self.program.read_only_root and not path.startswith("/dev/")

    def remove_dir(self, path: str) -> None:
        """``rm -r`` of a directory: its own and the image's directories at and under ``path`` go."""
        prefix = path.rstrip("/") + "/"
        self.dirs.difference_update([d for d in self.dirs if d == path or d.startswith(prefix)])
        if path in self.tree.dirs:
            if self.removed_dirs is None:
                self.removed_dirs = set()
            self.removed_dirs.add(path)

    # ---------------------------------------------------------------- used by programs

    def write(self, stream: str, text: str) -> None:
        if self.tap is not None:
            self.tap(stream, text)
        buf = self._partial[stream] + text
        *lines, rest = buf.split("\n")
        for line in lines:
            self._effects.append(LogLine(self.now, line, stream))
        self._partial[stream] = rest

    def stdout_writer(self) -> Callable[[str], None]:
        return lambda text: self.write("stdout", text)

    def stderr_writer(self) -> Callable[[str], None]:
        return lambda text: self.write("stderr", text)

    def set_usage(self, cpu: int | None = None, memory: int | None = None) -> None:
        """Change CPU (millicores, capped at the limit) and/or memory (bytes); above ``limits.memory`` -> OOMKilled."""
        if cpu is not None:
            limit = self.program.cpu_limit
            cpu = min(cpu, limit) if limit else cpu
        new = (self.cpu if cpu is None else cpu, self.memory if memory is None else memory)
        if new != (self.cpu, self.memory):
            self.cpu, self.memory = new
            last = self._effects[-1] if self._effects else None
            if isinstance(last, UsageChanged) and last.t == self.now:
                self._effects.pop()  # one usage report per instant
            self._effects.append(UsageChanged(self.now, self.cpu, self.memory))
        limit = self.program.memory_limit
        if limit is not None and self.memory > limit:
            self.exit(137, "OOMKilled")

    def set_override(self, kind: str, ok: bool) -> None:
        self._overrides[kind] = ok
        cls = {"readiness": ReadinessChanged, "liveness": LivenessChanged, "startup": StartupChanged}[kind]
        self._effects.append(cls(self.now, ok))

    def call_at(self, t: float, fn: Callable[[], None]) -> None:
        self._push(t, "timer", fn)

    def spawn(self, gen: Gen) -> None:
        """Start a background job (``cmd &``) at the current instant."""
        self._push(self.now, "job", gen)

    def fork(self, cmd: str, uid: int, *, gap: int = 1, owner: tuple[str, str] | None = None,
             parent: _Proc | None | bool = False) -> _Proc:
        """A new process of the container's namespace (see :class:`_Proc`). ``gap``: the PIDs it
        takes — runc's ``init`` starts an exec'd process, and its Go runtime's threads take the
        next PIDs (:data:`_EXEC_GAP`)."""
        proc = _Proc(uid, cmd, owner, parent)
        if self.pid_next is None:
            proc.ordinal = self._pids_taken
            self._pids_taken += gap
        else:
            proc.pid = self.pid_next
            self.pid_next += gap
        self.procs.append(proc)
        return proc

    def reap(self, proc: _Proc | None) -> None:
        """``proc`` has ended."""
        if proc is not None:
            for i, p in enumerate(self.procs):
                if p is proc:
                    del self.procs[i]
                    break

    def number_pids(self, base: int) -> None:
        """Give the processes started so far their PIDs: the first took ``base`` (PIDs are numbered
        when something first shows one: ``ps``, ``$$``, ``$!``, ``kill``)."""
        if self.pid_next is None:
            for p in self.procs:
                if p.pid is None:
                    p.pid = base + p.ordinal
            self.pid_next = base + self._pids_taken

    def stop_job(self, proc: _Proc) -> None:
        """A background job killed by a signal: its task ends."""
        gen = proc.job
        self.reap(proc)
        if gen is None:
            return
        kept = [e for e in self._heap if e[3] is not gen]
        if len(kept) != len(self._heap):
            self._heap = kept
            heapq.heapify(self._heap)
        gen.close()

    def exit(self, code: int, reason: str | None = None) -> None:
        """End the container now; raises ``_Killed`` to unwind the running program."""
        if self.exited is not None:
            raise _Killed
        for stream in ("stdout", "stderr"):
            if self._partial[stream]:
                self._effects.append(LogLine(self.now, self._partial[stream], stream))
                self._partial[stream] = ""
        self.exited = Exited(self.now, code, reason or ("Completed" if code == 0 else "Error"))
        self._effects.append(self.exited)
        self.serving = False
        for _, _, kind, payload in self._heap:
            if kind != "timer":
                payload.close()
        self._heap.clear()
        if self._parked is not None:
            self._parked.close()
            self._parked = None
        raise _Killed

    # ---------------------------------------------------------------- internals

    def _take(self) -> list[Effect]:
        effects, self._effects = self._effects, []
        return effects

    def _push(self, t: float, kind: str, payload: Any) -> None:
        if t == _INF:
            return
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, payload))

    def _resume(self, kind: str, gen: Gen) -> None:
        try:
            t = next(gen)
        except StopIteration as stop:
            if kind == "main":
                self.exit(int(stop.value or 0) & 255)
            return
        except _Exit as e:
            if kind == "main":
                self.exit(e.code)
            return
        if t == _INF and kind == "main" and self.stdin_reader is not None and self.stdin_reader.blocked:
            self._parked = gen  # until input arrives (_unpark)
            return
        self._push(max(t, self.now), kind, gen)

    def _port(self, port: Any) -> int | None:
        if isinstance(port, int) and not isinstance(port, bool):
            return port
        if isinstance(port, str):
            if port in self.program.port_names:
                return self.program.port_names[port]
            if port.isdigit():
                return int(port)
        return None

    def _exec_probe(self, probe_spec: Mapping[str, Any], now: float) -> bool:
        env = self.program.env
        command = [expand_kube_vars(str(a), env.kubelet_vars() if isinstance(env, ResolvedEnv) else env)
                   for a in (probe_spec.get("exec") or {}).get("command") or []]
        if not command:
            return False
        timeout = float(probe_spec.get("timeoutSeconds") or 1)
        sh = _Shell(self, probe=True)
        out: list[str] = []
        err: list[str] = []
        io = _IO(out.append, err.append, _Input(""))
        gen = sh.exec_argv(command, io)
        saved_now = self.now
        ok = False
        try:
            while True:
                t = next(gen)
                if t > now + timeout:
                    gen.close()
                    out.clear()
                    err.clear()  # a timed-out exec returns no output
                    return False
                self.now = max(self.now, t)
        except StopIteration as stop:
            ok = (stop.value or 0) == 0
        except _Exit as e:
            ok = e.code == 0
        finally:
            self.now = saved_now
            # the runtime's ExecSync: stdout then stderr, at most 10 KiB (the kubelet's exec prober)
            self.probe_output = ("".join(out) + "".join(err))[:_PROBE_OUTPUT_MAX]
        return ok


# --------------------------------------------------------------------------- exec (kubectl exec)


class ExecNotFound(Exception):
    """The runtime cannot start an exec'd command: ``argv[0]`` is not a program of the container.

    ``str(e)`` is runc's reason, which containerd wraps into the exec's error: ``exec: "foo":
    executable file not found in $PATH`` for a name, ``exec: "/x": stat /x: no such file or
    directory`` for a path.
    """


#: Shells whose exec with stdin and no script is an interactive session (:class:`ShellSession`).
SHELLS = frozenset({"sh", "bash", "ash", "dash", "ksh"})


def _exec_shell(run: Run, env: Mapping[str, str] | None) -> _Shell:
    sh = _Shell(run)
    sh.in_exec = True
    if env:
        sh.vars.update(env)
        run.exported.update(env)
    return sh


def _timed(run: Run, gen: Gen) -> Gen:
    """``gen`` for a caller that resumes it at (or after) each time it yields; ``run.now`` follows."""
    try:
        t = next(gen)
        while True:
            yield t
            if _INF > t > run.now:
                run.now, run.steps = t, 0
            t = next(gen)
    except StopIteration as stop:
        return int(stop.value or 0) & 255
    except _Exit as e:
        return e.code
    except _LoopCtl:
        return 0
    except _Killed:  # the container ended meanwhile (e.g. OOM-killed by this process)
        return 137


def _exec_missing(sh: _Shell, name: str) -> str | None:
    """runc's reason when the runtime cannot start ``name`` in the container, else None."""
    base = name.rsplit("/", 1)[-1]
    known = base in _COMMANDS and _installed(sh, base)
    if "/" in name:
        if sh.read_file(name) is None and not known:
            return f'exec: "{name}": stat {name}: no such file or directory'
    elif not known:
        return f'exec: "{name}": executable file not found in $PATH'
    return None


def _post_start_main(argv: tuple[str, ...], run: Run) -> Gen:
    """The ``postStart`` exec hook: started by the kubelet right after the container (the runtime's
    ``ExecSync``), in the container's own file system and environment, so what it writes stays in
    the container (``echo Hello > /usr/share/message``). Its output is the kubelet's, not the
    container log's. Sets :attr:`Run.post_start_result` when it ends."""
    sh = _exec_shell(run, None)
    out: list[str] = []
    err: list[str] = []
    missing = _exec_missing(sh, argv[0]) if argv else "exec: no command"
    if missing is not None:
        run.post_start_result = (126, missing, run.now)
        return 126
    io = _IO(out.append, err.append, _Input(""))
    sh.proc = sh.root_proc = run.fork(" ".join(argv), _uid(run), gap=_EXEC_GAP)
    try:
        status = yield from sh.exec_argv(list(argv), io, tail=True)
    except _Exit as e:
        status = e.code
    except _LoopCtl:
        status = 0
    finally:
        run.reap(sh.proc)
    run.post_start_result = (int(status or 0) & 255, "".join(out) + "".join(err), run.now)
    return 0


def exec_command(run: Run, argv: Sequence[str], out: Callable[[str], None], err: Callable[[str], None],
                 stdin: Any = "", *, env: Mapping[str, str] | None = None) -> Gen:
    """Start ``argv`` in the running container ``run``, as the runtime's exec does (``kubectl exec``).

    The process sees the container's environment (plus ``env``, e.g. ``TERM`` for a terminal), its
    files (what it writes stays in ``run``) and the commands of :func:`build_program`'s interpreter.
    Unlike the container's own command line, a program this module does not know is missing: at the
    top it raises :class:`ExecNotFound`, inside a shell script it prints busybox's
    ``sh: foo: not found`` (status 127). A known program run in a way the model cannot interpret
    (``python manage.py migrate``) ends at once with 0, as in an ``exec`` probe; servers run until
    stopped. Background jobs (``cmd &``) do not run.

    Args:
        out, err: receive the process's stdout / stderr text as it is written.
        stdin: a str (all of the input), or an object with ``read_all()`` / ``read_line()`` that return
            None while more input may come (the command then waits: it yields ``math.inf``) and, for
            ``read_line``, False at the end.

    Returns:
        A generator like a program's: it yields the virtual time (seconds) it wants to be resumed at
        (``math.inf``: waiting for input, or forever) and returns the exit status (0-255; 137 when the
        container was killed meanwhile). ``run.now`` follows the times it is resumed at.

    Raises:
        ExecNotFound: ``argv[0]`` is neither a known program nor a file of the container.
    """
    sh = _exec_shell(run, env)
    missing = _exec_missing(sh, argv[0] if argv else "")
    if missing is not None:
        raise ExecNotFound(missing)
    io = _IO(out, err, _Input(stdin) if isinstance(stdin, str) else stdin)
    proc = sh.proc = sh.root_proc = run.fork(" ".join(argv), _uid(run), gap=_EXEC_GAP)
    return _timed(run, _reaping(run, proc, sh.exec_argv(list(argv), io, tail=True)))


def _reaping(run: Run, proc: _Proc, gen: Gen) -> Gen:
    """``gen``, then ``proc`` (the exec'd process) has ended."""
    try:
        return (yield from gen)
    finally:
        run.reap(proc)


class ShellSession:
    """An interactive shell started by exec (``kubectl exec -i POD -- sh``), fed one line at a time.

    Each complete command (:meth:`incomplete` says when a text needs more lines: an open ``if``,
    loop, quote or a trailing ``|``) runs in the same shell, so variables, ``cd`` and ``export``
    carry over; ``exit`` ends the session (:attr:`exit_code`). The commands read an empty stdin.
    Errors use busybox's wording (``sh: syntax error: …``).
    """

    def __init__(self, run: Run, shell: str, out: Callable[[str], None], err: Callable[[str], None], *,
                 env: Mapping[str, str] | None = None) -> None:
        self.run = run
        self.shell = shell.rsplit("/", 1)[-1]
        self._sh = _exec_shell(run, env)
        self._sh.arg0 = shell
        self._sh.session = True
        self._sh.proc = self._sh.root_proc = run.fork(shell, _uid(run), gap=_EXEC_GAP)
        self._io = _IO(out, err, _Input(""))
        #: The status ``exit`` ended the session with (137 when the container was killed); None while it runs.
        self.exit_code: int | None = None

    @staticmethod
    def wanted(argv: Sequence[str]) -> bool:
        """Whether exec of ``argv`` with stdin attached is an interactive shell: a shell run without
        ``-c`` and without a script file (options such as ``-i``, ``-l``, ``--login`` allowed)."""
        if not argv or argv[0].rsplit("/", 1)[-1] not in SHELLS:
            return False
        return all(a.startswith(("-", "+")) and "c" not in a.lstrip("-+") or a.startswith("--")
                   for a in argv[1:])

    @staticmethod
    def incomplete(text: str) -> bool:
        """Whether ``text`` stops in the middle of a command (the shell would prompt ``> `` for more)."""
        try:
            parse_shell(text)
        except ValueError as err:
            msg = str(err)
            return msg.startswith("unterminated") or "got ''" in msg or "'end of file'" in msg or \
                msg.endswith(("missing ')'", "missing ']]'"))
        return False

    @property
    def status(self) -> int:
        """``$?``: the status of the last command."""
        return self._sh.status

    def prompt(self, *, continuation: bool = False) -> str:
        """The prompt a terminal shows: ``PS2`` (``> ``) or ``PS1`` — busybox/ash ``/ # ``, Debian's bash
        ``root@HOSTNAME:/# `` (root, the working directory)."""
        if continuation:
            return "> "
        cwd = self._sh.logical(".")
        if self.shell == "bash":
            return f"root@{self._sh.hostname()}:{cwd}# "
        return f"{cwd} # "

    def run_text(self, text: str) -> Gen:
        """Run ``text`` (complete lines); a generator like :func:`exec_command`'s, returning the status."""
        return _timed(self.run, self._lines(text))

    def _lines(self, text: str) -> Gen:
        try:
            tree = parse_shell(text)
        except ValueError as err:
            self._io.err(f"{self.shell}: {err}\n")
            self._sh.status = 2
            return 2
        try:
            status = yield from self._sh.run_node(tree, self._io)
        except _Exit as e:
            self.exit_code = e.code
            self.run.reap(self._sh.proc)
            return e.code
        except _LoopCtl:
            status = 0
        except _Killed:
            self.exit_code = 137
            return 137
        self._sh.status = status
        return status


# --------------------------------------------------------------------------- answering HTTP (port-forward)

_NGINX_WELCOME = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
"""
_HTTPD_WORKS = "<html><body><h1>It works!</h1></body></html>\n"
_REASONS = {200: "OK", 403: "Forbidden", 404: "Not Found", 405: "Not Allowed", 500: "Internal Server Error"}
_CONTENT_TYPES = {".html": "text/html", ".htm": "text/html", ".txt": "text/plain", ".css": "text/css",
                  ".js": "application/javascript", ".json": "application/json", ".xml": "text/xml",
                  ".png": "image/png", ".jpg": "image/jpeg", ".svg": "image/svg+xml"}


def _nginx_error_page(status: int, server_header: str) -> str:
    title = f"{status} {_REASONS[status]}"
    return (f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{title}</h1></center>\r\n<hr><center>{server_header}</center>\r\n"
            f"</body>\r\n</html>\r\n")


def _nginx_serve(run: Run, path: str, server_header: str) -> tuple[int, str, str]:
    """(status, content type, body) of nginx's default server for ``path``: the files of its html
    root in the container (the welcome page when the image's tree has no html root)."""
    if not run.is_dir(_NGINX_HTML):  # nginx from an image whose files the model does not know
        if path in ("/", "/index.html"):
            return 200, "text/html", _NGINX_WELCOME
        return 404, "text/html", _nginx_error_page(404, server_header)
    full = _NGINX_HTML + path.rstrip("/") if path != "/" else _NGINX_HTML
    if path.endswith("/") or run.is_dir(full):
        index = run.fs.get(full + "/index.html")
        if index is not None:
            return 200, "text/html", index
        status = 403 if run.is_dir(full) else 404
        return status, "text/html", _nginx_error_page(status, server_header)
    text = run.fs.get(full)
    if text is None:
        return 404, "text/html", _nginx_error_page(404, server_header)
    ext = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    return 200, _CONTENT_TYPES.get(ext.lower(), "application/octet-stream"), text


def _nginx_access_log(run: Run, now: float, client: str, method: str, target: str, status: int, sent: int,
                      user_agent: str | None, host: str, path: str) -> None:
    """nginx's log lines for one served request: the ``main`` access-log format on stdout and, for
    a file that is not there, the ``open() … failed`` error on stderr."""
    when = run.wall_clock(now)
    run.requests += 1
    if status == 404 and run.is_dir(_NGINX_HTML):
        pid = run.nginx_worker
        run.write("stderr", f'{when:%Y/%m/%d %H:%M:%S} [error] {pid}#{pid}: *{run.requests} open() '
                            f'"{_NGINX_HTML}{path}" failed (2: No such file or directory), client: {client}, '
                            f'server: localhost, request: "{method} {target} HTTP/1.1", host: "{host}"\n')
    run.write("stdout", f'{client} - - [{when:%d/%b/%Y:%H:%M:%S} +0000] "{method} {target} HTTP/1.1" {status} '
                        f'{sent} "-" "{user_agent or "-"}" "-"\n')


@attrs.frozen
class HTTPAnswer:
    """One HTTP/1.1 response of an emulated container: ``status`` and ``reason``, ``headers``
    (name, value) pairs without framing headers except ``Content-Length``, and ``body`` (already
    empty for ``HEAD``)."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


def _web_server(program: Program) -> str | None:
    """``"nginx"`` / ``"httpd"`` when the container runs that image's web server, else None."""
    prog = program.argv[0].rsplit("/", 1)[-1] if program.argv else ""
    try:
        base = normalize_image(program.image).base_name
    except ValueError:
        base = ""
    if prog == "nginx" or (base.startswith("nginx") and program.source == "image"):
        return "nginx"
    if prog in ("httpd-foreground", "httpd") or (base == "httpd" and program.source == "image"):
        return "httpd"
    return None


#: Servers of well-known images that do not speak HTTP: program -> (the ports they listen on when
#: the container declares none, what they send back to an HTTP/1.1 request before closing or
#: waiting). redis reads ``GET / HTTP/1.1`` as an inline command (arity error) and drops the
#: connection at the ``Host:`` line (its cross-protocol scripting guard); postgres reads the first
#: bytes as a startup packet length, logs "invalid length of startup packet" and closes without a
#: word; mysqld greets first (a binary handshake packet); memcached answers ``ERROR`` per line.
_NON_HTTP_SERVERS: dict[str, tuple[tuple[int, ...], bytes]] = {
    "redis-server": ((6379,), b"-ERR wrong number of arguments for 'get' command\r\n"),
    "postgres": ((5432,), b""),
    "mysqld": ((3306, 33060), b"J\x00\x00\x00\n8.4.0\x00"),
    "memcached": ((11211,), b"ERROR\r\n"),
}
#: The images whose default program is one of :data:`_NON_HTTP_SERVERS`.
_NON_HTTP_IMAGES = {"redis": "redis-server", "postgres": "postgres", "mysql": "mysqld", "memcached": "memcached"}


def _non_http_server(program: Program) -> str | None:
    """The key of :data:`_NON_HTTP_SERVERS` when the container runs such a server (its command, or
    the image's own program, also behind the image's ``docker-entrypoint.sh`` given flags only)."""
    if program.source == "annotation":
        return None
    words = [w.rsplit("/", 1)[-1] for w in program.argv[:2]]
    for w in words:
        if w in _NON_HTTP_SERVERS:
            return w
    try:
        base = normalize_image(program.image).base_name
    except ValueError:
        return None
    main = _NON_HTTP_IMAGES.get(base)
    if main is None:
        return None
    if program.source == "image" or (words and words[0] == "docker-entrypoint.sh"
                                     and (len(program.argv) < 2 or program.argv[1].startswith("-"))):
        return main
    return None


def non_http_reply(program: Program) -> bytes:
    """What the container's server sends back to an HTTP/1.1 request on a port it listens on but
    where it does not speak HTTP (:func:`http_answer` returned None): the bytes a redis, mysqld or
    memcached server writes (not an HTTP status line: curl says ``Received HTTP/0.9 when not
    allowed``), or ``b""`` — postgres and a scripted ``serve tcp`` / ``serve grpc`` close the
    connection without a word (curl's "Empty reply from server")."""
    server = _non_http_server(program)
    return _NON_HTTP_SERVERS[server][1] if server is not None else b""


def http_answer(run: Run, port: int, now: float, *, method: str = "GET", target: str = "/",
                client: str = "127.0.0.1", user_agent: str | None = None,
                host: str | None = None) -> HTTPAnswer | None:
    """What the container's program answers to an HTTP request on ``port`` at virtual time ``now``
    (call :meth:`Run.advance` up to ``now`` first, as for :meth:`Run.probe`).

    A port is listened on while a server-like program runs (``serving``) and it is one the
    container declares (``containerPort``); a container that declares none listens on 80 when it
    runs nginx or httpd, on its server's own ports when it runs redis (6379), postgres (5432),
    mysqld (3306, 33060) or memcached (11211) — which do not speak HTTP (None) — and on any port
    otherwise (the probes' rule). Answers: nginx serves the
    files of its ``/usr/share/nginx/html`` (the image's welcome page and ``50x.html``, or what
    the container or a volume put there; 403 for a directory without ``index.html``, 404 page
    for missing files; ``Server: nginx/<version from the image tag>``), httpd's "It works!"
    page, or for other programs a one-line ``text/plain`` 200; a program whose HTTP answers fail
    (``agnhost liveness`` after 10 s) answers 500. ``Date`` is the container's clock at ``now``.

    nginx logs each request it serves, as its access log on stdout (``client`` is the peer
    address: ``127.0.0.1`` for ``kubectl port-forward``, which dials from inside the pod), and a
    missing file also on stderr, into ``run``.

    Returns:
        the answer, or None when something listens on the port but does not speak HTTP
        (``serve tcp`` / ``serve grpc`` in a behaviour script; redis, postgres, mysqld, memcached:
        what they send back is :func:`non_http_reply`).

    Raises:
        ConnectionRefusedError: nothing listens on ``port`` (the container exited, is not
            serving, or the port is not one it listens on).
    """
    program = run.program
    server = _web_server(program)
    other = _non_http_server(program) if server is None else None
    if run.exited is not None or now < run.started_at or not run.serving:
        raise ConnectionRefusedError(port)
    if program.declared_ports:
        if port not in program.declared_ports:
            raise ConnectionRefusedError(port)
    elif server is not None and port != 80:
        raise ConnectionRefusedError(port)
    elif other is not None and port not in _NON_HTTP_SERVERS[other][0]:
        raise ConnectionRefusedError(port)
    if "http" not in run.protocols or other is not None:
        return None
    try:
        tag = normalize_image(program.image).tag or ""
    except ValueError:
        tag = ""
    m = re.match(r"v?(\d+(?:\.\d+)*)", tag)
    version = m.group(1) if m else None
    date = run.wall_clock(now).strftime("%a, %d %b %Y %H:%M:%S GMT")
    path = target.split("?", 1)[0]
    if run.http_fail_at is not None and now >= run.http_fail_at:
        status, ctype, body = 500, "text/plain; charset=utf-8", f"error: {now - run.started_at:.1f}s\n"
        server_header = None
    elif server == "nginx":
        # the full version the image's nginx reports (nginx:1.30 is 1.30.0), as its log says
        server_header = f"nginx/{_nginx_version(program)}"
        status, ctype, body = _nginx_serve(run, path, server_header)
    elif server == "httpd":
        server_header = f"Apache/{version} (Unix)" if version else "Apache"
        status, ctype, body = 200, "text/html", _HTTPD_WORKS
    else:
        server_header = None
        status, ctype = 200, "text/plain; charset=utf-8"
        body = f"{program.container_name}: {method} {target} answered on port {port}\n"
    data = body.encode()
    if server == "nginx":
        _nginx_access_log(run, now, client, method, target, status, 0 if method == "HEAD" else len(data),
                          user_agent, host or f"localhost:{port}", path)
    headers: list[tuple[str, str]] = []
    if server_header:
        headers.append(("Server", server_header))
    headers += [("Date", date), ("Content-Type", ctype), ("Content-Length", str(len(data)))]
    return HTTPAnswer(status, _REASONS.get(status, ""), tuple(headers), b"" if method == "HEAD" else data)
