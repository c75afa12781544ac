"""Cluster DNS as CoreDNS's ``kubernetes`` plugin answers it, plus a pod's resolver search.

Design
------
:func:`resolve` is a pure function over wire-form Services and EndpointSlices:
it first expands the query the way glibc does for a pod with
``dnsPolicy: ClusterFirst`` (``search <ns>.svc.<domain> svc.<domain> <domain>``,
``options ndots:5``), then answers each candidate name from the cluster zone
the way CoreDNS's ``kubernetes`` plugin (``pods insecure`` mode) does:

* ``<svc>.<ns>.svc.<domain>`` — the ClusterIP(s); for a headless service
  (``clusterIP: None``) the addresses of its *ready* endpoints; for an
  ExternalName service a :class:`CNAME` to ``spec.externalName``.
* ``<host>.<svc>.<ns>.svc.<domain>`` — the ready endpoint whose ``hostname`` is
  ``<host>`` (StatefulSet pods behind their governing service) or, lacking a
  hostname, whose dashed IP (``10-0-0-5``) is ``<host>``.
* ``<a-b-c-d>.<ns>.pod.<domain>`` — the IP spelled by the label.

Everything else in (or outside) the zone is NXDOMAIN, raised as
:class:`NXDomain` (the emulated cluster has no upstream resolver).  Answers are
sorted so they are deterministic (real clients would see them shuffled).

A pod's name-service files
--------------------------
What the kubelet (v1.33) and containerd put at a container's ``/etc/resolv.conf``
and ``/etc/hosts`` (:mod:`k8semu.node.volumes` mounts them into every container):

* :func:`pod_dns_config` is ``dns.Configurer.GetPodDNS``
  (``pkg/kubelet/network/dns/dns.go``): the node's resolver (:func:`parse_resolv_conf`
  of its ``/etc/resolv.conf``) is the base; ``ClusterFirst`` (and
  ``ClusterFirstWithHostNet``) replace its nameservers with the kubelet's
  ``clusterDNS`` (:data:`CLUSTER_DNS`, the ``kube-dns`` Service that kubeadm
  creates), put ``<ns>.svc.<domain> svc.<domain> <domain>`` before the node's
  search domains and set ``options ndots:5``; ``ClusterFirst`` on a
  ``hostNetwork`` pod falls back to ``Default`` (the node's resolver as it is);
  ``None`` starts empty. ``spec.dnsConfig`` is then appended (nameservers and
  searches without duplicates, options merged by name, the pod's value winning)
  and the result cut to 3 nameservers and 32 search domains / 2048 characters.
  :func:`resolv_conf_text` writes it the way containerd does (``search``,
  ``nameserver`` lines, ``options``), or copies the node's file when all is empty.
* :func:`hosts_file` is ``managedHostsFileContent`` / ``nodeHostsFileContent``
  (``pkg/kubelet/kubelet_pods.go``): the ``# Kubernetes-managed hosts file.``
  boilerplate, one line per pod IP (``<ip>\t<hostname>.<subdomain>.<ns>.svc.<domain>\t<hostname>``
  with ``spec.subdomain``, else ``<ip>\t<hostname>``), then ``hostAliases``;
  ``hostNetwork`` pods get the node's ``/etc/hosts`` under the ``(host network)``
  header.

Not modelled: the ``DNSConfigForming`` warning event when limits cut the
configuration (the lists are cut silently). Upstream builds the merged option
list from a Go map, so its order varies between pod starts; here it is the
node's (or cluster) options in order, then the pod's new ones in order.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["CNAME", "NXDomain", "resolve", "search_path", "NDOTS", "CLUSTER_DNS", "CLUSTER_DOMAIN",
           "NODE_RESOLV_CONF", "parse_resolv_conf", "pod_dns_config", "resolv_conf_text", "pod_resolv_conf",
           "pod_host_and_domain", "hosts_file"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NDOTS = 5  # kubelet writes "options ndots:5" for ClusterFirst pods
#: The kubelet's ``clusterDNS`` (kubeadm's ``kubelet-config``): the ClusterIP of Service ``kube-system/kube-dns``.
CLUSTER_DNS = "10.96.0.10"
#: The kubelet's ``clusterDomain``.
CLUSTER_DOMAIN = "cluster.local"
#: An emulated node's ``/etc/resolv.conf`` (a kind node's: the Docker network's gateway, no search domains).
NODE_RESOLV_CONF = "nameserver 172.18.0.1\noptions edns0 trust-ad ndots:0\n"
#: ``validation.MaxDNSNameservers``, and the ``ExpandedDNSConfig`` limits (GA since v1.28).
MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32
MAX_SEARCH_CHARS = 2048
_DNS1123_SUBDOMAIN_MAX = 253
#: ``managedHostsHeader`` / ``managedHostsHeaderWithHostNetwork``.
HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
_HOSTS_BOILERPLATE = ("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
                      "fe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
_MAX_HOSTNAME = 63


class CNAME(str):
    """An answer that is a CNAME target (ExternalName services), not an address.

    It is a ``str`` (compare it like one); test ``isinstance(x, CNAME)`` to tell it
    from an A/AAAA answer.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"CNAME({str.__repr__(self)})"


