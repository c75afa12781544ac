"""The environment the kubelet gives a container, as upstream's ``makeEnvironmentVariables``.

Mirrors ``pkg/kubelet/kubelet_pods.go`` and ``pkg/kubelet/envvars`` (v1.33):

1. **Service links** (:func:`service_env`): for every Service with a cluster IP
   in the pod's namespace (when ``enableServiceLinks`` is not false) and, always,
   ``default/kubernetes``: ``<SVC>_SERVICE_HOST``, ``<SVC>_SERVICE_PORT``,
   ``<SVC>_SERVICE_PORT_<PORTNAME>`` for named ports, and the Docker link
   variables ``<SVC>_PORT``, ``<SVC>_PORT_<port>_<PROTO>`` with ``_PROTO``,
   ``_PORT`` and ``_ADDR`` (``<SVC>`` is the name upper-cased, ``-`` -> ``_``).
2. ``envFrom`` in order: every key of the ConfigMap's ``data`` / the Secret's
   ``data`` (base64-decoded), with ``prefix``; a missing object that is not
   ``optional`` is an error.
3. ``env`` in order: ``value`` with ``$(VAR)`` expanded against the variables
   so far and the service variables (an unknown reference stays as written);
   else ``valueFrom``: ``fieldRef`` (:func:`field_value`), ``resourceFieldRef``
   (:func:`resource_value`, limits defaulting to the node's allocatable),
   ``configMapKeyRef`` / ``secretKeyRef`` (``optional`` skips a missing object
   or key: the variable is then not set at all).
4. The service variables not set by 2 or 3.

Errors carry upstream's messages, which the kubelet reports as the container's
``CreateContainerConfigError``: ``configmap "special-config" not found`` and
``secret "x" not found`` (the kubelet's ConfigMap/Secret managers name the
resource in the singular), ``couldn't find key SPECIAL_LEVEL in ConfigMap
default/special-config``, ``couldn't find key k in Secret default/s``.

``HOSTNAME`` is not the kubelet's but the runtime's (containerd sets it from the
sandbox's hostname); :func:`pod_hostname` computes it and :mod:`k8semu.node.inputs`
adds it. So are the image config's ``Env`` (``PATH``, ``NGINX_VERSION`` ...), which
containerd merges under these variables (the container's win), and ``HOME``, which
runc adds last: :func:`k8semu.node.behaviour.process_env`.

Order: Go iterates maps here, so a real container's order is arbitrary; this
module's is fixed: ``envFrom`` keys (sorted per object, as they are stored),
then ``env`` in spec order, then the service variables by service name.

Everything reads through a :class:`Source` (the API at its head, or at a past
revision for replays), so the result is a pure function of the pod, the
container and the cluster state.
"""

from __future__ import annotations

import base64
import math
from collections import ChainMap, OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol

from ..api import errors
from ..api.gofmt import go_quote
from ..api.quantity import parse_quantity
from .behaviour import ResolvedEnv, expand_kube_vars

__all__ = ["EnvError", "Source", "APISource", "make_environment", "service_env", "field_value",
           "resource_value", "format_map", "pod_hostname", "decode_secret_value", "not_found_message",
           "MAX_HOSTNAME_LENGTH"]

Obj = dict[str, Any]

#: The kubelet truncates a pod's hostname to 63 characters (a DNS label).
MAX_HOSTNAME_LENGTH = 63


class EnvError(Exception):
    """The environment cannot be made; ``str(e)`` is upstream's message."""


def not_found_message(kind: str, name: str) -> str:
    """The kubelet ConfigMap/Secret managers' NotFound: ``configmap "x" not found`` (``kind``
    ``configmap`` or ``secret``)."""
    return f'{kind} "{name}" not found'


class Source(Protocol):
    """What the kubelet reads: ConfigMaps, Secrets and Services (None: not found)."""

    def config_map(self, namespace: str, name: str) -> Obj | None: ...

    def secret(self, namespace: str, name: str) -> Obj | None: ...

    def services(self, namespace: str) -> list[Obj]: ...

    def service(self, namespace: str, name: str) -> Obj | None: ...


