"""A pod's volumes on its node, as the kubelet's volume manager sets them up.

What upstream's volume manager (``pkg/kubelet/volumemanager``) and the volume
plugins (``pkg/volume/{configmap,secret,downwardapi,projected,emptydir,hostpath}``)
do, as far as a container can tell (v1.33):

- **Which volumes.** Only volumes some container mounts are set up (the desired
  state populator ignores the others).
- **Set-up** (``MountVolume.SetUp``): ``configMap`` / ``secret`` write their keys
  (or ``items`` at their ``path``; ``binaryData`` too for ConfigMaps, Secret
  values base64-decoded); ``downwardAPI`` its ``fieldRef`` / ``resourceFieldRef``
  items (:func:`k8semu.node.envvars.field_value`, whole label/annotation maps as
  ``k="v"`` lines); ``projected`` all of its sources (``serviceAccountToken``
  a token, ``configMap``, ``secret``, ``downwardAPI``); ``emptyDir`` (and any
  other kind: PVCs, ephemeral, image) starts empty; ``hostPath`` checks its
  ``type`` against the node's files (:class:`HostFiles`), creating the path for
  ``DirectoryOrCreate`` / ``FileOrCreate``.
- **Failures.** A ConfigMap/Secret that does not exist (and is not
  ``optional``), a missing ``items`` key, or a failed hostPath check fail the
  set-up with upstream's error: a ``Warning FailedMount`` event
  ``MountVolume.SetUp failed for volume "config-volume" : configmap
  "special-config" not found`` (``secret "x" not found``, ``configmap
  references non-existent config key: k``, ``references non-existent secret
  key: k``, ``hostPath type check failed: /p is not a file``; a projected
  volume joins its sources' errors as ``[e1, e2]``). Each volume retries with
  the operation executor's exponential back-off: 0.5 s, doubling, at most
  2 m 2 s (:data:`INITIAL_RETRY`, :data:`MAX_RETRY`). The pod waits in
  ``ContainerCreating`` without a sandbox (no IP) until every volume is set up;
  each 2 minutes of waiting (``podAttachAndMountTimeout``, then the pod
  worker's 10 s back-off) adds ``Warning FailedMount`` ``Unable to attach or
  mount volumes: unmounted volumes=[a b], unattached volumes=[], failed to
  process volumes=[]: context deadline exceeded``.
- **Contents.** Every volume of a pod is one store (path -> text, keys like
  ``/data.txt``) shared by all its containers, so what an init container
  writes into an ``emptyDir`` the next container reads; ``hostPath`` volumes
  are views of the node's :class:`HostFiles`. ConfigMap/Secret/downward API
  contents are re-read when a container starts (upstream refreshes them on
  every pod sync; a failed refresh keeps the old files).

- **Name-service files.** Every container also gets the pod's ``/etc/hosts``
  (the kubelet's ``makeHostsMount``, rewritten at each container start),
  ``/etc/resolv.conf`` and ``/etc/hostname`` (containerd's sandbox files, written
  once per sandbox), one store shared by the pod's containers
  (:data:`SANDBOX_STORE`); contents from :func:`k8semu.node.dns.hosts_file` and
  :func:`k8semu.node.dns.pod_resolv_conf` over the node's ``/etc/hosts`` and
  ``/etc/resolv.conf``. A ``volumeMount`` at one of these paths replaces it (the
  kubelet and containerd skip theirs). Without a pod IP there is no
  ``/etc/hosts`` mount (upstream: ``len(podIPs) > 0``). For a container with
  ``readOnlyRootFilesystem`` containerd mounts ``resolv.conf`` and ``hostname``
  read-only; the kubelet's ``/etc/hosts`` stays writable.

Mounts are read-only where the kubelet makes them so (a ``readOnly`` volumeMount; configMap,
secret, downwardAPI and projected volumes always). Not modelled: file modes and owners, the atomic
writer's ``..data`` links, ``clusterTrustBundle`` projections (treated as
empty), volume sizes and ``emptyDir.sizeLimit`` evictions.

Units: virtual seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Callable

from ..api import errors
from . import dns
from .behaviour import Mount, expand_kube_vars
from .envvars import (EnvError, Source, decode_secret_value, field_value, not_found_message, pod_hostname,
                      resource_value)

__all__ = ["MountError", "HostFiles", "PodVolumes", "DownwardContext", "volume_payload", "container_mounts",
           "used_volumes", "INITIAL_RETRY", "MAX_RETRY", "MOUNT_TIMEOUT", "POD_WORKER_BACKOFF",
           "HOST_DIRECTORIES", "SANDBOX_STORE", "SANDBOX_FILES"]

Obj = dict[str, Any]

#: exponentialbackoff's ``initialDurationBeforeRetry`` for a failed volume operation (s).
INITIAL_RETRY = 0.5
#: exponentialbackoff's ``maxDurationBeforeRetry`` (2 m 2 s).
MAX_RETRY = 122.0
#: ``podAttachAndMountTimeout``: how long a pod sync waits for its volumes (s).
MOUNT_TIMEOUT = 120.0
#: the pod worker's ``backOffPeriod`` before it syncs a pod again after an error (s).
POD_WORKER_BACKOFF = 10.0
_EPS = 1e-9
#: The key of the pod's name-service files in :attr:`PodVolumes.stores` (not a valid volume name).
SANDBOX_STORE = ":sandbox"
#: The files of that store, each mounted at its own path.
SANDBOX_FILES = ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname")

#: Directories every emulated node has (a kind node: Debian, containerd, kubelet).
HOST_DIRECTORIES = frozenset({
    "/", "/bin", "/boot", "/dev", "/etc", "/etc/cni", "/etc/cni/net.d", "/etc/kubernetes",
    "/etc/kubernetes/manifests", "/etc/kubernetes/pki", "/etc/ssl", "/etc/ssl/certs", "/home", "/lib",
    "/lib/modules", "/mnt", "/opt", "/opt/cni", "/opt/cni/bin", "/proc", "/root", "/run", "/run/containerd",
    "/sbin", "/srv", "/sys", "/sys/fs", "/sys/fs/cgroup", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/local",
    "/usr/local/bin", "/usr/share", "/usr/share/ca-certificates", "/var", "/var/lib", "/var/lib/containerd",
    "/var/lib/kubelet", "/var/lib/kubelet/pods", "/var/log", "/var/log/containers", "/var/log/pods", "/var/run",
})
_SOCKETS = frozenset({"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock"})
_CHAR_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/kmsg",
                           "/dev/console", "/dev/full", "/dev/fuse"})


class MountError(Exception):
    """A volume cannot be set up; ``str(e)`` is upstream's error (after ``MountVolume.SetUp failed ... :``)."""


