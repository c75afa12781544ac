"""NetworkPolicy enforcement (``networking.k8s.io/v1``), as a policy-capable CNI plugin applies it.

Pure functions over API dicts (pods, namespaces, NetworkPolicies as the API server stores them,
defaults applied), so that the in-container network (``wget``, ``curl``, ``nslookup`` in an
exec'd process: :class:`k8semu.node.podnetwork.PodNetwork`) and, later, kube-proxy or other
traffic can share one reading of the rules.

Semantics mirrored from the Kubernetes API reference and the "Network Policies" concept page
(and the upstream conformance tests, ``test/e2e/network/netpol``):

* A pod is *isolated for ingress* (egress) when at least one NetworkPolicy in its namespace
  selects it (``spec.podSelector``; ``{}`` selects every pod of the namespace) and lists
  ``Ingress`` (``Egress``) in ``spec.policyTypes``. The API server defaults ``policyTypes`` to
  ``["Ingress"]`` plus ``"Egress"`` when the policy has egress rules
  (:func:`k8semu.api.defaults._default_network_policy`); :func:`policy_types` repeats that for
  objects that bypassed defaulting.
* A non-isolated direction allows everything. For an isolated one the allowed connections are
  the union of the rules of every policy that selects the pod for that direction; policies never
  conflict and are never ordered.
* A rule with no ``from`` / ``to`` (or an empty list) matches every peer; with no ``ports`` (or an
  empty list) every port and protocol. Otherwise a peer is one of: ``podSelector`` alone (pods of
  the *policy's* namespace), ``namespaceSelector`` alone (every pod of the matching namespaces),
  both in one peer (pods matching ``podSelector`` *in* namespaces matching
  ``namespaceSelector``: an AND), or ``ipBlock`` (``cidr`` minus each ``except``).
* A port entry matches ``protocol`` (default TCP) and ``port`` — a number, a range
  ``port``..``endPort``, a name (resolved against the destination pod's container ports of that
  protocol, for ingress and egress alike), or absent (every port of the protocol).
* A connection from pod A to pod B is allowed only when A's egress allows B *and* B's ingress
  allows A. Traffic through a Service's ClusterIP is judged against the endpoint kube-proxy picked
  (policy sees the packet after DNAT), so an ``ipBlock`` naming a ClusterIP matches nothing.

CNI-specific choices (Calico's, where the upstream API leaves it open):

* ``ipBlock`` also matches pod IPs (Calico applies CIDRs to every address; Cilium does not for
  pods it manages).
* Pods on the host network are not workload endpoints: policies never isolate them, and as peers
  they are their node's address — ``podSelector``/``namespaceSelector`` never match them, an
  ``ipBlock`` with the node's IP does.
* Traffic from a pod's own node (a host-network pod on the same node) and from a pod to itself is
  always allowed (the concept page: pods cannot block localhost nor their resident node).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.selectors import selector_from_label_selector

__all__ = ["INGRESS", "EGRESS", "policy_types", "selects", "isolated", "pod_ips", "peer_matches",
           "port_matches", "ingress_allows", "egress_allows", "allowed"]

Obj = Mapping[str, Any]

INGRESS = "Ingress"
EGRESS = "Egress"


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def _namespace(obj: Obj | None) -> str:
    return _meta(obj).get("namespace") or "default"


def _host_network(pod: Obj | None) -> bool:
    return bool(((pod or {}).get("spec") or {}).get("hostNetwork"))


def _node_name(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def policy_types(policy: Obj) -> list[str]:
    """``spec.policyTypes`` of ``policy``, defaulted as the API server does when absent:
    ``["Ingress"]``, plus ``"Egress"`` when the policy has egress rules."""
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes")
    if types:
        return list(types)
    return [INGRESS, EGRESS] if spec.get("egress") else [INGRESS]


def _matches_selector(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """A ``metav1.LabelSelector`` against labels (``{}`` selects all); an invalid selector selects nothing."""
    try:
        return selector_from_label_selector(selector if selector is not None else {}).matches(labels or {})
    except ValueError:
        return False


def selects(policy: Obj, pod: Obj) -> bool:
    """Whether ``policy``'s ``spec.podSelector`` selects ``pod``: same namespace, labels matching
    (an empty selector selects every pod of the namespace). Host-network pods are never selected."""
    if _host_network(pod) or _namespace(policy) != _namespace(pod):
        return False
    return _matches_selector((policy.get("spec") or {}).get("podSelector") or {}, _meta(pod).get("labels"))


def _selecting(policies: Iterable[Obj], pod: Obj, direction: str) -> list[Obj]:
    """The policies that select ``pod`` for ``direction`` (``"Ingress"`` / ``"Egress"``)."""
    return [p for p in policies if direction in policy_types(p) and selects(p, pod)]


def isolated(policies: Iterable[Obj], pod: Obj, direction: str) -> bool:
    """Whether ``pod`` is isolated for ``direction`` (``"Ingress"`` or ``"Egress"``): some policy of
    its namespace selects it and lists that direction in ``policyTypes``."""
    return bool(_selecting(policies, pod, direction))


def pod_ips(pod: Obj | None) -> list[str]:
    """The addresses of ``pod``: ``status.podIP`` and ``status.podIPs[].ip``, in that order, without
    repeats ([] for None or a pod without an address yet)."""
    status = (pod or {}).get("status") or {}
    out: list[str] = []
    for ip in [status.get("podIP")] + [p.get("ip") for p in status.get("podIPs") or []]:
        if ip and ip not in out:
            out.append(ip)
    return out


def _in_block(ip: str, block: Obj) -> bool:
    """``ip`` is in ``block["cidr"]`` and in none of its ``except`` CIDRs (malformed CIDRs match nothing)."""
    try:
        addr = ipaddress.ip_address(ip)
        if addr not in ipaddress.ip_network(str(block.get("cidr") or ""), strict=False):
            return False
        for cut in block.get("except") or ():
            net = ipaddress.ip_network(str(cut), strict=False)
            if addr.version == net.version and addr in net:
                return False
    except ValueError:
        return False
    return True


def _namespace_labels(namespaces: Iterable[Obj], name: str) -> dict[str, str]:
    """A namespace's labels; the API server always sets ``kubernetes.io/metadata.name`` to its name."""
    for ns in namespaces:
        if _meta(ns).get("name") == name:
            return {**(_meta(ns).get("labels") or {}), "kubernetes.io/metadata.name": name}
    return {"kubernetes.io/metadata.name": name}