class APISource:
    """A :class:`Source` over the API server, at its head or at ``revision`` (a replay).

    Args:
        api: the :class:`~k8semu.api.apiserver.APIServer`.
        ctx: the request context (the kubelet's node identity), or None.
        revision: read the state at this store revision; None: the head. A
            revision that was compacted away falls back to the head.
    """

    def __init__(self, api: Any, ctx: Any = None, revision: int | None = None) -> None:
        self.api = api
        self.ctx = ctx
        self.revision = revision
        self._cache: dict[tuple[str, str, str], Obj | None] = {}

    def _rv(self) -> str | None:
        return None if self.revision is None else str(self.revision)

    def _get(self, resource: str, namespace: str, name: str) -> Obj | None:
        key = (resource, namespace, name)
        if key in self._cache:
            return self._cache[key]
        try:
            obj = self.api.get(resource, name, namespace=namespace, ctx=self.ctx, resource_version=self._rv())
        except errors.NotFound:
            obj = None
        except errors.Expired:
            try:
                obj = self.api.get(resource, name, namespace=namespace, ctx=self.ctx)
            except errors.NotFound:
                obj = None
        self._cache[key] = obj
        return obj

    def config_map(self, namespace: str, name: str) -> Obj | None:
        return self._get("configmaps", namespace, name)

    def secret(self, namespace: str, name: str) -> Obj | None:
        return self._get("secrets", namespace, name)

    def service(self, namespace: str, name: str) -> Obj | None:
        return self._get("services", namespace, name)

    def shared_service_env(self) -> tuple[dict, int] | None:
        """Where :func:`service_env` keeps its results for every source reading this API
        server's head, and the revision of the latest Service write (which they are valid
        for); None when reading a past in which the Services were not what they are now.
        Kubelets read Services from an informer upstream, so every pod of a namespace sees
        the same versions."""
        stamp = self.api.log.last_change("services")
        if self.revision is not None and self.revision < stamp:
            return None
        return self.api.derived.setdefault("service_env", {}), stamp

    def services(self, namespace: str) -> list[Obj]:
        try:
            out = self.api.list("services", namespace=namespace, ctx=self.ctx, resource_version=self._rv())
        except errors.Expired:
            out = self.api.list("services", namespace=namespace, ctx=self.ctx)
        return list(out.get("items") or [])

    def node(self, name: str) -> Obj | None:
        """The Node ``name`` (for its allocatable), or None."""
        try:
            return self.api.get("nodes", name, ctx=self.ctx, resource_version=self._rv())
        except errors.Expired:
            try:
                return self.api.get("nodes", name, ctx=self.ctx)
            except errors.NotFound:
                return None
        except errors.NotFound:
            return None


# --------------------------------------------------------------------------- service links

def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def _service_ip_set(svc: Mapping[str, Any]) -> bool:
    ip = (svc.get("spec") or {}).get("clusterIP") or ""
    return ip not in ("", "None")


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"  # net.JoinHostPort