def _norm(path: str) -> str:
    p = posixpath.normpath("/" + str(path or "").lstrip("/"))
    return "/" if p in ("/", "//") else p


class HostFiles:
    """The node's own file system, as ``hostPath`` volumes see it (path -> text).

    Holds the usual directories (:data:`HOST_DIRECTORIES`) and files:
    ``/etc/machine-id`` (``machine_id`` + newline, the Node's
    ``nodeInfo.machineID``), ``/etc/hostname``, ``/etc/hosts``, ``/etc/resolv.conf``
    (:data:`k8semu.node.dns.NODE_RESOLV_CONF`), ``/etc/os-release``. What pods write through
    ``hostPath`` mounts stays here for the kubelet's lifetime, visible to every
    pod of the node.
    """

    def __init__(self, node_name: str, machine_id: str) -> None:
        self.files: dict[str, str] = {
            "/etc/hostname": f"{node_name}\n",
            "/etc/hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
            "/etc/machine-id": f"{machine_id}\n",
            "/etc/resolv.conf": dns.NODE_RESOLV_CONF,
            "/etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n'
                               'VERSION_ID="12"\nVERSION="12 (bookworm)"\nID=debian\n',
        }
        self.dirs: set[str] = set(HOST_DIRECTORIES)

    def add_address(self, ips: list[str], node_name: str) -> None:
        """Add the node's ``<ip>\t<name>`` line to its ``/etc/hosts`` once its address is known
        (what Docker writes into a kind node's hosts file), unless the name is there already."""
        hosts = self.files.get("/etc/hosts")
        if not ips or not node_name or hosts is None:
            return
        if any(node_name in line.split()[1:] for line in hosts.splitlines()):
            return
        self.files["/etc/hosts"] = hosts + "".join(f"{ip}\t{node_name}\n" for ip in ips)

    def is_file(self, path: str) -> bool:
        return path in self.files

    def is_dir(self, path: str) -> bool:
        if path in self.dirs:
            return True
        prefix = path.rstrip("/") + "/"
        return any(k.startswith(prefix) for k in self.files)

    def exists(self, path: str) -> bool:
        return self.is_file(path) or self.is_dir(path) or path in _SOCKETS or path in _CHAR_DEVICES

    def check(self, path: str, type_: str | None) -> str | None:
        """``checkTypeInternal`` without side effects: the error for ``hostPath`` ``path`` of
        ``type_``, or None (``*OrCreate`` types pass when the path is missing)."""
        path = _norm(path)
        t = type_ or ""
        if t == "":
            return None
        if t == "DirectoryOrCreate" and not self.exists(path):
            return None
        if t in ("DirectoryOrCreate", "Directory"):
            return None if self.is_dir(path) else f"hostPath type check failed: {path} is not a directory"
        if t == "FileOrCreate" and not self.exists(path):
            return None
        if t in ("FileOrCreate", "File"):
            return None if self.is_file(path) else f"hostPath type check failed: {path} is not a file"
        if t == "Socket":
            return None if path in _SOCKETS else f"hostPath type check failed: {path} is not a socket file"
        if t == "CharDevice":
            return None if path in _CHAR_DEVICES else f"hostPath type check failed: {path} is not a character device"
        if t == "BlockDevice":
            return f"hostPath type check failed: {path} is not a block device"
        return f"{t} is an invalid volume type"

    def set_up(self, path: str, type_: str | None) -> None:
        """The hostPath plugin's ``SetUp``: check, creating the path for ``*OrCreate``.

        Raises:
            MountError: the check failed.
        """
        path = _norm(path)
        err = self.check(path, type_)
        if err is not None:
            raise MountError(err)
        if type_ == "DirectoryOrCreate" and not self.exists(path):
            self.dirs.add(path)
        elif type_ == "FileOrCreate" and not self.exists(path):
            self.files[path] = ""


