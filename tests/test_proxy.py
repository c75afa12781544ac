"""kube-proxy forwarding table / routing and cluster DNS (k8semu.node.proxy, k8semu.node.dns)."""

from __future__ import annotations

import copy
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.node.dns import CNAME, NXDomain, resolve
from k8semu.node.proxy import (
    build_rules,
    endpoint_chain_name,
    route,
    service_chain_name,
)

NODE_IPS = {"node-a": "192.168.0.1", "node-b": "192.168.0.2", "node-c": "192.168.0.3"}
EXTERNAL_CLIENT = "203.0.113.7"
POD_CIDR = "10.244.0.0/16"


def svc(name="web", ns="default", *, cluster_ip="10.96.0.10", ports=None, **spec):
    s = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                 "ports": ports or [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                 "sessionAffinity": "None", **spec},
    }
    if cluster_ip == "None":
        s["spec"]["clusterIPs"] = ["None"]
    if spec.get("type") == "ExternalName":
        del s["spec"]["clusterIP"], s["spec"]["clusterIPs"]
    return s


def ep(ip, node="node-a", *, ready=True, serving=None, terminating=None, pod=None, hostname=None):
    cond = {"ready": ready}
    if serving is not None:
        cond["serving"] = serving
    if terminating is not None:
        cond["terminating"] = terminating
    e = {"addresses": [ip], "conditions": cond, "nodeName": node, "zone": "zone-1",
         "targetRef": {"kind": "Pod", "namespace": "default", "name": pod or f"pod-{ip.replace('.', '-')}"}}
    if hostname:
        e["hostname"] = hostname
    return e


def eslice(endpoints, svc_name="web", ns="default", *, name=None, ports=None, address_type="IPv4"):
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name or f"{svc_name}-abcde", "namespace": ns,
                     "labels": {"kubernetes.io/service-name": svc_name}},
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports or [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def go(table, dst_ip, dst_port, src="10.244.1.5", *, seed=1, now=0.0, state=None, rng=None):
    return route(table, src, dst_ip, dst_port, rng=rng or random.Random(seed), now=now, affinity_state=state)


# --------------------------------------------------------------------------- chain names


def test_chain_names_match_upstream_hashing():
    # Values from upstream pkg/proxy/iptables/proxier_test.go and a stock cluster's iptables-save.
    assert service_chain_name("ns1/svc1:p80", "TCP") == "KUBE-SVC-XPGD46QRK7WJZT7O"
    assert endpoint_chain_name("ns1/svc1:p80", "TCP", "10.180.0.1:80") == "KUBE-SEP-SXIVWICOYRO3J4NJ"
    assert endpoint_chain_name("ns1/svc1:p80", "tcp", "10.180.2.1:80") == "KUBE-SEP-ZX7GRIZKSNUQ3LAJ"
    assert service_chain_name("default/kubernetes:https", "TCP") == "KUBE-SVC-NPX46M4PTMTKRN6Y"
    assert service_chain_name("kube-system/kube-dns:dns", "UDP") == "KUBE-SVC-TCOU7JCQXEZGVUNU"


def test_dump_matches_upstream_external_ip_local_policy_nat_table():
    # Upstream TestOnlyLocalExternalIPs: ETP=Local, one remote and one local endpoint.
    s = svc("svc1", "ns1", cluster_ip="172.30.0.41", type="NodePort", externalTrafficPolicy="Local",
            externalIPs=["192.168.99.11"], ports=[{"name": "p80", "port": 80, "protocol": "TCP", "targetPort": 80}])
    sl = eslice([{"addresses": ["10.180.0.1"]}, {"addresses": ["10.180.2.1"], "nodeName": "node-a"}],
                "svc1", "ns1", ports=[{"name": "p80", "port": 80, "protocol": "TCP"}])
    table = build_rules("node-a", [s], [sl], cluster_cidr="10.0.0.0/8")
    nat = table.dump().split("*nat\n", 1)[1]
    assert nat == """\
:KUBE-EXT-XPGD46QRK7WJZT7O - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SEP-ZX7GRIZKSNUQ3LAJ - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SVL-XPGD46QRK7WJZT7O - [0:0]
-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 external IP" -m tcp -p tcp -d 192.168.99.11 --dport 80 -j KUBE-EXT-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-EXT-XPGD46QRK7WJZT7O -j KUBE-SVL-XPGD46QRK7WJZT7O
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A KUBE-SEP-ZX7GRIZKSNUQ3LAJ -m comment --comment ns1/svc1:p80 -s 10.180.2.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-ZX7GRIZKSNUQ3LAJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.2.1:80
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j KUBE-SEP-ZX7GRIZKSNUQ3LAJ
-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j KUBE-SEP-ZX7GRIZKSNUQ3LAJ
COMMIT
"""
    # And the packet flows upstream checks for that table.
    hits = {go(table, "172.30.0.41", 80, "10.0.0.2", seed=i).backend_ip for i in range(50)}
    assert hits == {"10.180.0.1", "10.180.2.1"}
    r = go(table, "192.168.99.11", 80, EXTERNAL_CLIENT)
    assert (r.kind, r.backend_ip, r.masquerade) == ("endpoint", "10.180.2.1", False)


def test_dump_is_stable_regardless_of_input_order():
    services = [svc("a", cluster_ip="10.96.0.1"), svc("b", cluster_ip="10.96.0.2"),
                svc("c", cluster_ip="10.96.0.3", sessionAffinity="ClientIP")]
    slices = [eslice([ep("10.244.1.1"), ep("10.244.2.1", "node-b")], "a"),
              eslice([ep("10.244.1.2")], "b"),
              eslice([ep("10.244.3.3", "node-c"), ep("10.244.1.3")], "c")]
    one = build_rules("node-a", services, slices, NODE_IPS).dump()
    two = build_rules("node-a", services[::-1], slices[::-1], NODE_IPS).dump()
    assert one == two
    assert "--probability 0.5000000000" in one
    assert "-m recent --name" in one and "--rcheck --seconds 10800 --reap" in one


def test_inputs_are_not_mutated():
    services = [svc(type="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30080, "targetPort": 8080}])]
    slices = [eslice([ep("10.244.1.1")])]
    before = copy.deepcopy((services, slices))
    table = build_rules("node-a", services, slices, NODE_IPS)
    go(table, "10.96.0.10", 80, state={})
    assert (services, slices) == before


# --------------------------------------------------------------------------- endpoints


def test_cluster_ip_spreads_uniformly_over_ready_endpoints():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.1.1"), ep("10.244.2.1", "node-b"),
                                                    ep("10.244.3.1", "node-c")])], NODE_IPS)
    rng = random.Random(42)
    counts = Counter()
    for _ in range(3000):
        r = go(table, "10.96.0.10", 80, rng=rng)
        assert r.kind == "endpoint" and r.backend_port == 8080 and r.service == "default/web"
        counts[r.backend_ip] += 1
    assert set(counts) == {"10.244.1.1", "10.244.2.1", "10.244.3.1"}
    assert all(850 <= c <= 1150 for c in counts.values()), counts


