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
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["CNAME", "NXDomain", "resolve", "search_path", "NDOTS"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NDOTS = 5  # kubelet writes "options ndots:5" for ClusterFirst pods


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