class DownwardContext:
    """What the downward API and the token projection need besides the pod: its and the
    node's addresses, the node's allocatable, the node's name, and the API server's token signer."""

    def __init__(self, pod_ips: list[str] | None = None, host_ips: list[str] | None = None,
                 allocatable: Mapping[str, Any] | None = None, node_name: str = "",
                 sign: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.pod_ips = list(pod_ips or [])
        self.host_ips = list(host_ips or [])
        self.allocatable = dict(allocatable or {})
        self.node_name = node_name
        self.sign = sign  # signs a projected token's claims (see service_account_token)


# --------------------------------------------------------------------------- payloads

def _config_map_files(cm: Mapping[str, Any]) -> dict[str, str]:
    out = {str(k): str(v) for k, v in (cm.get("data") or {}).items()}
    for k, v in (cm.get("binaryData") or {}).items():
        out[str(k)] = decode_secret_value(str(v))
    return out


def _secret_files(secret: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): decode_secret_value(str(v)) for k, v in (secret.get("data") or {}).items()}


def _keyed_payload(kind: str, files: dict[str, str], items: list[Obj] | None, optional: bool) -> dict[str, str]:
    """``MakePayload`` of the configmap / secret plugins: all keys, or ``items`` at their paths."""
    if not items:
        return dict(files)
    out: dict[str, str] = {}
    for ktp in items:
        key = str(ktp.get("key") or "")
        if key not in files:
            if optional:
                continue
            if kind == "configmap":
                raise MountError(f"configmap references non-existent config key: {key}")
            raise MountError(f"references non-existent secret key: {key}")
        out[str(ktp.get("path") or key)] = files[key]
    return out