def test_not_ready_endpoints_are_excluded_and_pod_ref_reported():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.1.1", ready=False, pod="web-0"),
                                                    ep("10.244.1.2", pod="web-1")])])
    results = {go(table, "10.96.0.10", 80, seed=i) for i in range(40)}
    assert {(r.backend_ip, r.pod_ref) for r in results} == {("10.244.1.2", "default/web-1")}


def test_all_terminating_falls_back_to_serving_terminating_endpoints():
    table = build_rules("node-a", [svc()], [eslice([
        ep("10.244.1.1", ready=False, serving=True, terminating=True),
        ep("10.244.1.2", ready=False, serving=False, terminating=True),
    ])])
    assert {go(table, "10.96.0.10", 80, seed=i).backend_ip for i in range(40)} == {"10.244.1.1"}


def test_ready_endpoint_wins_over_terminating_ones():
    table = build_rules("node-a", [svc()], [eslice([
        ep("10.244.1.1", ready=False, serving=True, terminating=True), ep("10.244.1.2")])])
    assert {go(table, "10.96.0.10", 80, seed=i).backend_ip for i in range(40)} == {"10.244.1.2"}


@pytest.mark.parametrize("endpoints", [[], [ep("10.244.1.1", ready=False, serving=False, terminating=True)]])
def test_no_usable_endpoints_rejects_connection(endpoints):
    s = svc(type="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30080, "targetPort": 8080}])
    table = build_rules("node-a", [s], [eslice(endpoints)] if endpoints else [], NODE_IPS)
    for dst, port in (("10.96.0.10", 80), ("192.168.0.2", 30080)):
        r = go(table, dst, port)
        assert (r.kind, r.reason, r.service_port) == ("reject", "default/web:http has no endpoints", "default/web:http")
    dump = table.dump()
    assert ('-A KUBE-SERVICES -m comment --comment "default/web:http has no endpoints" -m tcp -p tcp '
            "-d 10.96.0.10 --dport 80 -j REJECT") in dump
    assert "KUBE-SVC-" not in dump


def test_unknown_destination_and_wrong_protocol_have_no_rule():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.1.1")])], NODE_IPS)
    assert go(table, "10.244.1.1", 8080).kind == "no-rule"
    assert go(table, "10.96.0.10", 81).kind == "no-rule"
    assert route(table, "10.244.1.5", "10.96.0.10", 80, "UDP", rng=random.Random(0), now=0,
                 affinity_state=None).kind == "no-rule"


def test_named_target_port_resolves_via_endpointslice_port():
    s = svc(ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web"},
                   {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": "prom"}])
    sl = eslice([ep("10.244.1.1")], ports=[{"name": "http", "port": 8080, "protocol": "TCP"},
                                           {"name": "metrics", "port": 9100, "protocol": "TCP"}])
    table = build_rules("node-a", [s], [sl])
    assert (go(table, "10.96.0.10", 80).backend_port, go(table, "10.96.0.10", 9090).backend_port) == (8080, 9100)


def test_endpoints_from_several_slices_are_merged_and_deduplicated():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.1.1")], name="web-1"),
                                            eslice([ep("10.244.1.1"), ep("10.244.2.2", "node-b")], name="web-2")])
    assert [e.addr for e in table.get("default/web:http").cluster_endpoints] == ["10.244.1.1:8080",
                                                                                "10.244.2.2:8080"]


def test_headless_and_external_name_services_have_no_rules():
    services = [svc("headless", cluster_ip="None"),
                svc("ext", type="ExternalName", externalName="db.example.com")]
    table = build_rules("node-a", services, [eslice([ep("10.244.1.1")], "headless")])
    assert table.services == ()
    assert "KUBE-SVC-" not in table.dump()
    assert go(table, "10.244.1.1", 8080).kind == "no-rule"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=0, max_size=6),
       st.integers(0, 2**32))