def _from_service(svc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``envvars.FromServices`` for one Service: host, ports, then the Docker link variables."""
    spec = svc.get("spec") or {}
    ip = spec.get("clusterIP") or ""
    ports = spec.get("ports") or []
    prefix = _env_name(svc["metadata"]["name"])
    out = [(f"{prefix}_SERVICE_HOST", ip)]
    if not ports:
        return out
    base = f"{prefix}_SERVICE_PORT"
    out.append((base, str(int(ports[0].get("port") or 0))))
    for p in ports:
        if p.get("name"):
            out.append((f"{base}_{_env_name(p['name'])}", str(int(p.get("port") or 0))))
    for i, p in enumerate(ports):
        proto = p.get("protocol") or "TCP"
        port = int(p.get("port") or 0)
        url = f"{proto.lower()}://{_host_port(ip, port)}"
        if i == 0:
            out.append((f"{prefix}_PORT", url))
        pp = f"{prefix}_PORT_{port}_{proto.upper()}"
        out += [(pp, url), (f"{pp}_PROTO", proto.lower()), (f"{pp}_PORT", str(port)), (f"{pp}_ADDR", ip)]
    return out


def service_env(namespace: str, enable_service_links: bool, source: Source) -> dict[str, str]:
    """``getServiceEnvVarMap``: the service variables a pod in ``namespace`` sees (a shared
    dict: do not change it).

    ``default/kubernetes`` always (the "master service"); the namespace's other
    Services with a cluster IP only when ``enable_service_links``. A Service named
    ``kubernetes`` in the pod's own namespace wins over the default one. Services
    in name order.
    """
    shared = getattr(source, "shared_service_env", lambda: None)()
    if shared is not None:
        cache, stamp = shared
        hit = cache.get((namespace, enable_service_links))
        if hit is not None and hit[0] == stamp:
            return hit[1]
    out = _service_env(namespace, enable_service_links, source)
    if shared is not None:
        cache[(namespace, enable_service_links)] = (stamp, out)
    return out


def _service_env(namespace: str, enable_service_links: bool, source: Source) -> dict[str, str]:
    chosen: dict[str, Obj] = {}
    master = source.service("default", "kubernetes")
    if master is not None and _service_ip_set(master):
        chosen["kubernetes"] = master
    if enable_service_links:
        for svc in source.services(namespace):
            if _service_ip_set(svc):
                chosen[svc["metadata"]["name"]] = svc
    # Every pod of a namespace gets the same variables from the same Service versions: build them
    # once and share them (30,000 pods beside 300 Services made 2,400 fresh strings per container).
    versions = tuple((name, (chosen[name].get("metadata") or {}).get("resourceVersion")) for name in sorted(chosen))
    if all(rv for _, rv in versions):
        cached = _SERVICE_ENV.get(versions)
        if cached is not None:
            _SERVICE_ENV.move_to_end(versions)
            return cached
    out: dict[str, str] = {}
    for name in sorted(chosen):
        out.update(_from_service(chosen[name]))
    if all(rv for _, rv in versions):
        _SERVICE_ENV[versions] = out
        if len(_SERVICE_ENV) > 64:
            _SERVICE_ENV.popitem(last=False)
    return out


#: service_env results by the (name, resourceVersion) of the Services they came from (read-only)
_SERVICE_ENV: OrderedDict[tuple, dict[str, str]] = OrderedDict()


# --------------------------------------------------------------------------- downward API

def format_map(m: Mapping[str, str]) -> str:
    """``fieldpath.FormatMap``: ``key="value"`` lines in key order, no trailing newline."""
    return "\n".join(f"{k}={go_quote(str(m[k]))}" for k in sorted(m))


def _subscript(path: str, field: str) -> str | None:
    """``metadata.labels['k']`` -> ``k`` (for ``field`` ``metadata.labels``), else None."""
    head = field + "["
    if path.startswith(head) and path.endswith("]"):
        inner = path[len(head):-1]
        if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
            return inner[1:-1]
    return None


def field_value(pod: Mapping[str, Any], field_path: str, *, pod_ips: list[str] | None = None,
                host_ips: list[str] | None = None) -> str:
    """``podFieldSelectorRuntimeValue`` / ``ExtractFieldPathAsString``: a ``fieldRef``'s value.

    ``metadata.name|namespace|uid``, ``metadata.labels`` / ``metadata.annotations``
    (whole maps, :func:`format_map`, for volumes) or one key (``['k']``, "" when
    absent), ``spec.nodeName``, ``spec.serviceAccountName``,
    ``spec.terminationGracePeriodSeconds`` (default 30), ``status.hostIP(s)``,
    ``status.podIP(s)`` (several joined with ``,``).

    Raises:
        EnvError: an unsupported path (``unsupported fieldPath: x``).
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    pod_ips = list(pod_ips or [])
    host_ips = list(host_ips or [])
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": host_ips[0] if host_ips else "",
        "status.hostIPs": ",".join(host_ips),
        "status.podIP": pod_ips[0] if pod_ips else "",
        "status.podIPs": ",".join(pod_ips),
    }
    if field_path in simple:
        return str(simple[field_path] or "")
    if field_path == "spec.terminationGracePeriodSeconds":
        g = spec.get("terminationGracePeriodSeconds")
        return str(30 if g is None else int(g))
    for fld in ("labels", "annotations"):
        m = meta.get(fld) or {}
        if field_path == f"metadata.{fld}":
            return format_map(m)
        key = _subscript(field_path, f"metadata.{fld}")
        if key is not None:
            return str(m.get(key, ""))
    raise EnvError(f"unsupported fieldPath: {field_path}")