def _keyed(kind: str, src: Mapping[str, Any], name_field: str, pod: Mapping[str, Any],
           source: Source) -> dict[str, str]:
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    name = str(src.get(name_field) or "")
    optional = bool(src.get("optional"))
    obj = source.config_map(ns, name) if kind == "configmap" else source.secret(ns, name)
    if obj is None:
        if not optional:
            raise MountError(not_found_message(kind, name))
        obj = {}
    files = _config_map_files(obj) if kind == "configmap" else _secret_files(obj)
    return _keyed_payload(kind, files, src.get("items"), optional)


def _downward(items: list[Obj] | None, pod: Mapping[str, Any], ctx: DownwardContext) -> dict[str, str]:
    """``downwardapi.CollectData``: one file per item."""
    out: dict[str, str] = {}
    for item in items or []:
        path = str(item.get("path") or "")
        try:
            if item.get("fieldRef"):
                out[path] = field_value(pod, str(item["fieldRef"].get("fieldPath") or ""),
                                        pod_ips=ctx.pod_ips, host_ips=ctx.host_ips)
            elif item.get("resourceFieldRef"):
                out[path] = resource_value(pod, None, item["resourceFieldRef"], ctx.allocatable)
        except EnvError as e:
            raise MountError(str(e)) from None
    return out


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def service_account_token(pod: Mapping[str, Any], src: Mapping[str, Any], node_name: str = "",
                          sign: Callable[[dict[str, Any]], str] | None = None) -> str:
    """A bound service account token, as the kubelet's TokenRequest gets for a projected
    ``serviceAccountToken`` source: audience ``src.audience`` (default the API server), issued
    at the pod's creation, valid ``expirationSeconds`` (default 3607, as the kube-api-access
    volume), bound to the pod and its node. Signed by ``sign`` (the API server's key:
    :func:`k8semu.api.tokens.sign`), so the token authenticates only if it is unchanged; without
    one (no API server at hand) the signature is a plain digest no server accepts."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ns = str(meta.get("namespace") or "default")
    sa = str(spec.get("serviceAccountName") or "default")
    created = str(meta.get("creationTimestamp") or "1970-01-01T00:00:00Z")
    try:
        iat = int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
    except ValueError:
        iat = 0
    exp = iat + int(src.get("expirationSeconds") or 3607)
    issuer = "https://kubernetes.default.svc.cluster.local"
    uid = str(meta.get("uid") or "")
    claims = {
        "aud": [str(src.get("audience") or issuer)], "exp": exp, "iat": iat, "iss": issuer,
        "jti": hashlib.sha256(f"jti/{uid}/{src.get('path')}".encode()).hexdigest()[:32],
        "kubernetes.io": {"namespace": ns, "node": {"name": node_name},
                          "pod": {"name": meta.get("name"), "uid": uid},
                          "serviceaccount": {"name": sa}},
        "nbf": iat, "sub": f"system:serviceaccount:{ns}:{sa}",
    }
    if sign is not None:
        return sign(claims)
    body = f"{_b64url(json.dumps({'alg': 'none'}, separators=(',', ':')).encode())}." \
           f"{_b64url(json.dumps(claims, separators=(',', ':')).encode())}"
    return f"{body}.{_b64url(hashlib.sha256(body.encode()).digest())}"


def _projected(src: Mapping[str, Any], pod: Mapping[str, Any], source: Source, ctx: DownwardContext) -> dict[str, str]:
    """``projected.collectData``: every source in order; errors of all sources together."""
    out: dict[str, str] = {}
    errs: list[str] = []
    for s in src.get("sources") or []:
        try:
            if s.get("configMap") is not None:
                out.update(_keyed("configmap", s["configMap"], "name", pod, source))
            elif s.get("secret") is not None:
                out.update(_keyed("secret", s["secret"], "name", pod, source))
            elif s.get("downwardAPI") is not None:
                out.update(_downward(s["downwardAPI"].get("items"), pod, ctx))
            elif s.get("serviceAccountToken") is not None:
                tok = s["serviceAccountToken"]
                out[str(tok.get("path") or "token")] = service_account_token(pod, tok, ctx.node_name, ctx.sign)
        except MountError as e:
            if str(e) not in errs:
                errs.append(str(e))
    if len(errs) == 1:
        raise MountError(errs[0])
    if errs:
        raise MountError("[" + ", ".join(errs) + "]")  # utilerrors.NewAggregate
    return out


def volume_payload(volume: Mapping[str, Any], pod: Mapping[str, Any], source: Source,
                   ctx: DownwardContext) -> dict[str, str] | None:
    """The files (relative path -> text) a ``configMap`` / ``secret`` / ``downwardAPI`` /
    ``projected`` volume holds now; None for volumes without such contents.

    Raises:
        MountError: upstream's set-up error (missing object or key).
    """
    if volume.get("configMap") is not None:
        return _keyed("configmap", volume["configMap"], "name", pod, source)
    if volume.get("secret") is not None:
        return _keyed("secret", volume["secret"], "secretName", pod, source)
    if volume.get("downwardAPI") is not None:
        return _downward(volume["downwardAPI"].get("items"), pod, ctx)
    if volume.get("projected") is not None:
        return _projected(volume["projected"], pod, source, ctx)
    return None


def _store_of(payload: Mapping[str, str]) -> dict[str, str]:
    return {_norm(k): v for k, v in payload.items()}


# --------------------------------------------------------------------------- a pod's volumes

def used_volumes(pod: Mapping[str, Any]) -> list[Obj]:
    """The pod's volumes that some (init, regular or ephemeral) container mounts, in spec order."""
    spec = pod.get("spec") or {}
    names = {m.get("name") for key in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(key) or [] for m in (c.get("volumeMounts") or []) + (c.get("volumeDevices") or [])}
    return [v for v in spec.get("volumes") or [] if v.get("name") in names]


