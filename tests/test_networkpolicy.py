"""NetworkPolicy enforcement on the in-container network (wget, curl, nslookup in ``k8semu exec``),
and honest answers from ports that do not speak HTTP.

The cluster: the lab (Deployment/Service ``web``, nginx on the named port ``http``/80), plus busybox
pods ``client`` (app=client) and ``intruder`` (app=intruder) in ``default``, ``visitor`` in the
namespace ``guests`` (team=blue), and pods ``cache`` (redis) and ``db`` (postgres).
"""

from __future__ import annotations

import contextlib
import shutil

import pytest

from k8semu.cli.main import main
from k8semu.node import networkpolicy as np

from conftest import Kubectl, prepared_cluster

WELCOME = "<title>Welcome to nginx!</title>"
TIMED_OUT = ["wget: download timed out", "command terminated with exit code 1"]

EXTRA = """\
apiVersion: v1
kind: Namespace
metadata: {name: guests, labels: {team: blue}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: intruder, labels: {app: intruder}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: visitor, namespace: guests, labels: {app: client}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: cache, labels: {app: cache}}
spec:
  containers: [{name: redis, image: "redis:7"}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec:
  containers:
  - name: postgres
    image: "postgres:16"
    env: [{name: POSTGRES_PASSWORD, value: x}]
    ports: [{name: pg, containerPort: 5432}]
"""


@pytest.fixture(scope="module")
def np_base(tmp_path_factory):
    path = prepared_cluster(tmp_path_factory)
    extra = path.parent / "extra.yaml"
    extra.write_text(EXTRA)
    with contextlib.redirect_stdout(None):
        assert main(["--cluster", str(path), "apply", "-f", str(extra), "--for", "30s", "-q"]) == 0
    return path


@pytest.fixture
def k(np_base, tmp_path, capsys):
    path = tmp_path / "cluster.log"
    shutil.copy(np_base, path)
    return Kubectl(path, capsys)


def policy(k, tmp_path, text: str, name: str = "np.yaml") -> None:
    f = tmp_path / name
    f.write_text(text)
    rc, out, err = k("apply", "-f", str(f))
    assert rc == 0, (out, err)


def pod_ip(k, name: str, namespace: str = "default") -> str:
    return next(p for p in k.objects("pods", namespace) if p["metadata"]["name"] == name)["status"]["podIP"]


def elapsed(k, pod: str, command: str, namespace: str = "default") -> tuple[int, list[str], float]:
    """Run ``command`` in ``pod`` between two ``date +%s``: (exit code, its output lines, virtual seconds)."""
    rc, out, err = k("exec", "-n", namespace, pod, "--", "sh", "-c", f"date +%s; {command}; echo rc=$?; date +%s")
    assert rc == 0, err
    return int(out[-2][3:]), out[1:-2] + err, float(out[-1]) - float(out[0])


DENY_INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-ingress}
spec:
  podSelector: {}
"""

ALLOW_CLIENT = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-client}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - podSelector: {matchLabels: {app: client}}
    ports:
    - port: %s
"""

DENY_EGRESS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-deny-egress}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
"""

ALLOW_DNS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-dns}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
      podSelector: {matchLabels: {k8s-app: kube-dns}}
    ports:
    - {port: 53, protocol: UDP}
    - {port: 53, protocol: TCP}
"""


# --------------------------------------------------------------------------- ingress


def test_without_policies_everything_connects(k):
    rc, out, _ = k("exec", "client", "--", "wget", "-qO-", "web")
    assert rc == 0 and WELCOME in out