class NXDomain(LookupError):
    """The name does not exist (DNS rcode NXDOMAIN). ``name`` is the query as given."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}: NXDOMAIN")
        self.name = name


def search_path(namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """The ``search`` line kubelet writes into a ClusterFirst pod's resolv.conf."""
    return [f"{namespace}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain]


def resolve(name: str, services: Iterable[dict], slices: Iterable[dict],
            search_namespace: str | None, cluster_domain: str = "cluster.local") -> list[str]:
    """Resolve ``name`` as a pod in ``search_namespace`` would, against cluster DNS.

    Args:
        name: the queried name; a trailing dot makes it absolute (no search).
        services / slices: wire-form ``v1 Service`` / ``discovery.k8s.io/v1 EndpointSlice``.
        search_namespace: the querying pod's namespace (enables the search path), or
            None to resolve ``name`` only as given.
        cluster_domain: the cluster zone (kubelet ``clusterDomain``).

    Returns:
        Addresses as strings (sorted), or ``[CNAME(target)]`` for an ExternalName service.

    Raises:
        NXDomain: no candidate name exists.
    """
    services = list(services)
    slices = list(slices)
    query = name.strip().lower()
    if not query or query == ".":
        raise NXDomain(name)
    zone = cluster_domain.strip(".").lower()
    if query.endswith("."):
        candidates = [query.rstrip(".")]
    else:
        searched = [f"{query}.{d}" for d in search_path(search_namespace, zone)] if search_namespace else []
        # glibc: with at least ndots dots, try the name as-is first, else last.
        candidates = [query] + searched if query.count(".") >= NDOTS else searched + [query]
    for cand in candidates:
        answer = _answer(cand, services, slices, zone)
        if answer:
            return answer
    raise NXDomain(name)


def _answer(fqdn: str, services: list[dict], slices: list[dict], zone: str) -> list[str]:
    """CoreDNS kubernetes plugin for one absolute name; [] means NXDOMAIN/NODATA."""
    suffix = "." + zone
    if not fqdn.endswith(suffix):
        return []
    labels = fqdn[: -len(suffix)].split(".")
    if len(labels) < 2:
        return []
    kind, rest = labels[-1], labels[:-1]
    if kind == "pod":
        return _pod_answer(rest)
    if kind != "svc" or len(rest) not in (2, 3):
        return []  # namespace-only, SRV and wildcard queries are not modelled
    endpoint = rest[0] if len(rest) == 3 else None
    svc_name, ns = rest[-2], rest[-1]
    svc = next((s for s in services
                if (s.get("metadata") or {}).get("name") == svc_name
                and ((s.get("metadata") or {}).get("namespace") or "default") == ns), None)
    if svc is None:
        return []
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        target = (spec.get("externalName") or "").rstrip(".")
        return [CNAME(target)] if endpoint is None and target else []
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    headless = not cluster_ips or cluster_ips[0] == "None"
    if endpoint is None and not headless:
        return list(cluster_ips)
    ips = set()
    for addr, hostname in _ready_addresses(slices, ns, svc_name):
        if endpoint is None or endpoint == hostname:
            ips.add(addr)
    return sorted(ips, key=ipaddress.ip_address)


def _ready_addresses(slices: list[dict], ns: str, svc_name: str) -> list[tuple[str, str]]:
    """(address, DNS hostname) for each ready endpoint address of the service."""
    out = []
    for sl in slices:
        meta = sl.get("metadata") or {}
        if (meta.get("namespace") or "default") != ns:
            continue
        if (meta.get("labels") or {}).get(SERVICE_NAME_LABEL) != svc_name:
            continue
        for ep in sl.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            for addr in ep.get("addresses") or []:
                host = ep.get("hostname") or addr.replace(".", "-").replace(":", "-")
                out.append((addr, host.lower()))
    return out


def _pod_answer(rest: list[str]) -> list[str]:
    """``<dashed-ip>.<ns>.pod.<zone>`` -> the IP (CoreDNS ``pods insecure``)."""
    if len(rest) != 2:
        return []
    label = rest[0]
    for text in (label.replace("-", "."), label.replace("-", ":")):
        try:
            return [str(ipaddress.ip_address(text))]
        except ValueError:
            continue
    return []


# --------------------------------------------------------------------------- a pod's resolv.conf and hosts

def parse_resolv_conf(text: str) -> tuple[list[str], list[str], list[str]]:
    """``parseResolvConf``: (nameservers, searches, options) of a resolv.conf. ``nameserver``
    lines accumulate; the last ``search`` and the last ``options`` line win; search domains
    lose a trailing dot; ``#`` lines are skipped."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for line in text.split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("#"):
            continue
        fields = trimmed.split()
        if not fields:
            continue
        if fields[0] == "nameserver" and len(fields) >= 2:
            servers.append(fields[1])
        elif fields[0] == "search":
            searches = [f[:-1] if f.endswith(".") else f for f in fields[1:]]
        elif fields[0] == "options":
            options = fields[1:]
    return servers, searches, options


def _unique(items: Iterable[str]) -> list[str]:
    """``omitDuplicates``: first occurrences, in order."""
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _merge_options(existing: list[str], pod_options: Iterable[dict]) -> list[str]:
    """``mergeDNSOptions``: by option name, the pod's ``dnsConfig.options`` winning (deterministic
    order: existing names first, then new ones)."""
    merged: dict[str, str] = {}
    for op in existing:
        name, _, value = op.partition(":")
        merged[name] = value
    for op in pod_options:
        name = str((op or {}).get("name") or "")
        value = (op or {}).get("value")
        merged[name] = "" if value is None else str(value)
    return [f"{k}:{v}" if v != "" else k for k, v in merged.items()]


def _fit_searches(searches: list[str]) -> list[str]:
    """``formDNSSearchFitsLimits`` (``ExpandedDNSConfig``): at most 32 domains, none over 253
    characters, the line at most 2048 characters (dropping domains from the end)."""
    out = [s for s in searches[:MAX_SEARCH_PATHS] if len(s) <= _DNS1123_SUBDOMAIN_MAX]
    while out and len(" ".join(out)) > MAX_SEARCH_CHARS:
        out.pop()
    return out


def pod_dns_config(pod: dict, node_resolv_conf: str = NODE_RESOLV_CONF, *,
                   cluster_dns: Iterable[str] = (CLUSTER_DNS,),
                   cluster_domain: str = CLUSTER_DOMAIN) -> tuple[list[str], list[str], list[str]]:
    """``GetPodDNS``: the (nameservers, searches, options) the kubelet gives the pod's sandbox.

    Args:
        pod: the wire-form Pod (``spec.dnsPolicy``, ``spec.hostNetwork``, ``spec.dnsConfig``,
            ``metadata.namespace``).
        node_resolv_conf: the node's ``/etc/resolv.conf`` (the kubelet's ``resolvConf``).
        cluster_dns / cluster_domain: the kubelet's ``clusterDNS`` / ``clusterDomain``.
    """
    spec = pod.get("spec") or {}
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    servers, searches, options = parse_resolv_conf(node_resolv_conf)
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "None":
        servers, searches, options = [], [], []
    elif policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not spec.get("hostNetwork")) \
            or policy not in ("ClusterFirst", "Default"):
        dns = list(cluster_dns)
        if dns:  # without clusterDNS the kubelet falls back to Default
            servers = dns
            if cluster_domain:
                searches = _unique([f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain]
                                   + searches)
            options = [f"ndots:{NDOTS}"]
    extra = spec.get("dnsConfig")
    if extra is not None:
        servers = _unique(servers + [str(x) for x in extra.get("nameservers") or []])
        searches = _unique(searches + [str(x) for x in extra.get("searches") or []])
        options = _merge_options(options, extra.get("options") or [])
    return servers[:MAX_NAMESERVERS], _fit_searches(searches), options


def resolv_conf_text(servers: list[str], searches: list[str], options: list[str],
                     node_resolv_conf: str = NODE_RESOLV_CONF) -> str:
    """containerd's ``parseDNSOptions``: ``search``, one ``nameserver`` line each, ``options``;
    with nothing to write, the sandbox gets a copy of the node's resolv.conf."""
    text = ""
    if searches:
        text += "search " + " ".join(searches) + "\n"
    for server in servers:
        text += f"nameserver {server}\n"
    if options:
        text += "options " + " ".join(options) + "\n"
    return text or node_resolv_conf