def with_claims_resolved(pod: Mapping[str, Any], api: Any) -> Mapping[str, Any]:
    """``pod`` with each ``persistentVolumeClaim`` volume whose claim is bound to a PersistentVolume
    of type ``hostPath`` (or ``local``) replaced by that ``hostPath`` (as the kubelet mounts the PV
    the claim names), so the pod's files there live on the node's :class:`HostFiles`, beside other
    pods of the node; ``pod`` itself when nothing is resolved. Other claims keep their own store.
    ``api``: an :class:`~k8semu.api.apiserver.APIServer` (read, never written)."""
    spec = pod.get("spec") or {}
    volumes = spec.get("volumes") or []
    if not any(v.get("persistentVolumeClaim") for v in volumes):
        return pod
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    out, changed = [], False
    for v in volumes:
        claim = v.get("persistentVolumeClaim") or {}
        source = None
        if claim.get("claimName"):
            try:
                pvc = api.get("persistentvolumeclaims", claim["claimName"], namespace=ns)
                pv_name = (pvc.get("spec") or {}).get("volumeName")
                pv = api.get("persistentvolumes", pv_name) if pv_name else None
            except errors.NotFound:
                pv = None
            pv_spec = (pv or {}).get("spec") or {}
            if pv_spec.get("hostPath"):
                source = {"path": pv_spec["hostPath"].get("path") or "/", "type": pv_spec["hostPath"].get("type") or ""}
            elif (pv_spec.get("local") or {}).get("path"):
                source = {"path": pv_spec["local"]["path"], "type": "Directory"}
        if source is None:
            out.append(v)
        else:
            out.append({"name": v.get("name"), "hostPath": source})
            changed = True
    return {**pod, "spec": {**spec, "volumes": out}} if changed else pod