def test_backend_choice_follows_ready_then_serving_terminating(conds, seed):
    eps = [ep(f"10.244.1.{i + 1}", ready=r, serving=s, terminating=t) for i, (r, s, t) in enumerate(conds)]
    table = build_rules("node-a", [svc()], [eslice(eps)] if eps else [])
    r = go(table, "10.96.0.10", 80, seed=seed)
    ready = {e["addresses"][0] for e in eps if e["conditions"]["ready"]}
    fallback = {e["addresses"][0] for e in eps if e["conditions"]["serving"] and e["conditions"]["terminating"]}
    if ready:
        assert r.kind == "endpoint" and r.backend_ip in ready
    elif fallback:
        assert r.kind == "endpoint" and r.backend_ip in fallback
    else:
        assert r.kind == "reject"


# --------------------------------------------------------------------------- node ports and policies


def _nodeport_svc(**spec):
    return svc(type="NodePort", ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080,
                                        "nodePort": 30080}], **spec)


def test_node_port_answers_on_every_node_ip():
    table = build_rules("node-a", [_nodeport_svc()], [eslice([ep("10.244.2.1", "node-b")])], NODE_IPS)
    for ip in NODE_IPS.values():
        r = go(table, ip, 30080, EXTERNAL_CLIENT)
        assert (r.kind, r.backend_ip, r.backend_port, r.masquerade) == ("endpoint", "10.244.2.1", 8080, True)
    assert go(table, "192.168.0.99", 30080, EXTERNAL_CLIENT).kind == "no-rule"
    assert '-A KUBE-NODEPORTS -m comment --comment default/web:http -m tcp -p tcp --dport 30080 ' \
           "-j KUBE-EXT-" in table.dump()
    assert {f.ip for f in table.get("default/web:http").frontends if f.kind == "NodePort"} == set(NODE_IPS.values())


def test_node_port_without_node_ips_matches_any_address():
    table = build_rules("node-a", [_nodeport_svc()], [eslice([ep("10.244.2.1", "node-b")])])
    assert go(table, "172.16.5.5", 30080, EXTERNAL_CLIENT).kind == "endpoint"
    assert [f.ip for f in table.get("default/web:http").frontends if f.kind == "NodePort"] == ["0.0.0.0"]