def pod_resolv_conf(pod: dict, node_resolv_conf: str = NODE_RESOLV_CONF) -> str:
    """The pod's ``/etc/resolv.conf`` (:func:`pod_dns_config` written by :func:`resolv_conf_text`)."""
    return resolv_conf_text(*pod_dns_config(pod, node_resolv_conf), node_resolv_conf=node_resolv_conf)


def pod_host_and_domain(pod: dict, cluster_domain: str = CLUSTER_DOMAIN) -> tuple[str, str]:
    """``GeneratePodHostNameAndDomain``: the short hostname (``spec.hostname`` or the pod's name,
    cut to 63 characters without a trailing ``-``/``.``) and the domain
    (``<subdomain>.<ns>.svc.<domain>`` with ``spec.subdomain``, else empty)."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    host = str(spec.get("hostname") or meta.get("name") or "")
    if len(host) > _MAX_HOSTNAME:
        host = host[:_MAX_HOSTNAME].rstrip("-.")
    sub = spec.get("subdomain")
    domain = f"{sub}.{meta.get('namespace') or 'default'}.svc.{cluster_domain}" if sub else ""
    return host, domain


def _alias_lines(pod: dict) -> str:
    """``hostsEntriesFromHostAliases``: a blank line, the comment, one line per alias IP."""
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if not aliases:
        return ""
    return "\n# Entries added by HostAliases.\n" + "".join(
        f"{a.get('ip') or ''}\t" + "\t".join(str(h) for h in a.get("hostnames") or []) + "\n" for a in aliases)


def hosts_file(pod: dict, pod_ips: Iterable[str], node_hosts: str = "",
               cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """The kubelet-managed ``/etc/hosts`` of the pod (``ensureHostsFile``): for a ``hostNetwork``
    pod the node's ``node_hosts`` under the host-network header, else the boilerplate and a line per
    pod IP; ``hostAliases`` after either."""
    if (pod.get("spec") or {}).get("hostNetwork"):
        return HOSTS_HEADER_HOST_NETWORK + node_hosts + _alias_lines(pod)
    host, domain = pod_host_and_domain(pod, cluster_domain)
    own = "".join(f"{ip}\t{host}.{domain}\t{host}\n" if domain else f"{ip}\t{host}\n" for ip in pod_ips)
    return HOSTS_HEADER + _HOSTS_BOILERPLATE + own + _alias_lines(pod)