class _Retry:
    __slots__ = ("delay", "next_at")

    def __init__(self) -> None:
        self.delay = 0.0
        self.next_at = 0.0

    def failed(self, now: float) -> None:
        self.delay = INITIAL_RETRY if self.delay == 0.0 else min(self.delay * 2, MAX_RETRY)
        self.next_at = now + self.delay


class PodVolumes:
    """One pod's volumes on the node: which are set up, their retries, and their contents.

    Args:
        pod: the pod.
        host: the node's :class:`HostFiles`.
        since: when the pod worker began waiting for the volumes (the first 2-minute timeout).
    """

    def __init__(self, pod: Mapping[str, Any], host: HostFiles, since: float = 0.0) -> None:
        self.host = host
        self.volumes = used_volumes(pod)
        self.stores: dict[str, dict[str, str]] = {str(v.get("name")): {} for v in (pod.get("spec") or {}).get(
            "volumes") or []}
        self.mounted: set[str] = set()
        self._retry: dict[str, _Retry] = {}
        self.timeout_at = since + MOUNT_TIMEOUT

    @property
    def ready(self) -> bool:
        """Every used volume is set up."""
        return all(v.get("name") in self.mounted for v in self.volumes)

    def _set_up(self, v: Mapping[str, Any], pod: Mapping[str, Any], source: Source, ctx: DownwardContext,
                *, dry: bool = False) -> None:
        if v.get("hostPath") is not None:
            hp = v["hostPath"]
            if dry:
                err = self.host.check(str(hp.get("path") or "/"), hp.get("type"))
                if err is not None:
                    raise MountError(err)
            else:
                self.host.set_up(str(hp.get("path") or "/"), hp.get("type"))
            return
        payload = volume_payload(v, pod, source, ctx)
        if payload is not None and not dry:
            store = self.stores.setdefault(str(v.get("name")), {})
            store.clear()
            store.update(_store_of(payload))

    def mount(self, now: float, pod: Mapping[str, Any], source: Source, ctx: DownwardContext) -> list[str]:
        """Set up every used volume whose retry is due; returns the ``FailedMount`` messages
        of the attempts that failed now."""
        failures = []
        for v in self.volumes:
            name = str(v.get("name"))
            if name in self.mounted:
                continue
            retry = self._retry.get(name)
            if retry is not None and now < retry.next_at - _EPS:
                continue
            try:
                self._set_up(v, pod, source, ctx)
            except MountError as e:
                self._retry.setdefault(name, _Retry()).failed(now)
                failures.append(f'MountVolume.SetUp failed for volume "{name}" : {e}')
                continue
            self.mounted.add(name)
            self._retry.pop(name, None)
        return failures

    def due(self, pod: Mapping[str, Any], source: Source, ctx: DownwardContext) -> list[tuple[float, bool]]:
        """(time, significant) of the pending retries: significant when the retry would succeed
        (the missing ConfigMap/Secret exists now); plus the next wait timeout (not significant)."""
        out: list[tuple[float, bool]] = []
        for v in self.volumes:
            name = str(v.get("name"))
            retry = self._retry.get(name)
            if name in self.mounted or retry is None:
                continue
            try:
                self._set_up(v, pod, source, ctx, dry=True)
                ok = True
            except MountError:
                ok = False
            out.append((retry.next_at, ok))
        if out:
            out.append((self.timeout_at, False))
        return out

    def timeout_message(self) -> str:
        """``Unable to attach or mount volumes: …`` for the volumes still not set up."""
        missing = sorted(str(v.get("name")) for v in self.volumes if v.get("name") not in self.mounted)
        return (f"Unable to attach or mount volumes: unmounted volumes=[{' '.join(missing)}], "
                f"unattached volumes=[], failed to process volumes=[]: context deadline exceeded")

    def refresh(self, pod: Mapping[str, Any], source: Source, ctx: DownwardContext) -> None:
        """Re-read ConfigMap/Secret/downward API contents (in place, so running containers see
        them); a volume whose object is gone now keeps its files. Also (re)writes the pod's
        name-service files (:meth:`sandbox_files`)."""
        self.sandbox_files(pod, ctx)
        for v in self.volumes:
            if v.get("hostPath") is not None:
                continue
            try:
                self._set_up(v, pod, source, ctx)
            except MountError:
                pass


    def sandbox_files(self, pod: Mapping[str, Any], ctx: DownwardContext) -> dict[str, str]:
        """The pod's ``/etc/hosts`` (rewritten now, as the kubelet does before each container
        start; absent without a pod IP), ``/etc/resolv.conf`` and ``/etc/hostname`` (kept once
        written, as the sandbox's) in the store :data:`SANDBOX_STORE`, returned."""
        store = self.stores.setdefault(SANDBOX_STORE, {})
        pod = dict(pod)
        self.host.add_address(ctx.host_ips, ctx.node_name)
        if ctx.pod_ips:
            store["/etc/hosts"] = dns.hosts_file(pod, ctx.pod_ips, self.host.files.get("/etc/hosts", ""))
        if "/etc/resolv.conf" not in store:
            store["/etc/resolv.conf"] = dns.pod_resolv_conf(
                pod, self.host.files.get("/etc/resolv.conf", dns.NODE_RESOLV_CONF))
        if "/etc/hostname" not in store:
            store["/etc/hostname"] = pod_hostname(pod) + "\n"
        return store