def test_default_deny_ingress_drops_connections_in_virtual_time(k, tmp_path):
    policy(k, tmp_path, DENY_INGRESS)
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    rc, lines, took = elapsed(k, "client", "wget -T 2 -qO- web")
    assert (rc, lines, took) == (1, ["wget: download timed out"], 2.0)
    # curl: its connect timeout, or -m
    rc, out, err = k("exec", "client", "--", "curl", "-sS", "--connect-timeout", "2", "web")
    assert (rc, out, err[0]) == (28, [], "curl: (28) Failed to connect to web port 80 after 2000 ms: "
                                         "Timeout was reached")
    rc, _, err = k("exec", "client", "--", "curl", "-sS", "-m", "3", "web")
    assert (rc, err[0]) == (28, "curl: (28) Connection timed out after 3000 milliseconds")
    # without a timeout: busybox waits for the kernel's SYN retries; curl too (its own is 300 s)
    rc, lines, took = elapsed(k, "client", "wget -qO- web")
    assert rc == 1 and took == 130 and lines == [f"wget: can't connect to remote host ({_svc_ip(k)}): "
                                                 "Connection timed out"]
    rc, lines, took = elapsed(k, "client", "curl -sS web")
    assert (rc, took) == (7, 130) and lines == [
        "curl: (7) Failed to connect to web port 80 after 130000 ms: Couldn't connect to server"]
    # a pod's own address and localhost are never blocked
    rc, out, _ = k("exec", "deploy/web", "--", "wget", "-qO-", "127.0.0.1")
    assert rc == 0 and WELCOME in out


def _svc_ip(k) -> str:
    return next(s for s in k.objects("services") if s["metadata"]["name"] == "web")["spec"]["clusterIP"]


def test_allowing_the_client_pod_selector_lets_it_through(k, tmp_path):
    policy(k, tmp_path, DENY_INGRESS)
    policy(k, tmp_path, ALLOW_CLIENT % "80", "allow.yaml")
    rc, out, _ = k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web")
    assert rc == 0 and WELCOME in out
    assert k("exec", "intruder", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    # podSelector alone means the policy's namespace: app=client in "guests" is not admitted
    assert k("exec", "-n", "guests", "visitor", "--", "wget", "-T", "2", "-qO-", "web.default") == (
        1, [], TIMED_OUT)
    # by pod IP as well as through the Service
    web_ip = next(p for p in k.pods() if p["metadata"]["labels"].get("app") == "web")["status"]["podIP"]
    rc, out, _ = k("exec", "client", "--", "wget", "-qO-", web_ip)
    assert rc == 0 and WELCOME in out


def test_a_port_not_allowed_is_dropped_not_refused(k, tmp_path):
    policy(k, tmp_path, ALLOW_CLIENT % "80")
    web_ip = next(p for p in k.pods() if p["metadata"]["labels"].get("app") == "web")["status"]["podIP"]
    # nothing listens on 8080, but the policy drops the SYN before the pod could refuse it
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", f"{web_ip}:8080") == (1, [], TIMED_OUT)
    # on a pod no policy selects, the closed port refuses at once
    cache = pod_ip(k, "cache")
    rc, _, err = k("exec", "client", "--", "wget", "-T", "2", "-qO-", f"{cache}:8080")
    assert rc == 1 and err[0] == f"wget: can't connect to remote host ({cache}): Connection refused"


def test_named_ports_resolve_against_the_destination_pod(k, tmp_path):
    policy(k, tmp_path, ALLOW_CLIENT % "http")
    rc, out, _ = k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web")
    assert rc == 0 and WELCOME in out
    policy(k, tmp_path, ALLOW_CLIENT % "metrics")  # no container port of that name: nothing allowed
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)


def test_namespace_selector_and_the_and_of_both_selectors(k, tmp_path):
    text = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-blue}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: blue}}
%s"""
    policy(k, tmp_path, text % "")
    rc, out, _ = k("exec", "-n", "guests", "visitor", "--", "wget", "-T", "2", "-qO-", "web.default")
    assert rc == 0 and WELCOME in out
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    # one peer with both selectors: pods labelled app=intruder in blue namespaces (none)
    policy(k, tmp_path, text % "      podSelector: {matchLabels: {app: intruder}}\n")
    assert k("exec", "-n", "guests", "visitor", "--", "wget", "-T", "2", "-qO-", "web.default") == (
        1, [], TIMED_OUT)
    # two peers: the blue namespaces OR app=client pods here
    policy(k, tmp_path, text % "    - podSelector: {matchLabels: {app: client}}\n")
    assert k("exec", "-n", "guests", "visitor", "--", "wget", "-T", "2", "-qO-", "web.default")[0] == 0
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web")[0] == 0
    assert k("exec", "intruder", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)


def test_ip_block_with_except(k, tmp_path):
    client = pod_ip(k, "client")
    text = f"""\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: web-from-cidr}}