def peer_matches(peer: Obj, policy_namespace: str, namespaces: Iterable[Obj], pod: Obj | None,
                 ips: Iterable[str] = ()) -> bool:
    """Whether one ``NetworkPolicyPeer`` (an entry of a rule's ``from`` / ``to``) matches the other
    end of a connection: ``pod`` (None: not a pod, or a host-network pod) at the addresses ``ips``.

    ``podSelector`` alone: a pod of ``policy_namespace`` with matching labels; ``namespaceSelector``
    alone: any pod of a namespace whose labels match (``namespaces``: the Namespace objects);
    both: a matching pod in a matching namespace; ``ipBlock``: one of ``ips`` in ``cidr`` and not
    in an ``except``. A peer with none of them matches nothing (the API server refuses it).
    """
    if "ipBlock" in peer and peer.get("ipBlock") is not None:
        return any(_in_block(ip, peer["ipBlock"]) for ip in ips)
    pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
    if pod_sel is None and ns_sel is None:
        return False
    if pod is None or _host_network(pod):
        return False
    pod_ns = _namespace(pod)
    if ns_sel is None:
        if pod_ns != policy_namespace:
            return False
    elif not _matches_selector(ns_sel, _namespace_labels(namespaces, pod_ns)):
        return False
    return pod_sel is None or _matches_selector(pod_sel, _meta(pod).get("labels"))


def _named_ports(pod: Obj | None, name: str, protocol: str) -> list[int]:
    """The ``containerPort`` of every container port of ``pod`` named ``name`` with ``protocol``."""
    spec = (pod or {}).get("spec") or {}
    out = []
    for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        for p in c.get("ports") or ():
            if p.get("name") == name and (p.get("protocol") or "TCP").upper() == protocol and \
                    isinstance(p.get("containerPort"), int):
                out.append(p["containerPort"])
    return out


def port_matches(ports: Iterable[Obj] | None, port: int, protocol: str, dst_pod: Obj | None) -> bool:
    """Whether a rule's ``ports`` (a list of ``NetworkPolicyPort``; None or empty: every port) admit
    a connection to ``port``/``protocol`` (``"TCP"``, ``"UDP"``, ``"SCTP"``) of ``dst_pod`` (None
    when the destination is not a pod: a named port then matches nothing).

    Each entry: ``protocol`` (default TCP) must equal; ``port`` absent matches every port, a number
    that port or, with ``endPort``, the range ``port``..``endPort``; a name matches the
    destination's container ports of that name and protocol (upstream: named ports are resolved
    against the destination pod, for ingress and egress alike).
    """
    entries = list(ports or ())
    if not entries:
        return True
    protocol = protocol.upper()
    for entry in entries:
        if (entry.get("protocol") or "TCP").upper() != protocol:
            continue
        want = entry.get("port")
        if want is None:
            return True
        if isinstance(want, int) or (isinstance(want, str) and want.isdigit()):
            lo = int(want)
            hi = entry.get("endPort")
            if port == lo or (isinstance(hi, int) and lo <= port <= hi):
                return True
        elif port in _named_ports(dst_pod, str(want), protocol):
            return True
    return False