_LIMITED = ("cpu", "memory", "ephemeral-storage")


def _container_resources(container: Mapping[str, Any], allocatable: Mapping[str, Any]) -> tuple[dict, dict]:
    """(limits, requests) with unset limits defaulted to the node's allocatable
    (``defaultPodLimitsForDownwardAPI``)."""
    res = container.get("resources") or {}
    limits = dict(res.get("limits") or {})
    requests = dict(res.get("requests") or {})
    for name in _LIMITED:
        if name not in limits and name in allocatable:
            limits[name] = allocatable[name]
    return limits, requests


def resource_value(pod: Mapping[str, Any], container: Mapping[str, Any] | None, ref: Mapping[str, Any],
                   allocatable: Mapping[str, Any]) -> str:
    """``containerResourceRuntimeValue``: a ``resourceFieldRef``'s value, rounded up.

    ``resource`` is ``limits.`` or ``requests.`` + ``cpu``, ``memory``,
    ``ephemeral-storage`` or ``hugepages-<size>``; ``containerName`` picks the
    container (default: ``container``); ``divisor`` (default 1) divides: CPU in
    thousandths (``ceil(milli(cpu) / milli(divisor))``, so ``limits.cpu`` 250m is
    ``1``, with divisor ``1m`` ``250``), the others in units. Unset limits of
    cpu/memory/ephemeral-storage are the node's ``allocatable``; unset requests 0.

    Raises:
        EnvError: unknown resource or container.
    """
    name = ref.get("containerName")
    if name:
        spec = pod.get("spec") or {}
        found = next((c for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
                      if c.get("name") == name), None)
        if found is None:
            raise EnvError(f"container {name} not found")
        container = found
    if container is None:
        raise EnvError("no container given for resourceFieldRef")
    resource = str(ref.get("resource") or "")
    kind, _, res_name = resource.partition(".")
    if kind not in ("limits", "requests") or not res_name or not (
            res_name in _LIMITED or res_name.startswith("hugepages-")):
        raise EnvError(f"unsupported container resource : {resource}")
    limits, requests = _container_resources(container, allocatable)
    raw = (limits if kind == "limits" else requests).get(res_name, "0")
    divisor_raw = ref.get("divisor")
    divisor = parse_quantity(str(divisor_raw)) if divisor_raw not in (None, "", 0, "0") else parse_quantity("1")
    if divisor.is_zero():
        divisor = parse_quantity("1")
    q = parse_quantity(str(raw))
    if res_name == "cpu":
        return str(math.ceil(q.milli_value() / divisor.milli_value()))
    return str(math.ceil(q.int_value() / divisor.int_value()))


def decode_secret_value(value: str) -> str:
    """A Secret ``data`` value (base64 on the wire) as the text a container sees."""
    try:
        raw = base64.b64decode(value, validate=False)
    except (ValueError, TypeError):
        return value
    return raw.decode("utf-8", errors="replace")