spec:
  podSelector: {{matchLabels: {{app: web}}}}
  ingress:
  - from:
    - ipBlock: {{cidr: 10.244.0.0/16, except: [{client}/32]}}
"""
    policy(k, tmp_path, text)
    assert k("exec", "intruder", "--", "wget", "-T", "2", "-qO-", "web")[0] == 0
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)


# --------------------------------------------------------------------------- egress and DNS


def test_egress_isolation_blocks_dns(k, tmp_path):
    policy(k, tmp_path, DENY_EGRESS)
    rc, lines, took = elapsed(k, "client", "nslookup web")
    assert (rc, lines, took) == (1, [";; connection timed out; no servers could be reached", ""], 5)
    # the C library's resolver: 2 attempts of 5 s, then the name is unknown
    rc, lines, took = elapsed(k, "client", "wget -T 2 -qO- web")
    assert (rc, lines, took) == (1, ["wget: bad address 'web'"], 10)
    rc, lines, took = elapsed(k, "client", "curl -sS web")
    assert (rc, lines, took) == (6, ["curl: (6) Could not resolve host: web"], 10)
    rc, lines, took = elapsed(k, "client", "curl -sS --connect-timeout 3 web")
    assert (rc, lines, took) == (28, ["curl: (28) Resolving timed out after 3000 milliseconds"], 3)
    # by address there is no lookup, and the connection itself is dropped
    web_ip = next(p for p in k.pods() if p["metadata"]["labels"].get("app") == "web")["status"]["podIP"]
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", web_ip) == (1, [], TIMED_OUT)
    # other pods are not isolated
    assert k("exec", "intruder", "--", "wget", "-qO-", "web")[0] == 0


def test_allowing_dns_then_the_web_pods(k, tmp_path):
    policy(k, tmp_path, ALLOW_DNS)
    rc, out, _ = k("exec", "client", "--", "nslookup", "web.default.svc.cluster.local")
    assert rc == 0 and out[3] == "Name:\tweb.default.svc.cluster.local"
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    policy(k, tmp_path, """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-to-web}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 80}]
""", "web.yaml")
    rc, out, _ = k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web")
    assert rc == 0 and WELCOME in out
    # any destination on port 53 is the other usual way to allow DNS
    policy(k, tmp_path, """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-dns}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - ports: [{port: 53, protocol: UDP}]
""")
    assert k("exec", "client", "--", "nslookup", "web.default.svc.cluster.local")[0] == 0


def test_dns_allowed_only_over_tcp_is_not_enough(k, tmp_path):
    policy(k, tmp_path, ALLOW_DNS.replace("    - {port: 53, protocol: UDP}\n", ""))
    assert k("exec", "client", "--", "nslookup", "web.default.svc.cluster.local")[0] == 1


def test_service_traffic_is_judged_after_dnat(k, tmp_path):
    svc = _svc_ip(k)
    text = ALLOW_DNS.replace("client-dns", "client-out") + """\
  - to: [{ipBlock: {cidr: %s}}]
    ports: [{port: 80}, {port: 6379, endPort: 6380}]
"""
    # the Service's ClusterIP in an ipBlock matches nothing: policy sees the endpoint's address
    policy(k, tmp_path, text % f"{svc}/32")
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    policy(k, tmp_path, text % "10.244.0.0/16")
    rc, out, _ = k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web")
    assert rc == 0 and WELCOME in out
    # endPort: 6379..6380 is allowed (redis answers in its own protocol), 5432 is not
    assert k("exec", "client", "--", "curl", "-sS", f"{pod_ip(k, 'cache')}:6379")[0] == 1
    assert k("exec", "client", "--", "curl", "-sS", "--connect-timeout", "1", f"{pod_ip(k, 'db')}:5432")[0] == 28


def test_egress_rules_without_policy_types_default_to_both(k, tmp_path):
    policy(k, tmp_path, """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: implicit}