#: volume sources the kubelet always mounts read-only (writes: ``Read-only file system``)
_READ_ONLY_SOURCES = ("configMap", "secret", "downwardAPI", "projected")


def container_mounts(pod: Mapping[str, Any], container: Mapping[str, Any], stores: Mapping[str, dict[str, str]],
                     host: HostFiles, env: Mapping[str, str] | None = None) -> list[Mount]:
    """The container's ``volumeMounts`` as :class:`~k8semu.node.behaviour.Mount` values over the
    pod's volume ``stores`` (and the node's files for ``hostPath``); ``subPath`` narrows a
    mount, ``subPathExpr`` is ``$(VAR)``-expanded with the container's ``env``. Then the pod's
    name-service files (:data:`SANDBOX_FILES`, when ``stores`` has them) at the paths no
    ``volumeMount`` takes."""
    vols = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    out = []
    taken = {_norm(str(vm.get("mountPath") or "")) for vm in container.get("volumeMounts") or []}
    for vm in container.get("volumeMounts") or []:
        v = vols.get(vm.get("name"))
        if v is None or not vm.get("mountPath"):
            continue
        path = _norm(str(vm["mountPath"]))
        if path == "/":
            continue
        sub = str(vm.get("subPath") or "")
        if not sub and vm.get("subPathExpr"):
            sub = expand_kube_vars(str(vm["subPathExpr"]), env or {})
        if v.get("hostPath") is not None:
            store: dict[str, str] = host.files
            prefix = _norm(str(v["hostPath"].get("path") or "/"))
            prefix = "" if prefix == "/" else prefix
        else:
            store = stores.get(str(v.get("name"))) if str(v.get("name")) in stores else {}
            prefix = ""
        if sub:
            prefix = prefix + _norm(sub)
        # the kubelet mounts these read-only whatever the volumeMount says (since 1.10)
        always_ro = any(v.get(k) is not None for k in _READ_ONLY_SOURCES)
        out.append(Mount(path, store, prefix, read_only=always_ro or bool(vm.get("readOnly"))))
    sandbox = stores.get(SANDBOX_STORE)
    if sandbox is not None:
        # containerd mounts its resolv.conf and hostname read-only for a readOnlyRootFilesystem
        # container; /etc/hosts is the kubelet's mount (makeHostsMount), always read-write
        ro_root = bool((container.get("securityContext") or {}).get("readOnlyRootFilesystem"))
        out.extend(Mount(p, sandbox, p, read_only=ro_root and p != "/etc/hosts")
                   for p in SANDBOX_FILES if p in sandbox and p not in taken)
    return out