def _rules_allow(policies: list[Obj], direction: str, namespaces: list[Obj], peer_pod: Obj | None,
                 peer_ips: list[str], port: int, protocol: str, dst_pod: Obj | None) -> bool:
    key, peers_key = ("ingress", "from") if direction == INGRESS else ("egress", "to")
    for policy in policies:
        ns = _namespace(policy)
        for rule in (policy.get("spec") or {}).get(key) or ():
            peers = rule.get(peers_key) or []
            if peers and not any(peer_matches(p, ns, namespaces, peer_pod, peer_ips) for p in peers):
                continue
            if port_matches(rule.get("ports"), port, protocol, dst_pod):
                return True
    return False


def ingress_allows(policies: Iterable[Obj], namespaces: Iterable[Obj], src_pod: Obj | None, dst_pod: Obj,
                   port: int, protocol: str = "TCP", *, src_ips: Iterable[str] | None = None) -> bool:
    """Whether ``dst_pod``'s ingress side admits a connection from ``src_pod`` (None: not a pod; its
    addresses ``src_ips``, by default the pod's own) to ``port``/``protocol`` of ``dst_pod``.

    True when ``dst_pod`` is not isolated for ingress (or is on the host network), else when some
    ingress rule of a policy selecting it matches the source and the port.
    """
    selecting = _selecting(list(policies), dst_pod, INGRESS)
    if not selecting:
        return True
    ips = list(src_ips) if src_ips is not None else pod_ips(src_pod)
    return _rules_allow(selecting, INGRESS, list(namespaces), src_pod, ips, port, protocol, dst_pod)


def egress_allows(policies: Iterable[Obj], namespaces: Iterable[Obj], src_pod: Obj, dst_pod: Obj | None,
                  port: int, protocol: str = "TCP", *, dst_ips: Iterable[str] | None = None) -> bool:
    """Whether ``src_pod``'s egress side lets it connect to ``port``/``protocol`` of ``dst_pod``
    (None: not a pod, at ``dst_ips``; by default the pod's own addresses).

    True when ``src_pod`` is not isolated for egress (or is on the host network), else when some
    egress rule of a policy selecting it matches the destination and the port.
    """
    selecting = _selecting(list(policies), src_pod, EGRESS)
    if not selecting:
        return True
    ips = list(dst_ips) if dst_ips is not None else pod_ips(dst_pod)
    return _rules_allow(selecting, EGRESS, list(namespaces), dst_pod, ips, port, protocol, dst_pod)


def allowed(policies: Iterable[Obj], namespaces: Iterable[Obj], src_pod: Obj | None, dst_pod: Obj | None,
            port: int, protocol: str = "TCP", *, src_ips: Iterable[str] | None = None,
            dst_ips: Iterable[str] | None = None) -> bool:
    """Whether a new connection from ``src_pod`` to ``port``/``protocol`` of ``dst_pod`` gets
    through: the source's egress allows it *and* the destination's ingress does (upstream: "both
    the egress policy on the source pod and the ingress policy on the destination pod need to
    allow the connection").

    ``policies``: every NetworkPolicy (any namespace; each applies to its own); ``namespaces``: the
    Namespace objects (for ``namespaceSelector``). For a ClusterIP connection pass the endpoint pod
    kube-proxy chose. Either end may be None (not a pod: ``src_ips`` / ``dst_ips`` are its
    addresses, matched by ``ipBlock`` only); a host-network pod counts as its node (not isolated,
    matched by ``ipBlock`` only). Always allowed: a pod to itself, and traffic between a pod and a
    host-network pod on its own node (pods cannot block their resident node).
    """
    policies, namespaces = list(policies), list(namespaces)
    if src_pod is not None and dst_pod is not None:
        same = ("uid", "namespace", "name")
        if [_meta(src_pod).get(f) for f in same] == [_meta(dst_pod).get(f) for f in same]:
            return True  # a pod to itself
        node = _node_name(src_pod)
        if (_host_network(src_pod) or _host_network(dst_pod)) and node and node == _node_name(dst_pod):
            return True
    if src_pod is not None and _host_network(src_pod):
        src_ips = list(src_ips) if src_ips is not None else [((src_pod.get("status") or {}).get("hostIP") or "")]
        src_pod = None
    if dst_pod is not None and _host_network(dst_pod):
        dst_ips = list(dst_ips) if dst_ips is not None else [((dst_pod.get("status") or {}).get("hostIP") or "")]
        dst_pod = None
    if src_pod is not None:
        out_ips = list(dst_ips) if dst_ips is not None else pod_ips(dst_pod)
        if not egress_allows(policies, namespaces, src_pod, dst_pod, port, protocol, dst_ips=out_ips):
            return False
    if dst_pod is not None:
        in_ips = list(src_ips) if src_ips is not None else pod_ips(src_pod)
        if not ingress_allows(policies, namespaces, src_pod, dst_pod, port, protocol, src_ips=in_ips):
            return False
    return True