def test_external_traffic_policy_local_without_local_endpoints_drops_node_port_only():
    s = _nodeport_svc(externalTrafficPolicy="Local")
    table = build_rules("node-a", [s], [eslice([ep("10.244.2.1", "node-b")])], NODE_IPS, cluster_cidr=POD_CIDR)
    r = go(table, "192.168.0.1", 30080, EXTERNAL_CLIENT)
    assert (r.kind, r.reason) == ("drop", "default/web:http has no local endpoints")
    # The node that has the endpoint serves it, keeping the client's source address.
    r = go(table, "192.168.0.2", 30080, EXTERNAL_CLIENT)
    assert (r.kind, r.backend_ip, r.masquerade) == ("endpoint", "10.244.2.1", False)
    # Cluster-IP traffic is unaffected by externalTrafficPolicy.
    assert go(table, "10.96.0.10", 80, "10.244.1.5").backend_ip == "10.244.2.1"
    # Pods and the node itself are short-circuited to the cluster-wide endpoints.
    assert go(table, "192.168.0.1", 30080, "10.244.1.5").kind == "endpoint"
    r = go(table, "192.168.0.1", 30080, "192.168.0.1")
    assert (r.kind, r.masquerade) == ("endpoint", True)
    assert ('-A KUBE-EXTERNAL-SERVICES -m comment --comment "default/web:http has no local endpoints" '
            "-m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j DROP") in table.dump()


def test_internal_traffic_policy_local_uses_only_this_nodes_endpoints():
    s = svc(internalTrafficPolicy="Local")
    sl = eslice([ep("10.244.1.1", "node-a"), ep("10.244.2.1", "node-b"), ep("10.244.2.2", "node-b")])
    on_b = build_rules("node-b", [s], [sl], NODE_IPS)
    assert {go(on_b, "10.96.0.10", 80, seed=i).backend_ip for i in range(60)} == {"10.244.2.1", "10.244.2.2"}
    on_c = build_rules("node-c", [s], [sl], NODE_IPS)
    r = go(on_c, "10.96.0.10", 80)
    assert (r.kind, r.reason) == ("drop", "default/web:http has no local endpoints")
    assert "KUBE-SVL-" in on_b.dump() and "KUBE-SVC-" not in on_b.dump()


def test_cluster_ip_masquerades_only_non_pod_sources():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.2.1", "node-b")])], NODE_IPS, cluster_cidr=POD_CIDR)
    assert go(table, "10.96.0.10", 80, "10.244.1.5").masquerade is False
    assert go(table, "10.96.0.10", 80, "192.168.0.1").masquerade is True
    assert go(table, "10.96.0.10", 80, "10.244.2.1").masquerade is True  # hairpin to itself


def test_load_balancer_ingress_and_source_ranges():
    s = svc(type="LoadBalancer", loadBalancerSourceRanges=["198.51.100.0/24"],
            ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080}])
    s["status"] = {"loadBalancer": {"ingress": [{"ip": "34.1.2.3", "ipMode": "VIP"}]}}
    table = build_rules("node-a", [s], [eslice([ep("10.244.1.1")])], NODE_IPS)
    assert go(table, "34.1.2.3", 80, "198.51.100.9").backend_ip == "10.244.1.1"
    r = go(table, "34.1.2.3", 80, EXTERNAL_CLIENT)
    assert r.kind == "drop" and "traffic not accepted by KUBE-FW-" in r.reason
    assert go(table, "192.168.0.3", 30080, EXTERNAL_CLIENT).kind == "endpoint"  # NodePorts ignore source ranges


def test_external_ips_route_like_the_cluster_ip():
    s = svc(externalIPs=["198.51.100.50"])
    table = build_rules("node-a", [s], [eslice([ep("10.244.1.1")])])
    r = go(table, "198.51.100.50", 80, EXTERNAL_CLIENT)
    assert (r.kind, r.backend_ip, r.masquerade) == ("endpoint", "10.244.1.1", True)


# --------------------------------------------------------------------------- session affinity


