"""kube-proxy (iptables mode) as pure functions: a forwarding table and connection routing.

Design
------
The per-node kube-proxy task (written elsewhere) watches Services and
EndpointSlices and calls :func:`build_rules` with the full current lists; the
result is an immutable :class:`ProxyTable` — what kube-proxy's
``syncProxyRules`` would have programmed on that node.  :func:`route` then
plays one new connection through that table, the way a SYN packet walks the
``nat`` and ``filter`` chains, and says where it ends up.

What is mirrored from upstream (``pkg/proxy``, ``pkg/proxy/iptables``):

* Service ports are named ``namespace/name:portName`` (``namespace/name`` when
  the port is unnamed) and tie to EndpointSlice ports by (port name,
  protocol); slices tie to their Service by the ``kubernetes.io/service-name``
  label.  Endpoints are deduplicated by ``ip:port`` across slices.
* Chain names: ``KUBE-SVC-``/``KUBE-SVL-``/``KUBE-EXT-``/``KUBE-FW-`` + the first
  16 characters of base32(sha256(portName + lowercase protocol)), and
  ``KUBE-SEP-`` + the same hash over portName + protocol + ``ip:port``
  (``portProtoHash`` / ``servicePortEndpointChainName``).
* ``CategorizeEndpoints``: only Ready endpoints are used; if none are Ready,
  Serving+Terminating ones are the fallback (independently for the Cluster and
  the Local policy).  Topology hints are not modelled.
* Traffic policies: ``internalTrafficPolicy: Local`` sends cluster-IP traffic
  only to endpoints on this node (DROP if there are none here but some
  elsewhere); ``externalTrafficPolicy: Local`` sends NodePort / external-IP /
  load-balancer traffic only to endpoints on the receiving node, keeps the
  client source (no SNAT) and DROPs when that node has none — except that pod
  traffic (source inside ``cluster_cidr``) and traffic from the node itself is
  "short-circuited" to the Cluster endpoints, as upstream's KUBE-EXT chain does.
* A service port with no usable endpoints anywhere REJECTs (ICMP port
  unreachable, i.e. the client sees "connection refused"). Headless
  (``clusterIP: None``) and ExternalName services get no rules at all.
* Load balancing is iptables' ``statistic --mode random`` chain: endpoint *i*
  of *n* is taken with probability ``1/(n-i)``, which is uniform overall;
  :func:`route` draws exactly that chain from the caller's seeded RNG.
* ``sessionAffinity: ClientIP`` is the ``recent`` module: a client that hit an
  endpoint within ``timeoutSeconds`` (default 10800) of *its last connection*
  goes back to it, if that endpoint is still a candidate.
* ``loadBalancerSourceRanges`` (KUBE-FW chain) drop load-balancer traffic from
  other sources.

NodePorts: kube-proxy's default ``--nodeport-addresses`` matches every local
address (``-m addrtype --dst-type LOCAL``).  Here a node's addresses come from
``node_ips`` (node name -> IP).  :func:`route` accepts a NodePort connection
to *any* node's IP and evaluates it as the node owning that IP would (so
``externalTrafficPolicy: Local`` looks at that node's endpoints); with no
``node_ips`` at all, a NodePort matches whatever destination address no other
rule claimed (the "0.0.0.0" case).

Every function here is pure: inputs (wire-form dicts) are never mutated, output
order is sorted, randomness comes only from the ``random.Random`` passed in.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Endpoint",
    "Frontend",
    "ServicePortRules",
    "ProxyTable",
    "RouteResult",
    "build_rules",
    "route",
    "service_port_name",
    "port_proto_hash",
    "service_chain_name",
    "endpoint_chain_name",
    "DEFAULT_AFFINITY_TIMEOUT",
]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_AFFINITY_TIMEOUT = 10800  # seconds; apiserver default for sessionAffinityConfig.clientIP
MASQ_MARK = "0x4000"


# --------------------------------------------------------------------------- naming


def service_port_name(namespace: str, name: str, port_name: str) -> str:
    """``ServicePortName.String()``: ``ns/name:port``, or ``ns/name`` for an unnamed port."""
    base = f"{namespace}/{name}"
    return f"{base}:{port_name}" if port_name else base


def port_proto_hash(svc_port_name: str, protocol: str) -> str:
    """Upstream ``portProtoHash``: first 16 chars of base32(sha256(name + lowercase protocol))."""
    digest = hashlib.sha256((svc_port_name + protocol.lower()).encode()).digest()
    return base64.b32encode(digest).decode()[:16]


def service_chain_name(svc_port_name: str, protocol: str, prefix: str = "KUBE-SVC-") -> str:
    """``KUBE-SVC-<hash>`` (or another per-service prefix: ``KUBE-SVL-``, ``KUBE-EXT-``, ``KUBE-FW-``)."""
    return prefix + port_proto_hash(svc_port_name, protocol)


@functools.lru_cache(maxsize=65536)
def endpoint_chain_name(svc_port_name: str, protocol: str, endpoint: str) -> str:
    """Upstream ``servicePortEndpointChainName``: ``KUBE-SEP-`` + hash of name+protocol+``ip:port``."""
    digest = hashlib.sha256((svc_port_name + protocol.lower() + endpoint).encode()).digest()
    return "KUBE-SEP-" + base64.b32encode(digest).decode()[:16]


@functools.lru_cache(maxsize=65536)
def _canonical_ip(ip: str) -> str:
    """An address in canonical form (``ValueError`` if malformed)."""
    return str(ipaddress.ip_address(ip))


def _join_host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _family(ip: str) -> str:
    return "IPv6" if ":" in ip else "IPv4"


def _in_cidr(ip: str, cidr: str | None) -> bool:
    if not cidr:
        return False
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Endpoint:
    """One backend of a service port (an EndpointSlice endpoint + the slice port's number).

    ``ready``/``serving``/``terminating`` follow EndpointSlice semantics (a missing
    ``ready`` or ``serving`` counts as true, a missing ``terminating`` as false).
    ``pod_ref`` is ``namespace/name`` from a Pod ``targetRef`` (None otherwise);
    ``chain`` is the endpoint's ``KUBE-SEP-*`` chain.
    """

    ip: str
    port: int
    ready: bool
    serving: bool
    terminating: bool
    node_name: str | None
    zone: str | None
    pod_ref: str | None
    chain: str

    @property
    def addr(self) -> str:
        """``ip:port`` (``[ip]:port`` for IPv6), as in the DNAT ``--to-destination``."""
        return _join_host_port(self.ip, self.port)


@dataclass(frozen=True)
class Frontend:
    """An address a service port is reachable on.

    ``kind`` is ``ClusterIP``, ``ExternalIP``, ``LoadBalancer`` or ``NodePort``; for a
    NodePort, ``ip`` is a node's IP, or ``0.0.0.0`` meaning "any address of the node".
    """

    kind: str
    ip: str
    port: int
    protocol: str


@dataclass(frozen=True)
class ServicePortRules:
    """Everything kube-proxy derives for one service port in one IP family.

    ``endpoints`` holds every endpoint from the slices (sorted by ``ip:port``);
    ``cluster_endpoints`` / ``local_endpoints`` are the usable ones for the Cluster
    and Local policies as seen from the table's node (``CategorizeEndpoints``);
    ``has_endpoints`` is true when some node has a usable endpoint.
    ``affinity_timeout`` is None unless ``sessionAffinity: ClientIP``.
    """

    name: str
    namespace: str
    service: str
    port_name: str
    protocol: str
    family: str
    cluster_ip: str
    port: int
    node_port: int
    external_ips: tuple[str, ...]
    lb_ips: tuple[str, ...]
    lb_source_ranges: tuple[str, ...]
    health_check_node_port: int
    internal_local: bool
    external_local: bool
    affinity_timeout: int | None
    endpoints: tuple[Endpoint, ...]
    cluster_endpoints: tuple[Endpoint, ...]
    local_endpoints: tuple[Endpoint, ...]
    has_endpoints: bool
    frontends: tuple[Frontend, ...]

    @property
    def externally_accessible(self) -> bool:
        """NodePort, external IPs or load-balancer VIPs present (upstream ``ExternallyAccessible``)."""
        return bool(self.node_port or self.lb_ips or self.external_ips)

    @property
    def uses_cluster_endpoints(self) -> bool:
        """Upstream ``UsesClusterEndpoints`` (also needed for the ETP=Local short-circuit)."""
        return not self.internal_local or self.externally_accessible

    @property
    def uses_local_endpoints(self) -> bool:
        """Upstream ``UsesLocalEndpoints``."""
        return self.internal_local or (self.external_local and self.externally_accessible)

    @property
    def svc_chain(self) -> str:
        return service_chain_name(self.name, self.protocol, "KUBE-SVC-")

    @property
    def svl_chain(self) -> str:
        return service_chain_name(self.name, self.protocol, "KUBE-SVL-")

    @property
    def ext_chain(self) -> str:
        return service_chain_name(self.name, self.protocol, "KUBE-EXT-")

    @property
    def fw_chain(self) -> str:
        return service_chain_name(self.name, self.protocol, "KUBE-FW-")

    @property
    def uses_fw_chain(self) -> bool:
        return self.has_endpoints and bool(self.lb_ips) and bool(self.lb_source_ranges)


@dataclass(frozen=True)
class RouteResult:
    """Outcome of one simulated new connection.

    ``kind``: ``endpoint`` (DNAT to ``backend_ip:backend_port``, pod ``pod_ref``),
    ``reject`` (no usable endpoints: the client gets ICMP port-unreachable, i.e.
    connection refused), ``drop`` (silently dropped: the client times out), or
    ``no-rule`` (the destination is not a service frontend; deliver as addressed).
    ``service`` is ``namespace/name``, ``service_port`` the service port name;
    ``masquerade`` is true when the backend sees the node's IP instead of the
    client's; ``reason`` is the iptables comment that decided a reject/drop.
    """

    kind: str
    backend_ip: str | None = None
    backend_port: int | None = None
    pod_ref: str | None = None
    service: str | None = None
    service_port: str | None = None
    masquerade: bool = False
    reason: str = ""


@dataclass(frozen=True)
class ProxyTable:
    """The forwarding state of one node: all service ports, sorted by (family, name).

    ``node_ips`` maps node name -> node IP for every known node (may be empty);
    ``cluster_cidr`` is kube-proxy's ``--cluster-cidr`` (pod traffic detection),
    or None when unset.
    """

    node_name: str
    node_ips: Mapping[str, str]
    cluster_cidr: str | None
    services: tuple[ServicePortRules, ...]
    _vips: Mapping[tuple[str, int, str], tuple[str, ServicePortRules]] = field(
        default_factory=dict, repr=False, compare=False)
    _node_ports: Mapping[tuple[int, str, str], ServicePortRules] = field(
        default_factory=dict, repr=False, compare=False)

    def get(self, svc_port_name: str, family: str = "IPv4") -> ServicePortRules | None:
        """The rules for ``namespace/name:port`` in ``family``, or None."""
        for sp in self.services:
            if sp.name == svc_port_name and sp.family == family:
                return sp
        return None

    def dump(self, family: str = "IPv4") -> str:
        """A simplified ``iptables-save`` of kube-proxy's ``filter`` and ``nat`` tables.

        Laid out like upstream's sorted test expectations: chain declarations
        sorted by name, then rules grouped per chain (KUBE-NODEPORTS, then
        KUBE-SERVICES, then the rest sorted by chain name), each chain's rules in
        evaluation order.  ``family`` selects the ip(6)tables view.
        """
        return _dump(self, family)


# --------------------------------------------------------------------------- building


def _bool(v: object, default: bool) -> bool:
    return default if v is None else bool(v)


def _categorize(sp_endpoints: tuple[Endpoint, ...], uses_cluster: bool, uses_local: bool,
                node: str) -> tuple[tuple[Endpoint, ...], tuple[Endpoint, ...], bool]:
    """Upstream ``CategorizeEndpoints`` without topology hints: (cluster, local, has_any)."""
    cluster: tuple[Endpoint, ...] = ()
    local: tuple[Endpoint, ...] = ()
    has_any = False
    if not sp_endpoints:
        return cluster, local, has_any
    if uses_cluster:
        cluster = tuple(e for e in sp_endpoints if e.ready)
        if not cluster:
            cluster = tuple(e for e in sp_endpoints if e.serving and e.terminating)
        has_any = bool(cluster)
    if uses_local:
        if any(e.ready or (e.serving and e.terminating) for e in sp_endpoints):
            has_any = True
        mine = [e for e in sp_endpoints if e.node_name == node]
        local = tuple(e for e in mine if e.ready)
        if not local:
            local = tuple(e for e in mine if e.serving and e.terminating)
    return cluster, local, has_any


def _slice_endpoints(slices: Iterable[dict], node_name: str
                     ) -> dict[tuple[str, str, str, str, str], dict[str, Endpoint]]:
    """(namespace, service, port name, protocol, family) -> {ip:port: Endpoint}."""
    out: dict[tuple[str, str, str, str, str], dict[str, Endpoint]] = {}
    for sl in slices:
        meta = sl.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        family = sl.get("addressType") or "IPv4"
        if not svc or family not in ("IPv4", "IPv6"):
            continue
        ns = meta.get("namespace") or "default"
        for p in sl.get("ports") or []:
            num = p.get("port")
            if not num:
                continue
            pname = p.get("name") or ""
            proto = p.get("protocol") or "TCP"
            spn = service_port_name(ns, svc, pname)
            bucket = out.setdefault((ns, svc, pname, proto, family), {})
            for ep in sl.get("endpoints") or []:
                addrs = ep.get("addresses") or []
                if not addrs:
                    continue
                ip = _canonical_ip(addrs[0])
                cond = ep.get("conditions") or {}
                ready = _bool(cond.get("ready"), True)
                ref = ep.get("targetRef") or {}
                pod_ref = None
                if ref.get("kind", "Pod") == "Pod" and ref.get("name"):
                    pod_ref = f"{ref.get('namespace') or ns}/{ref['name']}"
                addr = _join_host_port(ip, int(num))
                e = Endpoint(
                    ip=ip, port=int(num), ready=ready,
                    serving=_bool(cond.get("serving"), ready),
                    terminating=_bool(cond.get("terminating"), False),
                    node_name=ep.get("nodeName"), zone=ep.get("zone"), pod_ref=pod_ref,
                    chain=endpoint_chain_name(spn, proto, addr),
                )
                # Upstream dedups overlapping slices, preferring the copy on this node.
                if addr not in bucket or e.node_name == node_name:
                    bucket[addr] = e
    return out


def build_rules(node_name: str, services: Iterable[dict], slices: Iterable[dict],
                node_ips: dict[str, str] | None = None, *,
                cluster_cidr: str | None = None) -> ProxyTable:
    """Build the forwarding table kube-proxy would program on ``node_name``.

    Args:
        node_name: the node this kube-proxy runs on (decides which endpoints are local).
        services: wire-form ``v1 Service`` dicts (any namespaces).
        slices: wire-form ``discovery.k8s.io/v1 EndpointSlice`` dicts; tied to a Service
            by label ``kubernetes.io/service-name`` in the same namespace.
        node_ips: node name -> node IP for every node (NodePort addresses); optional.
        cluster_cidr: kube-proxy ``--cluster-cidr``; enables upstream's "is this pod
            traffic?" rules (no SNAT for pod -> cluster IP, ETP=Local short-circuit).

    Returns:
        A :class:`ProxyTable`. Headless and ExternalName services contribute nothing.
        Malformed IP addresses raise ``ValueError``.
    """
    node_ips = dict(node_ips or {})
    eps_by_port = _slice_endpoints(slices, node_name)
    rules: list[ServicePortRules] = []
    for svc in services:
        rules.extend(_service_rules(svc, node_name, node_ips, eps_by_port))
    rules.sort(key=lambda r: (r.family, r.name, r.protocol))

    vips: dict[tuple[str, int, str], tuple[str, ServicePortRules]] = {}
    node_ports: dict[tuple[int, str, str], ServicePortRules] = {}
    # KUBE-SERVICES order: every cluster IP, external IP and LB IP rule, then NodePorts last.
    for sp in rules:
        for fe in sp.frontends:
            if fe.kind == "NodePort":
                node_ports.setdefault((fe.port, fe.protocol, sp.family), sp)
            else:
                vips.setdefault((fe.ip, fe.port, fe.protocol), (fe.kind, sp))
    return ProxyTable(node_name=node_name, node_ips=node_ips, cluster_cidr=cluster_cidr,
                      services=tuple(rules), _vips=vips, _node_ports=node_ports)


def _service_rules(svc: dict, node_name: str, node_ips: dict[str, str],
                   eps_by_port: dict) -> list[ServicePortRules]:
    meta = svc.get("metadata") or {}
    spec = svc.get("spec") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name") or ""
    stype = spec.get("type") or "ClusterIP"
    cluster_ips = list(spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []))
    if stype == "ExternalName" or not cluster_ips or cluster_ips[0] in ("", "None"):
        return []  # upstream ShouldSkipService
    externally = stype in ("NodePort", "LoadBalancer") or (
        stype == "ClusterIP" and bool(spec.get("externalIPs")))
    external_local = externally and spec.get("externalTrafficPolicy") == "Local"
    internal_local = spec.get("internalTrafficPolicy") == "Local"
    affinity = None
    if spec.get("sessionAffinity") == "ClientIP":
        cfg = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {})
        affinity = int(cfg.get("timeoutSeconds") or DEFAULT_AFFINITY_TIMEOUT)
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    lb_all = [i["ip"] for i in ingress if i.get("ip") and i.get("ipMode", "VIP") == "VIP"]
    ranges = [r.strip() for r in spec.get("loadBalancerSourceRanges") or []]
    hc = int(spec.get("healthCheckNodePort") or 0) if stype == "LoadBalancer" and external_local else 0

    out = []
    for cip in cluster_ips:
        fam = _family(cip)
        ext_ips = tuple(i for i in spec.get("externalIPs") or [] if _family(i) == fam)
        lb_ips = tuple(i for i in lb_all if _family(i) == fam)
        src_ranges = tuple(r for r in ranges if _family(r) == fam)
        for p in spec.get("ports") or []:
            pname = p.get("name") or ""
            proto = p.get("protocol") or "TCP"
            port = int(p["port"])
            node_port = int(p.get("nodePort") or 0)
            spn = service_port_name(ns, name, pname)
            eps = tuple(sorted((eps_by_port.get((ns, name, pname, proto, fam)) or {}).values(),
                               key=lambda e: e.addr))
            accessible = bool(node_port or lb_ips or ext_ips)
            uses_cluster = not internal_local or accessible
            uses_local = internal_local or (external_local and accessible)
            cluster, local, has_any = _categorize(eps, uses_cluster, uses_local, node_name)
            fes = [Frontend("ClusterIP", cip, port, proto)]
            fes += [Frontend("ExternalIP", ip, port, proto) for ip in ext_ips]
            fes += [Frontend("LoadBalancer", ip, port, proto) for ip in lb_ips]
            if node_port:
                any_addr = "0.0.0.0" if fam == "IPv4" else "::"
                ips = sorted({ip for ip in node_ips.values() if _family(ip) == fam}) or [any_addr]
                fes += [Frontend("NodePort", ip, node_port, proto) for ip in ips]
            out.append(ServicePortRules(
                name=spn, namespace=ns, service=f"{ns}/{name}", port_name=pname, protocol=proto,
                family=fam, cluster_ip=cip, port=port, node_port=node_port,
                external_ips=ext_ips, lb_ips=lb_ips, lb_source_ranges=src_ranges,
                health_check_node_port=hc, internal_local=internal_local,
                external_local=external_local and accessible, affinity_timeout=affinity,
                endpoints=eps, cluster_endpoints=cluster, local_endpoints=local,
                has_endpoints=has_any, frontends=tuple(fes)))
    return out


# --------------------------------------------------------------------------- routing


def route(table: ProxyTable, src_ip: str, dst_ip: str, dst_port: int, protocol: str = "TCP", *,
          rng: random.Random, now: float, affinity_state: dict | None = None) -> RouteResult:
    """Play one new connection ``src_ip -> dst_ip:dst_port/protocol`` through ``table``.

    Frontends are tried in KUBE-SERVICES order (cluster IPs, external IPs, LB IPs;
    NodePorts last).  A matching frontend yields ``endpoint``, ``reject`` or ``drop``
    as upstream's rules would; anything else is ``no-rule``.

    ``rng`` drives the ``statistic --mode random`` chain (uniform over candidates).
    ``affinity_state`` (caller-owned, mutated in place) maps
    ``(service_port, client_ip) -> (endpoint "ip:port", last_seen)``; with
    ``sessionAffinity: ClientIP`` a client whose last connection was at most
    ``timeoutSeconds`` before ``now`` (virtual seconds) returns to the same
    endpoint while it is still a candidate; every routed connection refreshes it.
    """
    protocol = protocol.upper()
    hit = table._vips.get((dst_ip, dst_port, protocol))
    if hit is not None:
        kind, sp = hit
    else:
        sp = table._node_ports.get((dst_port, protocol, _family(dst_ip)))
        if sp is None or (table.node_ips and dst_ip not in table.node_ips.values()):
            return RouteResult("no-rule")
        kind = "NodePort"

    def outcome(k: str, reason: str) -> RouteResult:
        return RouteResult(k, service=sp.service, service_port=sp.name, reason=reason)

    if not sp.has_endpoints:
        return outcome("reject", f"{sp.name} has no endpoints")

    if kind == "ClusterIP":
        candidates = sp.local_endpoints if sp.internal_local else sp.cluster_endpoints
        if not candidates:
            return outcome("drop", f"{sp.name} has no local endpoints")
        masq = table.cluster_cidr is not None and not _in_cidr(src_ip, table.cluster_cidr)
    else:
        if kind == "LoadBalancer" and sp.uses_fw_chain and not _lb_source_allowed(table, sp, src_ip, dst_ip):
            return outcome("drop", f"{sp.name} traffic not accepted by {sp.fw_chain}")
        # The node that receives the packet: the NodePort's owner, else this node.
        handler = table.node_name
        if kind == "NodePort":
            handler = next((n for n, ip in sorted(table.node_ips.items()) if ip == dst_ip), handler)
        handler_ip = table.node_ips.get(handler)
        if not sp.external_local:
            candidates, masq = sp.cluster_endpoints, True
        elif _in_cidr(src_ip, table.cluster_cidr):
            candidates, masq = sp.cluster_endpoints, False  # pod traffic short-circuit
        elif src_ip == handler_ip:
            candidates, masq = sp.cluster_endpoints, True  # src-type LOCAL
        else:
            if handler == table.node_name:
                candidates = sp.local_endpoints
            else:
                candidates = _categorize(sp.endpoints, sp.uses_cluster_endpoints,
                                         sp.uses_local_endpoints, handler)[1]
            masq = False
            if not candidates:
                return outcome("drop", f"{sp.name} has no local endpoints")
        if not candidates:
            return outcome("drop", f"{sp.name} has no endpoints usable for this traffic")

    ep = _pick(sp, candidates, src_ip, rng, now, affinity_state)
    return RouteResult("endpoint", backend_ip=ep.ip, backend_port=ep.port, pod_ref=ep.pod_ref,
                       service=sp.service, service_port=sp.name,
                       masquerade=masq or src_ip == ep.ip)


def _lb_source_allowed(table: ProxyTable, sp: ServicePortRules, src_ip: str, lb_ip: str) -> bool:
    if any(_in_cidr(src_ip, c) for c in sp.lb_source_ranges):
        return True
    node_ip = table.node_ips.get(table.node_name)
    allow_from_node = node_ip is not None and any(_in_cidr(node_ip, c) for c in sp.lb_source_ranges)
    return allow_from_node and src_ip in sp.lb_ips


def _pick(sp: ServicePortRules, candidates: tuple[Endpoint, ...], src_ip: str,
          rng: random.Random, now: float, state: dict | None) -> Endpoint:
    key = (sp.name, src_ip)
    chosen = None
    if sp.affinity_timeout is not None and state is not None and key in state:
        addr, last = state[key]
        if now - last <= sp.affinity_timeout:
            chosen = next((e for e in candidates if e.addr == addr), None)
    if chosen is None:
        n = len(candidates)
        chosen = candidates[-1]
        for i, e in enumerate(candidates[:-1]):
            if rng.random() < 1.0 / (n - i):
                chosen = e
                break
    if sp.affinity_timeout is not None and state is not None:
        state[key] = (chosen.addr, now)
    return chosen


# --------------------------------------------------------------------------- dump


def _q(s: str) -> str:
    return f'"{s}"' if " " in s else s


def _dump(table: ProxyTable, family: str) -> str:
    f_chains = {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
                "KUBE-PROXY-FIREWALL"}
    n_chains = {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"}
    f_rules: dict[str, list[str]] = {}
    n_rules: dict[str, list[str]] = {}

    def fr(chain: str, rule: str) -> None:
        f_rules.setdefault(chain, []).append(f"-A {chain} {rule}")

    def nr(chain: str, rule: str) -> None:
        n_chains.add(chain)
        n_rules.setdefault(chain, []).append(f"-A {chain} {rule}")

    nr("KUBE-POSTROUTING", f"-m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN")
    nr("KUBE-POSTROUTING", f"-j MARK --xor-mark {MASQ_MARK}")
    nr("KUBE-POSTROUTING", '-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE')
    nr("KUBE-MARK-MASQ", f"-j MARK --or-mark {MASQ_MARK}")
    cidr = table.cluster_cidr if table.cluster_cidr and _family(table.cluster_cidr) == family else None

    for sp in (s for s in table.services if s.family == family):
        p = sp.protocol.lower()
        match = f"-m {p} -p {p}"
        has_int = sp.has_endpoints and (not sp.internal_local or bool(sp.local_endpoints))
        has_ext = sp.has_endpoints and (not sp.external_local or bool(sp.local_endpoints))
        int_chain = sp.svl_chain if sp.internal_local else sp.svc_chain
        ext_policy = sp.svl_chain if sp.external_local else sp.svc_chain
        if not sp.has_endpoints:
            f_target, f_comment = "REJECT", f'"{sp.name} has no endpoints"'
        else:
            f_target, f_comment = "DROP", f'"{sp.name} has no local endpoints"'
        lb_chain = sp.fw_chain if sp.uses_fw_chain else sp.ext_chain
        cip = f"-d {sp.cluster_ip} --dport {sp.port}"

        if has_int:
            nr("KUBE-SERVICES", f'-m comment --comment "{sp.name} cluster IP" {match} {cip} -j {int_chain}')
        else:
            fr("KUBE-SERVICES", f"-m comment --comment {f_comment} {match} {cip} -j {f_target}")
        for ip in sp.external_ips:
            if sp.has_endpoints:
                nr("KUBE-SERVICES", f'-m comment --comment "{sp.name} external IP" {match} '
                                    f"-d {ip} --dport {sp.port} -j {sp.ext_chain}")
            if not has_ext:
                fr("KUBE-EXTERNAL-SERVICES", f"-m comment --comment {f_comment} {match} "
                                             f"-d {ip} --dport {sp.port} -j {f_target}")
        for ip in sp.lb_ips:
            if sp.has_endpoints:
                nr("KUBE-SERVICES", f'-m comment --comment "{sp.name} loadbalancer IP" {match} '
                                    f"-d {ip} --dport {sp.port} -j {lb_chain}")
            if sp.uses_fw_chain:
                fr("KUBE-PROXY-FIREWALL", f'-m comment --comment "{sp.name} traffic not accepted by '
                                          f'{sp.fw_chain}" {match} -d {ip} --dport {sp.port} -j DROP')
        if not has_ext:
            for ip in sp.lb_ips:
                fr("KUBE-EXTERNAL-SERVICES", f"-m comment --comment {f_comment} {match} "
                                             f"-d {ip} --dport {sp.port} -j {f_target}")
        if sp.node_port:
            if sp.has_endpoints:
                nr("KUBE-NODEPORTS", f"-m comment --comment {_q(sp.name)} {match} "
                                     f"--dport {sp.node_port} -j {sp.ext_chain}")
            if not has_ext:
                fr("KUBE-EXTERNAL-SERVICES", f"-m comment --comment {f_comment} -m addrtype --dst-type LOCAL "
                                             f"{match} --dport {sp.node_port} -j {f_target}")
        if sp.health_check_node_port:
            fr("KUBE-NODEPORTS", f'-m comment --comment "{sp.name} health check node port" '
                                 f"-m tcp -p tcp --dport {sp.health_check_node_port} -j ACCEPT")

        if has_int and cidr:
            nr(int_chain, f'-m comment --comment "{sp.name} cluster IP" {match} {cip} '
                          f"! -s {cidr} -j KUBE-MARK-MASQ")
        if sp.has_endpoints and sp.externally_accessible:
            ext = sp.ext_chain
            n_chains.add(ext)
            if not sp.external_local:
                nr(ext, f'-m comment --comment "masquerade traffic for {sp.name} external destinations" '
                        "-j KUBE-MARK-MASQ")
            else:
                if cidr:
                    nr(ext, f'-m comment --comment "pod traffic for {sp.name} external destinations" '
                            f"-s {cidr} -j {sp.svc_chain}")
                nr(ext, f'-m comment --comment "masquerade LOCAL traffic for {sp.name} external destinations" '
                        "-m addrtype --src-type LOCAL -j KUBE-MARK-MASQ")
                nr(ext, f'-m comment --comment "route LOCAL traffic for {sp.name} external destinations" '
                        f"-m addrtype --src-type LOCAL -j {sp.svc_chain}")
            if has_ext:
                nr(ext, f"-j {ext_policy}")
        if sp.uses_fw_chain:
            fw = sp.fw_chain
            args = f'-m comment --comment "{sp.name} loadbalancer IP"'
            for c in sp.lb_source_ranges:
                nr(fw, f"{args} -s {c} -j {sp.ext_chain}")
            node_ip = table.node_ips.get(table.node_name)
            if node_ip and any(_in_cidr(node_ip, c) for c in sp.lb_source_ranges):
                for ip in sp.lb_ips:
                    nr(fw, f"{args} -s {ip} -j {sp.ext_chain}")
            nr(fw, f'-m comment --comment "other traffic to {sp.name} will be dropped by KUBE-PROXY-FIREWALL"')

        if sp.cluster_endpoints and sp.uses_cluster_endpoints:
            _lb_rules(nr, sp, sp.svc_chain, sp.cluster_endpoints)
        if sp.local_endpoints and sp.uses_local_endpoints:
            _lb_rules(nr, sp, sp.svl_chain, sp.local_endpoints)
        reachable = {e.addr: e for e in sp.cluster_endpoints + sp.local_endpoints}
        for e in sorted(reachable.values(), key=lambda e: e.chain):
            nr(e.chain, f"-m comment --comment {_q(sp.name)} -s {e.ip} -j KUBE-MARK-MASQ")
            recent = f" -m recent --name {e.chain} --set" if sp.affinity_timeout is not None else ""
            nr(e.chain, f"-m comment --comment {_q(sp.name)}{recent} {match} "
                        f"-j DNAT --to-destination {e.addr}")

    nr("KUBE-SERVICES", '-m comment --comment "kubernetes service nodeports; NOTE: this must be the '
                        'last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS')
    fr("KUBE-FORWARD", "-m conntrack --ctstate INVALID -j DROP")
    fr("KUBE-FORWARD", '-m comment --comment "kubernetes forwarding rules" '
                       f"-m mark --mark {MASQ_MARK}/{MASQ_MARK} -j ACCEPT")
    fr("KUBE-FORWARD", '-m comment --comment "kubernetes forwarding conntrack rule" '
                       "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")

    lines = ["*filter"] + [f":{c} - [0:0]" for c in sorted(f_chains)]
    lines += _ordered_rules(f_rules) + ["COMMIT", "*nat"]
    lines += [f":{c} - [0:0]" for c in sorted(n_chains)]
    lines += _ordered_rules(n_rules) + ["COMMIT"]
    return "\n".join(lines) + "\n"


def _lb_rules(nr, sp: ServicePortRules, chain: str, eps: tuple[Endpoint, ...]) -> None:
    """Upstream ``writeServiceToEndpointRules``: affinity checks, then the probability ladder."""
    if sp.affinity_timeout is not None:
        for e in eps:
            nr(chain, f'-m comment --comment "{sp.name} -> {e.addr}" -m recent --name {e.chain} '
                      f"--rcheck --seconds {sp.affinity_timeout} --reap -j {e.chain}")
    n = len(eps)
    for i, e in enumerate(eps):
        stat = f" -m statistic --mode random --probability {1.0 / (n - i):.10f}" if i < n - 1 else ""
        nr(chain, f'-m comment --comment "{sp.name} -> {e.addr}"{stat} -j {e.chain}')


def _ordered_rules(rules: dict[str, list[str]]) -> list[str]:
    first = ["KUBE-NODEPORTS", "KUBE-SERVICES"]
    order = [c for c in first if c in rules] + sorted(c for c in rules if c not in first)
    return [line for c in order for line in rules[c]]