def pod_hostname(pod: Mapping[str, Any]) -> str:
    """The pod's hostname (``HOSTNAME``, ``/etc/hostname``): ``spec.hostname`` or the
    pod's name, truncated to 63 characters (trailing ``-``/``.`` dropped), or
    ``hostname.subdomain.<ns>.svc.cluster.local`` with ``setHostnameAsFQDN``;
    ``hostNetwork`` pods have the node's name."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    if spec.get("hostNetwork"):
        return str(spec.get("nodeName") or meta.get("name") or "")
    name = str(spec.get("hostname") or meta.get("name") or "")
    if len(name) > MAX_HOSTNAME_LENGTH:
        name = name[:MAX_HOSTNAME_LENGTH].rstrip("-.")
    if spec.get("setHostnameAsFQDN") and spec.get("subdomain"):
        return f"{name}.{spec['subdomain']}.{meta.get('namespace') or 'default'}.svc.cluster.local"
    return name


# --------------------------------------------------------------------------- the environment

class _Objects:
    """The ConfigMaps/Secrets one container's environment has read (upstream's per-call maps)."""

    def __init__(self, source: Source, namespace: str) -> None:
        self.source = source
        self.ns = namespace
        self._seen: dict[tuple[str, str], Obj | None] = {}

    def get(self, kind: str, name: str) -> Obj | None:
        key = (kind, name)
        if key not in self._seen:
            self._seen[key] = (self.source.config_map(self.ns, name) if kind == "configmap"
                               else self.source.secret(self.ns, name))
        return self._seen[key]


def _data(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    data = obj.get("data") or {}
    if kind == "secret":
        return {k: decode_secret_value(str(v)) for k, v in data.items()}
    return {k: str(v) for k, v in data.items()}


def make_environment(pod: Mapping[str, Any], container: Mapping[str, Any], source: Source, *,
                     pod_ips: list[str] | None = None, host_ips: list[str] | None = None,
                     allocatable: Mapping[str, Any] | None = None) -> ResolvedEnv:
    """``makeEnvironmentVariables`` for ``container`` of ``pod`` (see the module docstring).

    Args:
        pod: the pod (wire form).
        container: one of its ``containers`` / ``initContainers``.
        source: where ConfigMaps, Secrets and Services are read.
        pod_ips / host_ips: the pod's and the node's addresses.
        allocatable: the node's ``status.allocatable`` (default limits for ``resourceFieldRef``).

    Returns:
        the variables in order (without ``HOSTNAME``).

    Raises:
        EnvError: a ConfigMap, Secret or key that is not ``optional`` is missing;
            the message is upstream's.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ns = str(meta.get("namespace") or "default")
    services = service_env(ns, spec.get("enableServiceLinks") is not False, source)
    objects = _Objects(source, ns)
    env: dict[str, str] = {}
    for ef in container.get("envFrom") or []:
        prefix = str(ef.get("prefix") or "")
        for field, kind in (("configMapRef", "configmap"), ("secretRef", "secret")):
            ref = ef.get(field)
            if ref is None:
                continue
            name = str(ref.get("name") or "")
            obj = objects.get(kind, name)
            if obj is None:
                if ref.get("optional"):
                    break
                raise EnvError(not_found_message(kind, name))
            for k, v in _data(kind, obj).items():
                env[prefix + k] = v
            break
    mapping = ChainMap(env, services)
    for entry in container.get("env") or []:
        name = entry.get("name")
        if not name:
            continue
        value = str(entry.get("value") or "")
        source_ref = entry.get("valueFrom")
        if value:
            value = expand_kube_vars(value, mapping)
        elif source_ref:
            if source_ref.get("fieldRef"):
                value = field_value(pod, str(source_ref["fieldRef"].get("fieldPath") or ""),
                                    pod_ips=pod_ips, host_ips=host_ips)
            elif source_ref.get("resourceFieldRef"):
                value = resource_value(pod, container, source_ref["resourceFieldRef"], allocatable or {})
            else:
                found = _key_ref(objects, ns, source_ref)
                if found is None:
                    continue
                value = found
        env[name] = value
    return ResolvedEnv(env, services)  # the services' variables shared, not copied


def _key_ref(objects: _Objects, ns: str, source_ref: Mapping[str, Any]) -> str | None:
    """A ``configMapKeyRef`` / ``secretKeyRef`` value; None: optional and missing (skip the variable)."""
    for field, kind, title in (("configMapKeyRef", "configmap", "ConfigMap"), ("secretKeyRef", "secret", "Secret")):
        ref = source_ref.get(field)
        if ref is None:
            continue
        name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
        optional = bool(ref.get("optional"))
        obj = objects.get(kind, name)
        if obj is None:
            if optional:
                return None
            raise EnvError(not_found_message(kind, name))
        data = _data(kind, obj)
        if key not in data:
            if optional:
                return None
            raise EnvError(f"couldn't find key {key} in {title} {ns}/{name}")
        return data[key]
    return ""