spec:
  podSelector: {matchLabels: {app: client}}
  egress:
  - ports: [{port: 53, protocol: UDP}]
""")
    stored = next(p for p in k.objects("networkpolicies") if p["metadata"]["name"] == "implicit")
    assert stored["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert k("exec", "client", "--", "wget", "-T", "2", "-qO-", "web") == (1, [], TIMED_OUT)
    # and the client is now isolated for ingress too
    assert k("exec", "intruder", "--", "wget", "-T", "2", "-qO-", pod_ip(k, "client")) == (1, [], TIMED_OUT)


def test_port_forward_is_not_subject_to_policies(k, tmp_path):
    from k8semu.server.portforward import PodTarget

    policy(k, tmp_path, DENY_INGRESS)
    c = k.api()
    try:
        pod = next(p for p in c.api.list("pods", namespace="default")["items"]
                   if p["metadata"]["labels"].get("app") == "web")
        answer = PodTarget(c.api, pod).answer(80)
    finally:
        c.close()
    assert answer.status == 200 and WELCOME.encode() in answer.body


# --------------------------------------------------------------------------- non-HTTP ports


def test_servers_that_do_not_speak_http(k):
    cache, db = pod_ip(k, "cache"), pod_ip(k, "db")
    # redis answers in its own protocol (not an HTTP status line); postgres closes without a word
    assert k("exec", "client", "--", "curl", "-sS", f"{cache}:6379") == (
        1, [], ["curl: (1) Received HTTP/0.9 when not allowed", "command terminated with exit code 1"])
    assert k("exec", "client", "--", "curl", "-sS", f"http://{db}:5432/") == (
        52, [], ["curl: (52) Empty reply from server", "command terminated with exit code 52"])
    for target in (f"{cache}:6379", f"{db}:5432"):
        assert k("exec", "client", "--", "wget", "-qO-", target) == (
            1, [], ["wget: error getting response", "command terminated with exit code 1"])
    # redis declares no port: it listens on 6379 only
    assert k("exec", "client", "--", "curl", "-sS", f"{cache}:80") == (
        7, [], [f"curl: (7) Failed to connect to {cache} port 80 after 0 ms: Couldn't connect to server",
                "command terminated with exit code 7"])
    assert k("exec", "client", "--", "wget", "-qO-", f"{cache}:80") == (
        1, [], [f"wget: can't connect to remote host ({cache}): Connection refused",
                "command terminated with exit code 1"])


# --------------------------------------------------------------------------- the pure functions

def _pod(name, labels, ns="default", ip="10.244.1.5", ports=(), host=False, node="node-1"):
    return {"metadata": {"name": name, "namespace": ns, "labels": labels, "uid": name},
            "spec": {"nodeName": node, "hostNetwork": host,
                     "containers": [{"name": "c", "ports": list(ports)}]},
            "status": {"podIP": ip, "hostIP": "172.18.0.2"}}


def _np(name, spec, ns="default"):
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


NAMESPACES = [{"metadata": {"name": "default", "labels": {"kubernetes.io/metadata.name": "default"}}},
              {"metadata": {"name": "prod", "labels": {"env": "prod"}}}]


def test_allowed_is_the_union_of_rules_and_needs_both_ends():
    a = _pod("a", {"app": "a"}, ip="10.244.1.2")
    b = _pod("b", {"app": "b"}, ip="10.244.2.3", ports=[{"name": "web", "containerPort": 8080}])
    assert np.allowed([], NAMESPACES, a, b, 80)
    deny = _np("deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    assert not np.allowed([deny], NAMESPACES, a, b, 80)
    allow = _np("allow", {"podSelector": {"matchLabels": {"app": "b"}}, "policyTypes": ["Ingress"],
                          "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}],
                                       "ports": [{"protocol": "TCP", "port": "web"}]}]})
    assert np.allowed([deny, allow], NAMESPACES, a, b, 8080)
    assert not np.allowed([deny, allow], NAMESPACES, a, b, 8080, "UDP")
    assert not np.allowed([deny, allow], NAMESPACES, a, b, 80)
    egress = _np("eg", {"podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Egress"],
                        "egress": [{"ports": [{"port": 9000, "endPort": 9100}]}]})
    assert not np.allowed([deny, allow, egress], NAMESPACES, a, b, 8080)
    assert np.allowed([egress], NAMESPACES, a, b, 9100) and not np.allowed([egress], NAMESPACES, a, b, 9101)
    # policyTypes defaulted for objects that bypassed the API server
    assert np.policy_types(_np("x", {"podSelector": {}, "egress": [{}]})) == ["Ingress", "Egress"]
    assert np.policy_types(_np("x", {"podSelector": {}})) == ["Ingress"]


def test_peers_namespaces_ip_blocks_and_host_network():
    prod = _pod("p", {"app": "a"}, ns="prod", ip="10.244.3.4")
    peer = {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "podSelector": {"matchLabels": {"app": "a"}}}
    assert np.peer_matches(peer, "default", NAMESPACES, prod, ["10.244.3.4"])
    assert not np.peer_matches({"podSelector": {"matchLabels": {"app": "a"}}}, "default", NAMESPACES, prod, [])
    block = {"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.3.0/24"]}}
    assert not np.peer_matches(block, "default", NAMESPACES, prod, ["10.244.3.4"])
    assert np.peer_matches(block, "default", NAMESPACES, None, ["10.244.4.4"])
    # a host-network pod is its node: never selected, matched by ipBlock only; same node always allowed
    host = _pod("h", {"app": "a"}, host=True, ip="172.18.0.2")
    b = _pod("b", {"app": "b"}, node="node-2")
    deny = _np("deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    assert not np.isolated([deny], host, "Ingress") and np.isolated([deny], b, "Egress")
    assert not np.allowed([deny], NAMESPACES, host, b, 80)
    assert np.allowed([deny], NAMESPACES, host, _pod("c", {}, node="node-1"), 80)
    from_node = _np("n", {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "172.18.0.2/32"}}]}]})
    assert np.allowed([from_node], NAMESPACES, host, b, 80)


def test_on_a_kubeadm_cluster_dns_is_the_coredns_pods(tmp_path, capsys):
    """With kubeadm's CoreDNS (pods k8s-app=kube-dns behind kube-system/kube-dns), the query goes
    to the pod kube-proxy picks: its namespace's policies (ingress) count too."""
    path = tmp_path / "cluster.log"
    k = Kubectl(path, capsys)
    assert k("cluster", "create", "--nodes", "2")[0] == 0
    f = tmp_path / "client.yaml"
    f.write_text(EXTRA.split("---\n")[1])
    assert k("apply", "-f", str(f), "-q")[0] == 0
    assert any(p["metadata"]["labels"].get("k8s-app") == "kube-dns" for p in k.objects("pods", "kube-system"))
    policy(k, tmp_path, ALLOW_DNS)
    assert k("exec", "client", "--", "nslookup", "kubernetes.default.svc.cluster.local")[0] == 0
    policy(k, tmp_path, ALLOW_DNS.replace("kube-dns}", "other}"))
    assert k("exec", "client", "--", "nslookup", "kubernetes.default.svc.cluster.local")[0] == 1
    policy(k, tmp_path, ALLOW_DNS)
    policy(k, tmp_path, DENY_INGRESS.replace("metadata: {", "metadata: {namespace: kube-system, "), "ks.yaml")
    assert k("exec", "client", "--", "nslookup", "kubernetes.default.svc.cluster.local") == (
        1, [";; connection timed out; no servers could be reached", ""], ["command terminated with exit code 1"])