def test_client_ip_affinity_sticks_until_timeout_then_may_move():
    s = svc(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    eps = [ep(f"10.244.1.{i}") for i in range(1, 5)]
    table = build_rules("node-a", [s], [eslice(eps)])
    rng = random.Random(7)
    state: dict = {}
    moved = 0
    for c in range(40):
        client = f"10.244.9.{c}"
        first = go(table, "10.96.0.10", 80, client, rng=rng, now=0, state=state).backend_ip
        # Each connection refreshes the timer: 0 -> 50 -> 100 stays within 60 s gaps.
        for t in (50, 100):
            assert go(table, "10.96.0.10", 80, client, rng=rng, now=t, state=state).backend_ip == first
        later = go(table, "10.96.0.10", 80, client, rng=rng, now=100 + 61, state=state).backend_ip
        moved += later != first
    assert moved > 0
    assert state[("default/web:http", "10.244.9.0")][1] == 161


def test_client_ip_affinity_default_timeout_and_gone_endpoint():
    s = svc(sessionAffinity="ClientIP")
    table = build_rules("node-a", [s], [eslice([ep("10.244.1.1"), ep("10.244.1.2")])])
    assert table.get("default/web:http").affinity_timeout == 10800
    state = {("default/web:http", "10.244.9.9"): ("10.244.1.7:8080", 0.0)}  # endpoint no longer exists
    r = go(table, "10.96.0.10", 80, "10.244.9.9", now=5, state=state)
    assert r.backend_ip in {"10.244.1.1", "10.244.1.2"}
    assert go(table, "10.96.0.10", 80, "10.244.9.9", seed=99, now=10800 + 4, state=state).backend_ip == r.backend_ip


def test_without_affinity_one_client_is_spread():
    table = build_rules("node-a", [svc()], [eslice([ep("10.244.1.1"), ep("10.244.1.2")])])
    rng, state = random.Random(3), {}
    assert len({go(table, "10.96.0.10", 80, rng=rng, state=state).backend_ip for _ in range(30)}) == 2
    assert state == {}


# --------------------------------------------------------------------------- DNS


DNS_SERVICES = [
    svc("kubernetes", "default", cluster_ip="10.96.0.1"),
    svc("web", "shop", cluster_ip="10.96.5.5"),
    svc("db", "shop", cluster_ip="None"),
    svc("legacy", "shop", type="ExternalName", externalName="db.example.com"),
]
DNS_SLICES = [
    eslice([ep("10.244.1.10", hostname="db-0"), ep("10.244.2.10", hostname="db-1"),
            ep("10.244.3.10", ready=False, hostname="db-2")], "db", "shop"),
    eslice([ep("10.244.5.5")], "web", "shop"),
]


def dns(name, ns="shop"):
    return resolve(name, DNS_SERVICES, DNS_SLICES, ns)


def test_dns_service_names_resolve_to_cluster_ip():
    assert dns("web.shop.svc.cluster.local") == ["10.96.5.5"]
    assert dns("web.shop.svc.cluster.local.") == ["10.96.5.5"]
    assert dns("web") == ["10.96.5.5"]  # via <ns>.svc.cluster.local
    assert dns("web.shop") == ["10.96.5.5"]  # via svc.cluster.local
    assert dns("kubernetes.default") == ["10.96.0.1"]
    assert dns("kubernetes.default.svc") == ["10.96.0.1"]  # via cluster.local


def test_dns_headless_service_returns_ready_endpoints_and_hostnames():
    assert dns("db") == ["10.244.1.10", "10.244.2.10"]
    assert dns("db-1.db") == ["10.244.2.10"]
    assert dns("db-0.db.shop.svc.cluster.local") == ["10.244.1.10"]
    with pytest.raises(NXDomain):
        dns("db-2.db")  # not ready
    with pytest.raises(NXDomain):
        dns("10-244-1-10.db")  # an endpoint with a hostname is only known by it
    assert dns("10-244-5-5.web") == ["10.244.5.5"]  # dashed-IP name of an endpoint without one


def test_dns_external_name_is_a_cname():
    answer = dns("legacy")
    assert answer == ["db.example.com"] and isinstance(answer[0], CNAME)


def test_dns_pod_records_and_nxdomain():
    assert dns("1-2-3-4.shop.pod.cluster.local") == ["1.2.3.4"]
    assert dns("10-244-1-5.default.pod") == ["10.244.1.5"]  # via cluster.local search
    for name in ("nope", "web.other", "web", "example.com", "1-2-3.shop.pod.cluster.local"):
        ns = "default" if name == "web" else "shop"
        with pytest.raises(NXDomain) as err:
            dns(name, ns)
        assert err.value.name == name


def test_dns_without_search_path_needs_fqdn_and_honours_custom_domain():
    with pytest.raises(NXDomain):
        resolve("web", DNS_SERVICES, DNS_SLICES, None)
    assert resolve("web.shop.svc.cluster.local", DNS_SERVICES, DNS_SLICES, None) == ["10.96.5.5"]
    assert resolve("web", DNS_SERVICES, DNS_SLICES, "shop", cluster_domain="corp.internal") == ["10.96.5.5"]
    with pytest.raises(NXDomain):
        resolve("web.shop.svc.cluster.local", DNS_SERVICES, DNS_SLICES, None, cluster_domain="corp.internal")
