"""NetworkPolicy: upstream v1.33's ``ValidateNetworkPolicy`` (exact 422 texts, in upstream's
order) and kubectl's NetworkPolicyDescriber, line for line.

The describe outputs below were checked against the real ``kubectl describe networkpolicy``
through ``k8semu serve``.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from k8semu.api.defaults import apply_defaults
from k8semu.api.errors import Invalid
from k8semu.api.validation import validate, validate_or_raise
from k8semu.cli.describe import describe

CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
PREFIX = 'NetworkPolicy.networking.k8s.io "x" is invalid: '


def _np(spec: dict, name: str = "x", **meta) -> dict:
    return apply_defaults({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                           "metadata": {"name": name, "namespace": "default", **meta}, "spec": spec})


def _msg(spec: dict, old: dict | None = None) -> str:
    with pytest.raises(Invalid) as exc:
        validate_or_raise(_np(spec), old)
    assert exc.value.message.startswith(PREFIX)
    return exc.value.message[len(PREFIX):]


def _ok(spec: dict, old: dict | None = None) -> None:
    assert [e.text() for e in validate(_np(spec), old)] == []


def _ingress_from(*peers: dict) -> dict:
    return {"podSelector": {}, "ingress": [{"from": list(peers)}]}


def _ports(*ports: dict) -> dict:
    return {"podSelector": {}, "ingress": [{"ports": list(ports)}]}


FULL = {
    "podSelector": {"matchLabels": {"app": "web"},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]},
    "policyTypes": ["Ingress", "Egress"],
    "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"app": "client"}},
                   "namespaceSelector": {"matchLabels": {"team": "a"}}},
                  {"podSelector": {}},
                  {"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}},
                  {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24", "172.17.2.0/25"]}},
                  {"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}}],
         "ports": [{"port": 80}, {"port": "http", "protocol": "UDP"},
                   {"port": 32000, "endPort": 32768, "protocol": "SCTP"}, {"protocol": "TCP"},
                   {"port": 443, "endPort": 443}]},
        {},
    ],
    "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 53, "protocol": "UDP"}]},
               {"ports": [{"port": 443}]}],
}


# ----------------------------------------------------------------------------- valid policies

def test_a_policy_with_every_feature_is_accepted():
    _ok(copy.deepcopy(FULL))


@pytest.mark.parametrize("cidr", [
    "10.0.0.1/8",         # host bits set: legacy parsing masks them (StrictIPCIDRValidation off)
    "010.000.000.000/08",  # leading zeros, read as decimal
    "::ffff:10.0.0.0/104",
    "0.0.0.0/0",
    "::/0",
])
def test_cidrs_parsed_the_legacy_way_are_accepted(cidr):
    _ok(_ingress_from({"ipBlock": {"cidr": cidr}}))


def test_duplicate_policy_types_pass_as_upstream():
    _ok({"podSelector": {}, "policyTypes": ["Ingress", "Ingress"]})


def test_an_ipv4_mapped_except_inside_an_ipv4_cidr_is_a_subset_as_in_go():
    _ok(_ingress_from({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["::ffff:10.1.0.0/112"]}}))


# ----------------------------------------------------------------------------- ports

def test_protocol_supported_values_keep_upstreams_order():
    assert _msg(_ports({"protocol": "ICMP", "port": 80})) == (
        'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": '
        'supported values: "TCP", "UDP", "SCTP"')


@pytest.mark.parametrize("port", [0, 65536])
def test_numeric_port_range(port):
    assert _msg(_ports({"port": port})) == (
        f"spec.ingress[0].ports[0].port: Invalid value: {port}: must be between 1 and 65535, inclusive")


def test_port_name_must_be_an_iana_svc_name():
    assert _msg(_ports({"port": "1234"})) == (
        'spec.ingress[0].ports[0].port: Invalid value: "1234": must contain at least one letter (a-z)')
    assert _msg(_ports({"port": "a--b-"})) == (
        '[spec.ingress[0].ports[0].port: Invalid value: "a--b-": must not contain consecutive hyphens, '
        'spec.ingress[0].ports[0].port: Invalid value: "a--b-": must not begin or end with a hyphen]')
    assert _msg(_ports({"port": "abcdefghijklmnop"})) == (
        'spec.ingress[0].ports[0].port: Invalid value: "abcdefghijklmnop": '
        'must be no more than 15 characters')


def test_end_port_below_port():
    assert _msg(_ports({"port": 100, "endPort": 90})) == (
        "spec.ingress[0].ports[0].endPort: Invalid value: 90: must be greater than or equal to `port`")


def test_end_port_out_of_range_after_the_order_check():
    assert _msg(_ports({"port": 100, "endPort": 70000})) == (
        "spec.ingress[0].ports[0].endPort: Invalid value: 70000: must be between 1 and 65535, inclusive")
    assert _msg(_ports({"port": 0, "endPort": -1})) == (
        "[spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, "
        "spec.ingress[0].ports[0].endPort: Invalid value: -1: must be greater than or equal to `port`, "
        "spec.ingress[0].ports[0].endPort: Invalid value: -1: must be between 1 and 65535, inclusive]")


def test_end_port_with_a_named_port():
    assert _msg(_ports({"port": "http", "endPort": 90})) == (
        "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric")


def test_end_port_without_a_port():
    assert _msg(_ports({"endPort": 90})) == (
        "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified")


def test_egress_ports_are_checked_too():
    spec = {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "ICMP"}]}]}
    assert _msg(spec) == (
        'spec.egress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"')


# ----------------------------------------------------------------------------- peers

def test_a_peer_must_say_something():
    assert _msg(_ingress_from({})) == "spec.ingress[0].from[0]: Required value: must specify a peer"
    assert _msg({"podSelector": {}, "egress": [{"to": [{"podSelector": None}]}]}) == (
        "spec.egress[0].to[0]: Required value: must specify a peer")


def test_pod_and_namespace_selectors_together_are_one_peer():
    _ok(_ingress_from({"podSelector": {}, "namespaceSelector": {}}))


@pytest.mark.parametrize("other", ["podSelector", "namespaceSelector"])
def test_ip_block_with_another_peer_is_forbidden(other):
    assert _msg(_ingress_from({"ipBlock": {"cidr": "10.0.0.0/8"}, other: {}})) == (
        "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer")


def test_peer_selectors_are_label_selectors():
    peer = {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "namespaceSelector": {"matchLabels": {"team": "a b"}}}
    msg = _msg(_ingress_from(peer))
    assert msg.startswith(
        "[spec.ingress[0].from[0].podSelector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn', "
        'spec.ingress[0].from[0].namespaceSelector.matchLabels: Invalid value: "a b": '
        "a valid label must be an empty string")


def test_ip_block_cidr_required():
    assert _msg(_ingress_from({"ipBlock": {"cidr": ""}})) == (
        "spec.ingress[0].from[0].ipBlock.cidr: Required value")


@pytest.mark.parametrize("cidr", ["10.0.0.0", "10.0.0.0/33", "::/129", "300.0.0.0/8", "fe80::%eth0/64",
                                  "10.0.0.0/", "10.0.0.0/8a", "x"])
def test_ip_block_cidr_must_parse(cidr):
    assert _msg(_ingress_from({"ipBlock": {"cidr": cidr, "except": ["x"]}})) == (
        f'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "{cidr}": {CIDR}')


def test_ip_block_excepts():
    block = {"cidr": "10.0.0.0/8",
             "except": ["10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8", "10.0.0.0/7", "fd00::/64", "nope"]}
    assert _msg(_ingress_from({"ipBlock": block})) == (
        '[spec.ingress[0].from[0].ipBlock.except[1]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`, '
        'spec.ingress[0].from[0].ipBlock.except[2]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`, '
        'spec.ingress[0].from[0].ipBlock.except[3]: Invalid value: "10.0.0.0/7": must be a strict subset of `cidr`, '
        'spec.ingress[0].from[0].ipBlock.except[4]: Invalid value: "fd00::/64": must be a strict subset of `cidr`, '
        f'spec.ingress[0].from[0].ipBlock.except[5]: Invalid value: "nope": {CIDR}]')


def test_ipv6_except_outside_its_cidr():
    assert _msg({"podSelector": {}, "egress": [{"to": [
        {"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db9::/48", "10.0.0.0/8"]}}]}]}) == (
        '[spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "2001:db9::/48": must be a strict subset of `cidr`, '
        'spec.egress[0].to[0].ipBlock.except[1]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`]')


# ----------------------------------------------------------------------------- pod selector, policyTypes

def test_pod_selector_values_must_be_label_values():
    spec = {"podSelector": {"matchExpressions": [
        {"key": "ok", "operator": "Exists"},
        {"key": "a", "operator": "NotIn", "values": ["good", "-bad"]}]}}
    assert _msg(spec).startswith(
        'spec.podSelector.matchExpressions[1].values[1]: Invalid value: "-bad": a valid label must be')


def test_pod_selector_operator_and_key():
    spec = {"podSelector": {"matchExpressions": [{"key": "a/b/c", "operator": "Is", "values": ["x"]}]}}
    msg = _msg(spec)
    assert msg.startswith('[spec.podSelector.matchExpressions[0].operator: Invalid value: "Is": '
                          "not a valid selector operator, "
                          'spec.podSelector.matchExpressions[0].key: Invalid value: "a/b/c": a qualified name')


def test_update_keeps_accepting_invalid_selector_values_of_an_invalid_stored_policy():
    bad = {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-bad"]}]}}
    old = _np(copy.deepcopy(bad))
    _ok(copy.deepcopy(bad), old)
    assert _msg(copy.deepcopy(bad), _np({"podSelector": {}})).startswith(
        'spec.podSelector.matchExpressions[0].values[0]: Invalid value: "-bad"')


def test_policy_types_supported_values():
    assert _msg({"podSelector": {}, "policyTypes": ["Ingress", "egress"]}) == (
        'spec.policyTypes[1]: Unsupported value: "egress": supported values: "Ingress", "Egress"')


def test_more_than_two_policy_types_is_one_error_on_the_list():
    assert _msg({"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Other"]}) == (
        'spec.policyTypes: Invalid value: []networking.PolicyType{"Ingress", "Egress", "Other"}: '
        "may not specify more than two policyTypes")


def test_errors_come_in_upstream_order():
    spec = {
        "podSelector": {"matchLabels": {"app": "a b"}},
        "ingress": [{"ports": [{"port": "http", "endPort": 90}], "from": [{}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": "nope"}}]}],
        "policyTypes": ["Ingress", "Sideways"],
    }
    msg = _msg(spec)
    order = ["spec.podSelector.matchLabels", "spec.ingress[0].ports[0].endPort", "spec.ingress[0].from[0]:",
             "spec.egress[0].to[0].ipBlock.cidr", "spec.policyTypes[1]"]
    positions = [msg.index(p) for p in order]
    assert positions == sorted(positions) and msg.startswith("[") and msg.endswith("]")


# ----------------------------------------------------------------------------- describe

NOW = datetime(2025, 1, 1, 0, 5, tzinfo=timezone.utc)


def _describe(spec: dict, name: str, **meta) -> list[str]:
    obj = _np(spec, name, creationTimestamp="2025-01-01T00:00:00Z", **meta)
    return describe(None, obj, NOW).splitlines()


def test_describe_default_deny():
    assert _describe({"podSelector": {}}, "default-deny") == [
        "Name:         default-deny",
        "Namespace:    default",
        "Created on:   2025-01-01 00:00:00 +0000 UTC",
        "Labels:       <none>",
        "Annotations:  <none>",
        "Spec:",
        "  PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)",
        "  Allowing ingress traffic:",
        "    <none> (Selected pods are isolated for ingress connectivity)",
        "  Not affecting egress traffic",
        "  Policy Types: Ingress",
    ]


def test_describe_selectors_and_ports():
    spec = {
        "podSelector": {"matchLabels": {"app": "web"}},
        "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"app": "client"}},
                       "namespaceSelector": {"matchLabels": {"team": "a"}}},
                      {"podSelector": {"matchExpressions": [
                          {"key": "tier", "operator": "In", "values": ["fe", "be"]}]}},
                      {"namespaceSelector": {}}],
             "ports": [{"port": 80}, {"port": "http", "protocol": "UDP"}, {"port": 32000, "endPort": 32768}]},
            {},
        ],
    }
    assert _describe(spec, "allow-client", labels={"team": "a", "env": "prod"},
                     annotations={"note": "hello"}) == [
        "Name:         allow-client",
        "Namespace:    default",
        "Created on:   2025-01-01 00:00:00 +0000 UTC",
        "Labels:       env=prod",
        "              team=a",
        "Annotations:  note: hello",
        "Spec:",
        "  PodSelector:     app=web",
        "  Allowing ingress traffic:",
        "    To Port: 80/TCP",
        "    To Port: http/UDP",
        "    To Port Range: 32000-32768/TCP",
        "    From:",
        "      NamespaceSelector: team=a",
        "      PodSelector: app=client",
        "    From:",
        "      PodSelector: tier in (be,fe)",
        "    From:",
        "      NamespaceSelector: <none>",
        "    ----------",
        "    To Port: <any> (traffic allowed to all ports)",
        "    From: <any> (traffic not restricted by source)",
        "  Not affecting egress traffic",
        "  Policy Types: Ingress",
    ]


def test_describe_ip_blocks_and_egress():
    spec = {
        "podSelector": {"matchLabels": {"role": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "172.17.0.0/16",
                                           "except": ["172.17.1.0/24", "172.17.2.0/24"]}},
                              {"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 5978}]}],
    }
    assert _describe(spec, "ipblock") == [
        "Name:         ipblock",
        "Namespace:    default",
        "Created on:   2025-01-01 00:00:00 +0000 UTC",
        "Labels:       <none>",
        "Annotations:  <none>",
        "Spec:",
        "  PodSelector:     role=db",
        "  Allowing ingress traffic:",
        "    To Port: <any> (traffic allowed to all ports)",
        "    From:",
        "      IPBlock:",
        "        CIDR: 172.17.0.0/16",
        "        Except: 172.17.1.0/24, 172.17.2.0/24",
        "    From:",
        "      IPBlock:",
        "        CIDR: 10.0.0.0/8",
        "        Except: ",  # kubectl prints the label with an empty list (trailing space)
        "  Allowing egress traffic:",
        "    To Port: 5978/TCP",
        "    To:",
        "      IPBlock:",
        "        CIDR: 10.0.0.0/24",
        "        Except: ",
        "  Policy Types: Ingress, Egress",
    ]


def test_describe_egress_rules_and_egress_only():
    spec = {
        "podSelector": {},
        "egress": [
            {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                     "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
             "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
            {"ports": [{"port": 443}]},
        ],
    }
    assert _describe(spec, "egress-rules")[5:] == [
        "Spec:",
        "  PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)",
        "  Allowing ingress traffic:",
        "    <none> (Selected pods are isolated for ingress connectivity)",
        "  Allowing egress traffic:",
        "    To Port: 53/UDP",
        "    To Port: 53/TCP",
        "    To:",
        "      NamespaceSelector: kubernetes.io/metadata.name=kube-system",
        "      PodSelector: k8s-app=kube-dns",
        "    ----------",
        "    To Port: 443/TCP",
        "    To: <any> (traffic not restricted by destination)",
        "  Policy Types: Ingress, Egress",
    ]
    assert _describe({"podSelector": {}, "policyTypes": ["Egress"]}, "egress-only")[5:] == [
        "Spec:",
        "  PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)",
        "  Not affecting ingress traffic",
        "  Allowing egress traffic:",
        "    <none> (Selected pods are isolated for egress connectivity)",
        "  Policy Types: Egress",
    ]


def test_describe_has_no_events_section():
    assert not any(line.startswith("Events:") for line in _describe({"podSelector": {}}, "p"))
